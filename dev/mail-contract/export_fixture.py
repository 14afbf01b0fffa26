"""Writes the stand-in's fixture mail as the JSON state of the PHP bridge's fake Mail backend.

One source of truth for the mail both implementations hold: dev/nextcloud-standin/standin/
mail_fixture.py. The ids are the ones a fresh stand-in gives (users in the order given; per user
its mailboxes INBOX, Sent, Drafts, then its messages in fixture order), so the shared contract
suite asks both the same questions about the same ids.

    python export_fixture.py OUT.json [uid ...]     (default users: alice bob)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "nextcloud-standin"))

from standin import mail_fixture  # noqa: E402
from standin.mail import FOLDERS, addresses, attachments, sent_at  # noqa: E402


def part(msg, subtype: str) -> str | None:
    found = msg.get_body(preferencelist=(subtype,))
    return found.get_content() if found is not None else None


def export(uids: list[str]) -> dict:
    state: dict = {"accounts": [], "mailboxes": [], "messages": [], "sent": []}
    mailbox_id = message_id = 0
    for account_id, uid in enumerate(uids, start=1):
        state["accounts"].append({"id": account_id, "uid": uid, "name": mail_fixture.display(uid),
                                  "email": mail_fixture.address(uid)})
        ids = {}
        for name, special in FOLDERS.items():
            mailbox_id += 1
            ids[name] = mailbox_id
            state["mailboxes"].append({"id": mailbox_id, "account_id": account_id, "name": name, "special_use": special})
        for folder, messages in mail_fixture.folders_for(uid).items():
            for msg, seen in messages:
                message_id += 1
                state["messages"].append({
                    "id": message_id, "uid": message_id, "mailbox_id": ids[folder],
                    "message_id": str(msg["Message-ID"]), "subject": str(msg["Subject"]),
                    "sent_at": int(sent_at(msg).timestamp()), "seen": seen,
                    "from": addresses(msg["From"]), "to": addresses(msg["To"]), "cc": addresses(msg["Cc"]),
                    "plain": part(msg, "plain") or "", "html": part(msg, "html"),
                    "attachments": [{"fileName": a["name"], "mime": a["mime_type"], "size": a["size"]}
                                    for a in attachments(msg)],
                    "answered": False, "in_reply_to": str(msg["In-Reply-To"]) if msg["In-Reply-To"] else None,
                })
    state["next_message_id"] = message_id + 1
    return state


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    Path(argv[0]).write_text(json.dumps(export(argv[1:] or ["alice", "bob"]), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
