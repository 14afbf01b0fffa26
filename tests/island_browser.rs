//! End to end in a real Chromium: the island, its MCP Apps host and the approval card (issue 6).
//!
//! One stack (the seeded Nextcloud stand-in, mcp-nextcloud, the scripted model, the `tamebi`
//! orchestrator and the island's dev host) and one browser launch serve every check:
//! `island/browser-tests/run.mjs` drives the page and reports what the browser observed as
//! JSON; this file decides what that observation must be, and checks the stand-in's state
//! over WebDAV with alice's own app password afterwards.
//!
//! Nothing here skips: a missing Chromium, bundle or npm package fails the test and names
//! the install step that provides it.

#![expect(clippy::expect_used, reason = "helpers of a test file fail the test by panicking")]

use std::time::Duration;

use serde_json::{Value, json};
use test_harness::island::{
    DevHost, assert_frame_matches_page, assert_no_axe_violations, check, island_dir, require_chromium, require_node_modules, run_node_json,
};
use test_harness::mcp_nextcloud::McpNextcloud;
use test_harness::orchestrator::{Options, Orchestrator};
use test_harness::probe_mcp::ProbeMcp;
use test_harness::scripted_model::ScriptedModel;
use test_harness::standin::Standin;
use test_harness::workspace_root;

const APPROVED_NOTE: &str = "Written after a person approved it.";
/// Issue #29: what the Smart Picker's turn writes (after approval) and answers.
const PICKER_NOTE: &str = "Written from Talk's Smart Picker.";
const PICKER_ANSWER: &str = "Saved the picker note.";
/// The days of the week grid for 12 January 2026, Monday first (in en-GB and in German alike).
const WEEK_OF_12_JANUARY: [&str; 7] = [
    "2026-01-12",
    "2026-01-13",
    "2026-01-14",
    "2026-01-15",
    "2026-01-16",
    "2026-01-17",
    "2026-01-18",
];

const ASSISTANTS: &str = r#"
[[assistant]]
name = "default"
description = "Files, calendar, contacts and boards."
tools = ["*/*"]

[[assistant]]
name = "planner"
description = "Your calendar only."
tools = ["nextcloud/calendar_*"]
"#;

fn rules() -> Value {
    json!([
        {"match": "week of 12 January 2026", "steps": [
            {"tool_calls": [{"name": "calendar_events", "arguments": {"from": "2026-01-12", "to": "2026-01-18"}}]},
            {"text": "Here is your week of 12 January 2026.", "chunk_chars": 8}
        ]},
        {"match": "List my files", "steps": [
            {"tool_calls": [{"name": "files_list", "arguments": {"path": "/"}}]},
            {"text": "Those are your files.", "chunk_chars": 8}
        ]},
        {"match": "write the approved note", "steps": [
            {"tool_calls": [{"name": "files_write", "arguments": {"path": "/approved-note.txt", "content": APPROVED_NOTE}}]},
            {"text": "Saved the note.", "chunk_chars": 8}
        ]},
        {"match": "planner check", "steps": [
            {"tool_calls": [{"name": "files_list", "arguments": {"path": "/"}}]},
            {"text": "Only your calendar is mine to read.", "chunk_chars": 8}
        ]},
        {"match": "code check", "steps": [{"text": "Noted.", "chunk_chars": 8}]},
        {"match": "stop check", "steps": [{"text": "Stopped half-way, this answer would go on for half a minute. ".repeat(5), "chunk_chars": 1, "delay_ms": 100}]},
        {"match": "write the picker note", "steps": [
            {"tool_calls": [{"name": "files_write", "arguments": {"path": "/picker-note.txt", "content": PICKER_NOTE}}]},
            {"text": PICKER_ANSWER, "chunk_chars": 8}
        ]},
        {"match": "picker small talk", "steps": [{"text": "Hello from the picker.", "chunk_chars": 8}]},
        {"match": "write the denied note", "steps": [
            {"tool_calls": [{"name": "files_write", "arguments": {"path": "/denied-note.txt", "content": "This must never be written."}}]},
            {"text": "Understood, I did not write it.", "chunk_chars": 8}
        ]}
    ])
}

/// GET a file of alice's over WebDAV with her own app password: (status, body).
async fn dav_get(standin: &Standin, path: &str) -> (u16, String) {
    let client = reqwest::Client::builder().timeout(Duration::from_secs(20)).build().expect("client");
    let r = client
        .get(standin.dav_url("alice", path))
        .header("authorization", standin.basic("alice"))
        .send()
        .await
        .expect("WebDAV GET");
    let status = r.status().as_u16();
    (status, r.text().await.unwrap_or_default())
}

/// The admin settings section, rendered from `nextcloud-app/templates/admin.php` by PHP's CLI
/// (`nextcloud-app/tests/AdminPage.php`: Nextcloud's escaping, a status taking every branch),
/// written into `artifacts`; the browser script places it in a Nextcloud-like page for axe.
fn render_admin_section(artifacts: &std::path::Path) -> std::path::PathBuf {
    let out = std::process::Command::new("php")
        .arg(workspace_root().join("nextcloud-app/tests/AdminPage.php"))
        .output()
        .expect("php (scripts/install.d/30-php.sh installs it)");
    assert!(
        out.status.success(),
        "rendering the admin page: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::create_dir_all(artifacts).expect("artifacts dir");
    let file = artifacts.join("admin-section.html");
    std::fs::write(&file, &out.stdout).expect("admin section");
    file
}

/// Focus moved to the approval card's first button when it appeared, with a visible outline,
/// and back to the composer after the decision (issue #34).
fn assert_focus_on_card_then_composer(c: &Value) {
    assert_eq!(c["focusOnCard"]["testid"], "approve", "{c}");
    assert_eq!(c["focusOnCard"]["first"], true, "{c}");
    assert_ne!(c["focusOnCard"]["outline"], "none", "the focused button shows no focus: {c}");
    assert_eq!(c["focusAfter"], "composer", "{c}");
}

/// Issue #29, what the browser saw in the Smart Picker: a compact chat that inserts exactly the
/// answer or a host-built link into the host's composer on the person's click and nothing on
/// Cancel, whose conversation is listed "from Talk" and continues on the main page.
fn assert_smart_picker(report: &Value, nc_url: &str) {
    let c = check(report, "picker_inserts_the_answer_after_an_approval");
    assert_eq!(c["providers"], json!(["Ask Tamebi"]), "{c}");
    assert_eq!(
        (&c["sidebar"], &c["memoryToggle"]),
        (&json!(0), &json!(0)),
        "one conversation, no sidebar: {c}"
    );
    assert_eq!(c["insertBeforeReply"], 0, "nothing to insert before a reply: {c}");
    assert_eq!(c["insertWhileAsking"], 0, "nothing to insert while an approval is open: {c}");
    assert_eq!(c["composerBefore"], "", "nothing inserted before the click: {c}");
    assert_eq!(c["composer"], PICKER_ANSWER, "the composer holds exactly the answer: {c}");
    let origins = c["origins"].as_array().expect("origins");
    assert!(
        !origins.is_empty() && origins.iter().all(|o| o == "talk"),
        "every picker turn says it comes from Talk: {c}"
    );
    let files = format!("{nc_url}/apps/files/?fileid=");
    let links = c["links"].as_array().expect("links");
    assert!(
        links
            .iter()
            .any(|l| l["text"] == "Insert link to file picker-note.txt" && l["url"].as_str().is_some_and(|u| u.starts_with(&files))),
        "the written file is offered as a host-built link: {c}"
    );

    let c = check(report, "picker_cancel_inserts_nothing");
    assert_eq!(c["before"], PICKER_ANSWER, "{c}");
    assert_eq!(c["after"], c["before"], "Cancel inserted something: {c}");

    let c = check(report, "picker_inserts_a_host_built_link");
    let chosen = c["chosen"].as_str().unwrap_or_default();
    let id = chosen.strip_prefix(&files).unwrap_or_default();
    assert!(!id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()), "{c}");
    assert_eq!(c["composer"], chosen, "the composer holds exactly the link: {c}");
    let links = c["links"].as_array().expect("links");
    assert!(
        links
            .iter()
            .all(|l| l["url"].as_str().is_some_and(|u| u.starts_with(&format!("{nc_url}/apps/files/?")))),
        "every link is one the host built for alice's Nextcloud: {c}"
    );

    let c = check(report, "picker_conversation_continues_on_the_main_page");
    let marked = c["marked"].as_array().expect("marked");
    assert!(
        marked
            .iter()
            .any(|m| m["title"] == "Please write the picker note" && m["origin"] == "from Talk"),
        "{c}"
    );
    assert!(
        marked.iter().any(|m| m["origin"].is_null()),
        "a conversation from the main page has no mark: {c}"
    );
    let ids = c["continuedIds"].as_array().expect("ids");
    assert!(
        !ids.is_empty() && ids.iter().all(|i| *i == c["pickerId"]),
        "continued in the picker's conversation: {c}"
    );
    assert!(c["continuedOrigins"].as_array().expect("origins").iter().all(Value::is_null), "{c}");
    assert_eq!(c["originAfter"], "from Talk", "continuing keeps where it was started: {c}");
    assert_eq!(report["pageErrors"], json!([]), "uncaught errors in the Smart Picker");
}

/// Sets one of `uid`'s own Nextcloud settings (`language`, `locale`) as they would in their
/// personal settings: the stand-in's OCS `PUT cloud/users/{uid}`, as that user.
async fn set_nextcloud_setting(standin: &Standin, uid: &str, key: &str, value: &str) {
    let client = reqwest::Client::builder().timeout(Duration::from_secs(20)).build().expect("client");
    let r = client
        .put(format!("{}/ocs/v2.php/cloud/users/{uid}", standin.url()))
        .header("authorization", standin.basic(uid))
        .header("ocs-apirequest", "true")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("key={key}&value={value}"))
        .send()
        .await
        .expect("PUT cloud/users");
    assert_eq!(r.status().as_u16(), 200, "{key}={value}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_island_and_its_apps_in_chromium() {
    require_chromium();
    require_node_modules(
        &island_dir(),
        "playwright-core",
        "scripts/install.d/40-island.sh (npm ci in island/)",
    );

    let standin = tokio::task::spawn_blocking(Standin::start_seeded).await.expect("stand-in");
    let mcp = McpNextcloud::start(standin.url());
    let model = ScriptedModel::start();
    model.add_rules(rules());
    // Two assistants, so the island shows its picker: the default with every tool, and a
    // planner restricted to calendar tools.
    let assistants_dir = tempfile::tempdir().expect("assistants dir");
    let assistants_file = assistants_dir.path().join("assistants.toml");
    std::fs::write(&assistants_file, ASSISTANTS).expect("assistants file");
    let orch = Orchestrator::start(Options {
        model_url: model.url(),
        mcp_servers: format!("nextcloud={};auth=nextcloud", mcp.url()),
        extra_env: vec![("TAMEBI_ASSISTANTS".into(), assistants_file.display().to_string())],
    });
    let host = DevHost::start(
        &orch.url(),
        standin.url(),
        &[("alice", standin.app_password("alice")), ("bob", standin.app_password("bob"))],
    );

    // alice's Nextcloud locale is British English, like her browser's: the page says so
    // (data-locale), and the frames format dates by it (issue #34).
    set_nextcloud_setting(&standin, "alice", "locale", "en_GB").await;

    let artifacts = workspace_root().join("test-artifacts/island-browser");
    let admin_section = render_admin_section(&artifacts);
    let node_env = vec![
        ("ADMIN_SECTION", admin_section.display().to_string()),
        ("BASE_URL", host.url().to_string()),
        ("NC_URL", standin.url().to_string()),
        ("ARTIFACTS", artifacts.display().to_string()),
        ("PATH", std::env::var("PATH").unwrap_or_default()),
        ("TZ", "UTC".to_string()),
    ];
    let report = tokio::task::spawn_blocking({
        let env = node_env.clone();
        move || run_node_json(&island_dir(), "browser-tests/run.mjs", &[], &env, Duration::from_secs(360))
    })
    .await
    .expect("browser run");
    eprintln!("browser report: {report:#}");

    // 1. The week grid, in a frame sandboxed to scripts only, loaded from the frame route.
    let c = check(&report, "calendar_week_renders_in_sandboxed_frame");
    assert_eq!(c["sandbox"], "allow-scripts");
    assert_eq!(c["srcdoc"], Value::Null);
    test_harness::island::assert_frame_src(c, "/apps/tamebi/frame?server=nextcloud&uri=ui%3A%2F%2Fnextcloud%2Fcalendar-week");
    assert!(
        c["frameUrl"]
            .as_str()
            .is_some_and(|u| u.starts_with(&format!("{}/apps/tamebi/frame?", host.url()))),
        "{c}"
    );
    assert_eq!(c["title"], "Week of 12 January 2026");
    assert_eq!(c["days"], json!(WEEK_OF_12_JANUARY));
    assert_eq!(c["events"], json!(["10:00–11:00 Quarterly planning"]));
    assert_eq!(c["eventDay"], 3, "the event sits in Thursday's column");

    // Issue #34: the conversation is a polite live log under the page's one heading; while a
    // reply streams the log is busy, and the reply is announced as a whole sentence, once.
    let c = check(&report, "conversation_is_a_live_log");
    assert_eq!(
        (&c["role"], &c["live"], &c["busyNow"]),
        (&json!("log"), &json!("polite"), &json!("false")),
        "{c}"
    );
    assert_eq!(c["headings"], json!(["Chat with Tamebi"]), "{c}");
    assert!(
        c["seen"]["busy"].as_array().is_some_and(|b| b.contains(&json!("true"))),
        "the log was never busy while the reply streamed: {c}"
    );
    assert_eq!(c["seen"]["announced"], json!(["Here is your week of 12 January 2026."]), "{c}");

    // Issue #34: the frame is drawn in the page's theme, never the OS's: light inside a light
    // page under an OS set to dark, dark inside a dark page under an OS set to light, Nextcloud's
    // high-contrast colours when the page has them, each change followed without a reload.
    let c = check(&report, "frame_follows_the_page_theme");
    assert_frame_matches_page(&c["osDarkPageLight"], "light", "rgb(255, 255, 255)");
    assert_frame_matches_page(&c["osLightPageDark"], "dark", "rgb(23, 23, 23)");
    assert_frame_matches_page(&c["highContrast"], "light", "rgb(255, 255, 255)");
    assert_eq!(c["highContrast"]["frame"]["text"], "rgb(0, 0, 0)", "{c}");
    assert_frame_matches_page(&c["restored"], "light", "rgb(255, 255, 255)");
    assert_eq!(c["notReloaded"], true, "the frame reloaded to change its theme: {c}");

    // 2. Inside the frame: an opaque origin, no host cookie, no parent DOM, no network.
    let c = check(&report, "frame_is_isolated_from_the_host");
    assert!(
        c["hostCookie"].as_str().is_some_and(|s| s.contains("tamebi_host_marker=")),
        "the host can read its own cookie: {c}"
    );
    assert_eq!(c["origin"], "null");
    assert_eq!(c["cookie"]["readable"], false, "{c}");
    assert_eq!(c["parentDocument"]["readable"], false, "{c}");
    assert_eq!(c["parentDocument"]["error"], "SecurityError");
    assert_eq!(c["fetch"]["blocked"], true, "{c}");
    assert_eq!(c["fetch"]["violations"], json!(["connect-src"]), "{c}");
    assert_eq!(c["frameRequests"], json!([]), "a frame request left the browser: {c}");

    // 3. tools/call from a frame: an effectful tool is 403 at the orchestrator and an error in
    //    the frame; the read-only calendar_event_get answers (the app shows the details).
    let c = check(&report, "frame_tool_calls_are_read_only");
    assert_eq!(c["write"]["result"], Value::Null, "{c}");
    assert_eq!(c["write"]["error"]["message"], "This action is not allowed.", "{c}");
    // The island asks which door a tool needs first; a write is not app-only, so it goes to
    // the relay, which refuses it.
    assert_eq!(
        c["writeRelay"],
        json!([{"path": "/apps/tamebi/api/apps/tools/describe", "status": 200}, {"path": "/apps/tamebi/api/apps/tools/call", "status": 403}])
    );
    assert_eq!(
        c["readRelay"],
        json!([{"path": "/apps/tamebi/api/apps/tools/describe", "status": 200}, {"path": "/apps/tamebi/api/apps/tools/call", "status": 200}])
    );
    let details = c["detailsText"].as_str().unwrap_or_default();
    assert!(details.contains("Quarterly planning") && details.contains("Room 1"), "{details}");

    // 4. Links: only tamebi: targets, built by the host; a 99999 px resize is clamped to 1200.
    let c = check(&report, "open_link_and_resize_are_policed");
    for probe in ["evil", "evilHttps"] {
        assert_eq!(c[probe]["result"], Value::Null, "{probe}: {c}");
        assert!(
            c[probe]["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("Policy violation")),
            "{probe}: {c}"
        );
    }
    assert_eq!(c["pagesAfterEvil"], c["pagesBefore"], "a refused link opened a page: {c}");
    assert_eq!(c["fallbackAfterEvil"], 0);
    assert_eq!(c["day"]["result"], json!({}));
    let expected = c["expectedDayUrl"].as_str().expect("expected url");
    // Popups are allowed in this browser, so the tab opens on the host-built URL and no
    // fallback link is shown.
    assert_eq!(c["opened"]["url"], expected, "{c}");
    assert_eq!(c["fallbackHref"], Value::Null, "{c}");
    assert_eq!(c["height"]["style"], "1200px");
    assert_eq!(c["height"]["rect"], 1200);

    // 5. A document altered by one byte after its policy was built: its script is refused,
    //    while the same document unaltered, served the same way, runs.
    let c = check(&report, "tampered_document_does_not_run");
    let served = &c["served"];
    assert_eq!(served["tampered"]["status"], 200);
    assert_eq!(served["tampered"]["changedBytes"], 1, "{c}");
    assert_eq!(served["original"]["changedBytes"], 0);
    assert!(
        served["tampered"]["csp"]
            .as_str()
            .is_some_and(|p| p.starts_with("default-src 'none'") && p.contains("sha256-")),
        "{c}"
    );
    assert_eq!(
        served["tampered"]["csp"], served["original"]["csp"],
        "both are served with the original policy"
    );
    assert_eq!(c["tampered"]["outcome"], "loaded-without-initialize", "{c}");
    assert_eq!(c["tampered"]["said"], json!([]));
    assert!(
        c["refused"].as_array().is_some_and(|r| !r.is_empty()),
        "Chromium did not report the refused script: {c}"
    );
    assert!(
        c["refused"][0]["url"].as_str().is_some_and(|u| u.contains("probe=tampered")),
        "the refusal is the tampered frame's: {c}"
    );
    assert_eq!(c["control"]["outcome"], "initialized", "the unaltered document must run: {c}");

    // Issue #34: axe-core finds nothing, of any impact, on the page (with the week frame in it)
    // nor inside the week frame on its own, in each of Nextcloud's themes.
    let c = check(&report, "axe_main_page_and_week_frame_in_every_theme");
    for theme in ["light", "dark", "light-highcontrast", "dark-highcontrast"] {
        assert_no_axe_violations(&c[theme]["page"], &format!("the main page ({theme})"));
        assert_no_axe_violations(&c[theme]["frame"], &format!("the week frame ({theme})"));
    }

    // 6. The files table, in the same kind of frame, lists alice's top folder (folders first).
    let c = check(&report, "files_table_renders");
    assert_eq!(c["sandbox"], "allow-scripts");
    test_harness::island::assert_frame_src(c, "/apps/tamebi/frame?server=nextcloud&uri=ui%3A%2F%2Fnextcloud%2Ffiles-table");
    let names: Vec<&str> = c["names"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    assert_eq!(names.len(), 3, "{c}");
    assert!(
        names[..2].iter().all(|n| n.ends_with('/')),
        "folders first, marked with a slash: {names:?}"
    );
    assert_eq!(names[2], "notes.txt");
    assert!(c["title"].as_str().is_some_and(|t| t.starts_with("3 items")), "{c}");
    assert_no_axe_violations(&c["axe"], "the files frame");
    let content = c["contentHeight"].as_i64().expect("content height").max(60);
    let frame = c["frameHeight"].as_i64().expect("frame height");
    assert!(
        (frame - content).abs() <= 2,
        "the frame fits its content ({content} px), not {frame} px"
    );

    // 7. Approve: the recorded call ran (the file exists with the content) and the trace
    //    shows its output. Deny: nothing was written and the trace says so.
    let c = check(&report, "approve_runs_the_recorded_call");
    assert!(
        c["cardText"]
            .as_str()
            .is_some_and(|t| t.contains("files_write") && t.contains("/approved-note.txt")),
        "{c}"
    );
    // Issue #27: the card names the server the arguments go to; ours carries no third-party warning.
    assert!(
        c["cardText"]
            .as_str()
            .is_some_and(|t| t.contains("files_write on nextcloud") && !t.contains("third-party")),
        "the card does not name the server: {c}"
    );
    assert_eq!(c["state"], "output-available");
    assert_eq!(c["status"], "done");
    assert!(
        c["trace"]
            .as_str()
            .is_some_and(|t| t.contains("Result") && t.contains("approved-note.txt")),
        "the trace shows the output: {c}"
    );
    assert_eq!(c["cardsLeft"], 0);
    // Issue #34: done with the keyboard alone (Tab to the composer, Enter to send, Enter on the
    // card); focus met the card on its first button, visibly, and came back to the composer.
    assert!(
        c["tabs"].as_i64().is_some_and(|t| (1..40).contains(&t)),
        "Tab never reached the composer: {c}"
    );
    assert_focus_on_card_then_composer(c);
    assert_no_axe_violations(&c["axe"], "the page with an approval card");
    let c = check(&report, "deny_runs_nothing");
    assert_eq!(c["state"], "output-denied");
    assert_eq!(c["status"], "denied");
    assert_eq!(c["cardsLeft"], 0);
    assert_focus_on_card_then_composer(c);

    assert_eq!(dav_get(&standin, "/approved-note.txt").await, (200, APPROVED_NOTE.to_string()));
    assert_eq!(dav_get(&standin, "/denied-note.txt").await.0, 404, "a denied call wrote the file");
    assert_eq!(
        dav_get(&standin, "/written-by-a-frame.txt").await.0,
        404,
        "a frame's tools/call wrote a file"
    );
    // 8. The picker: offered with two assistants, fixed once the conversation has a message;
    //    the planner's conversation was offered calendar tools only, and the files tool the
    //    model named anyway is an error in the trace, not a call.
    let c = check(&report, "assistant_picker_binds_the_conversation");
    assert_eq!(c["options"], json!(["default", "planner"]), "{c}");
    assert_eq!(c["initial"], "default");
    assert_eq!(c["enabledBefore"], true);
    assert_eq!(c["after"], json!({"value": "planner", "enabled": false}), "{c}");
    assert_eq!(c["fresh"], json!({"value": "default", "enabled": true}), "{c}");
    assert!(c["trace"].as_str().is_some_and(|t| t.contains("no tool named files_list")), "{c}");
    let planner_calls: Vec<Value> = model
        .requests()
        .into_iter()
        .filter(|r| r.to_string().contains("planner check"))
        .collect();
    assert_eq!(planner_calls.len(), 2, "two model calls in the planner's turn");
    for r in &planner_calls {
        let offered: Vec<&str> = r["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["function"]["name"].as_str())
            .collect();
        assert!(
            !offered.is_empty() && offered.iter().all(|t| t.starts_with("calendar_")),
            "{offered:?}"
        );
    }

    // 8. A message sent under an earlier message's id: the orchestrator's 409 message_id_taken
    // reaches the island through the dev host as that refusal's own text and code.
    let c = check(&report, "a_refusal_shows_the_text_of_its_code");
    assert_eq!(c["status"], 409, "{c}");
    assert_eq!(c["body"]["error"]["code"], "message_id_taken", "{c}");
    let shown = c["shown"].as_str().unwrap_or_default();
    assert!(
        shown.starts_with("Another message of this conversation already has this id. Send the message under a new id. (request id: "),
        "{c}"
    );
    assert!(!shown.contains("already being written"), "{c}");
    // 8b. Stop: the island calls the stop route, the reply ends at once with its note (the
    //     stored one, in place of the stream's end), and the next message is answered, no 409.
    let c = check(&report, "stop_ends_the_reply_at_once");
    assert_eq!(c["status"], 204, "{c}");
    let note = c["note"].as_str().unwrap_or_default();
    assert!(
        note.starts_with("You stopped this reply. Send your message again to continue. (request id: "),
        "{c}"
    );
    assert_eq!(c["refusal"], Value::Null, "{c}");
    // 9. Issue #34: the admin settings section (rendered by PHP from the app's template), in a
    //    Nextcloud-like page: axe finds nothing in any of Nextcloud's themes.
    let c = check(&report, "axe_admin_page_in_every_theme");
    assert!(
        c["headings"]
            .as_array()
            .is_some_and(|h| h.contains(&json!("Assistants")) && h.contains(&json!("MCP servers"))),
        "the section did not render as with an orchestrator status: {c}"
    );
    for theme in ["light", "dark", "light-highcontrast", "dark-highcontrast"] {
        assert_no_axe_violations(&c[theme], &format!("the admin page ({theme})"));
    }
    assert_eq!(report["pageErrors"], json!([]), "uncaught errors in the island");

    // 9. Issue #29: "Ask Tamebi" in Talk's Smart Picker (the dev host's composer page).
    let picker = tokio::task::spawn_blocking({
        let env = node_env.clone();
        move || run_node_json(&island_dir(), "browser-tests/picker.mjs", &[], &env, Duration::from_secs(180))
    })
    .await
    .expect("browser run (Smart Picker)");
    eprintln!("browser report (Smart Picker): {picker:#}");
    assert_smart_picker(&picker, standin.url());
    let (status, body) = dav_get(&standin, "/picker-note.txt").await;
    assert_eq!(
        (status, body.as_str()),
        (200, PICKER_NOTE),
        "the picker's approved write happened as alice"
    );

    // 10. Issue #34: alice sets her Nextcloud language to German (her personal settings, through
    // the stand-in's OCS API as in Nextcloud); the dev host renders the page for it as Nextcloud
    // does, and the same chat is German: the page, an approval card, the week grid frame (German
    // weekday names, the week starting on Monday); the model is told to answer in German.
    set_nextcloud_setting(&standin, "alice", "language", "de").await;
    set_nextcloud_setting(&standin, "alice", "locale", "de_DE").await;
    let german = tokio::task::spawn_blocking(move || {
        run_node_json(&island_dir(), "browser-tests/german.mjs", &[], &node_env, Duration::from_secs(120))
    })
    .await
    .expect("browser run (German)");
    eprintln!("browser report (German): {german:#}");

    let c = check(&german, "the_page_is_german");
    assert_eq!(c["lang"], "de", "{c}");
    assert_eq!(c["locale"], "de_DE", "{c}");
    assert_eq!(c["newConversation"], "Neue Unterhaltung", "{c}");
    assert_eq!(c["memory"], "Gedächtnis", "{c}");
    assert_eq!(c["send"], "Senden", "{c}");
    assert_eq!(c["mainLabel"], "Chat mit Tamebi", "{c}");
    assert_eq!(
        c["placeholder"], "Nachricht an Tamebi (Eingabe zum Senden, Umschalt+Eingabe für eine neue Zeile)",
        "{c}"
    );

    let c = check(&german, "the_week_grid_is_german_and_starts_on_monday");
    assert_eq!(c["lang"], "de-DE", "the frame got the locale in hostContext: {c}");
    assert_eq!(c["title"], "Woche vom 12. Januar 2026", "{c}");
    assert_eq!(c["days"], json!(WEEK_OF_12_JANUARY), "{c}");
    let heads: Vec<&str> = c["heads"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let weekdays = ["Mo", "Di", "Mi", "Do", "Fr", "Sa", "So"];
    assert!(heads.len() == 7 && heads.iter().zip(weekdays).all(|(h, d)| h.starts_with(d)), "{c}");
    assert_eq!(
        c["firstLabel"].as_str(),
        Some(format!("{}: Montag, 12. Januar im Kalender öffnen", heads[0]).as_str()),
        "the name starts with the text shown: {c}"
    );
    assert_eq!(c["events"], json!(["10:00–11:00 Quarterly planning"]), "{c}");
    assert_eq!(c["status"], "fertig", "{c}");

    let c = check(&german, "the_approval_card_is_german");
    let card = c["cardText"].as_str().unwrap_or_default();
    assert!(card.contains("Tamebi möchte files_write auf nextcloud ausführen:"), "{c}");
    assert_eq!(c["label"], "files_write genehmigen?", "{c}");
    assert_eq!(c["approve"], "Genehmigen", "{c}");
    assert_eq!(c["deny"], "Ablehnen", "{c}");
    assert_eq!(c["status"], "abgelehnt", "{c}");
    assert_eq!(german["pageErrors"], json!([]), "uncaught errors in the German island");

    // The model was told: the German turns' system prompt names the language.
    let told: Vec<Value> = model
        .requests()
        .into_iter()
        .filter(|r| r.to_string().contains("write the denied note"))
        .collect();
    assert!(!told.is_empty(), "the German approval turn reached the model");
    let system = told.last().map(|r| r["messages"][0]["content"].to_string()).unwrap_or_default();
    assert!(system.contains("Answer in German"), "{system}");
}

/// What the probe server lists in the registry check: two read-only tools.
const PROBE_TOOLS: &str = r#"[
    {"name": "calendar_list_events", "description": "Lists events.", "inputSchema": {"type": "object"},
     "annotations": {"readOnlyHint": true}, "reply": {"text": "no events"}},
    {"name": "files_list", "description": "Lists files.", "inputSchema": {"type": "object"},
     "annotations": {"readOnlyHint": true}, "reply": {"text": "notes.txt"}}
]"#;

fn texts(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t.as_str().map(str::to_string))
        .collect()
}

/// Issue #30 in Chromium: the admin settings page registers the probe server and builds an
/// assistant from the tools it lists (seen in the island's picker); a person builds, uses and
/// proposes their own; it reaches the group only after an admin approved that version, and an
/// edit needs approval again. Everything through the dev host's pages and OCS routes, against
/// the real orchestrator and its registry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_registry_pages_in_chromium() {
    require_chromium();
    require_node_modules(
        &island_dir(),
        "playwright-core",
        "scripts/install.d/40-island.sh (npm ci in island/)",
    );
    let probe = ProbeMcp::start();
    probe.set_tools(serde_json::from_str(PROBE_TOOLS).expect("probe tools"));
    let model = ScriptedModel::start();
    let orch = Orchestrator::start(Options {
        model_url: model.url(),
        // An entry of the environment: shown read-only on the admin page.
        mcp_servers: "envserver=http://127.0.0.1:9/mcp;auth=none".into(),
        extra_env: vec![],
    });
    // root is a Nextcloud admin; alice and bob are in staff, carol is not. No user token goes
    // anywhere in this check (no credential server).
    let host = DevHost::start_with_env(
        &orch.url(),
        "",
        &[("root", "pw-root"), ("alice", "pw-alice"), ("bob", "pw-bob"), ("carol", "pw-carol")],
        &[],
        &[("DEV_ADMINS", "root"), ("DEV_GROUPS", "alice:staff,bob:staff")],
    );
    let artifacts = workspace_root().join("test-artifacts/island-browser");
    let env = vec![
        ("BASE_URL", host.url().to_string()),
        ("PROBE_URL", probe.url()),
        ("ARTIFACTS", artifacts.display().to_string()),
        ("PATH", std::env::var("PATH").unwrap_or_default()),
        ("TZ", "UTC".to_string()),
    ];
    let report = tokio::task::spawn_blocking(move || {
        run_node_json(&island_dir(), "browser-tests/registry.mjs", &[], &env, Duration::from_secs(240))
    })
    .await
    .expect("browser run (registry)");
    eprintln!("browser report (registry): {report:#}");

    // The admin page: a bad URL refused in words; the probe registered, healthy, its two tools
    // offered to pick from; the preview shows what a typed pattern matches (and that one matches
    // nothing); the assistant saved with exactly the picked patterns.
    let c = check(&report, "admin_registers_a_server_and_builds_an_assistant");
    assert!(
        c["urlError"].as_str().is_some_and(|e| e.starts_with("Use an absolute http(s) URL")),
        "{c}"
    );
    assert_eq!(c["server"]["health"], "answers", "{c}");
    assert_eq!(texts(&c["server"]["cells"])[4], "2", "{c}");
    let choices = texts(&c["choices"]);
    for expected in ["probe/*", "probe/calendar_list_events", "probe/files_list"] {
        assert!(choices.contains(&expected.to_string()), "{expected} not offered: {c}");
    }
    assert_eq!(c["preview"], "Matches: probe/calendar_list_events", "{c}");
    assert_eq!(c["refusedPreview"], "It matches none of the tools the servers list.", "{c}");
    let patterns = texts(&c["patterns"]);
    assert!(
        patterns[0].starts_with("probe/calendar_*") && patterns[1].starts_with("probe/files_list"),
        "{c}"
    );
    assert_eq!(
        texts(&c["assistant"])[..4],
        ["prober", "Uses the probe.", "primary model", "probe/calendar_*, probe/files_list"],
        "{c}"
    );
    assert_no_axe_violations(&c["violations"], "the admin settings page");

    // The island's picker offers the admin's new assistant.
    let c = check(&report, "the_admins_assistant_is_in_the_picker");
    assert!(texts(&c["options"]).iter().any(|o| o.starts_with("prober")), "{c}");

    // A person's own: only what the admin allows is offered, wider is refused in the form;
    // private until proposed; picked as hers; then waiting for approval.
    let c = check(&report, "a_person_builds_uses_and_proposes_their_own");
    assert_eq!(texts(&c["offered"])[1..], ["probe/*"], "{c}");
    assert_eq!(
        c["wider"], "This is more than your administrator allows personal assistants.",
        "{c}"
    );
    assert_eq!(c["created"], "Only you can use it.", "{c}");
    assert_eq!(c["picked"], "Helper (yours)", "{c}");
    assert_eq!(texts(&c["groups"])[1..], ["staff"], "{c}");
    assert_eq!(c["proposed"], "Waiting for approval before staff sees it.", "{c}");
    assert_no_axe_violations(&c["violations"], "the island with its assistants panel");

    // bob (staff) does not see it before root approves, the admin sees exactly what it may
    // use, and after the approval bob sees it; carol (not in staff) never does.
    let c = check(&report, "a_proposal_is_seen_only_after_approval");
    let shared = |options: &Value| texts(options).iter().any(|o| o.starts_with("Helper (shared by alice)"));
    assert!(!shared(&c["bobBefore"]), "{c}");
    assert_eq!(c["admin"]["before"]["state"], "Waiting for approval.", "{c}");
    let shown = c["admin"]["before"]["text"].as_str().unwrap_or_default();
    for part in ["Answer in one line.", "probe/*", "/Projects", "Helper by alice for the group staff"] {
        assert!(shown.contains(part), "{part} not shown to the admin: {c}");
    }
    assert_eq!(c["admin"]["after"], "Approved (version 1).", "{c}");
    assert!(shared(&c["bobAfter"]), "{c}");
    assert!(!shared(&c["malloryAfter"]), "{c}");

    // An edit is a new version: bob loses it until root approves that one.
    let c = check(&report, "an_edit_needs_approval_again");
    assert!(c["notice"].as_str().is_some_and(|n| n.contains("approval again")), "{c}");
    assert_eq!(c["edited"], "Changed: waiting for approval again before staff sees it.", "{c}");
    assert!(!shared(&c["bobBefore"]), "{c}");
    assert_eq!(
        c["admin"]["before"]["state"], "Changed since version 1 was approved: waiting for approval again.",
        "{c}"
    );
    assert_eq!(c["admin"]["after"], "Approved (version 2).", "{c}");
    assert!(shared(&c["bobAfter"]), "{c}");
    assert_eq!(report["pageErrors"], json!([]), "uncaught errors in the pages");
}
