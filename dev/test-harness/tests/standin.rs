//! The stand-in fixture starts, seeds, and answers a PROPFIND with Nextcloud's properties,
//! for app passwords (Basic and Bearer) and for a minted JWT.

use std::time::Duration;

use test_harness::standin::Standin;

const PROPFIND: &str = r#"<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:prop><oc:fileid/><oc:permissions/><d:getetag/></d:prop></d:propfind>"#;

async fn propfind(url: &str, auth: &str) -> (u16, String) {
    let method = reqwest::Method::from_bytes(b"PROPFIND").expect("method");
    let resp = reqwest::Client::new()
        .request(method, url)
        .header("Authorization", auth)
        .header("Depth", "1")
        .body(PROPFIND)
        .send()
        .await
        .expect("PROPFIND");
    (resp.status().as_u16(), resp.text().await.expect("body"))
}

#[test]
fn seeded_standin_serves_propfind_to_each_credential_kind() {
    let nc = Standin::start_seeded();
    let jwt = nc.mint_jwt("bob", "http://mcp.test/mcp", Duration::from_secs(120));
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    rt.block_on(async {
        let home = nc.dav_url("bob", "");
        for auth in [nc.basic("bob"), nc.bearer("bob"), format!("Bearer {jwt}")] {
            let (status, body) = propfind(&home, &auth).await;
            assert_eq!(status, 207, "{auth}: {body}");
            assert!(body.contains("/remote.php/dav/files/bob/Shared-with-bob/"), "{body}");
            assert!(body.contains("bob-todo.txt") && body.contains("<oc:fileid>"), "{body}");
        }
        // bob's credentials never open alice's home: an empty multistatus, no names
        let (status, body) = propfind(&nc.dav_url("alice", ""), &nc.basic("bob")).await;
        assert_eq!(status, 207);
        assert!(!body.contains("secret") && !body.contains("notes.txt"), "{body}");
        let (status, _) = propfind(&home, "Bearer not-a-token").await;
        assert_eq!(status, 401);
    });
    assert!(nc.state_dir().join("state/standin.db").exists());
}

#[test]
fn without_oidc_bearer_validation_jwts_are_refused_and_app_passwords_still_work() {
    let nc = Standin::builder().without_oidc_bearer_validation().start();
    let jwt = nc.mint_jwt("alice", "http://mcp.test/mcp", Duration::from_secs(120));
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    rt.block_on(async {
        let home = nc.dav_url("alice", "");
        assert_eq!(propfind(&home, &format!("Bearer {jwt}")).await.0, 401);
        assert_eq!(propfind(&home, &nc.bearer("alice")).await.0, 207);
    });
}
