//! analysis: from log tables to a mechanical verdict, tables, report and charts.
//!
//! Three layers, each depending only on those before it: [`read`], [`judge`], [`render`].
//! [`analyze`] reads any mix of inputs ([`read::input`] detects each file's shape), folds them
//! into per-run windows ([`read::model::Acc`], streaming), and computes the tables Q1–Q7, the
//! error forensics and the extra analyses ([`judge::rule`], [`judge::platform`]), the gates and
//! the verdict ([`judge::verdict`]). [`render::pack::write`] writes them as an evidence pack:
//! `tables/*.{json,tsv}`, `gates.json`, `verdict.json`, `report.md` ([`render::report`]) with
//! `charts/*.svg` ([`render::charts`]: the shared-time-axis timeline of
//! [`render::timeline_svg`]), `report.html` ([`render::html`]: the same, one self-contained
//! page) and `manifest.sha256`, every file atomically. [`campaign`] judges and renders several
//! runs of one lab together.
//!
//! **Invariant:** analysis does no network I/O and never writes outside the output directory.

pub mod atomic;
pub mod campaign;
pub mod judge;
pub mod read;
pub mod render;
pub mod table;
pub mod ts;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

pub use judge::events::EventSummary;
pub use judge::rule::{BucketRow, Rule, RuleError, RunSummary, Streak};
pub use judge::verdict::{Gate, Outcome, Verdict};
pub use read::evidence::{Level, Statement};
pub use read::runs::RunsRecord;
pub use table::Table;

use lab::Lab;

use crate::read::model::{Acc, InputStats};
use crate::table::{num, pct};
use crate::ts::{iso_ms, iso_s};

/// Errors that stop an analysis (unparseable input lines never do).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {error}")]
    Io { path: String, error: std::io::Error },
    #[error("lab file {path}: {msg}")]
    Lab { path: String, msg: String },
    #[error("invalid rule: {0}")]
    Rule(judge::rule::RuleError),
    #[error("no input files found in {0}")]
    NoInputs(String),
    #[error("{0}")]
    Internal(String),
}

/// Why an analysis has no `runs.json` (an observation lab's checks are then `invalid`, and the
/// fired events unknown).
#[derive(Debug, thiserror::Error)]
pub enum NoRuns {
    #[error("no runs.json given")]
    NotGiven,
    #[error("no runs.json beside the lab file or in the input directories")]
    NotFound,
    #[error(transparent)]
    Unreadable(#[from] Error),
}

impl Error {
    pub fn io(path: &Path, source: std::io::Error) -> Error {
        Error::Io {
            path: path.display().to_string(),
            error: source,
        }
    }
}

/// How to analyse.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The rule from the command line (a lab file's `[rule]` overrides each key it sets).
    pub rule: Rule,
    /// The lab file; default: `lab.toml` in the output directory, if there is one.
    pub lab: Option<PathBuf>,
}

/// Everything computed from one set of inputs.
pub struct Analysis {
    pub rule: Rule,
    pub lab: Lab,
    pub lab_path: Option<PathBuf>,
    /// The runner's `runs.json`, or why there is none (read by an observation lab's checks).
    pub runs_file: Result<RunsRecord, NoRuns>,
    pub cap: Option<Level>,
    pub files: Vec<PathBuf>,
    pub acc: Acc,
    pub q2: Vec<BucketRow>,
    pub runs: Vec<RunSummary>,
    pub streaks: Vec<Streak>,
    /// Every fired event of `runs.json` (empty without one), as report.md and report.html list it.
    pub events: Vec<EventSummary>,
    pub tables: Vec<Table>,
    pub gates: Vec<Gate>,
    pub verdict: Verdict,
    pub statements: Vec<Statement>,
}

impl Analysis {
    pub fn stats(&self) -> &InputStats {
        &self.acc.stats
    }

    pub fn table(&self, name_prefix: &str) -> Option<&Table> {
        self.tables.iter().find(|t| t.name.starts_with(name_prefix))
    }
}

/// The lab file for an analysis: the one given, else `lab.toml` in `dir`.
pub fn find_lab(given: Option<&Path>, dir: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = given {
        return Some(p.to_path_buf());
    }
    let p = dir?.join("lab.toml");
    p.is_file().then_some(p)
}

/// Reads the inputs and computes every table, gate and the verdict.
pub fn analyze(inputs: &[PathBuf], opts: &Options) -> Result<Analysis, Error> {
    let (recorded, lab_path) = match &opts.lab {
        Some(p) => (read::lab::read(p)?, Some(p.clone())),
        None => (lab::Recorded::default(), None),
    };
    let lab = recorded.lab;
    let cap = read::lab::evidence_cap(&lab)?;
    let rule = opts.rule.clone().with_lab(&lab).map_err(Error::Rule)?;
    rule.validate().map_err(Error::Rule)?;
    let files = read::input::collect(inputs)?;
    if files.is_empty() {
        let names: Vec<String> = inputs.iter().map(|p| p.display().to_string()).collect();
        return Err(Error::NoInputs(names.join(", ")));
    }
    let acc = read::input::read_all(&files, rule.window_s as i64 * 1000)?;
    let runs = read_runs(lab_path.as_deref(), inputs);
    let mut analysis = compute_with_runs(acc, lab, lab_path, runs, cap, rule, files);
    if !recorded.skipped.is_empty() {
        analysis.statements.push(Statement::new(
            Level::Measured,
            format!(
                "The lab file has key(s) this version of the lab format does not know, skipped: {}.",
                recorded.skipped.join(", ")
            ),
        ));
    }
    Ok(analysis)
}

/// `runs.json` beside the lab file, else in the first input directory that has one.
pub fn read_runs(lab_path: Option<&Path>, inputs: &[PathBuf]) -> Result<RunsRecord, NoRuns> {
    let beside_lab = lab_path
        .and_then(Path::parent)
        .map(|d| d.join(read::runs::RUNS_FILE));
    let path = beside_lab
        .into_iter()
        .chain(
            inputs
                .iter()
                .filter(|p| p.is_dir())
                .map(|d| d.join(read::runs::RUNS_FILE)),
        )
        .find(|p| p.is_file());
    match path {
        None => Err(NoRuns::NotFound),
        Some(p) => Ok(RunsRecord::read(&p)?),
    }
}

/// The app each load run targets, by run_id: runs.json names each run's load, the lab file each
/// load's target.
fn load_targets(lab: &Lab, runs: Option<&RunsRecord>) -> BTreeMap<String, String> {
    let Some(runs) = runs else {
        return BTreeMap::new();
    };
    runs.steps
        .iter()
        .flat_map(|s| &s.runs)
        .filter_map(|r| {
            let load = lab.load_named(&r.load)?;
            Some((r.run_id.clone(), load.target.clone()))
        })
        .collect()
}

/// Computes everything from an accumulator (exposed for tests and benchmarks), without a
/// `runs.json` (an observation lab's checks are then not evaluated).
pub fn compute(
    acc: Acc,
    lab: Lab,
    lab_path: Option<PathBuf>,
    cap: Option<Level>,
    rule: Rule,
    files: Vec<PathBuf>,
) -> Analysis {
    let runs = Err(NoRuns::NotGiven);
    compute_with_runs(acc, lab, lab_path, runs, cap, rule, files)
}

/// [`compute`] with the runner's `runs.json` (or why there is none).
pub fn compute_with_runs(
    acc: Acc,
    lab: Lab,
    lab_path: Option<PathBuf>,
    runs_file: Result<RunsRecord, NoRuns>,
    cap: Option<Level>,
    rule: Rule,
    files: Vec<PathBuf>,
) -> Analysis {
    let wms = acc.window_ms;
    let (q2, runs) = judge::rule::buckets_and_summaries(&acc, &lab, runs_file.as_ref().ok(), &rule);
    let (streaks, longest) = judge::rule::streaks(&q2, &rule, wms);
    let phases = judge::rule::phases(&q2, &rule, &longest);
    let q2_name = format!("q2-buckets-{}s", rule.window_s);
    let events = match &runs_file {
        Ok(rf) => judge::events::evaluate(&acc, rf),
        Err(_) => Vec::new(),
    };
    let mut tables = vec![
        q1_table(&runs),
        q2_table(&q2, &q2_name, &rule),
        errors_by_revision_table(&acc, &runs),
        judge::platform::q3(&acc, &events),
        judge::platform::q4(&acc),
        q5_table(&streaks, &longest, &runs, &rule),
        q6_table(&phases, &rule),
        judge::platform::q7(&acc),
    ];
    // Q8 only where the lab has jobs under test (the other labs' reports stay as they were).
    if !lab.jobs.is_empty() {
        let jobs: Vec<&str> = lab.jobs.iter().map(|j| j.name.as_str()).collect();
        tables.push(judge::job_executions::q8(&acc, &jobs));
    }
    let targets = load_targets(&lab, runs_file.as_ref().ok());
    let (forensics, mut statements) =
        judge::platform::forensics(&acc, &q2, &q2_name, cap, &targets);
    tables.push(forensics);
    tables.push(judge::platform::headroom(
        &acc,
        &lab,
        runs_file.as_ref().ok(),
    ));
    tables.push(judge::platform::cutover(&acc));
    tables.push(judge::platform::inflight(&acc, cap, &mut statements));
    tables.push(judge::platform::restart_cadence(&acc));
    let mut check_statements = Vec::new();
    let ctx = judge::verdict::Ctx {
        acc: &acc,
        lab: &lab,
        rule: &rule,
        q2: &q2,
        q2_name: &q2_name,
        runs: runs_file.as_ref(),
        summaries: &runs,
        events: &events,
    };
    let (gates, verdict) = if lab.is_observation() {
        let inp = judge::checks::Inputs {
            acc: &acc,
            runs: runs_file.as_ref(),
            q2: &q2,
            q2_name: &q2_name,
        };
        let results = judge::checks::evaluate(&lab, &inp);
        check_statements = statements_of_checks(&results);
        let gates = results.into_iter().map(|r| r.gate).collect();
        judge::verdict::decide_observation(&ctx, gates)
    } else {
        judge::verdict::decide(&ctx, &streaks)
    };
    statements.extend(cross_check_statements(&runs));
    let events: Vec<EventSummary> = events
        .into_iter()
        .map(|e| {
            let burst = judge::events::burst_in(&e, &streaks, wms);
            EventSummary { burst, ..e.summary }
        })
        .collect();
    let mut head = summary_statements(&verdict, &phases, &acc, lab.is_observation());
    head.append(&mut check_statements);
    head.append(&mut statements);
    Analysis {
        rule,
        lab,
        lab_path,
        runs_file,
        cap,
        files,
        acc,
        q2,
        runs,
        streaks,
        events,
        tables,
        gates,
        verdict,
        statements: head,
    }
}

/// One finding per check: observed, NOT observed or not evaluated, and why.
fn statements_of_checks(results: &[judge::checks::CheckResult]) -> Vec<Statement> {
    let mut out = Vec::new();
    for r in results {
        let st = match r.gate.status {
            judge::verdict::Status::Pass => "observed",
            judge::verdict::Status::Fail => "NOT observed",
            judge::verdict::Status::NotEvaluated => "not evaluated",
        };
        out.push(Statement::new(
            r.level,
            format!(
                "Check \"{}\": {st}: {}.",
                r.gate.name.trim_start_matches("check:"),
                r.gate.detail
            ),
        ));
    }
    out
}

/// One finding per run whose `bucket` and `req` lines count differently: both counts, the gap,
/// the rule's resolution and which lines Q1 and Q2 use.
fn cross_check_statements(runs: &[RunSummary]) -> Vec<Statement> {
    let mut out = Vec::new();
    for r in runs.iter().filter(|r| r.cross_check.is_some()) {
        if let Some(c) = &r.cross_check
            && c.gap > 0
        {
            out.push(Statement::new(
                Level::Measured,
                format!(
                    "{}/{}: bucket lines count {} {}, req lines {} (a gap of {}; the rule's resolution is {}); Q1 and Q2 use the {} lines.",
                    r.run_id,
                    r.scenario,
                    c.bucket,
                    c.compared,
                    c.req,
                    c.gap,
                    c.resolution,
                    match r.source {
                        judge::rule::Source::Req => "req",
                        _ => "bucket",
                    }
                ),
            ));
        }
    }
    out
}

/// One phase's finding: a falsification lab's against its rule's threshold; an observation
/// lab's (no rule) in what was measured only, its windows with an error.
fn phase_statement(p: &judge::rule::PhaseRow, observation: bool) -> String {
    if observation {
        format!(
            "{}: {} error(s) in {} requests ({:.3} %) over {} windows ({} run(s)); worst window {:.3} %, {} window(s) with an error.",
            p.phase,
            p.err,
            p.requests,
            p.err_pct,
            p.buckets,
            p.runs.len(),
            p.worst_err_pct,
            p.buckets_with_errors
        )
    } else {
        format!(
            "{}: {} error(s) in {} requests over {} windows ({} run(s)); worst window {:.3} %, {} window(s) above the threshold, longest run of bad windows {}.",
            p.phase,
            p.err,
            p.requests,
            p.buckets,
            p.runs.len(),
            p.worst_err_pct,
            p.buckets_above,
            p.longest_streak
        )
    }
}

fn summary_statements(
    v: &Verdict,
    phases: &[judge::rule::PhaseRow],
    acc: &Acc,
    observation: bool,
) -> Vec<Statement> {
    let mut out = Vec::new();
    for p in phases {
        out.push(Statement::new(
            Level::Measured,
            phase_statement(p, observation),
        ));
    }
    if observation && !phases.is_empty() {
        out.push(Statement::new(
            Level::Measured,
            "An observation lab has no falsification rule: its windows are measured, not judged against a threshold; its checks decide the verdict.",
        ));
    }
    if !observation {
        out.push(Statement::new(
            Level::Measured,
            format!(
                "The rule ({}) was {} on {} judged run(s).",
                v.rule_text,
                if v.falsified { "met" } else { "not met" },
                v.judged_runs.len()
            ),
        ));
    }
    let reasons: std::collections::BTreeMap<&str, usize> =
        acc.system.iter().fold(Default::default(), |mut m, e| {
            *m.entry(e.reason.as_str()).or_insert(0) += 1;
            m
        });
    if !reasons.is_empty() {
        let list: Vec<String> = reasons.iter().map(|(k, v)| format!("{k} ×{v}")).collect();
        out.push(Statement::new(
            Level::Observed,
            format!("System events: {}.", list.join(", ")),
        ));
    }
    out
}

/// Q2 by revision: each run's failed requests by the revision that answered them (`X-Revision`
/// on the `req` lines; `unknown`: no response, or none named). The windows count errors too;
/// where the `req` lines hold fewer than the windows, the rest is a `not attributed` row, so
/// the table never reads as complete when one source holds less than the other.
fn errors_by_revision_table(acc: &Acc, runs: &[RunSummary]) -> Table {
    let mut t = Table::new(
        "q2-errors-by-revision",
        "Q2 by revision: failed requests per run by the revision that served them (req lines)",
        &[
            "run_id",
            "scenario",
            "phase",
            "revision",
            "errors",
            "share_pct",
            "basis",
        ],
    );
    for r in runs.iter().filter(|r| r.err > 0) {
        let Some(data) = acc
            .runs
            .iter()
            .find(|d| d.run_id == r.run_id && d.scenario == r.scenario)
        else {
            continue;
        };
        let by_rev = data.req_errors_by_revision();
        let attributed: u64 = by_rev.values().sum();
        let share = |n: u64| pct(logline::line::err_pct(n, r.err));
        let basis = format!("req lines ({} of {} errors)", attributed.min(r.err), r.err);
        for (rev, n) in &by_rev {
            t.push(vec![
                json!(r.run_id),
                json!(r.scenario),
                json!(r.phase),
                json!(rev),
                json!(n),
                share(*n),
                json!(basis),
            ]);
        }
        if attributed < r.err {
            t.push(vec![
                json!(r.run_id),
                json!(r.scenario),
                json!(r.phase),
                json!("not attributed"),
                json!(r.err - attributed),
                share(r.err - attributed),
                json!(if attributed == 0 {
                    "no req line of an error (log_requests none?)".to_owned()
                } else {
                    format!(
                        "the windows count {} errors the req lines do not hold",
                        r.err - attributed
                    )
                }),
            ]);
        }
    }
    t
}

fn q1_table(runs: &[RunSummary]) -> Table {
    let mut t = Table::new(
        "q1-per-run-summary",
        "Q1: per run summary",
        &[
            "run_id",
            "scenario",
            "phase",
            "perturbation_ids",
            "requests",
            "ok",
            "err",
            "err_pct",
            "p50_ms",
            "p95_ms",
            "p99_ms",
            "max_ms",
            "latency_basis",
            "first_bucket",
            "last_bucket",
            "buckets",
            "source",
            "bucket_requests",
            "req_requests",
            "req_lines",
            "cross_check",
        ],
    );
    for r in runs {
        t.push(vec![
            json!(r.run_id),
            json!(r.scenario),
            json!(r.phase),
            json!(r.perturbation_ids.join(",")),
            json!(r.requests),
            json!(r.ok),
            json!(r.err),
            pct(r.err_pct),
            num(r.p50_ms),
            num(r.p95_ms),
            num(r.p99_ms),
            num(r.max_ms),
            json!(r.latency_basis),
            r.first_ms.map_or(Value::Null, |m| json!(iso_s(m))),
            r.last_ms.map_or(Value::Null, |m| json!(iso_s(m))),
            json!(r.buckets),
            json!(r.source),
            json!(r.bucket_requests),
            json!(r.req_requests),
            json!(r.req_mode),
            r.cross_check.as_ref().map_or(Value::Null, |c| {
                json!(format!(
                    "{} {}: bucket {} vs req {}, gap {} (resolution {}){}",
                    c.compared,
                    if c.exceeds() { "DISAGREE" } else { "agree" },
                    c.bucket,
                    c.req,
                    c.gap,
                    c.resolution,
                    if c.exceeds() {
                        ": data_complete fails"
                    } else {
                        ""
                    }
                ))
            }),
        ]);
    }
    t
}

fn q2_table(rows: &[BucketRow], name: &str, rule: &Rule) -> Table {
    let mut t = Table::new(
        name,
        &format!(
            "Q2: {} s windows per run, empty windows as zero rows",
            rule.window_s
        ),
        &[
            "run_id",
            "scenario",
            "phase",
            "bucket_start_iso",
            "bucket_start_epoch_s",
            "count",
            "ok",
            "err",
            "err_pct",
            "above_threshold",
            "p50_ms",
            "p95_ms",
            "p99_ms",
            "max_ms",
            "source",
            "source_lines",
            "served_by",
            "errors",
        ],
    );
    for r in rows {
        t.push(vec![
            json!(r.run_id),
            json!(r.scenario),
            json!(r.phase),
            json!(iso_s(r.start_ms)),
            json!(r.start_ms.div_euclid(1000)),
            json!(r.count),
            json!(r.ok),
            json!(r.err),
            num(Some(r.err_pct)),
            json!(r.is_bad(rule)),
            num(r.p50_ms),
            num(r.p95_ms),
            num(r.p99_ms),
            num(r.max_ms),
            json!(r.source),
            json!(r.lines),
            json!(r.served_by),
            json!(r.errors),
        ]);
    }
    t
}

fn q5_table(
    streaks: &[Streak],
    longest: &std::collections::BTreeMap<String, u32>,
    runs: &[RunSummary],
    rule: &Rule,
) -> Table {
    let mut t = Table::new(
        "q5-falsification",
        &format!(
            "Q5: windows of >= {} consecutive {} s buckets above {} %",
            rule.consecutive, rule.window_s, rule.threshold_pct
        ),
        &[
            "run_id",
            "phase",
            "judged",
            "first_bucket",
            "last_bucket",
            "buckets",
            "requests",
            "err",
            "worst_err_pct",
            "longest_streak_in_run",
            "err_pct_ci95_lo",
            "err_pct_ci95_hi",
        ],
    );
    for s in streaks {
        let (lo, hi) = interval_cells(s.err, s.requests);
        t.push(vec![
            json!(s.run_id),
            json!(s.phase),
            json!(s.judged),
            json!(iso_s(s.first_ms)),
            json!(iso_s(s.last_ms)),
            json!(s.windows),
            json!(s.requests),
            json!(s.err),
            num(Some(s.worst_err_pct)),
            json!(longest.get(&s.run_id).copied().unwrap_or(0)),
            lo,
            hi,
        ]);
    }
    let _ = runs;
    t
}

fn q6_table(phases: &[judge::rule::PhaseRow], rule: &Rule) -> Table {
    let mut t = Table::new(
        "q6-phase-comparison",
        &format!("Q6: per phase (threshold {} %)", rule.threshold_pct),
        &[
            "phase",
            "judged",
            "runs",
            "buckets",
            "requests",
            "err",
            "worst_bucket_err_pct",
            "buckets_above_threshold",
            "longest_streak",
            "err_pct",
            "err_pct_ci95_lo",
            "err_pct_ci95_hi",
        ],
    );
    for p in phases {
        let (lo, hi) = interval_cells(p.err, p.requests);
        t.push(vec![
            json!(p.phase),
            json!(p.judged),
            json!(p.runs.join(",")),
            json!(p.buckets),
            json!(p.requests),
            json!(p.err),
            num(Some(p.worst_err_pct)),
            json!(p.buckets_above),
            json!(p.longest_streak),
            pct(p.err_pct),
            lo,
            hi,
        ]);
    }
    t
}

/// The exact 95 % interval of `err` in `requests` as two percentage cells (null without
/// requests), to six decimals as `err_pct`.
fn interval_cells(err: u64, requests: u64) -> (Value, Value) {
    match judge::strength::ErrorRate::new(err, requests) {
        Some(r) => (pct(r.lo_pct), pct(r.hi_pct)),
        None => (Value::Null, Value::Null),
    }
}

/// `inputs.json`: what was read, how, and what could not be.
pub fn inputs_summary(a: &Analysis) -> Value {
    let s = a.stats();
    json!({
        "files": s.files.iter().map(|(f, shape)| json!({"file": f, "shape": shape})).collect::<Vec<_>>(),
        "lines": s.lines,
        "blank": s.blank,
        "by_kind": s.by_kind,
        "bucket_rows": s.bucket_rows,
        "foreign": s.foreign,
        "foreign_quoted": s.foreign_quoted.iter().map(|(l, t)| json!({"at": l.to_string(), "text": t})).collect::<Vec<_>>(),
        "unknown_kind": s.unknown_kind,
        "unparseable": s.unparseable,
        "unparseable_quoted": s.quoted.iter().map(|(l, t)| json!({"at": l.to_string(), "text": t})).collect::<Vec<_>>(),
        "failed_requests_not_kept": s.failed_overflow,
        "warnings": s.warnings,
        "lab": a.lab_path.as_ref().map(|p| p.display().to_string()),
        "generated_from_window_ms": a.acc.window_ms,
        "first_event": a.q2.iter().map(|r| r.start_ms).min().map(iso_ms),
    })
}
