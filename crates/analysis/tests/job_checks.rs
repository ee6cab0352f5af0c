//! The event-driven job checks on planted packs: worker lines (`subject` queue-worker events) and
//! `enqueue` actions in runs.json, each check on both sides of its bound, and the cases that
//! cannot be judged.
#![allow(clippy::unwrap_used)]

#[path = "support/planted.rs"]
mod planted;

use analysis::Analysis;
use analysis::judge::verdict::Status;
use planted::{analyze_pack, iso_ms, status};

const T0: i64 = 1_782_900_000; // 2026-07-01T10:00:00Z

/// One worker replica: boots at `start_ms` (after T0), takes each of `items`, finishes each
/// unless `done` is false, the last line at `end_ms`.
struct Replica<'a> {
    name: &'a str,
    start_ms: i64,
    end_ms: i64,
    items: &'a [&'a str],
    done: bool,
}

fn worker_lines(replicas: &[Replica]) -> Vec<String> {
    let line = |r: &Replica, ms: i64, event: &str, item: Option<&str>| {
        let item = item.map_or(String::new(), |i| format!(r#","item":"{i}""#));
        format!(
            r#"{{"kind":"subject","ts":"{}","event":"{event}","app":"worker","revision":"{}","replica":"{}"{item}}}"#,
            iso_ms(T0 * 1000 + ms),
            r.name.rsplit_once('-').map_or(r.name, |(e, _)| e),
            r.name
        )
    };
    let mut out = Vec::new();
    for r in replicas {
        out.push(line(r, r.start_ms, "BOOT_START", None));
        for i in r.items {
            out.push(line(r, r.start_ms + 100, "QUEUE_ITEM_TAKEN", Some(i)));
            if r.done {
                out.push(line(r, r.end_ms, "QUEUE_ITEM_DONE", Some(i)));
            }
        }
        if r.items.is_empty() {
            out.push(line(r, r.end_ms, "QUEUE_EMPTY", None));
        }
    }
    out
}

const LAB: &str = r#"
title = "jobs"
kind = "observation"
[hypothesis]
text = "h"
[[apps]]
name = "queue"
image = "probelab/subject:dev"
[[jobs]]
name = "worker"
image = "probelab/subject:dev"
replica_timeout_seconds = 60
[jobs.event]
queue_app = "queue"
polling_seconds = 5
max_executions = 2

[[checks]]
name = "once"
kind = "queue_items_once"
job = "worker"
step = "drain"

[[checks]]
name = "drained in 10 s"
kind = "queue_drained_within"
job = "worker"
step = "drain"
max = 10

[[checks]]
name = "at most 2"
kind = "job_replicas_at_most"
job = "worker"
max = 2

[[checks]]
name = "at most 1"
kind = "job_replicas_at_most"
job = "worker"
max = 1
"#;

/// A pack whose step `drain` enqueued `items` at T0 + 1 s (`outcome`), with `replicas`' lines.
fn pack(items: &[&str], outcome: &str, replicas: &[Replica]) -> Analysis {
    let tmp = tempfile::tempdir().unwrap();
    let t = |s: i64| iso_ms((T0 + s) * 1000);
    let runs = serde_json::json!({
        "lab": "jobs", "profile": "quick", "target": "local",
        "started": t(0), "ended": t(60), "incomplete": false,
        "steps": [{"name": "drain", "phase": "drain", "start": t(0), "end": t(60), "runs": [],
                   "actions": [{"event": 1, "kind": "enqueue", "app": "queue", "ts": t(1),
                                "outcome": outcome, "status": 200, "dur_ms": 3,
                                "detail": "d", "items": items}]}]
    });
    let logs = [("console.ndjson", worker_lines(replicas))];
    analyze_pack(tmp.path(), &logs, &runs, LAB)
}

fn rep<'a>(name: &'a str, start_s: f64, end_s: f64, items: &'a [&'a str]) -> Replica<'a> {
    Replica {
        name,
        start_ms: (start_s * 1000.0) as i64,
        end_ms: (end_s * 1000.0) as i64,
        items,
        done: true,
    }
}

#[test]
fn items_taken_once_and_finished_pass_and_a_twice_taken_or_lost_item_fails() {
    let good = [
        rep("worker-a-1", 2.0, 4.0, &["item-1"]),
        rep("worker-b-1", 2.0, 4.0, &["item-2"]),
        rep("worker-c-1", 7.0, 9.0, &["item-3"]),
    ];
    let a = pack(&["item-1", "item-2", "item-3"], "ok", &good);
    assert_eq!(status(&a, "once"), Status::Pass);
    // Taken twice.
    let twice = [
        rep("worker-a-1", 2.0, 4.0, &["item-1"]),
        rep("worker-b-1", 2.0, 4.0, &["item-2"]),
        rep("worker-c-1", 7.0, 9.0, &["item-3", "item-1"]),
    ];
    let a = pack(&["item-1", "item-2", "item-3"], "ok", &twice);
    assert_eq!(status(&a, "once"), Status::Fail);
    // Never taken.
    let a = pack(&["item-1", "item-2", "item-3", "item-4"], "ok", &good);
    assert_eq!(status(&a, "once"), Status::Fail);
    // Taken, never finished (the replica was killed).
    let mut lost = good;
    lost[2].done = false;
    let a = pack(&["item-1", "item-2", "item-3"], "ok", &lost);
    assert_eq!(status(&a, "once"), Status::Fail);
    assert_eq!(status(&a, "drained in 10 s"), Status::Fail);
}

#[test]
fn the_drain_time_is_judged_on_both_sides_of_its_bound() {
    // Enqueued at 1 s: the last item done at 11 s is exactly 10 s later; at 11.001 s, over.
    let on = [
        rep("worker-a-1", 2.0, 4.0, &["item-1"]),
        rep("worker-b-1", 7.0, 11.0, &["item-2"]),
    ];
    let a = pack(&["item-1", "item-2"], "ok", &on);
    assert_eq!(status(&a, "drained in 10 s"), Status::Pass);
    let over = [
        rep("worker-a-1", 2.0, 4.0, &["item-1"]),
        rep("worker-b-1", 7.0, 11.001, &["item-2"]),
    ];
    let a = pack(&["item-1", "item-2"], "ok", &over);
    assert_eq!(status(&a, "drained in 10 s"), Status::Fail);
}

#[test]
fn replicas_alive_at_once_are_counted_from_their_lines() {
    // Two overlap, the third starts as the first ends: at most 2 at once.
    let two = [
        rep("worker-a-1", 2.0, 4.0, &["item-1"]),
        rep("worker-b-1", 3.0, 6.0, &["item-2"]),
        rep("worker-c-1", 4.0, 5.0, &[]),
    ];
    let a = pack(&["item-1", "item-2"], "ok", &two);
    assert_eq!(status(&a, "at most 2"), Status::Pass);
    assert_eq!(status(&a, "at most 1"), Status::Fail);
    let three = [
        rep("worker-a-1", 2.0, 4.0, &["item-1"]),
        rep("worker-b-1", 3.0, 6.0, &["item-2"]),
        rep("worker-c-1", 3.5, 5.0, &[]),
    ];
    let a = pack(&["item-1", "item-2"], "ok", &three);
    assert_eq!(status(&a, "at most 2"), Status::Fail);
}

#[test]
fn without_worker_lines_or_with_a_failed_enqueue_nothing_is_judged() {
    let a = pack(&["item-1"], "ok", &[]);
    assert_eq!(status(&a, "at most 2"), Status::NotEvaluated);
    // A failed enqueue: which items it added is unknown.
    let a = pack(&[], "failed", &[rep("worker-a-1", 2.0, 4.0, &["item-1"])]);
    assert_eq!(status(&a, "once"), Status::NotEvaluated);
    assert_eq!(status(&a, "drained in 10 s"), Status::NotEvaluated);
    assert_eq!(status(&a, "at most 2"), Status::Pass);
}
