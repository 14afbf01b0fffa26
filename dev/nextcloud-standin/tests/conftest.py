"""Fixtures: a real stand-in process per test module (started through ``run``), a webhook
receiver on a real socket, and small request helpers. No mocks, no sleeps."""

from __future__ import annotations

import json
import queue
import secrets
import socket
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests

HERE = Path(__file__).resolve().parent
RUN = HERE.parent / "run"
SEED = HERE.parent / "seed"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Standin:
    """A running stand-in with users alice and bob (random app passwords)."""

    def __init__(self, state: Path, extra: list[str] | None = None,
                 passwords: dict[str, str] | None = None) -> None:
        self.state = state
        self.passwords = passwords or {"alice": "a-" + secrets.token_hex(8), "bob": "b-" + secrets.token_hex(8)}
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        args = [str(RUN), "--state", str(state), "--bind", f"127.0.0.1:{self.port}"]
        for uid, pw in self.passwords.items():
            args += ["--user", f"{uid}:{pw}"]
        self.proc = subprocess.Popen(args + (extra or []), stdout=subprocess.PIPE,
                                     stderr=open(state.parent / f"standin-{self.port}.log", "w"), text=True)
        line = self._first_line(timeout=60)  # a bound, not a target: a loaded 2-core machine took over 15 s
        assert line == f"ready {self.url}", f"unexpected first line {line!r}"

    def _first_line(self, timeout: float) -> str:
        box: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: box.put((self.proc.stdout.readline() if self.proc.stdout else "").strip()),
                         daemon=True).start()
        try:
            return box.get(timeout=timeout)
        except queue.Empty:
            self.proc.kill()
            raise AssertionError("stand-in did not print its ready line in time") from None

    def stop(self) -> int:
        self.proc.terminate()
        return self.proc.wait(timeout=10)

    def auth(self, uid: str) -> tuple[str, str]:
        return (uid, self.passwords[uid])

    def dav(self, uid: str, path: str = "") -> str:
        return f"{self.url}/remote.php/dav/files/{uid}/{path}"

    def req(self, method: str, url: str, uid: str | None = None, **kw) -> requests.Response:
        if uid is not None:
            kw.setdefault("auth", self.auth(uid))
        return requests.request(method, url, timeout=10, **kw)

    def put(self, uid: str, path: str, data: bytes | str) -> requests.Response:
        return self.req("PUT", self.dav(uid, path), uid, data=data)

    def mkcol(self, uid: str, path: str) -> requests.Response:
        return self.req("MKCOL", self.dav(uid, path), uid)

    def ocs(self, method: str, uid: str, path: str, **kw) -> requests.Response:
        headers = {"OCS-APIRequest": "true", "Accept": "application/json", **kw.pop("headers", {})}
        return self.req(method, f"{self.url}/ocs/v2.php/{path}", uid, headers=headers, **kw)

    def share(self, owner: str, path: str, to: str, permissions: int = 31) -> dict:
        r = self.ocs("POST", owner, "apps/files_sharing/api/v1/shares",
                     data={"path": path, "shareType": 0, "shareWith": to, "permissions": permissions})
        assert r.status_code == 200, r.text
        return r.json()["ocs"]["data"]

    def propfind(self, uid: str, path: str, depth: str = "0", as_uid: str | None = None) -> requests.Response:
        body = ('<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:prop>'
                "<oc:fileid/><oc:permissions/><d:getetag/><d:getcontenttype/><oc:size/></d:prop></d:propfind>")
        return self.req("PROPFIND", self.dav(uid, path), as_uid or uid, data=body, headers={"Depth": depth})

    def fileid(self, uid: str, path: str) -> int:
        import re
        r = self.propfind(uid, path)
        assert r.status_code == 207, r.text
        m = re.search(r"<oc:fileid>(\d+)</oc:fileid>", r.text)
        assert m, r.text
        return int(m.group(1))


@pytest.fixture
def standin(tmp_path: Path):
    """A stand-in as a fresh Nextcloud is: JWT bearer validation off."""
    s = Standin(tmp_path / "state")
    yield s
    s.stop()


@pytest.fixture
def jwt_standin(tmp_path: Path):
    """A stand-in configured as the docs say: JWT bearer validation on."""
    s = Standin(tmp_path / "state", extra=["--oidc-provider-bearer-validation"])
    yield s
    s.stop()


class Receiver:
    """A real HTTP server that records webhook POSTs."""

    def __init__(self) -> None:
        self.got: queue.Queue[tuple[dict, dict]] = queue.Queue()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.got.put((dict(self.headers), json.loads(body)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def next(self, timeout: float = 5) -> tuple[dict, dict]:
        return self.got.get(timeout=timeout)

    def until(self, event_class: str, timeout: float = 5) -> tuple[dict, dict]:
        deadline = time.monotonic() + timeout
        while True:
            headers, body = self.got.get(timeout=max(0.01, deadline - time.monotonic()))
            if body["event"]["class"].endswith(event_class):
                return headers, body

    def close(self) -> None:
        self.server.shutdown()
