"""WebDAV SEARCH: operators, properties, scope, limits, and refusal of what is not understood."""

import re

import pytest

HEAD = ('<?xml version="1.0"?><d:searchrequest xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:basicsearch>'
        "<d:select><d:prop><d:displayname/><oc:fileid/><d:getcontenttype/><d:resourcetype/></d:prop></d:select>"
        "<d:from><d:scope><d:href>/files/{scope}</d:href><d:depth>{depth}</d:depth></d:scope></d:from>")


def q(where, scope="alice", depth="infinity", tail=""):
    return HEAD.format(scope=scope, depth=depth) + f"<d:where>{where}</d:where>{tail}</d:basicsearch></d:searchrequest>"


def prop(name, op, lit, ns="d"):
    return f"<d:{op}><d:prop><{ns}:{name}/></d:prop><d:literal>{lit}</d:literal></d:{op}>"


def search(s, uid, body):
    return s.req("SEARCH", f"{s.url}/remote.php/dav/", uid, data=body, headers={"Content-Type": "text/xml"})


def hrefs(r):
    return sorted(h.split("/files/", 1)[1] for h in re.findall(r"<(?:d:)?href>([^<]+)<", r.text))


@pytest.fixture
def tree(standin):
    standin.mkcol("alice", "docs")
    standin.put("alice", "docs/Report_2025.md", "# r")
    standin.put("alice", "docs/report-2024.txt", "r")
    standin.put("alice", "notes.txt", "n")
    standin.put("alice", "photo.png", b"\x89PNG")
    standin.mkcol("bob", "bobs")
    standin.put("bob", "bobs/bob.txt", "b")
    return standin


def test_like_is_sql_like_and_case_insensitive(tree):
    assert hrefs(search(tree, "alice", q(prop("displayname", "like", "report%")))) == \
        ["alice/docs/Report_2025.md", "alice/docs/report-2024.txt"]
    # _ is one character: 'report_2025.md' matches Report_2025.md but not report-2024.txt
    assert hrefs(search(tree, "alice", q(prop("displayname", "like", "report_202_.md")))) == ["alice/docs/Report_2025.md"]
    assert hrefs(search(tree, "alice", q(prop("displayname", "like", "%.TXT")))) == \
        ["alice/docs/report-2024.txt", "alice/notes.txt"]


def test_eq_on_fileid_and_boolean_operators(tree):
    nid, pid = tree.fileid("alice", "notes.txt"), tree.fileid("alice", "photo.png")
    r = search(tree, "alice", q(f"<d:or>{prop('fileid', 'eq', nid, 'oc')}{prop('fileid', 'eq', pid, 'oc')}</d:or>"))
    assert r.status_code == 207 and hrefs(r) == ["alice/notes.txt", "alice/photo.png"]
    r = search(tree, "alice", q(f"<d:and>{prop('displayname', 'like', '%.txt')}<d:not>{prop('fileid', 'eq', nid, 'oc')}</d:not></d:and>"))
    assert hrefs(r) == ["alice/docs/report-2024.txt"]
    # another user's id is simply not found
    bob_id = tree.fileid("bob", "bobs/bob.txt")
    assert hrefs(search(tree, "alice", q(prop("fileid", "eq", bob_id, "oc")))) == []


def test_content_type_and_collections(tree):
    assert hrefs(search(tree, "alice", q(prop("getcontenttype", "eq", "image/png")))) == ["alice/photo.png"]
    assert hrefs(search(tree, "alice", q(prop("getcontenttype", "like", "httpd/unix-directory")))) == ["alice/docs/"]
    assert hrefs(search(tree, "alice", q("<d:is-collection/>"))) == ["alice/docs/"]
    r = search(tree, "alice", q(prop("displayname", "eq", "docs")))
    assert "<d:collection" in r.text or "<collection" in r.text


def test_lastmodified_comparisons(tree):
    everything = hrefs(search(tree, "alice", q(prop("getlastmodified", "gt", "2000-01-01T00:00:00Z"))))
    assert len(everything) == 5
    assert hrefs(search(tree, "alice", q(prop("getlastmodified", "lt", "2000-01-01T00:00:00Z")))) == []
    assert hrefs(search(tree, "alice", q(prop("getlastmodified", "gte", "946684800")))) == everything
    assert hrefs(search(tree, "alice", q(prop("getlastmodified", "lt", "Sat, 01 Jan 2000 00:00:00 GMT")))) == []


def test_scope_depth_and_limits(tree):
    assert hrefs(search(tree, "alice", q(prop("displayname", "like", "%"), depth="1"))) == \
        ["alice/docs/", "alice/notes.txt", "alice/photo.png"]
    assert hrefs(search(tree, "alice", q(prop("displayname", "like", "%"), scope="alice/docs"))) == \
        ["alice/docs/Report_2025.md", "alice/docs/report-2024.txt"]
    order = ("<d:orderby><d:order><d:prop><d:displayname/></d:prop><d:descending/></d:order></d:orderby>"
             "<d:limit><d:nresults>2</d:nresults></d:limit>")
    r = search(tree, "alice", q(prop("displayname", "like", "%"), tail=order))
    names = re.findall(r"<(?:d:)?displayname>([^<]+)<", r.text)
    assert names == ["report-2024.txt", "photo.png"]


def test_shared_files_are_found_in_the_callers_paths(tree):
    tree.share("alice", "/docs", "bob", permissions=1)
    r = search(tree, "bob", q(prop("displayname", "like", "%.md"), scope="bob"))
    assert hrefs(r) == ["bob/docs/Report_2025.md"]
    assert tree.fileid("bob", "docs/Report_2025.md") == tree.fileid("alice", "docs/Report_2025.md")


@pytest.mark.parametrize("body", [
    q(prop("displayname", "contains", "x")),                    # unknown operator
    q(prop("favorite", "eq", "1", "oc")),                        # unknown property
    q(prop("fileid", "eq", "abc", "oc")),                        # non-numeric literal
    q(prop("fileid", "like", "1%", "oc")),                       # like on a number
    q(prop("getlastmodified", "gt", "yesterday")),               # unreadable time
    q(prop("displayname", "like", "%"), scope="bob"),            # someone else's scope
    q(prop("displayname", "like", "%"), depth="2"),              # invalid depth
    "<not-xml",
    '<?xml version="1.0"?><d:propfind xmlns:d="DAV:"/>',
])
def test_refused_queries_are_400(tree, body):
    r = search(tree, "alice", body)
    assert r.status_code == 400, r.text
    assert "secret" not in r.text


def test_search_needs_credentials(tree):
    r = tree.req("SEARCH", f"{tree.url}/remote.php/dav/", None, data=q(prop("displayname", "like", "%")))
    assert r.status_code == 401
