"""Entry point: ``python -m docserver --bind HOST:PORT --secret S --state DIR [--nextcloud-url URL]``.

Owns: the HTTP server (the standard library's threading server), routing (``POST /converter``,
``POST /ConvertService.ashx``, ``GET /cache/files/...`` for results, ``GET /healthcheck`` as the
real server answers ``true``, ``GET /standin/audit`` for tests), and printing exactly one
``ready http://HOST:PORT`` line on stdout once listening. Logs go to stderr.
Must never: print anything else on stdout (the harness and scripts read that line).
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from .service import ConvertService, xml_answer

log = logging.getLogger("docserver")
MAX_BODY = 1024 * 1024


def handler_for(service: ConvertService):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):  # noqa: A003 - BaseHTTPRequestHandler's name
            log.info("%s %s", self.address_string(), fmt % args)

        def _send(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):  # noqa: N802 - http.server's name
            path = urllib.parse.urlsplit(self.path).path
            if path not in ("/converter", "/ConvertService.ashx"):
                return self._send(404, b"Not Found", "text/plain")
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                return self._send(413, b"Payload Too Large", "text/plain")
            body = self.rfile.read(length)
            headers = {k.lower(): v for k, v in self.headers.items()}
            host = self.headers.get("Host") or f"{self.server.server_address[0]}:{self.server.server_address[1]}"
            answer = service.convert(body, headers, f"http://{host}")
            accept = headers.get("accept", "")
            as_json = "json" in accept or (path == "/converter" and "xml" not in accept)
            if as_json:
                return self._send(200, json.dumps(answer).encode(), "application/json; charset=UTF-8")
            return self._send(200, xml_answer(answer).encode(), "text/xml; charset=UTF-8")

        def do_GET(self):  # noqa: N802
            url = urllib.parse.urlsplit(self.path)
            if url.path == "/healthcheck":
                return self._send(200, b"true", "text/plain")
            if url.path == "/standin/audit":
                return self._send(200, json.dumps(service.audit_json()).encode(), "application/json")
            if url.path.startswith("/cache/files/"):
                found = service.result(url.path, urllib.parse.parse_qs(url.query))
                if found is None:
                    return self._send(403, b"Forbidden", "text/plain")
                return self._send(200, found.read_bytes(), "application/octet-stream")
            return self._send(404, b"Not Found", "text/plain")

    return Handler


def main(argv: list[str]) -> int:
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    p = argparse.ArgumentParser(prog="docserver")
    p.add_argument("--bind", required=True, help="HOST:PORT (port 0 picks a free one)")
    p.add_argument("--secret", required=True, help="the JWT secret (services.CoAuthoring.secret.inbox/outbox)")
    p.add_argument("--state", required=True, type=Path)
    p.add_argument("--nextcloud-url", default=None, help="recorded when a request names a URL under it")
    args = p.parse_args(argv)
    host, _, port = args.bind.rpartition(":")
    if not args.secret:
        p.error("--secret must not be empty: the stand-in always requires tokens")
    args.state.mkdir(parents=True, exist_ok=True)
    service = ConvertService(args.secret, args.state, args.nextcloud_url)
    server = ThreadingHTTPServer((host, int(port)), handler_for(service))
    server.daemon_threads = True
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt))
    bound_host, bound_port = server.server_address[:2]
    print(f"ready http://{bound_host}:{bound_port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
