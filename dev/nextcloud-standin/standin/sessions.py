"""Nextcloud's session cookies, as a client that keeps them sees them.

Owns: issuing the cookies Nextcloud sets when a request logs in with a credential (the PHP
session cookie named after the instance id, ``oc_sessionPassphrase``, the same-site cookies
``nc_sameSiteCookielax``/``nc_sameSiteCookiestrict``, and the remember-me trio
``nc_username``/``nc_token``/``nc_session_id`` that ``OC_User::loginWithApache`` creates for
bearer logins); honouring the session cookie on later requests; per-user counters that tests
read through ``GET /standin/sessions?uid=``.

What Nextcloud does, and where this is stricter (read from nextcloud/server):

- A request carrying the session cookie is treated as the session's user. For WebDAV,
  ``apps/dav/lib/Connector/Sabre/Auth.php`` accepts a logged-in session whose
  ``AUTHENTICATED_TO_DAV_BACKEND`` is unset *before* looking at the ``Authorization`` header,
  so Nextcloud does not re-check a bearer sent alongside the cookie. Here a session cookie
  presented with a different credential than the one that opened the session is **401**
  (stricter: a client leaking a cookie to another bearer shows up as a failure, not as
  silently acting as the first user).
- The session is validated per request against the token that opened it
  (``Session::validateSession``): revoking an app password ends its sessions. Same here.
- Where the session cookie is sent without the same-site cookies and without
  ``OCS-APIRequest``, ``base.php``'s strict cookie check answers 412. Same here.
- Nextcloud keeps a session for ``session_lifetime`` (24 h by default), past a JWT's ``exp``.
  Here a session opened with a JWT ends at its ``exp`` (stricter).
- An unknown, expired or revoked session cookie is ignored and the request authenticates
  with its ``Authorization`` header, as Nextcloud logs out and falls through.

Must never: honour a session for anyone but the uid that opened it, or let a session outlive
the credential that opened it being revoked.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import string
import threading
import time
from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie

SESSION_LIFETIME = 86400  # Nextcloud's default 'session_lifetime'
PASSPHRASE = "oc_sessionPassphrase"
SAME_SITE = ("nc_sameSiteCookielax", "nc_sameSiteCookiestrict")
REMEMBER_ME = ("nc_username", "nc_token", "nc_session_id")
MAX_SESSIONS = 200_000


@dataclass
class Session:
    uid: str
    passphrase: str
    credential: bytes  # sha256 of the Authorization header that logged in
    origin: tuple[str, str]  # ("app", uid) or ("jwt", jti): what revocation targets
    expires: float
    revoked: bool = False


@dataclass
class Counters:
    logins: int = 0  # requests authenticated from their credential (each opens a session)
    session_requests: int = 0  # requests authenticated by their session cookie
    cookies_presented: int = 0  # requests presenting one of this user's session cookies
    other_credential: int = 0  # a session cookie sent with another credential (refused)
    remember_me_presented: int = 0  # nc_token & co. sent back (never needed)

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass
class Gate:
    """What the cookies decided: a uid, a refusal, or nothing (authenticate the header)."""
    uid: str | None = None
    status: int | None = None
    message: str = ""


@dataclass
class Sessions:
    cookie_name: str = field(default_factory=lambda: "oc" + "".join(
        secrets.choice(string.ascii_lowercase + string.digits) for _ in range(10)))  # like Nextcloud's instanceid
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _by_id: dict[str, Session] = field(default_factory=dict)
    _counters: dict[str, Counters] = field(default_factory=dict)

    def _count(self, uid: str) -> Counters:
        return self._counters.setdefault(uid, Counters())

    def counters(self, uid: str) -> dict[str, int]:
        with self._lock:
            return self._count(uid).as_dict()

    def check(self, cookie_header: str | None, authorization: str | None, ocs_api_request: bool) -> Gate:
        jar = parse_cookies(cookie_header)
        sid = jar.get(self.cookie_name)
        with self._lock:
            session = self._by_id.get(sid) if sid else None
            if session is not None:
                counters = self._count(session.uid)
                counters.cookies_presented += 1
                if any(name in jar for name in REMEMBER_ME):
                    counters.remember_me_presented += 1
            if sid is None:
                return Gate()
            if not ocs_api_request and not all(jar.get(n) == "true" for n in SAME_SITE):
                return Gate(status=412, message="Strict Cookie has not been found in request")
            if (session is None or session.revoked or session.expires <= time.time()
                    or not hmac.compare_digest(jar.get(PASSPHRASE, ""), session.passphrase)):
                return Gate()  # Nextcloud logs the dead session out and tries the header
            if authorization and not hmac.compare_digest(fingerprint(authorization), session.credential):
                counters.other_credential += 1
                return Gate(status=401, message="session cookie sent with another credential")
            counters.session_requests += 1
            return Gate(uid=session.uid)

    def login(self, uid: str, authorization: str, origin: tuple[str, str], expires: float | None) -> list[tuple[str, str]]:
        """Counts a credential login and opens its session; returns the Set-Cookie headers."""
        sid = secrets.token_urlsafe(24)
        passphrase = secrets.token_urlsafe(24)
        end = min(time.time() + SESSION_LIFETIME, expires if expires is not None else float("inf"))
        with self._lock:
            self._count(uid).logins += 1
            if len(self._by_id) >= MAX_SESSIONS:
                now = time.time()
                self._by_id = {k: s for k, s in self._by_id.items() if s.expires > now and not s.revoked}
            self._by_id[sid] = Session(uid, passphrase, fingerprint(authorization), origin, end)
        lax = "path=/; HttpOnly; expires=Fri, 31-Dec-2100 23:59:59 GMT; SameSite="
        return [
            ("Set-Cookie", f"{self.cookie_name}={sid}; path=/; HttpOnly; SameSite=Lax"),
            ("Set-Cookie", f"{PASSPHRASE}={passphrase}; path=/; HttpOnly; SameSite=Lax"),
            ("Set-Cookie", f"{SAME_SITE[0]}=true; {lax}lax"),
            ("Set-Cookie", f"{SAME_SITE[1]}=true; {lax}strict"),
            ("Set-Cookie", f"nc_username={uid}; path=/; HttpOnly; Max-Age=1296000; SameSite=Lax"),
            ("Set-Cookie", f"nc_token={secrets.token_urlsafe(24)}; path=/; HttpOnly; Max-Age=1296000; SameSite=Lax"),
            ("Set-Cookie", f"nc_session_id={sid}; path=/; HttpOnly; Max-Age=1296000; SameSite=Lax"),
        ]

    def revoke(self, origin: tuple[str, str]) -> int:
        """Ends every session opened with that credential; returns how many."""
        with self._lock:
            hit = [s for s in self._by_id.values() if s.origin == origin and not s.revoked]
            for s in hit:
                s.revoked = True
            return len(hit)


def fingerprint(authorization: str) -> bytes:
    return hashlib.sha256(authorization.strip().encode()).digest()


def parse_cookies(header: str | None) -> dict[str, str]:
    if not header:
        return {}
    jar = SimpleCookie()
    try:
        jar.load(header)
    except CookieError:
        return {}
    return {k: m.value for k, m in jar.items()}
