//! Mail end to end in a real Chromium (issue 12): a scripted-model turn searches, reads and
//! composes; the compose app renders in its sandboxed frame; a frame's own request to send
//! and a cancelled confirmation send nothing; Send in the frame followed by the island's own
//! confirmation sends exactly one mail, and the stand-in's SMTP sink holds exactly the
//! fields the frame and the confirmation showed. The dispatch is audited. A send whose outcome
//! is unknown (the sink's scripted `unclear.example.net`: delivered, then 451; and
//! `slow.example.net`: delivered, answered after mcp-mail's `MAIL_BRIDGE_TIMEOUT_SECS`) shows
//! the tool's message telling the person to check the Sent folder, keeps Send off and offers
//! no retry: the sink holds that mail exactly once.
//!
//! Stack: the Nextcloud stand-in (mail bridge + SMTP sink), mcp-mail, the scripted model, the
//! `tamebi` orchestrator (`mail=…;auth=nextcloud`) and the island's dev host. Nothing skips.

#![expect(clippy::expect_used, reason = "helpers of a test file fail the test by panicking")]

use std::time::Duration;

use serde_json::{Value, json};
use test_harness::island::{DevHost, check, island_dir, require_chromium, require_node_modules, run_node_json};
use test_harness::mcp_mail::{McpMail, sent_mail};
use test_harness::mcp_server::McpServer;
use test_harness::orchestrator::{Options, Orchestrator};
use test_harness::scripted_model::ScriptedModel;
use test_harness::standin::Standin;
use test_harness::workspace_root;

/// What the demo prompt asks for (dev/scripted-model/demo.json plays the turn).
const PROMPT: &str = "Write a mail to Bob about the budget";

/// mcp-mail's bridge timeout here: well above a loopback bridge call, well below the sink's
/// 8 s delay for `slow.example.net`.
const BRIDGE_TIMEOUT_SECS: &str = "5";
/// The scripted turns that compose a mail whose send has an unknown outcome: (prompt, recipient).
const UNCLEAR: (&str, &str) = ("Write to Carol that the report is late", "carol@unclear.example.net");
const SLOW: (&str, &str) = ("Write to Sam that the minutes are out", "sam@slow.example.net");

/// A rule that composes a short mail to `to` when the person says `prompt`.
fn compose_rule((prompt, to): (&str, &str)) -> Value {
    json!({"match": prompt, "steps": [
        {"tool_calls": [{"name": "mail_compose", "arguments": {"to": [to], "subject": prompt, "body": format!("{prompt}.\n\nAlice")}}]},
        {"text": "Here is the mail; press Send under it when it looks right."}
    ]})
}

/// mcp-mail's outcome_unknown message, as the compose frame shows it: (start, the Sent folder).
const TOOL_SAYS: (&str, &str) = (
    "It is not known whether the mail was sent",
    "Check the Sent folder before sending it again",
);
/// The island's own message when a confirmed dispatch got no answer (island/src/apps/host.ts).
const ISLAND_SAYS: (&str, &str) = ("No answer came back", "your Sent folder");

/// What the person sees after a send with an unknown outcome (`check` from mail.mjs); `says`
/// is how the frame's message starts and the Sent-folder words it must hold.
fn assert_unknown_outcome(c: &Value, to: &str, says: (&str, &str)) {
    assert_eq!(c["to"], to, "{c}");
    assert_eq!(c["confirmTo"], to, "{c}");
    // One dispatch, of mail_send to that recipient.
    let dispatched = c["dispatched"].as_array().expect("dispatched");
    assert_eq!(dispatched.len(), 1, "{c}");
    assert_eq!(
        (&dispatched[0]["name"], &dispatched[0]["arguments"]["to"]),
        (&json!("mail_send"), &json!([to])),
        "{c}"
    );
    // The tool's own outcome_unknown message, shown as a failure, names the Sent folder.
    let status = c["frameStatus"].as_str().expect("frame status");
    assert!(status.starts_with(says.0), "{c}");
    assert!(status.contains(says.1), "{c}");
    assert_eq!(c["frameStatusClass"], "status bad", "{c}");
    // Send (and Save draft) stay off: a click changes nothing, the island asks nothing more.
    assert_eq!(
        c["frameButtons"],
        json!([{"text": "Send", "disabled": true}, {"text": "Save draft", "disabled": true}]),
        "{c}"
    );
    assert_eq!(c["frameStatusAfterClick"], status, "{c}");
    assert_eq!(c["cardsAfter"], 0, "{c}");
    let island = c["islandButtons"].as_array().expect("island buttons");
    assert!(
        island
            .iter()
            .filter_map(Value::as_str)
            .all(|b| !b.to_lowercase().contains("retry") && !b.to_lowercase().contains("try again")),
        "{c}"
    );
}

/// The demo's mail_compose arguments: (subject, body), read from the demo script itself so
/// this test proves the demo `scripts/dev` plays.
fn demo_mail() -> (String, String) {
    let path = workspace_root().join("dev/scripted-model/demo.json");
    let demo: Value = serde_json::from_slice(&std::fs::read(&path).expect("demo.json")).expect("demo.json is JSON");
    let rule = demo["rules"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["match"].as_str().is_some_and(|m| PROMPT.contains(m)))
        .expect("a demo rule for the mail prompt");
    let compose = rule["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|s| s["tool_calls"].as_array().cloned().unwrap_or_default())
        .find(|c| c["name"] == "mail_compose")
        .expect("the demo composes a mail");
    let text = |k: &str| compose["arguments"][k].as_str().expect("a string argument").to_string();
    (text("subject"), text("body"))
}

/// The stack a browser run needs, stopped together when dropped (the dev host first).
struct Stack {
    host: DevHost,
    orch: Orchestrator,
    _model: ScriptedModel,
    _mail: McpServer,
    standin: Standin,
}

/// Starts the stand-in, mcp-mail (with `mail_env`), the scripted model (demo.json, with
/// `rules` in front), the orchestrator (with `orch_env`) and the island's dev host.
async fn start_stack(mail_env: &[(&str, &str)], orch_env: &[(&str, &str)], rules: Value) -> Stack {
    require_chromium();
    require_node_modules(
        &island_dir(),
        "playwright-core",
        "scripts/install.d/40-island.sh (npm ci in island/)",
    );
    let standin = tokio::task::spawn_blocking(Standin::start).await.expect("stand-in");
    let mail = McpMail::start(standin.url(), mail_env);
    let model = ScriptedModel::start_with_scripts(&workspace_root().join("dev/scripted-model/demo.json"));
    model.add_rules(rules);
    let mut options = Options {
        model_url: model.url(),
        mcp_servers: format!("mail={};auth=nextcloud", mail.url()),
        ..Options::default()
    };
    options
        .extra_env
        .extend(orch_env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let orch = Orchestrator::start(options);
    let host = DevHost::start_with_servers(
        &orch.url(),
        standin.url(),
        &[("alice", standin.app_password("alice")), ("bob", standin.app_password("bob"))],
        &["mail"],
    );
    Stack {
        host,
        orch,
        _model: model,
        _mail: mail,
        standin,
    }
}

/// Runs browser-tests/mail.mjs against `stack` with `env` added; returns its report.
async fn run_browser(stack: &Stack, artifacts: &str, env: &[(&'static str, String)]) -> Value {
    let artifacts = workspace_root().join("test-artifacts").join(artifacts);
    let mut env = env.to_vec();
    env.extend([
        ("BASE_URL", stack.host.url().to_string()),
        ("ARTIFACTS", artifacts.display().to_string()),
        ("PATH", std::env::var("PATH").unwrap_or_default()),
        ("TZ", "UTC".to_string()),
    ]);
    let report =
        tokio::task::spawn_blocking(move || run_node_json(&island_dir(), "browser-tests/mail.mjs", &[], &env, Duration::from_secs(240)))
            .await
            .expect("browser run");
    eprintln!("browser report: {report:#}");
    report
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compose_confirm_and_send_in_chromium() {
    let stack = start_stack(
        &[("MAIL_BRIDGE_TIMEOUT_SECS", BRIDGE_TIMEOUT_SECS)],
        &[],
        json!([compose_rule(UNCLEAR), compose_rule(SLOW)]),
    )
    .await;
    let (standin, orch) = (&stack.standin, &stack.orch);
    let (subject, body) = demo_mail();
    let outcomes = json!({"unclear_outcome_is_not_retried": UNCLEAR.0, "timed_out_send_is_not_retried": SLOW.0});
    let report = run_browser(&stack, "mail-browser", &[("UNKNOWN_OUTCOMES", outcomes.to_string())]).await;

    // The turn searched, read and composed; the compose app shows the mail as it will go out.
    let c = check(&report, "compose_frame_renders");
    assert_eq!(c["tools"], json!(["mail_search", "mail_read", "mail_compose"]));
    assert_eq!(c["sandbox"], "allow-scripts");
    test_harness::island::assert_frame_src(c, "/apps/tamebi/frame?server=mail&uri=ui%3A%2F%2Fmail%2Fcompose");
    assert_eq!(
        c["shown"],
        json!({"from": "Alice Adams <alice@example.com>", "to": "bob@example.com", "subject": subject, "body": body})
    );

    // Issue #34: the compose frame is drawn in the page's theme, not the OS's, both ways, and
    // follows a change without a reload; axe finds nothing inside it, light or dark.
    let c = check(&report, "compose_frame_follows_the_page_theme");
    test_harness::island::assert_frame_matches_page(&c["osDarkPageLight"], "light", "rgb(255, 255, 255)");
    test_harness::island::assert_frame_matches_page(&c["osLightPageDark"], "dark", "rgb(23, 23, 23)");
    assert_eq!(c["notReloaded"], true, "{c}");
    test_harness::island::assert_no_axe_violations(&c["axeLight"], "the compose frame (light)");
    test_harness::island::assert_no_axe_violations(&c["axeDark"], "the compose frame (dark)");

    // The frame asking by itself: the island asks the person, nothing reaches the dispatch door.
    let c = check(&report, "frame_request_alone_sends_nothing");
    assert!(
        c["cardText"].as_str().is_some_and(|t| t.contains("archive@attacker.example.net")),
        "{c}"
    );
    assert_eq!(c["whileAsking"], json!(["/apps/tamebi/api/apps/tools/describe"]), "{c}");
    assert_eq!(c["after"], json!(["/apps/tamebi/api/apps/tools/describe"]), "{c}");
    assert!(
        c["reply"]["error"]["message"].as_str().is_some_and(|m| m.contains("Cancelled")),
        "{c}"
    );

    // Send in the frame, Cancel in the island: nothing dispatched.
    let c = check(&report, "cancel_in_the_island_sends_nothing");
    // Issue #34: focus meets the island's confirmation on Cancel and returns to the composer;
    // axe finds nothing on the page while it asks.
    assert_eq!(c["focusOnCard"], "cancel-dispatch", "{c}");
    assert_eq!(c["focusAfter"], "composer", "{c}");
    test_harness::island::assert_no_axe_violations(&c["axe"], "the page with the mail confirmation");
    assert_eq!(
        c["confirmation"],
        json!({"to": "bob@example.com", "subject": subject, "body": body}),
        "{c}"
    );
    assert_eq!(c["dispatched"], json!([]), "{c}");
    assert_eq!(c["frameStatus"], "Not sent.");

    // Send in the frame, Send in the island: exactly the confirmed arguments, once.
    let c = check(&report, "confirm_in_the_island_sends");
    // Issue #34: focus meets the island's confirmation on Cancel and returns to the composer;
    // axe finds nothing on the page while it asks.
    assert_eq!(c["focusOnCard"], "cancel-dispatch", "{c}");
    assert_eq!(c["focusAfter"], "composer", "{c}");
    test_harness::island::assert_no_axe_violations(&c["axe"], "the page with the mail confirmation");
    assert_eq!(
        c["confirmation"],
        json!({"to": "bob@example.com", "subject": subject, "body": body}),
        "{c}"
    );
    // The island names the frame's conversation (the orchestrator lets the frame reach only what
    // that conversation's assistant allows; the dispatch ran, so alice has that conversation).
    let frame_conversation = c["dispatched"][0]["conversation"].as_str().unwrap_or_default().to_string();
    assert!(!frame_conversation.is_empty(), "{c}");
    assert_eq!(
        c["dispatched"],
        json!([{"conversation": frame_conversation, "server": "mail", "name": "mail_send", "arguments": {
            "account_id": 1, "to": ["bob@example.com"], "cc": [], "bcc": [], "subject": subject, "body": body, "in_reply_to": 1}}])
    );
    assert_eq!(c["frameStatus"], "Sent.");

    // A send with an unknown outcome: the tool's message, Send off, no retry (each once).
    assert_unknown_outcome(check(&report, "unclear_outcome_is_not_retried"), UNCLEAR.1, TOOL_SAYS);
    assert_unknown_outcome(check(&report, "timed_out_send_is_not_retried"), SLOW.1, TOOL_SAYS);

    // The SMTP sink holds exactly one message per send (in no set order), Bob's with exactly
    // the shown fields.
    let sink = sent_mail(standin.url()).await;
    let mut recipients: Vec<String> = sink.iter().map(|m| m["rcpt_to"].to_string()).collect();
    recipients.sort();
    let mut expected: Vec<String> = [json!(["bob@example.com"]), json!([UNCLEAR.1]), json!([SLOW.1])]
        .iter()
        .map(Value::to_string)
        .collect();
    expected.sort();
    assert_eq!(recipients, expected, "{sink:#?}");
    let m = sink
        .iter()
        .find(|m| m["rcpt_to"] == json!(["bob@example.com"]))
        .expect("Bob's mail");
    assert_eq!(m["from"], "Alice Adams <alice@example.com>");
    assert_eq!(m["to"], "bob@example.com");
    assert_eq!(m["cc"], "");
    assert_eq!(m["rcpt_to"], json!(["bob@example.com"]));
    assert_eq!(m["subject"], subject.as_str());
    assert_eq!(m["body"], format!("{body}\n"));
    assert_eq!(m["in_reply_to"], "<budget-q3@example.com>");

    // The dispatch is on record: who, which tool, the arguments' hash, the result.
    let db = rusqlite::Connection::open_with_flags(orch.data_dir().join("audit.db"), rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .expect("audit.db");
    type Row = (String, String, String, Option<String>, String, Option<String>);
    let rows: Vec<Row> = db
        .prepare("SELECT kind, uid, tool, arguments_sha256, outcome, conversation_id FROM audit WHERE tool = 'mail_send' ORDER BY seq")
        .expect("query")
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)))
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("rows");
    // The two sends with an unknown outcome are on record as failed dispatches.
    let summary: Vec<(&str, &str, &str)> = rows.iter().map(|r| (r.0.as_str(), r.1.as_str(), r.4.as_str())).collect();
    assert_eq!(
        summary,
        [
            ("app_dispatch", "alice", "ok"),
            ("app_dispatch", "alice", "error"),
            ("app_dispatch", "alice", "error")
        ],
        "{rows:?}"
    );
    assert_eq!(
        rows[0].5.as_deref(),
        Some(frame_conversation.as_str()),
        "the dispatch is on the conversation's record"
    );
    // The hash is of exactly the arguments the person confirmed and the island dispatched.
    let confirmed = &c["dispatched"][0]["arguments"];
    assert_eq!(
        rows[0].3.as_deref(),
        Some(tamebi::turn::arguments_hash(confirmed).as_str()),
        "{rows:?}"
    );
}

/// The orchestrator's own tool timeout runs out before anything answers a confirmed send
/// (the sink holds `slow.example.net` mail for 8 s, mcp-mail waits its default 60 s): the
/// dispatch door answers 500, and the island tells the frame the outcome is unknown, so the
/// frame keeps Send off rather than offering the click that would send the mail twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dispatch_without_an_answer_is_not_retried_in_chromium() {
    const NO_ANSWER: (&str, &str) = ("Write to Tom that the agenda is ready", "tom@slow.example.net");
    let stack = start_stack(&[], &[("TAMEBI_TOOL_TIMEOUT_SECS", "5")], json!([compose_rule(NO_ANSWER)])).await;
    let outcomes = json!({"no_answer_is_not_retried": NO_ANSWER.0});
    let report = run_browser(
        &stack,
        "mail-browser-no-answer",
        &[("UNKNOWN_OUTCOMES", outcomes.to_string()), ("DEMO", "0".to_string())],
    )
    .await;
    assert_unknown_outcome(check(&report, "no_answer_is_not_retried"), NO_ANSWER.1, ISLAND_SAYS);
    let sink = sent_mail(stack.standin.url()).await;
    let recipients: Vec<&Value> = sink.iter().map(|m| &m["rcpt_to"]).collect();
    assert_eq!(recipients, [&json!([NO_ANSWER.1])], "{sink:#?}");
}
