//! Authority: the server only ever acts with the caller's own bearer, and Nextcloud's answer
//! stands. No bearer or a rejected one is HTTP 401 with the RFC 9728 challenge; a JWT for
//! another audience is refused; bob never obtains alice's data through any tool; revoking a
//! share takes effect on bob's very next call.

mod common;

use std::time::Duration;

use common::{Env, call, connect, err_kind, ok, paths};
use serde_json::json;

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

#[expect(clippy::expect_used, reason = "test helper")]
async fn post_init(env: &Env, auth: Option<&str>) -> reqwest::Response {
    let mut r = env
        .nc_http()
        .post(env.mcp.url())
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(INIT);
    if let Some(a) = auth {
        r = r.header("Authorization", a);
    }
    r.send().await.expect("POST /mcp")
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_wrong_and_foreign_tokens_are_401() {
    let env = Env::start().await;
    let metadata = format!("{}/.well-known/oauth-protected-resource", env.mcp.base_url());

    for auth in [None, Some("Bearer not-a-real-token".to_string()), Some(env.nc.basic("alice"))] {
        let r = post_init(&env, auth.as_deref()).await;
        assert_eq!(r.status(), 401, "{auth:?}");
        let challenge = r.headers()["www-authenticate"].to_str().unwrap().to_string();
        assert!(challenge.starts_with("Bearer "), "{challenge}");
        assert!(challenge.contains(&format!("resource_metadata=\"{metadata}\"")), "{challenge}");
    }
    let r = post_init(&env, Some("Bearer not-a-real-token")).await;
    assert!(
        r.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .contains("error=\"invalid_token\"")
    );

    let doc: serde_json::Value = env.nc_http().get(&metadata).send().await.unwrap().json().await.unwrap();
    assert_eq!(doc["resource"], env.mcp.url());
    assert_eq!(doc["authorization_servers"][0], env.nc.url());
    assert_eq!(doc["bearer_methods_supported"], json!(["header"]));

    // A JWT minted for another resource is refused even though Nextcloud would accept it.
    let foreign = env.nc.mint_jwt("alice", "http://other.example/mcp", Duration::from_secs(300));
    let r = post_init(&env, Some(&format!("Bearer {foreign}"))).await;
    assert_eq!(r.status(), 401);
    assert!(r.headers()["www-authenticate"].to_str().unwrap().contains("invalid_token"));

    // One minted for this server works end to end.
    let ours = env.nc.mint_jwt("alice", &env.mcp.url(), Duration::from_secs(300));
    let client = connect(&env.mcp.url(), &ours).await;
    let listed = call(&client, "files_list", json!({"path": ""})).await;
    assert!(paths(ok(&listed)).contains(&"notes.txt".to_string()));
}

#[tokio::test(flavor = "multi_thread")]
async fn bob_never_obtains_alices_files() {
    let env = Env::start().await;
    let alice = env.client("alice").await;
    let bob = env.client("bob").await;
    let secret = call(&alice, "files_list", json!({"path": "private"})).await;
    let secret_id = ok(&secret)["entries"][0]["file_id"].as_u64().unwrap();

    assert_eq!(
        err_kind(&call(&bob, "files_read", json!({"path": "private/secret.txt"})).await),
        "not_found"
    );
    assert_eq!(
        err_kind(&call(&bob, "files_read", json!({"file_id": secret_id})).await),
        "not_found"
    );
    assert_eq!(err_kind(&call(&bob, "files_list", json!({"path": "private"})).await), "not_found");
    assert_eq!(
        err_kind(&call(&bob, "files_move", json!({"from": "notes.txt", "to": "mine.txt"})).await),
        "not_found"
    );
    let found = call(&bob, "files_find", json!({"pattern": "secret"})).await;
    assert!(paths(ok(&found)).is_empty());
    let found = call(&bob, "files_find", json!({"pattern": "*.txt"})).await;
    assert!(
        !paths(ok(&found)).iter().any(|p| p.contains("secret") || p.contains("notes")),
        "{:?}",
        paths(ok(&found))
    );
    // bob writing "notes.txt" writes into his own home; alice's file is untouched.
    let (_, before) = env.nc_get("alice", "notes.txt").await;
    ok(&call(&bob, "files_write", json!({"path": "notes.txt", "content": "bob's own"})).await);
    assert_eq!(env.nc_get("alice", "notes.txt").await.1, before);
    assert_eq!(env.nc_get("bob", "notes.txt").await.1, "bob's own");
}

#[tokio::test(flavor = "multi_thread")]
async fn revoking_a_share_takes_effect_on_the_next_call() {
    let env = Env::start().await;
    let bob = env.client("bob").await;
    let plan = call(&bob, "files_read", json!({"path": "Shared-with-bob/plan.md"})).await;
    let plan_id = {
        let alice = env.client("alice").await;
        let l = call(&alice, "files_list", json!({"path": "Shared-with-bob"})).await;
        ok(&l)["entries"][0]["file_id"].as_u64().unwrap()
    };
    assert!(ok(&plan)["text"].as_str().unwrap().contains("forty thousand"));

    // alice revokes the share, directly at the stand-in, with her own credentials.
    env.revoke_share("alice", "/Shared-with-bob", "bob").await;

    assert_eq!(
        err_kind(&call(&bob, "files_read", json!({"path": "Shared-with-bob/plan.md"})).await),
        "not_found"
    );
    assert_eq!(err_kind(&call(&bob, "files_read", json!({"file_id": plan_id})).await), "not_found");
    let root = call(&bob, "files_list", json!({"path": ""})).await;
    assert!(!paths(ok(&root)).contains(&"Shared-with-bob".to_string()));
    assert!(paths(ok(&call(&bob, "files_find", json!({"pattern": "plan"})).await)).is_empty());
}
