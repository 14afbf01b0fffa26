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
    # The target stack in the URL and in the body: right with and without user_oidc.
    r = call("PUT", "alice", f"boards/{b}/stacks/{done}/cards/{c}/reorder", json={"order": 0, "stackId": done})
    assert r.status_code == 200 and [(x["id"], x["stackId"]) for x in r.json()] == [(c, done)]
    # the URL must name the card's real stack now
    assert call("GET", "alice", f"boards/{b}/stacks/{todo}/cards/{c}").status_code == 404
    assert call("GET", "alice", f"boards/{b}/stacks/{done}/cards/{c}").status_code == 200
    # bob's own board does not open alice's card, stacks or board
    bb = call("POST", "bob", "boards", json={"title": "B", "color": "445566"}).json()["id"]
    bs = call("POST", "bob", f"boards/{bb}/stacks", json={"title": "S", "order": 1}).json()["id"]
    assert call("GET", "bob", f"boards/{bb}/stacks/{bs}/cards/{c}").status_code == 403
    assert call("PUT", "bob", f"boards/{bb}/stacks/{bs}/cards/{c}/reorder", json={"order": 0, "stackId": bs}).status_code == 403
    # alice cannot move her card onto bob's stack, whichever place names it
    assert call("PUT", "alice", f"boards/{b}/stacks/{bs}/cards/{c}/reorder", json={"order": 0, "stackId": bs}).status_code == 403
    assert call("GET", "alice", f"boards/{b}/stacks/{done}/cards/{c}").status_code == 200
    assert call("GET", "alice", "boards/999999").status_code == 404
    assert call("GET", "bob", f"boards/{b}").status_code == 403
    assert [x["title"] for x in call("GET", "bob", "boards").json()] == ["B"]


def stack_of(call, b: int, card: int) -> int:
    return next(s["id"] for s in call("GET", "alice", f"boards/{b}/stacks").json()
                for x in s.get("cards") or [] if x["id"] == card)


def test_without_a_session_the_route_stack_wins_over_the_body(deck):
    """user_oidc reads a parameter while booting whenever no session logged the request in, so the
    body is decoded before routing and the route's stackId beats the JSON one: the move answers 200
    with the source stack's cards and nothing moves (what a real Nextcloud 31 with user_oidc does)."""
    call, b, todo, done, c = deck
    r = call("PUT", "alice", f"boards/{b}/stacks/{todo}/cards/{c}/reorder", json={"order": 0, "stackId": done})
    assert r.status_code == 200 and [(x["id"], x["stackId"]) for x in r.json()] == [(c, todo)]
    assert stack_of(call, b, c) == todo
    # The same for a card update: the route's stack stays, the body's is ignored.
    url = f"boards/{b}/stacks/{todo}/cards/{c}"
    r = call("PUT", "alice", url, json={"title": "c1", "type": "plain", "owner": "alice", "stackId": done})
    assert r.status_code == 200 and r.json()["stackId"] == todo


def test_with_a_session_the_body_wins(standin, deck):
    """A request logged in by its session cookie: user_oidc returns early, the body is decoded after
    routing and its fields win (the old deck_move_card relied on this without knowing)."""
    import requests
    call, b, todo, done, c = deck
    session = requests.Session()
    base = f"{standin.url}/index.php/apps/deck/api/v1.0"
    headers = {"OCS-APIRequest": "true", "Accept": "application/json"}
    assert session.get(f"{base}/boards", auth=standin.auth("alice"), headers=headers, timeout=10).status_code == 200
    assert session.cookies  # the login opened a session
    r = session.put(f"{base}/boards/{b}/stacks/{todo}/cards/{c}/reorder", json={"order": 0, "stackId": done},
                    headers=headers, timeout=10)
    assert r.status_code == 200 and [(x["id"], x["stackId"]) for x in r.json()] == [(c, done)]
    assert stack_of(call, b, c) == done


def test_without_user_oidc_the_body_wins_every_time(tmp_path):
    from conftest import Standin
    s = Standin(tmp_path / "state", extra=["--without-user-oidc"])
    try:
        base = f"{s.url}/index.php/apps/deck/api/v1.0"
        call = lambda m, uid, path, **kw: s.req(m, f"{base}/{path}", uid, **kw)  # noqa: E731
        b = call("POST", "alice", "boards", json={"title": "A", "color": "112233"}).json()["id"]
        todo = call("POST", "alice", f"boards/{b}/stacks", json={"title": "To do", "order": 1}).json()["id"]
        done = call("POST", "alice", f"boards/{b}/stacks", json={"title": "Done", "order": 2}).json()["id"]
        c = call("POST", "alice", f"boards/{b}/stacks/{todo}/cards", json={"title": "c1"}).json()["id"]
        r = call("PUT", "alice", f"boards/{b}/stacks/{todo}/cards/{c}/reorder", json={"order": 0, "stackId": done})
        assert r.status_code == 200 and [(x["id"], x["stackId"]) for x in r.json()] == [(c, done)]
    finally:
        s.stop()


def test_lost_writes_are_answered_but_not_applied(standin, deck):
    call, b, todo, done, c = deck
    before = call("GET", "alice", f"boards/{b}/stacks").json()
    assert standin.req("POST", f"{standin.url}/standin/faults", json={"lose_writes": True}).json() == {"lose_writes": True}
    try:
        r = call("PUT", "alice", f"boards/{b}/stacks/{done}/cards/{c}/reorder", json={"order": 0, "stackId": done})
        assert r.status_code == 200 and [(x["id"], x["stackId"]) for x in r.json()] == [(c, todo)]
        made = call("POST", "alice", f"boards/{b}/stacks/{todo}/cards", json={"title": "ghost"})
        assert made.status_code == 200 and made.json()["title"] == "ghost"
        assert call("GET", "alice", f"boards/{b}/stacks/{todo}/cards/{made.json()['id']}").status_code == 404
        assert call("GET", "alice", f"boards/{b}/stacks").json() == before
    finally:
        standin.req("POST", f"{standin.url}/standin/faults", json={"lose_writes": False})
    assert standin.req("POST", f"{standin.url}/standin/faults", json={"lose_writes": "yes"}).status_code == 400
