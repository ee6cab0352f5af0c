//! Parity suite: localplane against recordings of the real service (LocalStack style).
//!
//! Each recorded scenario is replayed on localplane with the same shape (3 replicas, a bind-late
//! startup, the same perturbation) and `recorded` timings, then both timelines are normalised
//! (`localplane::parity`) and compared: (a) the sequence of system-event reasons per replica and
//! per revision, exactly; (b) the intervals, each within ±20 % of the recording's median times
//! the timing factor. The recording is in `tests/fixtures/recordings/` (README there).
//!
//! - `recording_*`: what the recording says, pinned (no localplane run).
//! - `*_scaled_process`: the scenarios at a quarter of the recorded durations (startup delay
//!   too), process runtime: every interval scales with the factor, so the ratios are compared.
//! - `*_full_docker`: the scenarios at the recorded durations on the Docker runtime, with
//!   `labs/startup-degraded.toml`'s full-profile app itself (minutes).
//!
//! Accepted differences are listed in [`ACCEPTED`] with their reason, never silently.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::*;
use localplane::parity::{self, Timeline, median, min_max};
use localplane::timings;
use serde_json::{Value, json};
use testkit::eventually;

const Q7: &str = include_str!("fixtures/recordings/q7-system-events-timeline-20260613055431.json");
const Q3: &str = "tests/fixtures/recordings/q3-revision-state-timeline-20260613055031.json";

/// What localplane does differently and the suite accepts, each with why.
const ACCEPTED: &[(&str, &str)] = &[
    (
        "reasons other than AssigningReplica, ContainerStarted, ContainerTerminated",
        "the recording's query kept only these three; localplane's PullingImage, PulledImage, \
         ContainerCreated, ProbeFailed, RevisionReady, RevisionUpdate, RevisionDeactivating, \
         RollingRevisionCompleted rows have nothing to be compared with and are filtered out",
    ),
    (
        "spread of replica starts within a revision",
        "the recording's 3 replicas start up to 7.6 s apart (per replica 10.6-23.3 s after the \
         assignment); localplane starts all of them one fixed provisioning delay after it, so \
         only medians are compared",
    ),
    (
        "ARM revision view during a rollout (q3)",
        "Azure reports the new revision with traffic weight 100 and provisioningState \
         Provisioned from its first sample, before any replica started, while traffic still \
         reaches the old one; localplane reports Provisioning with weight 0 until the new \
         revision is ready (all its replicas), then moves weight and traffic together",
    ),
    (
        "old replica stop after the next restart assignment",
        "the recording stops each old replica 1.0-1.2 s after assigning the next replacement; \
         localplane retires it and assigns the next one in the same controller step (ms apart); \
         the order is the same",
    ),
];

fn recording() -> Timeline {
    parity::timeline(&parity::rows_from_export(Q7).unwrap())
}

/// ±20 % of `want`, printed either way so a run shows its numbers.
fn within(what: &str, got: f64, want: f64) {
    let ok = (got - want).abs() <= 0.2 * want;
    eprintln!(
        "{what}: localplane {got:.2} s, recording {want:.2} s ({:+.0} %){}",
        (got / want - 1.0) * 100.0,
        if ok { "" } else { "  <-- outside ±20 %" }
    );
    assert!(ok, "{what}: {got:.2} s is not within 20 % of {want:.2} s");
}

/// The recording's medians: (assigned → started, assigned → old stopped, restart step interval,
/// restart started → old stopped).
fn recorded_medians(tl: &Timeline) -> (f64, f64, f64, f64) {
    let ro = parity::rollouts(tl);
    let rs = parity::restarts(tl);
    let a2s: Vec<f64> = ro
        .iter()
        .flat_map(|r| r.assigned_to_started.clone())
        .collect();
    let a2o: Vec<f64> = ro
        .iter()
        .flat_map(|r| r.assigned_to_old_stopped.clone())
        .collect();
    let step: Vec<f64> = rs.iter().flat_map(|r| r.step_interval.clone()).collect();
    let s2o: Vec<f64> = rs
        .iter()
        .flat_map(|r| r.started_to_old_stopped.clone())
        .collect();
    (median(&a2s), median(&a2o), median(&step), median(&s2o))
}

#[test]
fn recording_rollouts_match_the_published_facts() {
    let tl = recording();
    assert_eq!(tl.revisions.len(), 16, "initial deploy + 15 rollouts");
    let ro = parity::rollouts(&tl);
    assert_eq!(ro.len(), 15);
    for r in &ro {
        let new = &tl.revisions[r.new];
        assert_eq!(
            new.sets[0].len(),
            3,
            "{}: 3 replicas assigned together",
            new.label
        );
        assert_eq!(r.assigned_to_started.len(), 3, "{}", new.label);
        assert_eq!(r.assigned_to_old_stopped.len(), 3, "{}", new.label);
    }
    // Every replica of a replaced revision: assigned, started, ManuallyStopped, nothing else.
    for rev in &tl.revisions[..15] {
        for rep in &rev.replicas {
            assert_eq!(
                rep.kinds(),
                vec![
                    "AssigningReplica",
                    "ContainerStarted",
                    "ContainerTerminated:ManuallyStopped"
                ],
                "{}",
                rep.label
            );
        }
    }
    let a2s: Vec<f64> = ro
        .iter()
        .flat_map(|r| r.assigned_to_started.clone())
        .collect();
    let (lo, hi) = min_max(&a2s);
    assert!((median(&a2s) - 15.83).abs() < 0.05, "{}", median(&a2s));
    assert!(
        (lo - 10.58).abs() < 0.05 && (hi - 23.35).abs() < 0.05,
        "{lo} {hi}"
    );
    // Per revision, the last of its 3 replicas started 15.7-23.3 s after the assignment.
    let last: Vec<f64> = ro
        .iter()
        .map(|r| min_max(&r.assigned_to_started).1)
        .collect();
    let (lo, hi) = min_max(&last);
    assert!(
        (lo - 15.68).abs() < 0.05 && (hi - 23.35).abs() < 0.05,
        "{lo} {hi}"
    );
    let a2o: Vec<f64> = ro
        .iter()
        .flat_map(|r| r.assigned_to_old_stopped.clone())
        .collect();
    assert_eq!(a2o.len(), 45);
    let (lo, hi) = min_max(&a2o);
    assert!((median(&a2o) - 82.0).abs() < 0.5, "{}", median(&a2o));
    assert!(
        (lo - 75.70).abs() < 0.05 && (hi - 87.05).abs() < 0.05,
        "{lo} {hi}"
    );
    eprintln!("accepted differences: {ACCEPTED:#?}");
}

#[test]
fn recording_restart_replaces_one_replica_at_a_time() {
    let tl = recording();
    let rs = parity::restarts(&tl);
    assert_eq!(rs.len(), 1, "one revision restart in the export");
    let r = &rs[0];
    assert_eq!(r.rev, 15);
    assert_eq!((r.old_count, r.replacements), (3, 3));
    let rev = &tl.revisions[15];
    assert_eq!(
        rev.sets.len(),
        4,
        "the initial set, then 3 single replacements"
    );
    assert!(rev.sets[1..].iter().all(|s| s.len() == 1));
    // The revision's reasons in order: the initial set, then assign / start / (next assign,
    // old stop) one replica at a time.
    assert_eq!(revision_kinds(&tl, 15)[6..], restart_signature());
    assert_eq!(r.step_interval.len(), 2);
    assert!(
        (r.step_interval[0] - 43.82).abs() < 0.05,
        "{:?}",
        r.step_interval
    );
    assert!(
        (r.step_interval[1] - 42.10).abs() < 0.05,
        "{:?}",
        r.step_interval
    );
    let (lo, hi) = min_max(&r.started_to_old_stopped);
    assert!(lo > 27.8 && hi < 28.4, "{:?}", r.started_to_old_stopped);
    let (lo, hi) = min_max(&r.assigned_to_started);
    assert!(lo > 13.7 && hi < 17.2, "{:?}", r.assigned_to_started);
}

/// docs/FIDELITY.md's parity table quotes the recording as the suite reads it: each row's
/// "recorded" cell holds the figures computed here from the export, rounded as printed, so the
/// table cannot drift from the recording (or from the normaliser) unnoticed.
#[test]
fn fidelity_parity_table_quotes_the_recording() {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/FIDELITY.md"),
    )
    .unwrap();
    let row = |behaviour: &str| -> String {
        doc.lines()
            .find(|l| l.starts_with(&format!("| {behaviour} |")))
            .unwrap_or_else(|| panic!("FIDELITY.md has no parity row {behaviour:?}"))
            .to_owned()
    };
    // The "recorded" cell: the fourth `|`-separated field.
    let recorded = |behaviour: &str| -> String {
        row(behaviour)
            .split('|')
            .nth(3)
            .unwrap_or_default()
            .trim()
            .to_owned()
    };
    let tl = recording();
    let ro = parity::rollouts(&tl);
    let rs = parity::restarts(&tl);
    let all = |f: fn(&parity::Rollout) -> &Vec<f64>| -> Vec<f64> {
        ro.iter().flat_map(|r| f(r).clone()).collect()
    };
    let a2s = all(|r| &r.assigned_to_started);
    let a2o = all(|r| &r.assigned_to_old_stopped);
    let (lo, hi) = min_max(&a2s);
    let want = format!("median {:.1} s ({:.1}–{:.1} s)", median(&a2s), lo, hi);
    let got = recorded("assigned → started");
    assert!(got.contains(&want), "{got:?} does not say {want:?}");
    let (lo, hi) = min_max(&a2o);
    let want = format!("median {:.1} s ({:.1}–{:.1} s)", median(&a2o), lo, hi);
    let got = recorded("assigned → old revision `ManuallyStopped`");
    assert!(got.contains(&want), "{got:?} does not say {want:?}");
    let r = &rs[0];
    let want = format!("{:.1} s, {:.1} s", r.step_interval[0], r.step_interval[1]);
    let got = recorded("restart step interval");
    assert!(got.contains(&want), "{got:?} does not say {want:?}");
    let (lo, hi) = min_max(&r.started_to_old_stopped);
    let want = format!("{lo:.1}–{hi:.1} s");
    let got = recorded("restart: new started → old stopped (time to ready)");
    assert!(got.contains(&want), "{got:?} does not say {want:?}");
}

/// The recorded timings in `localplane::timings` are what the recording says.
#[test]
fn recorded_timings_are_derived_from_the_recording() {
    let tl = recording();
    let (a2s, a2o, _, s2o) = recorded_medians(&tl);
    let all: Vec<f64> = parity::rollouts(&tl)
        .iter()
        .flat_map(|r| r.assigned_to_started.clone())
        .chain(
            parity::restarts(&tl)
                .iter()
                .flat_map(|r| r.assigned_to_started.clone()),
        )
        .collect();
    // 48 starts: 45 of the 15 rollouts and 3 of the restart's replacements.
    assert_eq!(all.len(), 48);
    assert!(
        (median(&all) - timings::RECORDED_PROVISION_S).abs() < 0.5,
        "{}",
        median(&all)
    );
    let linger = a2o - a2s - s2o;
    assert!(
        (linger - timings::RECORDED_OLD_REVISION_LINGER_S).abs() < 1.0,
        "derived linger {linger:.1} s"
    );
}

/// The ARM view of the rollouts (q3): Azure reports weight 100 on the new revision at once and
/// keeps the old one active with weight 0 (see ACCEPTED).
#[test]
fn recording_revision_states_show_the_weight_moving_first() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(Q3);
    let rows: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(rows.len(), 8477);
    let mut events = std::collections::BTreeMap::<String, Vec<&Value>>::new();
    for r in &rows {
        if r["event_kind"] == "RevisionStateSample" {
            events
                .entry(r["perturbation_id"].as_str().unwrap().to_string())
                .or_default()
                .push(r);
        }
    }
    assert_eq!(events.len(), 12);
    for (id, mut samples) in events {
        samples.sort_by(|a, b| a["client_ts"].as_str().cmp(&b["client_ts"].as_str()));
        // The newest revision of the window: the one with the highest number.
        let newest = samples
            .iter()
            .map(|s| s["revision"].as_str().unwrap())
            .filter(|r| !r.ends_with("bxdkxgx"))
            .max()
            .unwrap()
            .to_string();
        let first = samples
            .iter()
            .find(|s| s["revision"] == newest.as_str() && s["active"] == "True")
            .unwrap();
        assert_eq!(first["traffic_weight"], "100", "{id}: {first}");
        // Meanwhile the previous revision is still active with 3 replicas and weight 0.
        assert!(
            samples.iter().any(|s| s["revision"] != newest.as_str()
                && s["active"] == "True"
                && s["replicas"] == "3"
                && s["traffic_weight"] == "0"),
            "{id}"
        );
    }
}

/// The kinds of revision `k`'s rows in the order they were written.
fn revision_kinds(tl: &Timeline, k: usize) -> Vec<String> {
    tl.revisions[k].kinds()
}

fn restart_signature() -> Vec<String> {
    [
        "AssigningReplica",
        "ContainerStarted",
        "AssigningReplica",
        "ContainerTerminated:ManuallyStopped",
        "ContainerStarted",
        "AssigningReplica",
        "ContainerTerminated:ManuallyStopped",
        "ContainerStarted",
        "ContainerTerminated:ManuallyStopped",
    ]
    .map(String::from)
    .to_vec()
}

// ---------------------------------------------------------------------------------------------
// Replaying the scenarios on localplane.

/// The recorded app: 3 replicas, bind-late startup of `25 s × factor`, the lab's probes with
/// their periods scaled by `factor`.
fn recorded_app(factor: f64, generation: u32) -> Value {
    let tag = if factor == 1.0 {
        "recorded".to_string()
    } else {
        format!("recorded:{factor}")
    };
    // The lab's probes; their periods scale too (whole seconds, at least 1), as the time from
    // start to ready is the startup delay plus up to one readiness period.
    let secs = |s: f64| ((s * factor).round() as u64).max(1);
    let probes = json!([
        {"type": "Startup", "httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 1, "timeoutSeconds": 1, "failureThreshold": 60},
        {"type": "Readiness", "httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": secs(5.0), "timeoutSeconds": secs(3.0), "failureThreshold": 3},
        {"type": "Liveness", "httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": secs(10.0), "timeoutSeconds": secs(5.0), "failureThreshold": 3},
    ]);
    let mut b = subject_app(
        json!([
            {"name": "STARTUP_DELAY_SECONDS", "value": format!("{}", 25.0 * factor)},
            {"name": "STARTUP_MODE", "value": "bind-late"},
            {"name": "ROLLOUT_GENERATION", "value": generation.to_string()},
        ]),
        3,
        probes,
    );
    b["tags"] = json!({ timings::TAG_TIMINGS: tag });
    b
}

/// The `subject` app of `labs/startup-degraded.toml`'s full profile as the runner deploys it
/// (`lab::arm_body`, the lab's `localplane_timings` as the `localplane.timings` tag), at rollout
/// generation `generation` (the runner's rollout action sets `ROLLOUT_GENERATION`).
fn startup_degraded_full_app(generation: u32) -> Value {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../labs/startup-degraded.toml");
    let lab = lab::load(&path, "full").unwrap();
    let mut app = lab.app("subject").unwrap().clone();
    app.env
        .insert("ROLLOUT_GENERATION".into(), generation.to_string());
    let env_id = format!(
        "/subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.App/managedEnvironments/env"
    );
    let app = lab::arm_body::container_app(
        &app,
        &lab::arm_body::Placement {
            location: "local",
            environment_id: &env_id,
            simulate_token: None,
            tags: &[(timings::TAG_TIMINGS, lab.localplane_timings.as_str())],
            registry: None,
        },
    );
    serde_json::to_value(app).expect("a typed ContainerApp serialises")
}

/// The lab file's full-profile app is what localplane accepts, with the recorded timings and the
/// recorded shape (no localplane run: the Docker variant below deploys it).
#[test]
fn startup_degraded_full_app_gets_recorded_timings() {
    let body = startup_degraded_full_app(3);
    let knobs = localplane::model::Knobs::from_tags(body.get("tags")).unwrap();
    assert_eq!(knobs.timings, timings::Timings::recorded(1.0));
    let props = &body["properties"];
    let t =
        localplane::model::parse_template(&props["template"], props.get("configuration")).unwrap();
    let c = &t.containers[0];
    assert_eq!(t.replica_count(), 3);
    assert_eq!(c.probes.len(), 3, "{c:?}");
    for (k, v) in [
        ("STARTUP_DELAY_SECONDS", "25"),
        ("STARTUP_MODE", "bind-late"),
        ("ROLLOUT_GENERATION", "3"),
    ] {
        assert!(
            c.env.iter().any(|(n, x)| n == k && x == v),
            "{k}={v} in {:?}",
            c.env
        );
    }
}

/// Creates the app (`body(0)`), runs `rollouts` env-change rollouts (`body(1)`, ...; each waits
/// until the old revision's replicas are stopped), then, with `restart`, one revision restart of
/// the latest revision (waits until its 3 old replicas are stopped). `factor` scales the waits.
/// Returns the normalised localplane timeline.
async fn replay(
    lab: &Plane,
    app: &str,
    body: impl Fn(u32) -> Value,
    factor: f64,
    rollouts: u32,
    restart: bool,
) -> Timeline {
    let limit = Duration::from_secs_f64(240.0 * factor.max(0.25));
    let (code, h, v) = lab
        .call("PUT", &format!("{}?{AV}", lab.app_url(app)), Some(body(0)))
        .await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(lab.wait_op(&h, limit).await, "Succeeded");
    let stopped = |lab: &Plane| {
        lab.system_rows()
            .iter()
            .filter(|r| {
                r["ContainerAppName_s"] == app
                    && r["Log_s"]
                        .as_str()
                        .is_some_and(|l| l.contains("reason 'ManuallyStopped'"))
            })
            .count()
    };
    for g in 1..=rollouts {
        let (code, h, v) = lab
            .call("PUT", &format!("{}?{AV}", lab.app_url(app)), Some(body(g)))
            .await;
        assert_eq!(code, 201, "{v}");
        assert_eq!(lab.wait_op(&h, limit).await, "Succeeded");
        let want = 3 * g as usize;
        eventually(
            limit,
            "the old revision's 3 replicas ManuallyStopped",
            || async { (stopped(lab) >= want).then_some(()) },
        )
        .await;
    }
    if restart {
        let (_, _, v) = lab
            .call("GET", &format!("{}?{AV}", lab.app_url(app)), None)
            .await;
        let rev = v["properties"]["latestRevisionName"]
            .as_str()
            .unwrap()
            .to_string();
        let (code, _, v) = lab
            .call(
                "POST",
                &format!("{}/revisions/{rev}/restart?{AV}", lab.app_url(app)),
                None,
            )
            .await;
        assert_eq!(code, 200, "{v}");
        let want = 3 * rollouts as usize + 3;
        eventually(
            limit * 2,
            "the restart's 3 old replicas ManuallyStopped",
            || async { (stopped(lab) >= want).then_some(()) },
        )
        .await;
    }
    let text = std::fs::read_to_string(
        lab.plane
            .evidence_dir()
            .join("logs/ContainerAppSystemLogs_CL.ndjson"),
    )
    .unwrap();
    parity::timeline(&parity::rows_from_ndjson(&text, app).unwrap())
}

/// Compares a localplane rollout timeline with the recording: reasons exactly, intervals ±20 %.
fn compare_rollouts(lp: &Timeline, factor: f64) {
    let rec = recording();
    let (a2s, a2o, _, _) = recorded_medians(&rec);
    let ro = parity::rollouts(lp);
    assert!(!ro.is_empty(), "no rollout in {lp:?}");
    // (a) per replica and per revision: the old revision as recorded (R1 of the recording:
    // created by a rollout, replaced by the next), the new one as recorded up to where the
    // export's next rollout begins.
    for r in &ro {
        // Per rollout: 3 AssigningReplica and 3 ContainerStarted rows for the new revision's
        // replicas, 3 ManuallyStopped rows for the old one's (the initial sets: a revision
        // restarted later has more replicas).
        let count = |k: usize, kind: &str| {
            let rev = &lp.revisions[k];
            rev.sets[0]
                .iter()
                .flat_map(|&i| rev.replicas[i].kinds())
                .filter(|x| *x == kind)
                .count()
        };
        assert_eq!(count(r.new, "AssigningReplica"), 3, "{lp:?}");
        assert_eq!(count(r.new, "ContainerStarted"), 3, "{lp:?}");
        assert_eq!(
            count(r.old, "ContainerTerminated:ManuallyStopped"),
            3,
            "{lp:?}"
        );
        let old = &lp.revisions[r.old];
        for rep in &old.replicas {
            assert_eq!(
                rep.kinds(),
                rec.revisions[1].replicas[0].kinds(),
                "{}",
                rep.label
            );
        }
        assert_eq!(
            revision_kinds(lp, r.old),
            revision_kinds(&rec, 1),
            "{}",
            old.label
        );
        let new = revision_kinds(lp, r.new);
        assert_eq!(
            new[..6],
            revision_kinds(&rec, 2)[..6],
            "{}",
            lp.revisions[r.new].label
        );
    }
    // (b) intervals.
    let got_a2s: Vec<f64> = ro
        .iter()
        .flat_map(|r| r.assigned_to_started.clone())
        .collect();
    let got_a2o: Vec<f64> = ro
        .iter()
        .flat_map(|r| r.assigned_to_old_stopped.clone())
        .collect();
    within("assigned -> started", median(&got_a2s), a2s * factor);
    within(
        "assigned -> old revision stopped",
        median(&got_a2o),
        a2o * factor,
    );
    within(
        "switch -> old stopped (assigned -> old stopped minus assigned -> started + ready)",
        median(&got_a2o) - median(&got_a2s),
        (a2o - a2s) * factor,
    );
}

fn compare_restart(lp: &Timeline, factor: f64) {
    let rec = recording();
    let (_, _, step, s2o) = recorded_medians(&rec);
    let rs = parity::restarts(lp);
    assert_eq!(rs.len(), 1, "{lp:?}");
    let r = &rs[0];
    assert_eq!((r.old_count, r.replacements), (3, 3));
    assert!(lp.revisions[r.rev].sets[1..].iter().all(|s| s.len() == 1));
    assert_eq!(revision_kinds(lp, r.rev)[6..], restart_signature());
    within(
        "restart step interval",
        median(&r.step_interval),
        step * factor,
    );
    within(
        "restart started -> old stopped (time to ready)",
        median(&r.started_to_old_stopped),
        s2o * factor,
    );
    within(
        "restart assigned -> started",
        median(&r.assigned_to_started),
        median(&parity::restarts(&rec)[0].assigned_to_started) * factor,
    );
}

/// A quarter of the recorded durations (startup 6.25 s, provisioning 4 s, linger 9.5 s).
const SCALED: f64 = 0.25;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollout_and_restart_scaled_process() {
    let lab = Plane::process().await;
    let lp = replay(&lab, "parity", |g| recorded_app(SCALED, g), SCALED, 2, true).await;
    compare_rollouts(&lp, SCALED);
    compare_restart(&lp, SCALED);
    lab.stop().await;
}

/// The same at the recorded durations on Docker, with `labs/startup-degraded.toml`'s full-profile
/// app itself (3 replicas, 25 s bind-late startup, the lab's probes, `recorded` timings): one
/// rollout of one app and one revision restart of another, at once (the two scenarios share
/// nothing but the machine; together about as long as the restart alone).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollout_and_restart_full_docker() {
    let Some(_docker) = testkit::docker::require_docker().await else {
        return;
    };
    // What makes this the lab's full profile: its shape and its timings.
    let body = startup_degraded_full_app(0);
    assert_eq!(body["tags"][timings::TAG_TIMINGS], "recorded");
    assert_eq!(body["properties"]["template"]["scale"]["minReplicas"], 3);
    let env = &body["properties"]["template"]["containers"][0]["env"];
    assert!(
        env.as_array()
            .unwrap()
            .iter()
            .any(|e| e["name"] == "STARTUP_DELAY_SECONDS" && e["value"] == "25"),
        "{env}"
    );
    let Some(lab) = Plane::docker().await else {
        return;
    };
    let (rollout, restart) = tokio::join!(
        replay(&lab, "sd-rollout", startup_degraded_full_app, 1.0, 1, false),
        replay(&lab, "sd-restart", startup_degraded_full_app, 1.0, 0, true),
    );
    compare_rollouts(&rollout, 1.0);
    compare_restart(&restart, 1.0);
    lab.stop().await;
}

/// The rows around a rollout and a probe kill, worded as Container Apps writes them (process
/// runtime, fast timings): RevisionReady, RevisionUpdate, RevisionDeactivating,
/// RollingRevisionCompleted; a TCP startup failure; the `Killing` row before a liveness kill and
/// the exit-code row after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn system_rows_are_worded_as_azure_writes_them() {
    let lab = Plane::process().await;
    let url = format!("{}?{AV}", lab.app_url("words"));
    let body = |generation: u32| {
        subject_app(
            json!([
                {"name": "STARTUP_DELAY_SECONDS", "value": "2"},
                {"name": "STARTUP_MODE", "value": "bind-late"},
                {"name": "ROLLOUT_GENERATION", "value": generation.to_string()},
            ]),
            1,
            // Default TCP probes only: the startup probe sees connection refused for 2 s.
            json!([]),
        )
    };
    for g in 0..2 {
        let (code, h, v) = lab.call("PUT", &url, Some(body(g))).await;
        assert_eq!(code, 201, "{v}");
        assert_eq!(lab.wait_op(&h, Duration::from_secs(60)).await, "Succeeded");
    }
    let (_, _, v) = lab.call("GET", &url, None).await;
    let latest = v["properties"]["latestRevisionName"]
        .as_str()
        .unwrap()
        .to_string();
    let has = |lab: &Plane, reason: &str, log: &str| {
        lab.system_rows().iter().any(|r| {
            r["ContainerAppName_s"] == "words" && r["Reason_s"] == reason && r["Log_s"] == log
        })
    };
    eventually(
        Duration::from_secs(30),
        "RollingRevisionCompleted",
        || async {
            has(
                &lab,
                "RollingRevisionCompleted",
                &format!("Rolling revision update to '{latest}' completed"),
            )
            .then_some(())
        },
    )
    .await;
    assert!(has(
        &lab,
        "RevisionReady",
        &format!("Successfully provisioned revision '{latest}'")
    ));
    assert!(has(
        &lab,
        "RevisionUpdate",
        &format!("Setting a traffic weight of 100% for revision {latest}")
    ));
    assert!(has(
        &lab,
        "RevisionDeactivating",
        "Deactivating old revisions for ContainerApp 'words'"
    ));
    assert!(has(
        &lab,
        "ProbeFailed",
        "Probe of StartUp failed with status code: 1"
    ));
    assert!(has(
        &lab,
        "ContainerTerminated",
        "Container 'subject' was terminated with exit code '' and reason 'ManuallyStopped'"
    ));

    // A liveness probe on a path that answers 404 kills the container.
    let mut kill = subject_app(
        json!([]),
        1,
        json!([{"type": "Liveness", "httpGet": {"path": "/no-such-path", "port": 8080},
                "periodSeconds": 1, "failureThreshold": 1}]),
    );
    kill["properties"]["template"]["terminationGracePeriodSeconds"] = json!(1);
    let url = format!("{}?{AV}", lab.app_url("killed"));
    let (code, _, v) = lab.call("PUT", &url, Some(kill)).await;
    assert_eq!(code, 201, "{v}");
    let rows = eventually(
        Duration::from_secs(30),
        "a liveness kill and its exit",
        || async {
            let rows: Vec<Value> = lab
                .system_rows()
                .into_iter()
                .filter(|r| r["ContainerAppName_s"] == "killed")
                .collect();
            rows.iter()
                .any(|r| {
                    r["Log_s"]
                        .as_str()
                        .is_some_and(|l| l.contains("terminated with exit code '"))
                })
                .then_some(rows)
        },
    )
    .await;
    let logs: Vec<&str> = rows.iter().filter_map(|r| r["Log_s"].as_str()).collect();
    let at = |needle: &str| {
        logs.iter()
            .position(|l| l.starts_with(needle))
            .unwrap_or_else(|| panic!("no row starting {needle:?} in {logs:#?}"))
    };
    let killing = at("Container subject failed liveness probe, will be restarted");
    let probe_failure = at("Container 'subject' was terminated with reason 'ProbeFailure'");
    let exit = at("Container 'subject' was terminated with exit code '");
    assert!(killing < probe_failure && probe_failure < exit, "{logs:#?}");
    assert!(!logs[exit].contains("exit code ''"), "{}", logs[exit]);
    lab.stop().await;
}
