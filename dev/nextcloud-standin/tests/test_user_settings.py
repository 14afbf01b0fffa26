"""A person's language and locale (issue #34): what ``cloud/user`` says and what they may change.

The dev host reads them to render the page as Nextcloud would (``<html lang data-locale>``, the
app's l10n bundle); a person changes their own with ``PUT cloud/users/{uid}``, as in Nextcloud's
personal settings.
"""

import pytest

from standin.config import ConfigError, parse


def test_a_person_sets_their_own_language_and_locale(standin):
    user = standin.ocs("GET", "alice", "cloud/user").json()["ocs"]["data"]
    assert (user["language"], user["locale"]) == ("en", "")
    assert standin.ocs("PUT", "alice", "cloud/users/alice", data={"key": "language", "value": "de"}).status_code == 200
    assert standin.ocs("PUT", "alice", "cloud/users/alice", data={"key": "locale", "value": "de_DE"}).status_code == 200
    user = standin.ocs("GET", "alice", "cloud/user").json()["ocs"]["data"]
    assert (user["language"], user["locale"]) == ("de", "de_DE")
    # Only their own, only these keys, only a code Nextcloud could offer.
    assert standin.ocs("PUT", "bob", "cloud/users/alice", data={"key": "language", "value": "fr"}).status_code == 403
    assert standin.ocs("PUT", "alice", "cloud/users/alice", data={"key": "email", "value": "x@y"}).status_code == 400
    assert standin.ocs("PUT", "alice", "cloud/users/alice", data={"key": "language", "value": "<b>"}).status_code == 400
    assert standin.ocs("GET", "bob", "cloud/user").json()["ocs"]["data"]["language"] == "en"
    standin.ocs("PUT", "alice", "cloud/users/alice", data={"key": "language", "value": "en"})
    standin.ocs("PUT", "alice", "cloud/users/alice", data={"key": "locale", "value": ""})


def test_every_users_language_can_be_set_at_start(tmp_path):
    cfg = parse(["--state", str(tmp_path), "--bind", "127.0.0.1:0", "--user", "alice:pw-a", "--language", "de", "--locale", "de_DE"])
    assert (cfg.language, cfg.locale) == ("de", "de_DE")
    with pytest.raises(ConfigError):
        parse(["--state", str(tmp_path), "--bind", "127.0.0.1:0", "--user", "alice:pw-a", "--language", "Deutsch"])
