"""The stand-in on the wire, as mcp-nextcloud and OnlyOffice's own clients use it: the real
process, real HTTP, real LibreOffice. What OnlyOffice's source defines is checked here; what
mcp-nextcloud does with it is checked by mcp-nextcloud's tests/office.rs."""

from __future__ import annotations

import http.server
import json
import pathlib
import subprocess
import threading
import urllib.error
import urllib.request

import jwt
import pytest

HERE = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = HERE.parent.parent / "testdata" / "office"
SECRET = "test-secret-0123456789abcdef0123456789"


@pytest.fixture(scope="module")
def files():
    """A plain file server for the inputs, recording the headers of every download."""
    seen: list[dict] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):  # noqa: N802
            seen.append(dict(self.headers.items()))
            path = FIXTURES / self.path.lstrip("/")
            if not path.is_file():
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = path.read_bytes()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()


@pytest.fixture(scope="module")
def docserver(tmp_path_factory):
    state = tmp_path_factory.mktemp("state")
    proc = subprocess.Popen([str(HERE / "run"), "--bind", "127.0.0.1:0", "--secret", SECRET, "--state", str(state),
                             "--nextcloud-url", "http://nextcloud.test"], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()
    assert line.startswith("ready http://"), line
    yield line.removeprefix("ready ")
    proc.terminate()
    proc.wait(10)


def post(url: str, body: dict, headers: dict | None = None, path: str = "/converter") -> tuple[str, bytes]:
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json", **(headers or {})})
    with urllib.request.urlopen(req, timeout=200) as r:
        return r.headers.get("Content-Type"), r.read()


def params(files_url: str, key: str, name: str = "contract.docx", out: str = "pdf") -> dict:
    return {"async": False, "filetype": name.rsplit(".", 1)[1], "outputtype": out, "key": key, "title": name,
            "url": f"{files_url}/{name}"}


def test_unsigned_and_badly_signed_requests_are_refused_with_minus_8(docserver, files):
    p = params(files[0], "unsigned")
    for body, headers in [
        (p, {}),
        ({"token": jwt.encode(p, "another secret of enough length!", algorithm="HS256")}, {}),
        ({}, {"Authorization": "Bearer " + jwt.encode(p, "another secret of enough length!", algorithm="HS256")}),
        ({"token": "not.a.jwt"}, {}),
    ]:
        _, answer = post(docserver, body, {**headers, "Accept": "application/json"})
        assert json.loads(answer) == {"error": -8}
    assert files[1] == [], "nothing was downloaded for a refused request"


def test_xml_unless_json_is_accepted(docserver):
    ctype, answer = post(docserver, {"token": "x"}, path="/ConvertService.ashx")
    assert ctype.startswith("text/xml")
    assert answer == b'<?xml version="1.0" encoding="utf-8"?><FileResult><Error>-8</Error></FileResult>'


def test_bad_parameters_are_input_errors(docserver, files):
    for bad in [{"key": "has space"}, {"outputtype": "exe"}, {"filetype": "d.o.c"}]:
        p = {**params(files[0], "bad"), **bad}
        _, answer = post(docserver, {"token": jwt.encode(p, SECRET, algorithm="HS256")}, {"Accept": "application/json"})
        assert json.loads(answer) == {"error": -7}, bad


def test_a_docx_becomes_a_pdf_fetched_from_the_url_with_the_servers_own_jwt(docserver, files):
    p = params(files[0], "contract-1")
    token = jwt.encode(p, SECRET, algorithm="HS256")
    _, answer = post(docserver, {}, {"Authorization": f"Bearer {token}", "Accept": "application/json"})
    result = json.loads(answer)
    assert result["endConvert"] is True and result["percent"] == 100 and result["fileType"] == "pdf", result
    assert result["fileUrl"].startswith(docserver + "/cache/files/")
    with urllib.request.urlopen(result["fileUrl"], timeout=10) as r:
        assert r.read().startswith(b"%PDF-")
    # The download carried the server's own outbox JWT over the URL, nothing else.
    auth = files[1][-1]["Authorization"]
    claims = jwt.decode(auth.removeprefix("Bearer "), SECRET, algorithms=["HS256"])
    assert claims["payload"] == {"url": p["url"]}
    # A tampered result URL is refused.
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(result["fileUrl"].replace("md5=", "md5=x"), timeout=10)
    assert e.value.code == 403
    audit = json.load(urllib.request.urlopen(docserver + "/standin/audit", timeout=10))
    # The refused request above sent a foreign header; this one its own JWT.
    assert audit["authorization"] == ["foreign", "own-jwt"] and audit["nextcloud_urls"] == []


def test_results_are_cached_by_key_and_failures_have_their_codes(docserver, files):
    p = params(files[0], "contract-1")  # the same key: the cached result, no new download
    before = len(files[1])
    _, answer = post(docserver, {"token": jwt.encode(p, SECRET, algorithm="HS256")}, {"Accept": "application/json"})
    assert json.loads(answer)["endConvert"] is True
    assert len(files[1]) == before
    missing = params(files[0], "missing", name="nothing-here.docx")
    _, answer = post(docserver, {"token": jwt.encode(missing, SECRET, algorithm="HS256")}, {"Accept": "application/json"})
    assert json.loads(answer) == {"error": -4}
    nc = {**params(files[0], "nc"), "url": "http://nextcloud.test/remote.php/dav/files/alice/x.docx"}
    post(docserver, {"token": jwt.encode(nc, SECRET, algorithm="HS256")}, {"Accept": "application/json"})
    audit = json.load(urllib.request.urlopen(docserver + "/standin/audit", timeout=10))
    assert audit["nextcloud_urls"] == [nc["url"]], "a Nextcloud URL is recorded for the tests"
