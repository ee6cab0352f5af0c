//! Gates and the verdict: strict, one path each, no fallbacks.
//!
//! The rule gate decides `falsified`. Preconditions:
//! - `data_complete` (always required): no run whose `bucket` and `req` lines disagree by more
//!   than the rule's resolution ([`crate::rule::CrossCheck`]), no loadgen `summary` that was
//!   `interrupted` or counts `aborted` requests, no `log_write_failures` in `runs.json`;
//! - `baseline_clean`: no baseline window above the threshold;
//! - `headroom_shown`: for every staircase run, p50 at the lab's load rate / p50 at the staircase
//!   step just below it (steps matched by rate, not position) ≥ `headroom_factor` (default 5,
//!   the original lab's); a staircase without the lab's rate or a step below it fails;
//! - `perturbations_observed` (evaluated only when the lab requires it): every fired event of
//!   `runs.json` observed as [`crate::events`] defines, every scheduled event fired.
//!
//! `baseline_clean` and `headroom_shown` are evaluated whenever their data is in the pack; a lab
//! that requires one turns missing data into a failure. Any failed precondition, or no judged
//! data at all, makes the verdict `invalid`: the experiment did not test what it claims to.

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::{Value, json};

use crate::events::Event;
use crate::lab::LabFile;
use crate::model::Acc;
use crate::rule::{BucketRow, Rule, RunSummary, Streak};
use crate::runs::RunsRecord;
use crate::strength::{self, Blindness, ErrorRate};
use crate::ts::iso_s;

/// Default headroom factor (the original lab's): p50 at the lab's rate must be at least this
/// many times p50 at the staircase step below it.
pub const DEFAULT_HEADROOM_FACTOR: f64 = 5.0;

/// What the gates read.
pub struct Ctx<'a> {
    pub acc: &'a Acc,
    pub lab: &'a LabFile,
    pub rule: &'a Rule,
    pub q2: &'a [BucketRow],
    pub q2_name: &'a str,
    /// `runs.json`, or why there is none.
    pub runs: Result<&'a RunsRecord, &'a crate::NoRuns>,
    /// Q1's per-run summaries (with the bucket/req cross-check).
    pub summaries: &'a [RunSummary],
    /// Every fired event of `runs.json`, evaluated.
    pub events: &'a [Event],
}

impl Ctx<'_> {
    /// The precondition gates, in report order.
    fn preconditions(&self) -> Vec<Gate> {
        vec![
            data_complete_gate(self.acc, self.summaries, self.runs),
            baseline_gate(self.lab, self.rule, self.q2, self.q2_name),
            headroom_gate(self.acc, self.lab, self.runs.ok()),
            perturbations_gate(self.events, self.lab, self.runs),
        ]
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pass,
    Fail,
    NotEvaluated,
}

/// One named gate with the numbers it used and the table rows it rests on.
#[derive(Clone, Debug, Serialize)]
pub struct Gate {
    pub name: String,
    /// `rule`, `precondition` or `data`.
    pub kind: &'static str,
    pub required: bool,
    pub status: Status,
    pub detail: String,
    pub numbers: Value,
    /// References like `q2-buckets-10s#12` (0-based row index) or `q5-falsification#0`.
    pub rows: Vec<String>,
}

/// `held`, `falsified` or `invalid`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Held,
    Falsified,
    Invalid,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Held => "held",
            Outcome::Falsified => "falsified",
            Outcome::Invalid => "invalid",
        }
    }
}

/// verdict.json.
#[derive(Clone, Debug, Serialize)]
pub struct Verdict {
    pub verdict: Outcome,
    /// The rule's outcome on the judged runs (reported even when the verdict is `invalid`).
    pub falsified: bool,
    pub hypothesis: Option<String>,
    pub rule: Rule,
    pub rule_text: String,
    pub evidence_cap: Option<String>,
    pub judged_runs: Vec<String>,
    pub judged_buckets: usize,
    pub judged_requests: u64,
    pub judged_errors: u64,
    pub falsifying_windows: usize,
    pub worst_bucket_err_pct: f64,
    pub worst_bucket: Option<String>,
    pub failed_preconditions: Vec<String>,
    pub reasons: Vec<String>,
    /// The judged requests' error rate with its exact 95 % interval (`None` without requests):
    /// for `held`, its upper bound is the highest error rate the run does not exclude.
    pub judged_error_rate: Option<ErrorRate>,
    /// Each judged burst's (Q5 window's) error rate with its interval, in Q5's order.
    pub burst_error_rates: Vec<ErrorRate>,
    /// What the rule cannot see at the judged rate (`None` for an observation lab, which has
    /// no rule, and without judged requests).
    pub blindness: Option<Blindness>,
    /// How the intervals were computed.
    pub interval_method: &'static str,
}

impl Verdict {
    /// How strong the evidence is, as (label, text) facts for report.md and report.html: the
    /// judged error rate with its interval (for `held`, the highest rate not excluded), each
    /// burst's interval (for `falsified`) and what the rule cannot see.
    pub fn strength_facts(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if let Some(r) = &self.judged_error_rate {
            let mut text = format!(
                "{} errors in {} requests: {} ({})",
                r.errors,
                r.requests,
                r.text(),
                self.interval_method
            );
            if self.verdict == Outcome::Held {
                text.push_str(&format!(
                    "; this run excludes error rates above {} %",
                    strength::pct_text(r.hi_pct)
                ));
            }
            out.push(("error rate", text));
        }
        if self.falsified && !self.burst_error_rates.is_empty() {
            let bursts: Vec<String> = self
                .burst_error_rates
                .iter()
                .map(|b| format!("{} of {}: {}", b.errors, b.requests, b.text()))
                .collect();
            out.push(("bursts", bursts.join("; ")));
        }
        if let Some(b) = &self.blindness {
            out.push(("what the rule cannot see", b.sentence()));
        }
        out
    }
}

/// Evaluates every gate and the verdict.
pub fn decide(ctx: &Ctx, streaks: &[Streak]) -> (Vec<Gate>, Verdict) {
    let (lab, rule, q2, q2_name) = (ctx.lab, ctx.rule, ctx.q2, ctx.q2_name);
    let mut gates = Vec::new();
    let judged: Vec<(usize, &BucketRow)> = q2
        .iter()
        .enumerate()
        .filter(|(_, r)| r.scenario == "main" && rule.judges(&r.phase))
        .collect();
    let judged_runs: Vec<String> = judged
        .iter()
        .map(|(_, r)| r.run_id.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();

    // data: something to judge.
    gates.push(data_present_gate(rule, &judged, &judged_runs));

    // rule, per judged run.
    let worst = judged
        .iter()
        .max_by(|a, b| a.1.err_pct.total_cmp(&b.1.err_pct).then(b.0.cmp(&a.0)));
    for run in &judged_runs {
        gates.push(rule_gate(rule, run, &judged, streaks, q2_name));
    }

    gates.extend(ctx.preconditions());

    let judged_requests: u64 = judged.iter().map(|(_, r)| r.count).sum();
    let judged_errors: u64 = judged.iter().map(|(_, r)| r.err).sum();
    let falsified = streaks.iter().any(|s| s.judged);
    let failed: Vec<String> = gates
        .iter()
        .filter(|g| g.kind != "rule" && g.status == Status::Fail)
        .map(|g| g.name.clone())
        .collect();
    let mut reasons = Vec::new();
    let outcome = if !failed.is_empty() {
        reasons.push(format!("failed: {}", failed.join(", ")));
        Outcome::Invalid
    } else if falsified {
        reasons.push(format!(
            "{} window(s) of >= {} consecutive buckets above {} % in judged runs",
            streaks.iter().filter(|s| s.judged).count(),
            rule.consecutive,
            rule.threshold_pct
        ));
        Outcome::Falsified
    } else {
        reasons.push("no judged run met the rule; every evaluated precondition passed".into());
        Outcome::Held
    };
    let verdict = Verdict {
        verdict: outcome,
        falsified,
        hypothesis: lab.hypothesis.as_ref().map(|h| h.text.clone()),
        rule: rule.clone(),
        rule_text: rule.describe(),
        evidence_cap: lab.hypothesis.as_ref().and_then(|h| h.evidence_cap.clone()),
        judged_buckets: judged.len(),
        judged_requests,
        judged_errors,
        judged_runs,
        falsifying_windows: streaks.iter().filter(|s| s.judged).count(),
        worst_bucket_err_pct: worst.map_or(0.0, |w| round3(w.1.err_pct)),
        worst_bucket: worst
            .map(|(i, r)| format!("{q2_name}#{i} ({} {})", r.run_id, iso_s(r.start_ms))),
        failed_preconditions: failed,
        reasons,
        judged_error_rate: ErrorRate::new(judged_errors, judged_requests),
        burst_error_rates: streaks
            .iter()
            .filter(|s| s.judged)
            .filter_map(|s| ErrorRate::new(s.err, s.requests))
            .collect(),
        blindness: strength::steady_rate_rps(judged.iter().map(|(_, r)| *r), rule)
            .map(|rps| Blindness::of(rule, rps)),
        interval_method: strength::METHOD,
    };
    (gates, verdict)
}

/// `judged_data_present`: the main scenario has windows in the judged phases.
fn data_present_gate(rule: &Rule, judged: &[(usize, &BucketRow)], judged_runs: &[String]) -> Gate {
    Gate {
        name: "judged_data_present".into(),
        kind: "data",
        required: true,
        status: if judged.is_empty() {
            Status::Fail
        } else {
            Status::Pass
        },
        detail: format!(
            "{} run(s), {} window(s) of the main scenario in judged phases ({})",
            judged_runs.len(),
            judged.len(),
            rule.phases.join(", ")
        ),
        numbers: json!({"runs": judged_runs.len(), "windows": judged.len()}),
        rows: Vec::new(),
    }
}

/// `rule:<run>`: no streak of the rule in one judged run.
fn rule_gate(
    rule: &Rule,
    run: &str,
    judged: &[(usize, &BucketRow)],
    streaks: &[Streak],
    q2_name: &str,
) -> Gate {
    let hits: Vec<(usize, &Streak)> = streaks
        .iter()
        .enumerate()
        .filter(|(_, s)| s.judged && s.run_id == run)
        .collect();
    let run_rows: Vec<&(usize, &BucketRow)> =
        judged.iter().filter(|(_, r)| r.run_id == run).collect();
    let run_worst = run_rows.iter().map(|(_, r)| r.err_pct).fold(0.0, f64::max);
    let above = run_rows.iter().filter(|(_, r)| r.is_bad(rule)).count();
    Gate {
        name: format!("rule:{run}"),
        kind: "rule",
        required: true,
        status: if hits.is_empty() {
            Status::Pass
        } else {
            Status::Fail
        },
        detail: if hits.is_empty() {
            format!(
                "no {} consecutive windows above {} % (worst window {:.3} %, {} above)",
                rule.consecutive, rule.threshold_pct, run_worst, above
            )
        } else {
            format!(
                "{} window(s) of >= {} consecutive buckets above {} %",
                hits.len(),
                rule.consecutive,
                rule.threshold_pct
            )
        },
        numbers: json!({
            "windows": run_rows.len(),
            "requests": run_rows.iter().map(|(_, r)| r.count).sum::<u64>(),
            "errors": run_rows.iter().map(|(_, r)| r.err).sum::<u64>(),
            "worst_err_pct": round3(run_worst),
            "buckets_above": above,
            "consecutive": rule.consecutive,
            "threshold_pct": rule.threshold_pct,
        }),
        rows: if hits.is_empty() {
            run_rows
                .iter()
                .filter(|(_, r)| r.is_bad(rule))
                .map(|(i, _)| format!("{q2_name}#{i}"))
                .collect()
        } else {
            hits.iter()
                .map(|(i, _)| format!("q5-falsification#{i}"))
                .collect()
        },
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn baseline_gate(lab: &LabFile, rule: &Rule, q2: &[BucketRow], q2_name: &str) -> Gate {
    let required = lab.preconditions.baseline_clean;
    let rows: Vec<(usize, &BucketRow)> = q2
        .iter()
        .enumerate()
        .filter(|(_, r)| r.scenario == "main" && r.phase == "baseline")
        .collect();
    if rows.is_empty() {
        return Gate {
            name: "baseline_clean".into(),
            kind: "precondition",
            required,
            status: if required {
                Status::Fail
            } else {
                Status::NotEvaluated
            },
            detail: "no baseline run in the inputs".into(),
            numbers: Value::Null,
            rows: Vec::new(),
        };
    }
    let bad: Vec<String> = rows
        .iter()
        .filter(|(_, r)| r.is_bad(rule))
        .map(|(i, _)| format!("{q2_name}#{i}"))
        .collect();
    let requests: u64 = rows.iter().map(|(_, r)| r.count).sum();
    let errors: u64 = rows.iter().map(|(_, r)| r.err).sum();
    Gate {
        name: "baseline_clean".into(),
        kind: "precondition",
        required,
        status: if bad.is_empty() {
            Status::Pass
        } else {
            Status::Fail
        },
        detail: format!(
            "{} baseline window(s), {} above {} % ({} errors in {} requests)",
            rows.len(),
            bad.len(),
            rule.threshold_pct,
            errors,
            requests
        ),
        numbers: json!({"windows": rows.len(), "requests": requests, "errors": errors,
                        "windows_above": bad.len()}),
        rows: bad,
    }
}

/// One staircase run matched against the lab's load rate.
#[derive(Clone, Debug)]
pub struct Staircase {
    pub run_id: String,
    /// The load the run belongs to (from runs.json; `None`: the lab's only load).
    pub load: Option<String>,
    /// The lab's rate for that load.
    pub rate: Option<f64>,
    /// Every step's (target rate, p50).
    pub steps: Vec<(f64, Option<f64>)>,
    /// The step at the lab's rate and the step just below it: (rate, p50).
    pub at: Option<(f64, f64)>,
    pub below: Option<(f64, f64)>,
    /// p50(at) / p50(below).
    pub ratio: Option<f64>,
    /// Why the ratio could not be computed.
    pub problem: Option<String>,
}

fn same_rate(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * b.abs().max(1.0)
}

fn rates_text(v: &[(f64, Option<f64>)]) -> String {
    v.iter()
        .map(|(r, _)| format!("{r}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every run with `step` lines, matched by rate: the step whose target rate is the lab's load
/// rate, and the step with the highest rate below it.
pub fn staircases(acc: &Acc, lab: &LabFile, runs: Option<&RunsRecord>) -> Vec<Staircase> {
    let ids: BTreeSet<String> = acc
        .steps
        .iter()
        .map(|s| s.run_id.clone().unwrap_or_default())
        .collect();
    let mut out = Vec::new();
    for run in ids {
        let mut steps: Vec<(f64, Option<f64>)> = acc
            .steps
            .iter()
            .filter(|s| s.run_id.clone().unwrap_or_default() == run)
            .map(|s| (s.target_rps, s.p50_ms))
            .collect();
        steps.sort_by(|a, b| a.0.total_cmp(&b.0));
        let load = runs.and_then(|r| {
            r.steps
                .iter()
                .flat_map(|s| s.runs.iter())
                .find(|x| x.run_id == run)
                .map(|x| x.load.clone())
        });
        let rate = match &load {
            Some(l) => lab.load_rate(Some(l)),
            None => lab.load_rate(None),
        };
        let mut st = Staircase {
            run_id: run.clone(),
            load: load.clone(),
            rate,
            steps: steps.clone(),
            at: None,
            below: None,
            ratio: None,
            problem: None,
        };
        let Some(rate) = rate else {
            st.problem = Some(match &load {
                Some(l) => format!("the lab file gives load {l:?} of run {run} no rate"),
                None if lab.load.len() > 1 => format!(
                    "run {run} is in no step of runs.json, so which of the lab's {} loads' rate applies is unknown",
                    lab.load.len()
                ),
                None => format!(
                    "the lab file gives no load rate to compare the staircase of run {run} with"
                ),
            });
            out.push(st);
            continue;
        };
        let at = steps.iter().find(|(r, _)| same_rate(*r, rate));
        let below = steps
            .iter()
            .filter(|(r, _)| *r < rate && !same_rate(*r, rate))
            .max_by(|a, b| a.0.total_cmp(&b.0));
        let mut problems = Vec::new();
        match at {
            None => problems.push(format!(
                "the staircase of run {run} has no step at the lab's rate {rate} RPS (steps: {})",
                rates_text(&steps)
            )),
            Some((r, None)) => problems.push(format!(
                "the step at {r} RPS of run {run} has no p50 (no request completed)"
            )),
            Some((r, Some(p))) => st.at = Some((*r, *p)),
        }
        match below {
            None => problems.push(format!(
                "the staircase of run {run} has no step below the lab's rate {rate} RPS (steps: {})",
                rates_text(&steps)
            )),
            Some((r, None)) => problems.push(format!(
                "the step at {r} RPS of run {run} has no p50 (no request completed)"
            )),
            Some((r, Some(p))) if *p <= 0.0 => {
                problems.push(format!("the step at {r} RPS of run {run} has a p50 of {p} ms"))
            }
            Some((r, Some(p))) => st.below = Some((*r, *p)),
        }
        if let (Some(a), Some(b)) = (st.at, st.below) {
            st.ratio = Some(a.1 / b.1);
        }
        st.problem = (!problems.is_empty()).then(|| problems.join("; "));
        out.push(st);
    }
    out
}

fn headroom_gate(acc: &Acc, lab: &LabFile, runs: Option<&RunsRecord>) -> Gate {
    let required = lab.preconditions.headroom;
    let factor = lab
        .preconditions
        .headroom_factor
        .unwrap_or(DEFAULT_HEADROOM_FACTOR);
    let stairs = staircases(acc, lab, runs);
    if stairs.is_empty() {
        return Gate {
            name: "headroom_shown".into(),
            kind: "precondition",
            required,
            status: if required {
                Status::Fail
            } else {
                Status::NotEvaluated
            },
            detail: "no staircase (step lines) in the inputs".into(),
            numbers: json!({"factor": factor}),
            rows: Vec::new(),
        };
    }
    let mut fails = Vec::new();
    let mut parts = Vec::new();
    let mut per_run = Vec::new();
    for st in &stairs {
        per_run.push(json!({
            "run_id": st.run_id, "load": st.load,
            "rate": st.at.map(|a| a.0).or(st.rate), "p50_ms": st.at.map(|a| a.1),
            "below_rate": st.below.map(|b| b.0), "below_p50_ms": st.below.map(|b| b.1),
            "ratio": st.ratio.map(round3), "problem": st.problem,
        }));
        if let Some(p) = &st.problem {
            fails.push(p.clone());
            continue;
        }
        if let (Some(a), Some(b), Some(r)) = (st.at, st.below, st.ratio) {
            let text = format!(
                "p50({} RPS) / p50({} RPS) = {:.3} / {:.3} ms = {:.3} (must be >= {factor}) in {}",
                a.0, b.0, a.1, b.1, r, st.run_id
            );
            if r >= factor {
                parts.push(text);
            } else {
                fails.push(text);
            }
        }
    }
    let mut numbers = per_run.first().cloned().unwrap_or(Value::Null);
    if let Value::Object(m) = &mut numbers {
        m.insert("factor".into(), json!(factor));
        m.insert("runs".into(), json!(per_run));
    }
    Gate {
        name: "headroom_shown".into(),
        kind: "precondition",
        required,
        status: if fails.is_empty() {
            Status::Pass
        } else {
            Status::Fail
        },
        detail: if fails.is_empty() {
            parts.join("; ")
        } else {
            fails.join("; ")
        },
        numbers,
        rows: vec!["preflight-headroom".into()],
    }
}

/// `perturbations_observed`: every scheduled event fired and was observed (required only when
/// the lab says so).
fn perturbations_gate(
    events: &[Event],
    lab: &LabFile,
    runs: Result<&RunsRecord, &crate::NoRuns>,
) -> Gate {
    let required = lab.preconditions.perturbations_observed;
    let observed = events.iter().filter(|e| e.summary.observed).count();
    let entries: Vec<Value> = events.iter().map(Event::to_json).collect();
    let rows: Vec<String> = events
        .iter()
        .filter_map(|e| e.summary.perturbation_id.as_ref())
        .map(|p| format!("q3-revision-timeline:{p}"))
        .collect();
    let expected_total = lab.preconditions.expected_perturbations;
    let mk = |status, detail: String, missing: usize| Gate {
        name: "perturbations_observed".into(),
        kind: "precondition",
        required,
        status,
        detail,
        numbers: json!({"scheduled": events.len(), "observed": observed,
                        "expected": expected_total, "missing": missing, "events": entries}),
        rows: rows.clone(),
    };
    if !required {
        return mk(
            Status::NotEvaluated,
            format!(
                "not required by the lab; {observed} of {} fired event(s) observed",
                events.len()
            ),
            0,
        );
    }
    let runs = match runs {
        Ok(r) => r,
        Err(why) => {
            return mk(
                Status::Fail,
                format!("no runs.json ({why}): the scheduled events are unknown"),
                0,
            );
        }
    };
    let missing = missing_events(events, lab, runs);
    if missing.is_empty() {
        let list: Vec<String> = events
            .iter()
            .map(|e| {
                let s = &e.summary;
                let what = match (&s.new_revision, s.transition_s) {
                    (Some(r), Some(t)) => format!("{r} in {t:.1} s"),
                    (None, Some(t)) => format!("replicas replaced in {t:.1} s"),
                    (Some(r), None) => r.clone(),
                    (None, None) => "performed".to_owned(),
                };
                format!("{} #{} {}: {what}", s.step, s.event, s.kind)
            })
            .collect();
        mk(
            Status::Pass,
            format!(
                "{} event(s) fired, each observed ({})",
                events.len(),
                list.join("; ")
            ),
            0,
        )
    } else {
        let n = missing.len();
        mk(Status::Fail, missing.join("; "), n)
    }
}

/// What keeps the fired events from being the scheduled ones, each observed: steps missing
/// from `runs.json`, steps that fired fewer events than scheduled, fewer events than expected in
/// all, none at all, and every event not observed. Empty when nothing is missing.
fn missing_events(events: &[Event], lab: &LabFile, runs: &RunsRecord) -> Vec<String> {
    let mut missing: Vec<String> = Vec::new();
    for s in lab.steps.iter().filter(|s| s.action.is_some()) {
        let Some(want) = s.events else { continue };
        match runs.step(&s.name) {
            None => missing.push(format!("step {} is not in runs.json", s.name)),
            Some(rec) => {
                let fired = events.iter().filter(|e| e.summary.step == s.name).count();
                if (fired as u32) < want {
                    missing.push(format!(
                        "step {}: {fired} of {want} scheduled event(s) fired",
                        rec.name
                    ));
                }
            }
        }
    }
    if let Some(n) = lab.preconditions.expected_perturbations
        && (events.len() as u32) < n
    {
        missing.push(format!("{} event(s) fired, {n} expected", events.len()));
    }
    if events.is_empty() {
        missing.push("no perturbation event in runs.json".into());
    }
    for e in events.iter().filter(|e| !e.summary.observed) {
        missing.push(format!(
            "{} event {} ({}, {}): {}",
            e.summary.step,
            e.summary.event,
            e.summary.kind,
            e.summary.perturbation_id.as_deref().unwrap_or("no id"),
            e.summary.problem.as_deref().unwrap_or("not observed")
        ));
    }
    missing
}

/// `data_complete`: the pack holds every line its sources say exist.
pub fn data_complete_gate(
    acc: &Acc,
    summaries: &[RunSummary],
    runs: Result<&RunsRecord, &crate::NoRuns>,
) -> Gate {
    let mut problems = Vec::new();
    let mut checks = Vec::new();
    for r in summaries {
        let Some(c) = &r.cross_check else { continue };
        checks.push(
            json!({"run_id": r.run_id, "scenario": r.scenario, "compared": c.compared,
                           "bucket": c.bucket, "req": c.req, "gap": c.gap,
                           "resolution": c.resolution, "source": r.source}),
        );
        if c.exceeds() {
            problems.push(format!(
                "{}/{}: bucket lines count {} {}, req lines {} (gap {} > the rule's resolution {})",
                r.run_id, r.scenario, c.bucket, c.compared, c.req, c.gap, c.resolution
            ));
        }
    }
    let mut cut = Vec::new();
    for s in &acc.summaries {
        let aborted = s.errors.get("aborted").copied().unwrap_or(0);
        let run = s.run_id.as_deref().unwrap_or("unknown");
        if s.interrupted || aborted > 0 {
            cut.push(json!({"run_id": run, "scenario": s.scenario,
                            "interrupted": s.interrupted, "aborted": aborted}));
        }
        if s.interrupted {
            problems.push(format!(
                "{run}/{}: the loadgen summary says the run was interrupted",
                s.scenario
            ));
        }
        if aborted > 0 {
            problems.push(format!(
                "{run}/{}: the loadgen summary counts {aborted} aborted request(s) (cut off at the end, never answered)",
                s.scenario
            ));
        }
    }
    let mut failures = Vec::new();
    let runs_note = match runs {
        Ok(rf) => {
            for f in &rf.log_write_failures {
                failures.push(json!({"file": f.file, "error": f.error,
                                     "first_failed_ts": f.first_failed_ts, "rows_lost": f.rows_lost}));
                problems.push(format!(
                    "runs.json: writing {} failed from {} ({} row(s) lost): {}",
                    f.file, f.first_failed_ts, f.rows_lost, f.error
                ));
            }
            "runs.json read"
        }
        Err(_) => "no runs.json: log write failures not checked",
    };
    Gate {
        name: "data_complete".into(),
        kind: "precondition",
        required: true,
        status: if problems.is_empty() {
            Status::Pass
        } else {
            Status::Fail
        },
        detail: if problems.is_empty() {
            let gaps: Vec<String> = checks
                .iter()
                .filter(|c| c["gap"].as_u64().unwrap_or(0) > 0)
                .map(|c| {
                    format!(
                        "{}/{} gap {} <= {}",
                        c["run_id"].as_str().unwrap_or(""),
                        c["scenario"].as_str().unwrap_or(""),
                        c["gap"],
                        c["resolution"]
                    )
                })
                .collect();
            format!(
                "{} run(s) with both bucket and req lines{}; {} loadgen summar(y/ies), none interrupted or aborted; {runs_note}, no log write failure",
                checks.len(),
                if gaps.is_empty() {
                    ", all agreeing".to_owned()
                } else {
                    format!(" (within the rule's resolution: {})", gaps.join(", "))
                },
                acc.summaries.len()
            )
        } else {
            problems.join("; ")
        },
        numbers: json!({"cross_checks": checks, "summaries_cut": cut,
                        "log_write_failures": failures, "runs_json": runs.is_ok()}),
        rows: vec!["q1-per-run-summary".into()],
    }
}

/// The gates and verdict of an observation lab: its `[[checks]]` (already evaluated) and the
/// preconditions the lab requires. `invalid` when a required precondition failed or a check
/// could not be evaluated (or there is none), else `falsified` when a check failed, else `held`.
pub fn decide_observation(ctx: &Ctx, checks: Vec<Gate>) -> (Vec<Gate>, Verdict) {
    let (lab, rule, q2, q2_name) = (ctx.lab, ctx.rule, ctx.q2, ctx.q2_name);
    let mut gates = vec![Gate {
        name: "checks_present".into(),
        kind: "data",
        required: true,
        status: if checks.is_empty() {
            Status::Fail
        } else {
            Status::Pass
        },
        detail: format!("{} [[checks]] entr(y/ies) in the lab file", checks.len()),
        numbers: json!({"checks": checks.len()}),
        rows: Vec::new(),
    }];
    let failed_checks: Vec<String> = checks
        .iter()
        .filter(|g| g.status == Status::Fail)
        .map(|g| g.name.clone())
        .collect();
    let unevaluated: Vec<String> = checks
        .iter()
        .filter(|g| g.status == Status::NotEvaluated)
        .map(|g| g.name.clone())
        .collect();
    let n_checks = checks.len();
    gates.extend(checks);
    gates.extend(ctx.preconditions());
    let failed: Vec<String> = gates
        .iter()
        .filter(|g| g.kind != "check" && g.status == Status::Fail)
        .map(|g| g.name.clone())
        .collect();
    let mut reasons = Vec::new();
    let outcome = if !failed.is_empty() || !unevaluated.is_empty() {
        if !failed.is_empty() {
            reasons.push(format!("failed: {}", failed.join(", ")));
        }
        if !unevaluated.is_empty() {
            reasons.push(format!("not evaluated: {}", unevaluated.join(", ")));
        }
        Outcome::Invalid
    } else if !failed_checks.is_empty() {
        reasons.push(format!(
            "expected observation(s) not seen: {}",
            failed_checks.join(", ")
        ));
        Outcome::Falsified
    } else {
        reasons.push(format!(
            "all {n_checks} check(s) observed; every evaluated precondition passed"
        ));
        Outcome::Held
    };
    let main: Vec<&BucketRow> = q2.iter().filter(|r| r.scenario == "main").collect();
    let judged_requests: u64 = main.iter().map(|r| r.count).sum();
    let judged_errors: u64 = main.iter().map(|r| r.err).sum();
    let worst = q2
        .iter()
        .enumerate()
        .filter(|(_, r)| r.scenario == "main")
        .max_by(|a, b| a.1.err_pct.total_cmp(&b.1.err_pct).then(b.0.cmp(&a.0)));
    let verdict = Verdict {
        verdict: outcome,
        falsified: !failed_checks.is_empty(),
        hypothesis: lab.hypothesis.as_ref().map(|h| h.text.clone()),
        rule: rule.clone(),
        rule_text: format!(
            "observation lab: {n_checks} check(s), {} failed, {} not evaluated",
            failed_checks.len(),
            unevaluated.len()
        ),
        evidence_cap: lab.hypothesis.as_ref().and_then(|h| h.evidence_cap.clone()),
        judged_runs: main
            .iter()
            .map(|r| r.run_id.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect(),
        judged_buckets: main.len(),
        judged_requests,
        judged_errors,
        judged_error_rate: ErrorRate::new(judged_errors, judged_requests),
        burst_error_rates: Vec::new(),
        blindness: None,
        interval_method: strength::METHOD,
        falsifying_windows: 0,
        worst_bucket_err_pct: worst.map_or(0.0, |w| round3(w.1.err_pct)),
        worst_bucket: worst
            .map(|(i, r)| format!("{q2_name}#{i} ({} {})", r.run_id, iso_s(r.start_ms))),
        failed_preconditions: failed,
        reasons,
    };
    (gates, verdict)
}
