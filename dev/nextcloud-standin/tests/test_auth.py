"""Credentials: app passwords as Basic and Bearer, self-issued JWTs, and what is refused."""

import base64
import json

import requests


def mint(s, uid, **body):
    return requests.post(f"{s.url}/standin/token", auth=s.auth(uid), data=body, timeout=10)


def test_basic_and_bearer_app_passwords(standin):
    assert standin.propfind("alice", "").status_code == 207
    r = requests.request("PROPFIND", standin.dav("alice"), headers={"Authorization": f"Bearer {standin.passwords['alice']}", "Depth": "0"})
    assert r.status_code == 207


def test_refusals_are_401_with_www_authenticate(standin):
    for auth in [None, ("alice", "wrong"), ("bob", standin.passwords["alice"]), ("nobody", "x")]:
        r = requests.request("PROPFIND", standin.dav("alice"), auth=auth, timeout=10)
        assert r.status_code == 401, auth
        assert "Basic" in r.headers["WWW-Authenticate"]
    r = requests.get(standin.dav("alice"), headers={"Authorization": "Bearer nope"}, timeout=10)
    assert r.status_code == 401


def test_jwt_access_token_shape_and_use(jwt_standin):
    standin = jwt_standin
    r = mint(standin, "bob", aud="http://127.0.0.1:9/mcp", ttl_seconds="120")
    assert r.status_code == 200, r.text
    tok = r.json()
    assert tok["token_type"] == "Bearer" and tok["expires_in"] == 120
    header_b64, claims_b64, _ = tok["access_token"].split(".")
    pad = lambda s: s + "=" * (-len(s) % 4)  # noqa: E731
    header = json.loads(base64.urlsafe_b64decode(pad(header_b64)))
    claims = json.loads(base64.urlsafe_b64decode(pad(claims_b64)))
    assert header["typ"] == "at+jwt" and header["alg"] == "HS256"
    assert claims["sub"] == "bob" and claims["aud"] == "http://127.0.0.1:9/mcp"
    assert claims["exp"] - claims["iat"] == 120 and claims["jti"] and claims["client_id"] and claims["iss"]
    bearer = {"Authorization": f"Bearer {tok['access_token']}"}
    r = requests.request("PROPFIND", standin.dav("bob"), headers={**bearer, "Depth": "0"}, timeout=10)
    assert r.status_code == 207
    # the token is bob's: alice's tree stays invisible to it
    r = requests.get(standin.dav("alice", "x.txt"), headers=bearer, timeout=10)
    assert r.status_code == 404
    # JSON body works too, and aud is not checked by the server (like Nextcloud)
    r = requests.post(f"{standin.url}/standin/token", auth=standin.auth("alice"), json={"aud": "other"}, timeout=10)
    assert r.status_code == 200 and r.json()["expires_in"] == 900


def test_tampered_jwt_is_401(jwt_standin):
    standin = jwt_standin
    tok = mint(standin, "alice", aud="x").json()["access_token"]
    h, c, sig = tok.split(".")
    forged_claims = base64.urlsafe_b64encode(json.dumps({"sub": "bob", "exp": 9999999999, "iat": 1}).encode()).decode().rstrip("=")
    # The signature's first character carries six significant bits, so changing it always changes
    # the signature; its last characters carry padding bits (ending in "AA" could leave it as it was).
    flipped = ("B" if sig[0] == "A" else "A") + sig[1:]
    for bad in [f"{h}.{forged_claims}.{sig}", f"{h}.{c}.{flipped}", tok + "x"]:
        r = requests.request("PROPFIND", standin.dav("bob"), headers={"Authorization": f"Bearer {bad}"}, timeout=10)
        assert r.status_code == 401


def test_expired_jwt_is_401(jwt_standin):
    standin = jwt_standin
    import time
    tok = mint(standin, "alice", aud="x", ttl_seconds="1").json()["access_token"]
    bearer = {"Authorization": f"Bearer {tok}", "Depth": "0"}
    deadline = time.monotonic() + 5
    status = 207
    while time.monotonic() < deadline:  # poll until it lapses (exp has one-second resolution)
        status = requests.request("PROPFIND", standin.dav("alice"), headers=bearer, timeout=10).status_code
        if status == 401:
            break
    assert status == 401


def test_token_endpoint_refuses_bad_requests(standin):
    assert mint(standin, "alice").status_code == 400  # no aud
    assert mint(standin, "alice", aud="x", ttl_seconds="0").status_code == 400
    assert mint(standin, "alice", aud="x", ttl_seconds="soon").status_code == 400
    r = requests.post(f"{standin.url}/standin/token", data={"aud": "x"},
                      headers={"Authorization": f"Bearer {standin.passwords['alice']}"}, timeout=10)
    assert r.status_code == 401  # minting needs Basic app-password auth


def bearer_propfind(s, uid: str, token: str) -> int:
    """Status of a Depth-0 PROPFIND on uid's files root with ``Bearer token``."""
    r = requests.request("PROPFIND", s.dav(uid), headers={"Authorization": f"Bearer {token}", "Depth": "0"}, timeout=10)
    return r.status_code


def test_jwt_bearer_is_refused_unless_validation_is_on(standin):
    # A fresh Nextcloud: the oidc app issues tokens, but without the user_oidc system config
    # nothing turns them into a user, so they are 401; app passwords as Bearer still work.
    tok = mint(standin, "alice", aud="x").json()["access_token"]
    r = requests.request("PROPFIND", standin.dav("alice"), headers={"Authorization": f"Bearer {tok}", "Depth": "0"}, timeout=10)
    assert r.status_code == 401
    assert "Basic" in r.headers["WWW-Authenticate"]
    assert bearer_propfind(standin, "alice", standin.passwords["alice"]) == 207


def test_jwt_bearer_validation_is_decided_at_each_start(tmp_path):
    from conftest import Standin
    for switch, expected in [(["--oidc-provider-bearer-validation"], 207), ([], 401)]:
        # The same state each time: the switch is read at start, never stored.
        s = Standin(tmp_path / "state", extra=switch, passwords={"alice": "a-fixed-pw", "bob": "b-fixed-pw"})
        try:
            assert bearer_propfind(s, "bob", mint(s, "bob", aud="x").json()["access_token"]) == expected, switch
        finally:
            s.stop()
