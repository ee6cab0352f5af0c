//! What the readers accumulate: per-run windows and the event streams the tables are built from.
//!
//! Everything here is bounded by the run's duration and the number of samples/events, not by
//! the number of request lines: `req` lines are folded into per-window aggregates as they are read
//! (only failed requests are kept individually, up to [`MAX_FAILED`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use hdrhistogram::Histogram;
use logline::line::{
    JobExecutionSample, Meta, PerturbationWindowMarker, ReplicaInventorySample,
    RevisionStateSample, SamplerError, Step, SubjectLine, Summary,
};

/// Failed requests kept individually (per reader thread) for forensics and in-flight cut-offs.
pub const MAX_FAILED: usize = 20_000;
/// Unparseable lines quoted in the report (the rest are counted).
pub const MAX_QUOTED: usize = 5;

/// A latency histogram in microseconds (1 µs .. 1 h, 2 significant digits).
pub fn new_hist() -> Histogram<u32> {
    // The bounds are constants that hdrhistogram accepts; fall back to an auto-resizing one.
    Histogram::new_with_bounds(1, 3_600_000_000, 2)
        .or_else(|_| Histogram::new(2))
        .unwrap_or_else(|_| unreachable_hist())
}

#[allow(clippy::expect_used)]
fn unreachable_hist() -> Histogram<u32> {
    Histogram::new(3).expect("hdrhistogram accepts 3 significant digits")
}

/// Adds `src`'s counts into `dst`; never drops one. `Histogram::add` fails only when `src`
/// holds a value above `dst`'s highest trackable value (both come from [`new_hist`] with the same
/// bounds, so it should not, but the fallback histogram of [`new_hist`] auto-resizes); then each
/// value is recorded saturating, clamped to `dst`'s bound as [`record_ms`] clamps.
pub fn merge_hist(dst: &mut Histogram<u32>, src: &Histogram<u32>) {
    if dst.add(src).is_err() {
        for v in src.iter_recorded() {
            dst.saturating_record_n(v.value_iterated_to(), v.count_at_value());
        }
    }
}

/// `s` with its control characters escaped as `{:?}` escapes them (the rest unchanged).
pub fn escape_controls(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            let e: Vec<char> = if c.is_control() {
                c.escape_debug().collect()
            } else {
                vec![c]
            };
            e
        })
        .collect()
}

/// Records a duration in milliseconds.
pub fn record_ms(h: &mut Histogram<u32>, ms: f64) {
    let us = if ms.is_finite() && ms > 0.0 {
        (ms * 1000.0) as u64
    } else {
        1
    };
    h.saturating_record(us.max(1));
}

/// A quantile of a histogram in milliseconds, `None` when empty.
pub fn quantile_ms(h: &Histogram<u32>, q: f64) -> Option<f64> {
    if h.is_empty() {
        None
    } else {
        Some(round3(h.value_at_quantile(q) as f64 / 1000.0))
    }
}

pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Adds `n` to the counter named `k` in a small map.
pub fn bump(map: &mut BTreeMap<String, u64>, k: &str, n: u64) {
    if let Some(v) = map.get_mut(k) {
        *v += n;
    } else {
        map.insert(k.to_owned(), n);
    }
}

/// One aligned window built from `req` lines.
#[derive(Debug)]
pub struct ReqWindow {
    pub count: u64,
    pub ok: u64,
    pub err: u64,
    pub hist: Histogram<u32>,
    pub status: BTreeMap<String, u64>,
    pub errors: BTreeMap<String, u64>,
    pub served_by: BTreeMap<String, u64>,
    /// Failed requests by the revision that answered them (`unknown`: no response, or no
    /// `X-Revision` on it).
    pub err_served_by: BTreeMap<String, u64>,
}

impl ReqWindow {
    pub fn new() -> Self {
        ReqWindow {
            count: 0,
            ok: 0,
            err: 0,
            hist: new_hist(),
            status: BTreeMap::new(),
            errors: BTreeMap::new(),
            served_by: BTreeMap::new(),
            err_served_by: BTreeMap::new(),
        }
    }

    fn merge(&mut self, o: ReqWindow) {
        self.count += o.count;
        self.ok += o.ok;
        self.err += o.err;
        merge_hist(&mut self.hist, &o.hist);
        for (m, om) in [
            (&mut self.status, o.status),
            (&mut self.errors, o.errors),
            (&mut self.served_by, o.served_by),
            (&mut self.err_served_by, o.err_served_by),
        ] {
            for (k, v) in om {
                *m.entry(k).or_insert(0) += v;
            }
        }
    }
}

impl Default for ReqWindow {
    fn default() -> Self {
        Self::new()
    }
}

/// One aligned window built from `bucket` lines or aggregated bucket rows (summed when several
/// lines fall into it: k6's per-VU buckets, or finer source windows).
#[derive(Clone, Debug, Default)]
pub struct BucketWindow {
    pub count: u64,
    pub ok: u64,
    pub err: u64,
    /// How many source lines were summed into this window.
    pub lines: u64,
    /// Count-weighted sum of the source p50s (for a weighted mean); percentiles of summed
    /// buckets are approximations, the larger of the sources for p95/p99/max.
    pub p50_wsum: f64,
    pub p50_weight: u64,
    pub p95_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub max_ms: Option<f64>,
    pub dropped: u64,
    pub target_rps: Option<f64>,
    pub status: BTreeMap<String, u64>,
    pub errors: BTreeMap<String, u64>,
    pub served_by: BTreeMap<String, u64>,
}

fn max_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

impl BucketWindow {
    /// Adds one source bucket.
    #[allow(clippy::too_many_arguments)]
    pub fn add(
        &mut self,
        count: u64,
        ok: u64,
        err: u64,
        p50: Option<f64>,
        p95: Option<f64>,
        p99: Option<f64>,
        max: Option<f64>,
    ) {
        self.count += count;
        self.ok += ok;
        self.err += err;
        self.lines += 1;
        if let Some(p) = p50 {
            self.p50_wsum += p * count.max(1) as f64;
            self.p50_weight += count.max(1);
        }
        self.p95_ms = max_opt(self.p95_ms, p95);
        self.p99_ms = max_opt(self.p99_ms, p99);
        self.max_ms = max_opt(self.max_ms, max);
    }

    pub fn p50_ms(&self) -> Option<f64> {
        (self.p50_weight > 0).then(|| round3(self.p50_wsum / self.p50_weight as f64))
    }

    fn merge(&mut self, o: BucketWindow) {
        self.count += o.count;
        self.ok += o.ok;
        self.err += o.err;
        self.lines += o.lines;
        self.p50_wsum += o.p50_wsum;
        self.p50_weight += o.p50_weight;
        self.p95_ms = max_opt(self.p95_ms, o.p95_ms);
        self.p99_ms = max_opt(self.p99_ms, o.p99_ms);
        self.max_ms = max_opt(self.max_ms, o.max_ms);
        self.dropped += o.dropped;
        self.target_rps = self.target_rps.or(o.target_rps);
        for (m, om) in [
            (&mut self.status, o.status),
            (&mut self.errors, o.errors),
            (&mut self.served_by, o.served_by),
        ] {
            for (k, v) in om {
                *m.entry(k).or_insert(0) += v;
            }
        }
    }
}

/// First and last response attributed to one revision within a run (from `req` lines).
#[derive(Clone, Debug)]
pub struct RevisionSpan {
    pub first_ms: i64,
    pub last_ms: i64,
    pub count: u64,
}

/// Everything read for one (run_id, scenario).
#[derive(Debug, Default)]
pub struct RunData {
    pub run_id: String,
    pub scenario: String,
    pub perturbation_ids: BTreeSet<String>,
    /// Windows from `bucket` lines / bucket rows, by aligned window start (ms).
    pub buckets: BTreeMap<i64, BucketWindow>,
    /// Source window lengths seen on bucket lines (seconds).
    pub bucket_source_windows: BTreeSet<u64>,
    /// Windows from `req` lines, by aligned window start (ms) of their completion time (`ts`).
    pub reqs: BTreeMap<i64, ReqWindow>,
    pub req_first_ms: Option<i64>,
    pub req_last_ms: Option<i64>,
    pub revisions: BTreeMap<String, RevisionSpan>,
}

impl RunData {
    fn merge(&mut self, o: RunData) {
        self.perturbation_ids.extend(o.perturbation_ids);
        self.bucket_source_windows.extend(o.bucket_source_windows);
        for (k, v) in o.buckets {
            self.buckets.entry(k).or_default().merge(v);
        }
        for (k, v) in o.reqs {
            match self.reqs.get_mut(&k) {
                Some(w) => w.merge(v),
                None => {
                    self.reqs.insert(k, v);
                }
            }
        }
        self.req_first_ms = min_opt(self.req_first_ms, o.req_first_ms);
        self.req_last_ms = self.req_last_ms.max(o.req_last_ms);
        for (k, v) in o.revisions {
            match self.revisions.get_mut(&k) {
                Some(s) => {
                    s.first_ms = s.first_ms.min(v.first_ms);
                    s.last_ms = s.last_ms.max(v.last_ms);
                    s.count += v.count;
                }
                None => {
                    self.revisions.insert(k, v);
                }
            }
        }
    }

    /// Records a response from `revision` at `ms`.
    pub fn saw_revision(&mut self, revision: &str, ms: i64) {
        match self.revisions.get_mut(revision) {
            Some(s) => {
                s.first_ms = s.first_ms.min(ms);
                s.last_ms = s.last_ms.max(ms);
                s.count += 1;
            }
            None => {
                self.revisions.insert(
                    revision.to_owned(),
                    RevisionSpan {
                        first_ms: ms,
                        last_ms: ms,
                        count: 1,
                    },
                );
            }
        }
    }
}

/// What a run's `req` lines hold, inferred from them (loadgen's `--log-requests`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReqMode {
    /// No `req` line.
    None,
    /// Only failed requests (`--log-requests errors`): no `req` line is ok.
    ErrorsOnly,
    /// Every request (at least one ok `req` line).
    All,
}

impl RunData {
    /// Requests and errors counted by the run's `bucket` lines / rows.
    pub fn bucket_totals(&self) -> (u64, u64) {
        self.buckets
            .values()
            .fold((0, 0), |(c, e), w| (c + w.count, e + w.err))
    }

    /// Requests, ok and errors counted from the run's `req` lines.
    pub fn req_totals(&self) -> (u64, u64, u64) {
        self.reqs
            .values()
            .fold((0, 0, 0), |(c, o, e), w| (c + w.count, o + w.ok, e + w.err))
    }

    /// Failed requests of the run's `req` lines by the revision that answered them.
    pub fn req_errors_by_revision(&self) -> BTreeMap<String, u64> {
        let mut m = BTreeMap::new();
        for w in self.reqs.values() {
            for (k, v) in &w.err_served_by {
                *m.entry(k.clone()).or_insert(0) += v;
            }
        }
        m
    }

    /// Whether the run's `req` lines are every request, only the failed ones, or absent.
    pub fn req_mode(&self) -> ReqMode {
        let (c, ok, _) = self.req_totals();
        if c == 0 {
            ReqMode::None
        } else if ok == 0 {
            ReqMode::ErrorsOnly
        } else {
            ReqMode::All
        }
    }

    /// Whether the run's windows come from its `req` lines: when it has no bucket, or when its
    /// `req` lines are every request and count more of them than its buckets (a source can only
    /// lose lines, so the larger one is the complete one; k6's unflushed per-VU buckets, a
    /// loadgen killed before its last bucket). Buckets otherwise, also on a tie.
    pub fn windows_from_reqs(&self) -> bool {
        if self.buckets.is_empty() {
            return !self.reqs.is_empty();
        }
        self.req_mode() == ReqMode::All && self.req_totals().0 > self.bucket_totals().0
    }
}

fn min_opt(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// A failed request (from a `req` line with `ok: false`).
#[derive(Clone, Debug)]
pub struct FailedReq {
    pub run_id: String,
    pub scenario: String,
    pub ts_ms: i64,
    pub scheduled_ms: i64,
    pub code: Option<u16>,
    pub err_class: Option<String>,
    pub err_msg: Option<String>,
    pub revision: Option<String>,
    pub replica: Option<String>,
    pub dur_ms: f64,
}

/// A `ContainerAppSystemLogs_CL` row.
#[derive(Clone, Debug)]
pub struct SystemEvent {
    pub ts_ms: i64,
    pub app: String,
    pub revision: String,
    /// A job's execution (`ExecutionName_s`); empty for an app's rows.
    pub execution: String,
    pub replica: String,
    pub reason: String,
    pub msg: String,
    pub kind: String,
}

/// Where an input line came from (`line` is 1-based; for JSON exports, the row number).
#[derive(Clone, Debug)]
pub struct Loc {
    pub file: String,
    pub line: u64,
}

impl std::fmt::Display for Loc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// Counts of what the readers saw, and the first unparseable lines quoted.
#[derive(Clone, Debug, Default)]
pub struct InputStats {
    pub files: Vec<(String, String)>,
    pub lines: u64,
    pub blank: u64,
    pub by_kind: BTreeMap<String, u64>,
    /// `req` lines read by the fast path (folded into `by_kind` by [`Acc::finish`]).
    pub req_fast: u64,
    /// Bucket rows of an already-aggregated table (az / query API export).
    pub bucket_rows: u64,
    /// Console rows whose `Log_s` is not one of our lines (plain text, other programs' JSON).
    pub foreign: u64,
    pub foreign_quoted: Vec<(Loc, String)>,
    /// Lines with a `kind` the schema does not know.
    pub unknown_kind: BTreeMap<String, u64>,
    pub unparseable: u64,
    /// Where, and the first 200 characters (plus why), of the first unparseable lines.
    pub quoted: Vec<(Loc, String)>,
    /// Failed requests not kept individually (past [`MAX_FAILED`]).
    pub failed_overflow: u64,
    pub warnings: BTreeSet<String>,
}

impl InputStats {
    /// Counts an unparseable line and quotes the first ones escaped (`{:?}`: control
    /// characters such as a terminal's ESC become `\u{1b}`, never raw bytes on a terminal or in
    /// report.md).
    pub fn unparseable_at(&mut self, loc: &Loc, text: &str, why: &str) {
        self.unparseable += 1;
        if self.quoted.len() < MAX_QUOTED {
            let t: String = text.chars().take(200).collect();
            self.quoted
                .push((loc.clone(), format!("{t:?} ({})", escape_controls(why))));
        }
    }

    /// Counts a line of another program and quotes the first ones escaped, as above.
    pub fn foreign_at(&mut self, loc: &Loc, text: &str) {
        self.foreign += 1;
        if self.foreign_quoted.len() < MAX_QUOTED {
            let t: String = text.chars().take(200).collect();
            self.foreign_quoted.push((loc.clone(), format!("{t:?}")));
        }
    }

    pub fn kind(&mut self, k: &str) {
        bump(&mut self.by_kind, k, 1);
    }

    /// Shifts the quoted line numbers of a later chunk of the same file.
    pub fn shift_lines(&mut self, by: u64) {
        for q in self.quoted.iter_mut().chain(self.foreign_quoted.iter_mut()) {
            q.0.line += by;
        }
    }

    fn merge(&mut self, o: InputStats) {
        self.files.extend(o.files);
        self.lines += o.lines;
        self.blank += o.blank;
        for (k, v) in o.by_kind {
            *self.by_kind.entry(k).or_insert(0) += v;
        }
        self.bucket_rows += o.bucket_rows;
        self.req_fast += o.req_fast;
        self.foreign += o.foreign;
        for q in o.foreign_quoted {
            if self.foreign_quoted.len() < MAX_QUOTED {
                self.foreign_quoted.push(q);
            }
        }
        for (k, v) in o.unknown_kind {
            *self.unknown_kind.entry(k).or_insert(0) += v;
        }
        self.unparseable += o.unparseable;
        for q in o.quoted {
            if self.quoted.len() < MAX_QUOTED {
                self.quoted.push(q);
            }
        }
        self.failed_overflow += o.failed_overflow;
        self.warnings.extend(o.warnings);
    }
}

/// Everything the readers accumulate; two of them (one per reader thread) merge into one.
#[derive(Debug)]
pub struct Acc {
    /// Rule window in milliseconds: every source is binned into it.
    pub window_ms: i64,
    pub stats: InputStats,
    pub runs: Vec<RunData>,
    index: HashMap<(String, String), usize>,
    last: Option<usize>,
    pub rev_samples: Vec<RevisionStateSample>,
    pub replica_samples: Vec<ReplicaInventorySample>,
    /// The samplers' `JobExecutionSample` lines: each job execution as ARM listed it per tick.
    pub executions: Vec<JobExecutionSample>,
    pub markers: Vec<PerturbationWindowMarker>,
    pub sampler_errors: Vec<SamplerError>,
    pub system: Vec<SystemEvent>,
    /// Subject lines except REQUEST_END (those are only counted, per app).
    pub subject: Vec<SubjectLine>,
    pub subject_requests: BTreeMap<String, u64>,
    pub steps: Vec<Step>,
    pub summaries: Vec<Summary>,
    pub metas: Vec<Meta>,
    pub failed: Vec<FailedReq>,
    /// loadgen's `client` lines (virtual clients pinned, moved or given a cookie), folded.
    pub clients: crate::read::clients::ClientMoves,
}

impl Acc {
    pub fn new(window_ms: i64) -> Self {
        Acc {
            window_ms,
            stats: InputStats::default(),
            runs: Vec::new(),
            index: HashMap::new(),
            last: None,
            rev_samples: Vec::new(),
            replica_samples: Vec::new(),
            executions: Vec::new(),
            markers: Vec::new(),
            sampler_errors: Vec::new(),
            system: Vec::new(),
            subject: Vec::new(),
            subject_requests: BTreeMap::new(),
            steps: Vec::new(),
            summaries: Vec::new(),
            metas: Vec::new(),
            failed: Vec::new(),
            clients: crate::read::clients::ClientMoves::default(),
        }
    }

    /// The run for (run_id, scenario), created on first use; the last one is cached.
    pub fn run(&mut self, run_id: &str, scenario: &str) -> &mut RunData {
        if let Some(i) = self.last {
            let r = &self.runs[i];
            if r.run_id == run_id && r.scenario == scenario {
                return &mut self.runs[i];
            }
        }
        let key = (run_id.to_owned(), scenario.to_owned());
        let i = match self.index.get(&key) {
            Some(&i) => i,
            None => {
                let i = self.runs.len();
                self.runs.push(RunData {
                    run_id: key.0.clone(),
                    scenario: key.1.clone(),
                    ..RunData::default()
                });
                self.index.insert(key, i);
                i
            }
        };
        self.last = Some(i);
        &mut self.runs[i]
    }

    /// Folds another accumulator (a later chunk or file) into this one. `o` is taken apart
    /// field by field, so a field added to [`Acc`] is a compile error here until it is merged.
    pub fn merge(&mut self, o: Acc) {
        let Acc {
            window_ms: _,
            stats,
            runs,
            index: _,
            last: _,
            rev_samples,
            replica_samples,
            executions,
            markers,
            sampler_errors,
            system,
            subject,
            subject_requests,
            steps,
            summaries,
            metas,
            failed,
            clients,
        } = o;
        self.stats.merge(stats);
        for r in runs {
            let (id, sc) = (r.run_id.clone(), r.scenario.clone());
            self.run(&id, &sc).merge(r);
        }
        self.rev_samples.extend(rev_samples);
        self.replica_samples.extend(replica_samples);
        self.executions.extend(executions);
        self.markers.extend(markers);
        self.sampler_errors.extend(sampler_errors);
        self.system.extend(system);
        self.subject.extend(subject);
        for (k, v) in subject_requests {
            *self.subject_requests.entry(k).or_insert(0) += v;
        }
        self.steps.extend(steps);
        self.summaries.extend(summaries);
        self.metas.extend(metas);
        self.clients.merge(clients);
        let room = MAX_FAILED.saturating_sub(self.failed.len());
        let n = failed.len();
        self.failed.extend(failed.into_iter().take(room));
        self.stats.failed_overflow += n.saturating_sub(room) as u64;
    }

    /// Sorts the event streams by time (after all merges).
    pub fn finish(&mut self) {
        if self.stats.req_fast > 0 {
            *self.stats.by_kind.entry("req".to_owned()).or_insert(0) += self.stats.req_fast;
            self.stats.req_fast = 0;
        }
        self.rev_samples.sort_by_key(|s| s.ts);
        self.replica_samples.sort_by_key(|s| s.ts);
        self.executions.sort_by_key(|s| s.ts);
        self.markers.sort_by_key(|s| s.ts);
        self.sampler_errors.sort_by_key(|s| s.ts);
        self.system.sort_by_key(|s| s.ts_ms);
        self.subject.sort_by_key(|s| s.ts);
        self.clients.finish();
        self.steps.sort_by_key(|s| (s.run_id.clone(), s.step));
        merge_replica_steps(&mut self.steps);
        self.failed.sort_by_key(|f| f.ts_ms);
        self.runs
            .sort_by(|a, b| (&a.run_id, &a.scenario).cmp(&(&b.run_id, &b.scenario)));
        self.index.clear();
        self.last = None;
        for (i, r) in self.runs.iter().enumerate() {
            self.index.insert((r.run_id.clone(), r.scenario.clone()), i);
        }
    }
}

/// Folds the `step` lines of one staircase step of one run (several loadgen replicas, each
/// driving its share of the rate under the same run_id) into one line for the whole load:
/// rates and counts summed, p50 the count-weighted mean of the replicas' p50s, p95/p99 the
/// largest (as [`BucketWindow`] folds percentiles). `steps` is sorted by (run_id, step).
fn merge_replica_steps(steps: &mut Vec<Step>) {
    let mut out: Vec<Step> = Vec::with_capacity(steps.len());
    let mut p50 = (0.0, 0u64);
    for s in steps.drain(..) {
        match out.last_mut() {
            Some(m) if m.run_id == s.run_id && m.step == s.step => {
                if let Some(x) = s.p50_ms {
                    p50.0 += x * s.count.max(1) as f64;
                    p50.1 += s.count.max(1);
                }
                m.ts = m.ts.min(s.ts);
                m.target_rps += s.target_rps;
                m.achieved_rps += s.achieved_rps;
                m.duration_s = m.duration_s.max(s.duration_s);
                m.count += s.count;
                m.ok += s.ok;
                m.err += s.err;
                m.dropped += s.dropped;
                m.p50_ms = (p50.1 > 0).then(|| round3(p50.0 / p50.1 as f64));
                m.p95_ms = max_opt(m.p95_ms, s.p95_ms);
                m.p99_ms = max_opt(m.p99_ms, s.p99_ms);
            }
            _ => {
                p50 = s
                    .p50_ms
                    .map_or((0.0, 0), |x| (x * s.count.max(1) as f64, s.count.max(1)));
                out.push(s);
            }
        }
    }
    *steps = out;
}
