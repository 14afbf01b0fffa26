"""Radicale behind Nextcloud's URLs, and the command line's refusals."""

import subprocess

from conftest import RUN

VCARD = "BEGIN:VCARD\r\nVERSION:3.0\r\nUID:x-1\r\nFN:Eve Example\r\nN:Example;Eve;;;\r\nEND:VCARD\r\n"


def test_every_user_starts_with_personal_and_contacts(standin):
    for uid in ("alice", "bob"):
        r = standin.req("PROPFIND", f"{standin.url}/remote.php/dav/calendars/{uid}/", uid, headers={"Depth": "1"})
        assert r.status_code == 207 and f"/remote.php/dav/calendars/{uid}/personal/" in r.text
        r = standin.req("PROPFIND", f"{standin.url}/remote.php/dav/addressbooks/users/{uid}/", uid, headers={"Depth": "1"})
        assert r.status_code == 207 and f"/remote.php/dav/addressbooks/users/{uid}/contacts/" in r.text


def test_other_users_collections_are_404_for_every_method(standin):
    book = f"{standin.url}/remote.php/dav/addressbooks/users/alice/contacts/"
    headers = {"Content-Type": "text/vcard"}
    assert standin.req("PUT", book + "x-1.vcf", "alice", data=VCARD, headers=headers).status_code == 201
    assert standin.req("PUT", book + "evil.vcf", "bob", data=VCARD.replace("x-1", "x-2"), headers=headers).status_code == 404
    assert standin.req("DELETE", book + "x-1.vcf", "bob").status_code == 404
    assert standin.req("MKCOL", f"{standin.url}/remote.php/dav/calendars/alice/new/", "bob").status_code == 404
    assert standin.req("GET", book + "x-1.vcf", "alice").text.count("Eve Example") == 1
    assert standin.req("DELETE", book + "x-1.vcf", "alice").status_code == 204


def test_chunked_uploads_reach_radicale(standin):
    card = VCARD.replace("x-1", "chunky").encode()
    body = (card[i:i + 16] for i in range(0, len(card), 16))  # a generator: sent chunked
    url = f"{standin.url}/remote.php/dav/addressbooks/users/bob/contacts/chunky.vcf"
    r = standin.req("PUT", url, "bob", data=body, headers={"Content-Type": "text/vcard"})
    assert r.status_code == 201
    assert "Eve Example" in standin.req("GET", url, "bob").text


def run_cli(*args):
    return subprocess.run([str(RUN), *args], capture_output=True, text=True, timeout=30)


def test_cli_refuses_bad_arguments_clearly(tmp_path):
    state = str(tmp_path / "s")
    cases = [
        (["--state", state, "--bind", "127.0.0.1:0"], "at least one --user"),
        (["--state", state, "--bind", "nowhere", "--user", "a:b"], "--bind wants HOST:PORT"),
        (["--state", state, "--bind", "127.0.0.1:0", "--user", "alice"], "UID:APP_PASSWORD"),
        (["--state", state, "--bind", "127.0.0.1:0", "--user", "a:same", "--user", "b:same"], "also another user's"),
        (["--state", state, "--bind", "127.0.0.1:0", "--user", "a:x", "--webhook-url", "http://h/"], "go together"),
    ]
    for args, message in cases:
        r = run_cli(*args)
        assert r.returncode == 2, (args, r.stderr)
        assert message in r.stderr, (args, r.stderr)
        assert r.stdout == ""
    assert not (tmp_path / "s").exists()  # a refused start changes nothing


def test_principal_discovery_leads_to_the_callers_homes(standin):
    r = standin.req("PROPFIND", f"{standin.url}/remote.php/dav/", "alice", headers={"Depth": "0"})
    assert r.status_code == 207
    assert "<d:href>/remote.php/dav/principals/users/alice/</d:href>" in r.text
    r = standin.req("PROPFIND", f"{standin.url}/remote.php/dav/principals/users/alice/", "alice", headers={"Depth": "0"})
    assert r.status_code == 207
    assert "/remote.php/dav/calendars/alice/" in r.text and "/remote.php/dav/addressbooks/users/alice/" in r.text
    # Another user's principal is not found, and nothing of theirs leaks.
    r = standin.req("PROPFIND", f"{standin.url}/remote.php/dav/principals/users/alice/", "bob", headers={"Depth": "0"})
    assert r.status_code == 404 and "calendars/alice" not in r.text
    assert standin.req("DELETE", f"{standin.url}/remote.php/dav/", "alice").status_code == 405
