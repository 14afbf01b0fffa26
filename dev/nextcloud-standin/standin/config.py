"""The stand-in's configuration: one typed value parsed from the command line at startup.

Owns: argument parsing and validation, with clear messages. Must never: be read from
anywhere but ``__main__`` (everything else receives the ``Config``), or read env vars.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path

USER_NAME_OK = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-@")


class ConfigError(ValueError):
    """The command line is wrong; the message says how."""


@dataclass(frozen=True)
class Config:
    state_dir: Path
    host: str
    port: int
    users: dict[str, str]  # uid -> app password
    webhook_url: str | None
    webhook_secret: str | None
    threads: int
    # The equivalent of config.php's 'user_oidc' => ['oidc_provider_bearer_validation' => true]:
    # without it, Nextcloud (user_oidc) refuses the oidc app's JWTs as Bearer, and so do we.
    oidc_provider_bearer_validation: bool = False
    # Whether user_oidc is installed (the production set-up). Its boot reads a request parameter
    # before routing whenever no session cookie logged the request in, so route parameters then
    # win over same-named JSON fields. Off is a Nextcloud without it, like the reference server
    # of the shared conformance checks.
    user_oidc: bool = True
    # What a login from a credential costs (a real Nextcloud 31: ~100 ms for an app password,
    # ~300 ms for an OIDC JWT); a request riding on its session cookie does not pay it.
    login_delay_ms: int = 0
    # The mail bridge: off simulates a Nextcloud without the Mail app (every mail route is 501).
    mail: bool = True
    # Where the SMTP sink listens (port 0 picks a free one); the bridge sends there.
    smtp_host: str = "127.0.0.1"
    smtp_port: int = 0
    # Every user's Nextcloud language and locale (their core/lang and core/locale settings) until
    # they change their own (PUT cloud/users/{uid}); "" locale: Nextcloud derives it from the language.
    language: str = "en"
    locale: str = ""


LANGUAGE = re.compile(r"[a-z]{2,3}(_[A-Za-z0-9]{2,4})?(@latin)?")


def valid_language(code: str) -> bool:
    """A Nextcloud language or locale code as its settings store them: de, de_DE, sr@latin, es_419."""
    return LANGUAGE.fullmatch(code) is not None


def _user(value: str) -> tuple[str, str]:
    uid, sep, password = value.partition(":")
    if not sep or not uid or not password:
        raise argparse.ArgumentTypeError(f"--user wants UID:APP_PASSWORD, got {value!r}")
    if not set(uid) <= USER_NAME_OK:
        raise argparse.ArgumentTypeError(f"user name {uid!r} has characters Nextcloud refuses")
    return uid, password


def _bind(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) < 65536:
        raise argparse.ArgumentTypeError(f"--bind wants HOST:PORT, got {value!r}")
    return host, int(port)


def parse(argv: list[str]) -> Config:
    p = argparse.ArgumentParser(prog="nextcloud-standin",
                                description="A Nextcloud stand-in built on WsgiDAV and Radicale.")
    p.add_argument("--state", required=True, type=Path, help="directory holding all state (created if missing)")
    p.add_argument("--bind", required=True, type=_bind, help="HOST:PORT to listen on (port 0 picks one)")
    p.add_argument("--user", action="append", type=_user, default=[], help="UID:APP_PASSWORD (repeatable)")
    p.add_argument("--webhook-url", help="POST webhook_listeners-shaped JSON here after file changes")
    p.add_argument("--webhook-secret", help="sent as the X-Tamebi-Webhook-Secret header")
    p.add_argument("--threads", type=int, default=64, help="worker threads (concurrent requests)")
    p.add_argument("--oidc-provider-bearer-validation", action="store_true",
                   help="accept our JWT access tokens as Bearer, like Nextcloud with the system config "
                        "user_oidc.oidc_provider_bearer_validation = true (off by default, as there)")
    p.add_argument("--without-user-oidc", action="store_true",
                   help="simulate a Nextcloud without the user_oidc app (the conformance checks' reference server): "
                        "JSON body fields beat same-named route parameters on every request, not only on "
                        "session-authenticated ones")
    p.add_argument("--login-delay-ms", type=int, default=0,
                   help="sleep this long on every login from a credential (not on requests with a session cookie), "
                        "to model what a cookie-less request costs on a real Nextcloud")
    p.add_argument("--without-mail", action="store_true",
                   help="simulate a Nextcloud without the Mail app: every mail bridge route answers 501 mail_unavailable")
    p.add_argument("--smtp-bind", type=_bind, default=("127.0.0.1", 0),
                   help="HOST:PORT of the SMTP sink the mail bridge sends to (default 127.0.0.1:0, a free port)")
    p.add_argument("--language", default="en",
                   help="every user's Nextcloud language (core/lang), e.g. de or de_DE; default en")
    p.add_argument("--locale", default="",
                   help="every user's Nextcloud locale (core/locale), e.g. de_DE; default: none, as the language says")
    a = p.parse_args(argv)
    return validate(a)


def validate(a: argparse.Namespace) -> Config:
    if not a.user:
        raise ConfigError("at least one --user UID:APP_PASSWORD is needed")
    users: dict[str, str] = {}
    seen_passwords: set[str] = set()
    for uid, password in a.user:
        if uid in users:
            raise ConfigError(f"user {uid!r} given twice")
        # A Bearer app password names its user by itself, so passwords must be unique.
        if password in seen_passwords:
            raise ConfigError(f"app password of {uid!r} is also another user's")
        if password.count(".") == 2:
            raise ConfigError(f"app password of {uid!r} looks like a JWT; pick another")
        users[uid] = password
        seen_passwords.add(password)
    if bool(a.webhook_url) != bool(a.webhook_secret):
        raise ConfigError("--webhook-url and --webhook-secret go together")
    if a.webhook_url and not a.webhook_url.startswith(("http://", "https://")):
        raise ConfigError(f"--webhook-url must be http(s), got {a.webhook_url!r}")
    if not 1 <= a.threads <= 512:
        raise ConfigError("--threads must be between 1 and 512")
    if a.without_user_oidc and a.oidc_provider_bearer_validation:
        raise ConfigError("--oidc-provider-bearer-validation is a user_oidc setting; it cannot go with --without-user-oidc")
    if not 0 <= a.login_delay_ms <= 10_000:
        raise ConfigError("--login-delay-ms must be between 0 and 10000")
    if not valid_language(a.language):
        raise ConfigError(f"--language must be a Nextcloud language code like de or de_DE, got {a.language!r}")
    if a.locale and not valid_language(a.locale):
        raise ConfigError(f"--locale must be a Nextcloud locale code like de_DE, got {a.locale!r}")
    host, port = a.bind
    smtp_host, smtp_port = a.smtp_bind
    if smtp_host not in ("127.0.0.1", "::1", "localhost"):
        raise ConfigError(f"--smtp-bind must be a loopback address (the sink is for tests), got {smtp_host!r}")
    return Config(state_dir=a.state, host=host, port=port, users=users,
                  webhook_url=a.webhook_url, webhook_secret=a.webhook_secret, threads=a.threads,
                  oidc_provider_bearer_validation=a.oidc_provider_bearer_validation, user_oidc=not a.without_user_oidc,
                  login_delay_ms=a.login_delay_ms, mail=not a.without_mail, smtp_host=smtp_host, smtp_port=smtp_port,
                  language=a.language, locale=a.locale)
