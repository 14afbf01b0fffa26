"""The stand-in's own persistent state: file ids, shares, Deck and mail ids, in one SQLite file.

Owns: the schema of ``standin.db`` in the state directory and every SQL statement run on it.
File *contents* live on disk under ``files/`` (served by WsgiDAV) and calendars/contacts
under ``caldav/`` and ``carddav/`` (owned by Radicale); this module only records what
Nextcloud keeps beside them: a stable id per node, shares, Deck boards, and Nextcloud Mail's
integer ids of accounts, mailboxes and messages (the mail itself is in Maildirs under ``mail/``).

Must never: decide who may do what (callers pass the acting user and check ownership
through the functions here), or build SQL from strings (all values are bound parameters).
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

SCHEMA = """
PRAGMA journal_mode = WAL;
CREATE TABLE IF NOT EXISTS nodes (
    id    INTEGER PRIMARY KEY AUTOINCREMENT,
    path  TEXT NOT NULL UNIQUE,         -- '<owner>/<relative path>', '<owner>' for a home
    version INTEGER NOT NULL DEFAULT 0  -- bumped when anything below a folder changes
);
CREATE TABLE IF NOT EXISTS shares (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    node_id     INTEGER NOT NULL,
    owner       TEXT NOT NULL,
    share_with  TEXT NOT NULL,
    permissions INTEGER NOT NULL,
    mount_name  TEXT NOT NULL,        -- the name it has in the recipient's home
    stime       INTEGER NOT NULL,
    UNIQUE (node_id, share_with)
);
CREATE TABLE IF NOT EXISTS deck_boards (
    id INTEGER PRIMARY KEY AUTOINCREMENT, owner TEXT NOT NULL, title TEXT NOT NULL,
    color TEXT NOT NULL, archived INTEGER NOT NULL DEFAULT 0, last_modified INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS deck_stacks (
    id INTEGER PRIMARY KEY AUTOINCREMENT, board_id INTEGER NOT NULL, title TEXT NOT NULL,
    "order" INTEGER NOT NULL, last_modified INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS deck_cards (
    id INTEGER PRIMARY KEY AUTOINCREMENT, stack_id INTEGER NOT NULL, title TEXT NOT NULL,
    description TEXT NOT NULL, type TEXT NOT NULL, "order" INTEGER NOT NULL,
    owner TEXT NOT NULL, duedate TEXT, archived INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL, last_modified INTEGER NOT NULL, last_editor TEXT
);
CREATE TABLE IF NOT EXISTS mail_accounts (
    id INTEGER PRIMARY KEY AUTOINCREMENT, uid TEXT NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS mail_mailboxes (
    id INTEGER PRIMARY KEY AUTOINCREMENT, account_id INTEGER NOT NULL, name TEXT NOT NULL,
    UNIQUE (account_id, name)
);
CREATE TABLE IF NOT EXISTS mail_messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, mailbox_id INTEGER NOT NULL,
    msg_key TEXT NOT NULL,               -- the message's key in its Maildir folder
    UNIQUE (mailbox_id, msg_key)
);
"""


@dataclass(frozen=True)
class Share:
    id: int
    node_id: int
    owner: str
    share_with: str
    permissions: int
    mount_name: str
    stime: int
    path: str  # the shared node's current '<owner>/<rel>' path


class Store:
    """One SQLite database; a connection per thread (cheroot serves from a thread pool)."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._local = threading.local()
        # Serialises the read-modify-write sequences below (id allocation, subtree moves).
        self._write_lock = threading.Lock()
        self._db().executescript(SCHEMA)

    def _db(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self._path, timeout=30, isolation_level=None)
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA busy_timeout = 30000")
            self._local.conn = conn
        return conn

    # ---- file ids -------------------------------------------------------------------

    def node_id(self, key: str) -> int:
        """The id of the node at '<owner>/<rel>', allocating one the first time it is seen."""
        row = self._db().execute("SELECT id FROM nodes WHERE path = ?", (key,)).fetchone()
        if row:
            return int(row["id"])
        with self._write_lock:
            db = self._db()
            db.execute("INSERT OR IGNORE INTO nodes (path) VALUES (?)", (key,))
            row = db.execute("SELECT id FROM nodes WHERE path = ?", (key,)).fetchone()
            return int(row["id"])

    def node_id_if_known(self, key: str) -> int | None:
        row = self._db().execute("SELECT id FROM nodes WHERE path = ?", (key,)).fetchone()
        return int(row["id"]) if row else None

    def node_path(self, node_id: int) -> str | None:
        row = self._db().execute("SELECT path FROM nodes WHERE id = ?", (node_id,)).fetchone()
        return str(row["path"]) if row else None

    def version(self, key: str) -> int:
        row = self._db().execute("SELECT version FROM nodes WHERE path = ?", (key,)).fetchone()
        return int(row["version"]) if row else 0

    def touch_ancestors(self, key: str) -> None:
        """Something at '<owner>/<rel>' changed: every folder above it gets a new etag,
        as Nextcloud propagates etags up to the home."""
        parts = key.split("/")
        ancestors = ["/".join(parts[:i]) for i in range(1, len(parts))]
        for a in ancestors:
            self.node_id(a)
        with self._write_lock:
            self._db().executemany("UPDATE nodes SET version = version + 1 WHERE path = ?",
                                   [(a,) for a in ancestors])

    def move_subtree(self, old: str, new: str) -> None:
        """A node and everything under it moved: ids follow (Nextcloud keeps ids across moves)."""
        with self._write_lock:
            db = self._db()
            db.execute("BEGIN IMMEDIATE")
            try:
                # Whatever sat at the destination is gone (overwritten).
                db.execute("DELETE FROM nodes WHERE path = ? OR substr(path, 1, ?) = ?",
                           (new, len(new) + 1, new + "/"))
                db.execute(
                    "UPDATE nodes SET path = ? || substr(path, ?) WHERE path = ? OR substr(path, 1, ?) = ?",
                    (new, len(old) + 1, old, len(old) + 1, old + "/"))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    def delete_subtree(self, key: str) -> None:
        """A node and everything under it was deleted: ids and shares of those nodes go too."""
        with self._write_lock:
            db = self._db()
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute(
                    "DELETE FROM shares WHERE node_id IN (SELECT id FROM nodes WHERE path = ? OR substr(path, 1, ?) = ?)",
                    (key, len(key) + 1, key + "/"))
                db.execute("DELETE FROM nodes WHERE path = ? OR substr(path, 1, ?) = ?",
                           (key, len(key) + 1, key + "/"))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    # ---- shares ---------------------------------------------------------------------

    _SHARE_SELECT = ("SELECT s.*, n.path AS path FROM shares s JOIN nodes n ON n.id = s.node_id ")

    @staticmethod
    def _share(row: sqlite3.Row) -> Share:
        return Share(id=int(row["id"]), node_id=int(row["node_id"]), owner=row["owner"],
                     share_with=row["share_with"], permissions=int(row["permissions"]),
                     mount_name=row["mount_name"], stime=int(row["stime"]), path=row["path"])

    def shares_received(self, uid: str) -> list[Share]:
        rows = self._db().execute(self._SHARE_SELECT + "WHERE s.share_with = ? ORDER BY s.id", (uid,))
        return [self._share(r) for r in rows]

    def shares_owned(self, uid: str) -> list[Share]:
        rows = self._db().execute(self._SHARE_SELECT + "WHERE s.owner = ? ORDER BY s.id", (uid,))
        return [self._share(r) for r in rows]

    def share(self, share_id: int) -> Share | None:
        row = self._db().execute(self._SHARE_SELECT + "WHERE s.id = ?", (share_id,)).fetchone()
        return self._share(row) if row else None

    def shares_of_node(self, node_id: int) -> list[Share]:
        rows = self._db().execute(self._SHARE_SELECT + "WHERE s.node_id = ?", (node_id,))
        return [self._share(r) for r in rows]

    def create_share(self, node_id: int, owner: str, share_with: str, permissions: int,
                     mount_name: str) -> Share | None:
        """Creates the share; None when this node is already shared with that user."""
        with self._write_lock:
            cur = self._db().execute(
                "INSERT OR IGNORE INTO shares (node_id, owner, share_with, permissions, mount_name, stime)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (node_id, owner, share_with, permissions, mount_name, int(time.time())))
            if cur.rowcount == 0:
                return None
            return self.share(int(cur.lastrowid or 0))

    def update_share_permissions(self, share_id: int, permissions: int) -> None:
        self._db().execute("UPDATE shares SET permissions = ? WHERE id = ?", (permissions, share_id))

    def delete_share(self, share_id: int) -> None:
        self._db().execute("DELETE FROM shares WHERE id = ?", (share_id,))

    # ---- Deck -----------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """Statements inside run atomically (BEGIN IMMEDIATE ... COMMIT, ROLLBACK on error)."""
        db = self._db()
        db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def execute(self, sql: str, params: tuple = ()) -> sqlite3.Cursor:
        """Deck's statements (deck.py owns their meaning); parameters are always bound."""
        return self._db().execute(sql, params)

    # ---- mail ids (Nextcloud Mail's database ids; the mail itself is in Maildirs) ------

    def _mail_id(self, select: str, insert: str, params: tuple) -> int:
        row = self._db().execute(select, params).fetchone()
        if row:
            return int(row[0])
        with self._write_lock:
            db = self._db()
            db.execute(insert, params)
            return int(db.execute(select, params).fetchone()[0])

    def mail_account_id(self, uid: str) -> int:
        return self._mail_id("SELECT id FROM mail_accounts WHERE uid = ?",
                             "INSERT OR IGNORE INTO mail_accounts (uid) VALUES (?)", (uid,))

    def mail_mailbox_id(self, account_id: int, name: str) -> int:
        return self._mail_id("SELECT id FROM mail_mailboxes WHERE account_id = ? AND name = ?",
                             "INSERT OR IGNORE INTO mail_mailboxes (account_id, name) VALUES (?, ?)", (account_id, name))

    def mail_message_id(self, mailbox_id: int, key: str) -> int:
        return self._mail_id("SELECT id FROM mail_messages WHERE mailbox_id = ? AND msg_key = ?",
                             "INSERT OR IGNORE INTO mail_messages (mailbox_id, msg_key) VALUES (?, ?)", (mailbox_id, key))

    def mail_account_owner(self, account_id: int) -> str | None:
        row = self._db().execute("SELECT uid FROM mail_accounts WHERE id = ?", (account_id,)).fetchone()
        return str(row["uid"]) if row else None

    def mail_mailbox(self, mailbox_id: int) -> tuple[str, int, str] | None:
        """(owner uid, account id, folder name) of a mailbox id."""
        row = self._db().execute(
            "SELECT a.uid, b.account_id, b.name FROM mail_mailboxes b JOIN mail_accounts a ON a.id = b.account_id"
            " WHERE b.id = ?", (mailbox_id,)).fetchone()
        return (str(row[0]), int(row[1]), str(row[2])) if row else None

    def mail_message(self, message_id: int) -> tuple[int, str] | None:
        """(mailbox id, Maildir key) of a message id."""
        row = self._db().execute("SELECT mailbox_id, msg_key FROM mail_messages WHERE id = ?", (message_id,)).fetchone()
        return (int(row[0]), str(row[1])) if row else None
