//! Counting: one [`Tally`] per scenario per window, per scenario for the whole run and per
//! staircase step, all owned by the single aggregator task (no locks: request tasks send their
//! [`Outcome`] over a channel).

use std::collections::{BTreeMap, HashMap};

use hdrhistogram::Histogram;
use http::header::HeaderValue;
use logline::line::loadgen::Percentiles;

/// Histograms hold microseconds up to this (1 h, the longest timeout).
const MAX_US: u64 = 3_600_000_000;
/// At most this many distinct revisions per tally; the rest count as `other` (bounded memory).
const MAX_SERVED_BY: usize = 256;
/// At most this many distinct status codes per tally.
const MAX_STATUS: usize = 128;

/// What one finished request reports to the aggregator.
pub struct Outcome {
    pub scenario: usize,
    pub step: Option<u32>,
    /// Microseconds from the scheduled time / from the actual send to completion, and send
    /// lateness (send − scheduled).
    pub lat_us: u64,
    pub send_us: u64,
    pub late_us: u64,
    /// Scheduled time and completion time, ms since the epoch (for `req` lines).
    pub scheduled_ms: i64,
    pub done_ms: i64,
    pub status: Option<u16>,
    pub ok: bool,
    pub err_class: Option<&'static str>,
    pub err_msg: Option<String>,
    pub revision: Option<HeaderValue>,
    pub replica: Option<HeaderValue>,
}

fn hist() -> Histogram<u64> {
    // Bounds and precision are constants that Histogram accepts.
    Histogram::new_with_bounds(1, MAX_US, 3).unwrap_or_else(|_| unreachable_hist())
}

#[cold]
fn unreachable_hist() -> Histogram<u64> {
    Histogram::new(2).unwrap_or_else(|_| std::process::abort())
}

/// Counters and latency histograms of a set of requests.
pub struct Tally {
    pub count: u64,
    pub ok: u64,
    pub err: u64,
    pub dropped: u64,
    pub status: HashMap<u16, u64>,
    pub errors: BTreeMap<&'static str, u64>,
    pub served_by: HashMap<HeaderValue, u64>,
    pub served_other: u64,
    pub served_unknown: u64,
    pub lat: Histogram<u64>,
    pub send: Histogram<u64>,
    /// Only kept for whole-run tallies.
    pub late: Option<Histogram<u64>>,
}

impl Tally {
    pub fn new(with_lateness: bool) -> Self {
        Tally {
            count: 0,
            ok: 0,
            err: 0,
            dropped: 0,
            status: HashMap::new(),
            errors: BTreeMap::new(),
            served_by: HashMap::new(),
            served_other: 0,
            served_unknown: 0,
            lat: hist(),
            send: hist(),
            late: with_lateness.then(hist),
        }
    }

    pub fn reset(&mut self) {
        self.count = 0;
        self.ok = 0;
        self.err = 0;
        self.dropped = 0;
        self.status.clear();
        self.errors.clear();
        self.served_by.clear();
        self.served_other = 0;
        self.served_unknown = 0;
        self.lat.reset();
        self.send.reset();
        if let Some(h) = &mut self.late {
            h.reset();
        }
    }

    pub fn record(&mut self, o: &Outcome) {
        self.count += 1;
        if o.ok {
            self.ok += 1;
        } else {
            self.err += 1;
            if let Some(c) = o.err_class {
                *self.errors.entry(c).or_insert(0) += 1;
            }
        }
        if let Some(code) = o.status {
            if self.status.len() < MAX_STATUS || self.status.contains_key(&code) {
                *self.status.entry(code).or_insert(0) += 1;
            }
            match &o.revision {
                None => self.served_unknown += 1,
                Some(r) => {
                    if let Some(n) = self.served_by.get_mut(r) {
                        *n += 1;
                    } else if self.served_by.len() < MAX_SERVED_BY {
                        self.served_by.insert(r.clone(), 1);
                    } else {
                        self.served_other += 1;
                    }
                }
            }
            // Latency is only recorded for requests that got a response: a refused connect in
            // 0.1 ms would otherwise pull the percentiles down.
            self.lat.saturating_record(o.lat_us.max(1));
            self.send.saturating_record(o.send_us.max(1));
        }
        if let Some(h) = &mut self.late {
            h.saturating_record(o.late_us.max(1));
        }
    }

    pub fn status_map(&self) -> BTreeMap<String, u64> {
        self.status
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect()
    }

    pub fn errors_map(&self) -> BTreeMap<String, u64> {
        self.errors
            .iter()
            .map(|(k, v)| ((*k).to_owned(), *v))
            .collect()
    }

    pub fn served_by_map(&self) -> BTreeMap<String, u64> {
        let mut m: BTreeMap<String, u64> = BTreeMap::new();
        for (k, v) in &self.served_by {
            *m.entry(header_text(k)).or_insert(0) += v;
        }
        if self.served_unknown > 0 {
            *m.entry("unknown".into()).or_insert(0) += self.served_unknown;
        }
        if self.served_other > 0 {
            *m.entry("other".into()).or_insert(0) += self.served_other;
        }
        m
    }
}

/// A header value as text (lossy for non-ASCII bytes).
pub fn header_text(v: &HeaderValue) -> String {
    String::from_utf8_lossy(v.as_bytes()).into_owned()
}

/// A quantile of a histogram in milliseconds; `None` when it is empty.
pub fn q_ms(h: &Histogram<u64>, q: f64) -> Option<f64> {
    (!h.is_empty()).then(|| round3(h.value_at_quantile(q) as f64 / 1000.0))
}

/// The whole-run percentile set; `None` when empty.
pub fn percentiles(h: &Histogram<u64>) -> Option<Percentiles> {
    (!h.is_empty()).then(|| Percentiles {
        p50_ms: round3(h.value_at_quantile(0.50) as f64 / 1000.0),
        p90_ms: round3(h.value_at_quantile(0.90) as f64 / 1000.0),
        p95_ms: round3(h.value_at_quantile(0.95) as f64 / 1000.0),
        p99_ms: round3(h.value_at_quantile(0.99) as f64 / 1000.0),
        p999_ms: round3(h.value_at_quantile(0.999) as f64 / 1000.0),
        max_ms: round3(h.max() as f64 / 1000.0),
    })
}

/// Rounds to three decimals (microsecond resolution in ms fields).
pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(status: Option<u16>, rev: Option<&'static str>, lat_us: u64) -> Outcome {
        Outcome {
            scenario: 0,
            step: None,
            lat_us,
            send_us: lat_us,
            late_us: 1,
            scheduled_ms: 0,
            done_ms: 0,
            status,
            ok: status == Some(200),
            err_class: match status {
                Some(200) => None,
                Some(_) => Some("http_5xx"),
                None => Some("connect"),
            },
            err_msg: None,
            revision: rev.map(HeaderValue::from_static),
            replica: None,
        }
    }

    #[test]
    fn tally_counts_status_classes_and_revisions() {
        let mut t = Tally::new(true);
        t.record(&outcome(Some(200), Some("a"), 1000));
        t.record(&outcome(Some(200), Some("b"), 3000));
        t.record(&outcome(Some(503), None, 2000));
        t.record(&outcome(None, None, 5));
        assert_eq!((t.count, t.ok, t.err), (4, 2, 2));
        assert_eq!(t.errors_map()["http_5xx"], 1);
        assert_eq!(t.errors_map()["connect"], 1);
        assert_eq!(t.status_map()["503"], 1);
        let s = t.served_by_map();
        assert_eq!((s["a"], s["b"], s["unknown"]), (1, 1, 1));
        assert_eq!(
            t.lat.len(),
            3,
            "no latency for a request without a response"
        );
        let p = percentiles(&t.lat).unwrap();
        assert!((p.max_ms - 3.0).abs() < 0.01, "{p:?}");
        t.reset();
        assert_eq!(t.count, 0);
        assert!(q_ms(&t.lat, 0.5).is_none());
    }
}
