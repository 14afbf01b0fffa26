//! G1 at the door (issue 10, items 5 and 7): nothing from an unauthenticated request is
//! buffered, a declared oversize body is refused before it is sent, a slow body is cut off,
//! a signed request is accepted once, every error has the fixed JSON shape with a request id,
//! and every refused or failed effect attempt leaves an audit row. Issue #27: a signed request
//! is accepted only at its own method, path and query: captured headers moved to another
//! route (a read to a delete, a describe to a dispatch, a resource to another query) are
//! refused and do nothing, and an app still signing the earlier form is told so.
//!
//! The body tests talk raw HTTP/1.1 over TCP so they control exactly how much of a body is
//! sent and can watch the server answer while the client is still (able to be) sending.

use anyhow::{Context, Result, bail, ensure};
use reqwest::Method;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use test_harness::mcp_mail::sent_mail;
use test_harness::orchestrator::{Orchestrator, PROXY_SECRET, Signing, credentials_header, fresh_nonce, unix_now, user_turn};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::stack::{APP_CONVERSATION, Stack, uuid_like};

const FIXED: [&str; 14] = [
    "The request was not understood.",
    "Not signed in.",
    "This action is not allowed.",
    "Not found.",
    "This method is not allowed here.",
    "The request took too long to arrive.",
    "A reply is already being written in this conversation.",
    "The request is too large.",
    "Too many requests. Please wait a moment.",
    "Something went wrong. Please try again.",
    "The service is restarting. Please try again in a moment.",
    tamebi::error::messages::UPSTREAM_TIMEOUT,
    tamebi::error::messages::UPSTREAM,
    tamebi::error::messages::SIGNATURE_OUTDATED,
];

fn addr(s: &Stack) -> String {
    s.orch.url().trim_start_matches("http://").to_string()
}

/// Sends a request head and the first `send` bytes of a `declared`-byte body, then reads the
/// answer without sending more. Returns (status, body, time to answer).
async fn partial_post(
    s: &Stack,
    path: &str,
    headers: &[(String, String)],
    declared: usize,
    send: usize,
) -> Result<(u16, String, Duration)> {
    let mut tcp = TcpStream::connect(addr(s)).await?;
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {declared}\r\n",
        addr(s)
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    tcp.write_all(head.as_bytes()).await?;
    tcp.write_all(&vec![b' '; send]).await?;
    let started = Instant::now();
    let mut buf = Vec::new();
    // The answer must come while the rest of the body is still unsent.
    let read = tokio::time::timeout(Duration::from_secs(25), async {
        let mut chunk = [0u8; 4096];
        loop {
            let n = tcp.read(&mut chunk).await?;
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
            if response_complete(&buf) {
                break;
            }
        }
        Ok::<_, std::io::Error>(())
    })
    .await;
    ensure!(
        read.is_ok(),
        "no answer within 25 s while {} of {declared} body bytes were sent",
        send
    );
    let text = String::from_utf8_lossy(&buf).to_string();
    let status: u16 = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("not an HTTP answer: {text:?}"))?;
    let body = text.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
    Ok((status, body, started.elapsed()))
}

fn response_complete(buf: &[u8]) -> bool {
    let text = String::from_utf8_lossy(buf);
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return false;
    };
    let length = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_string()))
        .and_then(|v| v.parse::<usize>().ok());
    length.is_some_and(|n| body.len() >= n)
}

/// Headers signed for `POST /v1/chat` over an empty body: what the door tests send them to.
fn signed_empty(uid: &str, ts: i64) -> Vec<(String, String)> {
    Orchestrator::sign(&Signing {
        method: "POST",
        target: "/v1/chat",
        uid,
        body: b"",
        ts,
        nonce: &fresh_nonce(),
        credentials: "",
        signing_secret: test_harness::orchestrator::SIGNING_SECRET,
    })
}

fn replace(headers: &[(String, String)], name: &str, value: &str) -> Vec<(String, String)> {
    let mut h: Vec<(String, String)> = headers.iter().filter(|(k, _)| k != name).cloned().collect();
    h.push((name.to_string(), value.to_string()));
    h
}

fn vm_rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:").map(|v| v.trim().trim_end_matches("kB").trim().to_string()))
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// 10.5: a wrong bearer, a stale timestamp, a missing header or a malformed credentials
/// header is answered before the body is read: the client has sent 64 KiB of 8 MB.
pub async fn unauthenticated_body_is_never_read(s: &Stack) -> Result<()> {
    let good = signed_empty("alice", unix_now());
    let cases = [
        (
            "wrong bearer",
            replace(&good, "authorization", "Bearer wrong-proxy-secret-0123456789abcdef"),
            401,
        ),
        ("stale timestamp", signed_empty("alice", unix_now() - 3600), 401),
        ("no uid", good.iter().filter(|(k, _)| k != "x-tamebi-uid").cloned().collect(), 401),
        (
            "no nonce",
            good.iter().filter(|(k, _)| k != "x-tamebi-nonce").cloned().collect(),
            401,
        ),
        ("malformed credentials", replace(&good, "x-tamebi-credentials", "nextcloud"), 400),
        ("legacy single token", replace(&good, "x-tamebi-nc-authorization", "Bearer t"), 400),
    ];
    for (what, headers, want) in cases {
        let (status, body, took) = partial_post(s, "/v1/chat", &headers, 8 * 1024 * 1024, 64 * 1024).await?;
        ensure!(status == want, "{what}: {status} {body}");
        let v: Value = serde_json::from_str(&body).with_context(|| format!("{what}: not JSON: {body}"))?;
        ensure!(FIXED.contains(&v["error"]["message"].as_str().unwrap_or("")), "{what}: {v}");
        println!("    {what}: {status} after {} ms with 64 KiB of 8 MiB sent", took.as_millis());
    }
    Ok(())
}

/// 10.5: 20 connections with a wrong bearer each pushing an 8 MB body do not make the
/// orchestrator buffer them (the issue measured 17 -> 171 MB before). Printed, and bounded
/// loosely: far below what buffering 160 MB would cost.
pub async fn unauthenticated_floods_do_not_grow_memory(s: &Stack) -> Result<()> {
    let pid = s.orch.pid();
    let before = vm_rss_kib(pid);
    let headers = replace(&signed_empty("alice", unix_now()), "authorization", "Bearer wrong");
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let (addr, headers) = (addr(s), headers.clone());
        #[expect(clippy::disallowed_methods, reason = "every handle is awaited below")]
        tasks.push(tokio::spawn(async move {
            let Ok(mut tcp) = TcpStream::connect(&addr).await else { return };
            let mut head = format!("POST /v1/chat HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 8388608\r\n");
            for (k, v) in &headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str("\r\n");
            if tcp.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            let chunk = vec![b'x'; 256 * 1024];
            // The server may answer and close at any point: a failed write is the expected end.
            for _ in 0..32 {
                if tcp.write_all(&chunk).await.is_err() {
                    break;
                }
            }
            let mut sink = Vec::new();
            let _ = tokio::time::timeout(Duration::from_secs(5), tcp.read_to_end(&mut sink)).await;
        }));
    }
    let mut peak = before;
    while tasks.iter().any(|t| !t.is_finished()) {
        peak = peak.max(vm_rss_kib(pid));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let growth_mib = peak.saturating_sub(before) / 1024;
    println!(
        "    RSS before {} MiB, peak {} MiB during 20 x 8 MiB unauthenticated bodies (+{growth_mib} MiB)",
        before / 1024,
        peak / 1024
    );
    ensure!(
        growth_mib < 48,
        "memory grew by {growth_mib} MiB: unauthenticated bodies were buffered"
    );
    Ok(())
}

/// 10.5: a signed request declaring more than the limit is refused at once (413), before a
/// body byte is sent.
pub async fn oversized_declared_body_is_refused_at_once(s: &Stack) -> Result<()> {
    let (status, body, took) = partial_post(s, "/v1/chat", &signed_empty("alice", unix_now()), 64 * 1024 * 1024, 0).await?;
    ensure!(status == 413, "{status} {body}");
    ensure!(body.contains("The request is too large."), "{body}");
    println!("    413 after {} ms, no body sent", took.as_millis());
    Ok(())
}

/// 10.5: a signed caller that starts a body and stalls is cut off (408), not waited on forever.
pub async fn stalled_body_is_cut_off(s: &Stack) -> Result<()> {
    let (status, body, took) = partial_post(s, "/v1/chat", &signed_empty("alice", unix_now()), 100, 10).await?;
    ensure!(status == 408, "{status} {body}");
    ensure!(took < Duration::from_secs(24), "took {} ms", took.as_millis());
    Ok(())
}

/// One fully signed request, sent twice byte for byte.
async fn twice(s: &Stack, method: Method, path: &str, body: &[u8]) -> Result<(u16, u16)> {
    let pw = s.nc.app_password("alice").to_string();
    let creds = test_harness::orchestrator::credentials_header(&[("nextcloud", &pw), ("probe", &pw)]);
    let headers = Orchestrator::sign(&Signing {
        method: method.as_str(),
        target: path,
        uid: "alice",
        body,
        ts: unix_now(),
        nonce: &fresh_nonce(),
        credentials: &creds,
        signing_secret: test_harness::orchestrator::SIGNING_SECRET,
    });
    let mut statuses = Vec::new();
    for _ in 0..2 {
        let mut rb = s
            .http
            .request(method.clone(), format!("{}{path}", s.orch.url()))
            .body(body.to_vec());
        for (k, v) in &headers {
            rb = rb.header(k, v);
        }
        if !body.is_empty() {
            rb = rb.header("content-type", "application/json");
        }
        let r = rb.send().await?;
        statuses.push(r.status().as_u16());
        let _ = r.text().await;
    }
    Ok((statuses[0], statuses[1]))
}

/// 10.7: a signed request replayed inside its 60 s window is refused, whatever it is: a turn,
/// a read, a relay call, a delete. What it would have done happens once.
pub async fn replayed_requests_are_refused(s: &Stack) -> Result<()> {
    let marker = "g1-replay";
    s.script(marker, json!([{"text": "once"}]));
    let body = user_turn(marker, "m1", &format!("{marker} hello"));
    let (first, second) = twice(s, Method::POST, "/v1/chat", &body).await?;
    ensure!((first, second) == (200, 401), "turn: {first} then {second}");
    ensure!(
        s.model_requests(marker).len() == 1,
        "the model ran {} times",
        s.model_requests(marker).len()
    );

    let (first, second) = twice(s, Method::GET, "/v1/conversations", b"").await?;
    ensure!((first, second) == (200, 401), "list: {first} then {second}");

    let call =
        serde_json::to_vec(&json!({"conversation": marker, "server": "probe", "name": "probe_lookup", "arguments": {"target": marker}}))?;
    let (first, second) = twice(s, Method::POST, "/v1/apps/tools/call", &call).await?;
    ensure!((first, second) == (200, 401), "relay: {first} then {second}");
    let ran = s
        .probe
        .calls_of("probe_lookup")
        .iter()
        .filter(|c| c["arguments"]["target"] == marker)
        .count();
    ensure!(ran == 1, "the relayed call ran {ran} times");

    let (first, second) = twice(s, Method::DELETE, &format!("/v1/conversations/{marker}"), b"").await?;
    ensure!((first, second) == (204, 401), "delete: {first} then {second}");
    Ok(())
}

async fn check_shape(r: reqwest::Response, what: &str, want: u16, sent_id: Option<&str>) -> Result<()> {
    let status = r.status().as_u16();
    let header_id = r
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let content_type = r
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let text = r.text().await?;
    ensure!(status == want, "{what}: {status} (wanted {want}) {text}");
    ensure!(
        content_type.starts_with("application/json"),
        "{what}: content-type {content_type:?}, body {text:?}"
    );
    let v: Value = serde_json::from_str(&text).with_context(|| format!("{what}: {text:?}"))?;
    let message = v["error"]["message"].as_str().unwrap_or("");
    ensure!(FIXED.contains(&message), "{what}: message {message:?}");
    let id = v["error"]["requestId"].as_str().unwrap_or("");
    ensure!(!id.is_empty() && id == header_id, "{what}: requestId {id:?}, header {header_id:?}");
    if let Some(sent) = sent_id {
        ensure!(id == sent, "{what}: requestId {id:?} is not the one sent ({sent})");
    }
    ensure!(v.as_object().is_some_and(|o| o.len() == 1), "{what}: extra fields {v}");
    // The refusal's code: a fixed word from the closed list (docs/api.md), nothing else beside.
    let code = v["error"]["code"].as_str().unwrap_or("");
    ensure!(
        !code.is_empty() && code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
        "{what}: code {code:?}"
    );
    ensure!(
        v["error"].as_object().is_some_and(|e| e
            .keys()
            .all(|k| ["message", "requestId", "code", "retryAfter"].contains(&k.as_str()))),
        "{what}: extra fields in {v}"
    );
    Ok(())
}

/// 10.7: every error the orchestrator emits has the fixed JSON shape and a request id:
/// framework rejections, wrong methods, unknown routes, unknown `ui://` documents, bad bodies.
pub async fn every_error_has_the_fixed_shape(s: &Stack) -> Result<()> {
    let signed: [(Method, &str, &[u8], u16); 13] = [
        (Method::GET, "/v1/apps/resource", b"", 400),
        (Method::GET, "/v1/apps/resource?server=nextcloud", b"", 400),
        (Method::GET, "/v1/apps/resource?server=nextcloud&uri=x&uri=y", b"", 400),
        (
            Method::GET,
            "/v1/apps/resource?server=nextcloud&uri=ui%3A%2F%2Fnextcloud%2Fno-such-app&conversation=apps-frame",
            b"",
            404,
        ),
        (
            Method::GET,
            "/v1/apps/resource?server=weather&uri=ui%3A%2F%2Fweather%2Fnone&conversation=apps-frame",
            b"",
            404,
        ),
        // A document for no conversation, or one that is not the caller's: refused like the tool doors.
        (
            Method::GET,
            "/v1/apps/resource?server=weather&uri=ui%3A%2F%2Fweather%2Fnone",
            b"",
            403,
        ),
        (
            Method::GET,
            "/v1/apps/resource?server=weather&uri=ui%3A%2F%2Fweather%2Fnone&conversation=not-alices",
            b"",
            403,
        ),
        (Method::PUT, "/v1/chat", b"{}", 405),
        (Method::PATCH, "/v1/conversations", b"", 405),
        (Method::GET, "/v1/no-such-route", b"", 404),
        (Method::POST, "/v1/chat", b"not json", 400),
        (
            Method::POST,
            "/v1/apps/tools/call",
            br#"{"server":"probe","name":"probe_lookup","arguments":"x"}"#,
            400,
        ),
        (Method::GET, "/v1/conversations/%FF%FE", b"", 400),
    ];
    for (method, path, body, want) in signed {
        let rid = format!("shape-{}", uuid_like());
        let r = s
            .signed(method.clone(), path, "alice", body)
            .header("x-request-id", &rid)
            .send()
            .await?;
        check_shape(r, &format!("{method} {path}"), want, Some(&rid)).await?;
    }
    let unsigned: [(Method, &str, u16); 4] = [
        (Method::GET, "/no-such-path", 404),
        (Method::POST, "/healthz", 405),
        (Method::GET, "/v1/conversations", 401),
        (Method::DELETE, "/v1/conversations/x", 401),
    ];
    for (method, path, want) in unsigned {
        let r = s.http.request(method.clone(), format!("{}{path}", s.orch.url())).send().await?;
        check_shape(r, &format!("unsigned {method} {path}"), want, None).await?;
    }
    Ok(())
}

/// 10.7: refused effect attempts are audited: a relay call naming a server that does not
/// exist (names are exact: "NEXTCLOUD"), one that cannot be parsed, and a model call whose
/// arguments are not a JSON object. Nothing runs.
pub async fn refused_effect_attempts_are_audited(s: &Stack) -> Result<()> {
    let rows_for =
        |rid: &str| -> Result<Vec<crate::stack::AuditRow>> { Ok(s.audit()?.into_iter().filter(|r| r.request_id == rid).collect()) };
    for path in ["/v1/apps/tools/call", "/v1/apps/tools/dispatch"] {
        for server in ["NEXTCLOUD", "nextcloud ", "no-such-server"] {
            let (status, rid) = s
                .apps(
                    path,
                    "alice",
                    json!({"server": server, "name": "files_move", "arguments": {"from": "a", "to": "b"}}),
                )
                .await?;
            ensure!(status == 403, "{path} {server:?}: {status}");
            let rows = rows_for(&rid)?;
            ensure!(
                rows.iter()
                    .any(|r| r.kind == "app_refused" && r.outcome == "refused" && r.uid == "alice" && r.tool == "files_move"),
                "{path} {server:?}: not audited: {rows:?}"
            );
        }
        for body in [
            json!({"server": "probe", "name": "probe_destroy", "arguments": "target=all"}),
            json!({"server": "probe"}),
            json!([1]),
        ] {
            let (status, rid) = s.apps(path, "alice", body.clone()).await?;
            ensure!(status == 400, "{path} {body}: {status}");
            ensure!(
                rows_for(&rid)?
                    .iter()
                    .any(|r| r.kind == "app_refused" && r.detail.as_deref() == Some("malformed request")),
                "{path} {body}: not audited"
            );
        }
    }
    // A model call whose arguments are not a JSON object: nothing runs, one row says why.
    let marker = "g1-badargs";
    let before = s.probe.calls_of("probe_destroy").len();
    s.script(
        marker,
        json!([{"tool_calls": [{"name": "probe_destroy", "arguments": "{\"target\": \"all\""}, {"name": "probe_safe_update", "arguments": "[1,2]"}]}, {"text": "Done."}]),
    );
    let _ = s.chat("alice", marker, &format!("{marker} go")).await?;
    ensure!(s.probe.calls_of("probe_destroy").len() == before, "probe_destroy ran");
    let rows = s.audit_of(marker)?;
    for tool in ["probe_destroy", "probe_safe_update"] {
        let Some(row) = rows.iter().find(|r| r.tool == tool) else {
            bail!("no audit row for {tool}: {rows:?}");
        };
        ensure!(
            row.outcome == "bad_arguments" && row.approval == "refused" && row.server == "probe",
            "{tool}: {row:?}"
        );
    }
    Ok(())
}

/// The proxy secret alone does not pick a user: a request with it and nothing else is 401,
/// and so is one signed for the right body with a uid swapped in (checked in unit tests too).
pub async fn proxy_secret_alone_is_not_identity(s: &Stack) -> Result<()> {
    let r = s
        .http
        .get(format!("{}/v1/conversations", s.orch.url()))
        .header("authorization", format!("Bearer {PROXY_SECRET}"))
        .header("x-tamebi-uid", "alice")
        .send()
        .await?;
    check_shape(r, "proxy secret only", 401, None).await
}

/// The G1 headers the app would send for alice's `method target` with `body` (her usual
/// credentials), captured before they were delivered.
fn capture(s: &Stack, method: &str, target: &str, body: &[u8]) -> Vec<(String, String)> {
    let creds = s.credentials("alice");
    let refs: Vec<(&str, &str)> = creds.iter().map(|(n, t)| (*n, t.as_str())).collect();
    Orchestrator::sign(&Signing {
        method,
        target,
        uid: "alice",
        body,
        ts: unix_now(),
        nonce: &fresh_nonce(),
        credentials: &credentials_header(&refs),
        signing_secret: test_harness::orchestrator::SIGNING_SECRET,
    })
}

/// Sends `headers`, exactly as captured, as `method target` with `body`.
async fn send_as(s: &Stack, headers: &[(String, String)], method: Method, target: &str, body: &[u8]) -> Result<reqwest::Response> {
    let mut rb = s.http.request(method, format!("{}{target}", s.orch.url())).body(body.to_vec());
    for (k, v) in headers {
        rb = rb.header(k, v);
    }
    if !body.is_empty() {
        rb = rb.header("content-type", "application/json");
    }
    Ok(rb.send().await?)
}

async fn conversation_status(s: &Stack, id: &str) -> Result<(u16, Value)> {
    let r = s
        .signed(Method::GET, &format!("/v1/conversations/{id}"), "alice", b"")
        .send()
        .await?;
    let status = r.status().as_u16();
    Ok((status, r.json().await.unwrap_or_default()))
}

/// Issue #27: the headers of a signed `GET /v1/conversations`, captured before delivery, sent
/// instead as `DELETE /v1/conversations/<id>` and as `DELETE /v1/me/data`: 401 each, the
/// conversation is still there, and the GET they were made for still works afterwards (a
/// refused request never uses up its nonce).
pub async fn a_signed_read_cannot_become_a_delete(s: &Stack) -> Result<()> {
    let marker = "g1-read-to-delete";
    s.script(marker, json!([{"text": "still here"}]));
    let turn = s.chat("alice", marker, &format!("{marker} hello")).await?;
    ensure!(turn.status == 200, "the turn answered {}", turn.status);
    let list = capture(s, "GET", "/v1/conversations", b"");
    for target in [format!("/v1/conversations/{marker}"), "/v1/me/data".to_string()] {
        let r = send_as(s, &list, Method::DELETE, &target, b"").await?;
        check_shape(r, &format!("GET headers as DELETE {target}"), 401, None).await?;
        let (status, conversation) = conversation_status(s, marker).await?;
        ensure!(
            status == 200 && conversation["messages"].as_array().is_some_and(|m| m.len() >= 2),
            "after DELETE {target}: the conversation answers {status} {conversation}"
        );
    }
    let r = send_as(s, &list, Method::GET, "/v1/conversations", b"").await?;
    ensure!(r.status() == 200, "the GET they were signed for answered {}", r.status());
    let listed: Value = r.json().await?;
    ensure!(
        listed["conversations"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["id"] == marker)),
        "{listed}"
    );
    Ok(())
}

/// Issue #27: a body signed for `/v1/apps/tools/describe` (the island asks which door a
/// frame's `mail_send` takes) is refused at `/dispatch` and `/call`: no mail goes out. At
/// `/describe` the same headers are answered.
pub async fn a_body_signed_for_describe_is_refused_at_dispatch(s: &Stack) -> Result<()> {
    let before = sent_mail(s.nc.url()).await.len();
    let body = serde_json::to_vec(&json!({
        "conversation": APP_CONVERSATION, "server": "mail", "name": "mail_send",
        "arguments": {"to": ["archive@attacker.example.net"], "subject": "moved", "body": "a describe body, dispatched"}
    }))?;
    let describe = capture(s, "POST", "/v1/apps/tools/describe", &body);
    for door in ["/v1/apps/tools/dispatch", "/v1/apps/tools/call"] {
        let r = send_as(s, &describe, Method::POST, door, &body).await?;
        check_shape(r, &format!("describe headers at {door}"), 401, None).await?;
    }
    ensure!(sent_mail(s.nc.url()).await.len() == before, "a mail went out");
    let r = send_as(s, &describe, Method::POST, "/v1/apps/tools/describe", &body).await?;
    ensure!(r.status() == 200, "describe itself answered {}", r.status());
    let v: Value = r.json().await?;
    ensure!(v["handling"] == "confirm", "{v}");
    Ok(())
}

/// Issue #27: the query of `/v1/apps/resource` is signed as sent: another document, another
/// conversation, or the same parameters in another order are 401; the signed query is served.
pub async fn the_resource_query_is_signed(s: &Stack) -> Result<()> {
    let signed_query = format!("server=mail&uri=ui%3A%2F%2Fmail%2Fcompose&conversation={APP_CONVERSATION}");
    let headers = capture(s, "GET", &format!("/v1/apps/resource?{signed_query}"), b"");
    for query in [
        format!("server=mail&uri=ui%3A%2F%2Fmail%2Fother&conversation={APP_CONVERSATION}"),
        "server=mail&uri=ui%3A%2F%2Fmail%2Fcompose&conversation=another-one".to_string(),
        format!("uri=ui%3A%2F%2Fmail%2Fcompose&server=mail&conversation={APP_CONVERSATION}"),
        "server=mail&uri=ui%3A%2F%2Fmail%2Fcompose".to_string(),
    ] {
        let r = send_as(s, &headers, Method::GET, &format!("/v1/apps/resource?{query}"), b"").await?;
        check_shape(r, &format!("resource headers with ?{query}"), 401, None).await?;
    }
    let r = send_as(s, &headers, Method::GET, &format!("/v1/apps/resource?{signed_query}"), b"").await?;
    ensure!(r.status() == 200, "the signed query answered {}", r.status());
    Ok(())
}

/// An app that still signs the earlier form (no method, path or query) is refused with 401
/// and its own code, `signature_outdated`, on any route; nothing it sent is done.
pub async fn an_outdated_app_is_told_so(s: &Stack) -> Result<()> {
    let marker = "g1-outdated";
    s.script(marker, json!([{"text": "kept"}]));
    ensure!(s.chat("alice", marker, &format!("{marker} hello")).await?.status == 200);
    let (ts, nonce) = (unix_now(), fresh_nonce());
    let old = format!(
        "alice\n{ts}\n{nonce}\n{}\n{}",
        g1_signing::sha256_hex(b""),
        g1_signing::sha256_hex(b"")
    );
    let signature = hex::encode(g1_signing::hmac_sha256(
        test_harness::orchestrator::SIGNING_SECRET.as_bytes(),
        old.as_bytes(),
    ));
    let headers = vec![
        ("authorization".to_string(), format!("Bearer {PROXY_SECRET}")),
        ("x-tamebi-uid".to_string(), "alice".to_string()),
        ("x-tamebi-ts".to_string(), ts.to_string()),
        ("x-tamebi-nonce".to_string(), nonce),
        ("x-tamebi-signature".to_string(), signature),
    ];
    for (method, target) in [(Method::GET, "/v1/conversations"), (Method::DELETE, "/v1/me/data")] {
        let r = send_as(s, &headers, method.clone(), target, b"").await?;
        let text = r.text().await?;
        let v: Value = serde_json::from_str(&text).with_context(|| format!("{method} {target}: {text}"))?;
        ensure!(
            v["error"]["code"] == "signature_outdated" && v["error"]["message"] == tamebi::error::messages::SIGNATURE_OUTDATED,
            "{method} {target}: {v}"
        );
        let r = send_as(s, &headers, method.clone(), target, b"").await?;
        check_shape(r, &format!("outdated {method} {target}"), 401, None).await?;
    }
    let (status, _) = conversation_status(s, marker).await?;
    ensure!(status == 200, "alice's conversation answers {status} after the outdated DELETE");
    Ok(())
}
