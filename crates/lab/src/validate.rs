//! Everything serde cannot check in a lab (after its profile was applied): references between
//! sections, value ranges, durations, each `[[checks]]` entry against its kind, and the
//! preconditions' own demands on the schedule (a headroom staircase holds the load's rate and the
//! step below it). Every problem is reported, each with the key path it is about. This module
//! holds the problems, the top-level passes (head, names, preconditions, campaign) and the
//! helpers; `apps`, `loads`, `steps` and `checks` check their sections.

use std::fmt;

use logline::config::parse_duration;

use crate::schema::{Lab, LabKind, Step};

mod apps;
mod checks;
mod jobs;
mod loads;
mod steps;

/// One thing wrong with a lab file: where (`steps[0].staircase`, and the element's name when it
/// has one) and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The key path, TOML style: `rule.window`, `apps[1].probes[0].type`, `checks[2].min`.
    pub key: String,
    /// The name of the array element the key is in (`step "preflight"`), when it has one.
    pub item: Option<String>,
    pub msg: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.item {
            Some(i) => write!(f, "{} ({i}): {}", self.key, self.msg),
            None => write!(f, "{}: {}", self.key, self.msg),
        }
    }
}

/// The problems of a lab, for [`crate::LabError::Invalid`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Problems(pub Vec<Problem>);

impl fmt::Display for Problems {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

/// The evidence levels an `evidence_cap` may name (the analysis' `evidence::Level`), matched as
/// the analysis matches them: letters only, case-insensitive.
pub const EVIDENCE_LEVELS: [&str; 5] = [
    "Measured",
    "Observed",
    "Strongly Suggested",
    "Inferred",
    "Correlated",
];

/// The most items one `enqueue` action adds (the subject's `MAX_ENQUEUE`).
pub const MAX_ENQUEUE: u64 = 10_000;

/// `simulate` modes the subject serves (`POST /simulate/<mode>`).
pub const SIMULATE_MODES: [&str; 4] = ["zombie", "deadlock", "crash", "reset"];

struct V {
    out: Vec<Problem>,
}

impl V {
    fn push(&mut self, key: impl Into<String>, item: Option<String>, msg: impl Into<String>) {
        self.out.push(Problem {
            key: key.into(),
            item,
            msg: msg.into(),
        });
    }

    fn top(&mut self, key: &str, msg: impl Into<String>) {
        self.push(key, None, msg);
    }

    /// A duration key: parses, and is above zero unless `zero_ok`.
    fn duration(&mut self, key: &str, item: &Option<String>, v: Option<&str>, zero_ok: bool) {
        let Some(v) = v else { return };
        match parse_duration(v) {
            Err(e) => self.push(key, item.clone(), e.to_string()),
            Ok(d) if d.is_zero() && !zero_ok => {
                self.push(key, item.clone(), format!("{v:?} must be longer than zero"))
            }
            Ok(_) => {}
        }
    }
}

fn named(what: &str, name: &str) -> Option<String> {
    Some(format!("{what} {name:?}"))
}

fn same_rate(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

impl Lab {
    /// Everything serde cannot check (this module): every problem, each with its key. Written
    /// here rather than beside the type in [`crate::schema`], so the types do not import their
    /// validation (`schema` -> `validate` -> `schema` was a cycle).
    pub fn validate(&self) -> Result<(), Problems> {
        let p = problems(self);
        if p.is_empty() {
            Ok(())
        } else {
            Err(Problems(p))
        }
    }
}

/// Every problem of `lab`; empty when it can run.
pub fn problems(lab: &Lab) -> Vec<Problem> {
    let mut v = V { out: Vec::new() };
    head(&mut v, lab);
    names(&mut v, lab);
    preconditions(&mut v, lab);
    apps::apps(&mut v, lab);
    jobs::jobs(&mut v, lab);
    loads::loads(&mut v, lab);
    steps::steps(&mut v, lab);
    steps::revisions(&mut v, lab);
    campaign(&mut v, lab);
    for (i, c) in lab.checks.iter().enumerate() {
        checks::check(&mut v, lab, i, c);
    }
    v.out
}

/// `[campaign]`: at least one run, a falsification count a campaign can reach, and no more
/// valid runs demanded than it makes.
fn campaign(v: &mut V, lab: &Lab) {
    let c = &lab.campaign;
    if c.runs == 0 {
        v.top("campaign.runs", "must be at least 1");
    }
    if c.falsified_runs == 0 {
        v.top("campaign.falsified_runs", "must be at least 1");
    }
    if let Some(m) = c.min_valid_runs {
        if m == 0 {
            v.top("campaign.min_valid_runs", "must be at least 1");
        } else if m > c.runs {
            v.top(
                "campaign.min_valid_runs",
                format!("{m} is more than the campaign's {} runs", c.runs),
            );
        }
    }
    if c.falsified_runs > c.runs {
        v.top(
            "campaign.falsified_runs",
            format!(
                "{} is more than the campaign's {} runs: it could never be falsified",
                c.falsified_runs, c.runs
            ),
        );
    }
}

fn head(v: &mut V, lab: &Lab) {
    for (k, s) in [
        ("title", &lab.title),
        ("question", &lab.question),
        ("hypothesis.text", &lab.hypothesis.text),
    ] {
        if s.trim().is_empty() {
            v.top(k, "must not be empty");
        }
    }
    if let Some(e) = &lab.hypothesis.expect
        && !["held", "falsified"].contains(&e.as_str())
    {
        v.top(
            "hypothesis.expect",
            format!("{e:?} is not held or falsified"),
        );
    }
    if let Some(cap) = &lab.hypothesis.evidence_cap {
        let norm = |s: &str| -> String {
            s.chars()
                .filter(char::is_ascii_alphabetic)
                .map(|c| c.to_ascii_lowercase())
                .collect()
        };
        if !EVIDENCE_LEVELS.iter().any(|l| norm(l) == norm(cap)) {
            v.top(
                "hypothesis.evidence_cap",
                format!(
                    "{cap:?} is not an evidence level ({})",
                    EVIDENCE_LEVELS.join(", ")
                ),
            );
        }
    }
    match (lab.kind, &lab.rule) {
        (LabKind::Falsification, None) => v.top(
            "rule",
            "a falsification lab (kind = \"falsification\", the default) needs a [rule]",
        ),
        (LabKind::Observation, _) if lab.checks.is_empty() => v.top(
            "checks",
            "an observation lab needs at least one [[checks]] entry",
        ),
        (LabKind::Falsification, Some(_)) if !lab.checks.is_empty() => v.top(
            "checks",
            "[[checks]] are evaluated only in an observation lab (kind = \"observation\"); \
             a falsification lab is judged by its [rule]",
        ),
        _ => {}
    }
    if let Some(rule) = &lab.rule {
        v.duration("rule.window", &None, Some(&rule.window), false);
        if rule.consecutive == 0 {
            v.top("rule.consecutive", "must be at least 1");
        }
        if !rule.threshold_pct.is_finite() || !(0.0..=100.0).contains(&rule.threshold_pct) {
            v.top(
                "rule.threshold_pct",
                format!("{} is not between 0 and 100", rule.threshold_pct),
            );
        }
        for (i, p) in rule.phases.iter().enumerate() {
            if !lab.steps.iter().any(|s| &s.phase == p) {
                let have: Vec<&str> = lab.steps.iter().map(|s| s.phase.as_str()).collect();
                v.top(
                    &format!("rule.phases[{i}]"),
                    format!(
                        "no step has phase {p:?}: the rule would judge nothing there (phases: {})",
                        have.join(", ")
                    ),
                );
            }
        }
    }
    for (name, val) in &lab.phases {
        let ok = val.iter().next().is_some() && val.iter().all(|s| !s.is_empty());
        if !ok {
            v.top(
                &format!("phases.{name}"),
                "must be a run_id prefix or a list of prefixes (non-empty text)",
            );
        }
    }
}

fn names(v: &mut V, lab: &Lab) {
    let lists: [(&str, Vec<&str>); 5] = [
        ("apps", lab.apps.iter().map(|a| a.name.as_str()).collect()),
        ("jobs", lab.jobs.iter().map(|j| j.name.as_str()).collect()),
        ("load", lab.load.iter().map(|l| l.name.as_str()).collect()),
        ("steps", lab.steps.iter().map(|s| s.name.as_str()).collect()),
        (
            "checks",
            lab.checks.iter().map(|c| c.name.as_str()).collect(),
        ),
    ];
    for (what, names) in lists {
        for (i, n) in names.iter().enumerate() {
            if n.trim().is_empty() {
                v.push(format!("{what}[{i}].name"), None, "must not be empty");
            } else if names[..i].contains(n) {
                v.push(
                    format!("{what}[{i}].name"),
                    None,
                    format!("{n:?} is used twice"),
                );
            }
        }
    }
    if lab.apps.is_empty() && lab.jobs.is_empty() {
        v.top(
            "apps",
            "a lab needs at least one [[apps]] or [[jobs]] entry: nothing is under test",
        );
    }
    if lab.steps.is_empty() {
        v.top("steps", "a lab needs at least one [[steps]] entry");
    }
}

fn preconditions(v: &mut V, lab: &Lab) {
    let pre = &lab.preconditions;
    if let Some(f) = pre.headroom_factor {
        if !f.is_finite() || f <= 1.0 {
            v.top(
                "preconditions.headroom_factor",
                format!(
                    "{f} must be above 1: p50 at the load rate over p50 at the step below it \
                     must show the load consuming headroom"
                ),
            );
        }
        if !pre.headroom {
            v.top(
                "preconditions.headroom_factor",
                "is set but headroom = false, so nothing would judge it",
            );
        }
    }
    if pre.baseline_clean && !lab.steps.iter().any(|s| s.phase == "baseline") {
        v.top(
            "preconditions.baseline_clean",
            "no step has phase \"baseline\": there is no baseline to be clean",
        );
    }
    if pre.perturbations_observed && !lab.steps.iter().any(|s| s.action.is_some()) {
        v.top(
            "preconditions.perturbations_observed",
            "no step has an action: there is no perturbation to observe",
        );
    }
    if let Some(n) = pre.expected_perturbations {
        if !pre.perturbations_observed {
            v.top(
                "preconditions.expected_perturbations",
                "is set but perturbations_observed = false, so nothing would judge it",
            );
        }
        let fired = lab.judged_events();
        if n != fired {
            v.top(
                "preconditions.expected_perturbations",
                format!(
                    "{n}, but the schedule fires {fired} event(s) in the steps with an action \
                     in the judged phases"
                ),
            );
        }
    }
    if pre.headroom {
        headroom_staircase(v, lab);
    }
}

/// `headroom = true`: some step has a staircase, and each staircase holds the rate of every load
/// it runs and a step below that rate (the gate compares p50 at the lab's rate with p50 at the
/// staircase step just below it).
fn headroom_staircase(v: &mut V, lab: &Lab) {
    let stairs: Vec<(usize, &Step)> = lab
        .steps
        .iter()
        .enumerate()
        .filter(|(_, s)| !s.staircase.is_empty())
        .collect();
    if stairs.is_empty() {
        v.top(
            "preconditions.headroom",
            "headroom = true needs a step with a staircase (none of the steps has one)",
        );
    }
    for (i, s) in stairs {
        let key = format!("steps[{i}].staircase");
        let item = named("step", &s.name);
        let list = s
            .staircase
            .iter()
            .map(|r| r.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        let loads = lab.step_loads(s);
        if loads.is_empty() {
            v.push(&key, item.clone(), "the staircase step runs no load");
        }
        for l in loads {
            let Some(rate) = l.rate else {
                v.push(
                    &key,
                    item.clone(),
                    format!(
                        "headroom needs an open-model load with a rate; load {:?} has none",
                        l.name
                    ),
                );
                continue;
            };
            let has_rate = s.staircase.iter().any(|r| same_rate(*r, rate));
            let below = s
                .staircase
                .iter()
                .any(|r| *r < rate && !same_rate(*r, rate));
            if !has_rate || !below {
                let lacks = match (has_rate, below) {
                    (false, false) => format!("the load's rate {rate} and a step below it"),
                    (false, true) => format!("the load's rate {rate}"),
                    _ => format!("a step below the load's rate {rate}"),
                };
                v.push(
                    &key,
                    item.clone(),
                    format!(
                        "[{list}] lacks {lacks} (load {:?}): headroom_shown compares p50 at the \
                         lab's rate with p50 at the staircase step just below it",
                        l.name
                    ),
                );
            }
        }
    }
}

fn whole(x: f64) -> bool {
    x.is_finite() && x.fract() == 0.0
}

/// A traffic label: a DNS label that forms `<app>---<label>`: lower case letters, digits and
/// '-', starting with a letter, not ending with '-', at most 63 characters.
fn is_label(s: &str) -> bool {
    (1..=63).contains(&s.len())
        && s.starts_with(|c: char| c.is_ascii_lowercase())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !s.ends_with('-')
}

fn is_resource_name(s: &str) -> bool {
    (2..=32).contains(&s.len())
        && s.starts_with(|c: char| c.is_ascii_lowercase())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !s.ends_with('-')
        && !s.contains("--")
}
