//! Every lab in `labs/` parses, validates and keeps its shape under the quick profile.

use std::path::PathBuf;
use std::time::Duration;

fn labs_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../labs")
}

const CATALOGUE: [&str; 37] = [
    "startup-degraded",
    "startup-degraded-misconfigured",
    "dependency-coupled-probes",
    "liveness-failure-patterns",
    "worker-saturation",
    "rolling-drain",
    "scale-to-zero-cold-start",
    "scale-to-zero-cold-start-lying-readiness",
    "scale-in-termination",
    "scale-in-termination-short-grace",
    "ingress-timeout",
    "ingress-timeout-swapped",
    "ingress-stream-idle",
    "ingress-stream-idle-short-quiet",
    "canary-split",
    "canary-split-half",
    "blue-green-switch",
    "blue-green-switch-unready",
    "rollout-under-autoscale",
    "rollout-under-autoscale-min-3",
    "rollout-under-autoscale-reported",
    "default-probes-slow-starter",
    "default-probes-slow-starter-short-own-probe",
    "platform-maintenance",
    "platform-maintenance-one-replica",
    "failed-rollout",
    "failed-rollout-lying-readiness",
    "sticky-rollout",
    "sticky-rollout-immediate-exit",
    "job-event-drain",
    "job-event-drain-backlog",
    "job-retries-timeout",
    "job-retries-timeout-execution-deadline",
    "job-stop-grace",
    "job-stop-grace-short-cleanup",
    "job-schedule-overlap",
    "job-schedule-overlap-short-work",
];

fn total(lab: &lab::Lab) -> Duration {
    lab.steps.iter().map(lab::Step::load_duration).sum()
}

#[test]
fn the_catalogue_is_complete() {
    let mut found: Vec<String> = std::fs::read_dir(labs_dir())
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            (p.extension()? == "toml")
                .then(|| p.file_stem().unwrap().to_string_lossy().into_owned())
        })
        .collect();
    found.sort();
    let mut expected: Vec<String> = CATALOGUE.iter().map(|s| (*s).to_owned()).collect();
    expected.sort();
    assert_eq!(found, expected);
}

#[test]
fn every_lab_parses_in_both_profiles_with_the_same_shape() {
    for name in CATALOGUE {
        let path = labs_dir().join(format!("{name}.toml"));
        let full = lab::load(&path, "full").unwrap_or_else(|e| panic!("{e}"));
        let quick = lab::load(&path, "quick").unwrap_or_else(|e| panic!("{e}"));
        let steps = |l: &lab::Lab| l.steps.iter().map(|s| s.name.clone()).collect::<Vec<_>>();
        let apps = |l: &lab::Lab| l.apps.iter().map(|a| a.name.clone()).collect::<Vec<_>>();
        assert_eq!(steps(&full), steps(&quick), "{name}: quick keeps the steps");
        assert_eq!(apps(&full), apps(&quick), "{name}: quick keeps the apps");
        assert_eq!(
            full.rule, quick.rule,
            "{name}: the pre-registered rule is the same in every profile"
        );
        assert_eq!(full.checks.len(), quick.checks.len(), "{name}");
        assert!(
            total(&quick) <= total(&full),
            "{name}: quick is not longer than full"
        );
        assert!(
            total(&quick) <= Duration::from_secs(8 * 60),
            "{name}: quick runs in minutes ({:?})",
            total(&quick)
        );
    }
}

/// Labs whose full profile keeps `fast` timings, each with why (never silently).
const FAST_IN_FULL: &[(&str, &str)] = &[(
    "rolling-drain",
    "with recorded timings the old revision leaves routing at the switch and gets SIGTERM 38 s \
     later, so no request is in flight at SIGTERM and the grace-period scenarios the lab \
     reproduces would not happen",
)];

/// The full profiles run on localplane with the timings recorded on Container Apps; the quick
/// profiles keep CI short with `fast` (the runner records the choice in runs.json and the report
/// prints it).
#[test]
fn full_profiles_use_recorded_timings_and_quick_ones_fast() {
    for name in CATALOGUE {
        let path = labs_dir().join(format!("{name}.toml"));
        let full = lab::load(&path, "full").unwrap();
        let quick = lab::load(&path, "quick").unwrap();
        let want = match FAST_IN_FULL.iter().find(|(n, _)| *n == name) {
            Some((_, why)) => {
                eprintln!("{name}: full profile fast: {why}");
                lab::LocalplaneTimings::Fast
            }
            None => lab::LocalplaneTimings::Recorded,
        };
        assert_eq!(full.localplane_timings, want, "{name}: full profile");
        assert_eq!(
            quick.localplane_timings,
            lab::LocalplaneTimings::Fast,
            "{name}: quick profile"
        );
    }
    // A value localplane does not know is a schema error with its key, not a silent default.
    let text = std::fs::read_to_string(labs_dir().join("worker-saturation.toml")).unwrap();
    assert!(!FAST_IN_FULL.iter().any(|(n, _)| *n == "worker-saturation"));
    let bad = text.replacen(
        "localplane_timings = \"recorded\"",
        "localplane_timings = \"slow\"",
        1,
    );
    assert_ne!(bad, text);
    let err = lab::parse(&bad, "w.toml".as_ref(), "full")
        .unwrap_err()
        .to_string();
    assert!(err.contains("localplane_timings"), "{err}");
}

#[test]
fn the_rollout_lab_keeps_the_original_numbers_in_full() {
    let lab = lab::load(&labs_dir().join("startup-degraded.toml"), "full").unwrap();
    let rule = lab.rule.as_ref().unwrap();
    assert_eq!(
        (rule.window.as_str(), rule.consecutive, rule.threshold_pct),
        ("10s", 3, 0.5)
    );
    let app = lab.app("subject").unwrap();
    assert_eq!(app.env["STARTUP_DELAY_SECONDS"], "25");
    assert_eq!(app.replicas, Some(3));
    assert_eq!(lab.load[0].rate, Some(200.0));
    assert_eq!(lab.load[0].connection, "close");
    let perturbation = lab.steps.iter().find(|s| s.name == "perturbation").unwrap();
    assert_eq!(perturbation.events, Some(12));
    assert_eq!(perturbation.interval.as_deref(), Some("600s"));
}

#[test]
fn the_positive_control_differs_only_by_the_lie() {
    let good = lab::load(&labs_dir().join("startup-degraded.toml"), "quick").unwrap();
    let bad = lab::load(
        &labs_dir().join("startup-degraded-misconfigured.toml"),
        "quick",
    )
    .unwrap();
    assert_eq!(good.hypothesis.text, bad.hypothesis.text);
    assert_eq!(good.hypothesis.expect.as_deref(), Some("held"));
    assert_eq!(bad.hypothesis.expect.as_deref(), Some("falsified"));
    let env = &bad.app("subject").unwrap().env;
    assert_eq!(env["WARM_READY_LIES"], "true");
    assert_eq!(env["STARTUP_MODE"], "bind-early");
}

/// The stream-idle control is the lab with one change: its quiet stream sends its byte at 239 s,
/// not 241 s (under the 240 s idle timeout, so the check that it is cut must fail). Beside it,
/// only what names the file differs: title, question, source and the expected verdict.
#[test]
fn the_stream_idle_control_differs_only_by_the_quiet_stream() {
    let lab = lab::load(&labs_dir().join("ingress-stream-idle.toml"), "quick").unwrap();
    let control = lab::load(
        &labs_dir().join("ingress-stream-idle-short-quiet.toml"),
        "quick",
    )
    .unwrap();
    assert_eq!(lab.hypothesis.expect.as_deref(), Some("held"));
    assert_eq!(control.hypothesis.expect.as_deref(), Some("falsified"));
    let mut twin = lab.clone();
    twin.title.clone_from(&control.title);
    twin.question.clone_from(&control.question);
    twin.source.clone_from(&control.source);
    twin.hypothesis
        .expect
        .clone_from(&control.hypothesis.expect);
    let mut changed = 0;
    for a in twin.load.iter_mut().flat_map(|l| l.also.iter_mut()) {
        if a.contains("interval=241,") {
            *a = a.replace("interval=241,", "interval=239,");
            changed += 1;
        }
    }
    assert_eq!(changed, 1, "the lab's quiet stream is quiet for 241 s");
    assert_eq!(twin, control);
}

#[test]
fn typos_and_dangling_references_are_rejected_with_the_place() {
    let base = std::fs::read_to_string(labs_dir().join("worker-saturation.toml")).unwrap();
    let typo = base.replace("replicas = 1", "replica = 1");
    let err = lab::parse(&typo, "w.toml".as_ref(), "full")
        .unwrap_err()
        .to_string();
    assert!(err.contains("w.toml") && err.contains("replica"), "{err}");
    let dangling = base.replace("target = \"single-worker\"", "target = \"nobody\"");
    let err = lab::parse(&dangling, "w.toml".as_ref(), "full")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("target app \"nobody\" is not defined"),
        "{err}"
    );
    let bad_duration = base.replace("duration = \"20s\"", "duration = \"20 seconds\"");
    let err = lab::parse(&bad_duration, "w.toml".as_ref(), "full")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("steps[0].duration (step \"baseline\")"),
        "{err}"
    );
    let err = lab::parse(&base, "w.toml".as_ref(), "nightly")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("\"nightly\" is not defined: no [profiles.nightly] (defined: full, quick)"),
        "{err}"
    );
}
