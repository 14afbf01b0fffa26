"""The two implementations of the mail bridge, as real servers the contract suite calls over HTTP.

- ``standin``: dev/nextcloud-standin (Maildirs + an aiosmtpd SMTP sink), started through its
  ``run`` script with fresh state and random app passwords (sent as Bearer tokens).
- ``php``: the tamebi app's own controller and services under ``php -S``
  (nextcloud-app/tests/mail-bridge-server.php) with the fake Mail backend, whose state is the
  stand-in's fixture exported by export_fixture.py.

Each is started once per session with Mail and once without (501). Every test runs against both.
What each one "sent" is read back from where it really went: the stand-in's SMTP sink, the fake's
record of what the SMTP step of its (Mail 5.x) send chain put on the wire. Users alice, bob and
dave (25 mails, for the search limits) exist on both, created in that order so ids agree.
"""

from __future__ import annotations

import json
import os
import queue
import secrets
import socket
import subprocess
import threading
import time
from email.utils import getaddresses
from pathlib import Path

import pytest
import requests
from jsonschema import Draft202012Validator

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
STANDIN_RUN = ROOT / "dev" / "nextcloud-standin" / "run"
PHP_SERVER = ROOT / "nextcloud-app" / "tests" / "mail-bridge-server.php"
SCHEMA = json.loads((HERE / "mail-bridge.schema.json").read_text())
BASE = "/ocs/v2.php/apps/tamebi/api/v1/mail"
USERS = ("alice", "bob", "dave")  # in this order, so both give the same ids (dave: 25 digests)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check(resp: requests.Response, definition: str) -> dict:
    """The response is the OCS v2 envelope, its HTTP status is meta.statuscode, and it validates
    against the schema's ``$defs/<definition>``. Returns the parsed document."""
    assert resp.headers.get("Content-Type", "").startswith("application/json"), resp.headers
    doc = resp.json()
    assert doc["ocs"]["meta"]["statuscode"] == resp.status_code, doc
    Draft202012Validator({**SCHEMA, "$ref": f"#/$defs/{definition}"}).validate(doc)
    return doc


def error(resp: requests.Response, status: int, code: str) -> dict:
    assert resp.status_code == status, (resp.status_code, resp.text)
    doc = check(resp, "error")
    assert doc["ocs"]["data"]["error"] == code, doc
    return doc["ocs"]["data"]


class Bridge:
    name = ""

    def __init__(self) -> None:
        self.url = ""
        self.tokens: dict[str, str] = {}

    def call(self, method: str, path: str, uid: str | None, **kw) -> requests.Response:
        headers = {"OCS-APIRequest": "true", "Accept": "application/json", **kw.pop("headers", {})}
        if uid is not None:
            headers["Authorization"] = f"Bearer {self.tokens[uid]}"
        return requests.request(method, f"{self.url}{BASE}{path}", headers=headers, timeout=20, **kw)

    def get(self, path: str, uid: str | None = "alice", **params) -> requests.Response:
        return self.call("GET", path, uid, params=params)

    def post(self, path: str, body: object, uid: str | None = "alice", **kw) -> requests.Response:
        return self.call("POST", path, uid, json=body, **kw)

    def sent(self) -> list[dict]:
        raise NotImplementedError

    def special_mailbox(self, uid: str, use: str, present: bool) -> None:
        """Sets or unsets `uid`'s Sent or Drafts mailbox (`use` "sent" or "drafts") in Mail (the
        account settings under Default folders)."""
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError


def _first_line(proc: subprocess.Popen, timeout: float) -> str:
    box: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: box.put((proc.stdout.readline() if proc.stdout else "").strip()), daemon=True).start()
    try:
        return box.get(timeout=timeout)
    except queue.Empty:
        proc.kill()
        raise AssertionError("server did not become ready") from None


class StandinBridge(Bridge):
    name = "standin"

    def __init__(self, tmp: Path, with_mail: bool) -> None:
        super().__init__()
        self.tokens = {uid: f"{uid[0]}-" + secrets.token_hex(8) for uid in USERS}
        port = free_port()
        cmd = [str(STANDIN_RUN), "--state", str(tmp / "state"), "--bind", f"127.0.0.1:{port}"]
        for uid, pw in self.tokens.items():
            cmd += ["--user", f"{uid}:{pw}"]
        if not with_mail:
            cmd.append("--without-mail")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=open(tmp / "standin.log", "w"), text=True)
        self.url = f"http://127.0.0.1:{port}"
        assert _first_line(self.proc, 20) == f"ready {self.url}"

    def sent(self) -> list[dict]:
        out = []
        for m in requests.get(f"{self.url}/standin/smtp-sink", timeout=10).json()["messages"]:
            to = [a for _, a in getaddresses([m["to"]]) if a]
            cc = [a for _, a in getaddresses([m["cc"]]) if a]
            out.append({"from": m["from"], "to": to, "cc": cc,
                        "bcc": [a for a in m["rcpt_to"] if a not in to and a not in cc],
                        "bcc_header": m["bcc"], "subject": m["subject"], "body": m["body"],
                        "in_reply_to": m["in_reply_to"] or None, "html": m["content_type"] != "text/plain"})
        return out

    def special_mailbox(self, uid: str, use: str, present: bool) -> None:
        r = requests.post(f"{self.url}/standin/mail/{use}-mailbox", params={"uid": uid}, json={"set": present}, timeout=10)
        r.raise_for_status()

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


class PhpBridge(Bridge):
    name = "php"

    def __init__(self, tmp: Path, with_mail: bool) -> None:
        super().__init__()
        self.tokens = {uid: f"tok-{uid[0]}-" + secrets.token_hex(8) for uid in USERS}
        self.state = tmp / "mail-state.json"
        subprocess.run([os.sys.executable, str(HERE / "export_fixture.py"), str(self.state), *USERS], check=True)
        port = free_port()
        env = {**os.environ, "TAMEBI_MAIL_STATE": str(self.state),
               "TAMEBI_MAIL_TOKENS": ",".join(f"{t}={u}" for u, t in self.tokens.items()),
               "TAMEBI_MAIL_ABSENT": "0" if with_mail else "1"}
        self.proc = subprocess.Popen(["php", "-S", f"127.0.0.1:{port}", str(PHP_SERVER)], env=env,
                                     stdout=subprocess.DEVNULL, stderr=open(tmp / "php.log", "w"))
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 15
        while True:  # php -S prints nothing we could wait for on stdout: poll the socket
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise AssertionError(f"php -S did not start: {(tmp / 'php.log').read_text()}") from None
                time.sleep(0.05)

    def sent(self) -> list[dict]:
        out = []
        for m in json.loads(self.state.read_text())["sent"]:
            out.append({"from": m["from"], "to": m["to"], "cc": m["cc"], "bcc": m["bcc"], "bcc_header": "",
                        "subject": m["subject"], "body": m["body"], "in_reply_to": m["in_reply_to"], "html": m["html"]})
        return out

    def special_mailbox(self, uid: str, use: str, present: bool) -> None:
        state = json.loads(self.state.read_text())
        account = next(a["id"] for a in state["accounts"] if a["uid"] == uid)
        for box in state["mailboxes"]:
            if box["account_id"] == account and box["name"] == use.capitalize():
                box["special_use"] = [use] if present else []
        self.state.write_text(json.dumps(state))

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


IMPLS = {"standin": StandinBridge, "php": PhpBridge}


@pytest.fixture(scope="session", params=list(IMPLS))
def bridge(request, tmp_path_factory):
    b = IMPLS[request.param](tmp_path_factory.mktemp(f"{request.param}-mail"), with_mail=True)
    yield b
    b.stop()


@pytest.fixture(scope="session", params=list(IMPLS))
def no_mail(request, tmp_path_factory):
    b = IMPLS[request.param](tmp_path_factory.mktemp(f"{request.param}-nomail"), with_mail=False)
    yield b
    b.stop()
