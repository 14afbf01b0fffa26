"""ConvertService: the OnlyOffice Document Server conversion API, on its wire format.

Owns: the request (POST ``/converter`` and the older ``/ConvertService.ashx``, a JSON body with
``async``, ``filetype``, ``outputtype``, ``key``, ``title``, ``url``), the inbox JWT (HS256 with
the server's secret, in the body's ``token`` or in ``Authorization: Bearer``; the token's claims
are the parameters, as with ``tokenRequiredParams``), the answers (``{fileUrl, fileType, percent,
endConvert}`` or ``{error: -N}`` with the documented codes; XML unless JSON is accepted, as the
real server negotiates), the result cache by key, the signed result URLs, and the audit of what
callers sent (``GET /standin/audit``, for the tests: which Authorization headers came in and
which URLs the server was asked to fetch).

Stricter than the real server where the two could differ: a token is always required (the real
one can run without), its claims are the only parameters, and a parameter outside the request
schema is refused. Must never: fetch a URL a valid token did not name, or serve a result without
its signature.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape

import jwt

from . import converter

# Error codes of the conversion API (api.onlyoffice.com, Conversion API, "Error codes").
UNKNOWN = -1
TIMEOUT = -2
CONVERSION = -3
DOWNLOAD = -4
PASSWORD = -5
DATABASE = -6
INPUT = -7
INVALID_TOKEN = -8

# As the server's constants: DOC_ID_REGEX and EXTENTION_REGEX.
KEY_RE = re.compile(r"^[\w\-.]{1,128}$")
EXT_RE = re.compile(r"^[a-zA-Z0-9]{1,10}$")
KNOWN_PARAMS = {"async", "filetype", "outputtype", "key", "title", "url", "codePage", "delimiter",
                "region", "password", "spreadsheetLayout", "documentLayout", "thumbnail", "iat", "exp"}
RESULT_LIFETIME = 24 * 3600


@dataclass
class Job:
    done: threading.Event = field(default_factory=threading.Event)
    error: int = 0
    path: Path | None = None
    ext: str = ""


@dataclass
class Audit:
    """What callers sent, for the tests (never consulted by the service itself)."""
    requests: int = 0
    authorization: list[str] = field(default_factory=list)  # "own-jwt" or "foreign" per header seen
    urls: list[str] = field(default_factory=list)
    nextcloud_urls: list[str] = field(default_factory=list)
    downloads: list[dict] = field(default_factory=list)


class ConvertService:
    def __init__(self, secret: str, state: Path, nextcloud_url: str | None):
        self.secret = secret
        self.state = state
        self.nextcloud_url = nextcloud_url.rstrip("/") if nextcloud_url else None
        self.jobs: dict[str, Job] = {}
        self.lock = threading.Lock()
        self.audit = Audit()

    # --- the request -------------------------------------------------------------------------

    def convert(self, body: bytes, headers: dict[str, str], base_url: str) -> dict:
        """One POST to the conversion endpoint; returns the answer's fields."""
        auth = headers.get("authorization")
        header_token = auth[len("Bearer "):] if auth and auth.startswith("Bearer ") else None
        with self.lock:
            self.audit.requests += 1
            if auth is not None:
                self.audit.authorization.append("own-jwt" if header_token and self._verify(header_token) else "foreign")
        try:
            raw = json.loads(body.decode("utf-8")) if body else {}
        except (UnicodeDecodeError, json.JSONDecodeError):
            raw = {}
        if not isinstance(raw, dict):
            raw = {}
        token = raw.get("token") or header_token
        claims = self._verify(token) if isinstance(token, str) else None
        if claims is None:
            return {"error": INVALID_TOKEN}
        params = dict(claims.get("payload") or claims)
        self._record_url(params.get("url"))
        if set(params) - KNOWN_PARAMS - {"payload"}:
            return {"error": INPUT}
        key, filetype, outputtype = params.get("key"), params.get("filetype"), params.get("outputtype")
        url, title = params.get("url"), params.get("title")
        if not isinstance(key, str) or not KEY_RE.match(key):
            return {"error": INPUT}
        if not isinstance(filetype, str) or not EXT_RE.match(filetype):
            return {"error": INPUT}
        if not isinstance(outputtype, str) or outputtype.lower() not in converter.OUTPUTS:
            return {"error": INPUT}
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            return {"error": DOWNLOAD}
        wait = params.get("async") not in (True, "true")
        return self._run(key, filetype.lower(), outputtype.lower(), url, title, wait, base_url)

    def _verify(self, token: str) -> dict | None:
        try:
            claims = jwt.decode(token, self.secret, algorithms=["HS256", "HS384", "HS512"])
        except jwt.PyJWTError:
            return None
        return claims if isinstance(claims, dict) else None

    def _record_url(self, url: object) -> None:
        if not isinstance(url, str):
            return
        with self.lock:
            self.audit.urls.append(url)
            if self.nextcloud_url and url.startswith(self.nextcloud_url):
                self.audit.nextcloud_urls.append(url)

    # --- the conversion, cached by key as the real server caches by document id ---------------

    def _run(self, key: str, filetype: str, outputtype: str, url: str, title: object, wait: bool, base_url: str) -> dict:
        doc_id = f"conv_{key}_{outputtype}"
        with self.lock:
            job = self.jobs.get(doc_id)
            fresh = job is None
            if fresh:
                job = self.jobs[doc_id] = Job()
        if fresh:
            threading.Thread(target=self._work, args=(job, doc_id, filetype, outputtype, url), daemon=True).start()
        if wait and not job.done.wait(converter.CONVERT_TIMEOUT + converter.DOWNLOAD_TIMEOUT + 5):
            return {"error": TIMEOUT}
        if not job.done.is_set():
            return {"fileUrl": "", "fileType": "", "percent": 0, "endConvert": False}
        if job.error:
            return {"error": job.error}
        name = job.path.name
        if isinstance(title, str) and title:
            name = Path(title).stem + "." + job.ext
        return {"fileUrl": self._signed_url(base_url, doc_id, job.path.name, name), "fileType": job.ext,
                "percent": 100, "endConvert": True}

    def _work(self, job: Job, doc_id: str, filetype: str, outputtype: str, url: str) -> None:
        try:
            source = converter.download(url, self.secret)
            with self.lock:
                self.audit.downloads.append({"url": url, "bytes": len(source)})
            out_dir = self.state / "files" / doc_id
            job.path, job.ext = converter.convert(source, filetype, outputtype, out_dir)
        except converter.ConvertError as e:
            job.error = e.code
        except Exception:  # noqa: BLE001 - any other failure is the API's "unknown error"
            job.error = UNKNOWN
        finally:
            job.done.set()

    # --- results ------------------------------------------------------------------------------

    def _signature(self, path: str, expires: int) -> str:
        mac = hmac.new(self.secret.encode(), f"{path}\n{expires}".encode(), hashlib.md5).digest()
        return base64.urlsafe_b64encode(mac).decode().rstrip("=")

    def _signed_url(self, base_url: str, doc_id: str, file: str, name: str) -> str:
        path = f"/cache/files/data/{doc_id}/{file}/{urllib.parse.quote(name)}"
        expires = int(time.time()) + RESULT_LIFETIME
        query = urllib.parse.urlencode({"md5": self._signature(path, expires), "expires": expires, "filename": name})
        return f"{base_url}{path}?{query}"

    def result(self, raw_path: str, query: dict[str, list[str]]) -> Path | None:
        """The file a signed result URL names, or None (wrong signature, expired, unknown)."""
        parts = raw_path.split("/")
        # /cache/files/data/<doc_id>/<file>/<name>
        if len(parts) != 7 or parts[1:4] != ["cache", "files", "data"]:
            return None
        try:
            expires = int(query.get("expires", [""])[0])
        except ValueError:
            return None
        given = query.get("md5", [""])[0]
        if expires < time.time() or not hmac.compare_digest(given, self._signature(raw_path, expires)):
            return None
        doc_id, file = parts[4], parts[5]
        with self.lock:
            job = self.jobs.get(doc_id)
        if job is None or not job.done.is_set() or job.path is None or job.path.name != file:
            return None
        return job.path

    def audit_json(self) -> dict:
        with self.lock:
            a = self.audit
            return {"requests": a.requests, "authorization": list(a.authorization), "urls": list(a.urls),
                    "nextcloud_urls": list(a.nextcloud_urls), "downloads": list(a.downloads)}


def xml_answer(fields: dict) -> str:
    """The XML form of an answer (FileResult), for callers that do not accept JSON."""
    if "error" in fields:
        return f'<?xml version="1.0" encoding="utf-8"?><FileResult><Error>{fields["error"]}</Error></FileResult>'
    url = f"<FileUrl>{escape(fields['fileUrl'])}</FileUrl>" if fields["fileUrl"] else "<FileUrl/>"
    ftype = f"<FileType>{escape(fields['fileType'])}</FileType>" if fields["fileType"] else "<FileType/>"
    end = "True" if fields["endConvert"] else "False"
    return (f'<?xml version="1.0" encoding="utf-8"?><FileResult>{url}{ftype}'
            f"<Percent>{fields['percent']}</Percent><EndConvert>{end}</EndConvert></FileResult>")
