//! loadgen: load for the orchestrator, measured.
//!
//! Drives G1-signed conversations against a running `tamebi` whose model is the scripted
//! model, and reports throughput, the orchestrator's own overhead (its latency minus the
//! model's, measured by replaying the very requests it sent), errors and its peak memory.
//! A second mode holds thousands of streams open at once to measure memory per stream.
//!
//! Modules: `config` (flags, bounds, loopback-only), `sign` (G1), `chat` (one turn, one
//! model request), `stats` (histograms), `turns`, `streams`, `fairness` and `soak` (the modes), `rss`
//! (/proc memory). It only ever targets loopback addresses, and every run is bounded.

pub mod chat;
pub mod config;
pub mod error;
pub mod fairness;
pub mod rss;
pub mod sign;
pub mod soak;
pub mod stats;
pub mod streams;
pub mod turns;

pub use error::Error;

/// The HTTP client for all load: HTTP/1.1 like the PHP app, never through a proxy (the
/// targets are loopback), a pool as large as the load.
/// `source`: the local address its connections are bound to (`None`: the kernel's choice).
pub fn client(
    pool: usize,
    request_timeout: Option<std::time::Duration>,
    source: Option<std::net::Ipv4Addr>,
) -> Result<reqwest::Client, Error> {
    let mut b = reqwest::Client::builder()
        .no_proxy()
        .http1_only()
        .pool_max_idle_per_host(pool)
        .local_address(source.map(std::net::IpAddr::V4))
        .connect_timeout(std::time::Duration::from_secs(10));
    if let Some(t) = request_timeout {
        b = b.timeout(t);
    }
    Ok(b.build()?)
}
