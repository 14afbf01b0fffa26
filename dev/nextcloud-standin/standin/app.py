"""The front WSGI application: authenticate, then hand the request to the part that answers.

Owns: Nextcloud's URL layout, the 401 answer, the rules for touching another user's tree
(files: 404, PUT 403, PROPFIND an empty 207; calendars and contacts: 404), the
Destination check for MOVE/COPY, the Depth rule for PROPFIND (infinity is served as 1,
as Nextcloud does), and emitting webhooks after successful file changes.

Must never: let a request reach WsgiDAV, Radicale, OCS or Deck without a verified uid, or
pass the caller's Authorization header on to them.
"""

from __future__ import annotations

import logging
import secrets
import time
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit
from xml.sax.saxutils import escape

from .auth import Authenticator, TokenRequestError
from .deck import PREFIXES as DECK_PREFIXES
from .deck import Deck
from .files import DAV_MOUNT, StandinProvider, make_app
from .groupware import CAL_MOUNT, CARD_MOUNT, Groupware
from .namespace import BadPath, Namespace
from .ocs import Ocs
from .ocs import envelope as ocs_envelope
from .search import run as run_search
from .sessions import Sessions
from .smtp_sink import SmtpSink
from .talk import BOT_MESSAGE
from .talk import PREFIX as TALK_PREFIX
from .talk import Talk
from .web import HttpError, Request, json_response, respond
from . import webhooks
from .webhooks import Webhooks

log = logging.getLogger("standin")

STATUS = {"installed": True, "maintenance": False, "needsDbUpgrade": False, "version": "31.0.2.1",
          "versionstring": "31.0.2", "edition": "", "productname": "Nextcloud", "extendedSupport": False}
EMPTY_MULTISTATUS = b'<?xml version="1.0" encoding="utf-8"?>\n<d:multistatus xmlns:d="DAV:"/>'
WWW_AUTH = [("WWW-Authenticate", 'Basic realm="Nextcloud", charset="UTF-8"'),
            ("WWW-Authenticate", 'Bearer realm="Nextcloud"')]


PRINCIPALS = "/remote.php/dav/principals/users/"


def principal_props(uid: str, home: bool) -> str:
    """The properties Nextcloud answers for the DAV root and for a user's principal. The uid
    comes from authentication, never from the path, and is XML-escaped."""
    u = escape(uid)
    props = f"<d:current-user-principal><d:href>{PRINCIPALS}{u}/</d:href></d:current-user-principal>"
    if home:
        props += (f"<d:displayname>{u}</d:displayname><d:resourcetype><d:principal/></d:resourcetype>"
                  f"<cal:calendar-home-set><d:href>/remote.php/dav/calendars/{u}/</d:href></cal:calendar-home-set>"
                  f"<card:addressbook-home-set><d:href>/remote.php/dav/addressbooks/users/{u}/</d:href></card:addressbook-home-set>"
                  f"<d:principal-URL><d:href>{PRINCIPALS}{u}/</d:href></d:principal-URL>")
    return props


@dataclass
class Faults:
    """Stand-in only, set through ``POST /standin/faults``: ways a server can fail that a client
    must notice. ``lose_writes``: writes to files, calendars, address books and Deck cards are
    answered as successes (the statuses, ETags and JSON a real answer has) and not applied, as
    a server whose storage drops them would; a client that reads back what it wrote sees it."""
    lose_writes: bool = False


@dataclass
class Parts:
    auth: Authenticator
    ns: Namespace
    groupware: Groupware
    ocs: Ocs
    deck: Deck
    hooks: Webhooks
    sessions: Sessions
    talk: Talk
    sink: SmtpSink | None = None
    # The token `occ` (dev/nextcloud-standin/occ) proves itself with: it reads it from the state
    # folder, as the real occ needs a shell on the server.
    occ_token: str = ""
    login_delay: float = 0.0
    # The production set-up has user_oidc installed; without it (the conformance checks' reference
    # server) nothing reads a parameter before routing and a JSON field beats a route parameter.
    user_oidc: bool = True
    faults: Faults = field(default_factory=Faults)


class StandinApp:
    def __init__(self, parts: Parts) -> None:
        self.p = parts
        self.dav = make_app(parts.ns)
        self.provider: StandinProvider = self.dav.provider_map[DAV_MOUNT]  # type: ignore[assignment]

    def __call__(self, environ: dict, start_response):
        req = Request.of(environ)
        try:
            return self.dispatch(req, start_response)
        except HttpError as e:
            return respond(start_response, e.status, e.message.encode(), "text/plain; charset=utf-8")

    def dispatch(self, req: Request, start_response):
        path = req.path
        if path in ("/status.php", "/index.php/status.php"):
            return json_response(start_response, 200, STATUS)
        if path == "/standin/token":
            return self.token(req, start_response)
        if path.startswith("/standin/"):
            return self.standin_control(req, start_response)
        bot_message = BOT_MESSAGE.match(path)
        if bot_message:
            # Talk's bot API is a public page: no user, the bot's signature is the proof.
            return self.talk_answer(req, start_response, lambda: self.p.talk.bot_message(req, bot_message.group(1)))
        uid, start_response, refusal = self.authenticate(req, start_response)
        if uid is None:
            return refusal
        req.environ.pop("HTTP_AUTHORIZATION", None)
        req.environ.pop("HTTP_COOKIE", None)
        req.environ["standin.uid"] = uid
        # user_oidc's boot reads a request parameter whenever no session logged the request in
        # yet, which decodes the body before routing: route parameters then win over same-named
        # JSON fields (web.Request.params says how Nextcloud's Request merges them).
        req.environ["standin.route_params_win"] = self.p.user_oidc and not req.environ.get("standin.session")
        req.environ["standin.lose_writes"] = self.p.faults.lose_writes
        if path.startswith(DAV_MOUNT + "/") or path == DAV_MOUNT:
            return self.files(req, uid, start_response)
        if path.rstrip("/") == "/remote.php/dav":
            if req.method == "SEARCH":
                return self.search(req, uid, start_response)
            if req.method == "PROPFIND":
                return self.principal_discovery(start_response, uid, "/remote.php/dav/", principal_props(uid, home=False))
            return respond(start_response, 405, b"SEARCH and PROPFIND only", "text/plain")
        if path.startswith(PRINCIPALS):
            # Only the caller's own principal exists for them; anyone else's is 404.
            if req.method != "PROPFIND":
                return respond(start_response, 405, b"PROPFIND only", "text/plain")
            if path.rstrip("/") != f"{PRINCIPALS}{uid}":
                return respond(start_response, 404, b"Not Found", "text/plain")
            return self.principal_discovery(start_response, uid, f"{PRINCIPALS}{uid}/", principal_props(uid, home=True))
        if path.startswith(CAL_MOUNT + "/") or path == CAL_MOUNT:
            return self.groupware(req, uid, CAL_MOUNT, self.p.groupware.calendars, start_response)
        if path.startswith(CARD_MOUNT + "/") or path == CARD_MOUNT:
            return self.groupware(req, uid, CARD_MOUNT, self.p.groupware.addressbooks, start_response)
        if path.startswith("/ocs/v2.php/" + TALK_PREFIX):
            return self.talk_answer(req, start_response,
                                    lambda: self.p.talk.route(req, uid, path[len("/ocs/v2.php/" + TALK_PREFIX):]))
        if path in ("/ocs/v2.php/cloud/capabilities", "/ocs/v1.php/cloud/capabilities") and req.method == "GET":
            return self.talk_answer(req, start_response, lambda: (200, {
                "version": {"major": 31, "minor": 0, "micro": 11, "string": "31.0.11", "edition": "", "extendedSupport": False},
                "capabilities": {"core": {"pollinterval": 60, "webdav-root": "remote.php/webdav"}, **self.p.talk.capabilities()}}))
        if path.startswith(("/ocs/v2.php/", "/ocs/v1.php/")):
            return self.p.ocs.handle(req, uid, start_response)
        if path.startswith(DECK_PREFIXES):
            return self.p.deck.handle(req, uid, start_response)
        return respond(start_response, 404, b"Not Found", "text/plain")

    # ---- authentication: the session cookie, else the credential (which opens a session) --

    @staticmethod
    def surface(path: str) -> str:
        """Which part of Nextcloud serves ``path``, as far as its session and CSRF rules go."""
        if path.startswith("/remote.php/"):
            return "dav"
        if path.startswith(("/ocs/v2.php/", "/ocs/v1.php/")):
            return "ocs"
        if path.startswith(DECK_PREFIXES):
            return "deck"
        return "other"

    def authenticate(self, req: Request, start_response):
        """(uid, start_response with the session's Set-Cookie headers added, None), or
        (None, _, the refusal's body) once a refusal has been answered."""
        header = req.header("Authorization")
        surface = self.surface(req.path)
        ocs_header = bool(req.header("OCS-APIRequest"))
        sessions = self.p.sessions
        gate = sessions.check(req.header("Cookie"), header, ocs_header, req.method, surface)
        extra_cookies = list(gate.set_cookies)
        if gate.status is not None:
            log.warning("refused a session cookie: %s", gate.message)
            extra = (WWW_AUTH if gate.status == 401 else []) + extra_cookies
            return None, start_response, respond(start_response, gate.status, gate.message.encode(),
                                                 "text/plain; charset=utf-8", extra)
        if gate.uid is None:
            if self.p.login_delay:
                time.sleep(self.p.login_delay)
            uid = self.p.auth.resolve(header)
            if uid is None or header is None:
                return None, start_response, respond(start_response, 401, b"Unauthorized", "text/plain; charset=utf-8",
                                                     WWW_AUTH + extra_cookies)
            basic = header.startswith("Basic ")
            if surface == "deck" and not basic and not (ocs_header and sessions.ocs_apirequest_passes_csrf):
                # Deck's API is @CORS: a login from anything but Basic is logged out again.
                return None, start_response, json_response(start_response, 401, {"message": "CORS requires basic auth"})
            origin, expires = self.p.auth.origin(header)
            extra_cookies += sessions.login(uid, header, origin, expires, dav_authenticated=basic and surface == "dav",
                                            new_session=gate.new_session)
        else:
            uid = gate.uid
            req.environ["standin.session"] = True
        if not extra_cookies:
            return uid, start_response, None

        def with_cookies(status: str, headers: list, exc_info: object = None):
            headers = list(headers) + extra_cookies
            return start_response(status, headers, exc_info) if exc_info else start_response(status, headers)

        return uid, with_cookies, None

    def talk_answer(self, req: Request, start_response, answer):
        """An OCS answer from the Talk part: Nextcloud's CSRF rule first, then its envelope."""
        if (req.header("OCS-APIRequest") or "").lower() != "true":
            return ocs_envelope(req, start_response, 401, [], "CSRF check failed: send OCS-APIRequest: true")
        try:
            status, data = answer()
        except HttpError as e:
            return ocs_envelope(req, start_response, e.status, [], e.message)
        return ocs_envelope(req, start_response, status, data)

    def talk_control(self, req: Request, start_response):
        """Stand-in only: ``POST /standin/occ`` runs a ``talk:bot:*`` occ command (JSON ``{"argv"}``,
        ``Authorization: Bearer <the state folder's occ token>``; answers ``{"status", "output"}``),
        and ``POST /standin/talk/post`` posts as someone who is not a user of this server (JSON
        ``{"token", "actorType": "guests"|"federated_users", "actorId", "name", "message"}``)."""
        if req.method != "POST":
            return respond(start_response, 405, b"POST only", "text/plain")
        if req.path == "/standin/occ":
            if not self.p.occ_token or not secrets.compare_digest(req.header("Authorization") or "", f"Bearer {self.p.occ_token}"):
                return respond(start_response, 401, b"occ token required", "text/plain")
            argv = req.params().get("argv")
            if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
                return json_response(start_response, 400, {"error": "argv must be a list of strings"})
            status, output = self.p.talk.occ(argv)
            return json_response(start_response, 200, {"status": status, "output": output})
        p = req.params()
        fields = [p.get(k) for k in ("token", "actorType", "actorId", "name", "message")]
        if not all(isinstance(f, str) and f for f in fields):
            return json_response(start_response, 400, {"error": "token, actorType, actorId, name and message are required"})
        try:
            return json_response(start_response, 201, self.p.talk.guest_post(*fields))  # type: ignore[arg-type]
        except HttpError as e:
            return json_response(start_response, e.status, {"error": e.message})

    def standin_control(self, req: Request, start_response):
        """Stand-in only: per-user session counters (GET ?uid=), a user's sessions timed out
        (POST /standin/sessions/expire?uid=), whether OCS-APIRequest passes the CSRF check
        (POST /standin/sessions/settings, JSON), injected faults (GET or POST /standin/faults, JSON
        ``{"lose_writes": bool}``: see ``Faults``), app-password revocation (POST
        /standin/revoke-app-password with that password as Basic), what the SMTP sink
        received (GET /standin/smtp-sink), and whether a user's mail account has a Sent or a Drafts
        mailbox (POST /standin/mail/sent-mailbox?uid= or /standin/mail/drafts-mailbox?uid=, JSON
        ``{"set": bool}``), as a test needs them."""
        if req.path in ("/standin/occ", "/standin/talk/post"):
            return self.talk_control(req, start_response)
        if req.path == "/standin/smtp-sink" and req.method == "GET" and self.p.sink is not None:
            return json_response(start_response, 200, {"smtp": f"{self.p.sink.host}:{self.p.sink.port}",
                                                       "maildir": str(self.p.sink.maildir),
                                                       "messages": self.p.sink.messages()})
        if req.path == "/standin/sessions" and req.method == "GET":
            uid = req.query.get("uid", "")
            if uid not in self.p.auth.uids:
                return respond(start_response, 404, b"no such user", "text/plain")
            return json_response(start_response, 200, self.p.sessions.counters(uid))
        if req.path == "/standin/sessions/expire" and req.method == "POST":
            uid = req.query.get("uid", "")
            if uid not in self.p.auth.uids:
                return respond(start_response, 404, b"no such user", "text/plain")
            return json_response(start_response, 200, {"timed_out": self.p.sessions.time_out(uid)})
        if req.path == "/standin/sessions/settings" and req.method == "POST":
            body = req.params()
            value = body.get("ocs_apirequest_passes_csrf")
            if not isinstance(value, bool):
                return json_response(start_response, 400, {"error": "ocs_apirequest_passes_csrf must be true or false"})
            self.p.sessions.ocs_apirequest_passes_csrf = value
            return json_response(start_response, 200, {"ocs_apirequest_passes_csrf": value})
        if req.path == "/standin/faults":
            if req.method == "POST":
                value = req.params().get("lose_writes")
                if not isinstance(value, bool):
                    return json_response(start_response, 400, {"error": "lose_writes must be true or false"})
                self.p.faults.lose_writes = value
            elif req.method != "GET":
                return respond(start_response, 405, b"GET or POST only", "text/plain")
            return json_response(start_response, 200, {"lose_writes": self.p.faults.lose_writes})
        mail = self.p.ocs.mail
        switches = {
            "/standin/mail/sent-mailbox": ("sent_mailbox", "set_sent_mailbox"),
            "/standin/mail/drafts-mailbox": ("drafts_mailbox", "set_drafts_mailbox"),
        }
        if req.path in switches:
            if req.method != "POST":
                return respond(start_response, 405, b"POST only", "text/plain")
            if mail is None or not mail.available:
                return json_response(start_response, 501, {"error": "mail_unavailable: this stand-in runs without mail"})
            (name, setter), uid, present = switches[req.path], req.query.get("uid", ""), req.params().get("set")
            switch = getattr(mail, setter)
            if not uid:
                return json_response(start_response, 400, {"error": "uid is required (?uid=)"})
            if uid not in self.p.auth.uids:
                return respond(start_response, 404, b"no such user", "text/plain")
            if not isinstance(present, bool):
                return json_response(start_response, 400, {"error": "set must be true or false"})
            switch(uid, present)
            return json_response(start_response, 200, {"uid": uid, name: present})
        if req.path == "/standin/revoke-app-password" and req.method == "POST":
            uid = self.p.auth.basic(req.header("Authorization"))
            if uid is None:
                return respond(start_response, 401, b"Basic app-password auth required", "text/plain", WWW_AUTH)
            self.p.auth.revoke_app_password(uid)
            ended = self.p.sessions.revoke(("app", uid))
            return json_response(start_response, 200, {"revoked": uid, "sessions_ended": ended})
        return respond(start_response, 404, b"Not Found", "text/plain")

    # ---- principal discovery (what CalDAV/CardDAV clients ask first) -----------------------

    @staticmethod
    def principal_discovery(start_response, uid: str, href: str, props: str):
        body = ('<?xml version="1.0"?>\n<d:multistatus xmlns:d="DAV:" xmlns:cal="urn:ietf:params:xml:ns:caldav" '
                'xmlns:card="urn:ietf:params:xml:ns:carddav"><d:response>'
                f"<d:href>{href}</d:href><d:propstat><d:prop>{props}</d:prop>"
                "<d:status>HTTP/1.1 200 OK</d:status></d:propstat></d:response></d:multistatus>")
        return respond(start_response, 207, body.encode(), "application/xml; charset=utf-8")

    # ---- tokens (stand-in only) -----------------------------------------------------------

    def token(self, req: Request, start_response):
        uid = self.p.auth.basic(req.header("Authorization"))
        if uid is None:
            return respond(start_response, 401, b"Basic app-password auth required", "text/plain", WWW_AUTH)
        if req.method != "POST":
            return respond(start_response, 405, b"POST only", "text/plain")
        p = req.params()
        host = req.environ.get("HTTP_HOST") or "localhost"
        try:
            return json_response(start_response, 200, self.p.auth.mint(uid, f"http://{host}", p.get("aud"),
                                                                          p.get("ttl_seconds")))
        except TokenRequestError as e:
            return json_response(start_response, 400, {"error": "invalid_request", "error_description": str(e)})

    # ---- files ------------------------------------------------------------------------------

    def files(self, req: Request, uid: str, start_response):
        rest = req.path[len(DAV_MOUNT):].strip("/")
        owner, _, view = rest.partition("/")
        if owner != uid:
            # Another user's tree: nothing about it leaks (Nextcloud's answers, kept exactly).
            if req.method == "PROPFIND":
                return respond(start_response, 207, EMPTY_MULTISTATUS, "application/xml; charset=utf-8")
            if req.method == "PUT":
                return respond(start_response, 403, b"Forbidden", "text/plain")
            return respond(start_response, 404, b"Not Found", "text/plain")
        if req.method == "PROPFIND" and req.environ.get("HTTP_DEPTH", "infinity").lower() not in ("0", "1"):
            req.environ["HTTP_DEPTH"] = "1"  # Nextcloud serves Depth: infinity as 1
        dest_view = None
        if req.method in ("MOVE", "COPY"):
            dest_view = self.destination(req, uid)
            if dest_view is None:
                return respond(start_response, 403, b"Destination must be in your own files", "text/plain")
        try:
            before = self.p.ns.resolve(uid, view)
        except BadPath as e:
            return respond(start_response, 400, str(e).encode(), "text/plain")
        existed = self.p.ns.real(before).exists()
        # The source's id, taken before it moves or goes (allocated now if never seen).
        old_id = self.p.ns.store.node_id(before.key) if existed and req.method != "GET" else None
        status: list[int] = []

        def capture(s: str, headers: list, exc_info: object = None):
            status.append(int(s.split(" ", 1)[0]))
            return start_response(s, headers, exc_info) if exc_info else start_response(s, headers)

        if req.method not in ("PUT", "MKCOL", "DELETE", "MOVE", "COPY"):
            return self.dav(req.environ, capture)
        if req.environ.get("standin.lose_writes"):
            return self.lost_write(req, uid, dest_view, existed, start_response)
        # WsgiDAV may call start_response only while its body is iterated: run it to the end
        # (these answers are small) so the outcome is known before any webhook is sent.
        result = self.dav(req.environ, capture)
        try:
            body = list(result)
        finally:
            close = getattr(result, "close", None)
            if close:
                close()
        if status and 200 <= status[0] < 300:
            self.propagate_etags(uid, [view] + ([dest_view] if dest_view is not None else []))
            self.after_change(req.method, uid, view, dest_view, old_id, existed)
        return body

    def lost_write(self, req: Request, uid: str, dest_view: str | None, existed: bool, start_response):
        """The ``lose_writes`` fault: the answer WsgiDAV would give, with nothing written."""
        req.body()  # read the upload as a real server would, then drop it
        if req.method == "PUT":
            etag = f'"{secrets.token_hex(16)}"'
            return respond(start_response, 204 if existed else 201, b"", "text/plain", [("ETag", etag)])
        if req.method in ("MOVE", "COPY") and dest_view is not None:
            target = self.p.ns.real(self.p.ns.resolve(uid, dest_view)).exists()
            return respond(start_response, 204 if target else 201, b"", "text/plain")
        if req.method == "DELETE" and not existed:
            return respond(start_response, 404, b"Not Found", "text/plain")
        return respond(start_response, 204 if req.method == "DELETE" else 201, b"", "text/plain")

    def propagate_etags(self, uid: str, views: list[str]) -> None:
        for v in views:
            self.p.ns.store.touch_ancestors(self.p.ns.resolve(uid, v).key)

    def destination(self, req: Request, uid: str) -> str | None:
        raw = req.header("Destination")
        if not raw:
            return None
        path = unquote(urlsplit(raw).path)
        prefix = f"{DAV_MOUNT}/{uid}/"
        if not (path + "/").startswith(prefix):
            return None
        return path[len(prefix):].strip("/")

    def after_change(self, method: str, uid: str, view: str, dest_view: str | None,
                     old_id: int | None, existed: bool) -> None:
        ns, emit = self.p.ns, self.p.hooks.emit

        def node(v: str) -> dict[str, object]:
            loc = ns.resolve(uid, v)
            return webhooks.node(uid, v, ns.store.node_id(loc.key) if ns.real(loc).exists() else None)

        view = view.strip("/")
        if method == "PUT":
            if not existed:
                emit(webhooks.payload(uid, "NodeCreatedEvent", node=node(view)))
            emit(webhooks.payload(uid, "NodeWrittenEvent", node=node(view)))
        elif method == "MKCOL":
            emit(webhooks.payload(uid, "NodeCreatedEvent", node=node(view)))
        elif method == "DELETE":
            # Nextcloud dispatches BeforeNodeDeletedEvent while the node (and its id) still
            # exists, then NodeDeletedEvent, which can no longer name the id.
            emit(webhooks.payload(uid, "BeforeNodeDeletedEvent", node=webhooks.node(uid, view, old_id)))
            emit(webhooks.payload(uid, "NodeDeletedEvent", node=webhooks.node(uid, view, None)))
        elif method == "MOVE" and dest_view is not None:
            emit(webhooks.payload(uid, "NodeRenamedEvent", source=webhooks.node(uid, view, old_id),
                                  target=node(dest_view)))
        elif method == "COPY" and dest_view is not None:
            emit(webhooks.payload(uid, "NodeCopiedEvent", source=node(view), target=node(dest_view)))

    def search(self, req: Request, uid: str, start_response):
        req.environ["wsgidav.provider"] = self.provider
        req.environ["wsgidav.config"] = self.dav.config
        try:
            body = run_search(req.body(), uid, self.p.ns, self.provider, req.environ)
        except HttpError as e:
            return respond(start_response, e.status, e.message.encode(), "text/plain; charset=utf-8")
        return respond(start_response, 207, body, "application/xml; charset=utf-8")

    # ---- calendars and contacts -------------------------------------------------------------

    def groupware(self, req: Request, uid: str, mount: str, app, start_response):
        owner = req.path[len(mount):].strip("/").partition("/")[0]
        if owner and owner != uid:
            return respond(start_response, 404, b"Not Found", "text/plain")
        if req.environ.get("standin.lose_writes") and req.method in ("PUT", "DELETE"):
            # The lose_writes fault: sabre/dav's answer to a new object (or a deletion), nothing stored.
            req.body()
            if req.method == "DELETE":
                return respond(start_response, 204, b"", "text/plain")
            return respond(start_response, 201, b"", "text/plain", [("ETag", f'"{secrets.token_hex(16)}"')])
        return self.p.groupware.call(app, mount, uid, req.environ, start_response)
