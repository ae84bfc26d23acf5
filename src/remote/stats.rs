//! Counters of the remote backend for `status`: requests by outcome, requests in flight (now
//! and the most at once since start), latency percentiles.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use serde_json::{json, Value};

/// Latencies kept for the remote p50/p95 (most recent requests).
pub const LATENCY_WINDOW: usize = 1_024;

/// Shared counters; every method takes `&self`.
#[derive(Debug, Default)]
pub struct RemoteStats {
    in_flight: AtomicUsize,
    in_flight_max: AtomicUsize,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Outcome key ([`super::BackendError::kind`], `ok`, `cancelled`) -> requests.
    outcomes: BTreeMap<String, u64>,
    /// Wall time of each finished request (ms), most recent last.
    latencies: VecDeque<f64>,
    /// Narrations the local model wrote after a remote failure.
    fallback_local: u64,
    /// Local fallbacks that failed too.
    fallback_failed: u64,
}

/// Marks one request in flight until dropped.
pub struct InFlight<'a>(&'a RemoteStats);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

impl RemoteStats {
    /// Counts a request as in flight (and raises the maximum) until the guard drops.
    pub fn start(&self) -> InFlight<'_> {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.in_flight_max.fetch_max(now, Ordering::SeqCst);
        InFlight(self)
    }

    /// Records a finished request: its outcome key and wall time (ms).
    pub fn finish(&self, outcome: &str, ms: f64) {
        let mut s = self.inner.lock().expect("remote stats lock");
        *s.outcomes.entry(outcome.to_string()).or_default() += 1;
        s.latencies.push_back(ms);
        while s.latencies.len() > LATENCY_WINDOW {
            s.latencies.pop_front();
        }
    }

    /// Records a local fallback after a remote failure, and whether it wrote the narration.
    pub fn fallback(&self, ok: bool) {
        let mut s = self.inner.lock().expect("remote stats lock");
        if ok {
            s.fallback_local += 1;
        } else {
            s.fallback_failed += 1;
        }
    }

    /// Requests in flight now.
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// The most requests in flight at once since start.
    pub fn in_flight_max(&self) -> usize {
        self.in_flight_max.load(Ordering::SeqCst)
    }

    /// The `status` fields: `remote_requests` (by outcome, with `total`), `remote_in_flight`,
    /// `remote_in_flight_max`, `remote_latency_ms` (`p50`, `p95`, `samples`) and
    /// `remote_fallback` (`local`: narrations the local model wrote instead, `failed`).
    pub fn report(&self) -> Value {
        let s = self.inner.lock().expect("remote stats lock");
        let lat: Vec<f64> = s.latencies.iter().copied().collect();
        let mut requests = json!(s.outcomes);
        requests["total"] = s.outcomes.values().sum::<u64>().into();
        json!({
            "remote_requests": requests,
            "remote_in_flight": self.in_flight(),
            "remote_in_flight_max": self.in_flight_max(),
            "remote_latency_ms": {
                "p50": crate::daemon::server::percentile(&lat, 50.0),
                "p95": crate::daemon::server::percentile(&lat, 95.0),
                "samples": lat.len(),
            },
            "remote_fallback": {"local": s.fallback_local, "failed": s.fallback_failed},
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_flight_rises_and_falls_and_keeps_its_maximum() {
        let s = RemoteStats::default();
        {
            let _a = s.start();
            let _b = s.start();
            assert_eq!(s.in_flight(), 2);
        }
        let _c = s.start();
        assert_eq!((s.in_flight(), s.in_flight_max()), (1, 2));
        s.finish("ok", 10.0);
        s.finish("http_5xx", 30.0);
        s.fallback(true);
        let r = s.report();
        assert_eq!(r["remote_requests"]["ok"], 1);
        assert_eq!(r["remote_requests"]["total"], 2);
        assert_eq!(r["remote_latency_ms"]["p95"], 30.0);
        assert_eq!(r["remote_fallback"]["local"], 1);
    }
}
