//! Debian's HAProxy with the shipped configuration (deploy/haproxy/haproxy.cfg) in front of
//! two orchestrator instances, on a free port. Installed by
//! scripts/install.d/55-postgres-haproxy.sh; killed when the handle drops.

use std::process::Command;
use std::time::Duration;

use crate::process::{Process, free_port, workspace_root};

pub struct LoadBalancer {
    process: Process,
    port: u16,
}

impl LoadBalancer {
    /// Starts HAProxy routing to the instances at `a` and `b` (`host:port`).
    pub fn start(a: &str, b: &str) -> LoadBalancer {
        let port = free_port();
        let mut cmd = Command::new("haproxy");
        cmd.arg("-db")
            .arg("-f")
            .arg(workspace_root().join("deploy/haproxy/haproxy.cfg"))
            .env("TAMEBI_LB_BIND", format!("127.0.0.1:{port}"))
            .env("TAMEBI_A", a)
            .env("TAMEBI_B", b);
        let mut process = Process::spawn("haproxy", cmd);
        process.wait_http(&format!("http://127.0.0.1:{port}/healthz"), Duration::from_secs(20));
        LoadBalancer { process, port }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// HAProxy's log (one line per request: which server took it).
    pub fn logs(&self) -> String {
        self.process.logs()
    }
}
