"""WebDAV SEARCH on ``/remote.php/dav/`` (RFC 5323 basicsearch), as Nextcloud answers it.

Owns: parsing a ``searchrequest`` (select, scope, where, orderby, limit), evaluating it over
the caller's own tree (home + mounts, so results are in the caller's paths and only what
they can open), and the multistatus answer, whose properties come from the same WsgiDAV
resources PROPFIND uses.

Must never: search another user's scope (refused), or answer a query it does not fully
understand: an unknown operator, property or literal is a 400, never a best guess.
"""

from __future__ import annotations

import email.utils
import os
import re
import stat
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable
from urllib.parse import quote
from xml.etree import ElementTree as ET

from defusedxml import ElementTree as SafeET
from defusedxml.common import DefusedXmlException
from wsgidav.dav_error import DAVError

from .files import OC, StandinProvider
from .namespace import BadPath, Location, Namespace
from .web import HttpError

D = "DAV:"
DIR_MIME = "httpd/unix-directory"




def bad(message: str) -> HttpError:
    return HttpError(400, message)


@dataclass
class Entry:
    view: str
    loc: Location
    st: os.stat_result
    fileid: int

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.st.st_mode)

    @property
    def name(self) -> str:
        return self.view.rpartition("/")[2]

    def value(self, prop: str) -> object:
        if prop == f"{{{D}}}displayname":
            return self.name
        if prop == f"{{{D}}}getcontenttype":
            return DIR_MIME if self.is_dir else _mime(self.name)
        if prop == f"{{{D}}}getlastmodified":
            return int(self.st.st_mtime)
        if prop in (f"{{{D}}}getcontentlength", f"{{{OC}}}size"):
            return self.st.st_size
        if prop == f"{{{OC}}}fileid":
            return self.fileid
        if prop == f"{{{OC}}}owner-id":
            return self.loc.owner
        raise bad(f"cannot search on property {prop}")


def _mime(name: str) -> str:
    from wsgidav import util  # WsgiDAV's own guess, so SEARCH and PROPFIND agree
    return util.guess_mime_type(name)


STRING_PROPS = {f"{{{D}}}displayname", f"{{{D}}}getcontenttype", f"{{{OC}}}owner-id"}
NUMBER_PROPS = {f"{{{D}}}getlastmodified", f"{{{D}}}getcontentlength", f"{{{OC}}}size",
                f"{{{OC}}}fileid"}
COMPARE = {"eq", "gt", "gte", "lt", "lte", "like"}


@dataclass
class Query:
    scope_uid: str
    scope_view: str
    depth: str
    select: list[str]
    where: Callable[[Entry], bool]
    order: list[tuple[str, bool]] = field(default_factory=list)  # (prop, descending)
    limit: int | None = None
    offset: int = 0


def _prop_name(el: ET.Element) -> str:
    prop = el.find(f"{{{D}}}prop")
    if prop is None or len(prop) != 1:
        raise bad("each comparison needs exactly one <d:prop>")
    return prop[0].tag


def _literal(el: ET.Element, prop: str) -> object:
    lit = el.find(f"{{{D}}}literal")
    if lit is None:
        raise bad("each comparison needs a <d:literal>")
    text = (lit.text or "").strip()
    if prop in STRING_PROPS:
        return lit.text or ""
    if prop == f"{{{D}}}getlastmodified" and not text.lstrip("-").isdigit():
        return _time(text)
    try:
        return int(text)
    except ValueError:
        raise bad(f"literal {text!r} is not a number for {prop}") from None


def _time(text: str) -> int:
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        try:
            dt = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError):
            raise bad(f"cannot read {text!r} as a time") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp())


def _like(pattern: str) -> re.Pattern[str]:
    """SQL LIKE (% and _) as a case-insensitive regex, like Nextcloud's ILIKE on names."""
    out = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern)
    return re.compile(out, re.IGNORECASE | re.DOTALL)


def compile_where(el: ET.Element) -> Callable[[Entry], bool]:
    op = el.tag.removeprefix(f"{{{D}}}")
    if el.tag != f"{{{D}}}{op}":
        raise bad(f"unknown operator {el.tag}")
    if op in ("and", "or"):
        parts = [compile_where(c) for c in el]
        if not parts:
            raise bad(f"<d:{op}> needs operands")
        return (lambda e: all(p(e) for p in parts)) if op == "and" else (lambda e: any(p(e) for p in parts))
    if op == "not":
        if len(el) != 1:
            raise bad("<d:not> takes exactly one operand")
        inner = compile_where(el[0])
        return lambda e: not inner(e)
    if op == "is-collection":
        return lambda e: e.is_dir
    if op not in COMPARE:
        raise bad(f"unsupported operator <d:{op}>")
    prop = _prop_name(el)
    if prop not in STRING_PROPS | NUMBER_PROPS:
        raise bad(f"cannot search on property {prop}")
    lit = _literal(el, prop)
    if op == "like":
        if prop not in STRING_PROPS:
            raise bad(f"<d:like> only applies to text properties, not {prop}")
        rx = _like(str(lit))
        return lambda e: rx.fullmatch(str(e.value(prop))) is not None
    if op == "eq":
        return lambda e: e.value(prop) == lit
    if prop in STRING_PROPS:
        raise bad(f"<d:{op}> only applies to numbers and times, not {prop}")
    cmp = {"gt": lambda a, b: a > b, "gte": lambda a, b: a >= b,
           "lt": lambda a, b: a < b, "lte": lambda a, b: a <= b}[op]
    return lambda e: cmp(e.value(prop), lit)


def parse(body: bytes, caller: str) -> Query:
    try:
        root = SafeET.fromstring(body)
    except (ET.ParseError, DefusedXmlException) as e:
        raise bad(f"request body is not acceptable XML: {e}") from None
    if root.tag != f"{{{D}}}searchrequest":
        raise bad("body must be a <d:searchrequest>")
    bs = root.find(f"{{{D}}}basicsearch")
    if bs is None:
        raise bad("only <d:basicsearch> is supported")
    select = [p.tag for p in bs.findall(f"{{{D}}}select/{{{D}}}prop/*")]
    scope = bs.find(f"{{{D}}}from/{{{D}}}scope")
    href = scope.findtext(f"{{{D}}}href") if scope is not None else None
    if not href:
        raise bad("<d:from><d:scope><d:href> is required")
    depth = (scope.findtext(f"{{{D}}}depth") or "infinity").strip().lower() if scope is not None else "infinity"
    if depth not in ("0", "1", "infinity"):
        raise bad(f"unsupported scope depth {depth!r}")
    href = href.strip()
    for prefix in ("/remote.php/dav", ):
        if href.startswith(prefix + "/"):
            href = href[len(prefix):]
    parts = href.strip("/").split("/", 2)
    if len(parts) < 2 or parts[0] != "files":
        raise bad(f"scope {href!r} is not /files/<uid>[/path]")
    if parts[1] != caller:
        raise bad("search scope must be within your own files")
    where_el = bs.find(f"{{{D}}}where")
    if where_el is None or len(where_el) == 0:
        where: Callable[[Entry], bool] = lambda e: True  # noqa: E731
    elif len(where_el) != 1:
        raise bad("<d:where> takes exactly one expression")
    else:
        where = compile_where(where_el[0])
    order: list[tuple[str, bool]] = []
    for o in bs.findall(f"{{{D}}}orderby/{{{D}}}order"):
        prop = _prop_name(o)
        if prop not in STRING_PROPS | NUMBER_PROPS:
            raise bad(f"cannot order by {prop}")
        order.append((prop, o.find(f"{{{D}}}descending") is not None))
    limit, offset = None, 0
    lim = bs.find(f"{{{D}}}limit")
    if lim is not None:
        for child in lim:
            local = child.tag.rpartition("}")[2]
            text = (child.text or "").strip()
            if not text.isdigit():
                raise bad(f"<{local}> must be a non-negative integer")
            if local == "nresults":
                limit = int(text)
            elif local == "firstresult":
                offset = int(text)
            else:
                raise bad(f"unsupported limit element <{local}>")
    return Query(parts[1], parts[2] if len(parts) > 2 else "", depth, select, where, order, limit, offset)


def walk(ns: Namespace, loc: Location, depth: str) -> list[Entry]:
    """Everything below ``loc`` in the caller's view (not ``loc`` itself)."""
    out: list[Entry] = []
    if depth == "0":
        return out
    stack = [(loc, 1)]
    while stack:
        here, level = stack.pop()
        real = ns.real(here)
        if not real.is_dir():
            continue
        for name in ns.child_names(here):
            child = ns.child(here, name)
            try:
                st = os.lstat(ns.real(child))
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode):
                continue
            out.append(Entry(child.view, child, st, ns.store.node_id(child.key)))
            if stat.S_ISDIR(st.st_mode) and (depth == "infinity"):
                stack.append((child, level + 1))
    return out


def run(body: bytes, caller: str, ns: Namespace, provider: StandinProvider, environ: dict) -> bytes:
    q = parse(body, caller)
    try:
        scope = ns.resolve(caller, q.scope_view)
    except BadPath as e:
        raise bad(str(e)) from None
    if not ns.real(scope).exists():
        raise HttpError(404, "search scope does not exist")
    hits = [e for e in walk(ns, scope, q.depth) if q.where(e)]
    hits.sort(key=lambda e: e.view)
    for prop, descending in reversed(q.order):
        hits.sort(key=lambda e, p=prop: e.value(p), reverse=descending)  # type: ignore[misc]
    hits = hits[q.offset:]
    if q.limit is not None:
        hits = hits[: q.limit]
    return multistatus(hits, caller, q.select, provider, environ)


def multistatus(hits: list[Entry], caller: str, select: list[str], provider: StandinProvider,
                environ: dict) -> bytes:
    ms = ET.Element(f"{{{D}}}multistatus")
    for e in hits:
        res = provider.get_resource_inst(f"/{caller}/{e.view}", environ)
        if res is None:  # vanished while we were answering
            continue
        resp = ET.SubElement(ms, f"{{{D}}}response")
        href = f"/remote.php/dav/files/{caller}/{quote(e.view)}" + ("/" if e.is_dir else "")
        ET.SubElement(resp, f"{{{D}}}href").text = href
        found, missing = [], []
        for name, value in res.get_properties("named", name_list=select or ["{DAV:}displayname"]):
            (missing if isinstance(value, DAVError) else found).append((name, value))
        for items, status in ((found, "HTTP/1.1 200 OK"), (missing, "HTTP/1.1 404 Not Found")):
            if not items:
                continue
            ps = ET.SubElement(resp, f"{{{D}}}propstat")
            prop = ET.SubElement(ps, f"{{{D}}}prop")
            for name, value in items:
                if isinstance(value, ET.Element):
                    prop.append(value)
                else:
                    ET.SubElement(prop, name).text = None if isinstance(value, DAVError) else str(value)
            ET.SubElement(ps, f"{{{D}}}status").text = status
    return ET.tostring(ms, encoding="utf-8", xml_declaration=True)
