//! Request metrics: what client-go's REST client exports as `rest_client_requests_total{code,method,host}`,
//! `rest_client_request_duration_seconds{verb,host}` and `rest_client_rate_limiter_duration_seconds{verb,host}`, kept
//! per client (shared by its clones and isolated copies).

use std::time::Duration;

use parking_lot::Mutex;

/// A snapshot of a client's request counters, from [`Client::request_metrics`](super::Client::request_metrics).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RequestMetrics {
    /// The API server's `host:port` (the `host` label).
    pub host: String,
    /// Requests by HTTP method and answer, in the order first seen (`rest_client_requests_total`).
    pub requests: Vec<RequestCount>,
    /// Time to the response's headers, by HTTP method (`rest_client_request_duration_seconds`; for a watch or a
    /// streamed list that is the time to its first byte, as in client-go).
    pub latency: Vec<MethodLatency>,
    /// Time waited for a token of the client-side rate limit, by HTTP method
    /// (`rest_client_rate_limiter_duration_seconds`; one observation per request sent, none while the limit is
    /// off). Measured on the limit's clock.
    pub rate_limiter_latency: Vec<MethodLatency>,
}

/// How many requests with one method got one answer.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RequestCount {
    /// `GET`, `POST`, `PUT`, `PATCH`, `DELETE`.
    pub method: &'static str,
    /// The HTTP status code, or `<error>` when no answer came (client-go's label value).
    pub code: String,
    /// Requests counted (every attempt: a request retried after a 401 counts twice).
    pub count: u64,
}

/// The latency histogram of one method.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct MethodLatency {
    /// `GET`, `POST`, … (the `verb` label).
    pub verb: &'static str,
    /// Its latencies.
    pub histogram: LatencyHistogram,
}

/// A request latency histogram with client-go's buckets (5 ms … 60 s; the same for the rate limiter's waits).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LatencyHistogram {
    /// Observations.
    pub count: u64,
    /// Their sum.
    pub sum: Duration,
    /// `buckets[i]` counts the observations `d` with `BOUNDS[i-1] < d <= BOUNDS[i]` (not cumulative); the last
    /// entry counts those above the last bound.
    pub buckets: [u64; LatencyHistogram::BOUNDS.len() + 1],
}

impl LatencyHistogram {
    /// client-go's bucket bounds for `rest_client_request_duration_seconds`.
    pub const BOUNDS: [Duration; 12] = [
        Duration::from_millis(5),
        Duration::from_millis(25),
        Duration::from_millis(100),
        Duration::from_millis(250),
        Duration::from_millis(500),
        Duration::from_secs(1),
        Duration::from_secs(2),
        Duration::from_secs(4),
        Duration::from_secs(8),
        Duration::from_secs(15),
        Duration::from_secs(30),
        Duration::from_secs(60),
    ];

    /// Records one observation.
    pub fn observe(&mut self, d: Duration) {
        self.count += 1;
        self.sum = self.sum.saturating_add(d);
        let bucket = LatencyHistogram::BOUNDS.partition_point(|b| *b < d);
        self.buckets[bucket] += 1;
    }
}

/// The counters, updated once per request under a short lock (a few entries: one per method and answer seen).
#[derive(Debug, Default)]
pub(crate) struct RequestStats {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// (method, status code or 0 for no answer, count).
    counts: Vec<(&'static str, u16, u64)>,
    latency: Vec<(&'static str, LatencyHistogram)>,
    rate_limiter: Vec<(&'static str, LatencyHistogram)>,
}

impl RequestStats {
    /// Counts a request with `method` that got `code` (`None`: no answer) after `took`.
    pub(crate) fn observe(&self, method: &'static str, code: Option<u16>, took: Duration) {
        let code = code.unwrap_or(0);
        let mut inner = self.inner.lock();
        match inner.counts.iter_mut().find(|(m, c, _)| *m == method && *c == code) {
            Some((_, _, n)) => *n += 1,
            None => inner.counts.push((method, code, 1)),
        }
        observe_into(&mut inner.latency, method, took);
    }

    /// Counts a wait of `waited` for a rate-limit token before a request with `method`.
    pub(crate) fn observe_rate_limiter(&self, method: &'static str, waited: Duration) {
        observe_into(&mut self.inner.lock().rate_limiter, method, waited);
    }

    pub(crate) fn snapshot(&self, host: &str) -> RequestMetrics {
        let inner = self.inner.lock();
        RequestMetrics {
            host: host.to_owned(),
            requests: inner
                .counts
                .iter()
                .map(|&(method, code, count)| RequestCount {
                    method,
                    code: if code == 0 {
                        "<error>".to_owned()
                    } else {
                        code.to_string()
                    },
                    count,
                })
                .collect(),
            latency: by_method(&inner.latency),
            rate_limiter_latency: by_method(&inner.rate_limiter),
        }
    }
}

/// Adds `d` to `method`'s histogram in `histograms` (created on first use).
fn observe_into(histograms: &mut Vec<(&'static str, LatencyHistogram)>, method: &'static str, d: Duration) {
    match histograms.iter_mut().find(|(m, _)| *m == method) {
        Some((_, h)) => h.observe(d),
        None => {
            let mut h = LatencyHistogram::default();
            h.observe(d);
            histograms.push((method, h));
        }
    }
}

fn by_method(histograms: &[(&'static str, LatencyHistogram)]) -> Vec<MethodLatency> {
    histograms
        .iter()
        .map(|&(verb, histogram)| MethodLatency { verb, histogram })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_method_and_answer_and_buckets_like_client_go() {
        let s = RequestStats::default();
        s.observe("GET", Some(200), Duration::from_millis(5));
        s.observe("GET", Some(200), Duration::from_millis(6));
        s.observe("GET", Some(403), Duration::from_millis(1));
        s.observe("POST", None, Duration::from_secs(90));
        let m = s.snapshot("h:6443");
        assert_eq!(m.host, "h:6443");
        let counts: Vec<(&str, &str, u64)> = m
            .requests
            .iter()
            .map(|r| (r.method, r.code.as_str(), r.count))
            .collect();
        assert_eq!(counts, [("GET", "200", 2), ("GET", "403", 1), ("POST", "<error>", 1)]);
        let get = &m.latency[0].histogram;
        assert_eq!(
            (get.count, get.buckets[0], get.buckets[1]),
            (3, 2, 1),
            "5 ms is in the 5 ms bucket (le)"
        );
        assert_eq!(m.latency[1].histogram.buckets[12], 1, "past 60 s: the overflow bucket");
        assert!(m.rate_limiter_latency.is_empty());
        s.observe_rate_limiter("PATCH", Duration::ZERO);
        s.observe_rate_limiter("PATCH", Duration::from_millis(200));
        let waits = &s.snapshot("h:6443").rate_limiter_latency;
        assert_eq!((waits.len(), waits[0].verb), (1, "PATCH"));
        assert_eq!(
            (waits[0].histogram.count, waits[0].histogram.sum),
            (2, Duration::from_millis(200))
        );
    }
}
