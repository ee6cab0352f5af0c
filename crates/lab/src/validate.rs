//! Everything serde cannot check in a lab (after its profile was applied): references between
//! sections, value ranges, durations, each `[[checks]]` entry against its kind, and the
//! preconditions' own demands on the schedule (a headroom staircase holds the load's rate and the
//! step below it). Every problem is reported, each with the key path it is about.

use std::fmt;

use labkit::config::parse_duration;

use crate::checks::{Check, CheckKind, Need};
use crate::schema::{
    Action, App, Lab, LabKind, Load, MAX_LOAD_CLIENTS, MAX_LOAD_REPLICAS, RevisionsMode, Step,
    TrafficEntry,
};

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

/// How many events the schedule fires in the steps with an action whose phase the rule judges
/// (every action step when the rule names no phases).
pub fn judged_events(lab: &Lab) -> u32 {
    let phases: &[String] = lab.rule.as_ref().map_or(&[], |r| r.phases.as_slice());
    lab.steps
        .iter()
        .filter(|s| s.action.is_some())
        .filter(|s| phases.is_empty() || phases.contains(&s.phase))
        .map(|s| s.events.unwrap_or(1))
        .sum()
}

/// The loads a step runs (its `loads`, or every load).
pub fn step_loads<'a>(lab: &'a Lab, step: &Step) -> Vec<&'a crate::schema::Load> {
    lab.load
        .iter()
        .filter(|l| step.loads.as_ref().is_none_or(|n| n.contains(&l.name)))
        .collect()
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
    apps(&mut v, lab);
    loads(&mut v, lab);
    steps(&mut v, lab);
    revisions(&mut v, lab);
    campaign(&mut v, lab);
    for (i, c) in lab.checks.iter().enumerate() {
        check(&mut v, lab, i, c);
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
        let ok = match val {
            toml::Value::String(s) => !s.is_empty(),
            toml::Value::Array(a) => {
                !a.is_empty() && a.iter().all(|x| x.as_str().is_some_and(|s| !s.is_empty()))
            }
            _ => false,
        };
        if !ok {
            v.top(
                &format!("phases.{name}"),
                "must be a run_id prefix or a list of prefixes (non-empty text)",
            );
        }
    }
}

fn names(v: &mut V, lab: &Lab) {
    let lists: [(&str, Vec<&str>); 4] = [
        ("apps", lab.apps.iter().map(|a| a.name.as_str()).collect()),
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
    if lab.apps.is_empty() {
        v.top("apps", "a lab needs at least one [[apps]] entry");
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
        let fired = judged_events(lab);
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
        let loads = step_loads(lab, s);
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

fn apps(v: &mut V, lab: &Lab) {
    for (i, app) in lab.apps.iter().enumerate() {
        let item = named("app", &app.name);
        let k = |f: &str| format!("apps[{i}].{f}");
        if !is_resource_name(&app.name) {
            v.push(
                k("name"),
                item.clone(),
                "lower case letters, digits and '-', 2-32 characters, starting with a letter",
            );
        }
        if app.image.trim().is_empty() {
            v.push(k("image"), item.clone(), "must not be empty");
        }
        if app.replicas == Some(0) {
            v.push(k("replicas"), item.clone(), "must be at least 1");
        }
        if let Some(s) = &app.scale {
            app_scale(v, &k, &item, s, app.replicas.is_some());
        }
        if let Some(ing) = &app.ingress
            && ing.target_port == 0
        {
            v.push(
                k("ingress.target_port"),
                item.clone(),
                "must be a port (1-65535)",
            );
        }
        if app.ingress.as_ref().is_some_and(|i| i.sticky_sessions)
            && app.revisions_mode == RevisionsMode::Multiple
        {
            v.push(
                k("ingress.sticky_sessions"),
                item.clone(),
                "session affinity works in single revision mode only (Learn, \"Session affinity \
                 in Azure Container Apps\"): Container Apps would not pin a client here",
            );
        }
        app_knobs(v, i, app);
        for (j, p) in app.probes.iter().enumerate() {
            let pk = |f: &str| format!("apps[{i}].probes[{j}].{f}");
            if !["Startup", "Readiness", "Liveness"].contains(&p.kind.as_str()) {
                v.push(
                    pk("type"),
                    item.clone(),
                    format!("{:?} is not Startup, Readiness or Liveness", p.kind),
                );
            }
            if p.port == 0 {
                v.push(pk("port"), item.clone(), "must be a port (1-65535)");
            }
            if let Some(path) = &p.path
                && !path.starts_with('/')
            {
                v.push(
                    pk("path"),
                    item.clone(),
                    format!("{path:?} must start with /"),
                );
            }
            for (f, x) in [
                ("period_seconds", p.period_seconds),
                ("timeout_seconds", p.timeout_seconds),
                ("failure_threshold", p.failure_threshold),
                ("success_threshold", p.success_threshold),
            ] {
                if x == Some(0) {
                    v.push(pk(f), item.clone(), "must be at least 1");
                }
            }
        }
    }
}

/// The app's emulator knobs (`localplane.*` tags): each one of the values localplane takes.
fn app_knobs(v: &mut V, i: usize, app: &crate::schema::App) {
    let item = named("app", &app.name);
    let k = |f: &str| format!("apps[{i}].{f}");
    for (key, val, allowed) in [
        (
            "revision_ready",
            &app.revision_ready,
            ["allReplicas", "firstReplica"],
        ),
        (
            "new_revision_replicas",
            &app.new_revision_replicas,
            ["previous", "minReplicas"],
        ),
        (
            "http_metric",
            &app.http_metric,
            ["requestRate", "peakInFlight"],
        ),
        ("scale_up", &app.scale_up, ["steps", "atOnce"]),
        ("maintenance", &app.maintenance, ["rolling", "stopFirst"]),
    ] {
        if let Some(x) = val
            && !allowed.contains(&x.as_str())
        {
            v.push(
                k(key),
                item.clone(),
                format!("{x:?} is not {} or {}", allowed[0], allowed[1]),
            );
        }
    }
    if let Some(x) = &app.scale_down_stabilization
        && x != "cooldownPeriod"
        && x.parse::<u64>().is_err()
    {
        v.push(
            k("scale_down_stabilization"),
            item.clone(),
            format!("{x:?} is not a number of seconds or cooldownPeriod"),
        );
    }
    if let Some(d) = app.progress_deadline_seconds
        && !(1..=3600).contains(&d)
    {
        v.push(
            k("progress_deadline_seconds"),
            item.clone(),
            format!("{d} is not 1 to 3600 seconds"),
        );
    }
    if let Some(t) = &app.ingress_timeout
        && !["idle", "request"].contains(&t.as_str())
    {
        v.push(
            k("ingress_timeout"),
            item.clone(),
            format!("{t:?} is not idle or request"),
        );
    }
}

fn loads(v: &mut V, lab: &Lab) {
    for (i, load) in lab.load.iter().enumerate() {
        let item = named("load", &load.name);
        let k = |f: &str| format!("load[{i}].{f}");
        if lab.app(&load.target).is_none() {
            v.push(
                k("target"),
                item.clone(),
                format!("target app {:?} is not defined", load.target),
            );
        }
        if load.ready_path.is_some() && lab.app(&load.target).is_some_and(|a| !a.wait_ready) {
            v.push(
                k("ready_path"),
                item.clone(),
                format!(
                    "target app {:?} has wait_ready = false, so nothing polls ready_path before \
                     the first step: remove it, or let the runner wait for the app",
                    load.target
                ),
            );
        }
        for (key, path) in [
            ("path", Some(&load.path)),
            ("ready_path", load.ready_path.as_ref()),
        ] {
            if let Some(p) = path
                && !p.starts_with('/')
            {
                v.push(k(key), item.clone(), format!("{p:?} must start with /"));
            }
        }
        if !["close", "keep-alive"].contains(&load.connection.as_str()) {
            v.push(
                k("connection"),
                item.clone(),
                format!("{:?} is not close or keep-alive", load.connection),
            );
        }
        match (load.rate, load.workers) {
            (None, None) => v.push(
                k("rate"),
                item.clone(),
                "set rate (open model) or workers (closed model)",
            ),
            (Some(r), _) if !r.is_finite() || r <= 0.0 => v.push(
                k("rate"),
                item.clone(),
                format!("{r} is not a rate above 0 requests per second"),
            ),
            (_, Some(0)) => v.push(k("workers"), item.clone(), "must be at least 1"),
            _ => {}
        }
        load_replicas(v, load, &k("replicas"), &item);
        load_clients(v, load, &k("clients"), &item);
        v.duration(&k("timeout"), &item, load.timeout.as_deref(), false);
        v.duration(&k("think"), &item, load.think.as_deref(), true);
        if let Some(lr) = &load.log_requests
            && !["all", "errors", "none"].contains(&lr.as_str())
        {
            v.push(
                k("log_requests"),
                item.clone(),
                format!("{lr:?} is not all, errors or none"),
            );
        }
        for (j, a) in load.also.iter().enumerate() {
            if a.split(',')
                .filter(|p| !p.trim().is_empty())
                .any(|p| !p.contains('='))
            {
                v.push(
                    format!("load[{i}].also[{j}]"),
                    item.clone(),
                    format!("{a:?}: expected KEY=VALUE pairs separated by ','"),
                );
            }
        }
    }
}

/// `replicas`: 1 to [`MAX_LOAD_REPLICAS`], and a closed model's workers split evenly over them
/// (each replica runs `workers / replicas`; an uneven split would run a different total).
fn load_replicas(v: &mut V, load: &Load, key: &str, item: &Option<String>) {
    let Some(n) = load.replicas else { return };
    if !(1..=MAX_LOAD_REPLICAS).contains(&n) {
        v.push(
            key,
            item.clone(),
            format!("{n} is not between 1 and {MAX_LOAD_REPLICAS} loadgen replicas"),
        );
    } else if let (None, Some(w)) = (load.rate, load.workers)
        && w % n != 0
    {
        v.push(
            key,
            item.clone(),
            format!(
                "{w} workers do not split evenly over {n} replicas (each replica runs \
                 workers / replicas)"
            ),
        );
    }
}

/// `clients`: 1 to [`MAX_LOAD_CLIENTS`], open model, one loadgen replica (replicas share a run
/// id, so their clients' numbers would collide).
fn load_clients(v: &mut V, load: &Load, key: &str, item: &Option<String>) {
    let Some(n) = load.clients else { return };
    let why = if !(1..=MAX_LOAD_CLIENTS).contains(&n) {
        format!("{n} is not between 1 and {MAX_LOAD_CLIENTS} virtual clients")
    } else if load.workers.is_some() {
        "virtual clients spread the open model's arrivals: set rate, not workers".to_owned()
    } else if load.replica_count() > 1 {
        "virtual clients need one loadgen replica (the replicas' client numbers would collide \
         under one run id)"
            .to_owned()
    } else {
        return;
    };
    v.push(key, item.clone(), why);
}

/// The scenarios a load's lines carry: `main` and each `also` stream's `name=`.
pub fn scenarios(load: &crate::schema::Load) -> Vec<String> {
    let mut v = vec!["main".to_owned()];
    for a in &load.also {
        for part in a.split(',') {
            if let Some((k, val)) = part.split_once('=')
                && k.trim() == "name"
            {
                v.push(val.trim().to_owned());
            }
        }
    }
    v
}

fn steps(v: &mut V, lab: &Lab) {
    for (i, step) in lab.steps.iter().enumerate() {
        let item = named("step", &step.name);
        let k = |f: &str| format!("steps[{i}].{f}");
        if step.phase.trim().is_empty() {
            v.push(k("phase"), item.clone(), "must not be empty");
        }
        for (f, val, zero_ok) in [
            ("duration", &step.duration, false),
            ("interval", &step.interval, false),
            ("offset", &step.offset, true),
            ("staircase_step", &step.staircase_step, false),
            ("staircase_pause", &step.staircase_pause, true),
        ] {
            v.duration(&k(f), &item, val.as_deref(), zero_ok);
        }
        if step.duration.is_none()
            && (step.events.is_none() || step.interval.is_none())
            && step.staircase.is_empty()
        {
            v.push(
                k("duration"),
                item.clone(),
                "give a duration, or events and interval, or a staircase",
            );
        }
        if step.events == Some(0) {
            v.push(k("events"), item.clone(), "must be at least 1");
        }
        if !step.staircase.is_empty() {
            if step.staircase_step.is_none() {
                v.push(
                    k("staircase_step"),
                    item.clone(),
                    "a staircase needs staircase_step (how long each rate runs)",
                );
            }
            let bad = step.staircase.iter().any(|r| !r.is_finite() || *r <= 0.0);
            let rising = step.staircase.windows(2).all(|w| w[0] < w[1]);
            if bad || !rising {
                v.push(
                    k("staircase"),
                    item.clone(),
                    "rates must be above 0 and rise strictly, step after step",
                );
            }
        }
        if let Some(action) = &step.action {
            action_problems(v, lab, &k("action"), &item, action);
            if step.sample {
                v.push(
                    k("sample"),
                    item.clone(),
                    "an action step samples around each of its events already; `sample` is for \
                     a step without an action",
                );
            }
        }
        for (j, l) in step.loads.iter().flatten().enumerate() {
            if !lab.load.iter().any(|x| &x.name == l) {
                v.push(
                    format!("steps[{i}].loads[{j}]"),
                    item.clone(),
                    format!("load {l:?} is not defined"),
                );
            }
        }
    }
}

fn action_problems(v: &mut V, lab: &Lab, key: &str, item: &Option<String>, a: &Action) {
    if lab.app(a.app()).is_none() {
        v.push(
            format!("{key}.app"),
            item.clone(),
            format!("action targets undefined app {:?}", a.app()),
        );
    }
    match a {
        Action::Dependency {
            healthy,
            delay_ms,
            fail_rate,
            restore_after,
            ..
        } => {
            if healthy.is_none() && delay_ms.is_none() && fail_rate.is_none() {
                v.push(
                    key,
                    item.clone(),
                    "a dependency action sets healthy, delay_ms or fail_rate",
                );
            }
            if let Some(f) = fail_rate
                && !(f.is_finite() && (0.0..=1.0).contains(f))
            {
                v.push(
                    format!("{key}.fail_rate"),
                    item.clone(),
                    format!("{f} is not a fraction between 0 and 1"),
                );
            }
            v.duration(
                &format!("{key}.restore_after"),
                item,
                restore_after.as_deref(),
                false,
            );
        }
        Action::Simulate {
            mode,
            restore_after,
            ..
        } => {
            if !SIMULATE_MODES.contains(&mode.as_str()) {
                v.push(
                    format!("{key}.mode"),
                    item.clone(),
                    format!("{mode:?} is not one of {}", SIMULATE_MODES.join(", ")),
                );
            }
            v.duration(
                &format!("{key}.restore_after"),
                item,
                restore_after.as_deref(),
                false,
            );
        }
        Action::Saturate { path, .. } if !path.starts_with('/') => v.push(
            format!("{key}.path"),
            item.clone(),
            format!("{path:?} must start with /"),
        ),
        Action::SetEnv { env, .. } if env.is_empty() => v.push(
            format!("{key}.env"),
            item.clone(),
            "set_env needs at least one variable",
        ),
        _ => {}
    }
}

/// Named revisions and traffic, in schedule order: a suffix names one revision (so a step that
/// creates one fires once), `traffic` and `deactivate` name revisions that exist by then, and
/// traffic rules hold what Container Apps demands of `ingress.traffic` (weights sum to 100,
/// each entry a revision or the latest, labels unique) and only in multiple revision mode.
fn revisions(v: &mut V, lab: &Lab) {
    // Suffixes created so far, per app.
    let mut known = first_revisions(v, lab);
    for (i, step) in lab.steps.iter().enumerate() {
        if let Some(action) = &step.action {
            revision_action(v, lab, i, step, action, &mut known);
        }
    }
}

/// The apps' first revisions and traffic; returns the suffixes they create, per app.
fn first_revisions<'a>(v: &mut V, lab: &'a Lab) -> Vec<(&'a str, &'a str)> {
    let mut known: Vec<(&str, &str)> = Vec::new();
    for (i, app) in lab.apps.iter().enumerate() {
        let item = named("app", &app.name);
        let k = |f: &str| format!("apps[{i}].{f}");
        if let Some(sfx) = &app.revision_suffix {
            suffix_problems(v, &k("revision_suffix"), &item, sfx);
            known.push((&app.name, sfx));
        }
        if !app.traffic.is_empty() {
            if app.revisions_mode != RevisionsMode::Multiple {
                v.push(
                    k("traffic"),
                    item.clone(),
                    "traffic rules are for revisions_mode = \"multiple\" (in single mode the \
                     latest revision takes all traffic)",
                );
            }
            if app.ingress.is_none() {
                v.push(
                    k("traffic"),
                    item.clone(),
                    "traffic needs the app's ingress",
                );
            }
            traffic_problems(v, &k("traffic"), &item, app, &app.traffic, &known);
        }
    }
    known
}

/// Step `i`'s action, if it names revisions: those it names exist by then (`known`, to which a
/// `revision` action adds its own).
fn revision_action<'a>(
    v: &mut V,
    lab: &'a Lab,
    i: usize,
    step: &Step,
    action: &'a Action,
    known: &mut Vec<(&'a str, &'a str)>,
) {
    let item = named("step", &step.name);
    let key = format!("steps[{i}].action");
    let Some(app) = lab.app(action.app()) else {
        return; // reported by action_problems
    };
    let multiple = |v: &mut V, what: &str| {
        if app.revisions_mode != RevisionsMode::Multiple {
            v.push(
                key.clone(),
                item.clone(),
                format!(
                    "{what} needs app {:?} in revisions_mode = \"multiple\"",
                    app.name
                ),
            );
        }
    };
    match action {
        Action::Revision {
            suffix, traffic, ..
        } => {
            suffix_problems(v, &format!("{key}.suffix"), &item, suffix);
            if known.contains(&(app.name.as_str(), suffix.as_str())) {
                v.push(
                    format!("{key}.suffix"),
                    item.clone(),
                    format!(
                        "revision {:?} is created earlier: a suffix names one revision",
                        crate::arm_body::revision_name(&app.name, suffix)
                    ),
                );
            }
            if step.events.is_some_and(|n| n > 1) {
                v.push(
                    format!("steps[{i}].events"),
                    item.clone(),
                    "a revision action fires once: its suffix names one revision",
                );
            }
            known.push((&app.name, suffix));
            if !traffic.is_empty() {
                multiple(v, "a traffic rule");
                traffic_problems(v, &format!("{key}.traffic"), &item, app, traffic, known);
            }
        }
        Action::Traffic { traffic, .. } => {
            multiple(v, "a traffic action");
            if traffic.is_empty() {
                v.push(
                    format!("{key}.traffic"),
                    item.clone(),
                    "a traffic action gives at least one weight",
                );
            } else {
                traffic_problems(v, &format!("{key}.traffic"), &item, app, traffic, known);
            }
        }
        Action::Deactivate { revision, .. } => {
            multiple(v, "deactivating a revision");
            if !known.contains(&(app.name.as_str(), revision.as_str())) {
                v.push(
                    format!("{key}.revision"),
                    item.clone(),
                    format!(
                        "no earlier revision of {:?} has suffix {revision:?}",
                        app.name
                    ),
                );
            }
        }
        _ => {}
    }
}

/// The revision suffixes a lab names for `app`: its first revision's and its revision actions'.
pub fn revision_suffixes<'a>(lab: &'a Lab, app: &str) -> Vec<&'a str> {
    let first = lab
        .app(app)
        .and_then(|a| a.revision_suffix.as_deref())
        .into_iter();
    let actions = lab.steps.iter().filter_map(|s| match &s.action {
        Some(Action::Revision { app: a, suffix, .. }) if a == app => Some(suffix.as_str()),
        _ => None,
    });
    first.chain(actions).collect()
}

/// A `revisionSuffix`: lower-case letters, digits and '-', starting with a letter.
fn suffix_problems(v: &mut V, key: &str, item: &Option<String>, sfx: &str) {
    let ok = (1..=32).contains(&sfx.len())
        && sfx.starts_with(|c: char| c.is_ascii_lowercase())
        && sfx
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !sfx.ends_with('-')
        && !sfx.contains("--");
    if !ok {
        v.push(
            key,
            item.clone(),
            format!(
                "{sfx:?} is not a revision suffix: lower case letters, digits and '-', 1-32 \
                 characters, starting with a letter"
            ),
        );
    }
}

/// One `ingress.traffic` list of `app`, naming revisions among `known`.
fn traffic_problems(
    v: &mut V,
    key: &str,
    item: &Option<String>,
    app: &App,
    traffic: &[TrafficEntry],
    known: &[(&str, &str)],
) {
    let mut labels: Vec<&str> = Vec::new();
    for (j, e) in traffic.iter().enumerate() {
        let ek = format!("{key}[{j}]");
        match (&e.revision, e.latest) {
            (Some(_), true) | (None, false) => v.push(
                ek.clone(),
                item.clone(),
                "give exactly one of revision (a suffix) or latest = true",
            ),
            (Some(r), false) if !known.contains(&(app.name.as_str(), r.as_str())) => v.push(
                format!("{ek}.revision"),
                item.clone(),
                format!(
                    "no revision of {:?} has suffix {r:?} by then (suffixes: the app's \
                     revision_suffix and earlier revision actions')",
                    app.name
                ),
            ),
            _ => {}
        }
        if e.weight > 100 {
            v.push(
                format!("{ek}.weight"),
                item.clone(),
                format!("{} is not a weight (0-100)", e.weight),
            );
        }
        if let Some(l) = &e.label {
            if !is_label(l) {
                v.push(
                    format!("{ek}.label"),
                    item.clone(),
                    format!("{l:?} is not a label: lower case letters, digits and '-'"),
                );
            }
            if labels.contains(&l.as_str()) {
                v.push(
                    format!("{ek}.label"),
                    item.clone(),
                    format!("label {l:?} is given twice"),
                );
            }
            labels.push(l);
        }
    }
    let sum: u64 = traffic.iter().map(|e| u64::from(e.weight)).sum();
    if sum != 100 {
        v.push(
            key,
            item.clone(),
            format!("the weights sum to {sum}, not 100 (Container Apps refuses the rest)"),
        );
    }
}

fn whole(x: f64) -> bool {
    x.is_finite() && x.fract() == 0.0
}

fn check(v: &mut V, lab: &Lab, i: usize, c: &Check) {
    let item = named("check", &c.name);
    let k = |f: &str| format!("checks[{i}].{f}");
    if let CheckKind::Unknown(kind) = &c.kind {
        v.push(
            k("kind"),
            item,
            format!(
                "unknown check kind {kind:?} (known: {})",
                crate::checks::KINDS.join(", ")
            ),
        );
        return;
    }
    check_params(v, i, c);
    check_refs(v, lab, i, c);
    check_ranges(v, i, c);
}

/// The keys the check's kind needs are set, and it sets no other.
fn check_params(v: &mut V, i: usize, c: &Check) {
    let item = named("check", &c.name);
    let k = |f: &str| format!("checks[{i}].{f}");
    let params = c.kind.params();
    for p in params.iter().filter(|p| p.need == Need::Required) {
        if !c.set_params().contains(&p.key) {
            v.push(
                k(p.key),
                item.clone(),
                format!("check kind {} needs `{}` ({})", c.kind, p.key, p.meaning),
            );
        }
    }
    for set in c.set_params() {
        if !params.iter().any(|p| p.key == set) {
            let takes: Vec<&str> = params.iter().map(|p| p.key).collect();
            v.push(
                k(set),
                item.clone(),
                format!(
                    "check kind {} does not take `{set}` (it takes: {})",
                    c.kind,
                    takes.join(", ")
                ),
            );
        }
    }
}

/// Its `step`, `app`, `load` and `scenario` exist, and fit together.
fn check_refs(v: &mut V, lab: &Lab, i: usize, c: &Check) {
    let item = named("check", &c.name);
    let k = |f: &str| format!("checks[{i}].{f}");
    let step = c.step.as_ref().and_then(|s| {
        let found = lab.steps.iter().find(|x| &x.name == s);
        if found.is_none() {
            let have: Vec<&str> = lab.steps.iter().map(|x| x.name.as_str()).collect();
            v.push(
                k("step"),
                item.clone(),
                format!("step {s:?} is not defined (steps: {})", have.join(", ")),
            );
        }
        found
    });
    if let Some(app) = &c.app
        && lab.app(app).is_none()
    {
        v.push(
            k("app"),
            item.clone(),
            format!("app {app:?} is not defined"),
        );
    }
    if let Some(load) = &c.load {
        match lab.load.iter().find(|l| &l.name == load) {
            None => v.push(
                k("load"),
                item.clone(),
                format!("load {load:?} is not defined"),
            ),
            Some(l) => {
                if c.kind == CheckKind::ClientsMoved {
                    if l.clients.is_none() {
                        v.push(
                            k("load"),
                            item.clone(),
                            format!(
                                "load {load:?} sets no `clients`: it keeps no cookies and \
                                 reports no client moving"
                            ),
                        );
                    }
                    if c.scenario.as_deref().is_some_and(|sc| sc != "main") {
                        v.push(
                            k("scenario"),
                            item.clone(),
                            "virtual clients drive the main stream only",
                        );
                    }
                }
                if let Some(sc) = &c.scenario {
                    let known = scenarios(l);
                    if !known.contains(sc) {
                        v.push(
                            k("scenario"),
                            item.clone(),
                            format!(
                                "load {load:?} has no stream {sc:?} (streams: {})",
                                known.join(", ")
                            ),
                        );
                    }
                }
                if let Some(s) = step
                    && !step_loads(lab, s).iter().any(|x| &x.name == load)
                {
                    v.push(
                        k("load"),
                        item.clone(),
                        format!("step {:?} does not run load {load:?}", s.name),
                    );
                }
            }
        }
    }
    if let (Some(app), Some(r)) = (c.app.as_ref().and_then(|a| lab.app(a)), &c.revision)
        && !revision_suffixes(lab, &app.name).contains(&r.as_str())
    {
        v.push(
            k("revision"),
            item.clone(),
            format!(
                "no revision of {:?} has suffix {r:?} (suffixes: {})",
                app.name,
                revision_suffixes(lab, &app.name).join(", ")
            ),
        );
    }
    if c.kind == CheckKind::ActionFailed
        && let (Some(s), Some(app)) = (step, &c.app)
        && s.action.as_ref().is_none_or(|a| a.app() != app)
    {
        v.push(
            k("step"),
            item.clone(),
            format!("step {:?} has no action on app {app:?}", s.name),
        );
    }
}

/// `clients_moved`: a bound, and one that some count passes.
fn moved_bounds(v: &mut V, k: &dyn Fn(&str) -> String, item: &Option<String>, c: &Check) {
    match (c.min, c.max) {
        (None, None) => v.push(
            k("min"),
            item.clone(),
            "set min, max or both: a count of moved clients with no bound cannot fail",
        ),
        (Some(lo), Some(hi)) if lo > hi => v.push(
            k("max"),
            item.clone(),
            format!("{hi} is below min {lo}: no count could pass"),
        ),
        _ => {}
    }
}

/// Its values are in range.
fn check_ranges(v: &mut V, i: usize, c: &Check) {
    let item = named("check", &c.name);
    let k = |f: &str| format!("checks[{i}].{f}");
    if let Some(p) = &c.probe
        && !["startup", "readiness", "liveness"].contains(&p.to_lowercase().as_str())
    {
        v.push(
            k("probe"),
            item.clone(),
            format!("{p:?} is not Startup, Readiness or Liveness"),
        );
    }
    if let Some(s) = c.status
        && !(100..=599).contains(&s)
    {
        v.push(
            k("status"),
            item.clone(),
            format!("{s} is not an HTTP status (100-599)"),
        );
    }
    if let Some(m) = c.min
        && (!whole(m) || m < 1.0)
    {
        v.push(
            k("min"),
            item.clone(),
            format!("{m} is not a whole number >= 1 (a minimum below 1 cannot fail)"),
        );
    }
    if let Some(m) = c.max
        && (!whole(m) || m < 0.0)
    {
        v.push(
            k("max"),
            item.clone(),
            format!("{m} is not a whole number >= 0"),
        );
    }
    if c.kind == CheckKind::SlowestBetween
        && let (Some(lo), Some(hi)) = (c.min, c.max)
        && lo > hi
    {
        v.push(
            k("max"),
            item.clone(),
            format!("{hi} is below min {lo}: no response time could pass"),
        );
    }
    if c.kind == CheckKind::ClientsMoved {
        moved_bounds(v, &k, &item, c);
    }
    if matches!(
        c.kind,
        CheckKind::ErrorRateBetween | CheckKind::ServedShareBetween
    ) {
        for (key, x) in [("min_pct", c.min_pct), ("max_pct", c.max_pct)] {
            if let Some(x) = x
                && !(x.is_finite() && (0.0..=100.0).contains(&x))
            {
                v.push(
                    k(key),
                    item.clone(),
                    format!("{x} is not a percentage (0-100)"),
                );
            }
        }
        if let (Some(lo), Some(hi)) = (c.min_pct, c.max_pct)
            && lo > hi
        {
            v.push(
                k("max_pct"),
                item.clone(),
                format!("{hi} is below min_pct {lo}: nothing could pass"),
            );
        }
        if c.min_requests == Some(0) {
            v.push(
                k("min_requests"),
                item.clone(),
                "must be at least 1 (a window without requests has no error rate)",
            );
        }
    }
    if let Some(r) = &c.revision {
        suffix_problems(v, &k("revision"), &item, r);
    }
    for (key, text) in [("reason", &c.reason), ("contains", &c.contains)] {
        if text.as_ref().is_some_and(|t| t.trim().is_empty()) {
            v.push(k(key), item.clone(), "must not be empty");
        }
    }
    v.duration(&k("within"), &item, c.within.as_deref(), false);
}

/// An app's `scale` block: within Container Apps' limits (Microsoft Learn, "Set scaling rules":
/// min 0, max 1-1000) and not beside a fixed `replicas`.
fn app_scale(
    v: &mut V,
    k: &dyn Fn(&str) -> String,
    item: &Option<String>,
    s: &crate::schema::AppScale,
    fixed: bool,
) {
    if fixed {
        v.push(
            k("replicas"),
            item.clone(),
            "set either `replicas` (a fixed count) or `scale`, not both",
        );
    }
    if !(1..=1000).contains(&s.max_replicas) {
        v.push(
            k("scale.max_replicas"),
            item.clone(),
            format!("{} is outside 1-1000", s.max_replicas),
        );
    }
    if s.min_replicas > s.max_replicas {
        v.push(
            k("scale.min_replicas"),
            item.clone(),
            format!(
                "{} is above max_replicas {}",
                s.min_replicas, s.max_replicas
            ),
        );
    }
    for (key, val) in [
        ("concurrent_requests", s.concurrent_requests),
        ("polling_seconds", s.polling_seconds),
    ] {
        if val == Some(0) {
            v.push(
                k(&format!("scale.{key}")),
                item.clone(),
                "must be at least 1",
            );
        }
    }
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
