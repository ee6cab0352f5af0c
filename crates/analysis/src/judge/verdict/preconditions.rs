//! The preconditions: `data_complete`, `baseline_clean`, `headroom_shown` (with the staircases
//! it reads) and `perturbations_observed`, each evaluated into a [`Gate`] (see the parent's
//! docs for what each demands).

use std::collections::BTreeSet;

use lab::Lab;
use serde_json::{Value, json};

use super::{DEFAULT_HEADROOM_FACTOR, Gate, Status, round3};
use crate::judge::events::Event;
use crate::judge::rule::{BucketRow, Rule, RunSummary};
use crate::read::model::Acc;
use crate::read::runs::RunsRecord;

pub(super) fn baseline_gate(lab: &Lab, rule: &Rule, q2: &[BucketRow], q2_name: &str) -> Gate {
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
pub fn staircases(acc: &Acc, lab: &Lab, runs: Option<&RunsRecord>) -> Vec<Staircase> {
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

pub(super) fn headroom_gate(acc: &Acc, lab: &Lab, runs: Option<&RunsRecord>) -> Gate {
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
pub(super) fn perturbations_gate(
    events: &[Event],
    lab: &Lab,
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
fn missing_events(events: &[Event], lab: &Lab, runs: &RunsRecord) -> Vec<String> {
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
