//! A lab in words: its catalogue line (`labctl lab list`) and its pre-registration
//! (`labctl lab show`): hypothesis, rule, preconditions, checks, apps, load and schedule, as the
//! lab file states them after its profile was applied.

use std::fmt::Write as _;
use std::time::Duration;

use logline::config::parse_duration;

use crate::checks::{Check, CheckKind, ReplicaExitSince};
use crate::schema::{Action, Lab, LabKind, Step, TimeoutScope, Trigger};

/// How long the schedule runs: the steps' load durations, one after the other (deploying,
/// waiting for readiness and pulling the logs come on top).
pub fn schedule_length(lab: &Lab) -> Duration {
    lab.steps.iter().map(Step::load_duration).sum()
}

/// `2h 05m`, `4m 10s`, `45s`.
pub fn human(d: Duration) -> String {
    let s = d.as_secs();
    match (s / 3600, (s % 3600) / 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m {s:02}s"),
        (h, m, 0) => format!("{h}h {m:02}m"),
        (h, m, s) => format!("{h}h {m:02}m {s:02}s"),
    }
}

/// `falsification` or `observation`.
pub fn kind_name(lab: &Lab) -> &'static str {
    match lab.kind {
        LabKind::Falsification => "falsification",
        LabKind::Observation => "observation",
    }
}

fn num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

fn dur(s: &Option<String>) -> Option<String> {
    s.as_deref().and_then(|v| parse_duration(v).ok()).map(human)
}

/// The binding rule in one sentence, or `None` for a lab without one.
pub fn rule_text(lab: &Lab) -> Option<String> {
    let r = lab.rule.as_ref()?;
    let phases = if r.phases.is_empty() {
        "the phases the analysis judges by default".to_owned()
    } else {
        format!("phase(s) {}", r.phases.join(", "))
    };
    Some(format!(
        "falsified when {} consecutive {} windows each have err_pct strictly above {} % in {phases}; \
         held otherwise",
        r.consecutive,
        r.window,
        num(r.threshold_pct)
    ))
}

/// The preconditions the lab requires, one sentence each.
pub fn preconditions_text(lab: &Lab) -> Vec<String> {
    let p = &lab.preconditions;
    let mut v = Vec::new();
    if p.baseline_clean {
        v.push(
            "baseline_clean: no window of the baseline phase has err_pct above the rule's \
             threshold"
                .to_owned(),
        );
    }
    if p.headroom {
        let factor = p
            .headroom_factor
            .map_or("the analysis' default factor".to_owned(), |f| {
                format!("{} ×", num(f))
            });
        let rates: Vec<String> = lab
            .steps
            .iter()
            .filter(|s| !s.staircase.is_empty())
            .flat_map(|s| {
                lab.step_loads(s).into_iter().filter_map(move |l| {
                    let rate = l.rate?;
                    let below = s
                        .staircase
                        .iter()
                        .copied()
                        .filter(|r| *r < rate)
                        .fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.max(r))))?;
                    Some(format!(
                        " (step {}: {} RPS against {} RPS)",
                        s.name,
                        num(rate),
                        num(below)
                    ))
                })
            })
            .collect();
        v.push(format!(
            "headroom: the staircase shows the load consuming headroom: p50 at the lab's rate \
             >= {factor} p50 at the staircase step just below it{}",
            rates.concat()
        ));
    }
    if p.perturbations_observed {
        let n = p
            .expected_perturbations
            .map(|n| format!(" ({n} expected)"))
            .unwrap_or_default();
        v.push(format!(
            "perturbations_observed: every scheduled event{n} is seen performed, in the sampler \
             timeline and in the system events"
        ));
    }
    v
}

fn action_text(a: &Action) -> String {
    match a {
        Action::Rollout { app } => format!("rollout of {app} (a new revision)"),
        Action::Restart { app } => format!("revision restart of {app}"),
        Action::Dependency {
            app,
            healthy,
            delay_ms,
            fail_rate,
            restore_after,
        } => {
            let mut parts = Vec::new();
            if let Some(h) = healthy {
                parts.push(if *h { "healthy" } else { "down" }.to_owned());
            }
            if let Some(d) = delay_ms {
                parts.push(format!("{d} ms slower"));
            }
            if let Some(f) = fail_rate {
                parts.push(format!("failing {} % of calls", num(f * 100.0)));
            }
            let back = dur(restore_after)
                .map(|d| format!(", restored after {d}"))
                .unwrap_or_default();
            format!("dependency {app} {}{back}", parts.join(", "))
        }
        Action::Simulate {
            app,
            mode,
            restore_after,
        } => {
            let back = dur(restore_after)
                .map(|d| format!(", reset after {d}"))
                .unwrap_or_default();
            format!("{app} simulates {mode}{back}")
        }
        Action::Saturate { app, path } => format!("one blocking request {path} to {app}"),
        Action::SetEnv { app, env } => {
            let kv: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("{app} gets {} (a new revision)", kv.join(" "))
        }
        Action::Revision {
            app,
            suffix,
            env,
            traffic,
        } => {
            let kv: Vec<String> = env.iter().map(|(k, v)| format!(" {k}={v}")).collect();
            let split = if traffic.is_empty() {
                String::new()
            } else {
                format!(", traffic {}", traffic_text(app, traffic))
            };
            format!(
                "new revision {}{}{split}",
                crate::arm_body::revision_name(app, suffix),
                if kv.is_empty() {
                    String::new()
                } else {
                    format!(" with{}", kv.concat())
                }
            )
        }
        Action::Traffic { app, traffic } => {
            format!("traffic of {app} set to {}", traffic_text(app, traffic))
        }
        Action::Deactivate { app, revision } => format!(
            "revision {} deactivated",
            crate::arm_body::revision_name(app, revision)
        ),
        Action::Maintenance { app } => {
            format!("platform maintenance moves every replica of {app} (localplane only)")
        }
        Action::Enqueue { app, items } => format!("{items} item(s) enqueued on {app}'s queue"),
        Action::JobStart { job } => format!("one execution of job {job} started"),
        Action::JobStop { job } => format!("every running execution of job {job} stopped"),
    }
}

/// Traffic entries in words: `subject--blue 0 % (label blue), subject--green 100 %`.
pub fn traffic_text(app: &str, traffic: &[crate::schema::TrafficEntry]) -> String {
    let parts: Vec<String> = traffic
        .iter()
        .map(|e| {
            let who = match &e.revision {
                Some(r) => crate::arm_body::revision_name(app, r),
                None => "the latest revision".to_owned(),
            };
            let label = e
                .label
                .as_ref()
                .map(|l| format!(" (label {l})"))
                .unwrap_or_default();
            format!("{who} {} %{label}", e.weight)
        })
        .collect();
    parts.join(", ")
}

/// One step of the schedule in words.
pub fn step_text(lab: &Lab, s: &Step) -> String {
    let mut t = format!(
        "{} [phase {}], {}",
        s.name,
        s.phase,
        human(s.load_duration())
    );
    if !s.staircase.is_empty() {
        let rates: Vec<String> = s.staircase.iter().map(|r| num(*r)).collect();
        let _ = write!(t, ": staircase {} RPS", rates.join(", "));
        if let Some(d) = dur(&s.staircase_step) {
            let _ = write!(t, ", {d} each");
        }
        if let Some(d) = dur(&s.staircase_pause) {
            let _ = write!(t, ", {d} pauses");
        }
    }
    if let Some(a) = &s.action {
        let n = s.events.unwrap_or(1);
        let _ = write!(t, ": {} × {}", n, action_text(a));
        if n > 1
            && let Some(i) = dur(&s.interval)
        {
            let _ = write!(t, ", every {i}");
        }
        if let Some(o) = dur(&s.offset) {
            let which = if n > 1 { "the first " } else { "" };
            let _ = write!(t, ", {which}after {o}");
        }
    }
    let loads: Vec<&str> = lab.step_loads(s).iter().map(|l| l.name.as_str()).collect();
    let _ = write!(
        t,
        "; load: {}",
        if loads.is_empty() {
            "none".to_owned()
        } else {
            loads.join(", ")
        }
    );
    if s.sample {
        t.push_str("; replicas and revision states sampled throughout");
    }
    t
}

/// What a check expects, with its values (defaults filled in) and its scope.
pub fn check_text(c: &Check) -> String {
    let n = |x: Option<f64>, d: f64| num(x.unwrap_or(d));
    let any = |x: &Option<String>| x.clone().unwrap_or_else(|| "?".to_owned());
    let stream = match &c.scenario {
        Some(s) if s != "main" => format!("load {} (stream {s})", any(&c.load)),
        _ => format!("load {}", any(&c.load)),
    };
    let app = any(&c.app);
    let probe = any(&c.probe);
    let what = match c.kind {
        CheckKind::StatusSeen => format!(
            "at least {} response(s) with HTTP {} to {stream}",
            n(c.min, 1.0),
            c.status.map_or("?".to_owned(), |s| s.to_string())
        ),
        CheckKind::NoErrors => format!("no error in the requests of {stream} (and some requests)"),
        CheckKind::ErrorsAtLeast => format!("at least {} error(s) in {stream}", n(c.min, 1.0)),
        CheckKind::Recovers => {
            format!("{stream} sees errors, then a last window with requests and none")
        }
        CheckKind::RestartCountAtLeast => format!(
            "at least {} ContainerTerminated event(s) of {app}",
            n(c.min, 1.0)
        ),
        CheckKind::RestartCountAtMost => format!(
            "at most {} ContainerTerminated event(s) of {app}",
            n(c.max, 0.0)
        ),
        CheckKind::ProbeFailed => format!(
            "at least {} {probe} ProbeFailed event(s) of {app}",
            n(c.min, 1.0)
        ),
        CheckKind::ProbeFailedFirst => format!(
            "{probe} is the first probe of {app} to fail {} time(s)",
            n(c.min, 1.0)
        ),
        CheckKind::ActionFailed => format!("a recorded action on {app} fails"),
        CheckKind::SlowestBetween => format!(
            "the slowest response of {stream} takes {} to {} ms",
            n(c.min, f64::NAN),
            n(c.max, f64::NAN)
        ),
        CheckKind::SystemEventAtLeast => format!(
            "at least {} {} event(s) of {app}{}",
            n(c.min, 1.0),
            any(&c.reason),
            c.contains
                .as_ref()
                .map_or(String::new(), |t| format!(" whose message contains {t:?}"))
        ),
        CheckKind::RevisionStateSeen => format!(
            "at least {} sample(s) of a revision of {app}{} with {}",
            n(c.min, 1.0),
            if c.new_revision == Some(true) {
                " created in the scope"
            } else {
                ""
            },
            state_text(c)
        ),
        CheckKind::ErrorRateBetween => format!(
            "every window of {stream} with at least {} requests has {} to {} % errors",
            c.min_requests
                .unwrap_or(crate::checks::DEFAULT_MIN_REQUESTS),
            n(c.min_pct, f64::NAN),
            n(c.max_pct, f64::NAN)
        ),
        CheckKind::ErrorsServedBy => format!(
            "every failed request of {stream} was served by {} (and the request lines hold \
             every error)",
            crate::arm_body::revision_name(&app, &any(&c.revision))
        ),
        CheckKind::ServedShareBetween => format!(
            "{} serves {} to {} % of the responses to {stream}",
            crate::arm_body::revision_name(&app, &any(&c.revision)),
            n(c.min_pct, f64::NAN),
            n(c.max_pct, f64::NAN)
        ),
        CheckKind::ClientsMoved => {
            format!(
                "{} virtual client(s) of {stream} move to another replica",
                bounds_text(c)
            )
        }
        CheckKind::QueueItemsOnce
        | CheckKind::QueueDrainedWithin
        | CheckKind::JobReplicasAtMost
        | CheckKind::JobExecutionsEnd
        | CheckKind::JobReplicaExit
        | CheckKind::JobExecutionsAtOnce => job_check_text(c),
        CheckKind::Unknown(_) => "unknown kind".to_owned(),
    };
    let scope = match (&c.step, &c.within) {
        (Some(s), Some(w)) => format!("within {w} of step {s}'s first action"),
        (Some(s), None) => format!("in step {s}"),
        (None, Some(w)) => format!("within {w} of the run's start"),
        (None, None) => "over the whole run".to_owned(),
    };
    format!("{what}, {scope}")
}

/// `min` and `max` in words: `3`, `2 to 5`, `at least 2`, `at most 5`.
fn bounds_text(c: &Check) -> String {
    match (c.min, c.max) {
        (Some(lo), Some(hi)) if lo == hi => num(lo),
        (Some(lo), Some(hi)) => format!("{} to {}", num(lo), num(hi)),
        (Some(lo), None) => format!("at least {}", num(lo)),
        (None, Some(hi)) => format!("at most {}", num(hi)),
        (None, None) => "?".to_owned(),
    }
}

/// A job check's observation in words (`check_text` adds the scope).
fn job_check_text(c: &Check) -> String {
    let n = |x: Option<f64>| num(x.unwrap_or(f64::NAN));
    let job = c.job.as_deref().unwrap_or("?");
    match c.kind {
        CheckKind::QueueItemsOnce => format!(
            "every item enqueued is taken by exactly one replica of job {job} and finished there \
             (none twice, none lost)"
        ),
        CheckKind::QueueDrainedWithin => format!(
            "job {job} finishes every item enqueued at most {} s after the first enqueue",
            n(c.max)
        ),
        CheckKind::JobExecutionsEnd => format!(
            "every execution of job {job} ends {}{}",
            c.execution_status.as_deref().unwrap_or("?"),
            c.replicas
                .map(|r| format!(" after {r} replica(s)"))
                .unwrap_or_default()
        ),
        CheckKind::JobReplicaExit => {
            let since = ReplicaExitSince::parse(c.since.as_deref())
                .unwrap_or(ReplicaExitSince::Start)
                .words();
            let code = c
                .exit_code
                .map(|x| format!(" with exit code {x}"))
                .unwrap_or_default();
            let when = match c.min {
                Some(lo) => format!("{} to {} s", num(lo), n(c.max)),
                None => format!("at most {} s", n(c.max)),
            };
            format!("every replica of job {job} ends{code} {when} after {since}")
        }
        CheckKind::JobExecutionsAtOnce => {
            format!("{} execution(s) of job {job} run at once", bounds_text(c))
        }
        _ => format!("at most {} replica(s) of job {job} alive at once", n(c.max)),
    }
}

/// A `revision_state_seen` check's states in words: `runningState Failed, provisioningState
/// Failed, healthState Unhealthy`.
pub fn state_text(c: &Check) -> String {
    [
        ("runningState", &c.running_state),
        ("provisioningState", &c.provisioning_state),
        ("healthState", &c.health_state),
    ]
    .iter()
    .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k} {v}")))
    .collect::<Vec<_>>()
    .join(", ")
}

/// The pre-registration of `lab` (file `file`, profile `profile`) in words, for `lab show`.
pub fn pre_registration(lab: &Lab, file: &str, profile: &str) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "{}", lab.title);
    let _ = writeln!(o, "file: {file} (profile {profile})");
    let _ = writeln!(
        o,
        "kind: {} ({})",
        kind_name(lab),
        match lab.kind {
            LabKind::Falsification => "held or falsified by the rule",
            LabKind::Observation => "held when every check is observed",
        }
    );
    if let Some(s) = &lab.source {
        let _ = writeln!(o, "source: {s}");
    }
    let _ = writeln!(o, "\nquestion: {}", lab.question);
    let _ = writeln!(o, "hypothesis: {}", lab.hypothesis.text);
    if let Some(e) = &lab.hypothesis.expect {
        let _ = writeln!(o, "  expected verdict: {e}");
    }
    if let Some(c) = &lab.hypothesis.evidence_cap {
        let _ = writeln!(o, "  strongest evidence level of an attribution: {c}");
    }
    if let Some(r) = rule_text(lab) {
        let _ = writeln!(o, "\nrule (binding, the same in every profile):\n  {r}");
    }
    let pre = preconditions_text(lab);
    let _ = writeln!(
        o,
        "\npreconditions (a failed one makes the verdict invalid):"
    );
    if pre.is_empty() {
        let _ = writeln!(o, "  none required");
    }
    for p in pre {
        let _ = writeln!(o, "  - {p}");
    }
    if !lab.checks.is_empty() {
        let _ = writeln!(
            o,
            "\nchecks (each must be observed; one not evaluated makes the verdict invalid):"
        );
        for c in &lab.checks {
            let _ = writeln!(o, "  - {:?} ({}): {}", c.name, c.kind, check_text(c));
        }
    }
    let _ = writeln!(
        o,
        "\ncampaign (labctl campaign, several runs judged together):\n  {}",
        lab.campaign.describe()
    );
    apparatus(&mut o, lab);
    let _ = writeln!(
        o,
        "\nschedule ({} of load, one step after the other):",
        human(schedule_length(lab))
    );
    for (i, s) in lab.steps.iter().enumerate() {
        let _ = writeln!(o, "  {}. {}", i + 1, step_text(lab, s));
    }
    o
}

/// The jobs under test, one line each.
fn jobs_text(o: &mut String, lab: &Lab) {
    if !lab.jobs.is_empty() {
        let _ = writeln!(o, "\njobs:");
        for j in &lab.jobs {
            let trigger = match j.trigger() {
                Some(Trigger::Manual) => "started by `job-start`".to_owned(),
                Some(Trigger::Schedule(s)) => format!("on schedule `{}` (UTC)", s.cron),
                Some(Trigger::Event(e)) => format!(
                    "event-driven from {}'s queue ({} item(s) per execution), polled every {} s, \
                     {} to {} executions at once",
                    e.queue_app,
                    e.items_per_execution.unwrap_or(1),
                    e.polling_seconds,
                    e.min_executions,
                    e.max_executions,
                ),
                None => "no single trigger".to_owned(),
            };
            let scope = match j.replica_timeout_scope {
                Some(TimeoutScope::Execution) => " per execution (localplane tag)",
                Some(TimeoutScope::Replica) | None => "",
            };
            let _ = writeln!(
                o,
                "  - {}: {}, {trigger}, {} replica(s) per execution; replica timeout {} s{scope}, \
                 {} retr{}",
                j.name,
                j.image,
                j.replicas_per_execution(),
                j.replica_timeout_seconds,
                j.replica_retry_limit,
                if j.replica_retry_limit == 1 {
                    "y"
                } else {
                    "ies"
                }
            );
        }
    }
}

/// The apps and the loads, one line each.
fn apparatus(o: &mut String, lab: &Lab) {
    if lab.apps.is_empty() {
        let _ = writeln!(o, "\napps: none (the jobs below are under test)");
    } else {
        let _ = writeln!(
            o,
            "\napps (on localplane, timings {}):",
            lab.localplane_timings.meaning()
        );
    }
    for a in &lab.apps {
        let probes: Vec<String> = a
            .probes
            .iter()
            .map(|p| format!("{} {}", p.kind, p.path.as_deref().unwrap_or("(tcp)")))
            .collect();
        let mut knobs = Vec::new();
        if let Some(form) = &a.maintenance {
            knobs.push(format!("platform maintenance {form}"));
        }
        if let Some(s) = a.progress_deadline_seconds {
            knobs.push(format!("progress deadline {s} s"));
        }
        let maintenance = if knobs.is_empty() {
            String::new()
        } else {
            format!("; on localplane: {}", knobs.join(", "))
        };
        let sticky = if a.ingress.as_ref().is_some_and(|i| i.sticky_sessions) {
            "; sticky sessions (affinity cookie)"
        } else {
            ""
        };
        let _ = writeln!(
            o,
            "  - {}: {} × {}{}{sticky}{maintenance}{}",
            a.name,
            replicas_in_words(a),
            a.image,
            if probes.is_empty() {
                String::new()
            } else {
                format!(", probes {}", probes.join(", "))
            },
            if a.wait_ready {
                ""
            } else {
                "; not waited for (wait_ready = false): the steps start while it starts, \
                 ready or not"
            }
        );
        if a.revisions_mode == crate::schema::RevisionsMode::Multiple {
            let first = a
                .revision_suffix
                .as_ref()
                .map(|s| {
                    format!(
                        ", first revision {}",
                        crate::arm_body::revision_name(&a.name, s)
                    )
                })
                .unwrap_or_default();
            let split = if a.traffic.is_empty() {
                String::new()
            } else {
                format!(", traffic {}", traffic_text(&a.name, &a.traffic))
            };
            let _ = writeln!(o, "    multiple revision mode{first}{split}");
        }
    }
    jobs_text(o, lab);
    if !lab.load.is_empty() {
        let _ = writeln!(o, "\nload:");
        for l in &lab.load {
            let model = match (l.rate, l.workers) {
                (Some(r), _) => format!("{} RPS", num(r)),
                (None, Some(w)) => format!("{w} workers"),
                _ => "?".to_owned(),
            };
            let replicas = match l.replica_count() {
                1 => String::new(),
                n => format!(", {n} loadgen replicas sharing it"),
            };
            let clients = l.clients.map_or(String::new(), |n| {
                format!(", spread over {n} virtual clients that keep their cookies")
            });
            let _ = writeln!(
                o,
                "  - {}: {model} to {} {}, connection {}{replicas}{clients}",
                l.name, l.target, l.path, l.connection
            );
        }
    }
}

/// The localplane tags of how an app scales and when a new revision takes the traffic.
const SCALING_TAGS: [&str; 5] = [
    "localplane.revisionReady",
    "localplane.newRevisionReplicas",
    "localplane.httpMetric",
    "localplane.scaleUp",
    "localplane.scaleDownStabilization",
];

/// `3` for a fixed count; `0-3 (scale: HTTP rule, 2 concurrent requests per replica, polling
/// 1 s, cooldown 10 s)` for a scale rule, with the localplane scaling knobs the app sets
/// (`; on localplane: httpMetric=peakInFlight`).
fn replicas_in_words(a: &crate::schema::App) -> String {
    let Some(s) = &a.scale else {
        return a.min_replicas().to_string();
    };
    let rule = s.concurrent_requests.map_or(
        "the default HTTP rule, 10 concurrent requests per replica".to_owned(),
        |n| format!("HTTP rule, {n} concurrent request(s) per replica"),
    );
    let secs = |v: Option<u32>, dflt: u32| v.unwrap_or(dflt);
    let knobs: Vec<String> = a
        .localplane_tags()
        .iter()
        .filter(|(k, _)| SCALING_TAGS.contains(&k.as_str()))
        .map(|(k, v)| format!("{}={v}", k.trim_start_matches("localplane.")))
        .collect();
    let knobs = if knobs.is_empty() {
        String::new()
    } else {
        format!("; on localplane: {}", knobs.join(", "))
    };
    format!(
        "{}-{} (scale: {rule}, polling {} s, cooldown {} s{knobs})",
        s.min_replicas,
        s.max_replicas,
        secs(s.polling_seconds, 30),
        secs(s.cooldown_seconds, 300)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_hours_minutes_seconds() {
        assert_eq!(human(Duration::from_secs(45)), "45s");
        assert_eq!(human(Duration::from_secs(250)), "4m 10s");
        assert_eq!(human(Duration::from_secs(7200 + 300)), "2h 05m");
        assert_eq!(human(Duration::from_secs(3600 + 61)), "1h 01m 01s");
    }

    #[test]
    fn a_scaled_app_names_the_localplane_knobs_it_sets() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../labs");
        let lab = crate::load(&root.join("scale-in-termination.toml"), "quick").unwrap();
        assert_eq!(
            replicas_in_words(&lab.apps[0]),
            "1-3 (scale: HTTP rule, 4 concurrent request(s) per replica, polling 1 s, cooldown \
             10 s; on localplane: httpMetric=peakInFlight, scaleDownStabilization=cooldownPeriod)"
        );
        let lab = crate::load(&root.join("scale-to-zero-cold-start.toml"), "full").unwrap();
        assert!(!replicas_in_words(&lab.apps[0]).contains("on localplane"));
    }
}
