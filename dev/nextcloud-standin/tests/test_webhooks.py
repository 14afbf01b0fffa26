"""Webhooks: delivered to a real receiver, shaped like webhook_listeners, with the secret header."""

import pytest

from conftest import Receiver, Standin

SECRET = "hook-secret-123"


@pytest.fixture
def hooked(tmp_path):
    rx = Receiver()
    s = Standin(tmp_path / "state", extra=["--webhook-url", rx.url, "--webhook-secret", SECRET])
    yield s, rx
    s.stop()
    rx.close()


def test_written_created_renamed_deleted(hooked):
    s, rx = hooked
    assert s.put("alice", "w.txt", "1").status_code == 201
    headers, body = rx.until("NodeCreatedEvent")
    assert headers["X-Tamebi-Webhook-Secret"] == SECRET
    fid = s.fileid("alice", "w.txt")
    headers, body = rx.until("NodeWrittenEvent")
    assert body["user"] == {"uid": "alice", "displayName": "alice"}
    assert isinstance(body["time"], int)
    assert body["event"] == {"class": "OCP\\Files\\Events\\Node\\NodeWrittenEvent",
                             "node": {"id": fid, "path": "/alice/files/w.txt"}}
    r = s.req("MOVE", s.dav("alice", "w.txt"), "alice", headers={"Destination": s.dav("alice", "moved.txt")})
    assert r.status_code == 201
    _, body = rx.until("NodeRenamedEvent")
    assert body["event"]["source"] == {"id": fid, "path": "/alice/files/w.txt"}
    assert body["event"]["target"] == {"id": fid, "path": "/alice/files/moved.txt"}
    assert s.req("DELETE", s.dav("alice", "moved.txt"), "alice").status_code == 204
    _, body = rx.until("BeforeNodeDeletedEvent")
    assert body["event"]["node"] == {"id": fid, "path": "/alice/files/moved.txt"}
    _, body = rx.until("\\NodeDeletedEvent")
    # like webhook_listeners: a deleted node can no longer report its id
    assert body["event"]["node"] == {"path": "/alice/files/moved.txt"}


def test_paths_are_in_the_actors_view(hooked):
    s, rx = hooked
    s.mkcol("alice", "team")
    s.share("alice", "/team", "bob", permissions=31)
    assert s.put("bob", "team/by-bob.txt", "x").status_code == 201
    _, body = rx.until("NodeWrittenEvent")
    while body["user"]["uid"] != "bob":
        _, body = rx.until("NodeWrittenEvent")
    assert body["event"]["node"]["path"] == "/bob/files/team/by-bob.txt"
    assert body["event"]["node"]["id"] == s.fileid("alice", "team/by-bob.txt")


def test_failed_writes_send_nothing_and_a_dead_receiver_never_blocks(tmp_path):
    rx = Receiver()
    s = Standin(tmp_path / "state", extra=["--webhook-url", rx.url, "--webhook-secret", SECRET])
    try:
        s.mkcol("alice", "ro")
        s.share("alice", "/ro", "bob", permissions=1)
        # Delivery is asynchronous: wait for the folder's own event before the refused PUT,
        # so no event of the setup can be mistaken for (or hide) one of the refused write.
        _, body = rx.until("NodeCreatedEvent")
        assert body["event"]["node"]["path"] == "/alice/files/ro"
        assert s.put("bob", "ro/x.txt", "x").status_code == 403
        assert s.put("alice", "marker.txt", "m").status_code == 201
        # Every event up to the marker's: none may be about the refused PUT.
        while True:
            _, body = rx.until("Event")
            path = body["event"].get("node", {}).get("path", "")
            assert "x.txt" not in path, f"an event for the refused PUT: {body}"
            if path == "/alice/files/marker.txt":
                break
        rx.close()
        rx.server.server_close()
        for i in range(5):  # receiver gone: DAV requests still succeed
            assert s.put("alice", f"after-{i}.txt", "x").status_code == 201
    finally:
        s.stop()
