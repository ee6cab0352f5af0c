//! The `[[jobs]]` entries: names apart from the apps', images, timeouts and the event trigger's
//! queue app and limits.

use super::{V, is_resource_name, named};
use crate::schema::Lab;

pub(super) fn jobs(v: &mut V, lab: &Lab) {
    for (i, job) in lab.jobs.iter().enumerate() {
        let item = named("job", &job.name);
        let k = |f: &str| format!("jobs[{i}].{f}");
        if !is_resource_name(&job.name) {
            v.push(
                k("name"),
                item.clone(),
                "lower case letters, digits and '-', 2-32 characters, starting with a letter",
            );
        }
        if lab.app(&job.name).is_some() {
            v.push(
                k("name"),
                item.clone(),
                format!(
                    "{:?} is also an app's name: a job's lines and rows would mix with the app's",
                    job.name
                ),
            );
        }
        if job.image.trim().is_empty() {
            v.push(k("image"), item.clone(), "must not be empty");
        }
        if job.replica_timeout_seconds == 0 {
            v.push(
                k("replica_timeout_seconds"),
                item.clone(),
                "must be at least 1 (Container Apps' minimum)",
            );
        }
        if job.parallelism == Some(0) {
            v.push(k("parallelism"), item.clone(), "must be at least 1");
        }
        let e = &job.event;
        match lab.app(&e.queue_app) {
            None => v.push(
                k("event.queue_app"),
                item.clone(),
                format!("app {:?} is not defined", e.queue_app),
            ),
            Some(a) if a.ingress.is_none() => v.push(
                k("event.queue_app"),
                item.clone(),
                format!(
                    "app {:?} has no ingress: the scaler reads its queue at its ingress",
                    e.queue_app
                ),
            ),
            Some(_) => {}
        }
        if e.polling_seconds == 0 {
            v.push(
                k("event.polling_seconds"),
                item.clone(),
                "must be at least 1",
            );
        }
        if e.max_executions == 0 {
            v.push(
                k("event.max_executions"),
                item.clone(),
                "must be at least 1",
            );
        }
        if e.min_executions > e.max_executions {
            v.push(
                k("event.min_executions"),
                item.clone(),
                format!(
                    "{} is above max_executions ({})",
                    e.min_executions, e.max_executions
                ),
            );
        }
        if e.items_per_execution == Some(0) {
            v.push(
                k("event.items_per_execution"),
                item.clone(),
                "must be at least 1",
            );
        }
    }
}
