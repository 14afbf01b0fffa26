"""Talk's stand-in-only surfaces (the bot protocol itself is talk-check.sh's): the occ route wants
the state folder's token, guests write only in public conversations, and a bot message without
OCS-APIRequest is refused like every OCS request here."""

import hashlib
import hmac
import json
import subprocess
from pathlib import Path

import requests

OCC = Path(__file__).resolve().parent.parent / "occ"


def occ(s, *args):
    out = subprocess.run([str(OCC), "--state", str(s.state), *args], capture_output=True, text=True)
    return out.returncode, out.stdout


def room(s, room_type=2):
    r = s.ocs("POST", "alice", "apps/spreed/api/v4/room", data={"roomType": room_type, "roomName": "R"})
    assert r.status_code == 201
    return r.json()["ocs"]["data"]["token"]


def test_occ_needs_the_token_from_the_state_folder(standin):
    assert requests.post(f"{standin.url}/standin/occ", json={"argv": ["talk:bot:list"]}).status_code == 401
    bad = {"Authorization": "Bearer " + "0" * 64}
    assert requests.post(f"{standin.url}/standin/occ", json={"argv": ["talk:bot:list"]}, headers=bad).status_code == 401
    assert occ(standin, "talk:bot:list", "--output=json") == (0, "[]\n")
    code, out = occ(standin, "talk:bot:install", "B", "short", "http://127.0.0.1:9/x")
    assert code == 1 and "secret is too short" in out


def test_guests_write_only_in_public_conversations(standin):
    group, public = room(standin, 2), room(standin, 3)
    post = lambda token: requests.post(f"{standin.url}/standin/talk/post", json={
        "token": token, "actorType": "guests", "actorId": "s1", "name": "G", "message": "hi"})
    assert post(group).status_code == 403
    r = post(public)
    assert r.status_code == 201
    assert r.json()["actorId"] == hashlib.sha1(b"s1").hexdigest()


def test_a_bot_message_without_ocs_apirequest_is_refused(standin):
    token = room(standin)
    secret = "s" * 64
    assert occ(standin, "talk:bot:install", "B", secret, "http://127.0.0.1:9/x")[0] == 0
    bot_id = json.loads(occ(standin, "talk:bot:list", "--output=json")[1])[0]["id"]
    assert standin.ocs("POST", "alice", f"apps/spreed/api/v1/bot/{token}/{bot_id}").status_code == 201
    rnd = "r" * 64
    sig = hmac.new(secret.encode(), (rnd + "hello").encode(), hashlib.sha256).hexdigest()
    url = f"{standin.url}/ocs/v2.php/apps/spreed/api/v1/bot/{token}/message"
    headers = {"X-Nextcloud-Talk-Bot-Random": rnd, "X-Nextcloud-Talk-Bot-Signature": sig, "Accept": "application/json"}
    assert requests.post(url, json={"message": "hello"}, headers=headers).status_code == 401
    assert requests.post(url, json={"message": "hello"}, headers={**headers, "OCS-APIRequest": "true"}).status_code == 201
