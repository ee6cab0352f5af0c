//! The `[[apps]]` entries: names, images, replicas and scale, ingress, probes and the
//! localplane knobs.

use super::{V, is_resource_name, named};
use crate::schema::{Lab, RevisionsMode};

pub(super) fn apps(v: &mut V, lab: &Lab) {
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
