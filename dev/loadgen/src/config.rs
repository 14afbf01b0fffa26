//! Command-line options (clap) and their validation into one typed `Config`.
//!
//! Every count and duration is bounded, and every target must be a loopback address: this
//! tool sends load only to processes on this machine. Nothing else in the crate reads flags
//! or environment variables.

use std::net::IpAddr;
use std::time::Duration;

use clap::Parser;

use crate::error::Error;

pub const MAX_CONCURRENCY: usize = 20_000;
pub const MAX_OPEN_STREAMS: usize = 100_000;
/// Connections one loopback source address carries before loadgen adds another: well under
/// the 28,232 ports of Linux's default `ip_local_port_range` (32768–60999), since ports in
/// TIME_WAIT from earlier runs count too.
pub const CONNECTIONS_PER_SOURCE: usize = 16_000;
/// Most source addresses (127.0.0.2 …): 100,000 streams need 7.
pub const MAX_SOURCE_ADDRESSES: usize = 64;
pub const MAX_TURNS: u64 = 10_000_000;
pub const MAX_DURATION_SECS: u64 = 3_600;

/// Drives signed conversations against a running orchestrator and reports throughput,
/// orchestrator overhead percentiles, errors and the orchestrator's peak memory.
#[derive(Debug, Clone, Parser)]
#[command(version)]
pub struct Args {
    /// Orchestrator base URL (loopback only), e.g. http://127.0.0.1:8700
    #[arg(long)]
    pub url: String,
    /// TAMEBI_PROXY_SECRET of the orchestrator.
    #[arg(long, env = "TAMEBI_PROXY_SECRET", hide_env_values = true)]
    pub proxy_secret: String,
    /// TAMEBI_SIGNING_SECRET of the orchestrator.
    #[arg(long, env = "TAMEBI_SIGNING_SECRET", hide_env_values = true)]
    pub signing_secret: String,
    /// The scripted model's OpenAI base URL (ending in /v1). Needed to measure the model's
    /// own time (replaying the orchestrator's requests) and for --open-streams.
    #[arg(long)]
    pub model_url: Option<String>,
    /// Concurrent conversations (turn mode).
    #[arg(long, default_value_t = 16)]
    pub concurrency: usize,
    /// Stop after this many turns in total.
    #[arg(long, default_value_t = 10_000)]
    pub turns: u64,
    /// Stop after this many seconds (whichever of --turns and --duration comes first).
    #[arg(long, default_value_t = 30)]
    pub duration: u64,
    /// Turns per conversation before a worker starts a new one.
    #[arg(long, default_value_t = 5)]
    pub turns_per_conversation: u64,
    /// Requests replayed directly against the model to measure its own time (0 = skip).
    #[arg(long, default_value_t = 2_000)]
    pub baseline_turns: u64,
    /// Open-streams mode: hold this many concurrent open streams instead of running turns.
    #[arg(long)]
    pub open_streams: Option<usize>,
    /// Open-streams mode: seconds to hold all streams open once they are.
    #[arg(long, default_value_t = 10)]
    pub hold: u64,
    /// Open-streams mode: at most this many streams being opened at once.
    #[arg(long, default_value_t = 256)]
    pub open_rate: usize,
    /// Spread the connections to the orchestrator over this many loopback source addresses,
    /// 127.0.0.2, 127.0.0.3, … (each address has its own ephemeral ports, so past about 28,000
    /// connections one address runs out of them). 0: as many as the run's connections need
    /// (one per 16,000), and none (the kernel's choice, 127.0.0.1) when one address is enough.
    #[arg(long, default_value_t = 0)]
    pub source_addresses: usize,
    /// Fairness mode: this many light users, one turn at a time each, first alone and then
    /// next to one user running --flood turns at once.
    #[arg(long)]
    pub fairness: bool,
    /// Fairness mode: light users.
    #[arg(long, default_value_t = 50)]
    pub light_users: usize,
    /// Fairness mode: concurrent turns of the flooding user.
    #[arg(long, default_value_t = 500)]
    pub flood: usize,
    /// Soak mode: mixed turns (text, tool calls, approvals, resumes, long answers that make
    /// the context compact) from --concurrency users for --duration seconds, printing memory,
    /// open descriptors, storage sizes and p99 every --report-secs. Needs --model-url (it
    /// scripts the model) and an orchestrator with the probe-mcp tools (`bench.sh soak`).
    #[arg(long)]
    pub soak: bool,
    /// Soak mode: seconds between two figure lines.
    #[arg(long, default_value_t = 60)]
    pub report_secs: u64,
    /// Soak mode: seconds at the start left out of the memory and descriptor slopes (default:
    /// the first --report-secs window). Resident state is bounded by time, not by count (a
    /// conversation's actor stays until idle for TAMEBI_IDLE_SECS), so read the slope after
    /// that time: e.g. 600 with the default idle time of 300 s.
    #[arg(long)]
    pub warm_up_secs: Option<u64>,
    /// Soak mode: a directory whose total size is reported, as NAME=PATH (repeatable), e.g.
    /// `sqlite=/tmp/data` or `postgres=/tmp/pg`.
    #[arg(long = "size-dir", value_name = "NAME=PATH")]
    pub size_dirs: Vec<String>,
    /// Prefix of the Nextcloud uids signed for (each worker is `<uid>-<n>`).
    #[arg(long, default_value = "loadgen")]
    pub uid: String,
    /// Pid of the orchestrator, to report its resident memory (VmRSS, VmHWM).
    #[arg(long)]
    pub pid: Option<u32>,
    /// Also print the figures as one JSON object on the last line.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub url: String,
    pub proxy_secret: String,
    pub signing_secret: String,
    /// Root of the scripted model (without /v1), for its control endpoints.
    pub model_root: Option<String>,
    pub concurrency: usize,
    pub turns: u64,
    pub duration: Duration,
    pub turns_per_conversation: u64,
    pub baseline_turns: u64,
    pub mode: Mode,
    pub uid: String,
    pub pid: Option<u32>,
    pub json: bool,
    /// Soak mode: (name, directory) whose sizes are reported.
    pub size_dirs: Vec<(String, std::path::PathBuf)>,
    /// Loopback source addresses the connections are spread over (empty: the kernel picks).
    pub sources: Vec<std::net::Ipv4Addr>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Turns,
    Soak { report_every: Duration, warm_up: Duration },
    OpenStreams { count: usize, hold: Duration, open_rate: usize },
    Fairness { light: usize, flood: usize },
}

impl Args {
    pub fn validate(self) -> Result<Config, Error> {
        let url = loopback_url(&self.url, "--url")?;
        let model_root = match &self.model_url {
            Some(m) => {
                let m = loopback_url(m, "--model-url")?;
                Some(m.strip_suffix("/v1").unwrap_or(&m).to_string())
            }
            None => None,
        };
        if self.proxy_secret.is_empty() || self.signing_secret.is_empty() {
            return Err(Error::Config("--proxy-secret and --signing-secret must not be empty".into()));
        }
        in_range("--concurrency", self.concurrency as u64, 1, MAX_CONCURRENCY as u64)?;
        in_range("--turns", self.turns, 1, MAX_TURNS)?;
        in_range("--duration", self.duration, 1, MAX_DURATION_SECS)?;
        in_range("--turns-per-conversation", self.turns_per_conversation, 1, 10_000)?;
        in_range("--baseline-turns", self.baseline_turns, 0, MAX_TURNS)?;
        if self.uid.is_empty() || self.uid.len() > 40 {
            return Err(Error::Config("--uid must be 1-40 characters".into()));
        }
        if self.fairness && self.open_streams.is_some() {
            return Err(Error::Config("--fairness and --open-streams are separate runs".into()));
        }
        if self.soak && (self.fairness || self.open_streams.is_some()) {
            return Err(Error::Config(
                "--soak is a run of its own (not with --fairness or --open-streams)".into(),
            ));
        }
        let size_dirs = self
            .size_dirs
            .iter()
            .map(|raw| match raw.split_once('=') {
                Some((name, path)) if !name.is_empty() && !path.is_empty() => Ok((name.to_string(), std::path::PathBuf::from(path))),
                _ => Err(Error::Config(format!("--size-dir {raw:?} must be NAME=PATH"))),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mode = match self.open_streams {
            None if self.soak => {
                in_range("--report-secs", self.report_secs, 1, MAX_DURATION_SECS)?;
                let warm_up = self.warm_up_secs.unwrap_or(self.report_secs);
                in_range("--warm-up-secs", warm_up, 0, MAX_DURATION_SECS)?;
                if self.warm_up_secs.is_some() && warm_up + 2 * self.report_secs > self.duration {
                    return Err(Error::Config(format!(
                        "--warm-up-secs {warm_up} leaves fewer than two --report-secs windows of the --duration {} s for the slopes",
                        self.duration
                    )));
                }
                if model_root.is_none() {
                    return Err(Error::Config("--soak needs --model-url (it scripts the model's replies)".into()));
                }
                Mode::Soak {
                    report_every: Duration::from_secs(self.report_secs),
                    warm_up: Duration::from_secs(warm_up),
                }
            }
            None if self.fairness => {
                in_range("--light-users", self.light_users as u64, 1, 1_000)?;
                in_range("--flood", self.flood as u64, 1, MAX_CONCURRENCY as u64)?;
                Mode::Fairness {
                    light: self.light_users,
                    flood: self.flood,
                }
            }
            None => Mode::Turns,
            Some(count) => {
                in_range("--open-streams", count as u64, 1, MAX_OPEN_STREAMS as u64)?;
                in_range("--hold", self.hold, 1, MAX_DURATION_SECS)?;
                in_range("--open-rate", self.open_rate as u64, 1, 10_000)?;
                if model_root.is_none() {
                    return Err(Error::Config(
                        "--open-streams needs --model-url (it scripts the slow reply there)".into(),
                    ));
                }
                Mode::OpenStreams {
                    count,
                    hold: Duration::from_secs(self.hold),
                    open_rate: self.open_rate,
                }
            }
        };
        let connections = match mode {
            Mode::Turns | Mode::Soak { .. } => self.concurrency,
            Mode::OpenStreams { count, .. } => count,
            Mode::Fairness { light, flood } => light + flood,
        };
        let sources = source_addresses(self.source_addresses, connections, &url)?;
        Ok(Config {
            sources,
            url,
            proxy_secret: self.proxy_secret,
            signing_secret: self.signing_secret,
            model_root,
            concurrency: self.concurrency,
            turns: self.turns,
            duration: Duration::from_secs(self.duration),
            turns_per_conversation: self.turns_per_conversation,
            baseline_turns: self.baseline_turns,
            mode,
            uid: self.uid,
            pid: self.pid,
            json: self.json,
            size_dirs,
        })
    }
}

/// The source addresses for `connections` connections to `url`: `asked` of them (0: enough
/// for the count), 127.0.0.2 upwards; none when one address is enough and none were asked for.
fn source_addresses(asked: usize, connections: usize, url: &str) -> Result<Vec<std::net::Ipv4Addr>, Error> {
    in_range("--source-addresses", asked as u64, 0, MAX_SOURCE_ADDRESSES as u64)?;
    let n = match asked {
        0 => connections.div_ceil(CONNECTIONS_PER_SOURCE),
        n => n,
    };
    if asked == 0 && n <= 1 {
        return Ok(Vec::new());
    }
    if n > MAX_SOURCE_ADDRESSES {
        return Err(Error::Config(format!(
            "{connections} connections need more than {MAX_SOURCE_ADDRESSES} source addresses"
        )));
    }
    // A socket bound to 127.0.0.x reaches IPv4 loopback only.
    let host = url::Url::parse(url).ok().and_then(|u| u.host_str().map(str::to_string));
    if !matches!(host.as_deref().map(str::parse::<std::net::Ipv4Addr>), Some(Ok(ip)) if ip.is_loopback()) {
        return Err(Error::Config(
            "spreading over source addresses needs an IPv4 loopback --url (127.0.0.1)".into(),
        ));
    }
    Ok((0..n).map(|i| std::net::Ipv4Addr::new(127, 0, 0, 2 + i as u8)).collect())
}

fn in_range(flag: &str, value: u64, min: u64, max: u64) -> Result<(), Error> {
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(Error::Config(format!("{flag} must be between {min} and {max}, got {value}")))
    }
}

/// Accepts only http URLs whose host is a loopback address; returns it without a trailing /.
fn loopback_url(raw: &str, flag: &str) -> Result<String, Error> {
    let parsed = reqwest::Url::parse(raw).map_err(|e| Error::Config(format!("{flag}: {e}")))?;
    if parsed.scheme() != "http" {
        return Err(Error::Config(format!("{flag} must be an http:// URL")));
    }
    let loopback = match parsed.host() {
        Some(url::Host::Domain(d)) => d == "localhost",
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        None => false,
    };
    if !loopback {
        return Err(Error::Config(format!(
            "{flag} must point at a loopback address (this tool only loads this machine)"
        )));
    }
    Ok(raw.trim_end_matches('/').to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> Result<Config, Error> {
        let mut argv = vec!["loadgen", "--proxy-secret", "p", "--signing-secret", "s"];
        if !extra.contains(&"--url") {
            argv.extend_from_slice(&["--url", "http://127.0.0.1:8700"]);
        }
        argv.extend_from_slice(extra);
        Args::try_parse_from(argv).map_err(|e| Error::Config(e.to_string()))?.validate()
    }

    #[test]
    fn defaults_are_a_bounded_turn_run() {
        let c = args(&[]).unwrap();
        assert_eq!(c.mode, Mode::Turns);
        assert_eq!(c.concurrency, 16);
        assert_eq!(c.model_root, None);
    }

    #[test]
    fn only_loopback_targets_are_accepted() {
        assert!(args(&["--url", "http://localhost:1"]).is_ok());
        assert!(args(&["--url", "http://[::1]:1"]).is_ok());
        assert!(args(&["--url", "http://127.3.0.1:1"]).is_ok());
        assert!(args(&["--url", "http://10.0.0.1:1"]).is_err());
        assert!(args(&["--url", "http://example.com"]).is_err());
        assert!(args(&["--url", "https://127.0.0.1:1"]).is_err());
        assert!(args(&["--model-url", "http://192.168.1.1/v1"]).is_err());
    }

    #[test]
    fn counts_are_bounded() {
        assert!(args(&["--concurrency", "0"]).is_err());
        assert!(args(&["--concurrency", "20001"]).is_err());
        assert!(args(&["--duration", "0"]).is_err());
        assert!(args(&["--open-streams", "10", "--model-url", "http://127.0.0.1:9/v1"]).is_ok());
        assert!(args(&["--open-streams", "100000", "--model-url", "http://127.0.0.1:9/v1"]).is_ok());
        assert!(args(&["--open-streams", "100001", "--model-url", "http://127.0.0.1:9/v1"]).is_err());
    }

    #[test]
    fn fairness_is_its_own_bounded_mode() {
        assert_eq!(args(&["--fairness"]).unwrap().mode, Mode::Fairness { light: 50, flood: 500 });
        assert!(args(&["--fairness", "--flood", "0"]).is_err());
        assert!(args(&["--fairness", "--light-users", "1001"]).is_err());
        assert!(args(&["--fairness", "--open-streams", "10", "--model-url", "http://127.0.0.1:9/v1"]).is_err());
    }

    #[test]
    fn soak_is_its_own_mode_and_needs_the_model() {
        assert!(args(&["--soak"]).is_err());
        let c = args(&["--soak", "--model-url", "http://127.0.0.1:9/v1", "--size-dir", "sqlite=/tmp/d"]).unwrap();
        assert_eq!(
            c.mode,
            Mode::Soak {
                report_every: Duration::from_secs(60),
                warm_up: Duration::from_secs(60)
            }
        );
        let long = args(&[
            "--soak",
            "--model-url",
            "http://127.0.0.1:9/v1",
            "--duration",
            "1800",
            "--warm-up-secs",
            "600",
        ])
        .unwrap();
        assert!(matches!(long.mode, Mode::Soak { warm_up, .. } if warm_up == Duration::from_secs(600)));
        // The slopes need two windows after the warm-up.
        assert!(
            args(&[
                "--soak",
                "--model-url",
                "http://127.0.0.1:9/v1",
                "--duration",
                "600",
                "--warm-up-secs",
                "500"
            ])
            .is_err()
        );
        assert_eq!(c.size_dirs, vec![("sqlite".to_string(), std::path::PathBuf::from("/tmp/d"))]);
        assert!(args(&["--soak", "--model-url", "http://127.0.0.1:9/v1", "--size-dir", "nope"]).is_err());
        assert!(args(&["--soak", "--fairness", "--model-url", "http://127.0.0.1:9/v1"]).is_err());
    }

    #[test]
    fn open_streams_need_the_model_and_strip_v1() {
        assert!(args(&["--open-streams", "10"]).is_err());
        let c = args(&["--open-streams", "10", "--model-url", "http://127.0.0.1:9/v1/"]).unwrap();
        assert_eq!(c.model_root.as_deref(), Some("http://127.0.0.1:9"));
    }

    #[test]
    fn connections_are_spread_over_enough_source_addresses() {
        let url = "http://127.0.0.1:8700";
        assert!(source_addresses(0, 10_000, url).unwrap().is_empty(), "one address is enough");
        let spread = source_addresses(0, 100_000, url).unwrap();
        assert_eq!(spread.len(), 7);
        assert_eq!(spread[0], std::net::Ipv4Addr::new(127, 0, 0, 2));
        assert_eq!(spread[6], std::net::Ipv4Addr::new(127, 0, 0, 8));
        assert_eq!(source_addresses(3, 10, url).unwrap().len(), 3, "asked for");
        assert!(source_addresses(2, 10, "http://[::1]:8700").is_err());
        assert!(source_addresses(65, 10, url).is_err());
    }
}
