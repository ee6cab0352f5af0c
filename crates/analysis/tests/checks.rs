//! An observation lab's `[[checks]]` on a hand-made pack (`fixtures/observation-pack`, written
//! by `fixtures/make_observation_pack.py`): one passing and one failing case per kind, the
//! cases that cannot be evaluated, and the verdict each mix gives.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use analysis::judge::verdict::Status;
use analysis::{Analysis, Options, Outcome, analyze, find_lab};

fn pack(checks: &str, with_runs: bool) -> (tempfile::TempDir, PathBuf) {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/observation-pack");
    let files: &[&str] = if with_runs { &["runs.json"] } else { &[] };
    let (dir, dst) = testkit::pack::copy_fixture(&src, files);
    let lab = format!(
        "title = \"fixture\"\nkind = \"observation\"\n[hypothesis]\ntext = \"checks\"\n\n[[apps]]\nname = \"rl\"\nimage = \"probelab/subject:dev\"\n\n{checks}"
    );
    std::fs::write(dst.join("lab.toml"), testkit::pack::complete_lab(&lab)).unwrap();
    (dir, dst)
}

fn analyse(dir: &Path) -> Analysis {
    let opts = Options {
        lab: find_lab(None, Some(dir)),
        ..Options::default()
    };
    analyze(&[dir.to_path_buf()], &opts).unwrap()
}

fn run(checks: &str) -> Analysis {
    let (_t, dir) = pack(checks, true);
    analyse(&dir)
}

fn gate<'a>(a: &'a Analysis, name: &str) -> &'a analysis::Gate {
    let full = format!("check:{name}");
    a.gates
        .iter()
        .find(|g| g.name == full)
        .unwrap_or_else(|| panic!("no gate {full}: {:#?}", a.gates))
}

fn assert_statuses(a: &Analysis, want: &[(&str, Status)]) {
    for (name, st) in want {
        let g = gate(a, name);
        assert_eq!(g.status, *st, "{name}: {} {}", g.detail, g.numbers);
    }
}

const LOAD_CHECKS: &str = r#"
[[checks]]
name = "ro sheds with 503"
kind = "status_seen"
load = "ro"
step = "outage"
status = 503

[[checks]]
name = "rl never answers 503"
kind = "status_seen"
load = "rl"
step = "outage"
status = 503

[[checks]]
name = "baseline clean"
kind = "no_errors"
load = "ro"
step = "baseline"

[[checks]]
name = "outage clean"
kind = "no_errors"
load = "ro"
step = "outage"

[[checks]]
name = "outage errors"
kind = "errors_at_least"
load = "rl"
step = "outage"
min = 20

[[checks]]
name = "too many errors"
kind = "errors_at_least"
load = "ro"
step = "outage"
min = 17

[[checks]]
name = "ro recovers"
kind = "recovers"
load = "ro"
step = "outage"

[[checks]]
name = "rl recovers"
kind = "recovers"
load = "rl"
step = "outage"

[[checks]]
name = "baseline recovers"
kind = "recovers"
load = "ro"
step = "baseline"
"#;

#[test]
fn load_checks_pass_and_fail() {
    let a = run(LOAD_CHECKS);
    assert_statuses(
        &a,
        &[
            ("ro sheds with 503", Status::Pass),
            ("rl never answers 503", Status::Fail),
            ("baseline clean", Status::Pass),
            ("outage clean", Status::Fail),
            ("outage errors", Status::Pass),
            ("too many errors", Status::Fail),
            ("ro recovers", Status::Pass),
            ("rl recovers", Status::Fail),
            ("baseline recovers", Status::Fail),
        ],
    );
    let g = gate(&a, "ro sheds with 503");
    assert_eq!(g.numbers["seen"], 16);
    assert_eq!(g.numbers["run_ids"][0], "outage-ro");
    // The windows with 503s, as Q2 rows.
    assert_eq!(g.rows.len(), 2, "{:?}", g.rows);
    assert!(g.rows[0].starts_with("q2-buckets-10s#"));
    assert_eq!(gate(&a, "outage errors").numbers["errors"], 20);
    assert_eq!(gate(&a, "too many errors").numbers["errors"], 16);
    assert_eq!(a.verdict.verdict, Outcome::Falsified, "{:?}", a.verdict);
    assert!(a.verdict.falsified);
}

const EVENT_CHECKS: &str = r#"
[[checks]]
name = "rl restarts in a loop"
kind = "restart_count_at_least"
app = "rl"
step = "outage"
min = 2

[[checks]]
name = "rl restarts twice within 60 s"
kind = "restart_count_at_least"
app = "rl"
step = "outage"
min = 2
within = "60s"

[[checks]]
name = "single restarts within 120 s"
kind = "restart_count_at_least"
app = "single"
step = "saturate"
min = 1
within = "120s"

[[checks]]
name = "ro never restarted"
kind = "restart_count_at_most"
app = "ro"
max = 0

[[checks]]
name = "rl never restarted"
kind = "restart_count_at_most"
app = "rl"
max = 0

[[checks]]
name = "rl liveness kills"
kind = "probe_failed"
app = "rl"
probe = "Liveness"
step = "outage"
min = 3

[[checks]]
name = "ro readiness flaps"
kind = "probe_failed"
app = "ro"
probe = "readiness"
step = "outage"
min = 3

[[checks]]
name = "rl readiness first"
kind = "probe_failed_first"
app = "rl"
probe = "Readiness"
step = "outage"

[[checks]]
name = "single readiness first"
kind = "probe_failed_first"
app = "single"
probe = "Readiness"
step = "saturate"

[[checks]]
name = "rl readiness reaches 2 failures first"
kind = "probe_failed_first"
app = "rl"
probe = "Readiness"
step = "outage"
min = 2

[[checks]]
name = "rl liveness reaches 2 failures first"
kind = "probe_failed_first"
app = "rl"
probe = "Liveness"
step = "outage"
min = 2

[[checks]]
name = "blocking request lost"
kind = "action_failed"
app = "single"
step = "saturate"

[[checks]]
name = "restart lost"
kind = "action_failed"
app = "ro"
step = "saturate"
"#;

#[test]
fn event_and_action_checks_pass_and_fail() {
    let a = run(EVENT_CHECKS);
    assert_statuses(
        &a,
        &[
            ("rl restarts in a loop", Status::Pass),
            ("rl restarts twice within 60 s", Status::Fail),
            ("single restarts within 120 s", Status::Pass),
            ("ro never restarted", Status::Pass),
            ("rl never restarted", Status::Fail),
            ("rl liveness kills", Status::Pass),
            ("ro readiness flaps", Status::Fail),
            ("rl readiness first", Status::Pass),
            ("single readiness first", Status::Fail),
            // rl's one readiness failure comes first, but liveness reaches 2 failures first.
            ("rl readiness reaches 2 failures first", Status::Fail),
            ("rl liveness reaches 2 failures first", Status::Pass),
            ("blocking request lost", Status::Pass),
            ("restart lost", Status::Fail),
        ],
    );
    let n = |name: &str, k: &str| gate(&a, name).numbers[k].clone();
    assert_eq!(n("rl restarts in a loop", "restarts"), 2);
    // within: from the step's first action (10:01:05) for 60 s.
    assert_eq!(n("rl restarts twice within 60 s", "restarts"), 1);
    assert_eq!(
        n("rl restarts twice within 60 s", "from"),
        "2026-07-01T10:01:05.000Z"
    );
    assert_eq!(n("rl never restarted", "restarts"), 3);
    assert_eq!(n("rl liveness kills", "matching"), 3);
    assert_eq!(n("rl liveness kills", "any_type"), 4);
    assert_eq!(n("single readiness first", "first_type"), "liveness");
    assert_eq!(
        n("rl readiness reaches 2 failures first", "first_type"),
        "liveness"
    );
    assert_eq!(
        n("rl readiness reaches 2 failures first", "by_type"),
        serde_json::json!({"liveness": 3, "readiness": 1})
    );
    assert_eq!(gate(&a, "rl liveness kills").rows.len(), 3);
    assert_eq!(a.verdict.verdict, Outcome::Falsified);
}

#[test]
fn all_observed_is_held_and_reported() {
    let a = run(r#"
[[checks]]
name = "ro sheds with 503"
kind = "status_seen"
load = "ro"
step = "outage"
status = 503

[[checks]]
name = "rl liveness kills"
kind = "probe_failed"
app = "rl"
probe = "Liveness"
step = "outage"
min = 3
"#);
    assert_eq!(a.verdict.verdict, Outcome::Held, "{:?}", a.gates);
    assert!(!a.verdict.falsified);
    let dir = tempfile::tempdir().unwrap();
    analysis::render::pack::write(&a, dir.path(), analysis::render::pack::Parts::All).unwrap();
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(md.starts_with("# Verdict: HELD"), "{md}");
    assert!(
        md.contains(
            "[Measured] Check \"ro sheds with 503\": observed: 16 response(s) with status 503"
        ),
        "{md}"
    );
    assert!(
        md.contains("[Observed] Check \"rl liveness kills\": observed: 3 ProbeFailed"),
        "{md}"
    );
    let gates = std::fs::read_to_string(dir.path().join("gates.json")).unwrap();
    assert!(gates.contains("\"kind\": \"check\""), "{gates}");
}

#[test]
fn missing_data_is_invalid() {
    let checks = r#"
[[checks]]
name = "unknown step"
kind = "no_errors"
load = "ro"
step = "nope"

[[checks]]
name = "no such load in the step"
kind = "errors_at_least"
load = "zz"
step = "outage"

[[checks]]
name = "no lines for the scenario"
kind = "status_seen"
load = "ro"
scenario = "inflight"
step = "outage"
status = 503

[[checks]]
name = "no action for the app"
kind = "action_failed"
app = "nobody"
step = "saturate"

[[checks]]
name = "unknown kind"
kind = "latency_below"
load = "ro"

[[checks]]
name = "fine"
kind = "errors_at_least"
load = "rl"
step = "outage"
"#;
    let a = run(checks);
    for name in [
        "unknown step",
        "no such load in the step",
        "no lines for the scenario",
        "no action for the app",
        "unknown kind",
    ] {
        assert_eq!(gate(&a, name).status, Status::NotEvaluated, "{name}");
    }
    assert_eq!(gate(&a, "fine").status, Status::Pass);
    assert_eq!(a.verdict.verdict, Outcome::Invalid);
    assert!(
        a.verdict.reasons.iter().any(|r| r.contains("unknown step")),
        "{:?}",
        a.verdict.reasons
    );

    // No runs.json: nothing can be scoped.
    let (_t, dir) = pack(checks, false);
    let a = analyse(&dir);
    assert!(a.runs_file.is_err());
    assert_eq!(gate(&a, "fine").status, Status::NotEvaluated);
    assert!(gate(&a, "fine").detail.starts_with("runs.json: "));
    assert_eq!(a.verdict.verdict, Outcome::Invalid);
}

#[test]
fn restart_checks_need_system_events() {
    let (_t, dir) = pack(
        r#"
[[checks]]
name = "never restarted"
kind = "restart_count_at_most"
app = "ro"
max = 0
"#,
        true,
    );
    std::fs::remove_file(dir.join("logs/ContainerAppSystemLogs_CL.ndjson")).unwrap();
    let a = analyse(&dir);
    assert_eq!(gate(&a, "never restarted").status, Status::NotEvaluated);
    assert_eq!(a.verdict.verdict, Outcome::Invalid);
}

#[test]
fn a_lab_without_checks_is_invalid() {
    let a = run("");
    assert_eq!(a.verdict.verdict, Outcome::Invalid);
}

#[test]
fn every_catalogue_check_kind_is_evaluated() {
    let labs = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../labs");
    let mut observation = 0;
    for e in std::fs::read_dir(&labs).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "toml") {
            continue;
        }
        let lab = analysis::read::lab::read(&p).unwrap().lab;
        if lab.is_observation() {
            observation += 1;
            assert!(!lab.checks.is_empty(), "{}", p.display());
        }
        for c in &lab.checks {
            assert!(
                analysis::judge::checks::KINDS.contains(&c.kind.as_str()),
                "{}: check {:?} has kind {:?}",
                p.display(),
                c.name,
                c.kind
            );
        }
    }
    assert!(observation >= 4, "{observation} observation labs");
}

#[test]
fn restarts_are_counted_by_reason() {
    // Azure's rows: every old replica of a rollout is `ManuallyStopped`, and a probe kill is
    // followed by an `exit code '137'` row of the same replica.
    let (_t, dir) = pack(
        r#"
[[checks]]
name = "ro never restarted"
kind = "restart_count_at_most"
app = "ro"
max = 0

[[checks]]
name = "rl restarts"
kind = "restart_count_at_least"
app = "rl"
min = 3

[[checks]]
name = "rl at most 3"
kind = "restart_count_at_most"
app = "rl"
max = 3

[[checks]]
name = "crash counts"
kind = "restart_count_at_least"
app = "single"
min = 2
"#,
        true,
    );
    let row = |s: &str, app: &str, msg: &str| {
        serde_json::json!({"TimeGenerated": format!("2026-07-01T10:{s}.000Z"),
            "ContainerAppName_s": app, "RevisionName_s": format!("{app}--r1"),
            "ReplicaName_s": format!("{app}--r1-a"), "Reason_s": "ContainerTerminated",
            "Log_s": msg, "Type_s": "Warning", "EventSource_s": "ContainerAppController"})
        .to_string()
    };
    let stopped =
        "Container 'subject' was terminated with exit code '' and reason 'ManuallyStopped'";
    let extra = [
        row("01:30", "ro", stopped),
        row("01:31", "ro", stopped),
        // right after rl's probe kill at 10:01:36, no ContainerStarted between
        row(
            "01:37",
            "rl",
            "Container 'subject' was terminated with exit code '137'",
        ),
        // single: a crash after its probe kill at 10:04:40 and a restart
        row(
            "04:50",
            "single",
            "Container 'subject' was terminated with exit code '0'",
        ),
    ];
    let started = serde_json::json!({"TimeGenerated": "2026-07-01T10:04:45.000Z",
        "ContainerAppName_s": "single", "RevisionName_s": "single--r1",
        "ReplicaName_s": "single--r1-a", "Reason_s": "ContainerStarted",
        "Log_s": "Started container 'subject'", "Type_s": "Normal"})
    .to_string();
    let crash = row(
        "05:10",
        "single",
        "Container 'subject' was terminated with exit code '1'",
    );
    let p = dir.join("logs/ContainerAppSystemLogs_CL.ndjson");
    let mut text = std::fs::read_to_string(&p).unwrap();
    for l in extra.iter().chain([&started, &crash]) {
        text.push_str(l);
        text.push('\n');
    }
    std::fs::write(&p, text).unwrap();
    let a = analyse(&dir);
    assert_statuses(
        &a,
        &[
            ("ro never restarted", Status::Pass),
            ("rl restarts", Status::Pass),
            ("rl at most 3", Status::Pass),
            ("crash counts", Status::Pass),
        ],
    );
    let g = gate(&a, "ro never restarted");
    assert_eq!(g.numbers["restarts"], 0);
    assert_eq!(g.numbers["not_counted"]["ManuallyStopped"], 2);
    assert!(
        g.detail.contains("not counted: ManuallyStopped ×2"),
        "{}",
        g.detail
    );
    let g = gate(&a, "rl at most 3");
    assert_eq!(g.numbers["restarts"], 3, "{}", g.detail);
    assert_eq!(g.numbers["not_counted"]["exit 137 after probe kill"], 1);
    assert!(
        g.detail.contains(
            "ContainerTerminated rows with reason 'ProbeFailure' or a non-zero exit code"
        ),
        "{}",
        g.detail
    );
    let g = gate(&a, "crash counts");
    assert_eq!(g.numbers["by_reason"]["ProbeFailure"], 1);
    assert_eq!(g.numbers["by_reason"]["exit 1"], 1);
    assert_eq!(g.numbers["not_counted"]["exit 0"], 1);

    // A wording that names neither a reason nor an exit code cannot be counted.
    let mut text = std::fs::read_to_string(&p).unwrap();
    text.push_str(&row("02:00", "ro", "Container 'subject' went away"));
    text.push('\n');
    std::fs::write(&p, text).unwrap();
    let a = analyse(&dir);
    assert_eq!(gate(&a, "ro never restarted").status, Status::NotEvaluated);
    assert_eq!(a.verdict.verdict, Outcome::Invalid);
}

const SCALING_CHECKS: &str = r#"
[[checks]]
name = "held through a cold start"
kind = "slowest_between"
load = "ro"
step = "outage"
min = 3000
max = 10000

[[checks]]
name = "slowest just above the bound"
kind = "slowest_between"
load = "ro"
step = "outage"
min = 3401
max = 10000

[[checks]]
name = "slowest just below the bound"
kind = "slowest_between"
load = "ro"
step = "outage"
min = 1000
max = 3399

[[checks]]
name = "no max in the rl buckets"
kind = "slowest_between"
load = "rl"
step = "outage"
min = 1
max = 10000

[[checks]]
name = "woke from zero"
kind = "system_event_at_least"
app = "ro"
reason = "KEDAScaleTargetActivated"
step = "outage"

[[checks]]
name = "scaled in to 1"
kind = "system_event_at_least"
app = "ro"
reason = "SuccessfulRescale"
contains = "New size: 1;"
step = "outage"

[[checks]]
name = "two rescales"
kind = "system_event_at_least"
app = "ro"
reason = "SuccessfulRescale"
min = 2

[[checks]]
name = "three rescales"
kind = "system_event_at_least"
app = "ro"
reason = "SuccessfulRescale"
min = 3

[[checks]]
name = "no scale-in in the baseline"
kind = "system_event_at_least"
app = "ro"
reason = "SuccessfulRescale"
step = "baseline"

[[checks]]
name = "rl never scaled"
kind = "system_event_at_least"
app = "rl"
reason = "SuccessfulRescale"
"#;

#[test]
fn slowest_and_system_event_checks_pass_and_fail_at_their_bounds() {
    let a = run(SCALING_CHECKS);
    assert_statuses(
        &a,
        &[
            ("held through a cold start", Status::Pass),
            ("slowest just above the bound", Status::Fail),
            ("slowest just below the bound", Status::Fail),
            ("no max in the rl buckets", Status::NotEvaluated),
            ("woke from zero", Status::Pass),
            ("scaled in to 1", Status::Pass),
            ("two rescales", Status::Pass),
            ("three rescales", Status::Fail),
            ("no scale-in in the baseline", Status::Fail),
            ("rl never scaled", Status::Fail),
        ],
    );
    let g = gate(&a, "held through a cold start");
    assert_eq!(g.numbers["slowest_ms"], 3400.0);
    assert_eq!(g.numbers["window"], "2026-07-01T10:01:30.000Z");
    assert_eq!(
        g.rows.len(),
        1,
        "the slowest window, as a Q2 row: {:?}",
        g.rows
    );
    let g = gate(&a, "scaled in to 1");
    assert_eq!(g.numbers["count"], 1);
    assert!(
        g.detail.contains("New size: 1; reason: cooldown"),
        "{}",
        g.detail
    );
    assert_eq!(gate(&a, "two rescales").numbers["count"], 2);
    // A check that cannot be evaluated makes the whole verdict invalid.
    assert_eq!(a.verdict.verdict, Outcome::Invalid, "{:?}", a.verdict);
}

/// A canary pack written here: step `split` runs load `main` (run `split-main`) for three 10 s
/// windows of `per_window` requests each, `errs[i]` errors in window i; `canary_share` of the
/// responses come from `web--canary`, the rest from `web--stable`; the errors' `req` lines name
/// the revision in `err_rev` (`None`: no response) and only `logged` of them are written.
fn canary_pack(
    checks: &str,
    per_window: &[u64],
    errs: &[u64],
    err_rev: Option<&str>,
    logged: usize,
) -> Analysis {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pack");
    std::fs::create_dir_all(dir.join("logs")).unwrap();
    let t0 = 1_782_900_000_i64; // 2026-07-01T10:00:00Z
    let iso = |s: i64| {
        chrono::DateTime::from_timestamp(s, 0)
            .unwrap()
            .format("%Y-%m-%dT%H:%M:%S%.3fZ")
            .to_string()
    };
    let mut lines = Vec::new();
    let mut reqs = Vec::new();
    for (i, (&n, &e)) in per_window.iter().zip(errs).enumerate() {
        let start = t0 + 10 * i as i64;
        let canary = n / 10;
        lines.push(format!(
            r#"{{"kind":"bucket","ts":"{}","run_id":"split-main","window_s":10,"bucket_start_epoch_s":{start},"bucket_start_iso":"{}","count":{n},"ok":{},"err":{e},"err_pct":0.0,"target_rps":100,"scenario":"main","status":{{"200":{},"500":{e}}},"errors":{{"http_5xx":{e}}},"served_by":{{"web--stable":{},"web--canary":{canary}}}}}"#,
            iso(start + 10),
            iso(start),
            n - e,
            n - e,
            n - canary
        ));
        for k in 0..e {
            let ts = iso(start + 1 + k as i64 % 8);
            let rev = err_rev.map_or(String::new(), |r| {
                format!(r#","revision":"{r}","code":500"#)
            });
            reqs.push(format!(
                r#"{{"kind":"req","ts":"{ts}","run_id":"split-main","scenario":"main","scheduled_ts":"{ts}","dur_ms":3.0,"ok":false,"err_class":"http_5xx"{rev}}}"#
            ));
        }
    }
    lines.extend(reqs.into_iter().take(logged));
    std::fs::write(dir.join("logs/loadgen.ndjson"), lines.join("\n") + "\n").unwrap();
    let runs = serde_json::json!({
        "lab": "canary-fixture", "profile": "full", "target": "local",
        "started": iso(t0), "ended": iso(t0 + 30), "incomplete": false,
        "steps": [{"name": "split", "phase": "split", "start": iso(t0), "end": iso(t0 + 30),
                   "runs": [{"load": "main", "run_id": "split-main"}], "actions": []}]
    });
    std::fs::write(dir.join("runs.json"), runs.to_string()).unwrap();
    std::fs::write(
        dir.join("lab.toml"),
        testkit::pack::complete_lab(&format!("title = \"canary\"\nkind = \"observation\"\n[hypothesis]\ntext = \"h\"\n\n[[apps]]\nname = \"web\"\nimage = \"probelab/subject:dev\"\n\n{checks}")),
    )
    .unwrap();
    let a = analyse(&dir);
    drop(tmp);
    a
}

const CANARY_CHECKS: &str = r#"
[[checks]]
name = "rate within 1.5-2.5"
kind = "error_rate_between"
load = "main"
step = "split"
min_pct = 1.5
max_pct = 2.5
min_requests = 500

[[checks]]
name = "errors from the canary"
kind = "errors_served_by"
load = "main"
step = "split"
app = "web"
revision = "canary"

[[checks]]
name = "canary serves 9-11"
kind = "served_share_between"
load = "main"
step = "split"
app = "web"
revision = "canary"
min_pct = 9
max_pct = 11

[[checks]]
name = "canary serves 10.1-11"
kind = "served_share_between"
load = "main"
step = "split"
app = "web"
revision = "canary"
min_pct = 10.1
max_pct = 11
"#;

#[test]
fn canary_checks_pass_and_fail_at_their_bounds() {
    // 2.0 %, 1.5 % (on the lower bound) and 2.5 % (on the upper one); a 400-request tail
    // window with 0 errors is below min_requests, so it is listed, not judged.
    let a = canary_pack(
        CANARY_CHECKS,
        &[1000, 1000, 1000, 400],
        &[20, 15, 25, 0],
        Some("web--canary"),
        usize::MAX,
    );
    assert_statuses(
        &a,
        &[
            ("rate within 1.5-2.5", Status::Pass),
            ("errors from the canary", Status::Pass),
            ("canary serves 9-11", Status::Pass),
            ("canary serves 10.1-11", Status::Fail),
        ],
    );
    assert_eq!(gate(&a, "rate within 1.5-2.5").numbers["not_judged"], 1);
    // One error more or fewer at a bound falls outside it.
    for errs in [[20, 14, 25], [20, 15, 26]] {
        let a = canary_pack(
            CANARY_CHECKS,
            &[1000; 3],
            &errs,
            Some("web--canary"),
            usize::MAX,
        );
        let g = gate(&a, "rate within 1.5-2.5");
        assert_eq!(g.status, Status::Fail, "{errs:?}: {}", g.detail);
        assert_eq!(g.rows.len(), 1, "the window outside is cited: {:?}", g.rows);
    }
    // A 50/50 control's 10 % fails the rate but not the attribution.
    let a = canary_pack(
        CANARY_CHECKS,
        &[1000; 3],
        &[100; 3],
        Some("web--canary"),
        usize::MAX,
    );
    assert_statuses(
        &a,
        &[
            ("rate within 1.5-2.5", Status::Fail),
            ("errors from the canary", Status::Pass),
        ],
    );
    // Errors from the stable revision, or without a response, are not the canary's.
    for rev in [Some("web--stable"), None] {
        let a = canary_pack(CANARY_CHECKS, &[1000; 3], &[20; 3], rev, usize::MAX);
        let g = gate(&a, "errors from the canary");
        assert_eq!(g.status, Status::Fail, "{rev:?}: {}", g.detail);
    }
    // req lines that hold fewer errors than the windows: the attribution is not judged.
    let a = canary_pack(CANARY_CHECKS, &[1000; 3], &[20; 3], Some("web--canary"), 59);
    let g = gate(&a, "errors from the canary");
    assert_eq!(g.status, Status::NotEvaluated, "{}", g.detail);
    assert!(g.detail.contains("1 cannot be attributed"), "{}", g.detail);
    // And Q2 by revision says which errors came from where, and what is not attributed.
    let t = a
        .tables
        .iter()
        .find(|t| t.name == "q2-errors-by-revision")
        .unwrap();
    let rows: Vec<(String, u64)> = t
        .rows
        .iter()
        .map(|r| (r[3].as_str().unwrap().to_owned(), r[4].as_u64().unwrap()))
        .collect();
    assert_eq!(
        rows,
        [
            ("web--canary".to_owned(), 59),
            ("not attributed".to_owned(), 1)
        ]
    );
    // No window large enough: nothing judged, so not evaluated rather than passed.
    let a = canary_pack(
        CANARY_CHECKS,
        &[400; 3],
        &[8; 3],
        Some("web--canary"),
        usize::MAX,
    );
    assert_eq!(gate(&a, "rate within 1.5-2.5").status, Status::NotEvaluated);
}

/// An observation lab's runs carry their step's phase (`split`, from runs.json's step that ran
/// `split-main`), not `other`, in Q1, Q2 and the findings.
#[test]
fn an_observation_labs_runs_show_their_steps_phase() {
    let a = canary_pack(
        CANARY_CHECKS,
        &[1000; 3],
        &[20; 3],
        Some("web--canary"),
        usize::MAX,
    );
    for name in ["q1-", "q2-buckets", "q2-errors-by-revision"] {
        let t = a.table(name).unwrap();
        assert!(!t.rows.is_empty(), "{name}");
        for i in 0..t.rows.len() {
            assert_eq!(t.get(i, "phase").unwrap(), "split", "{name} row {i}");
        }
    }
    assert!(a.runs.iter().all(|r| r.phase == "split"));
    // The fixture pack's lab has no steps: runs.json's step phases are used.
    let a = run(LOAD_CHECKS);
    let q1 = a.table("q1-").unwrap();
    let phases: std::collections::BTreeSet<&str> = (0..q1.rows.len())
        .map(|i| q1.get(i, "phase").unwrap().as_str().unwrap())
        .collect();
    assert_eq!(
        phases,
        ["baseline", "outage"].into_iter().collect(),
        "{:?}",
        q1.rows
    );
}

/// An observation lab has no falsification rule: its findings say what was measured (errors,
/// windows with an error), never windows "above the threshold" of a rule it does not have.
#[test]
fn an_observation_labs_findings_speak_of_no_threshold() {
    let a = canary_pack(
        CANARY_CHECKS,
        &[1000; 3],
        &[20, 0, 25],
        Some("web--canary"),
        usize::MAX,
    );
    let texts: Vec<&str> = a.statements.iter().map(|s| s.text.as_str()).collect();
    let split = texts
        .iter()
        .find(|t| t.starts_with("split: "))
        .unwrap_or_else(|| panic!("no split finding: {texts:#?}"));
    assert_eq!(
        *split,
        "split: 45 error(s) in 3000 requests (1.500 %) over 3 windows (1 run(s)); worst window 2.500 %, 2 window(s) with an error."
    );
    for t in &texts {
        assert!(
            !t.contains("above the threshold") && !t.contains("bad windows"),
            "{t}"
        );
    }
    assert!(
        texts.iter().any(|t| t.starts_with(
            "An observation lab has no falsification rule: its windows are measured, not judged against a threshold"
        )),
        "{texts:#?}"
    );
    // report.md says the same.
    let md = analysis::render::report::render(&a, &[]);
    assert!(md.contains("2 window(s) with an error"), "{md}");
    assert!(!md.contains("above the threshold"));
}

/// `revision_state_seen` counts the sampler's samples of the app's revisions in scope with the
/// states asked for, on both sides of `min` and of each state; a scope without a sample of the
/// app cannot be evaluated; a failure lists what the revisions reported instead.
#[test]
fn revision_state_checks_pass_and_fail_at_their_bounds() {
    let (_t, dir) = pack(
        r#"
[[checks]]
name = "r2 failed"
kind = "revision_state_seen"
app = "ro"
step = "outage"
running_state = "Failed"
provisioning_state = "Failed"
health_state = "Unhealthy"

[[checks]]
name = "r2 failed twice"
kind = "revision_state_seen"
app = "ro"
step = "outage"
running_state = "Failed"
min = 2

[[checks]]
name = "failed and healthy"
kind = "revision_state_seen"
app = "ro"
step = "outage"
running_state = "Failed"
health_state = "Healthy"

[[checks]]
name = "processing twice"
kind = "revision_state_seen"
app = "ro"
step = "outage"
running_state = "Processing"
provisioning_state = "Provisioning"
min = 2

[[checks]]
name = "nothing sampled in the baseline"
kind = "revision_state_seen"
app = "ro"
step = "baseline"
running_state = "Running"

[[checks]]
name = "another app"
kind = "revision_state_seen"
app = "rl"
step = "outage"
running_state = "Running"

[[checks]]
name = "a new revision failed"
kind = "revision_state_seen"
app = "ro"
step = "outage"
running_state = "Failed"
new_revision = true

[[checks]]
name = "an older revision failed, not a new one"
kind = "revision_state_seen"
app = "ro"
step = "saturate"
running_state = "Failed"
new_revision = true

[[checks]]
name = "an older revision failed"
kind = "revision_state_seen"
app = "ro"
step = "saturate"
running_state = "Failed"
"#,
        true,
    );
    // ro--r2 was created at 10:01:05, in the outage step; ro--r1 before the run.
    let sample = |s: &str, rev: &str, p: &str, r: &str, h: &str| {
        let created = if rev == "ro--r2" {
            "10:01:05"
        } else {
            "09:00:00"
        };
        format!(
            r#"{{"kind":"RevisionStateSample","ts":"2026-07-01T10:{s}.000Z","app":"ro","revision":"{rev}","active":true,"replicas":1,"traffic_weight":0,"provisioning_state":"{p}","running_state":"{r}","health_state":"{h}","created_time":"2026-07-01T{created}Z"}}"#
        )
    };
    let lines = [
        sample("01:10", "ro--r2", "Provisioning", "Processing", "None"),
        sample("01:10", "ro--r1", "Provisioned", "Running", "Healthy"),
        sample("01:20", "ro--r2", "Provisioning", "Processing", "None"),
        sample("01:40", "ro--r2", "Failed", "Failed", "Unhealthy"),
        // In the saturate step, where ro--r2 is not new: out of the outage step's scope.
        sample("04:30", "ro--r2", "Failed", "Failed", "Unhealthy"),
    ];
    std::fs::write(dir.join("logs/sampler.ndjson"), lines.join("\n") + "\n").unwrap();
    let a = analyse(&dir);
    assert_statuses(
        &a,
        &[
            ("r2 failed", Status::Pass),
            ("r2 failed twice", Status::Fail),
            ("failed and healthy", Status::Fail),
            ("processing twice", Status::Pass),
            ("nothing sampled in the baseline", Status::NotEvaluated),
            ("another app", Status::NotEvaluated),
            ("a new revision failed", Status::Pass),
            (
                "an older revision failed, not a new one",
                Status::NotEvaluated,
            ),
            ("an older revision failed", Status::Pass),
        ],
    );
    let g = gate(&a, "an older revision failed, not a new one");
    assert!(
        g.detail.contains("of a revision created there"),
        "{}",
        g.detail
    );
    let g = gate(&a, "r2 failed twice");
    assert!(
        g.detail
            .contains("1 sample(s) of ro with runningState Failed (need >= 2)"),
        "{}",
        g.detail
    );
    assert!(
        g.detail.contains("ro--r2 Provisioning/Processing/None ×2")
            && g.detail.contains("ro--r1 Provisioned/Running/Healthy ×1"),
        "what was seen is listed: {}",
        g.detail
    );
    assert!(
        gate(&a, "r2 failed")
            .detail
            .contains("first: ro--r2 at 2026-07-01T10:01:40")
    );
    assert_eq!(a.verdict.verdict, Outcome::Invalid);
}
