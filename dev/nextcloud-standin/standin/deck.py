"""The Deck REST API subset (``/index.php/apps/deck/api/v1.0/``), scripted over SQLite.

Deck is a Nextcloud-only API, so this is a stand-in speaking its wire format rather than a
real server: boards (list, get, create), stacks (list with cards, create), cards (get,
create, update, delete) and ``PUT .../cards/{id}/reorder {order, stackId}``.

The ids a write acts on are the ones Deck's controllers read with ``getParam``: the route's
``stackId``/``cardId`` merged with same-named body fields as Nextcloud's ``Request`` merges
them (``web.Request.params``). On the production set-up (user_oidc installed) a request that
no session cookie logged in takes the route's: ``PUT .../stacks/{from}/cards/{id}/reorder
{"stackId": to}`` then answers 200 and leaves the card in ``from``. A reorder answers the
cards of the stack it moved the card to, as Deck's does.

Owns: the JSON shapes and the validation Deck applies (required fields are 400 when
missing, like Deck's controllers). Boards are visible to their owner only (the stand-in has
no board sharing): any other board is 403, a board that does not exist is 404.

Must never: trust ids in the URL to imply access: every card and stack is checked against
the board it really belongs to, and a URL whose ids do not belong together is refused.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import time
from typing import Mapping

from .store import Store
from .web import HttpError, Request, json_response

PREFIXES = ("/index.php/apps/deck/api/v1.0/", "/apps/deck/api/v1.0/")
COLOR = re.compile(r"^[0-9a-fA-F]{6}$")
CARD_TYPES = {"plain", "text"}



def _user(uid: str) -> dict[str, object]:
    return {"primaryKey": uid, "uid": uid, "displayname": uid, "type": 0}


def _etag(*parts: object) -> str:
    return hashlib.md5(":".join(map(str, parts)).encode()).hexdigest()


def _title(p: dict[str, object]) -> str:
    title = p.get("title")
    if not isinstance(title, str) or not title.strip():
        raise HttpError(400, "title must be provided")
    if len(title) > 255:
        raise HttpError(400, "The title cannot exceed 255 characters")
    return title


def _int(p: dict[str, object], name: str, default: int | None = None) -> int:
    raw = p.get(name, default)
    if raw is None:
        raise HttpError(400, f"{name} must be provided")
    if isinstance(raw, bool):
        raise HttpError(400, f"{name} must be an integer")
    try:
        return int(str(raw))
    except ValueError:
        raise HttpError(400, f"{name} must be an integer") from None


class Deck:
    def __init__(self, store: Store) -> None:
        self.db = store

    # ---- routing ----------------------------------------------------------------------

    def handle(self, req: Request, uid: str, start_response):
        rest = next((req.path[len(p):] for p in PREFIXES if req.path.startswith(p)), "")
        parts = [x for x in rest.strip("/").split("/") if x]
        try:
            status, data = self.route(req, uid, parts)
            return json_response(start_response, status, data)
        except HttpError as e:
            return json_response(start_response, e.status, {"status": e.status, "message": e.message})

    def route(self, req: Request, uid: str, parts: list[str]) -> tuple[int, object]:
        m = req.method
        lost = bool(req.environ.get("standin.lose_writes"))  # the stand-in's lose_writes fault
        if parts[:1] != ["boards"]:
            raise HttpError(404, "unknown Deck endpoint")
        ids = parts[1::2]
        if not all(i.isdigit() for i in ids):
            raise HttpError(400, "ids must be integers")
        shape = tuple(parts[0::2])
        n = [int(i) for i in ids]
        if shape == ("boards",) and len(n) == 0:
            if m == "GET":
                return 200, self.boards(uid)
            if m == "POST":
                return 200, self.create_board(uid, req.params())
        elif shape == ("boards",) and len(n) == 1:
            board = self.board_row(uid, n[0])
            if m == "GET":
                return 200, self.board_json(board)
        elif shape == ("boards", "stacks") and len(n) == 1:
            board = self.board_row(uid, n[0])
            if m == "GET":
                return 200, self.stacks(board["id"])
            if m == "POST":
                return 200, self.create_stack(board["id"], req.params())
        elif shape == ("boards", "stacks") and len(n) == 2:
            stack = self.stack_row(uid, n[0], n[1])
            if m == "GET":
                return 200, self.stack_json(stack, with_cards=True)
            if m == "DELETE":
                self.db.execute("DELETE FROM deck_cards WHERE stack_id = ?", (stack["id"],))
                self.db.execute("DELETE FROM deck_stacks WHERE id = ?", (stack["id"],))
                return 200, self.stack_json(stack, with_cards=False)
        elif shape == ("boards", "stacks", "cards") and len(n) == 2:
            self.stack_row(uid, n[0], n[1])
            if m == "POST":
                # CardApiController::create takes getParam('stackId'): the route's, or a JSON
                # field of that name where the body beats the route (web.Request.params).
                p = req.params({"boardId": n[0], "stackId": n[1]})
                return 200, self.create_card(uid, self.stack_row(uid, n[0], _int(p, "stackId")), p, lost)
        elif shape == ("boards", "stacks", "cards") and len(n) == 3:
            if m == "GET":
                return 200, self.card_json(self.card_row(uid, n[0], n[1], n[2]))
            if m == "PUT":
                # CardApiController::update: getParam('cardId') and getParam('stackId'), and
                # CardService::update puts the card into that stack.
                self.stack_row(uid, n[0], n[1])
                p = req.params({"boardId": n[0], "stackId": n[1], "cardId": n[2]})
                card = self.card_on_board(uid, n[0], _int(p, "cardId"))
                return 200, self.update_card(uid, card, self.target_stack(uid, card, _int(p, "stackId")), p, lost)
            if m == "DELETE":
                card = self.card_row(uid, n[0], n[1], n[2])
                if not lost:
                    self.db.execute("DELETE FROM deck_cards WHERE id = ?", (card["id"],))
                return 200, self.card_json(card)
        elif parts[-1:] == ["reorder"] and tuple(parts[0:-1:2]) == ("boards", "stacks", "cards") and len(n) == 3:
            if m == "PUT":
                # CardApiController::reorder(int $stackId, int $order) with getParam('cardId'):
                # the stack it moves the card to is the merged parameter, not the card's stack.
                self.stack_row(uid, n[0], n[1])
                p = req.params({"boardId": n[0], "stackId": n[1], "cardId": n[2]})
                card = self.card_on_board(uid, n[0], _int(p, "cardId"))
                return 200, self.reorder(card, self.target_stack(uid, card, _int(p, "stackId")), p, lost)
        else:
            raise HttpError(404, "unknown Deck endpoint")
        raise HttpError(405, f"{m} is not allowed here")

    # ---- access: the entity's own board decides ------------------------------------------

    def board_row(self, uid: str, board_id: int) -> sqlite3.Row:
        row = self.db.execute("SELECT * FROM deck_boards WHERE id = ?", (board_id,)).fetchone()
        if row is None:
            raise HttpError(404, "Board not found")
        if row["owner"] != uid:
            raise HttpError(403, "Permission denied")
        return row

    def stack_row(self, uid: str, board_id: int, stack_id: int) -> sqlite3.Row:
        row = self.db.execute("SELECT * FROM deck_stacks WHERE id = ?", (stack_id,)).fetchone()
        if row is None:
            self.board_row(uid, board_id)
            raise HttpError(404, "Stack not found")
        self.board_row(uid, row["board_id"])
        if row["board_id"] != board_id:
            raise HttpError(404, "Stack not found on this board")
        return row

    def card_row(self, uid: str, board_id: int, stack_id: int, card_id: int) -> sqlite3.Row:
        row = self.db.execute("SELECT * FROM deck_cards WHERE id = ?", (card_id,)).fetchone()
        if row is None:
            self.stack_row(uid, board_id, stack_id)
            raise HttpError(404, "Card not found")
        stack = self.db.execute("SELECT * FROM deck_stacks WHERE id = ?", (row["stack_id"],)).fetchone()
        if stack is None:
            raise HttpError(404, "Card not found")
        self.board_row(uid, stack["board_id"])
        if row["stack_id"] != stack_id or stack["board_id"] != board_id:
            raise HttpError(404, "Card not found in this stack")
        return row

    def card_on_board(self, uid: str, board_id: int, card_id: int) -> sqlite3.Row:
        """A card that a write names by id (Deck reads the id from the merged parameters):
        its own board decides access, and it must be on the board the URL names."""
        row = self.db.execute("SELECT * FROM deck_cards WHERE id = ?", (card_id,)).fetchone()
        if row is None:
            self.board_row(uid, board_id)
            raise HttpError(404, "Card not found")
        stack = self.db.execute("SELECT * FROM deck_stacks WHERE id = ?", (row["stack_id"],)).fetchone()
        if stack is None:
            raise HttpError(404, "Card not found")
        self.board_row(uid, stack["board_id"])
        if stack["board_id"] != board_id:
            raise HttpError(404, "Card not found on this board")
        return row

    def target_stack(self, uid: str, card: sqlite3.Row, stack_id: int) -> sqlite3.Row:
        """The stack a card is written into: its own board decides access, and it must be on
        the card's board (stricter than Deck, which moves a card to any stack the user may edit)."""
        target = self.db.execute("SELECT * FROM deck_stacks WHERE id = ?", (stack_id,)).fetchone()
        if target is None:
            raise HttpError(404, "Stack not found")
        self.board_row(uid, target["board_id"])
        source = self.db.execute("SELECT board_id FROM deck_stacks WHERE id = ?", (card["stack_id"],)).fetchone()
        if source is None or source["board_id"] != target["board_id"]:
            raise HttpError(400, "A card can only move between stacks of its own board")
        return target

    # ---- boards ---------------------------------------------------------------------------

    def boards(self, uid: str) -> list[dict[str, object]]:
        rows = self.db.execute("SELECT * FROM deck_boards WHERE owner = ? ORDER BY id", (uid,))
        return [self.board_json(r) for r in rows]

    def create_board(self, uid: str, p: dict[str, object]) -> dict[str, object]:
        title = _title(p)
        color = p.get("color")
        if not isinstance(color, str) or not COLOR.match(color):
            raise HttpError(400, "color must be a 6-digit hex colour")
        cur = self.db.execute(
            "INSERT INTO deck_boards (owner, title, color, last_modified) VALUES (?, ?, ?, ?)",
            (uid, title, color, int(time.time())))
        return self.board_json(self.board_row(uid, int(cur.lastrowid or 0)))

    @staticmethod
    def board_json(b: sqlite3.Row) -> dict[str, object]:
        perms = {"PERMISSION_READ": True, "PERMISSION_EDIT": True, "PERMISSION_MANAGE": True,
                 "PERMISSION_SHARE": True}
        return {"id": b["id"], "title": b["title"], "owner": _user(b["owner"]), "color": b["color"],
                "archived": bool(b["archived"]), "labels": [], "acl": [], "permissions": perms,
                "users": [], "shared": 0, "stacks": [], "activeSessions": [], "deletedAt": 0,
                "lastModified": b["last_modified"], "settings": [],
                "ETag": _etag(b["id"], b["last_modified"], b["title"])}

    # ---- stacks ---------------------------------------------------------------------------

    def stacks(self, board_id: int) -> list[dict[str, object]]:
        rows = self.db.execute('SELECT * FROM deck_stacks WHERE board_id = ? ORDER BY "order", id', (board_id,))
        return [self.stack_json(r, with_cards=True) for r in rows]

    def create_stack(self, board_id: int, p: dict[str, object]) -> dict[str, object]:
        title = _title(p)
        order = _int(p, "order")
        cur = self.db.execute(
            'INSERT INTO deck_stacks (board_id, title, "order", last_modified) VALUES (?, ?, ?, ?)',
            (board_id, title, order, int(time.time())))
        row = self.db.execute("SELECT * FROM deck_stacks WHERE id = ?", (cur.lastrowid,)).fetchone()
        return self.stack_json(row, with_cards=False)

    def stack_json(self, s: sqlite3.Row, *, with_cards: bool) -> dict[str, object]:
        out: dict[str, object] = {"id": s["id"], "title": s["title"], "boardId": s["board_id"],
                                  "deletedAt": 0, "lastModified": s["last_modified"], "order": s["order"],
                                  "ETag": _etag(s["id"], s["last_modified"], s["title"])}
        if with_cards:
            rows = self.db.execute(
                'SELECT * FROM deck_cards WHERE stack_id = ? AND archived = 0 ORDER BY "order", id', (s["id"],))
            out["cards"] = [self.card_json(c) for c in rows]
        return out

    # ---- cards ----------------------------------------------------------------------------

    def create_card(self, uid: str, stack: sqlite3.Row, p: dict[str, object], lost: bool = False) -> dict[str, object]:
        title = _title(p)
        ctype = p.get("type", "plain")
        if ctype not in CARD_TYPES:
            raise HttpError(400, "type must be 'plain'")
        order = _int(p, "order", 999)
        description = p.get("description") or ""
        if not isinstance(description, str):
            raise HttpError(400, "description must be a string")
        duedate = p.get("duedate")
        if duedate is not None and not isinstance(duedate, str):
            raise HttpError(400, "duedate must be an ISO 8601 string or null")
        now = int(time.time())
        values = {"stack_id": stack["id"], "title": title, "description": description, "type": ctype,
                  "order": order, "owner": uid, "duedate": duedate, "created_at": now, "last_modified": now,
                  "last_editor": uid, "archived": 0}
        if lost:
            # The lose_writes fault: Deck's answer for a card that was never stored, under an id
            # no card has.
            top = self.db.execute("SELECT COALESCE(MAX(id), 0) AS top FROM deck_cards").fetchone()["top"]
            return self.card_json({"id": int(top) + 1000, **values})
        cur = self.db.execute(
            'INSERT INTO deck_cards (stack_id, title, description, type, "order", owner, duedate,'
            " created_at, last_modified, last_editor) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            tuple(values[k] for k in ("stack_id", "title", "description", "type", "order", "owner", "duedate",
                                      "created_at", "last_modified", "last_editor")))
        return self.card_json(self._card(int(cur.lastrowid or 0)))

    def _card(self, card_id: int) -> sqlite3.Row:
        row = self.db.execute("SELECT * FROM deck_cards WHERE id = ?", (card_id,)).fetchone()
        if row is None:
            raise HttpError(404, "Card not found")
        return row

    def update_card(self, uid: str, card: sqlite3.Row, stack: sqlite3.Row, p: dict[str, object],
                    lost: bool = False) -> dict[str, object]:
        # Deck's update needs title, type and owner; the rest falls back to Deck's defaults,
        # so a PUT without a description clears it, as on the real server.
        title = _title(p)
        ctype = p.get("type")
        if ctype not in CARD_TYPES:
            raise HttpError(400, "type must be provided ('plain')")
        owner = p.get("owner")
        if isinstance(owner, dict):
            owner = owner.get("uid")
        if not isinstance(owner, str) or not owner:
            raise HttpError(400, "owner must be provided")
        description = p.get("description") or ""
        if not isinstance(description, str):
            raise HttpError(400, "description must be a string")
        order = _int(p, "order", 0)
        duedate = p.get("duedate")
        if duedate is not None and not isinstance(duedate, str):
            raise HttpError(400, "duedate must be an ISO 8601 string or null")
        archived = p.get("archived", bool(card["archived"]))
        if not isinstance(archived, bool):
            raise HttpError(400, "archived must be a boolean")
        if lost:
            return self.card_json(card)
        self.db.execute(
            'UPDATE deck_cards SET stack_id = ?, title = ?, type = ?, owner = ?, description = ?, "order" = ?,'
            " duedate = ?, archived = ?, last_modified = ?, last_editor = ? WHERE id = ?",
            (stack["id"], title, ctype, owner, description, order, duedate, int(archived), int(time.time()), uid,
             card["id"]))
        return self.card_json(self._card(card["id"]))

    def reorder(self, card: sqlite3.Row, target: sqlite3.Row, p: dict[str, object],
                lost: bool = False) -> list[dict[str, object]]:
        """Moves ``card`` into ``target`` at ``order`` and answers, as CardService::reorder does,
        the cards of the stack it moved the card to, read back after the move."""
        order = _int(p, "order")
        if lost:
            rows = self.db.execute('SELECT * FROM deck_cards WHERE stack_id = ? ORDER BY "order", id',
                                   (card["stack_id"],))
            return [self.card_json(r) for r in rows]
        with self.db.transaction():
            return self._reorder(card["id"], target["id"], order)

    def _reorder(self, card_id: int, target_id: int, order: int) -> list[dict[str, object]]:
        others = [r["id"] for r in self.db.execute(
            'SELECT id FROM deck_cards WHERE stack_id = ? AND id != ? ORDER BY "order", id', (target_id, card_id))]
        position = max(0, min(order, len(others)))
        others.insert(position, card_id)
        now = int(time.time())
        for i, cid in enumerate(others):
            self.db.execute('UPDATE deck_cards SET stack_id = ?, "order" = ?, last_modified = ? WHERE id = ?',
                            (target_id, i, now, cid))
        rows = self.db.execute('SELECT * FROM deck_cards WHERE stack_id = ? ORDER BY "order", id', (target_id,))
        return [self.card_json(r) for r in rows]

    @staticmethod
    def card_json(c: Mapping[str, object] | sqlite3.Row) -> dict[str, object]:
        return {"id": c["id"], "title": c["title"], "description": c["description"], "stackId": c["stack_id"],
                "type": c["type"], "lastModified": c["last_modified"], "lastEditor": c["last_editor"],
                "createdAt": c["created_at"], "labels": [], "assignedUsers": [], "attachments": None,
                "attachmentCount": 0, "owner": _user(c["owner"]), "order": c["order"],
                "archived": bool(c["archived"]), "done": None, "duedate": c["duedate"], "notified": False,
                "deletedAt": 0, "commentsUnread": 0, "commentsCount": 0,
                "ETag": _etag(c["id"], c["last_modified"]), "overdue": 0}
