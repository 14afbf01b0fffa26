"""Nextcloud's session cookies, as a client that keeps them sees them.

Owns: issuing the cookies Nextcloud sets when a request logs in with a credential (the PHP
session cookie named after the instance id, ``oc_sessionPassphrase``, the same-site cookies
``nc_sameSiteCookielax``/``nc_sameSiteCookiestrict``, and, for a JWT login through user_oidc,
the remember-me trio ``nc_username``/``nc_token``/``nc_session_id``); honouring the session
cookie on later requests under Nextcloud's CSRF rules; per-user counters that tests read
through ``GET /standin/sessions?uid=``; ending sessions as a timeout or a revocation would.

What Nextcloud 31 does (read from nextcloud/server and user_oidc), and where this is stricter:

- ``OC::handleRequest`` (lib/base.php), ``ocs/v1.php`` and the DAV auth plugin
  (apps/dav/lib/Connector/Sabre/Auth.php) accept a live session *before* they look at the
  ``Authorization`` header: a cookie sent with another bearer acts as the session's user, and
  a bearer that has expired or been revoked is not looked at while the session lives. Here a
  session cookie presented with any other credential than the one that opened the session is
  **401** and counted (stricter: the mistake shows instead of silently acting as someone).
- A session is validated per request against the token behind it (``Session::validateSession``):
  an app password's session against that app password, so deleting it ends the session; a
  user_oidc (JWT) login's session against its own session token only — the JWT is never
  checked again and the session outlives its ``exp``. Here a JWT's session ends at its ``exp``
  (stricter); an app password's ends when it is revoked (same).
- ``session_lifetime`` (24 h of inactivity by default): ``OC::initSession`` then deletes the
  session cookie (``Set-Cookie: <name>=deleted; Max-Age=0``), logs out and authenticates the
  request from its header without giving it a new session cookie. ``POST
  /standin/sessions/expire?uid=`` puts a user's sessions in that state; a session here also
  ends 24 h after its login, however active (stricter).
- The strict same-site check (``OC::performSameSiteCookieProtection``): a request to anything
  but ``index.php`` that carries the session cookie without ``nc_sameSiteCookielax`` and
  ``nc_sameSiteCookiestrict`` and without ``OCS-APIRequest`` is 412. Same here.
- CSRF on a session-authenticated request (``Request::passesCSRFCheck``: a request token, or
  since server PR #46760 (Nextcloud 30) the ``OCS-APIRequest`` header):
  - WebDAV (``Auth::requiresCSRFCheck``): GET needs none; a session opened by Basic auth on DAV
    (``AUTHENTICATED_TO_DAV_BACKEND``) needs none; any other method on a session opened by a
    bearer or by OCS fails with 401 "CSRF check not passed." (POST logs out and re-checks the
    credentials; here it is 401 too, stricter).
    ``POST /standin/sessions/settings {"ocs_apirequest_passes_csrf": false}`` makes the header
    not count, as on servers before 30.
  - Deck's API is ``@CORS``: without a passing CSRF check ``CORSMiddleware`` logs the session
    out and wants Basic credentials, else 401 "CORS requires basic auth" — with a cookie or
    without one (a bearer login is a session too). Same here.
  - OCS: Nextcloud lets a Bearer header through on OCS controllers; here a session-authenticated
    OCS request without ``OCS-APIRequest`` is 401 (stricter).
- An unknown, expired or revoked session cookie is ignored and the request authenticates with
  its ``Authorization`` header, as Nextcloud logs out and falls through.

Must never: honour a session for anyone but the credential that opened it, or let a session
outlive the credential that opened it being revoked.
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
# What PHP's setcookie(name, '', -1) sends: how Nextcloud deletes a cookie.
DELETED = "deleted; expires=Thu, 01 Jan 1970 00:00:01 GMT; Max-Age=0; path=/"


@dataclass
class Session:
    uid: str
    passphrase: str
    credential: bytes  # sha256 of the Authorization header that logged in
    origin: tuple[str, str]  # ("app", uid) or ("jwt", jti): what revocation targets
    expires: float
    dav_authenticated: bool  # opened by Basic auth on WebDAV (AUTHENTICATED_TO_DAV_BACKEND)
    revoked: bool = False
    timed_out: bool = False


@dataclass
class Counters:
    logins: int = 0  # requests authenticated from their credential
    session_requests: int = 0  # requests authenticated by their session cookie
    cookies_presented: int = 0  # requests presenting one of this user's session cookies
    other_credential: int = 0  # a session cookie sent with another credential (refused)
    remember_me_presented: int = 0  # nc_token & co. sent back (never needed)
    csrf_refused: int = 0  # session requests refused by a CSRF rule (never needed)
    dead_cookies: int = 0  # presentations of a session that had ended (timed out, revoked, expired)

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass
class Gate:
    """What the cookies decided: a uid, a refusal, or nothing (authenticate the header).
    ``set_cookies`` go out with the answer whatever it is (a timed-out session's deletion);
    ``new_session`` is False when Nextcloud would authenticate the header without handing out
    a new session cookie."""
    uid: str | None = None
    status: int | None = None
    message: str = ""
    set_cookies: list[tuple[str, str]] = field(default_factory=list)
    new_session: bool = True


@dataclass
class Sessions:
    cookie_name: str = field(default_factory=lambda: "oc" + "".join(
        secrets.choice(string.ascii_lowercase + string.digits) for _ in range(10)))  # like Nextcloud's instanceid
    ocs_apirequest_passes_csrf: bool = True  # Nextcloud 30+ (server PR #46760)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _by_id: dict[str, Session] = field(default_factory=dict)
    _counters: dict[str, Counters] = field(default_factory=dict)

    def _count(self, uid: str) -> Counters:
        return self._counters.setdefault(uid, Counters())

    def counters(self, uid: str) -> dict[str, int]:
        with self._lock:
            return self._count(uid).as_dict()

    def check(self, cookie_header: str | None, authorization: str | None, ocs_api_request: bool,
              method: str = "GET", surface: str = "dav") -> Gate:
        """``surface`` is "dav", "ocs", "deck" or "other" (what the path is served by)."""
        jar = parse_cookies(cookie_header)
        sid = jar.get(self.cookie_name)
        if sid is None:
            return Gate()
        with self._lock:
            session = self._by_id.get(sid)
            counters = self._count(session.uid) if session is not None else None
            if counters is not None:
                counters.cookies_presented += 1
                if any(name in jar for name in REMEMBER_ME):
                    counters.remember_me_presented += 1
            if surface != "deck" and not ocs_api_request and not all(jar.get(n) == "true" for n in SAME_SITE):
                # index.php (Deck) is left to its middlewares; every other script checks here.
                return Gate(status=412, message="Strict Cookie has not been found in request")
            if session is None or counters is None:
                return Gate()
            if session.timed_out:
                # Kept as a tombstone, so a client that ignores the deletion shows up in the count
                # (stricter: Nextcloud would write the header's login into the same session id).
                counters.dead_cookies += 1
                return Gate(set_cookies=[("Set-Cookie", f"{self.cookie_name}={DELETED}")], new_session=False)
            if (session.revoked or session.expires <= time.time()
                    or not hmac.compare_digest(jar.get(PASSPHRASE, ""), session.passphrase)):
                counters.dead_cookies += 1
                return Gate()  # Nextcloud logs the dead session out and tries the header
            if authorization and not hmac.compare_digest(fingerprint(authorization), session.credential):
                counters.other_credential += 1
                return Gate(status=401, message="session cookie sent with another credential")
            refusal = self._csrf_refusal(session, ocs_api_request, method, surface)
            if refusal is not None:
                counters.csrf_refused += 1
                if surface == "deck":
                    session.revoked = True  # CORSMiddleware logs the session out
                return Gate(status=401, message=refusal)
            counters.session_requests += 1
            return Gate(uid=session.uid)

    def _csrf_refusal(self, session: Session, ocs_api_request: bool, method: str, surface: str) -> str | None:
        if ocs_api_request and self.ocs_apirequest_passes_csrf:
            return None
        if surface == "dav":
            if method == "GET" or session.dav_authenticated:
                return None
            return "CSRF check not passed."
        if surface == "deck":
            return "CORS requires basic auth"
        if surface == "ocs" and not ocs_api_request:
            return "CSRF check failed"
        return None

    def login(self, uid: str, authorization: str, origin: tuple[str, str], expires: float | None,
              dav_authenticated: bool = False, new_session: bool = True) -> list[tuple[str, str]]:
        """Counts a credential login and, if ``new_session``, opens its session; returns the
        Set-Cookie headers Nextcloud would send with the answer."""
        with self._lock:
            self._count(uid).logins += 1
        jwt_login = origin[0] == "jwt"
        # user_oidc's handleApacheAuth unsets the remember-me cookies before every header login;
        # only its own (JWT) logins set them again (OC_User::loginWithApache).
        cookies = [] if jwt_login else [("Set-Cookie", f"{n}={DELETED}; HttpOnly") for n in REMEMBER_ME]
        if not new_session:
            return cookies
        sid = secrets.token_urlsafe(24)
        passphrase = secrets.token_urlsafe(24)
        end = min(time.time() + SESSION_LIFETIME, expires if expires is not None else float("inf"))
        with self._lock:
            if len(self._by_id) >= MAX_SESSIONS:
                now = time.time()
                self._by_id = {k: s for k, s in self._by_id.items()
                               if s.expires > now and not s.revoked and not s.timed_out}
            self._by_id[sid] = Session(uid, passphrase, fingerprint(authorization), origin, end, dav_authenticated)
        lax = "path=/; HttpOnly; expires=Fri, 31-Dec-2100 23:59:59 GMT; SameSite="
        cookies += [
            ("Set-Cookie", f"{self.cookie_name}={sid}; path=/; HttpOnly; SameSite=Lax"),
            ("Set-Cookie", f"{PASSPHRASE}={passphrase}; path=/; HttpOnly; SameSite=Lax"),
            ("Set-Cookie", f"{SAME_SITE[0]}=true; {lax}lax"),
            ("Set-Cookie", f"{SAME_SITE[1]}=true; {lax}strict"),
        ]
        if jwt_login:
            cookies += [
                ("Set-Cookie", f"nc_username={uid}; path=/; HttpOnly; Max-Age=1296000; SameSite=Lax"),
                ("Set-Cookie", f"nc_token={secrets.token_urlsafe(24)}; path=/; HttpOnly; Max-Age=1296000; SameSite=Lax"),
                ("Set-Cookie", f"nc_session_id={sid}; path=/; HttpOnly; Max-Age=1296000; SameSite=Lax"),
            ]
        return cookies

    def revoke(self, origin: tuple[str, str]) -> int:
        """Ends every session opened with that credential; returns how many."""
        with self._lock:
            hit = [s for s in self._by_id.values() if s.origin == origin and not s.revoked]
            for s in hit:
                s.revoked = True
            return len(hit)

    def time_out(self, uid: str) -> int:
        """Puts every live session of ``uid`` past ``session_lifetime``; returns how many."""
        with self._lock:
            hit = [s for s in self._by_id.values() if s.uid == uid and not s.revoked and not s.timed_out]
            for s in hit:
                s.timed_out = True
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
