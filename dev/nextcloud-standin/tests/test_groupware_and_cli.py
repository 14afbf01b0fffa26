"""Radicale behind Nextcloud's URLs, and the command line's refusals."""

import subprocess

from conftest import RUN

VCARD = "BEGIN:VCARD\r\nVERSION:3.0\r\nUID:x-1\r\nFN:Eve Example\r\nN:Example;Eve;;;\r\nEND:VCARD\r\n"


def test_every_user_starts_with_personal_and_contacts(standin):
    for uid in ("alice", "bob"):
        r = standin.req("PROPFIND", f"{standin.url}/remote.php/dav/calendars/{uid}/", uid, headers={"Depth": "1"})
        assert r.status_code == 207 and f"/remote.php/dav/calendars/{uid}/personal/" in r.text
        r = standin.req("PROPFIND", f"{standin.url}/remote.php/dav/addressbooks/users/{uid}/", uid, headers={"Depth": "1"})
        assert r.status_code == 207 and f"/remote.php/dav/addressbooks/users/{uid}/contacts/" in r.text


def test_other_users_collections_are_404_for_every_method(standin):
    book = f"{standin.url}/remote.php/dav/addressbooks/users/alice/contacts/"
    headers = {"Content-Type": "text/vcard"}
    assert standin.req("PUT", book + "x-1.vcf", "alice", data=VCARD, headers=headers).status_code == 201
    assert standin.req("PUT", book + "evil.vcf", "bob", data=VCARD.replace("x-1", "x-2"), headers=headers).status_code == 404
    assert standin.req("DELETE", book + "x-1.vcf", "bob").status_code == 404
    assert standin.req("MKCOL", f"{standin.url}/remote.php/dav/calendars/alice/new/", "bob").status_code == 404
    assert standin.req("GET", book + "x-1.vcf", "alice").text.count("Eve Example") == 1
    assert standin.req("DELETE", book + "x-1.vcf", "alice").status_code == 204


def test_chunked_uploads_reach_radicale(standin):
    card = VCARD.replace("x-1", "chunky").encode()
    body = (card[i:i + 16] for i in range(0, len(card), 16))  # a generator: sent chunked
    url = f"{standin.url}/remote.php/dav/addressbooks/users/bob/contacts/chunky.vcf"
    r = standin.req("PUT", url, "bob", data=body, headers={"Content-Type": "text/vcard"})
    assert r.status_code == 201
    assert "Eve Example" in standin.req("GET", url, "bob").text


def run_cli(*args):
    return subprocess.run([str(RUN), *args], capture_output=True, text=True, timeout=30)


def test_cli_refuses_bad_arguments_clearly(tmp_path):
    state = str(tmp_path / "s")
    cases = [
        (["--state", state, "--bind", "127.0.0.1:0"], "at least one --user"),
        (["--state", state, "--bind", "nowhere", "--user", "a:b"], "--bind wants HOST:PORT"),
        (["--state", state, "--bind", "127.0.0.1:0", "--user", "alice"], "UID:APP_PASSWORD"),
        (["--state", state, "--bind", "127.0.0.1:0", "--user", "a:same", "--user", "b:same"], "also another user's"),
        (["--state", state, "--bind", "127.0.0.1:0", "--user", "a:x", "--webhook-url", "http://h/"], "go together"),
        (["--state", state, "--bind", "127.0.0.1:0", "--user", "a:x", "--without-user-oidc",
          "--oidc-provider-bearer-validation"], "user_oidc setting"),
    ]
    for args, message in cases:
        r = run_cli(*args)
        assert r.returncode == 2, (args, r.stderr)
        assert message in r.stderr, (args, r.stderr)
        assert r.stdout == ""
    assert not (tmp_path / "s").exists()  # a refused start changes nothing


def test_principal_discovery_leads_to_the_callers_homes(standin):
    r = standin.req("PROPFIND", f"{standin.url}/remote.php/dav/", "alice", headers={"Depth": "0"})
    assert r.status_code == 207
    assert "<d:href>/remote.php/dav/principals/users/alice/</d:href>" in r.text
    r = standin.req("PROPFIND", f"{standin.url}/remote.php/dav/principals/users/alice/", "alice", headers={"Depth": "0"})
    assert r.status_code == 207
    assert "/remote.php/dav/calendars/alice/" in r.text and "/remote.php/dav/addressbooks/users/alice/" in r.text
    # Another user's principal is not found, and nothing of theirs leaks.
    r = standin.req("PROPFIND", f"{standin.url}/remote.php/dav/principals/users/alice/", "bob", headers={"Depth": "0"})
    assert r.status_code == 404 and "calendars/alice" not in r.text
    assert standin.req("DELETE", f"{standin.url}/remote.php/dav/", "alice").status_code == 405


def test_lost_writes_are_answered_as_stored_and_leave_nothing(standin):
    """The lose_writes fault: success answers (with an ETag) for files and calendar objects, and a
    read afterwards shows that nothing was written."""
    faults = f"{standin.url}/standin/faults"
    event = f"{standin.url}/remote.php/dav/calendars/alice/personal/lost.ics"
    ics = ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//t//EN\r\nBEGIN:VEVENT\r\nUID:lost\r\n"
           "DTSTAMP:20260101T000000Z\r\nDTSTART:20260101T100000Z\r\nDTEND:20260101T110000Z\r\n"
           "SUMMARY:Lost\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n")
    assert standin.put("alice", "kept.txt", "kept").status_code == 201
    assert standin.req("POST", faults, json={"lose_writes": True}).status_code == 200
    try:
        r = standin.put("alice", "lost.txt", "gone")
        assert r.status_code == 201 and r.headers.get("ETag")
        assert standin.put("alice", "kept.txt", "changed").status_code == 204
        r = standin.req("MOVE", standin.dav("alice", "kept.txt"), "alice",
                        headers={"Destination": standin.dav("alice", "moved.txt")})
        assert r.status_code == 201
        r = standin.req("PUT", event, "alice", data=ics, headers={"Content-Type": "text/calendar", "If-None-Match": "*"})
        assert r.status_code == 201 and r.headers.get("ETag")
    finally:
        assert standin.req("POST", faults, json={"lose_writes": False}).json() == {"lose_writes": False}
    assert standin.req("GET", standin.dav("alice", "lost.txt"), "alice").status_code == 404
    assert standin.req("GET", standin.dav("alice", "kept.txt"), "alice").text == "kept"
    assert standin.req("GET", standin.dav("alice", "moved.txt"), "alice").status_code == 404
    assert standin.req("GET", event, "alice").status_code == 404
