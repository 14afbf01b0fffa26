//! Latency recording (HdrHistogram, microseconds) and the figures derived from it.
//!
//! Each worker owns its own `Recorder` and they are merged at the end, so recording takes no
//! lock. Overheads are differences of percentiles (orchestrator minus model), which is an
//! estimate: it is exact only when both distributions have the same shape.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::chat::{Failure, Timing};
use crate::error::Error;

/// Highest latency tracked: one minute, in microseconds.
const MAX_US: u64 = 60_000_000;

pub struct Recorder {
    pub first_text: Histogram<u64>,
    pub total: Histogram<u64>,
    pub ok: u64,
    pub failures: BTreeMap<String, u64>,
    /// One example message per failure kind, to make an error count explainable.
    pub examples: BTreeMap<String, String>,
}

impl Recorder {
    pub fn new() -> Result<Recorder, Error> {
        Ok(Recorder {
            first_text: histogram()?,
            total: histogram()?,
            ok: 0,
            failures: BTreeMap::new(),
            examples: BTreeMap::new(),
        })
    }
}

/// 3 significant figures from 1 µs to 60 s: a fixed, small allocation.
fn histogram() -> Result<Histogram<u64>, Error> {
    Histogram::new_with_bounds(1, MAX_US, 3).map_err(|e| Error::Histogram(e.to_string()))
}

fn micros(d: Duration) -> u64 {
    (d.as_micros() as u64).clamp(1, MAX_US)
}

impl Recorder {
    pub fn record(&mut self, result: Result<Timing, Failure>) {
        match result {
            Ok(t) => {
                self.ok += 1;
                self.total.saturating_record(micros(t.total));
                if let Some(f) = t.first_text {
                    self.first_text.saturating_record(micros(f));
                }
            }
            Err(f) => self.fail(f),
        }
    }

    pub fn fail(&mut self, failure: Failure) {
        let kind = failure.kind();
        *self.failures.entry(kind.clone()).or_default() += 1;
        self.examples.entry(kind).or_insert_with(|| format!("{failure:?}"));
    }

    pub fn merge(&mut self, other: Recorder) {
        let _ = self.first_text.add(&other.first_text);
        let _ = self.total.add(&other.total);
        self.ok += other.ok;
        for (k, v) in other.failures {
            *self.failures.entry(k).or_default() += v;
        }
        for (k, v) in other.examples {
            self.examples.entry(k).or_insert(v);
        }
    }

    pub fn errors(&self) -> u64 {
        self.failures.values().sum()
    }
}

/// Percentiles of one latency, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Percentiles {
    pub count: u64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub mean_us: f64,
    pub max_us: u64,
}

impl Percentiles {
    pub fn of(h: &Histogram<u64>) -> Option<Percentiles> {
        (!h.is_empty()).then(|| Percentiles {
            count: h.len(),
            p50_us: h.value_at_quantile(0.50),
            p99_us: h.value_at_quantile(0.99),
            mean_us: h.mean(),
            max_us: h.max(),
        })
    }
}

/// Orchestrator minus model at p50 and p99 (may be negative within noise).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Overhead {
    pub p50_us: i64,
    pub p99_us: i64,
}

impl Overhead {
    pub fn between(orchestrator: &Percentiles, model: &Percentiles) -> Overhead {
        Overhead {
            p50_us: orchestrator.p50_us as i64 - model.p50_us as i64,
            p99_us: orchestrator.p99_us as i64 - model.p99_us as i64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(ms: u64) -> Result<Timing, Failure> {
        Ok(Timing {
            first_text: Some(Duration::from_millis(ms / 2)),
            total: Duration::from_millis(ms),
        })
    }

    #[test]
    fn percentiles_and_failures_survive_a_merge() {
        let mut a = Recorder::new().unwrap();
        let mut b = Recorder::new().unwrap();
        for ms in 1..=99 {
            a.record(ok(ms));
        }
        b.record(ok(1000));
        b.record(Err(Failure::Status(429)));
        b.record(Err(Failure::Status(429)));
        b.record(Err(Failure::NoDone));
        a.merge(b);
        assert_eq!(a.ok, 100);
        assert_eq!(a.errors(), 3);
        assert_eq!(a.failures["http 429"], 2);
        let p = Percentiles::of(&a.total).unwrap();
        assert_eq!(p.count, 100);
        assert!((49_000..=51_000).contains(&p.p50_us), "{p:?}");
        assert!(p.p99_us >= 98_000 && p.max_us >= 999_000, "{p:?}");
        assert!(Percentiles::of(&Recorder::new().unwrap().total).is_none());
    }

    #[test]
    fn overhead_is_a_signed_difference() {
        let o = Percentiles {
            count: 1,
            p50_us: 900,
            p99_us: 1500,
            mean_us: 0.0,
            max_us: 0,
        };
        let m = Percentiles {
            count: 1,
            p50_us: 1000,
            p99_us: 1200,
            mean_us: 0.0,
            max_us: 0,
        };
        assert_eq!(Overhead::between(&o, &m), Overhead { p50_us: -100, p99_us: 300 });
    }
}
