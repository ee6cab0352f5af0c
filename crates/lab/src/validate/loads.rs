//! The `[[load]]` entries: targets, paths, the open or closed model, replicas and virtual
//! clients, durations and side streams.

use super::{V, named};
use crate::schema::{Lab, Load, MAX_LOAD_CLIENTS, MAX_LOAD_REPLICAS};

pub(super) fn loads(v: &mut V, lab: &Lab) {
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
