//! contacts_search end to end: alice finds Carol in her address book; bob does not.

mod common;

use common::{Env, call, ok};
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn search_is_the_callers_own_address_books() {
    let env = Env::start().await;
    let alice = env.client("alice").await;
    let bob = env.client("bob").await;

    let found = call(&alice, "contacts_search", json!({"query": "carol"})).await;
    let v = ok(&found);
    let carol = v["contacts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "Carol Example")
        .expect("Carol")
        .clone();
    assert!(carol["href"].as_str().unwrap().starts_with("contacts/"), "{carol}");

    let none = call(&alice, "contacts_search", json!({"query": "no-such-person-xyz"})).await;
    assert!(ok(&none)["contacts"].as_array().unwrap().is_empty());

    let bob_found = call(&bob, "contacts_search", json!({"query": "carol"})).await;
    assert!(ok(&bob_found)["contacts"].as_array().unwrap().is_empty(), "{}", ok(&bob_found));
}
