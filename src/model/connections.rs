//! How model streams reach the provider: HTTP/1.1 connections, or a small pool of HTTP/2
//! connections each multiplexing many streams.
//!
//! Over HTTP/1.1 every open model stream holds a connection of its own: a socket, hyper's
//! read and write buffers and its dispatch channel, about 25 KiB per trickling stream. Over
//! HTTP/2 a stream is a few hundred bytes of state on a shared connection. One HTTP/2
//! connection is not enough: the provider caps concurrent streams per connection
//! (SETTINGS_MAX_CONCURRENT_STREAMS, commonly 100–256) and a request beyond it waits for a
//! free slot. So the pool holds several `reqwest::Client`s (each keeps one HTTP/2 connection
//! per host), counts the streams open on each and hands a new stream to the least busy one,
//! opening another connection when every one carries `streams_per_connection`.
//!
//! `TAMEBI_MODEL_HTTP2` picks the mode: `auto` uses the pool for `https` providers (HTTP/2 is
//! negotiated with ALPN; a provider that only speaks HTTP/1.1 gets HTTP/1.1 through the same
//! clients) and the shared client for plain `http`; `prior-knowledge` speaks HTTP/2 without
//! negotiation (h2c on plain HTTP: vLLM or Ollama behind an HTTP/2 proxy); `off` never
//! speaks HTTP/2. This module owns connections only: it never sees a request's content.
//!
//! For `https` providers the pool's clients share one TLS configuration and one certificate
//! verifier ([`SharedTls`]): left to itself every `reqwest::Client` loads the platform's root
//! certificates into a verifier of its own (about 75 KB per pooled connection).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::config::{ModelConfig, ModelHttp2};

/// Upper bound on pooled connections; past it streams go to the least busy connection and
/// may wait there for a slot, rather than opening connections without bound.
const MAX_CONNECTIONS: usize = 512;

/// The clients model requests are sent with.
pub enum Connections {
    /// One client (HTTP/1.1, or whatever reqwest negotiates); reqwest pools its connections.
    Shared(reqwest::Client),
    Pool(Pool),
}

pub struct Pool {
    http2_prior_knowledge: bool,
    /// No provider URL is `https`: the pool's clients never open a TLS connection.
    plain_http: bool,
    /// The TLS set-up every client of the pool is built with (`https` providers only).
    tls: Option<Box<SharedTls>>,
    per_connection: usize,
    connections: Mutex<Vec<Connection>>,
}

struct Connection {
    client: reqwest::Client,
    open_streams: Arc<AtomicUsize>,
}

/// Counts one open stream on its connection until dropped (with the stream).
pub struct Lease {
    open_streams: Option<Arc<AtomicUsize>>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(n) = &self.open_streams {
            n.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl Connections {
    /// `shared` is the process's general HTTP client, used as is when no pool is needed.
    pub fn new(shared: reqwest::Client, config: &ModelConfig) -> Connections {
        let any_tls = config.base_urls.iter().any(|u| u.scheme() == "https");
        match config.http2 {
            ModelHttp2::Off => Connections::Shared(shared),
            ModelHttp2::Auto if !any_tls => Connections::Shared(shared),
            mode => Connections::Pool(Pool {
                http2_prior_knowledge: mode == ModelHttp2::PriorKnowledge,
                plain_http: !any_tls,
                tls: any_tls.then(|| Box::new(SharedTls::new(mode == ModelHttp2::PriorKnowledge))),
                per_connection: config.streams_per_connection.max(1),
                connections: Mutex::new(Vec::new()),
            }),
        }
    }

    /// The client for one more stream, and the lease that counts it while it is open.
    pub fn checkout(&self) -> Result<(reqwest::Client, Lease), String> {
        match self {
            Connections::Shared(c) => Ok((c.clone(), Lease { open_streams: None })),
            Connections::Pool(p) => p.checkout(),
        }
    }

    /// How many pooled connections exist (0 without a pool); for tests.
    pub fn pooled(&self) -> usize {
        match self {
            Connections::Shared(_) => 0,
            Connections::Pool(p) => p.connections.lock().map(|c| c.len()).unwrap_or(0),
        }
    }
}

impl Pool {
    fn checkout(&self) -> Result<(reqwest::Client, Lease), String> {
        let mut connections = self.connections.lock().map_err(|_| "model connection pool poisoned".to_string())?;
        let least = connections
            .iter()
            .min_by_key(|c| c.open_streams.load(Ordering::Relaxed))
            .filter(|c| c.open_streams.load(Ordering::Relaxed) < self.per_connection || connections.len() >= MAX_CONNECTIONS);
        let chosen = match least {
            Some(c) => (c.client.clone(), c.open_streams.clone()),
            None => {
                let client = self.client()?;
                let open_streams = Arc::new(AtomicUsize::new(0));
                connections.push(Connection {
                    client: client.clone(),
                    open_streams: open_streams.clone(),
                });
                (client, open_streams)
            }
        };
        chosen.1.fetch_add(1, Ordering::Relaxed);
        Ok((
            chosen.0,
            Lease {
                open_streams: Some(chosen.1),
            },
        ))
    }

    /// One client: one HTTP/2 connection per provider host once it is used.
    fn client(&self) -> Result<reqwest::Client, String> {
        let mut b = reqwest::Client::builder()
            .connect_timeout(super::CONNECT_TIMEOUT)
            .pool_idle_timeout(Duration::from_secs(60))
            .tcp_nodelay(true)
            // A dead connection is noticed while streams on it are idle, not only on the
            // next write (each stream still has the call's own timeouts).
            .http2_keep_alive_interval(Duration::from_secs(30))
            .http2_keep_alive_timeout(Duration::from_secs(10))
            .http2_keep_alive_while_idle(false);
        if self.http2_prior_knowledge {
            b = b.http2_prior_knowledge();
        }
        if let Some(tls) = &self.tls {
            // reqwest ignores every later `.tls_*` option on a preconfigured backend: the shared
            // config is all the TLS there is. It names aws-lc-rs itself (nothing here installs a
            // process-wide rustls provider).
            b = b.tls_backend_preconfigured(tls.config()?);
        }
        if self.plain_http {
            // Every client otherwise loads the platform's root certificates into a trust store
            // of its own (about 75 KB per pooled connection, 0.8 KiB per open stream at 100
            // streams per connection, issue #16). h2c to a plain-`http` provider never uses
            // them; an empty store also means a redirect to `https` fails rather than
            // leaving the configured provider.
            b = b.tls_certs_only(std::iter::empty::<reqwest::Certificate>());
        }
        b.build().map_err(|e| format!("model http client: {e}"))
    }
}

/// One rustls configuration for all of a pool's clients: one verifier over the platform's
/// trust store (what reqwest would build per client), the same protocol versions, and the ALPN
/// offer reqwest would make (`h2` then `http/1.1`; only `h2` with prior knowledge). Each client
/// gets a clone, whose verifier and session cache are shared (`Arc`s).
struct SharedTls {
    config: Result<rustls::ClientConfig, String>,
    #[cfg(test)]
    verifier: Option<std::sync::Arc<rustls_platform_verifier::Verifier>>,
}

impl SharedTls {
    fn new(http2_only: bool) -> SharedTls {
        let provider = std::sync::Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let verifier = rustls_platform_verifier::Verifier::new(provider.clone())
            .map(std::sync::Arc::new)
            .map_err(|e| format!("model TLS: cannot load the platform's trust store: {e}"));
        let config = verifier.clone().and_then(|verifier| {
            let mut config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| format!("model TLS: {e}"))?
                .dangerous()
                .with_custom_certificate_verifier(verifier)
                .with_no_client_auth();
            config.alpn_protocols = if http2_only {
                vec![b"h2".to_vec()]
            } else {
                vec![b"h2".to_vec(), b"http/1.1".to_vec()]
            };
            Ok(config)
        });
        SharedTls {
            config,
            #[cfg(test)]
            verifier: verifier.ok(),
        }
    }

    /// The configuration for one more client.
    fn config(&self) -> Result<rustls::ClientConfig, String> {
        self.config.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(http2: ModelHttp2, urls: &[&str], per: usize) -> ModelConfig {
        let env: std::collections::HashMap<String, String> = [
            ("TAMEBI_PROXY_SECRET", "p".repeat(40)),
            ("TAMEBI_SIGNING_SECRET", "s".repeat(40)),
            ("TAMEBI_MODEL_URL", urls.join(",")),
            ("TAMEBI_MODEL", "m".into()),
            ("TAMEBI_MODEL_STREAMS_PER_CONNECTION", per.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let mut c = crate::config::Config::from_vars(&env).unwrap().model;
        c.http2 = http2;
        c
    }

    #[test]
    fn plain_http_in_auto_mode_and_off_use_the_shared_client() {
        let shared = reqwest::Client::new();
        assert!(matches!(
            Connections::new(shared.clone(), &config(ModelHttp2::Auto, &["http://a/v1"], 100)),
            Connections::Shared(_)
        ));
        assert!(matches!(
            Connections::new(shared.clone(), &config(ModelHttp2::Off, &["https://a/v1"], 100)),
            Connections::Shared(_)
        ));
        assert!(matches!(
            Connections::new(shared, &config(ModelHttp2::Auto, &["http://a/v1", "https://b/v1"], 100)),
            Connections::Pool(_)
        ));
    }

    #[test]
    fn a_connection_is_added_only_when_every_one_is_full_and_leases_free_slots() {
        let c = Connections::new(reqwest::Client::new(), &config(ModelHttp2::PriorKnowledge, &["http://a/v1"], 2));
        let a = c.checkout().unwrap();
        let b = c.checkout().unwrap();
        assert_eq!(c.pooled(), 1, "two streams fit on one connection");
        let third = c.checkout().unwrap();
        assert_eq!(c.pooled(), 2, "the third opens a second connection");
        drop((a, b));
        // The first connection is free again: the next streams go there, no third connection.
        let _more = (c.checkout().unwrap(), c.checkout().unwrap());
        assert_eq!(c.pooled(), 2);
        drop(third);
    }

    #[test]
    fn https_pool_clients_share_one_verifier() {
        for mode in [ModelHttp2::Auto, ModelHttp2::PriorKnowledge] {
            let c = Connections::new(reqwest::Client::new(), &config(mode, &["https://a/v1"], 1));
            let Connections::Pool(pool) = &c else {
                panic!("an https provider gets the pool")
            };
            let tls = pool.tls.as_ref().unwrap();
            let verifier = tls.verifier.clone().unwrap();
            let alpn = &tls.config.as_ref().unwrap().alpn_protocols;
            let h2_only = mode == ModelHttp2::PriorKnowledge;
            assert_eq!(alpn.len(), if h2_only { 1 } else { 2 });
            assert_eq!(alpn[0], b"h2");
            // Held here, by the pool (its record and its template config) and nothing else yet.
            assert_eq!(std::sync::Arc::strong_count(&verifier), 3);
            let leases: Vec<_> = (0..3).map(|_| c.checkout().unwrap()).collect();
            assert_eq!(c.pooled(), 3, "one stream per connection: three clients");
            // Every client verifies with the one verifier (reqwest keeps clones of the shared
            // config), rather than loading a trust store of its own.
            let held = std::sync::Arc::strong_count(&verifier) - 3;
            assert!(held >= 3 && held % 3 == 0, "{held} references from three clients");
            drop(leases);
        }
        // Plain http: no TLS set-up at all.
        let c = Connections::new(reqwest::Client::new(), &config(ModelHttp2::PriorKnowledge, &["http://a/v1"], 1));
        let Connections::Pool(pool) = &c else {
            panic!("prior knowledge gets the pool")
        };
        assert!(pool.tls.is_none());
    }

    /// A TLS server on 127.0.0.1 presenting a self-signed certificate (src/model/testdata):
    /// accepts one connection and returns how its handshake ended.
    fn self_signed_server() -> (u16, std::thread::JoinHandle<Result<(), rustls::Error>>) {
        let cert = rustls::pki_types::CertificateDer::from(include_bytes!("testdata/self-signed-cert.der").to_vec());
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(include_bytes!("testdata/self-signed-key.der").to_vec().into());
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert], key)
            .unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut tcp, _) = listener.accept().unwrap();
            tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
            let mut tls = rustls::ServerConnection::new(Arc::new(config)).unwrap();
            while tls.is_handshaking() {
                if let Err(e) = tls.complete_io(&mut tcp) {
                    let tls_error = e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()).cloned();
                    return Err(tls_error.unwrap_or_else(|| rustls::Error::General(e.to_string())));
                }
            }
            Ok(())
        });
        (port, server)
    }

    /// Guards the shared config's verifier: one that accepted every certificate would let
    /// anyone on the path read the model traffic.
    #[tokio::test]
    async fn pool_clients_refuse_a_certificate_of_unknown_issuer() {
        let (port, server) = self_signed_server();
        let url = format!("https://127.0.0.1:{port}/v1");
        let c = Connections::new(reqwest::Client::new(), &config(ModelHttp2::Auto, &[&url], 1));
        assert!(matches!(c, Connections::Pool(_)));
        let (client, _lease) = c.checkout().unwrap();
        let sent = client.get(format!("{url}/models")).send().await;
        let err = sent.expect_err("a self-signed certificate must be refused");
        assert!(err.is_connect(), "{err:?}");
        // Refused by the verifier, for the certificate's issuer...
        let mut next: Option<&(dyn std::error::Error + 'static)> = Some(&err);
        let mut tls_error = None;
        while let Some(e) = next {
            if let Some(found) = e.downcast_ref::<rustls::Error>() {
                tls_error = Some(found.clone());
                break;
            }
            // rustls's error travels inside io::Errors, whose source() skips what they wrap.
            next = match e.downcast_ref::<std::io::Error>() {
                Some(io) => io.get_ref().map(|inner| inner as &(dyn std::error::Error + 'static)),
                None => e.source(),
            };
        }
        assert_eq!(
            tls_error,
            Some(rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer)),
            "{err:?}"
        );
        // ...which ended the handshake with unknown_ca, before any request was sent.
        assert_eq!(
            server.join().unwrap(),
            Err(rustls::Error::AlertReceived(rustls::AlertDescription::UnknownCA))
        );
    }
}
