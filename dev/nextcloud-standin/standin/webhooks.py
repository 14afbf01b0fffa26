"""Webhook notifications shaped like Nextcloud's webhook_listeners app sends them.

Owns: the payload (``{"user": {"uid", "displayName"}, "time", "event": {"class", "node"}}``,
or ``"source"``/``"target"`` for renames and copies) and its delivery: a POST with the
``X-Tamebi-Webhook-Secret`` header, from one background thread, with a short timeout.

Must never: block or fail the DAV request that caused the event (delivery is fire-and-forget
and failures are only logged), or put anything in the payload that the real app does not
send. Like the real app, a NodeDeletedEvent carries no node id (the node no longer exists);
the BeforeNodeDeletedEvent sent just before it does.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
import urllib.request

log = logging.getLogger("standin.webhooks")

SECRET_HEADER = "X-Tamebi-Webhook-Secret"
EVENTS = "OCP\\Files\\Events\\Node\\"
TIMEOUT_SECONDS = 2.0


def node(uid: str, view: str, node_id: int | None) -> dict[str, object]:
    """A node as webhook_listeners serialises it: id (when it exists) and the owner-view path."""
    out: dict[str, object] = {"path": f"/{uid}/files/{view}" if view else f"/{uid}/files"}
    if node_id is not None:
        out = {"id": node_id, **out}
    return out


def payload(uid: str, event_class: str, **nodes: dict[str, object]) -> dict[str, object]:
    return {"user": {"uid": uid, "displayName": uid}, "time": int(time.time()),
            "event": {**nodes, "class": EVENTS + event_class}}


class Webhooks:
    def __init__(self, url: str | None, secret: str | None) -> None:
        self._url = url
        self._secret = secret or ""
        self._queue: queue.Queue[dict[str, object] | None] = queue.Queue(maxsize=10000)
        # Direct connections only: a proxy from the environment must not reroute test traffic.
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        self._thread: threading.Thread | None = None
        if url:
            self._thread = threading.Thread(target=self._run, name="webhooks", daemon=True)
            self._thread.start()

    def emit(self, body: dict[str, object]) -> None:
        if not self._url:
            return
        try:
            self._queue.put_nowait(body)
        except queue.Full:
            log.warning("webhook queue full; dropping %s", body["event"])

    def stop(self) -> None:
        if self._thread:
            self._queue.put(None)
            self._thread.join(timeout=TIMEOUT_SECONDS + 1)

    def _run(self) -> None:
        while True:
            body = self._queue.get()
            if body is None:
                return
            req = urllib.request.Request(
                self._url or "", data=json.dumps(body).encode(), method="POST",
                headers={"Content-Type": "application/json", SECRET_HEADER: self._secret})
            try:
                with self._opener.open(req, timeout=TIMEOUT_SECONDS) as resp:
                    resp.read()
            except Exception as e:  # noqa: BLE001 - delivery failures never matter to the sender
                log.warning("webhook delivery failed: %s", e)
