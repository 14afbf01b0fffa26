//! The model provider's endpoints and their circuit breaker.
//!
//! `TAMEBI_MODEL_URL` may list several base URLs. A call tries them in order; one that fails
//! to connect or says nothing before its first chunk is skipped for a back-off period, then
//! tried again. This module only keeps that state and says in which order to try: it does
//! no I/O and knows nothing of requests.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The endpoints of one provider, shared by every turn.
#[derive(Debug)]
pub struct Endpoints {
    urls: Vec<url::Url>,
    backoff: Duration,
    /// Per endpoint: skipped until this instant.
    open_until: Mutex<Vec<Option<Instant>>>,
}

impl Endpoints {
    pub fn new(urls: Vec<url::Url>, backoff: Duration) -> Self {
        let open_until = Mutex::new(vec![None; urls.len()]);
        Endpoints { urls, backoff, open_until }
    }

    pub fn url(&self, i: usize) -> &url::Url {
        &self.urls[i]
    }

    /// Endpoint `i` for logs and traces: without any user name or password in the URL.
    pub fn label(&self, i: usize) -> String {
        let mut url = self.urls[i].clone();
        let _ = url.set_username("");
        let _ = url.set_password(None);
        url.to_string()
    }

    /// The order to try endpoints in at `now`: those not backing off, as configured, then
    /// those backing off, soonest to recover first — a last resort beats no answer at all.
    pub fn order(&self, now: Instant) -> Vec<usize> {
        let open = self.open_until.lock().map(|g| g.clone()).unwrap_or_else(|p| p.into_inner().clone());
        let (mut ready, mut waiting): (Vec<usize>, Vec<usize>) =
            (0..self.urls.len()).partition(|i| open.get(*i).copied().flatten().is_none_or(|until| until <= now));
        waiting.sort_by_key(|i| open.get(*i).copied().flatten());
        ready.append(&mut waiting);
        ready
    }

    /// Endpoint `i` failed before its first chunk: skip it for the back-off period.
    pub fn failed(&self, i: usize, now: Instant) {
        self.set(i, Some(now + self.backoff));
    }

    /// Endpoint `i` answered: it is healthy again.
    pub fn served(&self, i: usize) {
        self.set(i, None);
    }

    fn set(&self, i: usize, value: Option<Instant>) {
        let mut open = self.open_until.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(slot) = open.get_mut(i) {
            *slot = value;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoints(n: usize) -> Endpoints {
        let urls = (0..n).map(|i| url::Url::parse(&format!("http://e{i}/v1")).unwrap()).collect();
        Endpoints::new(urls, Duration::from_secs(30))
    }

    #[test]
    fn labels_carry_no_credentials() {
        let e = Endpoints::new(vec![url::Url::parse("https://u:pw@host:8/v1").unwrap()], Duration::from_secs(1));
        assert_eq!(e.label(0), "https://host:8/v1");
    }

    #[test]
    fn a_failed_endpoint_is_skipped_until_its_backoff_ends() {
        let e = endpoints(3);
        let t0 = Instant::now();
        assert_eq!(e.order(t0), vec![0, 1, 2]);
        e.failed(0, t0);
        e.failed(1, t0 + Duration::from_secs(1));
        assert_eq!(e.order(t0 + Duration::from_secs(2)), vec![2, 0, 1]);
        assert_eq!(e.order(t0 + Duration::from_secs(30)), vec![0, 2, 1]);
        e.served(1);
        assert_eq!(e.order(t0 + Duration::from_secs(2)), vec![1, 2, 0]);
    }
}
