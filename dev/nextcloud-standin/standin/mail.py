"""The tamebi app's mail bridge, as the stand-in serves it: ``/ocs/v2.php/apps/tamebi/api/v1/mail``.

The real bridge lives in ``nextcloud-app/`` and calls Nextcloud Mail's PHP contracts; this is its
stand-in twin, backed by a real mail store: one Maildir per user under ``<state>/mail/<uid>``
(folders INBOX, Sent, Drafts) read and written with Python's ``mailbox`` module, and sends that
go over SMTP (``smtplib``) to the stand-in's SMTP sink. ``docs/mail-bridge-api.md`` is the
contract; ``dev/mail-contract`` checks this module and the PHP bridge against the same tests.

Owns: the routes, their validation and their JSON, Nextcloud Mail's integer ids for accounts,
mailboxes and messages (kept in ``standin.db``), and the "Mail is not installed" switch (501).

Must never: touch a mailbox that is not the caller's (every id is resolved to its owner and a
foreign one answers 404 exactly like an unknown one), or send anywhere but the configured SMTP
sink. The uid comes from the router's authentication, never from the request.
"""

from __future__ import annotations

import email
import email.parser
import email.policy
import json
import logging
import mailbox
import re
import shutil
import smtplib
import threading
from datetime import datetime, timedelta, timezone
from email.message import EmailMessage
from email.utils import format_datetime, getaddresses, make_msgid, parsedate_to_datetime
from pathlib import Path

from . import mail_fixture
from .store import Store
from .web import HttpError, Request

PREFIX = "apps/tamebi/api/v1/mail"
FOLDERS = {"INBOX": [], "Sent": ["sent"], "Drafts": ["drafts"]}  # name -> Mail's special_use
DEFAULT_LIMIT, MAX_LIMIT = 20, 50
MAX_RECIPIENTS = 100
MAX_SUBJECT, MAX_BODY = 998, 100_000
UNAVAILABLE = "Mail is not set up on this Nextcloud"
SEND_UNKNOWN = ("Mail could not tell whether the message went out: it may have been sent. "
                "Check the Sent mailbox before sending it again.")
NO_SENT_MAILBOX = ("This mail account has no Sent folder set, so Mail sends nothing from it. "
                   "Choose one in Mail (account settings, Default folders), then send again. Nothing was sent.")
NO_DRAFTS_MAILBOX = ("This mail account has no Drafts folder set, so Mail saves no draft in it. "
                     "Choose one in Mail (account settings, Default folders), then try again. Nothing was saved.")
# One address, no display name: the shape the contract allows (docs/mail-bridge-api.md).
ADDRESS = re.compile(r"^[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]{1,64}@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$")
COMPOSE_FIELDS = {"account_id", "to", "cc", "bcc", "subject", "body", "in_reply_to"}

log = logging.getLogger("standin.mail")


class MailError(HttpError):
    """An error answer of the bridge: HTTP status, contract error code and message."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(status, message)
        self.code = code


class _OutcomeUnknown(Exception):
    """The SMTP transaction failed once DATA had been sent: the mail may have gone out."""


def not_found(what: str) -> MailError:
    return MailError(404, "not_found", f"{what} not found")


def invalid(message: str) -> MailError:
    return MailError(400, "invalid_request", message)


# ---- parsing a stored message ---------------------------------------------------------------

def addresses(value: object) -> list[dict[str, object]]:
    if not value:
        return []
    return [{"label": name or None, "email": addr} for name, addr in getaddresses([str(value)]) if addr]


def sent_at(msg: EmailMessage) -> datetime:
    try:
        when = parsedate_to_datetime(str(msg["Date"]))
    except (TypeError, ValueError):
        return datetime.fromtimestamp(0, timezone.utc)
    return when.astimezone(timezone.utc) if when.tzinfo else when.replace(tzinfo=timezone.utc)


def rfc3339(when: datetime) -> str:
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def attachments(msg: EmailMessage) -> list[dict[str, object]]:
    out = []
    for part in msg.iter_attachments():
        payload = part.get_payload(decode=True) or b""
        out.append({"name": part.get_filename() or "attachment", "mime_type": part.get_content_type(),
                    "size": len(payload)})
    return out


def body_of(msg: EmailMessage) -> dict[str, str]:
    """The HTML part if there is one (as Nextcloud Mail prefers it), else the text part, as the
    sender wrote it (the bridge converts nothing: mcp-mail turns HTML into text)."""
    part = msg.get_body(preferencelist=("html", "plain"))
    if part is None:
        return {"format": "text", "content": ""}
    fmt = "html" if part.get_content_subtype() == "html" else "text"
    return {"format": fmt, "content": part.get_content()}


# ---- query parameters and bodies ------------------------------------------------------------

def _limit(raw: str | None) -> int:
    if raw is None:
        return DEFAULT_LIMIT
    if not re.fullmatch(r"[0-9]{1,4}", raw) or not 1 <= int(raw) <= MAX_LIMIT:
        raise invalid(f"limit must be an integer between 1 and {MAX_LIMIT}")
    return int(raw)


def _when(raw: str | None, name: str, end_of_day: bool) -> datetime | None:
    """An RFC 3339 date-time, or a full date (since: its start; until: the end of that day)."""
    if raw is None:
        return None
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", raw):
        try:
            day = datetime.strptime(raw, "%Y-%m-%d").replace(tzinfo=timezone.utc)
        except ValueError:
            raise invalid(f"{name} is not a valid date") from None
        return day + timedelta(days=1) if end_of_day else day
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})", raw):
        raise invalid(f"{name} must be an RFC 3339 date-time (2026-11-24T09:00:00Z) or a date (2026-11-24)")
    try:
        return datetime.fromisoformat(raw.replace("z", "Z").replace("Z", "+00:00").replace("t", "T"))
    except ValueError:
        raise invalid(f"{name} is not a valid date-time") from None


def _unread(raw: str | None) -> bool | None:
    if raw is None:
        return None
    if raw not in ("true", "false"):
        raise invalid("unread must be true or false")
    return raw == "true"


def _word(raw: str | None, name: str) -> str:
    """from/to: one word (part of a name or an address), as Mail's filter syntax takes it."""
    if raw is None:
        return ""
    if len(raw) > 254 or any(c.isspace() for c in raw) or ":" in raw:
        raise invalid(f"{name} must be one word (part of a name or address): no spaces, no ':'")
    return raw.lower()


def _int_id(raw: str | None, name: str) -> int | None:
    if raw is None:
        return None
    if not re.fullmatch(r"[0-9]{1,18}", raw):
        raise invalid(f"{name} must be an integer")
    return int(raw)


def compose_body(req: Request) -> dict[str, object]:
    """The JSON body of /send and /drafts, checked field by field (unknown fields are refused)."""
    ctype = (req.header("Content-Type") or "").split(";")[0].strip().lower()
    if ctype != "application/json":
        raise invalid("the body must be JSON (Content-Type: application/json)")
    try:
        data = json.loads(req.body() or b"null")
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise invalid("the body is not valid JSON") from None
    if not isinstance(data, dict):
        raise invalid("the body must be a JSON object")
    unknown = sorted(set(data) - COMPOSE_FIELDS)
    if unknown:
        raise invalid(f"unknown field(s): {', '.join(unknown)}")
    account = data.get("account_id")
    if not isinstance(account, int) or isinstance(account, bool):
        raise invalid("account_id must be an integer")
    lists = {}
    for name in ("to", "cc", "bcc"):
        value = data.get(name, [])
        if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
            raise invalid(f"{name} must be a list of email addresses")
        for a in value:
            if len(a) > 254 or not ADDRESS.fullmatch(a):
                raise invalid(f"{name}: {a!r} is not a valid email address (plain address@domain, no name)")
        lists[name] = value
    if sum(len(v) for v in lists.values()) > MAX_RECIPIENTS:
        raise invalid(f"at most {MAX_RECIPIENTS} recipients")
    subject, body = data.get("subject"), data.get("body")
    if not isinstance(subject, str):
        raise invalid("subject must be a string")
    if len(subject) > MAX_SUBJECT or "\r" in subject or "\n" in subject:
        raise invalid(f"subject must be one line of at most {MAX_SUBJECT} characters")
    if not isinstance(body, str):
        raise invalid("body must be a string")
    if len(body) > MAX_BODY:
        raise invalid(f"body must be at most {MAX_BODY} characters")
    reply = data.get("in_reply_to")
    if reply is not None and (not isinstance(reply, int) or isinstance(reply, bool)):
        raise invalid("in_reply_to must be a message id (integer) or null")
    return {"account_id": account, **lists, "subject": subject, "body": body, "in_reply_to": reply}


# ---- the store ------------------------------------------------------------------------------

class MailStore:
    """Maildirs plus Mail's ids. One lock serialises writes (Maildir adds and flag changes)."""

    def __init__(self, root: Path, store: Store) -> None:
        self.root = root
        self.ids = store
        self._lock = threading.Lock()

    def ensure_user(self, uid: str) -> None:
        """Creates uid's store with its fixture the first time; a later start keeps what is there."""
        self.ids.mail_account_id(uid)
        home = self.root / uid
        if home.exists():
            return
        tmp = self.root / f".{uid}.creating"
        if tmp.exists():
            shutil.rmtree(tmp)  # the leftover of a start that died while seeding
        box = mailbox.Maildir(tmp, create=True)
        added: list[tuple[str, str]] = []
        for folder, messages in mail_fixture.folders_for(uid).items():
            target = box if folder == "INBOX" else box.add_folder(folder)
            for msg, seen in messages:
                m = mailbox.MaildirMessage(msg)
                if seen:
                    m.set_subdir("cur")
                    m.add_flag("S")
                added.append((folder, target.add(m)))
        tmp.rename(home)  # all or nothing: a crash mid-seed leaves no half store
        for folder in FOLDERS:
            self.mailbox_id(uid, folder)
        for folder, key in added:  # ids in fixture order, so they are the same on every fresh start
            self.ids.mail_message_id(self.mailbox_id(uid, folder), key)

    def folder(self, uid: str, name: str) -> mailbox.Maildir:
        box = mailbox.Maildir(self.root / uid, create=False)
        return box if name == "INBOX" else box.get_folder(name)

    def account(self, uid: str) -> int:
        return self.ids.mail_account_id(uid)

    def mailbox_id(self, uid: str, name: str) -> int:
        return self.ids.mail_mailbox_id(self.account(uid), name)

    def message_ids(self, uid: str, name: str) -> list[tuple[int, str]]:
        box = self.folder(uid, name)
        mailbox_id = self.mailbox_id(uid, name)
        keys = sorted(box.keys())
        return [(self.ids.mail_message_id(mailbox_id, k), k) for k in keys]

    def own_mailbox(self, uid: str, mailbox_id: int) -> str:
        found = self.ids.mail_mailbox(mailbox_id)
        if found is None or found[0] != uid:
            raise not_found("mailbox")
        return found[2]

    def own_message(self, uid: str, message_id: int) -> tuple[int, str, str]:
        """(mailbox id, folder name, Maildir key) of the caller's own message; else 404."""
        found = self.ids.mail_message(message_id)
        if found is None:
            raise not_found("message")
        mailbox_id, key = found
        owner = self.ids.mail_mailbox(mailbox_id)
        if owner is None or owner[0] != uid:
            raise not_found("message")
        try:
            self.folder(uid, owner[2]).get_file(key).close()
        except KeyError:
            raise not_found("message") from None
        return mailbox_id, owner[2], key

    def load(self, uid: str, folder: str, key: str) -> tuple[EmailMessage, str]:
        """The parsed message and its Maildir flags (``S`` seen, ``R`` replied = IMAP \\Answered)."""
        box = self.folder(uid, folder)
        with box.get_file(key) as f:
            parsed = email.message_from_binary_file(f, policy=email.policy.default)
        return parsed, box.get_message(key).get_flags()  # type: ignore[return-value]

    def flag_replied(self, uid: str, message_id: str) -> None:
        """What Mail's FlagRepliedMessageHandler does: every copy of the replied-to mail gets
        \\Answered, except in Sent and Drafts."""
        for folder, special in FOLDERS.items():
            if special:
                continue
            box = self.folder(uid, folder)
            with self._lock:
                for key in box.keys():
                    with box.get_file(key) as f:
                        headers = email.parser.BytesHeaderParser(policy=email.policy.default).parse(f)
                    if str(headers["Message-ID"] or "").strip() == message_id:
                        m = box.get_message(key)
                        m.add_flag("R")
                        box[key] = m

    def add(self, uid: str, folder: str, msg: EmailMessage, flags: str) -> int:
        m = mailbox.MaildirMessage(msg)
        m.set_subdir("cur")
        m.set_flags(flags)
        with self._lock:
            key = self.folder(uid, folder).add(m)
        return self.ids.mail_message_id(self.mailbox_id(uid, folder), key)


# ---- the routes -----------------------------------------------------------------------------

class Mail:
    def __init__(self, store: MailStore, available: bool, smtp: tuple[str, int] | None) -> None:
        self.store = store
        self.available = available
        self.smtp = smtp
        # Users whose account has no Sent mailbox set in Mail (POST /standin/mail/sent-mailbox):
        # their "Sent" folder loses its special use and Mail's send chain refuses to send.
        self.without_sent: set[str] = set()
        # The same for the Drafts mailbox (POST /standin/mail/drafts-mailbox): Mail saves no draft.
        self.without_drafts: set[str] = set()

    def set_sent_mailbox(self, uid: str, present: bool) -> None:
        (self.without_sent.discard if present else self.without_sent.add)(uid)

    def set_drafts_mailbox(self, uid: str, present: bool) -> None:
        (self.without_drafts.discard if present else self.without_drafts.add)(uid)

    def route(self, req: Request, uid: str, rest: str) -> tuple[int, object]:
        """``rest`` is the path below ``apps/tamebi/api/v1/mail``; returns (status, data)."""
        parts = [p for p in rest.split("/") if p]
        if not self.available:
            raise MailError(501, "mail_unavailable", UNAVAILABLE)
        m = req.method
        if parts == ["accounts"] and m == "GET":
            return 200, {"accounts": [self.account_json(uid)]}
        if len(parts) == 3 and parts[0] == "accounts" and parts[2] == "mailboxes" and m == "GET":
            return 200, {"mailboxes": self.mailboxes(uid, parts[1])}
        if parts == ["messages"] and m == "GET":
            return 200, {"messages": self.search(uid, req.query)}
        if len(parts) == 2 and parts[0] == "messages" and m == "GET":
            return 200, self.message(uid, parts[1])
        if parts == ["send"] and m == "POST":
            return 200, self.send(uid, compose_body(req))
        if parts == ["drafts"] and m == "POST":
            return 200, self.draft(uid, compose_body(req))
        known = parts in (["accounts"], ["messages"], ["send"], ["drafts"]) or (
            len(parts) == 2 and parts[0] == "messages") or (len(parts) == 3 and parts[0] == "accounts" and parts[2] == "mailboxes")
        if known:
            raise MailError(405, "method_not_allowed", f"{m} is not allowed here")
        raise MailError(404, "not_found", "no such mail route")

    # ---- reads ------------------------------------------------------------------------

    def account_json(self, uid: str) -> dict[str, object]:
        return {"id": self.store.account(uid), "name": mail_fixture.display(uid), "email": mail_fixture.address(uid)}

    def mailboxes(self, uid: str, raw_account: str) -> list[dict[str, object]]:
        if not raw_account.isdigit() or int(raw_account) != self.store.account(uid):
            raise not_found("account")
        out = []
        for name, special in FOLDERS.items():
            ids = self.store.message_ids(uid, name)
            unread = sum(1 for _, key in ids if "S" not in self.store.load(uid, name, key)[1])
            if (special == ["sent"] and uid in self.without_sent) or (special == ["drafts"] and uid in self.without_drafts):
                special = []
            out.append({"id": self.store.mailbox_id(uid, name), "account_id": self.store.account(uid), "name": name,
                        "special_use": special, "unread": unread, "total": len(ids)})
        return out

    def summary(self, uid: str, message_id: int, mailbox_id: int, msg: EmailMessage, flags: str) -> dict[str, object]:
        return {"id": message_id, "account_id": self.store.account(uid), "mailbox_id": mailbox_id,
                "subject": str(msg["Subject"] or ""), "from": addresses(msg["From"]), "to": addresses(msg["To"]),
                "date": rfc3339(sent_at(msg)), "unread": "S" not in flags, "answered": "R" in flags,
                "has_attachments": bool(attachments(msg))}

    def search(self, uid: str, q: dict[str, str]) -> list[dict[str, object]]:
        p = {k: v for k, v in q.items() if v != ""}  # an empty parameter is an absent one
        limit = _limit(p.get("limit"))
        since, until = _when(p.get("since"), "since", False), _when(p.get("until"), "until", True)
        unread = _unread(p.get("unread"))
        wanted = _int_id(p.get("mailbox_id"), "mailbox_id")
        sender, rcpt = (_word(p.get(k), k) for k in ("from", "to"))
        words = p.get("query", "").replace(":", " ").lower().split()
        folders = [self.store.own_mailbox(uid, wanted)] if wanted is not None else list(FOLDERS)
        hits = []
        for folder in folders:
            mailbox_id = self.store.mailbox_id(uid, folder)
            for message_id, key in self.store.message_ids(uid, folder):
                msg, flags = self.store.load(uid, folder, key)
                is_unread = "S" not in flags
                when = sent_at(msg)
                if unread is not None and is_unread != unread:
                    continue
                if (since and when < since) or (until and when >= until):
                    continue
                if sender and sender not in str(msg["From"] or "").lower():
                    continue
                if rcpt and rcpt not in " ".join(str(msg[h] or "") for h in ("To", "Cc")).lower():
                    continue
                if words:
                    haystack = f"{msg['Subject'] or ''}\n{body_of(msg)['content']}".lower()
                    if not all(w in haystack for w in words):
                        continue
                hits.append((when, message_id, self.summary(uid, message_id, mailbox_id, msg, flags)))
        hits.sort(key=lambda h: (h[0], h[1]), reverse=True)
        return [h[2] for h in hits[:limit]]

    def message(self, uid: str, raw_id: str) -> dict[str, object]:
        if not raw_id.isdigit():
            raise not_found("message")
        message_id = int(raw_id)
        mailbox_id, folder, key = self.store.own_message(uid, message_id)
        msg, flags = self.store.load(uid, folder, key)
        return {**self.summary(uid, message_id, mailbox_id, msg, flags), "cc": addresses(msg["Cc"]),
                "message_id": str(msg["Message-ID"]).strip() if msg["Message-ID"] else None,
                "in_reply_to": str(msg["In-Reply-To"]).strip() if msg["In-Reply-To"] else None,
                "body": body_of(msg), "attachments": attachments(msg)}

    # ---- writes -----------------------------------------------------------------------

    def build(self, uid: str, c: dict[str, object], with_bcc: bool) -> EmailMessage:
        if c["account_id"] != self.store.account(uid):
            raise not_found("account")
        msg = EmailMessage()
        msg["From"] = f"{mail_fixture.display(uid)} <{mail_fixture.address(uid)}>"
        for header, field in (("To", "to"), ("Cc", "cc")) + ((("Bcc", "bcc"),) if with_bcc else ()):
            if c[field]:
                msg[header] = ", ".join(c[field])  # type: ignore[arg-type]
        msg["Subject"] = c["subject"]
        msg["Date"] = format_datetime(datetime.now(timezone.utc))
        msg["Message-ID"] = make_msgid(domain=mail_fixture.DOMAIN)
        if c["in_reply_to"] is not None:
            _, folder, key = self.store.own_message(uid, int(c["in_reply_to"]))  # type: ignore[arg-type]
            original, _ = self.store.load(uid, folder, key)
            if original["Message-ID"]:
                msg["In-Reply-To"] = str(original["Message-ID"])
                refs = str(original["References"] or "").split()
                msg["References"] = " ".join(refs + [str(original["Message-ID"])])
        msg.set_content(str(c["body"]))
        return msg

    def send(self, uid: str, c: dict[str, object]) -> dict[str, object]:
        msg = self.build(uid, c, with_bcc=False)
        recipients = list(c["to"]) + list(c["cc"]) + list(c["bcc"])  # type: ignore[operator]
        if not recipients:
            raise invalid("a message needs at least one recipient (to, cc or bcc)")
        if uid in self.without_sent:
            # Mail's send chain (SentMailboxHandler) stops first, before SMTP: a setting to fix.
            raise MailError(409, "no_sent_mailbox", NO_SENT_MAILBOX)
        if self.smtp is None:
            raise MailError(502, "mail_backend", "no SMTP server is configured")
        try:
            with smtplib.SMTP(self.smtp[0], self.smtp[1], timeout=30) as smtp:
                smtp.ehlo()
                wire = msg.as_bytes(policy=msg.policy.clone(linesep="\r\n"))  # SMTP's line ending
                self.transfer(smtp, mail_fixture.address(uid), recipients, wire)
        except _OutcomeUnknown as e:
            log.warning("sending for %s ended unclearly: %s", uid, e.__cause__)
            raise MailError(502, "send_outcome_unknown", SEND_UNKNOWN) from None
        except (smtplib.SMTPException, OSError) as e:
            log.warning("sending for %s failed: %s", uid, e)
            # Fixed text, as the PHP bridge: the server's reply stays in the log.
            raise MailError(502, "mail_backend", "the mail server refused the message; nothing was sent") from None
        # Like Mail's send chain: a copy goes to the Sent mailbox, the replied-to mail is \Answered.
        self.store.add(uid, "Sent", msg, "S")
        if msg["In-Reply-To"]:
            self.store.flag_replied(uid, str(msg["In-Reply-To"]).strip())
        log.info("sent a message for %s to %d recipient(s)", uid, len(recipients))
        return {"status": "sent"}

    @staticmethod
    def transfer(smtp: smtplib.SMTP, sender: str, recipients: list[str], data: bytes) -> None:
        """All recipients or none: ``sendmail`` would deliver to the accepted ones and only report
        the refused; a refused RCPT here resets the transaction before DATA, so nothing goes out."""
        code, reply = smtp.mail(sender)
        if code != 250:
            raise smtplib.SMTPSenderRefused(code, reply, sender)
        for rcpt in recipients:
            code, reply = smtp.rcpt(rcpt)
            if code not in (250, 251):
                smtp.rset()
                raise smtplib.SMTPRecipientsRefused({rcpt: (code, reply)})
        # From DATA on the server may hold the message whatever it answers (or if the answer
        # never comes): like Mail, count every failure here as an unknown outcome, never as
        # "nothing was sent".
        try:
            code, reply = smtp.data(data)
        except (smtplib.SMTPException, OSError) as e:
            raise _OutcomeUnknown() from e
        if code != 250:
            raise _OutcomeUnknown() from smtplib.SMTPDataError(code, reply)

    def draft(self, uid: str, c: dict[str, object]) -> dict[str, object]:
        msg = self.build(uid, c, with_bcc=True)
        if uid in self.without_drafts:
            # Mail's saveDraft needs the account's Drafts mailbox id; without it nothing is stored.
            raise MailError(409, "no_drafts_mailbox", NO_DRAFTS_MAILBOX)
        draft_id = self.store.add(uid, "Drafts", msg, "DS")
        return {"status": "saved", "draft_id": draft_id}
