"""The SMTP sink: a real SMTP server (aiosmtpd) that keeps every message it receives.

Owns: listening on a loopback port, accepting any envelope, and delivering each message into a
Maildir (``<state>/smtp-sink``) with the SMTP envelope recorded in two headers prepended at the
top, as a delivering MTA records ``Return-Path``/``Delivered-To``:
``X-Sink-Mail-From`` (MAIL FROM) and ``X-Sink-Rcpt-To`` (every RCPT TO, comma-separated; this
is where Bcc recipients show, since a sent message carries no Bcc header). Also reading the
sink back as JSON for tests (``GET /standin/smtp-sink``).

Three scripted rules make failures testable (the stand-in is the one place for them):
- a recipient at ``refused.example.net`` is refused with 550 at RCPT TO, as a real server
  refuses an unknown mailbox; the whole message is then not accepted;
- a message for ``unclear.example.net`` is delivered, and then DATA is answered 451 as if the
  server's answer had been lost: the sender cannot know that it went out;
- a message for ``slow.example.net`` is delivered and acknowledged only after
  ``SLOW_DATA_SECONDS``, so a caller's timeout fires after the mail went out.

Must never: relay anything anywhere (it is a sink), or listen on anything but the address it
was given (loopback by default).
"""

from __future__ import annotations

import asyncio
import email
import email.policy
import logging
import mailbox
import threading
from pathlib import Path

from aiosmtpd.controller import Controller

log = logging.getLogger("standin.smtp")
logging.getLogger("mail.log").setLevel(logging.WARNING)  # aiosmtpd logs every connection at INFO


REFUSED_DOMAIN = "refused.example.net"
UNCLEAR_DOMAIN = "unclear.example.net"
SLOW_DOMAIN = "slow.example.net"
SLOW_DATA_SECONDS = 8


def _for_domain(envelope, domain: str) -> bool:
    return any(r.lower().endswith("@" + domain) for r in envelope.rcpt_tos)


class _Deliver:
    """aiosmtpd handler: every DATA goes into the Maildir."""

    def __init__(self, box: mailbox.Maildir) -> None:
        self.box = box
        self.lock = threading.Lock()

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):  # noqa: N802
        if address.lower().endswith("@" + REFUSED_DOMAIN):
            return "550 5.1.1 No such mailbox here"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 - aiosmtpd's hook name
        data = envelope.original_content or envelope.content
        if isinstance(data, str):
            data = data.encode("utf-8")
        head = (f"X-Sink-Mail-From: {envelope.mail_from}\r\n"
                f"X-Sink-Rcpt-To: {', '.join(envelope.rcpt_tos)}\r\n").encode()
        with self.lock:
            self.box.add(head + data)
        log.info("SMTP sink received a message from %s for %d recipient(s)", envelope.mail_from, len(envelope.rcpt_tos))
        if _for_domain(envelope, UNCLEAR_DOMAIN):
            return "451 4.4.2 Connection to the next hop lost after the message was received"
        if _for_domain(envelope, SLOW_DOMAIN):
            await asyncio.sleep(SLOW_DATA_SECONDS)
        return "250 Message accepted for delivery"


class _Controller(Controller):
    def _trigger_server(self):  # learn the port the OS picked for port 0 before the self-check connects
        if self.server is not None and self.port == 0:
            self.port = self.server.sockets[0].getsockname()[1]
        super()._trigger_server()


class SmtpSink:
    def __init__(self, maildir: Path, host: str, port: int) -> None:
        self.maildir = maildir
        self.box = mailbox.Maildir(maildir, create=True)
        self._controller = _Controller(_Deliver(self.box), hostname=host, port=port, ready_timeout=10)
        self.host = host
        self.port = port

    def start(self) -> None:
        self._controller.start()
        self.port = self._controller.port
        log.info("SMTP sink listening on %s:%d, delivering into %s", self.host, self.port, self.maildir)

    def stop(self) -> None:
        self._controller.stop()

    def messages(self) -> list[dict[str, object]]:
        """Everything received, oldest first, parsed: envelope, the headers that matter, the
        text body and the raw message (for a test that wants to look closer)."""
        out = []
        for path in sorted((self.maildir / "new").iterdir(), key=lambda p: (p.stat().st_mtime_ns, p.name)):
            raw = path.read_bytes()
            msg = email.message_from_bytes(raw, policy=email.policy.default)
            body = msg.get_body(preferencelist=("plain",))
            out.append({
                "mail_from": str(msg["X-Sink-Mail-From"] or ""),
                "rcpt_to": [a.strip() for a in str(msg["X-Sink-Rcpt-To"] or "").split(",") if a.strip()],
                "from": str(msg["From"] or ""), "to": str(msg["To"] or ""), "cc": str(msg["Cc"] or ""),
                "bcc": str(msg["Bcc"] or ""), "subject": str(msg["Subject"] or ""),
                "message_id": str(msg["Message-ID"] or ""), "in_reply_to": str(msg["In-Reply-To"] or ""),
                "content_type": msg.get_content_type(),
                # line endings as text has them (SMTP carries CRLF); MIME ends a body with a newline
                "body": body.get_content().replace("\r\n", "\n") if body is not None else "",
                "raw": raw.decode("utf-8", "replace"),
            })
        return out
