"""Talk (app ``spreed``): conversations, their chat, and the webhook bot protocol of Talk 21.

Owns: the OCS routes of Talk that Tamebi's tests and ``scripts/dev`` use (create, list and delete
conversations, add participants, post and read chat messages, enable and remove a bot in a
conversation), the bot message API a bot answers with (``POST …/api/v1/bot/{token}/message``,
reached without any user credential and proven by its signature), the bot registry that the
``talk:bot:*`` occ commands manage (``Talk.occ``), the webhook Talk sends to every bot enabled
in a conversation, and what Talk adds to ``/ocs/v2.php/cloud/capabilities``.

Wire format as nextcloud/spreed's BotService and BotController write and read it, pinned by
../shared/nextcloud-conformance/talk-check.sh: webhooks go out synchronously while the request
that caused them is being answered (5 s timeout), signed ``hex(HMAC-SHA256(secret, random +
raw body))``, with a body that is PHP ``json_encode`` output (``users\\/alice``); a bot reply is
signed over random + the message text only, and a replayed signature is accepted (Talk keeps
no nonces).

Stricter than Talk where the two could differ: the bot message API wants ``OCS-APIRequest:
true`` like every other OCS request here; an unknown reply target is 400 also when it is in
another conversation.

Must never: put a user's credential (or any Authorization/Cookie header) into a webhook, send a
bot's own message to any bot, or let a plain member or a non-participant change a
conversation's bots. State lives in memory: a restart starts with no conversations and no bots.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
import secrets
import string
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field

from .web import HttpError, Request

log = logging.getLogger("standin.talk")

PREFIX = "apps/spreed/api/"
BOT_FEATURES = {"webhook": 1, "response": 2, "event": 4, "reaction": 8}
WEBHOOK_TIMEOUT_SECONDS = 5.0
# Attendee participant types, as Talk numbers them.
OWNER, MODERATOR, USER, GUEST = 1, 2, 3, 4
ROOM_TYPES = {1: "one2one", 2: "group", 3: "public"}
RANDOM_ALPHABET = string.ascii_letters + string.digits + "+/"
TOKEN_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
BOT_MESSAGE = re.compile(r"^/ocs/v2\.php/apps/spreed/api/v1/bot/([^/]+)/message$")


def php_json(value: object) -> str:
    """``json_encode`` with PHP's default flags: ASCII only (``\\uXXXX``) and ``/`` escaped.
    A ``/`` occurs only inside strings in JSON, so escaping every one is exact."""
    return json.dumps(value, ensure_ascii=True, separators=(",", ":")).replace("/", "\\/")


def signature(secret: str, random: str, payload: bytes) -> str:
    return hmac.new(secret.encode(), random.encode() + payload, hashlib.sha256).hexdigest()


@dataclass
class Bot:
    id: int
    name: str
    secret: str
    url: str
    description: str
    features: int
    state: int = 1  # 0 disabled, 1 enabled, 2 no-setup (only occ may set it up)

    @property
    def url_hash(self) -> str:
        return hashlib.sha1(self.url.encode()).hexdigest()

    def feature_labels(self) -> list[str]:
        return [name for name, bit in BOT_FEATURES.items() if self.features & bit] or ["none"]


@dataclass
class Participant:
    actor_type: str  # users, guests, federated_users
    actor_id: str
    name: str
    kind: int


@dataclass
class Room:
    token: str
    name: str
    type: int
    id: int
    participants: dict[tuple[str, str], Participant] = field(default_factory=dict)
    bots: set[int] = field(default_factory=set)
    messages: list[dict[str, object]] = field(default_factory=list)


class Talk:
    def __init__(self, users: list[str]) -> None:
        self.known_users = set(users)
        self.lock = threading.RLock()
        self.bots: dict[int, Bot] = {}
        self.rooms: dict[str, Room] = {}
        self.next_bot = 1
        self.next_message = 1
        self.next_room = 1
        # overwrite.cli.url, set once the server listens (X-Nextcloud-Talk-Backend).
        self.backend = "http://localhost/"
        # Direct connections only: a proxy from the environment must not reroute webhooks.
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    # ---- capabilities -------------------------------------------------------------------

    @staticmethod
    def capabilities() -> dict[str, object]:
        """What Talk adds to the capabilities: ``bots-v1`` is what tells a client bots exist."""
        return {"spreed": {"features": ["chat-v2", "conversation-v4", "reply-to-message", "bots-v1"],
                           "config": {"chat": {"max-length": 32000}}, "version": "21.1.3"}}

    # ---- OCS routes for signed-in users ---------------------------------------------------

    def route(self, req: Request, uid: str, rest: str) -> tuple[int, object]:
        """``rest`` is the path after ``apps/spreed/api/``. Returns (status, OCS data)."""
        parts = rest.strip("/").split("/")
        m = req.method
        with self.lock:
            if parts[:2] == ["v4", "room"]:
                if len(parts) == 2 and m == "POST":
                    return 201, self.create_room(uid, req.params())
                if len(parts) == 2 and m == "GET":
                    return 200, [self.room_json(r, uid) for r in self.rooms.values() if ("users", uid) in r.participants]
                if len(parts) == 3 and m == "GET":
                    return 200, self.room_json(self.member_room(uid, parts[2]), uid)
                if len(parts) == 3 and m == "DELETE":
                    room = self.moderated_room(uid, parts[2])
                    del self.rooms[room.token]
                    return 200, []
                if len(parts) == 4 and parts[3] == "participants" and m == "POST":
                    return 200, self.add_participant(uid, parts[2], req.params())
                if len(parts) == 4 and parts[3] == "participants" and m == "GET":
                    room = self.member_room(uid, parts[2])
                    return 200, [{"actorType": p.actor_type, "actorId": p.actor_id, "displayName": p.name,
                                  "participantType": p.kind} for p in room.participants.values()]
            if parts[:2] == ["v1", "chat"] and len(parts) == 3:
                if m == "POST":
                    room = self.member_room(uid, parts[2])
                    return 201, self.post(room, room.participants[("users", uid)], req.params())
                if m == "GET":
                    return 200, self.read(self.member_room(uid, parts[2]), req.query)
            if parts[:2] == ["v1", "bot"] and len(parts) == 2 and m == "GET":
                return 200, [self.bot_json(b) for b in self.bots.values() if b.state != 0]
            if parts[:2] == ["v1", "bot"] and len(parts) == 3 and m == "GET":
                room = self.moderated_room(uid, parts[2])
                return 200, [dict(self.bot_json(b), state=1 if b.id in room.bots else 0)
                             for b in self.bots.values() if b.state != 0]
            if parts[:2] == ["v1", "bot"] and len(parts) == 4 and m in ("POST", "DELETE"):
                return self.set_bot(uid, parts[2], parts[3], m == "POST")
        raise HttpError(404, "")

    def create_room(self, uid: str, p: dict[str, object]) -> dict[str, object]:
        try:
            room_type = int(str(p.get("roomType", "")))
        except ValueError:
            raise HttpError(400, "type") from None
        name = str(p.get("roomName") or "").strip()
        if room_type not in (2, 3) or not name or len(name) > 255:
            raise HttpError(400, "type" if room_type not in (2, 3) else "name")
        token = "".join(secrets.choice(TOKEN_ALPHABET) for _ in range(8))
        room = Room(token=token, name=name, type=room_type, id=self.next_room)
        self.next_room += 1
        room.participants[("users", uid)] = Participant("users", uid, uid, OWNER)
        self.rooms[token] = room
        return self.room_json(room, uid)

    def add_participant(self, uid: str, token: str, p: dict[str, object]) -> dict[str, object]:
        room = self.moderated_room(uid, token)
        new, source = str(p.get("newParticipant") or ""), str(p.get("source") or "users")
        if source != "users" or not new or new not in self.known_users:
            raise HttpError(404 if source == "users" else 400, "")
        room.participants.setdefault(("users", new), Participant("users", new, new, USER))
        return {"type": room.type}

    def member_room(self, uid: str, token: str) -> Room:
        room = self.rooms.get(token)
        if room is None or ("users", uid) not in room.participants:
            raise HttpError(404, "")
        return room

    def moderated_room(self, uid: str, token: str) -> Room:
        room = self.member_room(uid, token)
        if room.participants[("users", uid)].kind not in (OWNER, MODERATOR):
            raise HttpError(403, "")
        return room

    def room_json(self, room: Room, uid: str) -> dict[str, object]:
        me = room.participants.get(("users", uid))
        return {"id": room.id, "token": room.token, "type": room.type, "name": room.name,
                "displayName": room.name, "participantType": me.kind if me else 0,
                "actorType": "users", "actorId": uid}

    @staticmethod
    def bot_json(bot: Bot) -> dict[str, object]:
        return {"id": bot.id, "name": bot.name, "description": bot.description, "state": bot.state}

    def set_bot(self, uid: str, token: str, bot_id: str, enable: bool) -> tuple[int, object]:
        room = self.moderated_room(uid, token)
        bot = self.bots.get(int(bot_id)) if bot_id.isdigit() else None
        if bot is None or bot.state == 0 or (enable and bot.state == 2):
            raise HttpError(400, "bot")
        return self.enable(room, bot) if enable else self.disable(room, bot)

    def enable(self, room: Room, bot: Bot) -> tuple[int, object]:
        if bot.id in room.bots:
            return 200, self.bot_json(bot)
        room.bots.add(bot.id)
        self.deliver(bot, self.membership("Join", room, bot))
        return 201, self.bot_json(bot)

    def disable(self, room: Room, bot: Bot) -> tuple[int, object]:
        if bot.id in room.bots:
            room.bots.discard(bot.id)
            self.deliver(bot, self.membership("Leave", room, bot))
        return 200, self.bot_json(bot)

    @staticmethod
    def membership(kind: str, room: Room, bot: Bot) -> dict[str, object]:
        return {"type": kind,
                "actor": {"type": "Application", "id": f"bots/bot-{bot.url_hash}", "name": bot.name},
                "object": {"type": "Collection", "id": room.token, "name": room.name}}

    # ---- chat -----------------------------------------------------------------------------

    def post(self, room: Room, author: Participant, p: dict[str, object]) -> dict[str, object]:
        text = str(p.get("message") or "")
        if not text.strip() or len(text) > 32000:
            raise HttpError(400 if not text.strip() else 413, "message")
        parent = self.reply_target(room, p.get("replyTo"))
        message = self.store(room, author.actor_type, author.actor_id, author.name, text, parent,
                             str(p.get("referenceId") or ""))
        self.send_webhooks(room, author, message, parent)
        return message

    def reply_target(self, room: Room, reply_to: object) -> dict[str, object] | None:
        if reply_to in (None, "", 0, "0"):
            return None
        wanted = str(reply_to)
        for message in room.messages:
            if str(message["id"]) == wanted:
                return message
        raise HttpError(400, "reply-to")

    def store(self, room: Room, actor_type: str, actor_id: str, name: str, text: str,
              parent: dict[str, object] | None, reference_id: str) -> dict[str, object]:
        message: dict[str, object] = {
            "id": self.next_message, "token": room.token, "actorType": actor_type, "actorId": actor_id,
            "actorDisplayName": name, "timestamp": int(time.time()), "message": text, "messageParameters": [],
            "systemMessage": "", "messageType": "comment", "isReplyable": True, "referenceId": reference_id,
            "reactions": {}, "markdown": True, "expirationTimestamp": 0}
        if parent is not None:
            message["parent"] = {k: v for k, v in parent.items() if k != "parent"}
        self.next_message += 1
        room.messages.append(message)
        return message

    def read(self, room: Room, query: dict[str, str]) -> list[dict[str, object]]:
        try:
            limit = max(1, min(200, int(query.get("limit", "100"))))
        except ValueError:
            raise HttpError(400, "limit") from None
        newest_first = list(reversed(room.messages))
        return newest_first[:limit]

    def guest_post(self, token: str, actor_type: str, actor_id: str, name: str, text: str) -> dict[str, object]:
        """Stand-in only: a message by someone who is not a Nextcloud user of this server (a
        guest in a public conversation, a federated user), as their client would post it."""
        with self.lock:
            room = self.rooms.get(token)
            if room is None:
                raise HttpError(404, "no such conversation")
            if actor_type == "guests" and room.type != 3:
                raise HttpError(403, "guests can only write in public conversations")
            if actor_type not in ("guests", "federated_users"):
                raise HttpError(400, "actorType must be guests or federated_users")
            if actor_type == "guests":
                actor_id = hashlib.sha1(actor_id.encode()).hexdigest()
            author = room.participants.setdefault((actor_type, actor_id),
                                                  Participant(actor_type, actor_id, name, GUEST if actor_type == "guests" else USER))
            return self.post(room, author, {"message": text})

    def send_webhooks(self, room: Room, author: Participant, message: dict[str, object],
                      parent: dict[str, object] | None) -> None:
        """BotService::afterChatMessageSent: every enabled bot with the webhook feature gets the
        message (bots never get bots' messages), one after the other, before the post answers."""
        if author.actor_type == "bots":
            return
        bots = [self.bots[b] for b in sorted(room.bots) if b in self.bots and self.bots[b].features & 1
                and self.bots[b].state != 0]
        if not bots:
            return
        note: dict[str, object] = {"type": "Note", "id": str(message["id"]), "name": "message",
                                   "content": php_json({"message": message["message"], "parameters": []}),
                                   "mediaType": "text/markdown"}
        if parent is not None:
            note["inReplyTo"] = {
                "actor": {"type": "Person", "id": f"{parent['actorType']}/{parent['actorId']}",
                          "name": parent["actorDisplayName"]},
                "object": {"type": "Note", "id": str(parent["id"]), "name": "message",
                           "content": php_json({"message": parent["message"], "parameters": []}),
                           "mediaType": "text/markdown"}}
        body = {"type": "Create",
                "actor": {"type": "Person", "id": f"{author.actor_type}/{author.actor_id}", "name": author.name,
                          "talkParticipantType": str(author.kind)},
                "object": note,
                "target": {"type": "Collection", "id": room.token, "name": room.name}}
        for bot in bots:
            self.deliver(bot, body)

    def deliver(self, bot: Bot, body: dict[str, object]) -> None:
        raw = php_json(body).encode()
        random = "".join(secrets.choice(RANDOM_ALPHABET) for _ in range(64))
        req = urllib.request.Request(bot.url, data=raw, method="POST", headers={
            "Content-Type": "application/json", "X-Nextcloud-Talk-Random": random,
            "X-Nextcloud-Talk-Signature": signature(bot.secret, random, raw),
            "X-Nextcloud-Talk-Backend": self.backend, "OCS-APIRequest": "true"})
        try:
            with self._opener.open(req, timeout=WEBHOOK_TIMEOUT_SECONDS) as resp:
                if resp.status not in (200, 202):
                    log.warning("bot %s answered its webhook with %s", bot.id, resp.status)
        except urllib.error.HTTPError as e:
            log.warning("bot %s answered its webhook with %s", bot.id, e.code)
        except (OSError, ValueError) as e:  # timeout, refused: Talk counts an error and goes on
            log.warning("bot %s webhook failed: %s", bot.id, e)

    # ---- the bot message API (no user; the signature is the proof) ------------------------

    def bot_message(self, req: Request, token: str) -> tuple[int, object]:
        """BotController::sendMessage. 400 for a malformed request, 401 for anything the
        signature does not prove (wrong secret, unknown conversation, bot not enabled there)."""
        random = req.header("X-Nextcloud-Talk-Bot-Random") or ""
        sig = (req.header("X-Nextcloud-Talk-Bot-Signature") or "").lower()
        if not random or not sig or len(random) < 32:
            raise HttpError(400, "")
        params = req.params()
        text = params.get("message")
        text = text if isinstance(text, str) else ""
        with self.lock:
            room = self.rooms.get(token)
            bot = None
            if room is not None:
                for bot_id in sorted(room.bots):
                    candidate = self.bots.get(bot_id)
                    if candidate is None or not candidate.features & 2 or candidate.state == 0:
                        continue
                    if hmac.compare_digest(sig, signature(candidate.secret, random, text.encode())):
                        bot = candidate
                        break
            if room is None or bot is None:
                raise HttpError(401, "")
            if not text.strip():
                raise HttpError(400, "")
            parent = self.reply_target(room, params.get("replyTo"))
            self.store(room, "bots", f"bot-{bot.url_hash}", f"{bot.name} (Bot)", text, parent,
                       str(params.get("referenceId") or ""))
            return 201, []

    # ---- occ talk:bot:* ---------------------------------------------------------------------

    def occ(self, argv: list[str]) -> tuple[int, str]:
        """The ``talk:bot:*`` commands with their real arguments. Returns (exit status, output)."""
        if not argv:
            return 1, "Command is required\n"
        cmd, args = argv[0], argv[1:]
        with self.lock:
            if cmd == "talk:bot:install":
                return self.occ_install(args)
            if cmd == "talk:bot:list":
                return self.occ_list(args)
            if cmd == "talk:bot:uninstall":
                return self.occ_uninstall(args)
            if cmd == "talk:bot:setup":
                return self.occ_setup(args)
            if cmd == "talk:bot:remove":
                return self.occ_remove(args)
            if cmd == "app:list":
                return 0, json.dumps({"enabled": {"spreed": "21.1.3"}, "disabled": {}}) + "\n"
        return 1, f'Command "{cmd}" is not defined.\n'

    @staticmethod
    def split(args: list[str]) -> tuple[list[str], dict[str, list[str]]]:
        positional, options = [], {}
        i = 0
        while i < len(args):
            a = args[i]
            if a in ("-f", "--feature"):
                options.setdefault("feature", []).append(args[i + 1] if i + 1 < len(args) else "")
                i += 2
                continue
            if a.startswith("--feature="):
                options.setdefault("feature", []).append(a.split("=", 1)[1])
            elif a.startswith("--output="):
                options["output"] = [a.split("=", 1)[1]]
            elif a == "--no-setup":
                options["no-setup"] = []
            elif a.startswith("-"):
                raise ValueError(f'The "{a}" option does not exist.')
            else:
                positional.append(a)
            i += 1
        return positional, options

    def occ_install(self, args: list[str]) -> tuple[int, str]:
        try:
            pos, opts = self.split(args)
        except ValueError as e:
            return 1, f"{e}\n"
        if len(pos) not in (3, 4):
            return 1, "Not enough arguments (missing: name, secret, url).\n"
        name, secret, url = pos[:3]
        description = pos[3] if len(pos) == 4 else ""
        if not 1 <= len(name) <= 64:
            return 1, "The provided name is too short or too long (min. 1 char, max. 64 chars)\n"
        if not 40 <= len(secret) <= 128:
            return 1, "The provided secret is too short (min. 40 chars, max. 128 chars)\n"
        if not url.startswith(("http://", "https://")) or len(url) > 4000:
            return 1, "The provided URL is not a valid URL\n"
        features = 0
        for label in (f for value in opts.get("feature", ["webhook", "response"]) for f in value.split(",")):
            if label == "none":
                continue
            if label not in BOT_FEATURES:
                return 1, f"Unknown feature {label}\n"
            features |= BOT_FEATURES[label]
        if any(b.url_hash == hashlib.sha1(url.encode()).hexdigest() for b in self.bots.values()):
            # The url_hash column is unique: one bot per URL.
            return 1, "OCP\\DB\\Exception: An exception occurred while executing a query: UNIQUE constraint failed: oc_talk_bots_server.url_hash\n"
        bot = Bot(self.next_bot, name, secret, url, description, features, 2 if "no-setup" in opts else 1)
        self.bots[bot.id] = bot
        self.next_bot += 1
        return 0, "Bot installed\n"

    def occ_list(self, args: list[str]) -> tuple[int, str]:
        try:
            _, opts = self.split(args)
        except ValueError as e:
            return 1, f"{e}\n"
        rows = [{"id": b.id, "name": b.name, "description": b.description, "url": b.url,
                 "url_hash": b.url_hash, "state": b.state, "features": b.feature_labels(),
                 "error_count": 0, "last_error_date": None, "last_error_message": None}
                for b in sorted(self.bots.values(), key=lambda b: b.id)]
        if opts.get("output", ["plain"])[0] in ("json", "json_pretty"):
            return 0, json.dumps(rows) + "\n"
        return 0, "".join(f"  - {r['id']}: {r['name']} ({r['url']})\n" for r in rows)

    def occ_uninstall(self, args: list[str]) -> tuple[int, str]:
        if len(args) != 1 or not args[0].isdigit() or int(args[0]) not in self.bots:
            return 1, "Bot not found\n"
        bot_id = int(args[0])
        for room in self.rooms.values():
            room.bots.discard(bot_id)
        del self.bots[bot_id]
        return 0, "Bot uninstalled\n"

    def occ_setup(self, args: list[str]) -> tuple[int, str]:
        if len(args) < 2 or not args[0].isdigit() or int(args[0]) not in self.bots:
            return 1, "Bot could not be found by id\n"
        bot = self.bots[int(args[0])]
        for token in args[1:]:
            room = self.rooms.get(token)
            if room is None:
                return 1, f"Conversation {token} not found\n"
            self.enable(room, bot)
        return 0, "Successfully set up for conversation(s)\n"

    def occ_remove(self, args: list[str]) -> tuple[int, str]:
        if len(args) < 2 or not args[0].isdigit() or int(args[0]) not in self.bots:
            return 1, "Bot could not be found by id\n"
        bot = self.bots[int(args[0])]
        for token in args[1:]:
            room = self.rooms.get(token)
            if room is not None:
                self.disable(room, bot)
        return 0, "Successfully removed from conversation(s)\n"
