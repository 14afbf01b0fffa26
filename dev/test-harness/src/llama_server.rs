//! llama.cpp's own `llama-server` with the small real model, as a test fixture (issue #31).
//!
//! Starts the server that `scripts/install.d/60-model.sh` built into `data/model/` on a free
//! port with the weights it assembled there, waits until the model is loaded (`/health`
//! answers 200; 503 while loading), and reads the server's own `/slots` and log. It never scripts the model: what it answers is the model's.
//! A test that must not depend on the small model's judgement may hold its sampling to a
//! grammar ([`Options::grammar`], llama-server's own `--grammar-file`): the server still
//! generates and streams every token, the grammar only rules out the ones outside it.
//! Sampling is greedy (`--temp 0`) with a fixed seed, so a prompt gets the same answer on
//! every run of the same build. One generation thread (`-t 1`): llama.cpp's threads wait for
//! each other by spinning, and on a machine whose cores are busy (the tests, other builds) two
//! threads were ten times slower than one.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use crate::{Process, free_port, wait_until, workspace_root};

/// The name the orchestrator sends as `model` (llama-server serves one model, whatever its name).
pub const MODEL: &str = "gemma-3-270m";

/// The installed server binary and weights, or a panic naming the install step.
pub fn installed() -> (PathBuf, PathBuf) {
    let dir = workspace_root().join("data/model");
    let (bin, weights) = (dir.join("llama-server"), dir.join("gemma-3-270m-q4_k_m.gguf"));
    assert!(
        bin.is_file() && weights.is_file(),
        "{} or {} is missing: run scripts/install.d/60-model.sh",
        bin.display(),
        weights.display()
    );
    (bin, weights)
}

/// How to start the server.
#[derive(Clone, Debug)]
pub struct Options {
    /// The context window in tokens (`-c`).
    pub context: u32,
    /// `--jinja` with Gemma's turn format (dev/real-model/gemma3-tools.jinja: the shipped GGUF
    /// has no template), which offers tools in the Hermes form llama.cpp's own tool-call
    /// parser reads; without it llama.cpp's built-in `gemma` template and no tool calling.
    pub jinja: bool,
    /// A GBNF grammar every answer is held to (`--grammar-file`, server-wide). llama.cpp uses
    /// it for requests whose tools it does not handle itself: without `jinja` (its legacy
    /// template ignores tools) always; with `jinja`, its own tool-call grammar replaces it
    /// whenever a request carries tools.
    pub grammar: Option<String>,
    /// Further arguments, as given.
    pub extra: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            context: 4096,
            jinja: true,
            grammar: None,
            extra: Vec::new(),
        }
    }
}

/// A running `llama-server`, killed on drop.
pub struct LlamaServer {
    process: Process,
    base: String,
    /// Holds the grammar file for as long as the server runs.
    _scratch: Option<tempfile::TempDir>,
}

impl LlamaServer {
    /// Starts the server and waits until the model is loaded.
    pub fn start(options: Options) -> LlamaServer {
        let mut server = Self::spawn(&options, free_port());
        server.wait_loaded(Duration::from_secs(120));
        server
    }

    /// Starts the server without waiting for the model (it answers 503 until loaded).
    pub fn spawn(options: &Options, port: u16) -> LlamaServer {
        let (bin, weights) = installed();
        let mut cmd = Command::new(bin);
        cmd.arg("-m").arg(weights);
        cmd.args(["--host", "127.0.0.1", "--port", &port.to_string()]);
        cmd.args(["-c", &options.context.to_string(), "-np", "1", "-t", "1"]);
        cmd.args(["--temp", "0", "--seed", "42", "--slots", "--no-webui"]);
        if options.jinja {
            cmd.arg("--jinja")
                .arg("--chat-template-file")
                .arg(workspace_root().join("dev/real-model/gemma3-tools.jinja"));
        } else {
            cmd.args(["--chat-template", "gemma"]);
        }
        let scratch = options.grammar.as_ref().map(|grammar| {
            let dir = tempfile::Builder::new().prefix("llama-grammar-").tempdir().expect("scratch dir");
            let file = dir.path().join("answer.gbnf");
            std::fs::write(&file, grammar).expect("grammar file");
            cmd.arg("--grammar-file").arg(file);
            dir
        });
        cmd.args(&options.extra);
        let base = format!("http://127.0.0.1:{port}");
        let mut process = Process::spawn("llama-server", cmd);
        process.wait_http(&format!("{base}/health"), Duration::from_secs(30));
        LlamaServer {
            process,
            base,
            _scratch: scratch,
        }
    }

    /// Waits until `/health` answers 200 (the model is loaded), or panics with the logs.
    pub fn wait_loaded(&mut self, timeout: Duration) {
        let url = format!("{}/health", self.base);
        let ok = wait_until(timeout, || self.status(&url) == Some(200));
        assert!(ok, "llama-server did not load its model in {timeout:?}\n{}", self.process.logs());
    }

    /// The OpenAI base URL, ending in `/v1` (what `TAMEBI_MODEL_URL` takes).
    pub fn url(&self) -> String {
        format!("{}/v1", self.base)
    }

    /// The server root (`/health`, `/slots`).
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The underlying process (pid, logs, kill).
    pub fn process(&mut self) -> &mut Process {
        &mut self.process
    }

    /// The server's log so far.
    pub fn logs(&self) -> String {
        self.process.logs()
    }

    /// Whether any slot is generating right now (`GET /slots`).
    pub fn generating(&self) -> bool {
        let slots = crate::process::control_call(&self.process, reqwest::Method::GET, &format!("{}/slots", self.base), None);
        slots
            .as_array()
            .is_some_and(|slots| slots.iter().any(|s| s["is_processing"] == serde_json::Value::Bool(true)))
    }

    /// The HTTP status `url` answers with, over a raw connection (no runtime needed).
    fn status(&self, url: &str) -> Option<u16> {
        use std::io::{Read, Write};
        let rest = url.strip_prefix("http://")?;
        let (host, path) = rest.split_once('/')?;
        let mut s = std::net::TcpStream::connect(host).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
        let req = format!("GET /{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
        s.write_all(req.as_bytes()).ok()?;
        let mut buf = [0u8; 12];
        s.read_exact(&mut buf).ok()?;
        std::str::from_utf8(&buf[9..12]).ok()?.parse().ok()
    }
}
