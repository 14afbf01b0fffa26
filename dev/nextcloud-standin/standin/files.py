"""WebDAV files, served by WsgiDAV with Nextcloud's properties and share permissions.

Owns: the WsgiDAV provider for ``/remote.php/dav/files/<uid>/``: every resource is looked up
through ``namespace`` (own home + mounts), carries Nextcloud's live properties (oc:fileid,
oc:permissions, oc:size, quoted d:getetag, ...), keeps file ids stable across MOVE, and
refuses writes the share permissions do not allow (403). The HTTP protocol itself
(PROPFIND, GET, PUT, MKCOL, MOVE, COPY, DELETE, Depth, Overwrite) is WsgiDAV's.

Must never: serve a path of another user's tree (the router answers those before WsgiDAV
sees them; the provider refuses them again with 404), or follow symlinks.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from xml.etree import ElementTree as ET

from wsgidav import util
from wsgidav.dav_error import (HTTP_BAD_REQUEST, HTTP_FORBIDDEN, HTTP_NOT_FOUND, DAVError)
from wsgidav.fs_dav_provider import FileResource, FilesystemProvider, FolderResource
from wsgidav.wsgidav_app import WsgiDAVApp

from .namespace import CREATE, DELETE, UPDATE, BadPath, Location, Namespace, letters

DAV_MOUNT = "/remote.php/dav/files"
OC = "http://owncloud.org/ns"
NC = "http://nextcloud.org/ns"
INSTANCE_ID = "ocstandin"

ET.register_namespace("d", "DAV:")
ET.register_namespace("oc", OC)
ET.register_namespace("nc", NC)

OC_PROPS = [f"{{{OC}}}fileid", f"{{{OC}}}id", f"{{{OC}}}permissions", f"{{{OC}}}size",
            f"{{{OC}}}owner-id", f"{{{OC}}}owner-display-name", f"{{{NC}}}has-preview"]
CREATED_KEY = "standin.created"  # environ: path of the file this request just created


def forbid(why: str) -> DAVError:
    return DAVError(HTTP_FORBIDDEN, why)


def tree_size(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                pass
    return total


class _NextcloudProps:
    """Nextcloud's live properties, shared by files and folders."""

    loc: Location
    provider: "StandinProvider"
    file_stat: os.stat_result

    @property
    def fileid(self) -> int:
        return self.provider.ns.store.node_id(self.loc.key)

    def get_etag(self) -> str:
        st = self.file_stat
        raw = f"{self.fileid}:{st.st_mtime_ns}:{st.st_size}:{st.st_ino}"
        if self.is_collection:  # type: ignore[attr-defined]
            raw += f":{self.provider.ns.store.version(self.loc.key)}"
        return hashlib.md5(raw.encode()).hexdigest()

    def support_etag(self) -> bool:
        return True

    def get_used_bytes(self) -> int | None:
        # Nextcloud reports the folder's own size and -3 ("unlimited"), never the host's disk.
        return tree_size(self.provider.ns.real(self.loc)) if self.is_collection else None  # type: ignore[attr-defined]

    def get_available_bytes(self) -> int | None:
        return -3 if self.is_collection else None  # type: ignore[attr-defined]

    def nc_permissions(self) -> str:
        shared = bool(self.provider.ns.store.shares_of_node(self.fileid))
        return letters(self.loc, self.is_collection, shared)  # type: ignore[attr-defined]

    def get_property_names(self, *, is_allprop):  # noqa: ANN001 - WsgiDAV's signature
        names = super().get_property_names(is_allprop=is_allprop)  # type: ignore[misc]
        return names + OC_PROPS

    def get_property_value(self, name):  # noqa: ANN001
        if name == "{DAV:}getetag":
            return f'"{self.get_etag()}"'  # Nextcloud quotes it, as in the ETag header
        if name == f"{{{OC}}}fileid":
            return str(self.fileid)
        if name == f"{{{OC}}}id":
            return f"{self.fileid:08d}{INSTANCE_ID}"
        if name == f"{{{OC}}}permissions":
            return self.nc_permissions()
        if name == f"{{{OC}}}size":
            real = self.provider.ns.real(self.loc)
            return str(tree_size(real) if self.is_collection else self.file_stat.st_size)  # type: ignore[attr-defined]
        if name in (f"{{{OC}}}owner-id", f"{{{OC}}}owner-display-name"):
            return self.loc.owner
        if name == f"{{{NC}}}has-preview":
            return "false"
        return super().get_property_value(name)  # type: ignore[misc]

    # -- shared write checks ------------------------------------------------------------

    def _check_removable(self) -> None:
        if self.loc.is_home:
            raise forbid("a home folder cannot be removed or moved")
        if self.loc.mount_root:
            raise forbid("the stand-in does not let a recipient delete or move a share mount")
        if not self.loc.can(DELETE):
            raise forbid("the share does not allow deleting")

    def _dest_loc(self, dest_path: str) -> Location:
        return self.provider.loc_for(dest_path, self.environ)  # type: ignore[attr-defined]

    def _check_can_create_at(self, dest_path: str) -> Location:
        dest = self._dest_loc(dest_path)
        if dest.is_home or dest.mount_root:
            raise forbid("that name is taken by a home or a share mount")
        if not self.provider.ns.parent(dest).can(CREATE):
            raise forbid("the destination folder does not allow creating")
        return dest

    def support_recursive_move(self, dest_path):  # noqa: ANN001
        return True

    def handle_move(self, dest_path):  # noqa: ANN001
        # WsgiDAV calls this before it deletes an existing destination (Overwrite: T), so
        # every refusal happens here, while nothing has changed yet. False = carry on.
        self._check_removable()
        self._check_can_create_at(dest_path)
        self._check_overwritable(dest_path)
        return False

    def handle_copy(self, dest_path, *, depth_infinity):  # noqa: ANN001
        self._check_can_create_at(dest_path)
        self._check_overwritable(dest_path)
        return False

    def _check_overwritable(self, dest_path: str) -> None:
        dest = self._dest_loc(dest_path)
        if self.provider.ns.real(dest).exists() and not dest.can(DELETE):
            raise forbid("the destination may not be replaced")

    def move_recursive(self, dest_path):  # noqa: ANN001
        self._check_removable()
        dest = self._check_can_create_at(dest_path)
        ns = self.provider.ns
        target = ns.real(dest)
        if target.exists():
            raise DAVError(HTTP_FORBIDDEN, "destination exists")
        shutil.move(str(ns.real(self.loc)), str(target))
        ns.store.move_subtree(self.loc.key, dest.key)  # ids follow the node
        return []

    def copy_move_single(self, dest_path, *, is_move):  # noqa: ANN001
        if is_move:
            raise forbid("moves are recursive here")
        dest = self._check_can_create_at(dest_path)
        ns = self.provider.ns
        target = ns.real(dest)
        if self.is_collection:  # type: ignore[attr-defined]
            target.mkdir(exist_ok=True)
        else:
            shutil.copy2(ns.real(self.loc), target)


class NcFile(_NextcloudProps, FileResource):
    def __init__(self, path: str, environ: dict, loc: Location, real: Path) -> None:
        super().__init__(path, environ, str(real))
        self.loc = loc

    def begin_write(self, *, content_type=None):  # noqa: ANN001
        if self.environ.get(CREATED_KEY) != self.path and not self.loc.can(UPDATE):
            raise forbid("the share is read-only")
        return open(self._file_path, "wb", 8192)

    def end_write(self, *, with_errors):  # noqa: ANN001 - WsgiDAV's signature
        # WsgiDAV answers a PUT with the ETag of this resource, whose stat was taken before
        # the write; Nextcloud answers the ETag of the version just written, the one a
        # PROPFIND then reports.
        self.file_stat = os.stat(self._file_path)

    def delete(self) -> None:
        self._check_removable()
        os.unlink(self._file_path)
        self.provider.ns.store.delete_subtree(self.loc.key)


class NcFolder(_NextcloudProps, FolderResource):
    def __init__(self, path: str, environ: dict, loc: Location, real: Path) -> None:
        super().__init__(path, environ, str(real))
        self.loc = loc

    def get_member_names(self) -> list[str]:
        return self.provider.ns.child_names(self.loc)

    def get_content_type(self) -> None:
        return None

    def support_recursive_delete(self) -> bool:
        return True

    def create_empty_resource(self, name: str):  # noqa: ANN201
        if not self.loc.can(CREATE):
            raise forbid("the folder does not allow creating files")
        path = util.join_uri(self.path, name)
        loc = self.provider.loc_for(path, self.environ)
        if loc.mount_root:
            raise forbid("that name is a share mount")
        with open(self.provider.ns.real(loc), "wb"):
            pass
        self.environ[CREATED_KEY] = path
        return self.provider.get_resource_inst(path, self.environ)

    def create_collection(self, name: str) -> None:
        if not self.loc.can(CREATE):
            raise forbid("the folder does not allow creating folders")
        loc = self.provider.loc_for(util.join_uri(self.path, name), self.environ)
        os.mkdir(self.provider.ns.real(loc))

    def delete(self) -> None:
        self._check_removable()
        shutil.rmtree(self._file_path)
        self.provider.ns.store.delete_subtree(self.loc.key)
        return None


class StandinProvider(FilesystemProvider):
    """Paths are '/<uid>/<view path>' under the share ``/remote.php/dav/files``."""

    def __init__(self, ns: Namespace) -> None:
        super().__init__(str(ns.root), readonly=False, fs_opts={"follow_symlinks": False})
        self.ns = ns

    def loc_for(self, path: str, environ: dict) -> Location:
        uid = environ.get("standin.uid")
        first, _, rest = path.strip("/").partition("/")
        if not uid or first != uid:
            raise DAVError(HTTP_NOT_FOUND)
        try:
            return self.ns.resolve(uid, rest)
        except BadPath as e:
            raise DAVError(HTTP_BAD_REQUEST, str(e)) from None

    def _loc_to_file_path(self, path: str, environ: dict = None) -> str:  # type: ignore[override]
        return str(self.ns.real(self.loc_for(path, environ or {})))

    def get_resource_inst(self, path: str, environ: dict):  # noqa: ANN201
        self._count_get_resource_inst += 1
        loc = self.loc_for(path, environ)
        real = self.ns.real(loc)
        if loc.is_home:
            real.mkdir(parents=True, exist_ok=True)
        if real.is_symlink() or not real.exists():
            return None
        if real.is_dir():
            return NcFolder(path, environ, loc, real)
        return NcFile(path, environ, loc, real)


def make_app(ns: Namespace) -> WsgiDAVApp:
    """WsgiDAV configured as a plain DAV engine: we authenticate in front of it."""
    config = {
        "provider_mapping": {DAV_MOUNT: StandinProvider(ns)},
        "simple_dc": {"user_mapping": {"*": True}},  # authentication happened in app.py
        "http_authenticator": {"domain_controller": None, "accept_basic": False,
                               "accept_digest": False, "default_to_digest": False},
        "lock_storage": False,
        "property_manager": None,
        "dir_browser": {"enable": False},
        "verbose": 1,
        "logging": {"enable_loggers": []},
        "suppress_version_info": True,
        "add_header_MS_Author_Via": False,
        "cors": {"allow_origin": None},
    }
    return WsgiDAVApp(config)
