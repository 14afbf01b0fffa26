"""Shares: mounts, read-only refusal, permission letters, revocation, OCS validation."""

import re


def perms(standin, uid, path):
    m = re.search(r"<oc:permissions>([A-Z]*)</oc:permissions>", standin.propfind(uid, path).text)
    assert m
    return m.group(1)


def test_read_only_share_refuses_writes(standin):
    standin.mkcol("alice", "ro")
    standin.put("alice", "ro/doc.txt", "original")
    standin.share("alice", "/ro", "bob", permissions=1)
    b = lambda m, p, **kw: standin.req(m, standin.dav("bob", p), "bob", **kw)  # noqa: E731
    assert b("GET", "ro/doc.txt").text == "original"
    assert b("PUT", "ro/doc.txt", data="changed").status_code == 403
    assert b("PUT", "ro/new.txt", data="new").status_code == 403
    assert b("MKCOL", "ro/sub").status_code == 403
    assert b("DELETE", "ro/doc.txt").status_code == 403
    assert b("MOVE", "ro/doc.txt", headers={"Destination": standin.dav("bob", "took.txt")}).status_code == 403
    assert b("DELETE", "ro").status_code == 403  # the mount point itself
    assert standin.req("GET", standin.dav("alice", "ro/doc.txt"), "alice").text == "original"
    assert b("GET", "ro/new.txt").status_code == 404
    assert perms(standin, "bob", "ro") == "SMG"
    assert perms(standin, "bob", "ro/doc.txt") == "SG"
    assert perms(standin, "alice", "ro") == "SRGDNVCK"
    assert perms(standin, "alice", "ro/doc.txt") == "RGDNVW"


def test_writable_share_and_same_ids(standin):
    standin.mkcol("alice", "rw")
    standin.share("alice", "/rw", "bob", permissions=15)
    assert standin.put("bob", "rw/from-bob.txt", "hi").status_code == 201
    assert standin.req("GET", standin.dav("alice", "rw/from-bob.txt"), "alice").text == "hi"
    assert standin.fileid("bob", "rw/from-bob.txt") == standin.fileid("alice", "rw/from-bob.txt")
    assert standin.fileid("bob", "rw") == standin.fileid("alice", "rw")
    assert perms(standin, "bob", "rw/from-bob.txt") == "SGDNVW"


def test_update_and_revoke_take_effect_next_request(standin):
    standin.mkcol("alice", "s")
    share = standin.share("alice", "/s", "bob", permissions=31)
    assert standin.put("bob", "s/a.txt", "x").status_code == 201
    r = standin.ocs("PUT", "alice", f"apps/files_sharing/api/v1/shares/{share['id']}", data={"permissions": 1})
    assert r.status_code == 200 and r.json()["ocs"]["data"]["permissions"] == 1
    assert standin.put("bob", "s/a.txt", "y").status_code == 403
    assert standin.ocs("DELETE", "alice", f"apps/files_sharing/api/v1/shares/{share['id']}").status_code == 200
    assert standin.req("GET", standin.dav("bob", "s/a.txt"), "bob").status_code == 404
    r = standin.ocs("GET", "bob", "apps/files_sharing/api/v1/shares", params={"shared_with_me": "true"})
    assert r.json()["ocs"]["data"] == []


def test_a_json_id_beats_the_route_id_only_with_a_session(standin):
    """ShareAPIController::updateShare reads getParam('id'): without a session (user_oidc decodes
    the body while booting) the route's id wins over a JSON "id"; with one, the JSON field does."""
    import requests
    standin.mkcol("alice", "one")
    standin.mkcol("alice", "two")
    first = standin.share("alice", "/one", "bob", permissions=31)
    second = standin.share("alice", "/two", "bob", permissions=31)
    url = f"apps/files_sharing/api/v1/shares/{first['id']}"
    r = standin.ocs("PUT", "alice", url, json={"id": second["id"], "permissions": 1})
    assert r.status_code == 200 and r.json()["ocs"]["data"]["id"] == first["id"]
    session = requests.Session()
    headers = {"OCS-APIRequest": "true", "Accept": "application/json"}
    assert session.get(f"{standin.url}/ocs/v2.php/cloud/user", auth=standin.auth("alice"), headers=headers,
                       timeout=10).status_code == 200
    r = session.put(f"{standin.url}/ocs/v2.php/{url}", json={"id": second["id"], "permissions": 17},
                    headers=headers, timeout=10)
    assert r.status_code == 200 and r.json()["ocs"]["data"]["id"] == second["id"]


def test_mount_name_collision_gets_a_suffix(standin):
    standin.mkcol("alice", "Projects")
    standin.mkcol("bob", "Projects")
    data = standin.share("alice", "/Projects", "bob")
    r = standin.ocs("GET", "bob", "apps/files_sharing/api/v1/shares", params={"shared_with_me": "true"})
    mine = r.json()["ocs"]["data"][0]
    assert mine["path"] == "/Projects (2)" and data["path"] == "/Projects"
    assert standin.req("PROPFIND", standin.dav("bob", "Projects (2)"), "bob", headers={"Depth": "0"}).status_code == 207


def test_ocs_validation(standin):
    standin.mkcol("alice", "v")
    url = "apps/files_sharing/api/v1/shares"
    post = lambda uid, **d: standin.ocs("POST", uid, url, data=d)  # noqa: E731
    assert post("alice", path="/v", shareType=0, shareWith="nobody").status_code == 404
    assert post("alice", path="/missing", shareType=0, shareWith="bob").status_code == 404
    assert post("alice", path="/v", shareType=3, shareWith="bob").status_code == 400
    assert post("alice", path="/v", shareType=0, shareWith="alice").status_code == 400
    assert post("alice", path="/v", shareType=0, shareWith="bob", permissions=2).status_code == 400
    assert post("alice", path="/v", shareType=0, shareWith="bob", permissions=99).status_code == 400
    assert post("alice", path="/v", shareType=0, shareWith="bob").status_code == 200
    assert post("alice", path="/v", shareType=0, shareWith="bob").status_code == 403  # already shared
    assert post("bob", path="/v", shareType=0, shareWith="alice").status_code == 403  # no reshares
    sid = standin.ocs("GET", "alice", url).json()["ocs"]["data"][0]["id"]
    assert standin.ocs("DELETE", "bob", f"{url}/{sid}").status_code == 404  # not bob's share
    # Nextcloud's CSRF rule: OCS without the OCS-APIRequest header is refused
    r = standin.req("GET", f"{standin.url}/ocs/v2.php/cloud/user", "alice", headers={"Accept": "application/json"})
    assert r.status_code == 401 and r.json()["ocs"]["meta"]["statuscode"] == 401
    # XML unless JSON is asked for
    r = standin.req("GET", f"{standin.url}/ocs/v2.php/cloud/user", "alice", headers={"OCS-APIRequest": "true"})
    assert r.status_code == 200 and "<id>alice</id>" in r.text


def test_deleting_a_shared_folder_ends_the_share(standin):
    standin.mkcol("alice", "gone")
    standin.share("alice", "/gone", "bob")
    assert standin.req("DELETE", standin.dav("alice", "gone"), "alice").status_code == 204
    assert standin.ocs("GET", "alice", "apps/files_sharing/api/v1/shares").json()["ocs"]["data"] == []
    assert standin.req("PROPFIND", standin.dav("bob", "gone"), "bob", headers={"Depth": "0"}).status_code == 404


def test_share_follows_a_renamed_folder(standin):
    standin.mkcol("alice", "old")
    standin.put("alice", "old/f.txt", "x")
    standin.share("alice", "/old", "bob")
    r = standin.req("MOVE", standin.dav("alice", "old"), "alice", headers={"Destination": standin.dav("alice", "new")})
    assert r.status_code == 201
    assert standin.req("GET", standin.dav("bob", "old/f.txt"), "bob").text == "x"
    data = standin.ocs("GET", "alice", "apps/files_sharing/api/v1/shares").json()["ocs"]["data"]
    assert data[0]["path"] == "/new"


def test_refused_move_over_an_existing_file_changes_nothing(standin):
    standin.mkcol("alice", "ro")
    standin.put("alice", "ro/doc.txt", "alice's")
    standin.share("alice", "/ro", "bob", permissions=1)
    standin.put("bob", "mine.txt", "bob's")
    r = standin.req("MOVE", standin.dav("bob", "ro/doc.txt"), "bob",
                    headers={"Destination": standin.dav("bob", "mine.txt"), "Overwrite": "T"})
    assert r.status_code == 403
    assert standin.req("GET", standin.dav("bob", "mine.txt"), "bob").text == "bob's"
    assert standin.req("GET", standin.dav("alice", "ro/doc.txt"), "alice").text == "alice's"
    # nor may bob overwrite a read-only file by copying his own onto it
    r = standin.req("COPY", standin.dav("bob", "mine.txt"), "bob",
                    headers={"Destination": standin.dav("bob", "ro/doc.txt"), "Overwrite": "T"})
    assert r.status_code == 403
    assert standin.req("GET", standin.dav("alice", "ro/doc.txt"), "alice").text == "alice's"
