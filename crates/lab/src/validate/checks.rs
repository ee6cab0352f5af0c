//! Each `[[checks]]` entry against its kind: the keys it takes, what it names, its ranges.

use super::steps::suffix_problems;
use super::{V, named, whole};
use crate::checks::{Check, CheckKind, Need};
use crate::schema::{Action, Lab, Step};

pub(super) fn check(v: &mut V, lab: &Lab, i: usize, c: &Check) {
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

/// A load check's `load` exists, takes its `scenario`, runs in its step.
fn load_refs(v: &mut V, lab: &Lab, i: usize, c: &Check, load: &str, step: Option<&Step>) {
    let item = named("check", &c.name);
    let k = |f: &str| format!("checks[{i}].{f}");
    match lab.load_named(load) {
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
                let known = l.scenarios();
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
                && !lab.step_loads(s).iter().any(|x| x.name == load)
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

/// A job check's `job` exists, and a queue check's scope holds an `enqueue` on the job's queue
/// app (else it would judge no item).
fn job_refs(v: &mut V, lab: &Lab, i: usize, c: &Check, job: &str, step: Option<&Step>) {
    let item = named("check", &c.name);
    let k = |f: &str| format!("checks[{i}].{f}");
    let Some(j) = lab.job(job) else {
        v.push(k("job"), item, format!("job {job:?} is not defined"));
        return;
    };
    if !matches!(
        c.kind,
        CheckKind::QueueItemsOnce | CheckKind::QueueDrainedWithin
    ) {
        return;
    }
    let Some(e) = j.event_trigger() else {
        v.push(
            k("job"),
            item,
            format!("job {job:?} is not event-driven: no queue feeds it"),
        );
        return;
    };
    let enqueues =
        |s: &Step| matches!(&s.action, Some(Action::Enqueue { app, .. }) if *app == e.queue_app);
    let found = match step {
        Some(s) => enqueues(s),
        None => lab.steps.iter().any(enqueues),
    };
    if !found {
        v.push(
            k(if step.is_some() { "step" } else { "job" }),
            item,
            format!(
                "no `enqueue` on {:?} (job {job:?}'s queue app) in {}: the check would judge no \
                 item",
                e.queue_app,
                step.map_or("the lab".to_owned(), |s| format!("step {:?}", s.name))
            ),
        );
    }
}

/// A job check's status, replica count, `since` and time bounds are ones it can judge.
fn job_values(v: &mut V, k: &dyn Fn(&str) -> String, item: &Option<String>, c: &Check) {
    use crate::checks::{FINAL_EXECUTION_STATUSES, REPLICA_EXIT_SINCE, ReplicaExitSince};
    if let Some(st) = &c.execution_status
        && !FINAL_EXECUTION_STATUSES.contains(&st.as_str())
    {
        v.push(
            k("execution_status"),
            item.clone(),
            format!(
                "{st:?} is not a final execution status ({})",
                FINAL_EXECUTION_STATUSES.join(", ")
            ),
        );
    }
    if c.replicas == Some(0) {
        v.push(k("replicas"), item.clone(), "must be at least 1");
    }
    if let Some(x) = &c.since
        && ReplicaExitSince::parse(Some(x)).is_err()
    {
        v.push(
            k("since"),
            item.clone(),
            format!("{x:?} is not one of {}", REPLICA_EXIT_SINCE.join(", ")),
        );
    }
    if c.kind == CheckKind::JobReplicaExit
        && let (Some(lo), Some(hi)) = (c.min, c.max)
        && lo > hi
    {
        v.push(
            k("max"),
            item.clone(),
            format!("{hi} is below min {lo}: no replica could pass"),
        );
    }
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
        let found = lab.step(s);
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
    if let Some(job) = &c.job {
        job_refs(v, lab, i, c, job, step);
    }
    if let Some(load) = &c.load {
        load_refs(v, lab, i, c, load, step);
    }
    if let (Some(app), Some(r)) = (c.app.as_ref().and_then(|a| lab.app(a)), &c.revision)
        && !lab.revision_suffixes(&app.name).contains(&r.as_str())
    {
        v.push(
            k("revision"),
            item.clone(),
            format!(
                "no revision of {:?} has suffix {r:?} (suffixes: {})",
                app.name,
                lab.revision_suffixes(&app.name).join(", ")
            ),
        );
    }
    if c.kind == CheckKind::ActionFailed
        && let (Some(s), Some(app)) = (step, &c.app)
        && s.action.as_ref().is_none_or(|a| a.target() != app)
    {
        v.push(
            k("step"),
            item.clone(),
            format!("step {:?} has no action on app {app:?}", s.name),
        );
    }
}

/// `clients_moved`, `job_executions_at_once`: a bound, and one that some count passes.
fn count_bounds(v: &mut V, k: &dyn Fn(&str) -> String, item: &Option<String>, c: &Check) {
    match (c.min, c.max) {
        (None, None) => v.push(
            k("min"),
            item.clone(),
            "set min, max or both: a count with no bound cannot fail",
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
    if matches!(
        c.kind,
        CheckKind::ClientsMoved | CheckKind::JobExecutionsAtOnce
    ) {
        count_bounds(v, &k, &item, c);
    }
    job_values(v, &k, &item, c);
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
