"""Deck: validation like Deck's controllers, access decided by the entity's own board."""

import pytest


@pytest.fixture
def deck(standin):
    base = f"{standin.url}/index.php/apps/deck/api/v1.0"
    call = lambda m, uid, path, **kw: standin.req(m, f"{base}/{path}", uid, **kw)  # noqa: E731
    board = call("POST", "alice", "boards", json={"title": "A", "color": "112233"}).json()
    todo = call("POST", "alice", f"boards/{board['id']}/stacks", json={"title": "To do", "order": 1}).json()
    done = call("POST", "alice", f"boards/{board['id']}/stacks", json={"title": "Done", "order": 2}).json()
    card = call("POST", "alice", f"boards/{board['id']}/stacks/{todo['id']}/cards", json={"title": "c1"}).json()
    return call, board["id"], todo["id"], done["id"], card["id"]


def test_card_crud_and_update_needs_deck_fields(deck):
    call, b, todo, _, c = deck
    url = f"boards/{b}/stacks/{todo}/cards/{c}"
    got = call("GET", "alice", url).json()
    assert got["title"] == "c1" and got["type"] == "plain" and got["owner"]["uid"] == "alice" and got["stackId"] == todo
    assert call("PUT", "alice", url, json={"title": "c1b", "type": "plain"}).status_code == 400  # owner missing
    r = call("PUT", "alice", url, json={"title": "c1b", "type": "plain", "owner": "alice", "description": "d"})
    assert r.status_code == 200 and r.json()["description"] == "d"
    assert call("DELETE", "alice", url).status_code == 200
    assert call("GET", "alice", url).status_code == 404


def test_bad_input_is_400_and_changes_nothing(deck):
    call, b, todo, _, _ = deck
    before = call("GET", "alice", f"boards/{b}/stacks").json()
    assert call("POST", "alice", "boards", json={"title": "x", "color": "red"}).status_code == 400
    assert call("POST", "alice", f"boards/{b}/stacks", json={"title": "no order"}).status_code == 400
    assert call("POST", "alice", f"boards/{b}/stacks/{todo}/cards", json={"title": ""}).status_code == 400
    assert call("POST", "alice", f"boards/{b}/stacks/{todo}/cards", json={"title": "x", "type": "weird"}).status_code == 400
    assert call("POST", "alice", f"boards/{b}/stacks/{todo}/cards", data="{oops",
                headers={"Content-Type": "application/json"}).status_code == 400
    assert call("GET", "alice", f"boards/{b}/stacks").json() == before
    assert len(call("GET", "alice", "boards").json()) == 1


def test_reorder_and_access_follow_the_real_board(deck):
    call, b, todo, done, c = deck
    r = call("PUT", "alice", f"boards/{b}/stacks/{todo}/cards/{c}/reorder", json={"order": 0, "stackId": done})
    assert r.status_code == 200 and [x["id"] for x in r.json()] == [c]
    # the URL must name the card's real stack now
    assert call("GET", "alice", f"boards/{b}/stacks/{todo}/cards/{c}").status_code == 404
    assert call("GET", "alice", f"boards/{b}/stacks/{done}/cards/{c}").status_code == 200
    # bob's own board does not open alice's card, stacks or board
    bb = call("POST", "bob", "boards", json={"title": "B", "color": "445566"}).json()["id"]
    bs = call("POST", "bob", f"boards/{bb}/stacks", json={"title": "S", "order": 1}).json()["id"]
    assert call("GET", "bob", f"boards/{bb}/stacks/{bs}/cards/{c}").status_code == 403
    assert call("PUT", "bob", f"boards/{bb}/stacks/{bs}/cards/{c}/reorder", json={"order": 0, "stackId": bs}).status_code == 403
    # alice cannot move her card onto bob's stack
    assert call("PUT", "alice", f"boards/{b}/stacks/{done}/cards/{c}/reorder", json={"order": 0, "stackId": bs}).status_code == 403
    assert call("GET", "alice", "boards/999999").status_code == 404
    assert call("GET", "bob", f"boards/{b}").status_code == 403
    assert [x["title"] for x in call("GET", "bob", "boards").json()] == ["B"]
