//! The event-driven job checks, read from the job's `subject` queue workers' own lines (each
//! replica prints `BOOT_START`, then `QUEUE_ITEM_TAKEN` and `QUEUE_ITEM_DONE` with the item's id,
//! or `QUEUE_EMPTY`; its `app` is the job, its `revision` the execution) and from the `enqueue`
//! actions of `runs.json`, which record the ids the queue answered:
//! - `queue_items_once`: every item enqueued in scope taken by exactly one replica and finished
//!   by that replica;
//! - `queue_drained_within`: the last of those items finished at most `max` s after the first
//!   enqueue;
//! - `job_replicas_at_most`: replicas alive at once (first line to last) at most `max`.
//!
//! [Observed]: the workers' lines say what each replica did; the platform's rows are not read.

use std::collections::BTreeMap;

use lab::{Check, Lab};
use logline::line::SubjectEvent;
use serde_json::json;

use super::{Eval, invalid, judged, scope, scope_words};
use crate::judge::job_replicas::{self, Spans};
use crate::read::model::Acc;
use crate::read::runs::{ActionRecord, RunsRecord};
use crate::ts::{iso_ms, parse_ms};

/// The enqueued items in a check's scope and when the first enqueue was fired.
struct Enqueued {
    items: Vec<String>,
    first_ms: i64,
    actions: usize,
}

/// What the job's workers did with each item: (replica, ms) of each take and each finish.
#[derive(Default)]
struct Fate<'a> {
    taken: Vec<(&'a str, i64)>,
    done: Vec<(&'a str, i64)>,
}

/// Each item's fate, by item id.
type Fates<'a> = BTreeMap<&'a str, Fate<'a>>;

/// The `enqueue` actions on `queue_app` in the check's step (every step without one).
fn enqueued(c: &Check, runs: &RunsRecord, queue_app: &str) -> Result<Enqueued, Eval> {
    let actions: Vec<&ActionRecord> = runs
        .steps
        .iter()
        .filter(|s| c.step.as_ref().is_none_or(|n| &s.name == n))
        .flat_map(|s| s.actions.iter())
        .filter(|a| a.kind == "enqueue" && a.app == queue_app)
        .collect();
    let where_ = scope_words(c);
    if actions.is_empty() {
        return Err(invalid(format!(
            "no `enqueue` action on {queue_app} recorded in {where_} of runs.json"
        )));
    }
    if let Some(a) = actions.iter().find(|a| a.outcome != "ok") {
        return Err(invalid(format!(
            "an `enqueue` on {queue_app} at {} failed ({}): which items it added is unknown",
            a.ts, a.detail
        )));
    }
    let first_ms = actions
        .iter()
        .filter_map(|a| parse_ms(&a.ts))
        .min()
        .ok_or_else(|| invalid("no `enqueue` action has a readable `ts`"))?;
    let items: Vec<String> = actions.iter().flat_map(|a| a.items.clone()).collect();
    if items.is_empty() {
        return Err(invalid(format!(
            "the `enqueue` actions in {where_} record no item ids (a pack from before they were \
             recorded)"
        )));
    }
    Ok(Enqueued {
        items,
        first_ms,
        actions: actions.len(),
    })
}

/// Each item's takes and finishes by `job`'s workers.
fn fates<'a>(acc: &'a Acc, job: &str) -> Fates<'a> {
    let mut out: Fates = BTreeMap::new();
    for s in acc.subject.iter().filter(|s| s.app == job) {
        let Some(item) = s.item.as_deref() else {
            continue;
        };
        let at = (s.replica.as_str(), s.ts.epoch_ms());
        match s.event {
            SubjectEvent::QueueItemTaken => out.entry(item).or_default().taken.push(at),
            SubjectEvent::QueueItemDone => out.entry(item).or_default().done.push(at),
            _ => {}
        }
    }
    out
}

/// The queue app the check's job reads, from the lab file.
fn queue_app<'a>(c: &Check, lab: &'a Lab) -> Result<(&'a str, &'a str), Eval> {
    let Some(job) = &c.job else {
        return Err(invalid(format!("{} needs `job`", c.kind)));
    };
    lab.jobs
        .iter()
        .find(|j| &j.name == job)
        .ok_or_else(|| invalid(format!("job {job:?} is not in the lab file's [[jobs]]")))
        .and_then(|j| {
            j.event_trigger()
                .map(|e| (j.name.as_str(), e.queue_app.as_str()))
                .ok_or_else(|| invalid(format!("job {job:?} has no event trigger: no queue")))
        })
}

/// What both queue checks read: the job, its queue app, the items enqueued in scope and what
/// the job's workers did with each item.
fn read<'a>(
    c: &Check,
    lab: &'a Lab,
    runs: &RunsRecord,
    acc: &'a Acc,
) -> Result<(&'a str, &'a str, Enqueued, Fates<'a>), Eval> {
    let (job, queue) = queue_app(c, lab)?;
    let enq = enqueued(c, runs, queue)?;
    Ok((job, queue, enq, fates(acc, job)))
}

/// Evaluates `queue_items_once`.
pub(super) fn items_once(c: &Check, lab: &Lab, runs: &RunsRecord, acc: &Acc) -> Eval {
    let (job, queue, enq, fates) = match read(c, lab, runs, acc) {
        Ok(x) => x,
        Err(e) => return e,
    };
    let none = Fate::default();
    let (mut twice, mut never, mut unfinished) = (Vec::new(), Vec::new(), Vec::new());
    for item in &enq.items {
        let f = fates.get(item.as_str()).unwrap_or(&none);
        match f.taken.as_slice() {
            [] => never.push(item.as_str()),
            [(replica, _)] => {
                if !f.done.iter().any(|(r, _)| r == replica) {
                    unfinished.push(item.as_str());
                }
            }
            _ => twice.push(item.as_str()),
        }
    }
    let ok = twice.is_empty() && never.is_empty() && unfinished.is_empty();
    let list = |v: &[&str]| {
        if v.is_empty() {
            "none".to_owned()
        } else {
            v.join(", ")
        }
    };
    judged(
        ok,
        format!(
            "{} item(s) enqueued by {} action(s) on {queue}: taken twice or more: {}; never \
             taken: {}; taken but not finished: {}",
            enq.items.len(),
            enq.actions,
            list(&twice),
            list(&never),
            list(&unfinished)
        ),
        json!({
            "job": job,
            "enqueued": enq.items.len(),
            "taken_twice": twice,
            "never_taken": never,
            "not_finished": unfinished,
        }),
        Vec::new(),
    )
}

/// Evaluates `queue_drained_within`.
pub(super) fn drained_within(c: &Check, lab: &Lab, runs: &RunsRecord, acc: &Acc) -> Eval {
    let Some(max_s) = c.max else {
        return invalid("queue_drained_within needs `max` (seconds)");
    };
    let (job, _, enq, fates) = match read(c, lab, runs, acc) {
        Ok(x) => x,
        Err(e) => return e,
    };
    let mut last: Option<(i64, &str)> = None;
    let mut unfinished = Vec::new();
    for item in &enq.items {
        match fates
            .get(item.as_str())
            .and_then(|f| f.done.iter().map(|(_, t)| *t).max())
        {
            Some(t) => {
                if last.is_none_or(|(l, _)| t > l) {
                    last = Some((t, item.as_str()));
                }
            }
            None => unfinished.push(item.as_str()),
        }
    }
    let took_s = last.map(|(t, _)| (t - enq.first_ms) as f64 / 1000.0);
    let ok = unfinished.is_empty() && took_s.is_some_and(|s| s <= max_s);
    let detail = match (took_s, last) {
        (Some(s), Some((t, item))) if unfinished.is_empty() => format!(
            "{} item(s) enqueued from {}; the last ({item}) finished at {}, {s:.3} s after the \
             first enqueue (max {max_s} s)",
            enq.items.len(),
            iso_ms(enq.first_ms),
            iso_ms(t)
        ),
        _ => format!(
            "{} item(s) enqueued from {}; {} never finished: {}",
            enq.items.len(),
            iso_ms(enq.first_ms),
            unfinished.len(),
            unfinished.join(", ")
        ),
    };
    judged(
        ok,
        detail,
        json!({
            "job": job,
            "enqueued": enq.items.len(),
            "first_enqueue": iso_ms(enq.first_ms),
            "drained_s": took_s,
            "max_s": max_s,
            "not_finished": unfinished,
        }),
        Vec::new(),
    )
}

/// Evaluates `job_replicas_at_most`.
pub(super) fn replicas_at_most(c: &Check, runs: &RunsRecord, acc: &Acc) -> Eval {
    let (Some(job), Some(max)) = (&c.job, c.max) else {
        return invalid("job_replicas_at_most needs `job` and `max`");
    };
    let (from, to, what) = match scope(c, runs) {
        Ok(x) => x,
        Err(e) => return e,
    };
    let spans: Spans = job_replicas::spans(&acc.subject, job)
        .into_iter()
        .filter(|(_, (a, b))| *b >= from && to.is_none_or(|end| *a <= end))
        .collect();
    if spans.is_empty() {
        return invalid(format!(
            "no line of a replica of job {job} in {what} (are its worker's lines in the pack?)"
        ));
    }
    let (most, at) = job_replicas::most_at_once(&spans);
    judged(
        most as f64 <= max,
        format!(
            "{} replica(s) of job {job} in {what}; at most {most} alive at once{} (max {max})",
            spans.len(),
            at.map(|t| format!(", first at {}", iso_ms(t)))
                .unwrap_or_default()
        ),
        json!({
            "job": job,
            "replicas": spans.len(),
            "most_at_once": most,
            "at": at.map(iso_ms),
            "max": max,
        }),
        Vec::new(),
    )
}
