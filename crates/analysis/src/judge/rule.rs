//! The binding rule (window, K consecutive, threshold) and the Q2/Q5/Q6 computations it drives.

use std::collections::BTreeMap;

use lab::Lab;
use serde::Serialize;

use crate::read::model::{Acc, ReqMode, RunData, new_hist, quantile_ms};
use crate::read::runs::RunsRecord;

/// The falsification rule: K consecutive windows with err_pct strictly above the threshold.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Rule {
    pub window_s: u64,
    pub consecutive: u32,
    pub threshold_pct: f64,
    /// Phases whose runs the rule judges.
    pub phases: Vec<String>,
}

impl Default for Rule {
    /// The original lab's rule: 3 consecutive 10 s buckets above 0.5 %.
    fn default() -> Self {
        Rule {
            window_s: 10,
            consecutive: 3,
            threshold_pct: 0.5,
            phases: default_judged_phases(),
        }
    }
}

/// Phases judged by default: everything but the baseline and the preflight.
pub fn default_judged_phases() -> Vec<String> {
    ["perturbation", "supplemental-restart", "other"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect()
}

/// A rule that cannot judge anything.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum RuleError {
    #[error(transparent)]
    Window(#[from] logline::config::ConfigError),
    #[error("the rule window must be at least 1 s")]
    ZeroWindow,
    #[error("K (consecutive) must be at least 1")]
    ZeroConsecutive,
    #[error("the threshold must be a percentage >= 0")]
    Threshold,
}

impl Rule {
    /// The lab's `[rule]` over the command-line values (the lab is the pre-registration).
    pub fn with_lab(mut self, lab: &Lab) -> Result<Rule, RuleError> {
        let named_phases = match &lab.rule {
            Some(r) => {
                self.window_s = logline::config::parse_duration(&r.window)?.as_secs();
                self.consecutive = r.consecutive;
                self.threshold_pct = r.threshold_pct;
                r.phases.clone()
            }
            None => Vec::new(),
        };
        if !named_phases.is_empty() {
            self.phases = named_phases;
        } else if self.phases == default_judged_phases() {
            // A run of a step reads as its step's phase ([`crate::read::lab::phase_of`]), where it once
            // read as `other`: the default still judges everything but the baseline and the
            // preflight.
            for p in lab.step_phases() {
                if !matches!(p, "baseline" | "preflight") && !self.judges(p) {
                    self.phases.push(p.to_owned());
                }
            }
        }
        self.validate()?;
        Ok(self)
    }

    pub fn validate(&self) -> Result<(), RuleError> {
        if self.window_s == 0 {
            return Err(RuleError::ZeroWindow);
        }
        if self.consecutive == 0 {
            return Err(RuleError::ZeroConsecutive);
        }
        if !self.threshold_pct.is_finite() || self.threshold_pct < 0.0 {
            return Err(RuleError::Threshold);
        }
        Ok(())
    }

    pub fn judges(&self, phase: &str) -> bool {
        self.phases.iter().any(|p| p == phase)
    }

    /// A one-line statement of the rule.
    pub fn describe(&self) -> String {
        format!(
            "falsified if {} consecutive {} s windows each have err_pct > {} % in phases {}",
            self.consecutive,
            self.window_s,
            self.threshold_pct,
            self.phases.join(", ")
        )
    }
}

/// Where a Q2 row came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// `bucket` lines or aggregated bucket rows.
    Bucket,
    /// `req` lines aggregated here.
    Req,
    /// No line for this window between the run's first and last: a zero row.
    Empty,
}

/// One Q2 row: a run's aligned window.
#[derive(Clone, Debug, Serialize)]
pub struct BucketRow {
    pub run_id: String,
    pub scenario: String,
    pub phase: String,
    pub start_ms: i64,
    pub count: u64,
    pub ok: u64,
    pub err: u64,
    pub err_pct: f64,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub max_ms: Option<f64>,
    pub source: Source,
    /// Source lines summed into the window (per-VU buckets, finer windows).
    pub lines: u64,
    pub served_by: BTreeMap<String, u64>,
    pub errors: BTreeMap<String, u64>,
}

impl BucketRow {
    pub fn is_bad(&self, rule: &Rule) -> bool {
        self.err_pct > rule.threshold_pct
    }
}

/// Per run and scenario: the latency basis and the totals Q1 reports.
#[derive(Clone, Debug, Serialize)]
pub struct RunSummary {
    pub run_id: String,
    pub scenario: String,
    pub phase: String,
    pub perturbation_ids: Vec<String>,
    pub requests: u64,
    pub ok: u64,
    pub err: u64,
    pub err_pct: f64,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub max_ms: Option<f64>,
    /// `req` (exact, from every request), `bucket` (approximate, from bucket percentiles).
    pub latency_basis: &'static str,
    pub first_ms: Option<i64>,
    pub last_ms: Option<i64>,
    pub buckets: usize,
    /// Where the windows came from: `bucket` or `req` (the complete source when both exist).
    pub source: Source,
    /// Requests counted by `bucket` lines (`None`: the run has none).
    pub bucket_requests: Option<u64>,
    /// Errors counted by `bucket` lines.
    pub bucket_errors: Option<u64>,
    /// Requests counted from `req` lines (`None`: the run has none).
    pub req_requests: Option<u64>,
    /// What the `req` lines hold: every request, only the failed ones, or none.
    pub req_mode: ReqMode,
    /// When the run has both: the cross-check of the two sources.
    pub cross_check: Option<CrossCheck>,
}

/// `bucket` vs `req` lines of one run: what was compared and by how much they differ.
#[derive(Clone, Debug, Serialize)]
pub struct CrossCheck {
    /// `requests` (the `req` lines are every request) or `errors` (they are the failed ones).
    pub compared: &'static str,
    pub bucket: u64,
    pub req: u64,
    /// |bucket - req|.
    pub gap: u64,
    /// The rule's resolution for this run: the most requests that, missing from a window of the
    /// run's median size and all failed, could not put a clean window above the threshold:
    /// ⌊median requests per window × threshold_pct / 100⌋. A larger gap could change a verdict.
    pub resolution: u64,
}

impl CrossCheck {
    /// Whether the sources disagree by more than the rule can tolerate.
    pub fn exceeds(&self) -> bool {
        self.gap > self.resolution
    }
}

/// Builds Q2 rows (gap-filled with zero rows) and Q1 summaries for every run.
///
/// A run's windows come from its complete source ([`crate::read::model::RunData::windows_from_reqs`]):
/// its `bucket` lines, or its `req` lines when it has no bucket or they count more requests.
pub fn buckets_and_summaries(
    acc: &Acc,
    lab: &Lab,
    runs: Option<&RunsRecord>,
    rule: &Rule,
) -> (Vec<BucketRow>, Vec<RunSummary>) {
    let wms = acc.window_ms;
    let mut rows = Vec::new();
    let mut sums = Vec::new();
    for run in &acc.runs {
        let phase = crate::read::lab::phase_of(lab, &run.run_id, runs);
        let use_buckets = !run.windows_from_reqs();
        let filled = gap_filled(run_windows(run, &phase, use_buckets), run, &phase, wms);
        // Totals and latency.
        let (requests, ok, err) = filled
            .iter()
            .fold((0, 0, 0), |(c, o, e), r| (c + r.count, o + r.ok, e + r.err));
        let (b_count, b_err) = run.bucket_totals();
        let (r_count, _, _) = run.req_totals();
        let mode = run.req_mode();
        let (p50, p95, p99, max, basis) = run_latency(run, &filled);
        let cross_check = cross_check(run, &filled, rule);
        sums.push(RunSummary {
            run_id: run.run_id.clone(),
            scenario: run.scenario.clone(),
            phase: phase.clone(),
            perturbation_ids: run.perturbation_ids.iter().cloned().collect(),
            requests,
            ok,
            err,
            err_pct: logline::line::err_pct(err, requests),
            p50_ms: p50,
            p95_ms: p95,
            p99_ms: p99,
            max_ms: max,
            latency_basis: basis,
            first_ms: filled.first().map(|r| r.start_ms),
            last_ms: filled.last().map(|r| r.start_ms),
            buckets: filled.len(),
            source: if use_buckets {
                Source::Bucket
            } else {
                Source::Req
            },
            bucket_requests: (!run.buckets.is_empty()).then_some(b_count),
            bucket_errors: (!run.buckets.is_empty()).then_some(b_err),
            req_requests: (!run.reqs.is_empty()).then_some(r_count),
            req_mode: mode,
            cross_check,
        });
        rows.extend(filled);
    }
    (rows, sums)
}

/// The windows of one run as Q2 rows, from its `bucket` lines (`use_buckets`) or its `req`
/// lines; only the windows that have lines.
fn run_windows(run: &RunData, phase: &str, use_buckets: bool) -> Vec<BucketRow> {
    let mut these: Vec<BucketRow> = Vec::new();
    if use_buckets {
        for (&start, w) in &run.buckets {
            these.push(BucketRow {
                run_id: run.run_id.clone(),
                scenario: run.scenario.clone(),
                phase: phase.to_owned(),
                start_ms: start,
                count: w.count,
                ok: w.ok,
                err: w.err,
                err_pct: logline::line::err_pct(w.err, w.count),
                p50_ms: w.p50_ms(),
                p95_ms: w.p95_ms,
                p99_ms: w.p99_ms,
                max_ms: w.max_ms,
                source: Source::Bucket,
                lines: w.lines,
                served_by: w.served_by.clone(),
                errors: w.errors.clone(),
            });
        }
    } else {
        for (&start, w) in &run.reqs {
            these.push(BucketRow {
                run_id: run.run_id.clone(),
                scenario: run.scenario.clone(),
                phase: phase.to_owned(),
                start_ms: start,
                count: w.count,
                ok: w.ok,
                err: w.err,
                err_pct: logline::line::err_pct(w.err, w.count),
                p50_ms: quantile_ms(&w.hist, 0.5),
                p95_ms: quantile_ms(&w.hist, 0.95),
                p99_ms: quantile_ms(&w.hist, 0.99),
                max_ms: quantile_ms(&w.hist, 1.0),
                source: Source::Req,
                lines: w.count,
                served_by: w.served_by.clone(),
                errors: w.errors.clone(),
            });
        }
    }
    these
}

/// The control-bucket rule: every window between the first and the last is present (a missing
/// one as a zero row).
fn gap_filled(these: Vec<BucketRow>, run: &RunData, phase: &str, wms: i64) -> Vec<BucketRow> {
    let mut filled: Vec<BucketRow> = Vec::with_capacity(these.len());
    for r in these {
        if let Some(prev) = filled.last() {
            let mut t = prev.start_ms + wms;
            while t < r.start_ms {
                filled.push(empty_row(&run.run_id, &run.scenario, phase, t));
                t += wms;
            }
        }
        filled.push(r);
    }
    filled
}

/// A run's p50, p95, p99, max (ms) and their basis: exact from its `req` lines when they are
/// every request and none is missing (`req`), else the request-weighted medians of its windows'
/// percentiles (`bucket`).
fn run_latency(run: &RunData, filled: &[BucketRow]) -> RunLatency {
    let (b_count, _) = run.bucket_totals();
    let (r_count, _, _) = run.req_totals();
    let mode = run.req_mode();
    // Exact latency from `req` lines when they are every request and none is missing.
    let req_latency = if run.buckets.is_empty() {
        !run.reqs.is_empty()
    } else {
        mode == ReqMode::All && r_count >= b_count
    };
    if req_latency {
        let mut h = new_hist();
        for w in run.reqs.values() {
            crate::read::model::merge_hist(&mut h, &w.hist);
        }
        (
            quantile_ms(&h, 0.5),
            quantile_ms(&h, 0.95),
            quantile_ms(&h, 0.99),
            quantile_ms(&h, 1.0),
            "req",
        )
    } else {
        let w = |f: fn(&BucketRow) -> Option<f64>| weighted_median(filled, f);
        let max = filled
            .iter()
            .filter_map(|r| r.max_ms.or(r.p99_ms))
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
        (
            w(|r| r.p50_ms),
            w(|r| r.p95_ms),
            w(|r| r.p99_ms),
            max,
            "bucket",
        )
    }
}

/// p50, p95, p99, max (ms) and the basis they were computed on.
type RunLatency = (
    Option<f64>,
    Option<f64>,
    Option<f64>,
    Option<f64>,
    &'static str,
);

/// When a run has both `bucket` and `req` lines: how far the two sources' counts (requests, or
/// errors when the `req` lines are the failed ones) differ, against the rule's resolution.
fn cross_check(run: &RunData, filled: &[BucketRow], rule: &Rule) -> Option<CrossCheck> {
    let (b_count, b_err) = run.bucket_totals();
    let (r_count, _, _) = run.req_totals();
    let mode = run.req_mode();
    (!run.buckets.is_empty() && !run.reqs.is_empty()).then(|| {
        let (compared, bucket) = match mode {
            ReqMode::All => ("requests", b_count),
            _ => ("errors", b_err),
        };
        let mut sizes: Vec<u64> = filled.iter().map(|r| r.count).filter(|c| *c > 0).collect();
        sizes.sort_unstable();
        let median = sizes.get(sizes.len() / 2).copied().unwrap_or(0);
        CrossCheck {
            compared,
            bucket,
            req: r_count,
            gap: bucket.abs_diff(r_count),
            resolution: (median as f64 * rule.threshold_pct / 100.0).floor() as u64,
        }
    })
}

fn empty_row(run_id: &str, scenario: &str, phase: &str, start: i64) -> BucketRow {
    BucketRow {
        run_id: run_id.to_owned(),
        scenario: scenario.to_owned(),
        phase: phase.to_owned(),
        start_ms: start,
        count: 0,
        ok: 0,
        err: 0,
        err_pct: 0.0,
        p50_ms: None,
        p95_ms: None,
        p99_ms: None,
        max_ms: None,
        source: Source::Empty,
        lines: 0,
        served_by: BTreeMap::new(),
        errors: BTreeMap::new(),
    }
}

/// The request-weighted median of a per-bucket value (an approximation of a run percentile
/// from bucket percentiles; exact percentiles need `req` lines).
fn weighted_median(rows: &[BucketRow], f: fn(&BucketRow) -> Option<f64>) -> Option<f64> {
    let mut v: Vec<(f64, u64)> = rows
        .iter()
        .filter_map(|r| f(r).map(|x| (x, r.count)))
        .filter(|(_, c)| *c > 0)
        .collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total: u64 = v.iter().map(|x| x.1).sum();
    let mut acc = 0;
    for (x, c) in &v {
        acc += c;
        if acc * 2 >= total {
            return Some(*x);
        }
    }
    v.last().map(|x| x.0)
}

/// One Q5 window: ≥ K consecutive bad windows of one run.
#[derive(Clone, Debug, Serialize)]
pub struct Streak {
    pub run_id: String,
    pub phase: String,
    pub judged: bool,
    pub first_ms: i64,
    pub last_ms: i64,
    pub windows: u32,
    pub requests: u64,
    pub err: u64,
    pub worst_err_pct: f64,
    /// Indices into the Q2 rows.
    pub rows: Vec<usize>,
}

/// Every run of consecutive bad windows (err_pct > T) in the `main` scenario, per run_id; the
/// returned `longest` maps run_id to its longest run of bad windows. Windows are consecutive when
/// their starts differ by exactly one window; the zero rows of Q2 break a run.
pub fn streaks(
    rows: &[BucketRow],
    rule: &Rule,
    window_ms: i64,
) -> (Vec<Streak>, BTreeMap<String, u32>) {
    let mut out = Vec::new();
    let mut longest: BTreeMap<String, u32> = BTreeMap::new();
    let mut cur: Vec<usize> = Vec::new();
    let flush =
        |cur: &mut Vec<usize>, out: &mut Vec<Streak>, longest: &mut BTreeMap<String, u32>| {
            if let (Some(&a), Some(&b)) = (cur.first(), cur.last()) {
                let r = &rows[a];
                let n = cur.len() as u32;
                let l = longest.entry(r.run_id.clone()).or_insert(0);
                *l = (*l).max(n);
                if n >= rule.consecutive {
                    out.push(Streak {
                        run_id: r.run_id.clone(),
                        phase: r.phase.clone(),
                        judged: rule.judges(&r.phase),
                        first_ms: r.start_ms,
                        last_ms: rows[b].start_ms,
                        windows: n,
                        requests: cur.iter().map(|&i| rows[i].count).sum(),
                        err: cur.iter().map(|&i| rows[i].err).sum(),
                        worst_err_pct: cur.iter().map(|&i| rows[i].err_pct).fold(0.0, f64::max),
                        rows: cur.clone(),
                    });
                }
            }
            cur.clear();
        };
    for (i, r) in rows.iter().enumerate() {
        if r.scenario != "main" {
            continue;
        }
        longest.entry(r.run_id.clone()).or_insert(0);
        let continues = cur.last().is_some_and(|&p| {
            rows[p].run_id == r.run_id && rows[p].start_ms + window_ms == r.start_ms
        });
        if !continues {
            flush(&mut cur, &mut out, &mut longest);
        }
        if r.is_bad(rule) {
            cur.push(i);
        } else {
            flush(&mut cur, &mut out, &mut longest);
        }
    }
    flush(&mut cur, &mut out, &mut longest);
    (out, longest)
}

/// One Q6 row.
#[derive(Clone, Debug, Serialize)]
pub struct PhaseRow {
    pub phase: String,
    pub runs: Vec<String>,
    pub buckets: usize,
    pub requests: u64,
    pub err: u64,
    pub worst_err_pct: f64,
    pub buckets_above: usize,
    /// Windows with at least one error (an observation lab's measure: it has no threshold).
    pub buckets_with_errors: usize,
    pub err_pct: f64,
    pub longest_streak: u32,
    pub judged: bool,
}

/// Per phase, over the `main` scenario's Q2 rows.
pub fn phases(rows: &[BucketRow], rule: &Rule, longest: &BTreeMap<String, u32>) -> Vec<PhaseRow> {
    let order = [
        "preflight",
        "baseline",
        "perturbation",
        "supplemental-restart",
    ];
    let mut map: BTreeMap<String, PhaseRow> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.scenario == "main") {
        let p = map.entry(r.phase.clone()).or_insert_with(|| PhaseRow {
            phase: r.phase.clone(),
            runs: Vec::new(),
            buckets: 0,
            requests: 0,
            err: 0,
            worst_err_pct: 0.0,
            buckets_above: 0,
            buckets_with_errors: 0,
            err_pct: 0.0,
            longest_streak: 0,
            judged: rule.judges(&r.phase),
        });
        if p.runs.last() != Some(&r.run_id) && !p.runs.contains(&r.run_id) {
            p.runs.push(r.run_id.clone());
            p.longest_streak = p
                .longest_streak
                .max(longest.get(&r.run_id).copied().unwrap_or(0));
        }
        p.buckets += 1;
        p.requests += r.count;
        p.err += r.err;
        p.worst_err_pct = p.worst_err_pct.max(r.err_pct);
        if r.is_bad(rule) {
            p.buckets_above += 1;
        }
        if r.err > 0 {
            p.buckets_with_errors += 1;
        }
    }
    let mut out: Vec<PhaseRow> = map.into_values().collect();
    for p in &mut out {
        p.err_pct = logline::line::err_pct(p.err, p.requests);
    }
    out.sort_by_key(|p| {
        (
            order
                .iter()
                .position(|o| *o == p.phase)
                .unwrap_or(order.len()),
            p.phase.clone(),
        )
    });
    out
}
