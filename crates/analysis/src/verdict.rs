//! Gates and the verdict: strict, one path each, no fallbacks.
//!
//! The rule gate decides `falsified`. Preconditions (baseline clean, headroom shown, every
//! scheduled perturbation observed) are evaluated whenever their data is in the pack; a lab that
//! requires one turns missing data into a failure. Any failed precondition, or no judged data at
//! all, makes the verdict `invalid`: the experiment did not test what it claims to.

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::{Value, json};

use crate::lab::LabFile;
use crate::model::Acc;
use crate::rule::{BucketRow, Rule, Streak};
use crate::ts::iso_s;

/// Default staircase headroom factor: p50(step 2) / p50(step 1) must stay at or below it.
pub const DEFAULT_HEADROOM_FACTOR: f64 = 2.0;

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
}

/// Evaluates every gate and the verdict.
pub fn decide(
    acc: &Acc,
    lab: &LabFile,
    rule: &Rule,
    q2: &[BucketRow],
    q2_name: &str,
    streaks: &[Streak],
) -> (Vec<Gate>, Verdict) {
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
    gates.push(Gate {
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
    });

    // rule, per judged run.
    let worst = judged
        .iter()
        .max_by(|a, b| a.1.err_pct.total_cmp(&b.1.err_pct).then(b.0.cmp(&a.0)));
    for run in &judged_runs {
        let hits: Vec<(usize, &Streak)> = streaks
            .iter()
            .enumerate()
            .filter(|(_, s)| s.judged && &s.run_id == run)
            .collect();
        let run_rows: Vec<&(usize, &BucketRow)> =
            judged.iter().filter(|(_, r)| &r.run_id == run).collect();
        let run_worst = run_rows.iter().map(|(_, r)| r.err_pct).fold(0.0, f64::max);
        let above = run_rows.iter().filter(|(_, r)| r.is_bad(rule)).count();
        gates.push(Gate {
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
        });
    }

    gates.push(baseline_gate(lab, rule, q2, q2_name));
    gates.push(headroom_gate(acc, lab));
    gates.push(perturbations_gate(acc, lab, rule, q2));

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
        hypothesis: lab.hypothesis.text.clone(),
        rule: rule.clone(),
        rule_text: rule.describe(),
        evidence_cap: lab.hypothesis.evidence_cap.clone(),
        judged_buckets: judged.len(),
        judged_requests: judged.iter().map(|(_, r)| r.count).sum(),
        judged_errors: judged.iter().map(|(_, r)| r.err).sum(),
        judged_runs,
        falsifying_windows: streaks.iter().filter(|s| s.judged).count(),
        worst_bucket_err_pct: worst.map_or(0.0, |w| round3(w.1.err_pct)),
        worst_bucket: worst
            .map(|(i, r)| format!("{q2_name}#{i} ({} {})", r.run_id, iso_s(r.start_ms))),
        failed_preconditions: failed,
        reasons,
    };
    (gates, verdict)
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

fn headroom_gate(acc: &Acc, lab: &LabFile) -> Gate {
    let required = lab.preconditions.headroom;
    let factor = lab
        .preconditions
        .headroom_factor
        .unwrap_or(DEFAULT_HEADROOM_FACTOR);
    let ratio = headroom_ratio(acc);
    match ratio {
        None => Gate {
            name: "headroom_shown".into(),
            kind: "precondition",
            required,
            status: if required {
                Status::Fail
            } else {
                Status::NotEvaluated
            },
            detail: "no staircase (step lines with p50 for steps 1 and 2) in the inputs".into(),
            numbers: json!({"factor": factor}),
            rows: Vec::new(),
        },
        Some((run, r)) => Gate {
            name: "headroom_shown".into(),
            kind: "precondition",
            required,
            status: if r <= factor {
                Status::Pass
            } else {
                Status::Fail
            },
            detail: format!("p50(step 2) / p50(step 1) = {r:.3} (must be <= {factor}) in {run}"),
            numbers: json!({"ratio": round3(r), "factor": factor, "run_id": run}),
            rows: vec!["preflight-headroom".into()],
        },
    }
}

/// The staircase p50 ratio of the first run with steps 1 and 2 (from `step` lines).
pub fn headroom_ratio(acc: &Acc) -> Option<(String, f64)> {
    let mut runs: BTreeSet<String> = BTreeSet::new();
    for s in &acc.steps {
        runs.insert(s.run_id.clone().unwrap_or_default());
    }
    for run in runs {
        let p = |n: u32| {
            acc.steps
                .iter()
                .find(|s| s.run_id.clone().unwrap_or_default() == run && s.step == n)
                .and_then(|s| s.p50_ms)
        };
        if let (Some(a), Some(b)) = (p(1), p(2))
            && a > 0.0
        {
            return Some((run, b / a));
        }
    }
    None
}

fn perturbations_gate(acc: &Acc, lab: &LabFile, rule: &Rule, q2: &[BucketRow]) -> Gate {
    let required = lab.preconditions.perturbations_observed;
    let scheduled: BTreeSet<String> = acc
        .runs
        .iter()
        .filter(|r| rule.judges(&lab.phase_of(&r.run_id)))
        .flat_map(|r| r.perturbation_ids.iter().cloned())
        .filter(|p| !p.is_empty() && p != "none")
        .collect();
    let _ = q2;
    let sampler_present = !acc.rev_samples.is_empty() || !acc.markers.is_empty();
    if !sampler_present && !required {
        return Gate {
            name: "perturbations_observed".into(),
            kind: "precondition",
            required,
            status: Status::NotEvaluated,
            detail: "no sampler timeline in the inputs".into(),
            numbers: json!({"scheduled": scheduled.len()}),
            rows: Vec::new(),
        };
    }
    let mut missing = Vec::new();
    let mut rows = Vec::new();
    for p in &scheduled {
        let in_sampler = acc
            .rev_samples
            .iter()
            .any(|s| s.perturbation_id.as_deref() == Some(p))
            || acc
                .markers
                .iter()
                .any(|m| m.perturbation_id.as_deref() == Some(p));
        let span = perturbation_span(acc, p);
        let in_system = span.is_some_and(|(a, b)| {
            acc.system
                .iter()
                .any(|e| e.ts_ms >= a - 30_000 && e.ts_ms <= b + 30_000)
        });
        if !in_sampler {
            missing.push(format!("{p}: not in the sampler timeline"));
        } else if !in_system {
            missing.push(format!("{p}: no system event within its window (±30 s)"));
        } else {
            rows.push(format!("q3-revision-timeline:{p}"));
        }
    }
    let expected = lab.preconditions.expected_perturbations;
    if let Some(n) = expected
        && (scheduled.len() as u32) < n
    {
        missing.push(format!(
            "{} perturbation id(s) in the load data, {n} expected",
            scheduled.len()
        ));
    }
    Gate {
        name: "perturbations_observed".into(),
        kind: "precondition",
        required,
        status: if missing.is_empty() {
            Status::Pass
        } else {
            Status::Fail
        },
        detail: if missing.is_empty() {
            format!(
                "{} perturbation(s), each in the sampler timeline and the system events",
                scheduled.len()
            )
        } else {
            missing.join("; ")
        },
        numbers: json!({"scheduled": scheduled.len(), "expected": expected, "missing": missing.len()}),
        rows,
    }
}

/// The time span of a perturbation: its markers, else its revision samples.
pub fn perturbation_span(acc: &Acc, p: &str) -> Option<(i64, i64)> {
    let ts: Vec<i64> = acc
        .markers
        .iter()
        .filter(|m| m.perturbation_id.as_deref() == Some(p))
        .map(|m| m.ts.epoch_ms())
        .collect();
    let ts = if ts.is_empty() {
        acc.rev_samples
            .iter()
            .filter(|s| s.perturbation_id.as_deref() == Some(p))
            .map(|s| s.ts.epoch_ms())
            .collect()
    } else {
        ts
    };
    Some((*ts.iter().min()?, *ts.iter().max()?))
}

/// The gates and verdict of an observation lab: its `[[checks]]` (already evaluated) and the
/// preconditions the lab requires. `invalid` when a required precondition failed or a check
/// could not be evaluated (or there is none), else `falsified` when a check failed, else `held`.
pub fn decide_observation(
    acc: &Acc,
    lab: &LabFile,
    rule: &Rule,
    q2: &[BucketRow],
    q2_name: &str,
    checks: Vec<Gate>,
) -> (Vec<Gate>, Verdict) {
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
    gates.push(baseline_gate(lab, rule, q2, q2_name));
    gates.push(headroom_gate(acc, lab));
    gates.push(perturbations_gate(acc, lab, rule, q2));
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
    let worst = q2
        .iter()
        .enumerate()
        .filter(|(_, r)| r.scenario == "main")
        .max_by(|a, b| a.1.err_pct.total_cmp(&b.1.err_pct).then(b.0.cmp(&a.0)));
    let verdict = Verdict {
        verdict: outcome,
        falsified: !failed_checks.is_empty(),
        hypothesis: lab.hypothesis.text.clone(),
        rule: rule.clone(),
        rule_text: format!(
            "observation lab: {n_checks} check(s), {} failed, {} not evaluated",
            failed_checks.len(),
            unevaluated.len()
        ),
        evidence_cap: lab.hypothesis.evidence_cap.clone(),
        judged_runs: main
            .iter()
            .map(|r| r.run_id.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect(),
        judged_buckets: main.len(),
        judged_requests: main.iter().map(|r| r.count).sum(),
        judged_errors: main.iter().map(|r| r.err).sum(),
        falsifying_windows: 0,
        worst_bucket_err_pct: worst.map_or(0.0, |w| round3(w.1.err_pct)),
        worst_bucket: worst
            .map(|(i, r)| format!("{q2_name}#{i} ({} {})", r.run_id, iso_s(r.start_ms))),
        failed_preconditions: failed,
        reasons,
    };
    (gates, verdict)
}
