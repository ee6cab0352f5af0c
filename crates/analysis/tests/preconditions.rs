//! Every precondition on both sides of its boundary, and a positive control for each: a pack
//! built to fail it ends `invalid` naming it. Packs are the rollout fixture
//! (`fixtures/rollout-pack`, from `make_fixtures.py`) with lines generated here added or removed.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use analysis::judge::rule::Source;
use analysis::judge::verdict::Status;
use analysis::{Analysis, Gate, Options, Outcome, analyze, find_lab};
use serde_json::{Value, json};

const T0: i64 = 1_781_273_900; // 2026-06-12T14:18:20Z, the fixture's start
const PID: &str = "perturbation-event-1-20260612T141820Z";
const RESTART_PID: &str = "supplemental-restart-event-1-20260612T141920Z";

/// The fixture's lab file plus a headroom precondition and a restart step.
const LAB: &str = r#"title = "small rollout"
[hypothesis]
text = "A rollout hides every error."
evidence_cap = "Correlated"
[rule]
window = "10s"
consecutive = 3
threshold_pct = 0.5
phases = ["perturbation", "supplemental-restart"]
[preconditions]
perturbations_observed = true
headroom = true
headroom_factor = 5.0
[[load]]
name = "main"
target = "subject"
rate = 10
[[steps]]
name = "preflight"
phase = "preflight"
staircase = [5.0, 10.0, 20.0]
[[steps]]
name = "perturbation"
phase = "perturbation"
action = { kind = "rollout", app = "subject" }
events = 1
"#;

/// Epoch seconds as RFC 3339 with milliseconds, as our lines write `ts`.
fn iso(s: i64) -> String {
    analysis::ts::iso_ms(s * 1000)
}

struct Pack {
    _t: tempfile::TempDir,
    dir: PathBuf,
}

impl Pack {
    /// The rollout fixture with [`LAB`] and a clean preflight staircase (p50 2 → 12 ms: 6×).
    fn new() -> Pack {
        let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rollout-pack");
        let (t, dir) = testkit::pack::copy_fixture(&src, &["runs.json"]);
        std::fs::write(dir.join("lab.toml"), testkit::pack::complete_lab(LAB)).unwrap();
        let p = Pack { _t: t, dir };
        p.staircase(&[(5.0, Some(2.0)), (10.0, Some(12.0)), (20.0, Some(40.0))]);
        p
    }

    /// Replaces the preflight step lines (raw loadgen stdout) with `steps` (rate, p50).
    fn staircase(&self, steps: &[(f64, Option<f64>)]) {
        let mut text = String::new();
        for (i, (rate, p50)) in steps.iter().enumerate() {
            let mut l = json!({"kind": "step", "ts": iso(T0 - 100 + 10 * i as i64),
                "run_id": "preflight-r1", "step": i + 1, "target_rps": rate, "duration_s": 10.0,
                "count": (rate * 10.0) as u64, "ok": (rate * 10.0) as u64, "err": 0,
                "achieved_rps": rate});
            if let Some(p) = p50 {
                l["p50_ms"] = json!(p);
            }
            text.push_str(&format!("{l}\n"));
        }
        std::fs::write(self.dir.join("logs/preflight.ndjson"), text).unwrap();
    }

    fn append(&self, file: &str, lines: &[Value]) {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("logs").join(file))
            .unwrap();
        for l in lines {
            writeln!(f, "{l}").unwrap();
        }
    }

    /// Drops the console rows whose `Log_s` satisfies `drop`.
    fn drop_console(&self, drop: impl Fn(&Value) -> bool) {
        let p = self.dir.join("logs/ContainerAppConsoleLogs_CL.ndjson");
        let kept: Vec<String> = std::fs::read_to_string(&p)
            .unwrap()
            .lines()
            .filter(|l| {
                let row: Value = serde_json::from_str(l).unwrap();
                let inner: Value = serde_json::from_str(row["Log_s"].as_str().unwrap()).unwrap();
                !drop(&inner)
            })
            .map(str::to_owned)
            .collect();
        std::fs::write(&p, kept.join("\n") + "\n").unwrap();
    }

    fn runs(&self, edit: impl FnOnce(&mut Value)) {
        let p = self.dir.join("runs.json");
        let mut v: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
        edit(&mut v);
        std::fs::write(&p, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    }

    fn lab(&self, text: &str) {
        std::fs::write(self.dir.join("lab.toml"), testkit::pack::complete_lab(text)).unwrap();
    }

    fn analyse(&self) -> Analysis {
        analyse(&self.dir)
    }
}

fn analyse(dir: &Path) -> Analysis {
    let opts = Options {
        lab: find_lab(None, Some(dir)),
        ..Options::default()
    };
    analyze(&[dir.to_path_buf()], &opts).unwrap()
}

fn gate<'a>(a: &'a Analysis, name: &str) -> &'a Gate {
    a.gates
        .iter()
        .find(|g| g.name == name)
        .unwrap_or_else(|| panic!("no gate {name}: {:#?}", a.gates))
}

/// The verdict is `invalid` and names exactly `name` as the failed precondition.
fn assert_invalid_naming(a: &Analysis, name: &str) {
    assert_eq!(
        a.verdict.verdict,
        Outcome::Invalid,
        "{:?} {:#?}",
        a.verdict.reasons,
        a.gates
    );
    assert_eq!(a.verdict.failed_preconditions, vec![name.to_owned()]);
    assert!(
        a.verdict.reasons[0].contains(name),
        "{:?}",
        a.verdict.reasons
    );
}

fn sysrow(s: i64, revision: &str, replica: &str, reason: &str, msg: &str) -> Value {
    json!({"TimeGenerated": iso(s), "ContainerAppName_s": "subject", "RevisionName_s": revision,
           "ReplicaName_s": replica, "Reason_s": reason, "Log_s": msg, "Type_s": "Normal",
           "EventSource_s": "ContainerAppController"})
}

#[test]
fn the_clean_pack_holds_with_every_precondition_passing() {
    let a = Pack::new().analyse();
    assert_eq!(a.verdict.verdict, Outcome::Held, "{:#?}", a.gates);
    let h = gate(&a, "headroom_shown");
    assert_eq!(h.status, Status::Pass, "{}", h.detail);
    assert_eq!(h.numbers["rate"], 10.0);
    assert_eq!(h.numbers["below_rate"], 5.0);
    assert_eq!(h.numbers["p50_ms"], 12.0);
    assert_eq!(h.numbers["below_p50_ms"], 2.0);
    assert_eq!(h.numbers["ratio"], 6.0);
    assert_eq!(h.numbers["factor"], 5.0);
    let p = gate(&a, "perturbations_observed");
    assert_eq!(p.status, Status::Pass, "{}", p.detail);
    assert_eq!(p.numbers["scheduled"], 1);
    assert_eq!(p.numbers["events"][0]["perturbation_id"], PID);
    assert_eq!(p.numbers["events"][0]["transition_s"], 20.0);
    assert_eq!(gate(&a, "data_complete").status, Status::Pass);
    // The event, as report.md's first section lists it.
    assert_eq!(a.events.len(), 1);
    let e = &a.events[0];
    assert_eq!(
        (e.step.as_str(), e.event, e.kind.as_str()),
        ("perturbation", 1, "rollout")
    );
    assert_eq!(e.new_revision.as_deref(), Some("subject--r2"));
    assert_eq!(e.transition_s, Some(20.0));
    assert_eq!(e.fired_ms, (T0 + 3) * 1000);
    // From the fire time to the step's end: the main stream's 502 and the side stream's reset.
    assert_eq!(e.errors_in_window, 2);
    assert!(e.observed && e.problem.is_none());
    let md = analysis::render::report::render(&a, &[]);
    let events_at = md.find("## Events").unwrap();
    assert!(events_at < md.find("## Gates").unwrap());
    assert!(
        md.contains(&format!("| perturbation | 1 | rollout | {PID} | 2026-06-12T14:18:23.000Z | subject--r2 | 20.0 | 2 | 3.279 % (95 % CI 0.400–11.347 %) | yes |")),
        "{md}"
    );
}

#[test]
fn headroom_passes_from_the_factor_up_and_fails_just_below() {
    for (p50, status) in [
        (9.998, Status::Fail),  // 4.999
        (10.0, Status::Pass),   // 5.000: equal to the factor
        (10.002, Status::Pass), // 5.001
    ] {
        let pack = Pack::new();
        pack.staircase(&[(5.0, Some(2.0)), (10.0, Some(p50)), (20.0, Some(80.0))]);
        let a = pack.analyse();
        let g = gate(&a, "headroom_shown");
        assert_eq!(g.status, status, "p50 {p50}: {}", g.detail);
        assert!(
            g.detail.contains("p50(10 RPS) / p50(5 RPS)"),
            "{}",
            g.detail
        );
        if status == Status::Fail {
            assert_invalid_naming(&a, "headroom_shown");
        } else {
            assert_eq!(a.verdict.verdict, Outcome::Held, "{:#?}", a.gates);
        }
    }
}

#[test]
fn headroom_matches_steps_by_rate_not_position() {
    // Listed out of order, with a step above the lab's rate that would pass by position.
    let pack = Pack::new();
    pack.staircase(&[(20.0, Some(2.0)), (5.0, Some(3.0)), (10.0, Some(4.0))]);
    let a = pack.analyse();
    let g = gate(&a, "headroom_shown");
    assert_eq!(g.status, Status::Fail, "{}", g.detail);
    assert_eq!(g.numbers["below_p50_ms"], 3.0);
    assert_eq!(g.numbers["p50_ms"], 4.0);
    let t = a.table("preflight-headroom").unwrap();
    let role = |i| t.get(i, "role").unwrap().as_str().unwrap().to_owned();
    assert_eq!(
        (role(0), role(1), role(2)),
        ("".into(), "step below".into(), "lab rate".into())
    );
}

#[test]
fn a_flat_staircase_is_invalid_naming_headroom_shown() {
    let pack = Pack::new();
    pack.staircase(&[(5.0, Some(0.6)), (10.0, Some(0.6)), (20.0, Some(0.7))]);
    let a = pack.analyse();
    assert_invalid_naming(&a, "headroom_shown");
    assert!(
        gate(&a, "headroom_shown")
            .detail
            .contains("= 1.000 (must be >= 5)")
    );
}

#[test]
fn a_staircase_without_the_labs_rate_or_the_step_below_fails_naming_it() {
    let pack = Pack::new();
    pack.staircase(&[(5.0, Some(2.0)), (20.0, Some(40.0))]);
    let a = pack.analyse();
    assert_invalid_naming(&a, "headroom_shown");
    let d = &gate(&a, "headroom_shown").detail;
    assert!(
        d.contains("no step at the lab's rate 10 RPS (steps: 5, 20)"),
        "{d}"
    );

    pack.staircase(&[(10.0, Some(2.0)), (20.0, Some(40.0))]);
    let a = pack.analyse();
    assert_invalid_naming(&a, "headroom_shown");
    let d = &gate(&a, "headroom_shown").detail;
    assert!(d.contains("no step below the lab's rate 10 RPS"), "{d}");

    // No staircase at all, and the lab requires one.
    std::fs::remove_file(pack.dir.join("logs/preflight.ndjson")).unwrap();
    assert_invalid_naming(&pack.analyse(), "headroom_shown");
}

#[test]
fn a_dirty_baseline_is_invalid_naming_baseline_clean() {
    let pack = Pack::new();
    pack.lab(&LAB.replace("headroom = true", "headroom = true\nbaseline_clean = true"));
    assert_eq!(
        pack.analyse().verdict.verdict,
        Outcome::Invalid,
        "no baseline run yet"
    );
    let lines: Vec<Value> = (0..3)
        .map(|i| {
            json!({"kind": "bucket", "ts": iso(T0 - 60 + 10 * i + 10), "run_id": "baseline-r1",
                   "window_s": 10, "bucket_start_epoch_s": T0 - 60 + 10 * i,
                   "bucket_start_iso": iso(T0 - 60 + 10 * i), "count": 100,
                   "ok": if i == 1 { 99 } else { 100 }, "err": if i == 1 { 1 } else { 0 },
                   "err_pct": if i == 1 { 1.0 } else { 0.0 }, "target_rps": 10})
        })
        .collect();
    pack.append("baseline.ndjson", &lines);
    let a = pack.analyse();
    assert_invalid_naming(&a, "baseline_clean");
    assert!(
        gate(&a, "baseline_clean")
            .detail
            .contains("3 baseline window(s), 1 above 0.5 %")
    );
}

#[test]
fn an_event_with_no_rollout_is_invalid_naming_it() {
    // The sampler never sees the new revision.
    let pack = Pack::new();
    pack.drop_console(|l| l["kind"] == "RevisionStateSample" && l["revision"] == "subject--r2");
    let a = pack.analyse();
    assert_invalid_naming(&a, "perturbations_observed");
    let d = &gate(&a, "perturbations_observed").detail;
    assert!(
        d.starts_with(&format!(
            "perturbation event 1 (rollout, {PID}): no new revision of subject"
        )),
        "{d}"
    );
    assert!(!a.events[0].observed);
    let md = analysis::render::report::render(&a, &[]);
    assert!(md.contains("| **NO**: no new revision of subject"), "{md}");
}

#[test]
fn a_rollout_needs_its_system_rows() {
    // Neither a ContainerStarted of the new revision nor a sign of the old one stopping.
    let pack = Pack::new();
    let p = pack.dir.join("logs/ContainerAppSystemLogs_CL.ndjson");
    let text = std::fs::read_to_string(&p).unwrap();
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| !l.contains("RevisionDeactivating") && !l.contains("\"ContainerStarted\""))
        .collect();
    std::fs::write(&p, kept.join("\n") + "\n").unwrap();
    let a = pack.analyse();
    assert_invalid_naming(&a, "perturbations_observed");
    let e = a.events[0].problem.clone().unwrap();
    assert!(
        e.contains("no ContainerStarted row of the new revision subject--r2"),
        "{e}"
    );
    assert!(
        e.contains("no system row shows the old revision subject--r1 stopping"),
        "{e}"
    );
    // Azure's row for a retired replica is enough for the old revision.
    pack.append(
        "ContainerAppSystemLogs_CL.ndjson",
        &[
            sysrow(
                T0 + 5,
                "subject--r2",
                "subject--r2-a",
                "ContainerStarted",
                "Started container 'subject'",
            ),
            sysrow(
                T0 + 50,
                "subject--r1",
                "subject--r1-a",
                "ContainerTerminated",
                "Container 'subject' was terminated with exit code '' and reason 'ManuallyStopped'",
            ),
        ],
    );
    let a = pack.analyse();
    assert_eq!(
        gate(&a, "perturbations_observed").status,
        Status::Pass,
        "{:?}",
        a.events
    );
}

#[test]
fn an_old_replica_still_running_is_not_a_finished_rollout() {
    // The old replica stays in the inventory to the end and no ManuallyStopped row says it left.
    let pack = Pack::new();
    let last = json!({"kind": "ReplicaInventorySample", "ts": iso(T0 + 42), "run_id": "perturbation-r1",
        "perturbation_id": PID, "sampler": "perturbation-sampler", "tick": 4, "app": "subject",
        "revision": "subject--r1", "replica": "subject--r1-a", "running_state": "Running",
        "containers": []});
    pack.append("sampler-extra.ndjson", &[last]);
    let a = pack.analyse();
    assert_invalid_naming(&a, "perturbations_observed");
    let p = a.events[0].problem.clone().unwrap();
    assert!(
        p.contains("old replica(s) subject--r1-a of subject--r1 still listed"),
        "{p}"
    );
}

#[test]
fn a_failed_action_or_a_missing_event_is_invalid() {
    let pack = Pack::new();
    pack.runs(|v| v["steps"][0]["actions"][0]["outcome"] = json!("failed"));
    let a = pack.analyse();
    assert_invalid_naming(&a, "perturbations_observed");
    assert!(
        a.events[0]
            .problem
            .as_deref()
            .unwrap()
            .contains("action rollout was not performed")
    );

    // The lab scheduled two events; one fired.
    let pack = Pack::new();
    pack.lab(&LAB.replace("events = 1", "events = 2"));
    let a = pack.analyse();
    assert_invalid_naming(&a, "perturbations_observed");
    let d = &gate(&a, "perturbations_observed").detail;
    assert!(
        d.contains("step perturbation: 1 of 2 scheduled event(s) fired"),
        "{d}"
    );
}

#[test]
fn a_pack_without_per_event_ids_does_not_pass_silently() {
    let pack = Pack::new();
    pack.runs(|v| {
        let s = &mut v["steps"][0];
        s["actions"][0]
            .as_object_mut()
            .unwrap()
            .remove("perturbation_id");
        s["runs"] = json!([{"load": "main", "run_id": "perturbation-r1"},
                           {"load": "sampler", "run_id": "perturbation-20260612T141820Z"}]);
    });
    let a = pack.analyse();
    assert_invalid_naming(&a, "perturbations_observed");
    let p = a.events[0].problem.clone().unwrap();
    assert!(
        p.contains("no per-event perturbation id in runs.json"),
        "{p}"
    );

    // And the two records of one event must agree.
    let pack = Pack::new();
    pack.runs(|v| v["steps"][0]["runs"][1]["run_id"] = json!("perturbation-event-9-x"));
    let a = pack.analyse();
    assert_invalid_naming(&a, "perturbations_observed");
    assert!(
        a.events[0]
            .problem
            .as_deref()
            .unwrap()
            .contains("runs.json disagrees")
    );
}

/// A revision restart of subject--r2 at T0+70: the sampler's lines for its own id, with the old
/// replica leaving the inventory at `gone_at_tick` (never when `None`).
fn restart_pack(gone_at_tick: Option<u64>, started_row: bool) -> Pack {
    let pack = Pack::new();
    pack.lab(&format!(
        "{LAB}[[steps]]\nname = \"supplemental-restart\"\nphase = \"supplemental-restart\"\naction = {{ kind = \"restart\", app = \"subject\" }}\nevents = 1\n"
    ));
    pack.runs(|v| {
        v["steps"].as_array_mut().unwrap().push(json!({
            "name": "supplemental-restart", "phase": "supplemental-restart",
            "start": iso(T0 + 60), "end": iso(T0 + 120),
            "runs": [{"load": "sampler", "run_id": RESTART_PID, "event": 1}],
            "actions": [{"event": 1, "kind": "restart", "app": "subject", "ts": iso(T0 + 70),
                         "outcome": "ok", "status": 200, "dur_ms": 30, "detail": "",
                         "perturbation_id": RESTART_PID}]}));
    });
    let mut lines = Vec::new();
    for tick in 0..4u64 {
        let ts = iso(T0 + 66 + 10 * tick as i64);
        lines.push(
            json!({"kind": "RevisionStateSample", "ts": ts, "perturbation_id": RESTART_PID,
            "sampler": "perturbation-sampler", "tick": tick, "app": "subject",
            "revision": "subject--r2", "active": true, "replicas": 1, "traffic_weight": 100,
            "provisioning_state": "Provisioned"}),
        );
        let mut reps = vec![];
        if gone_at_tick.is_none_or(|g| tick < g) {
            reps.push("subject--r2-a");
        }
        if tick >= 1 {
            reps.push("subject--r2-b");
        }
        for r in reps {
            lines.push(json!({"kind": "ReplicaInventorySample", "ts": ts,
                "perturbation_id": RESTART_PID, "sampler": "perturbation-sampler", "tick": tick,
                "app": "subject", "revision": "subject--r2", "replica": r,
                "running_state": "Running", "containers": []}));
        }
    }
    pack.append("restart-sampler.ndjson", &lines);
    if started_row {
        pack.append(
            "ContainerAppSystemLogs_CL.ndjson",
            &[sysrow(
                T0 + 72,
                "subject--r2",
                "subject--r2-b",
                "ContainerStarted",
                "Started container 'subject'",
            )],
        );
    }
    pack
}

#[test]
fn a_restart_is_observed_by_its_replacement_replicas() {
    // localplane: the old replica leaves the inventory (no system row for it).
    let a = restart_pack(Some(2), true).analyse();
    assert_eq!(a.verdict.verdict, Outcome::Held, "{:#?}", a.gates);
    assert_eq!(gate(&a, "perturbations_observed").numbers["scheduled"], 2);
    let e = &a.events[1];
    assert_eq!(
        (e.kind.as_str(), e.new_revision.as_deref()),
        ("restart", None)
    );
    // first tick with the replacement (T0+76) -> first tick without the old replica (T0+86).
    assert_eq!(e.transition_s, Some(10.0));
    let q3 = a.table("q3-").unwrap();
    // Weight changes have transition rows of their own (the rollout moves r1 100 -> 0 and
    // r2 0 -> 100); the rest is one per event.
    let (weights, per_event): (Vec<usize>, Vec<usize>) = (0..q3.rows.len())
        .filter(|&i| q3.get(i, "row_type").unwrap() == "transition")
        .partition(|&i| {
            q3.get(i, "detail")
                .unwrap()
                .as_str()
                .unwrap()
                .starts_with("traffic weight of ")
        });
    assert_eq!(per_event.len(), 2, "one transition row per event");
    assert_eq!(weights.len(), 2, "r1 and r2 each change weight once");

    // Azure: the old replica is still listed, but a ManuallyStopped row says it stopped.
    let pack = restart_pack(None, true);
    assert_invalid_naming(&pack.analyse(), "perturbations_observed");
    pack.append(
        "ContainerAppSystemLogs_CL.ndjson",
        &[sysrow(
            T0 + 90,
            "subject--r2",
            "subject--r2-a",
            "ContainerTerminated",
            "Container 'subject' was terminated with exit code '' and reason 'ManuallyStopped'",
        )],
    );
    assert_eq!(pack.analyse().verdict.verdict, Outcome::Held);

    // No replacement started: not observed.
    let a = restart_pack(Some(2), false).analyse();
    assert_invalid_naming(&a, "perturbations_observed");
    let p = a.events[1].problem.clone().unwrap();
    assert!(
        p.contains("no ContainerStarted row of a replacement replica of subject--r2"),
        "{p}"
    );
}

fn req_line(run: &str, s: i64, ok: bool) -> Value {
    json!({"kind": "req", "ts": iso(s), "run_id": run, "scenario": "main", "scheduled_ts": iso(s),
           "code": if ok { 200 } else { 503 }, "dur_ms": 5.0, "ok": ok,
           "err_class": if ok { Value::Null } else { json!("http_5xx") }})
}

fn bucket_line(run: &str, start: i64, count: u64, err: u64) -> Value {
    json!({"kind": "bucket", "ts": iso(start + 10), "run_id": run, "window_s": 10,
           "bucket_start_epoch_s": start, "bucket_start_iso": iso(start), "count": count,
           "ok": count - err, "err": err, "err_pct": 0.0, "target_rps": 200})
}

#[test]
fn bucket_and_req_lines_that_disagree_are_invalid_naming_data_complete() {
    // Every request logged (60 req lines) but the buckets lost two windows' worth: Q1 uses the
    // req lines, says so, and the gap (20 > the resolution 0) fails data_complete.
    let pack = Pack::new();
    let lines: Vec<Value> = (0..4)
        .map(|w| bucket_line("perturbation-r1", T0 + 10 * w, 10, u64::from(w == 3)))
        .collect();
    pack.append("loadgen-buckets.ndjson", &lines);
    let a = pack.analyse();
    assert_invalid_naming(&a, "data_complete");
    let r = a
        .runs
        .iter()
        .find(|r| r.run_id == "perturbation-r1" && r.scenario == "main")
        .unwrap();
    assert_eq!(r.source, Source::Req);
    assert_eq!(
        (r.requests, r.bucket_requests, r.req_requests),
        (60, Some(40), Some(60))
    );
    let c = r.cross_check.as_ref().unwrap();
    assert_eq!((c.compared, c.gap, c.resolution), ("requests", 20, 0));
    let d = &gate(&a, "data_complete").detail;
    assert!(d.contains("perturbation-r1/main: bucket lines count 40 requests, req lines 60 (gap 20 > the rule's resolution 0)"), "{d}");
    let q1 = a.table("q1-").unwrap();
    assert_eq!(q1.get(0, "source").unwrap(), "req");
}

#[test]
fn the_cross_check_tolerates_gaps_up_to_the_rules_resolution() {
    // Errors-only req lines: the buckets' error count is compared with the failed req lines.
    // 2000 requests per window at 0.5 %: a gap of 10 cannot put a clean window above the
    // threshold (10/2010 < 0.5 %), 11 can.
    let dir = tempfile::tempdir().unwrap();
    for (bucket_err, status) in [(11u64, Status::Pass), (12, Status::Fail)] {
        let p = dir.path().join("run.ndjson");
        let mut lines: Vec<String> = (0..4)
            .map(|w| {
                bucket_line(
                    "perturbation-x",
                    T0 + 10 * w,
                    2000,
                    if w == 1 { bucket_err } else { 0 },
                )
                .to_string()
            })
            .collect();
        lines.push(req_line("perturbation-x", T0 + 12, false).to_string());
        std::fs::write(&p, lines.join("\n")).unwrap();
        let a = analyze(&[p], &Options::default()).unwrap();
        let g = gate(&a, "data_complete");
        assert_eq!(g.status, status, "{}", g.detail);
        let c = a.runs[0].cross_check.as_ref().unwrap();
        assert_eq!((c.compared, c.resolution), ("errors", 10));
        assert_eq!(
            a.runs[0].source,
            Source::Bucket,
            "errors-only req lines are never the windows"
        );
        assert_eq!(a.runs[0].latency_basis, "bucket");
    }
}

#[test]
fn an_interrupted_or_aborted_loadgen_is_invalid_naming_data_complete() {
    let summary = |interrupted: bool, aborted: u64| {
        json!({"kind": "summary", "ts": iso(T0 + 61), "run_id": "perturbation-r1", "scenario": "main",
               "duration_s": 60.0, "count": 60, "ok": 59, "err": 1, "err_pct": 1.667, "dropped": 0,
               "target_rps": 1.0, "achieved_rps": 1.0, "interrupted": interrupted,
               "errors": if aborted > 0 { json!({"aborted": aborted}) } else { json!({}) }})
    };
    let pack = Pack::new();
    pack.append("summary.ndjson", &[summary(false, 0)]);
    assert_eq!(pack.analyse().verdict.verdict, Outcome::Held);
    let pack = Pack::new();
    pack.append("summary.ndjson", &[summary(true, 0)]);
    let a = pack.analyse();
    assert_invalid_naming(&a, "data_complete");
    assert!(gate(&a, "data_complete").detail.contains("was interrupted"));
    let pack = Pack::new();
    pack.append("summary.ndjson", &[summary(false, 3)]);
    let a = pack.analyse();
    assert_invalid_naming(&a, "data_complete");
    assert!(
        gate(&a, "data_complete")
            .detail
            .contains("3 aborted request(s)")
    );
}

#[test]
fn a_log_write_failure_is_invalid_naming_data_complete() {
    let pack = Pack::new();
    pack.runs(|v| {
        v["log_write_failures"] = json!([{"file": "logs/ContainerAppConsoleLogs_CL.ndjson",
            "error": "No space left on device (os error 28)",
            "first_failed_ts": "2026-06-12T14:18:40.000Z", "rows_lost": 120}]);
    });
    let a = pack.analyse();
    assert_invalid_naming(&a, "data_complete");
    let g = gate(&a, "data_complete");
    assert!(g.detail.contains("writing logs/ContainerAppConsoleLogs_CL.ndjson failed from 2026-06-12T14:18:40.000Z (120 row(s) lost): No space left on device"), "{}", g.detail);
    assert_eq!(g.numbers["log_write_failures"][0]["rows_lost"], 120);
}

#[test]
fn a_later_restarts_replacements_are_not_this_ones() {
    // Event 1 started no replacement; the only one starts after event 2 fired.
    let pack = restart_pack(Some(2), false);
    pack.runs(|v| {
        let s = v["steps"].as_array_mut().unwrap().last_mut().unwrap();
        s["actions"]
            .as_array_mut()
            .unwrap()
            .push(json!({"event": 2, "kind": "restart",
            "app": "subject", "ts": iso(T0 + 100), "outcome": "ok", "status": 200, "dur_ms": 30,
            "detail": "", "perturbation_id": "supplemental-restart-event-2-20260612T141920Z"}));
    });
    pack.append(
        "ContainerAppSystemLogs_CL.ndjson",
        &[sysrow(
            T0 + 102,
            "subject--r2",
            "subject--r2-b",
            "ContainerStarted",
            "Started container 'subject'",
        )],
    );
    let a = pack.analyse();
    assert_invalid_naming(&a, "perturbations_observed");
    let p = a.events[1].problem.clone().unwrap();
    assert!(
        p.contains("no ContainerStarted row of a replacement replica of subject--r2"),
        "{p}"
    );
}
