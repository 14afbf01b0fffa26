"""CalDAV and CardDAV: Radicale behind Nextcloud's URLs.

Owns: two Radicale applications (one storage each, so a calendar and an address book may
share a name like on Nextcloud) mounted at ``/remote.php/dav/calendars`` and
``/remote.php/dav/addressbooks/users``, and creating each user's ``personal`` calendar and
``contacts`` address book at startup through Radicale's own protocol handling.

Must never: speak CalDAV/CardDAV itself (Radicale does), or let Radicale see a request for
another user's collections: the router answers those 404 first, and Radicale's
``owner_only`` rights refuse them again.
"""

from __future__ import annotations

import io
import logging
import sys
from pathlib import Path

import radicale
import radicale.config

from .web import with_buffered_body

CAL_MOUNT = "/remote.php/dav/calendars"
CARD_MOUNT = "/remote.php/dav/addressbooks/users"

MKCALENDAR = b"""<?xml version="1.0" encoding="utf-8"?>
<c:mkcalendar xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav"><d:set><d:prop>
<d:displayname>Personal</d:displayname>
<c:supported-calendar-component-set><c:comp name="VEVENT"/><c:comp name="VTODO"/></c:supported-calendar-component-set>
</d:prop></d:set></c:mkcalendar>"""
MKADDRESSBOOK = b"""<?xml version="1.0" encoding="utf-8"?>
<d:mkcol xmlns:d="DAV:" xmlns:card="urn:ietf:params:xml:ns:carddav"><d:set><d:prop>
<d:resourcetype><d:collection/><card:addressbook/></d:resourcetype>
<d:displayname>Contacts</d:displayname>
</d:prop></d:set></d:mkcol>"""


class GroupwareError(RuntimeError):
    """Radicale refused to create a default collection at startup."""


def _radicale(folder: Path) -> radicale.Application:
    cfg = radicale.config.load()
    cfg.update({
        "auth": {"type": "remote_user"},  # the router has authenticated the caller already
        "rights": {"type": "owner_only"},
        "storage": {"filesystem_folder": str(folder)},
        "web": {"type": "none"},
        "logging": {"level": "warning", "mask_passwords": "True"},
    }, "nextcloud-standin", privileged=True)
    return radicale.Application(cfg)


class Groupware:
    def __init__(self, state_dir: Path) -> None:
        logging.getLogger("radicale").setLevel(logging.WARNING)
        self.calendars = _radicale(state_dir / "caldav")
        self.addressbooks = _radicale(state_dir / "carddav")

    def call(self, app: radicale.Application, mount: str, uid: str, environ: dict, start_response):
        """Hands the request to Radicale as ``uid``, with the mount as its script name."""
        env = with_buffered_body(environ)
        env["SCRIPT_NAME"] = mount
        env["PATH_INFO"] = environ["PATH_INFO"][len(mount):] or "/"
        env["REMOTE_USER"] = uid
        env.pop("HTTP_AUTHORIZATION", None)
        env.pop("HTTP_X_SCRIPT_NAME", None)
        if env["REQUEST_METHOD"] != "DELETE":
            return app(env, start_response)
        # Radicale answers a successful DELETE 200 with a body; Nextcloud (sabre/dav) says 204.
        seen: dict[str, object] = {}

        def capture(status: str, headers: list, exc_info: object = None) -> None:
            seen["status"], seen["headers"] = status, headers

        body = b"".join(app(env, capture))
        status, headers = str(seen.get("status", "500 Internal Server Error")), list(seen.get("headers", []))  # type: ignore[arg-type]
        if status.startswith("200"):
            start_response("204 No Content", [(k, v) for k, v in headers
                                              if k.lower() not in ("content-length", "content-type")])
            return [b""]
        start_response(status, headers)
        return [body]

    def ensure_defaults(self, uid: str) -> None:
        self._ensure(self.calendars, CAL_MOUNT, f"/{uid}/personal/", "MKCALENDAR", MKCALENDAR, uid)
        self._ensure(self.addressbooks, CARD_MOUNT, f"/{uid}/contacts/", "MKCOL", MKADDRESSBOOK, uid)

    def _ensure(self, app: radicale.Application, mount: str, path: str, method: str,
                body: bytes, uid: str) -> None:
        status = _internal(app, mount, "PROPFIND", path, b"", uid, {"HTTP_DEPTH": "0"})
        if status.startswith("207"):
            return
        status = _internal(app, mount, method, path, body, uid, {"CONTENT_TYPE": "application/xml"})
        if not status.startswith("201"):
            raise GroupwareError(f"creating {mount}{path} failed: {status}")


def _internal(app: radicale.Application, mount: str, method: str, path: str, body: bytes,
              uid: str, extra: dict[str, str]) -> str:
    env = {"REQUEST_METHOD": method, "SCRIPT_NAME": mount, "PATH_INFO": path,
           "wsgi.input": io.BytesIO(body), "CONTENT_LENGTH": str(len(body)), "REMOTE_USER": uid,
           "SERVER_NAME": "localhost", "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1",
           "REMOTE_ADDR": "127.0.0.1", "HTTP_HOST": "localhost", "wsgi.url_scheme": "http",
           "wsgi.errors": sys.stderr, **extra}
    out: dict[str, str] = {}

    def start_response(status: str, headers: list, exc_info: object = None) -> None:
        out["status"] = status

    for _ in app(env, start_response):
        pass
    return out.get("status", "500")
