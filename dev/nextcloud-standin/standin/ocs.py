"""OCS endpoints: the current user, the files_sharing API (user shares, type 0) and the tamebi
app's mail bridge (whose routes ``mail.py`` owns).

Owns: ``/ocs/v{1,2}.php/cloud/user`` and ``/ocs/v{1,2}.php/apps/files_sharing/api/v1/shares``
(list, ``shared_with_me=true``, create, get, update permissions, delete), the OCS envelope
(``{"ocs": {"meta", "data"}}`` as JSON, or XML when JSON is not asked for), and the share
objects in Nextcloud's field names.

Must never: share what the caller does not own (the stand-in refuses reshares outright,
stricter than Nextcloud), show or delete another owner's share (404, like Nextcloud), or
answer without the ``OCS-APIRequest: true`` header (Nextcloud's CSRF rule: 401, code 997).
"""

from __future__ import annotations

import logging
import mimetypes
from xml.etree import ElementTree as ET

from .config import valid_language
from .mail import PREFIX as MAIL_PREFIX
from .mail import Mail, MailError
from .namespace import ALL, FILE_MASK, READ, BadPath, Namespace
from .store import Share
from .web import HttpError, Request, json_response, respond

log = logging.getLogger("standin.ocs")

SHARES = "apps/files_sharing/api/v1/shares"



def _xml(parent: ET.Element, value: object) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _xml(ET.SubElement(parent, str(k)), v)
    elif isinstance(value, list):
        for v in value:
            _xml(ET.SubElement(parent, "element"), v)
    elif value is not None:
        parent.text = str(value).lower() if isinstance(value, bool) else str(value)


def envelope(req: Request, start_response, status: int, data: object, message: str = "OK"):
    v1 = req.path.startswith("/ocs/v1.php/")
    ok = 200 <= status < 300
    code = (100 if ok else status) if v1 else status
    meta = {"status": "ok" if ok else "failure", "statuscode": code, "message": message}
    http_status = 200 if v1 and status != 401 else status
    doc = {"ocs": {"meta": meta, "data": data}}
    if req.wants_json():
        return json_response(start_response, http_status, doc)
    root = ET.Element("ocs")
    _xml(root, doc["ocs"])
    return respond(start_response, http_status, ET.tostring(root, encoding="utf-8", xml_declaration=True),
                   "application/xml; charset=utf-8")


class Ocs:
    def __init__(self, ns: Namespace, users: list[str], mail: Mail | None = None, language: str = "en",
                 locale: str = "") -> None:
        self.ns = ns
        self.users = users
        self.mail = mail
        # Each user's core/lang and core/locale, as their personal settings hold them.
        self.settings = {uid: {"language": language, "locale": locale} for uid in users}

    def handle(self, req: Request, uid: str, start_response):
        if (req.header("OCS-APIRequest") or "").lower() != "true":
            return envelope(req, start_response, 401, [], "CSRF check failed: send OCS-APIRequest: true")
        rest = req.path.split(".php/", 1)[1] if ".php/" in req.path else ""
        if self.mail is not None and req.path.startswith("/ocs/v2.php/") and (
                rest == MAIL_PREFIX or rest.startswith(MAIL_PREFIX + "/")):
            return self.mail_route(req, uid, rest[len(MAIL_PREFIX):], start_response)
        try:
            if rest == "cloud/user" and req.method == "GET":
                return envelope(req, start_response, 200, self.user(uid))
            if rest.startswith("cloud/users/") and req.method == "PUT":
                return envelope(req, start_response, 200, self.edit_user(uid, rest[len("cloud/users/"):], req.params()))
            if rest == SHARES:
                if req.method == "GET":
                    return envelope(req, start_response, 200, self.list(uid, req))
                if req.method == "POST":
                    return envelope(req, start_response, 200, self.create(uid, req.params()))
            if rest.startswith(SHARES + "/"):
                share_id = rest[len(SHARES) + 1:]
                if not share_id.isdigit():
                    raise HttpError(404, "Wrong share ID, share does not exist")
                share = self._own_share(uid, int(share_id))
                if req.method == "GET":
                    return envelope(req, start_response, 200, [self.share_json(share, uid)])
                if req.method == "PUT":
                    # ShareAPIController::updateShare(string $id, …): the route's id merged with a
                    # same-named body field as Nextcloud's Request merges them (web.Request.params).
                    p = req.params({"id": share_id})
                    target = str(p.get("id"))
                    if not target.isdigit():
                        raise HttpError(404, "Wrong share ID, share does not exist")
                    return envelope(req, start_response, 200, self.update(self._own_share(uid, int(target)), p, uid))
                if req.method == "DELETE":
                    self.ns.store.delete_share(share.id)
                    return envelope(req, start_response, 200, [])
            raise HttpError(404, "Invalid query, please check the syntax. API specifications are here:"
                                " http://www.freedesktop.org/wiki/Specifications/open-collaboration-services.")
        except HttpError as e:
            return envelope(req, start_response, e.status, [], e.message)

    def mail_route(self, req: Request, uid: str, rest: str, start_response):
        try:
            status, data = self.mail.route(req, uid, rest)  # type: ignore[union-attr]
            return envelope(req, start_response, status, data)
        # An error is a DataResponse with a status: Nextcloud's V2Response leaves meta.message
        # empty for those (only an OCSException fills it), so the message is in data only.
        except MailError as e:
            return envelope(req, start_response, e.status, {"error": e.code, "message": e.message}, "")
        except HttpError as e:  # body too large and the like, from the request plumbing
            code = "invalid_request" if e.status < 500 else "mail_backend"
            return envelope(req, start_response, e.status, {"error": code, "message": e.message}, "")
        except Exception:  # noqa: BLE001 - as the PHP bridge: the contract's shape, the details only logged
            log.exception("mail bridge failed")
            return envelope(req, start_response, 500, {"error": "internal_error",
                                                       "message": "The mail bridge failed; the details are in the Nextcloud log"}, "")

    def edit_user(self, uid: str, target: str, params: dict[str, object]) -> list[object]:
        """UsersController::editUser for the keys a person may set on themselves here: their
        language and locale (Nextcloud answers 400 for a code it does not offer, and 403 when
        the caller is not that user and not an admin; the stand-in has no admins)."""
        if target != uid:
            raise HttpError(403, "You do not have permission to perform this action")
        key, value = params.get("key"), params.get("value")
        if key not in ("language", "locale"):
            raise HttpError(400, "Unknown key")
        if not isinstance(value, str) or not (valid_language(value) or (key == "locale" and value == "")):
            raise HttpError(400, f"Invalid {key}")
        self.settings[uid][key] = value
        return []

    def user(self, uid: str) -> dict[str, object]:
        settings = self.settings.get(uid, {"language": "en", "locale": ""})
        return {"enabled": True, "storageLocation": f"/var/www/html/data/{uid}", "id": uid,
                "lastLogin": 0, "backend": "Database", "subadmin": [], "quota": {"quota": -3},
                "email": None, "additional_mail": [], "displayname": uid, "display-name": uid,
                "phone": "", "address": "", "website": "", "twitter": "", "groups": [],
                "language": settings["language"], "locale": settings["locale"], "backendCapabilities": {"setDisplayName": True, "setPassword": True}}

    def _own_share(self, uid: str, share_id: int) -> Share:
        share = self.ns.store.share(share_id)
        if share is None or share.owner != uid:
            raise HttpError(404, "Wrong share ID, share does not exist")
        return share

    def list(self, uid: str, req: Request) -> list[dict[str, object]]:
        q = req.query
        if q.get("shared_with_me") == "true":
            shares = [s for s in self.ns.store.shares_received(uid) if (self.ns.root / s.path).exists()]
        else:
            shares = self.ns.store.shares_owned(uid)
        out = [self.share_json(s, uid) for s in shares]
        if "path" in q:
            wanted = "/" + q["path"].strip("/")
            out = [s for s in out if s["path"] == wanted]
        return out

    def create(self, uid: str, p: dict[str, object]) -> dict[str, object]:
        path = str(p.get("path") or "")
        if not path.strip("/"):
            raise HttpError(404, "Please specify a file or folder path")
        share_type = str(p.get("shareType", ""))
        if share_type != "0":
            raise HttpError(400, "Unknown share type (the stand-in supports user shares, type 0)")
        share_with = str(p.get("shareWith") or "")
        if share_with not in self.users:
            raise HttpError(404, "Please specify a valid user")
        if share_with == uid:
            raise HttpError(400, "Cannot share with yourself")
        try:
            loc = self.ns.resolve(uid, path)
        except BadPath:
            raise HttpError(404, "Wrong path, file/folder does not exist") from None
        real = self.ns.real(loc)
        if not real.exists():
            raise HttpError(404, "Wrong path, file/folder does not exist")
        if loc.share is not None:
            raise HttpError(403, "The stand-in only shares your own files (no reshares)")
        perms = self._permissions(p.get("permissions"), real.is_dir())
        node_id = self.ns.store.node_id(loc.key)
        mount = self.ns.mount_name_for(share_with, real.name)
        share = self.ns.store.create_share(node_id, uid, share_with, perms, mount)
        if share is None:
            raise HttpError(403, f"Path is already shared with {share_with}")
        return self.share_json(share, uid)

    def update(self, share: Share, p: dict[str, object], uid: str) -> dict[str, object]:
        if "permissions" not in p:
            raise HttpError(400, "Wrong or no update parameter given")
        is_dir = (self.ns.root / share.path).is_dir()
        self.ns.store.update_share_permissions(share.id, self._permissions(p["permissions"], is_dir))
        updated = self.ns.store.share(share.id)
        if updated is None:
            raise HttpError(404, "Wrong share ID, share does not exist")
        return self.share_json(updated, uid)

    @staticmethod
    def _permissions(raw: object, is_dir: bool) -> int:
        if raw is None or raw == "":
            perms = ALL
        else:
            try:
                perms = int(str(raw))
            except ValueError:
                raise HttpError(400, "permissions must be an integer") from None
        if not 1 <= perms <= ALL:
            raise HttpError(400, "permissions must be between 1 and 31")
        if not perms & READ:
            raise HttpError(400, "Cannot remove read permission")
        return perms if is_dir else perms & FILE_MASK

    def share_json(self, s: Share, viewer: str) -> dict[str, object]:
        real = self.ns.root / s.path
        is_dir = real.is_dir()
        owner_path = "/" + s.path.partition("/")[2]
        path = owner_path if viewer == s.owner else "/" + s.mount_name
        try:
            st = real.stat()
            size, mtime = st.st_size, int(st.st_mtime)
        except OSError:
            size, mtime = 0, 0
        parent_key = s.path.rpartition("/")[0]
        mime = "httpd/unix-directory" if is_dir else (mimetypes.guess_type(real.name)[0] or "application/octet-stream")
        return {
            "id": str(s.id), "share_type": 0, "uid_owner": s.owner, "displayname_owner": s.owner,
            "permissions": s.permissions, "can_edit": viewer == s.owner, "can_delete": viewer == s.owner,
            "stime": s.stime, "parent": None, "expiration": None, "token": None,
            "uid_file_owner": s.owner, "note": "", "label": None, "displayname_file_owner": s.owner,
            "path": path, "item_type": "folder" if is_dir else "file", "item_permissions": s.permissions,
            "is-mount-root": False, "mount-type": "shared" if viewer != s.owner else "",
            "mimetype": mime, "has_preview": False, "storage_id": f"home::{s.owner}", "storage": 1,
            "item_source": s.node_id, "file_source": s.node_id,
            "file_parent": self.ns.store.node_id(parent_key) if parent_key else None,
            "file_target": "/" + s.mount_name, "item_size": size, "item_mtime": mtime,
            "share_with": s.share_with, "share_with_displayname": s.share_with,
            "share_with_displayname_unique": s.share_with, "status": [], "mail_send": 0,
            "hide_download": 0, "attributes": None, "tags": [],
        }
