//! The `[[jobs]]` entries: names apart from the apps', images, timeouts, exactly one trigger, a
//! schedule's cron expression, and the event trigger's queue app and limits.

use super::{V, is_resource_name, named};
use crate::schema::{EventTrigger, Lab, Trigger};

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
        match job.trigger() {
            Some(Trigger::Event(e)) => event_problems(v, lab, &k, &item, e),
            Some(Trigger::Schedule(s)) => {
                if let Some(why) = cron_problem(&s.cron) {
                    v.push(k("schedule.cron"), item.clone(), why);
                }
            }
            Some(Trigger::Manual) => {}
            None => v.push(
                k("manual"),
                item.clone(),
                "give exactly one trigger: `manual = {}`, `[jobs.schedule]` or `[jobs.event]`",
            ),
        }
    }
}

/// Why a cron expression is not five fields of numbers, `*`, `*/N`, ranges and lists (the
/// shapes Container Apps documents), if it is not.
fn cron_problem(cron: &str) -> Option<String> {
    const RANGES: [(&str, u32, u32); 5] = [
        ("minute", 0, 59),
        ("hour", 0, 23),
        ("day of month", 1, 31),
        ("month", 1, 12),
        ("day of week", 0, 6),
    ];
    let fields: Vec<&str> = cron.split_whitespace().collect();
    if fields.len() != 5 {
        return Some(format!(
            "{cron:?} has {} field(s): a cron expression has five (minute hour day month \
             weekday), e.g. \"*/1 * * * *\"",
            fields.len()
        ));
    }
    for (f, (what, lo, hi)) in fields.iter().zip(RANGES) {
        for part in f.split(',') {
            let (range, step) = match part.split_once('/') {
                Some((r, s)) => (r, Some(s)),
                None => (part, None),
            };
            let number = |x: &str| x.parse::<u32>().ok().filter(|n| (lo..=hi).contains(n));
            let range_ok = range == "*"
                || number(range).is_some()
                || range.split_once('-').is_some_and(
                    |(a, b)| matches!((number(a), number(b)), (Some(a), Some(b)) if a <= b),
                );
            let step_ok = step.is_none_or(|s| s.parse::<u32>().is_ok_and(|n| n >= 1));
            if !range_ok || !step_ok {
                return Some(format!(
                    "{part:?} is not a {what} ({lo}-{hi}, `*`, a range, a list or `/step`)"
                ));
            }
        }
    }
    None
}

/// An event trigger's queue app exists and has ingress, and its counts are in range.
fn event_problems(
    v: &mut V,
    lab: &Lab,
    k: &dyn Fn(&str) -> String,
    item: &Option<String>,
    e: &EventTrigger,
) {
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
    for (key, zero) in [
        ("event.polling_seconds", e.polling_seconds == 0),
        ("event.max_executions", e.max_executions == 0),
        (
            "event.items_per_execution",
            e.items_per_execution == Some(0),
        ),
    ] {
        if zero {
            v.push(k(key), item.clone(), "must be at least 1");
        }
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
}

#[cfg(test)]
mod tests {
    use super::cron_problem;

    #[test]
    fn cron_expressions_of_the_documented_shapes_pass_and_others_are_named() {
        for ok in [
            "*/1 * * * *",
            "0 */2 * * *",
            "5,35 1-3 * * 1-5",
            "0 0 1 1 0",
        ] {
            assert_eq!(cron_problem(ok), None, "{ok}");
        }
        for (bad, says) in [
            ("* * * *", "4 field(s)"),
            ("60 * * * *", "\"60\" is not a minute"),
            ("*/0 * * * *", "\"*/0\" is not a minute"),
            ("* * * 13 *", "\"13\" is not a month"),
            ("5-1 * * * *", "\"5-1\" is not a minute"),
            ("@hourly", "1 field(s)"),
        ] {
            let e = cron_problem(bad).unwrap_or_default();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
