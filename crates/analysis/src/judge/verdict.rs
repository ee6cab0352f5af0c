//! Gates and the verdict: strict, one path each, no fallbacks.
//!
//! The rule gate decides `falsified`. Preconditions:
//! - `data_complete` (always required): no run whose `bucket` and `req` lines disagree by more
//!   than the rule's resolution ([`crate::judge::rule::CrossCheck`]), no loadgen `summary` that was
//!   `interrupted` or counts `aborted` requests, no `log_write_failures` in `runs.json`;
//! - `baseline_clean`: no baseline window above the threshold;
//! - `headroom_shown`: for every staircase run, p50 at the lab's load rate / p50 at the staircase
//!   step just below it (steps matched by rate, not position) ≥ `headroom_factor` (default 5,
//!   the original lab's); a staircase without the lab's rate or a step below it fails;
//! - `perturbations_observed` (evaluated only when the lab requires it): every fired event of
//!   `runs.json` observed as [`crate::judge::events`] defines, every scheduled event fired.
//!
//! `baseline_clean` and `headroom_shown` are evaluated whenever their data is in the pack; a lab
//! that requires one turns missing data into a failure. Any failed precondition, or no judged
//! data at all, makes the verdict `invalid`: the experiment did not test what it claims to.

use std::collections::BTreeSet;

use lab::Lab;
use serde::Serialize;
use serde_json::{Value, json};

use crate::judge::events::Event;
use crate::judge::rule::{BucketRow, Rule, RunSummary, Streak};
use crate::judge::strength::{self, Blindness, ErrorRate};
use crate::read::model::Acc;
use crate::read::runs::RunsRecord;
use crate::ts::iso_s;

mod preconditions;

pub use preconditions::{Staircase, data_complete_gate, staircases};
use preconditions::{baseline_gate, headroom_gate, perturbations_gate};

/// Default headroom factor (the original lab's): p50 at the lab's rate must be at least this
/// many times p50 at the staircase step below it.
pub const DEFAULT_HEADROOM_FACTOR: f64 = 5.0;

/// What the gates read.
pub struct Ctx<'a> {
    pub acc: &'a Acc,
    pub lab: &'a Lab,
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
        hypothesis: crate::read::lab::hypothesis(lab).map(str::to_owned),
        rule: rule.clone(),
        rule_text: rule.describe(),
        evidence_cap: lab.hypothesis.evidence_cap.clone(),
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
        hypothesis: crate::read::lab::hypothesis(lab).map(str::to_owned),
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
