"""Who is calling: app passwords (Basic or Bearer) and self-issued JWT access tokens.

Owns: turning an ``Authorization`` header into a uid, and minting the RFC 9068-shaped
JWTs that let tests exercise the OIDC shape. The signing key is random and lives only in
memory, so tokens die with the process.

Must never: accept a uid from anywhere but a verified credential; accept a token used with
another user's name; check ``aud`` (Nextcloud does not; the MCP server must); accept a JWT as
Bearer unless ``oidc_provider_bearer_validation`` is on. On a real Nextcloud 31 only user_oidc
turns a JWT into a user, and only with the system config ``'user_oidc' =>
['oidc_provider_bearer_validation' => true]`` (a boolean: user_oidc compares with ``=== true``,
lib/User/Backend.php); core itself takes a Bearer value only as an app password.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import logging
import secrets
import time
import uuid

import jwt

log = logging.getLogger("standin.auth")

CLIENT_ID = "tamebi-standin"
MAX_TTL_SECONDS = 86400


class TokenRequestError(ValueError):
    """A token request is malformed; the message says how."""


class Authenticator:
    def __init__(self, users: dict[str, str], oidc_provider_bearer_validation: bool = False) -> None:
        self._users = dict(users)
        self._key = secrets.token_bytes(32)
        self._jwt_bearer = oidc_provider_bearer_validation
        self._revoked: set[str] = set()

    @property
    def uids(self) -> list[str]:
        return list(self._users)

    def _password_owner(self, password: str) -> str | None:
        found = None
        for uid, expected in self._users.items():
            if uid in self._revoked:
                continue
            # Compare against every user, in constant time each, to keep timing flat.
            if hmac.compare_digest(expected.encode(), password.encode()):
                found = uid
        return found

    def basic(self, header: str | None) -> str | None:
        """uid for ``Basic uid:app-password``; None for anything else."""
        if not header or not header.startswith("Basic "):
            return None
        try:
            decoded = base64.b64decode(header[6:].strip(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return None
        uid, sep, password = decoded.partition(":")
        if not sep:
            return None
        owner = self._password_owner(password)
        # A valid token used with another user's name is still a failed login.
        return uid if owner is not None and owner == uid else None

    def bearer(self, header: str | None) -> str | None:
        """uid for ``Bearer <app-password>``, or ``Bearer <JWT we issued>`` when JWT bearer validation is on."""
        if not header or not header.startswith("Bearer "):
            return None
        token = header[7:].strip()
        owner = self._password_owner(token)
        if owner is not None:
            return owner
        if token.count(".") != 2:
            return None
        if not self._jwt_bearer:
            # As user_oidc logs it: "oidc_provider_bearer_validation is false or not defined".
            log.info("JWT bearer refused: oidc_provider_bearer_validation is off "
                     "(start with --oidc-provider-bearer-validation)")
            return None
        try:
            claims = jwt.decode(token, self._key, algorithms=["HS256"],
                                options={"verify_aud": False, "require": ["exp", "sub", "iat"]})
        except jwt.PyJWTError:
            return None
        sub = claims.get("sub")
        return sub if isinstance(sub, str) and sub in self._users else None

    def resolve(self, header: str | None) -> str | None:
        return self.basic(header) or self.bearer(header)

    def origin(self, header: str) -> tuple[tuple[str, str], float | None]:
        """For a credential ``resolve`` accepted: what revoking it targets and when it expires
        (an app password: ``("app", uid)``, no expiry; a JWT: ``("jwt", jti)`` and its ``exp``)."""
        token = header.split(" ", 1)[-1].strip()
        if header.startswith("Bearer ") and self._password_owner(token) is None:
            claims = jwt.decode(token, options={"verify_signature": False})
            return ("jwt", str(claims.get("jti"))), float(claims["exp"])
        uid = self.resolve(header) or ""
        return ("app", uid), None

    def revoke_app_password(self, uid: str) -> None:
        """As deleting the device in Nextcloud's security settings: the password stops working."""
        self._revoked.add(uid)

    def mint(self, uid: str, issuer: str, aud: object, ttl: object) -> dict[str, object]:
        """An access token for ``uid`` in the shape Nextcloud's oidc app issues (RFC 9068)."""
        if not isinstance(aud, str) or not aud:
            raise TokenRequestError("aud is required (the resource the token is for)")
        if ttl is None or ttl == "":
            ttl_seconds = 900
        else:
            try:
                ttl_seconds = int(str(ttl))
            except ValueError:
                raise TokenRequestError(f"ttl_seconds must be an integer, got {ttl!r}") from None
        if not 1 <= ttl_seconds <= MAX_TTL_SECONDS:
            raise TokenRequestError(f"ttl_seconds must be between 1 and {MAX_TTL_SECONDS}")
        now = int(time.time())
        claims = {"iss": issuer, "sub": uid, "aud": aud, "iat": now, "nbf": now,
                  "exp": now + ttl_seconds, "jti": str(uuid.uuid4()), "client_id": CLIENT_ID,
                  "scope": "openid profile email"}
        token = jwt.encode(claims, self._key, algorithm="HS256", headers={"typ": "at+jwt"})
        return {"access_token": token, "expires_in": ttl_seconds, "token_type": "Bearer"}
