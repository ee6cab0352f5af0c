//! The `[[steps]]`: durations, events, staircases, each action against its app, and the
//! revisions and traffic of multiple revision mode.

use super::{MAX_ENQUEUE, SIMULATE_MODES, V, is_label, named};
use crate::schema::{Action, App, Lab, RevisionsMode, Step, TrafficEntry};

pub(super) fn steps(v: &mut V, lab: &Lab) {
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
    match (a.app(), a.job()) {
        (Some(app), _) if lab.app(app).is_none() => v.push(
            format!("{key}.app"),
            item.clone(),
            format!("action targets undefined app {app:?}"),
        ),
        (_, Some(job)) if lab.job(job).is_none() => v.push(
            format!("{key}.job"),
            item.clone(),
            format!("action targets undefined job {job:?} (a [[jobs]] entry)"),
        ),
        _ => {}
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
        Action::Enqueue { app, items } => {
            if !(1..=MAX_ENQUEUE).contains(items) {
                v.push(
                    format!("{key}.items"),
                    item.clone(),
                    format!("{items} is not a whole number from 1 to {MAX_ENQUEUE} (the most one POST /queue adds)"),
                );
            }
            if lab.app(app).is_some_and(|a| a.ingress.is_none()) {
                v.push(
                    format!("{key}.app"),
                    item.clone(),
                    format!("app {app:?} has no ingress: nothing can enqueue through it"),
                );
            }
        }
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
pub(super) fn revisions(v: &mut V, lab: &Lab) {
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
    let Some(app) = action.app().and_then(|a| lab.app(a)) else {
        return; // reported by action_problems, or a job action
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

/// A `revisionSuffix`: lower-case letters, digits and '-', starting with a letter.
pub(super) fn suffix_problems(v: &mut V, key: &str, item: &Option<String>, sfx: &str) {
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
