"""A user's file tree as Nextcloud shows it: their own home plus the shares mounted in it.

Owns: mapping a path in a user's view (``/remote.php/dav/files/<uid>/<view>``) to the real
file on disk, the share it is reached through and the permission bits that follow from it;
the Nextcloud permission letters; and naming new mounts. Alice's ``Shared-with-bob`` shared
with bob is the same directory on disk, so it keeps one file id for both of them.

Must never: let a view path escape the files root (``..``, absolute parts), or show a user
anything that is neither in their own home nor under a share they currently receive.
Shares are read from the store on every call, so a revocation holds on the next request.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .store import Share, Store

# OCS share permission bits (Nextcloud's constants).
READ, UPDATE, CREATE, DELETE, SHARE = 1, 2, 4, 8, 16
ALL = READ | UPDATE | CREATE | DELETE | SHARE
FILE_MASK = READ | UPDATE | SHARE  # create/delete mean nothing on a single file


class BadPath(ValueError):
    """A view path that cannot name anything (``..``, empty segments, NUL)."""


@dataclass(frozen=True)
class Location:
    uid: str                 # the caller whose view this is
    view: str                # path in the caller's view: '' for the home, 'a/b' below it
    owner: str               # whose storage holds it
    rel: str                 # path inside the owner's home ('' = the home itself)
    perms: int               # OCS permission bits the caller has here
    share: Share | None      # the received share it is reached through, if any
    mount_root: bool         # the mount point of that share itself

    @property
    def key(self) -> str:
        """Store key of the node: '<owner>/<rel>' ('<owner>' for a home)."""
        return f"{self.owner}/{self.rel}" if self.rel else self.owner

    @property
    def is_home(self) -> bool:
        return self.view == ""

    def can(self, bit: int) -> bool:
        return bool(self.perms & bit)


def split_view(view: str) -> list[str]:
    parts = [p for p in view.strip("/").split("/") if p != ""]
    for p in parts:
        if p in (".", "..") or "\x00" in p or "\\" in p:
            raise BadPath(f"invalid path segment {p!r}")
    return parts


class Namespace:
    def __init__(self, files_root: Path, store: Store) -> None:
        self.root = files_root
        self.store = store

    def home(self, uid: str) -> Path:
        return self.root / uid

    def real(self, loc: Location) -> Path:
        return self.root / loc.key

    def mounts(self, uid: str) -> dict[str, Share]:
        """Shares received by ``uid`` whose node still exists, by mount name."""
        out: dict[str, Share] = {}
        for s in self.store.shares_received(uid):
            if (self.root / s.path).exists():
                out[s.mount_name] = s
        return out

    def resolve(self, uid: str, view: str) -> Location:
        parts = split_view(view)
        if parts:
            share = self.mounts(uid).get(parts[0])
            if share is not None:
                owner, _, base = share.path.partition("/")
                rel = "/".join([base, *parts[1:]])
                perms = share.permissions
                if not (self.root / share.path).is_dir():
                    perms &= FILE_MASK
                return Location(uid, "/".join(parts), owner, rel, perms, share, len(parts) == 1)
        return Location(uid, "/".join(parts), uid, "/".join(parts), ALL, None, False)

    def child(self, parent: Location, name: str) -> Location:
        return self.resolve(parent.uid, f"{parent.view}/{name}" if parent.view else name)

    def parent(self, loc: Location) -> Location:
        return self.resolve(loc.uid, loc.view.rpartition("/")[0])

    def child_names(self, loc: Location) -> list[str]:
        """Names inside a folder in the caller's view (a home also lists its mounts)."""
        names = set()
        real = self.real(loc)
        for name in os.listdir(real):
            p = real / name
            if p.is_dir() or p.is_file():
                names.add(name)
        if loc.is_home:
            names.update(self.mounts(loc.uid))
        return sorted(names)

    def mount_name_for(self, uid: str, wanted: str) -> str:
        """A free name in ``uid``'s home for a new mount: 'name', then 'name (2)', ..."""
        taken = set(self.mounts(uid))
        home = self.home(uid)
        stem, dot, ext = wanted.partition(".") if not (home / wanted).is_dir() else (wanted, "", "")
        candidate, n = wanted, 1
        while candidate in taken or (home / candidate).exists():
            n += 1
            candidate = f"{stem} ({n}){dot}{ext}"
        return candidate

    def view_of_key(self, uid: str, key: str) -> str | None:
        """Where the node '<owner>/<rel>' appears in ``uid``'s view, if it does at all."""
        owner, _, rel = key.partition("/")
        if owner == uid:
            return rel  # own nodes are never reached through a mount
        for name, share in self.mounts(uid).items():
            if key == share.path:
                return name
            if key.startswith(share.path + "/"):
                return name + key[len(share.path):]
        return None


def letters(loc: Location, is_dir: bool, shared_by_owner: bool) -> str:
    """Nextcloud's oc:permissions letters for what the caller can do here.

    S shared, R reshare, M mounted, G read, D delete, N rename, V move, W write (files),
    C create file, K create folder (folders). The stand-in refuses deleting or moving a
    mount point, so those never carry D, N or V.
    """
    out = ""
    if loc.share is not None:
        out += "S"
        if loc.can(SHARE):
            out += "R"
        if loc.mount_root:
            out += "M"
    else:
        if shared_by_owner:
            out += "S"
        out += "R"
    if loc.can(READ):
        out += "G"
    if loc.share is None and not loc.is_home:
        out += "DNV"
    elif loc.share is not None and not loc.mount_root:
        if loc.can(DELETE):
            out += "D"
        if loc.can(DELETE) and loc.can(UPDATE):
            out += "NV"
    if is_dir:
        if loc.can(CREATE):
            out += "CK"
    elif loc.can(UPDATE):
        out += "W"
    return out
