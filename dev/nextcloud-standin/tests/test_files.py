"""Files: ids across MOVE/COPY, etags, Depth, other users' trees, persistence across restart."""

import re

from conftest import Standin


def test_ids_stable_across_move_and_rename(standin):
    assert standin.mkcol("alice", "a").status_code == 201
    assert standin.put("alice", "a/doc.txt", "one").status_code == 201
    folder_id, file_id = standin.fileid("alice", "a"), standin.fileid("alice", "a/doc.txt")
    assert standin.mkcol("alice", "b").status_code == 201
    r = standin.req("MOVE", standin.dav("alice", "a"), "alice", headers={"Destination": standin.dav("alice", "b/a2")})
    assert r.status_code == 201
    assert standin.fileid("alice", "b/a2") == folder_id
    assert standin.fileid("alice", "b/a2/doc.txt") == file_id
    r = standin.req("MOVE", standin.dav("alice", "b/a2/doc.txt"), "alice",
                    headers={"Destination": standin.dav("alice", "renamed.txt")})
    assert r.status_code == 201 and standin.fileid("alice", "renamed.txt") == file_id
    assert standin.req("GET", standin.dav("alice", "b/a2/doc.txt"), "alice").status_code == 404


def test_copy_gets_a_new_id_and_overwrite_keeps_no_stale_id(standin):
    standin.put("alice", "src.txt", "x")
    src = standin.fileid("alice", "src.txt")
    r = standin.req("COPY", standin.dav("alice", "src.txt"), "alice", headers={"Destination": standin.dav("alice", "dst.txt")})
    assert r.status_code == 201
    assert standin.fileid("alice", "dst.txt") not in (src, None)
    standin.put("alice", "other.txt", "y")
    other = standin.fileid("alice", "other.txt")
    r = standin.req("MOVE", standin.dav("alice", "other.txt"), "alice", headers={"Destination": standin.dav("alice", "src.txt")})
    assert r.status_code == 204
    assert standin.fileid("alice", "src.txt") == other


def test_etag_changes_with_content(standin):
    standin.put("alice", "e.txt", "v1")
    def etag():
        return re.search(r"<getetag>([^<]+)</getetag>|<d:getetag>([^<]+)</d:getetag>", standin.propfind("alice", "e.txt").text)
    first = etag().group(0)
    get = standin.req("GET", standin.dav("alice", "e.txt"), "alice")
    assert get.headers["ETag"] in first  # PROPFIND carries the same quoted etag as the header
    standin.put("alice", "e.txt", "v2 longer")
    assert etag().group(0) != first


def test_depth_handling(standin):
    standin.mkcol("alice", "d")
    standin.mkcol("alice", "d/inner")
    standin.put("alice", "d/inner/deep.txt", "z")
    hrefs = lambda r: re.findall(r"<(?:d:)?href>([^<]+)<", r.text)  # noqa: E731
    assert hrefs(standin.propfind("alice", "d", depth="0")) == ["/remote.php/dav/files/alice/d/"]
    one = hrefs(standin.propfind("alice", "d", depth="1"))
    assert "/remote.php/dav/files/alice/d/inner/" in one and not any("deep.txt" in h for h in one)
    # Nextcloud serves Depth: infinity (and a missing Depth) as Depth: 1
    assert hrefs(standin.propfind("alice", "d", depth="infinity")) == one


def test_other_users_tree(standin):
    standin.put("alice", "mine.txt", "x")
    as_bob = lambda m, p, **kw: standin.req(m, standin.dav("alice", p), "bob", **kw)  # noqa: E731
    assert as_bob("GET", "mine.txt").status_code == 404
    assert as_bob("PUT", "evil.txt", data="x").status_code == 403
    assert as_bob("MKCOL", "evil").status_code == 404
    assert as_bob("DELETE", "mine.txt").status_code == 404
    assert as_bob("MOVE", "mine.txt", headers={"Destination": standin.dav("bob", "stolen.txt")}).status_code == 404
    r = as_bob("PROPFIND", "", headers={"Depth": "1"})
    assert r.status_code == 207 and "mine.txt" not in r.text
    # alice cannot move or copy her own file into bob's tree
    r = standin.req("COPY", standin.dav("alice", "mine.txt"), "alice", headers={"Destination": standin.dav("bob", "gift.txt")})
    assert r.status_code == 403
    assert standin.req("GET", standin.dav("bob", "gift.txt"), "bob").status_code == 404


def test_bad_paths_are_refused(standin):
    r = standin.req("GET", standin.url + "/remote.php/dav/files/alice/../bob/x", "alice")
    assert r.status_code in (400, 403, 404)


def test_state_survives_restart(tmp_path):
    s = Standin(tmp_path / "state")
    s.put("alice", "keep.txt", "kept")
    fid = s.fileid("alice", "keep.txt")
    s.mkcol("alice", "shared")
    s.share("alice", "/shared", "bob", permissions=1)
    board = s.req("POST", f"{s.url}/index.php/apps/deck/api/v1.0/boards", "alice", json={"title": "B", "color": "00ff00"}).json()
    assert s.stop() == 0  # SIGTERM is a clean exit
    s2 = Standin(tmp_path / "state", passwords=s.passwords)
    try:
        assert s2.req("GET", s2.dav("alice", "keep.txt"), "alice").text == "kept"
        assert s2.fileid("alice", "keep.txt") == fid
        assert s2.req("PROPFIND", s2.dav("bob", "shared"), "bob", headers={"Depth": "0"}).status_code == 207
        r = s2.req("GET", f"{s2.url}/index.php/apps/deck/api/v1.0/boards/{board['id']}", "alice")
        assert r.status_code == 200 and r.json()["title"] == "B"
    finally:
        s2.stop()


def test_folder_etags_change_when_something_below_changes(standin):
    standin.mkcol("alice", "p")
    standin.mkcol("alice", "p/q")
    standin.put("alice", "p/q/f.txt", "1")
    def etag(path):
        return re.search(r"<(?:d:)?getetag>([^<]+)<", standin.propfind("alice", path).text).group(1)
    before = {p: etag(p) for p in ("", "p", "p/q")}
    standin.put("alice", "p/q/f.txt", "2")
    after = {p: etag(p) for p in ("", "p", "p/q")}
    assert all(before[p] != after[p] for p in before), (before, after)
    # a change in a shared folder shows in the owner's folder etags too
    standin.share("alice", "/p", "bob")
    before = etag("p")
    assert standin.put("bob", "p/q/from-bob.txt", "b").status_code == 201
    assert etag("p") != before


def test_a_put_answers_the_etag_of_what_it_wrote(standin):
    """Nextcloud's PUT answers the new version's ETag, the one PROPFIND reports next (a client
    compares the two to know its write is what the server holds)."""
    import re
    for content in ("first", "second, longer", "third"):
        r = standin.put("alice", "versioned.txt", content)
        assert r.status_code in (201, 204) and r.headers.get("ETag")
        held = re.search(r"getetag>([^<]+)</(?:d:)?getetag>", standin.propfind("alice", "versioned.txt").text)
        assert held and held.group(1) == r.headers["ETag"], (r.headers["ETag"], held)
