"""Small WSGI plumbing shared by the stand-in's own endpoints (OCS, Deck, status, tokens).

Owns: reading a request (path, query, headers, a bounded body, form or JSON parameters,
merged with the route's parameters as Nextcloud's ``Request`` merges them) and writing
JSON/XML responses. Must never: make access decisions, or read more body than
``MAX_BODY`` (a larger body is refused with 413).
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from typing import Iterable, Mapping
from urllib.parse import parse_qs

MAX_BODY = 10 * 1024 * 1024

REASONS = {200: "OK", 201: "Created", 204: "No Content", 207: "Multi-Status", 400: "Bad Request",
           401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
           412: "Precondition Failed", 413: "Payload Too Large", 415: "Unsupported Media Type",
           500: "Internal Server Error"}


class HttpError(Exception):
    """The one error type of the stand-in's own endpoints: an HTTP status and a message for
    the client. OCS wraps it in its envelope, Deck in its JSON, the rest as plain text."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def wsgi_path(environ: dict) -> str:
    """PATH_INFO as text (WSGI hands it over as latin-1-decoded bytes)."""
    raw = environ.get("PATH_INFO", "")
    try:
        return raw.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return raw


def read_body(environ: dict) -> bytes:
    """The whole request body, by Content-Length or (curl -T -) chunked transfer coding."""
    if "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower():
        data = environ["wsgi.input"].read(MAX_BODY + 1)
    else:
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            raise HttpError(400, "bad Content-Length") from None
        if length > MAX_BODY:
            raise HttpError(413, "request body too large")
        data = environ["wsgi.input"].read(length) if length > 0 else b""
    if len(data) > MAX_BODY:
        raise HttpError(413, "request body too large")
    return data


def with_buffered_body(environ: dict) -> dict:
    """A copy of environ whose body is a plain sized stream (for apps that only read Content-Length)."""
    env = dict(environ)
    body = read_body(environ)
    env["wsgi.input"] = io.BytesIO(body)
    env["CONTENT_LENGTH"] = str(len(body))
    env.pop("HTTP_TRANSFER_ENCODING", None)
    return env


@dataclass
class Request:
    environ: dict
    method: str
    path: str

    @classmethod
    def of(cls, environ: dict) -> "Request":
        return cls(environ, environ.get("REQUEST_METHOD", "GET").upper(), wsgi_path(environ))

    def header(self, name: str) -> str | None:
        key = "HTTP_" + name.upper().replace("-", "_")
        if name.lower() == "content-type":
            key = "CONTENT_TYPE"
        return self.environ.get(key) or None

    @property
    def query(self) -> dict[str, str]:
        return {k: v[-1] for k, v in parse_qs(self.environ.get("QUERY_STRING", ""), keep_blank_values=True).items()}

    def body(self) -> bytes:
        cached = self.environ.get("standin.body")
        if cached is not None:
            return cached
        data = read_body(self.environ)
        self.environ["standin.body"] = data
        return data

    def params(self, route: Mapping[str, object] | None = None) -> dict[str, object]:
        """The parameters a Nextcloud controller reads (``IRequest::getParam``): the query, the
        body (form or JSON) and ``route`` (the ids matched from the URL), merged in the order
        Nextcloud's ``Request`` ends up with.

        ``Request`` merges the route's parameters over what it holds when the router calls
        ``setUrlParameters``, and a JSON body (or a form body of a PUT, PATCH or DELETE) over
        what it holds when that body is first decoded, which is the first time anything reads
        a parameter. A form POST is ``$_POST`` from the start, so the route always wins over
        it. Whether a JSON field beats a route parameter of the same name therefore depends
        on whether something read a parameter before routing: user_oidc does (its ``boot``
        calls ``getParam('redirect_url')`` whenever the request is not logged in yet, that is
        whenever no session cookie logged it in), so there the route wins. The router
        decides that (``standin.route_params_win``, set per request); nothing else here does.
        """
        out: dict[str, object] = dict(self.query)
        route = dict(route or {})
        body = self.body()
        decoded: dict[str, object] = {}
        if body:
            ctype = (self.header("Content-Type") or "").split(";")[0].strip().lower()
            if ctype == "application/json":
                try:
                    data = json.loads(body)
                except (json.JSONDecodeError, UnicodeDecodeError):
                    raise HttpError(400, "body is not valid JSON") from None
                if not isinstance(data, dict):
                    raise HttpError(400, "JSON body must be an object")
                decoded = data
            elif ctype in ("application/x-www-form-urlencoded", ""):
                try:
                    text = body.decode("utf-8")
                except UnicodeDecodeError:
                    raise HttpError(400, "form body is not UTF-8") from None
                form = {k: v[-1] for k, v in parse_qs(text, keep_blank_values=True).items()}
                if self.method == "POST":
                    out.update(form)  # $_POST: in the request before the route is
                else:
                    decoded = form
            else:
                raise HttpError(415, f"unsupported body type {ctype!r}")
        if self.environ.get("standin.route_params_win"):
            out.update(decoded)
            out.update(route)
        else:
            out.update(route)
            out.update(decoded)
        return out

    def wants_json(self) -> bool:
        return self.query.get("format") == "json" or "application/json" in (self.header("Accept") or "")


def respond(start_response, status: int, body: bytes, ctype: str,
            headers: list[tuple[str, str]] | None = None) -> Iterable[bytes]:
    hs = [("Content-Type", ctype), ("Content-Length", str(len(body)))] + (headers or [])
    start_response(f"{status} {REASONS.get(status, 'Status')}", hs)
    return [body]


def json_response(start_response, status: int, data: object,
                  headers: list[tuple[str, str]] | None = None) -> Iterable[bytes]:
    body = json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()
    return respond(start_response, status, body, "application/json; charset=utf-8", headers)
