//! A small rollout pack end to end: Q3/Q4/Q7, forensics with a capped attribution, cutover,
//! in-flight cut-offs, the written files and manifest, and a snapshot of report.md.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use analysis::render::pack;
use analysis::{Analysis, Options, Outcome, analyze, find_lab};

fn copy_pack() -> (tempfile::TempDir, PathBuf) {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rollout-pack");
    testkit::pack::copy_fixture(&src, &["lab.toml", "runs.json"])
}

fn analyse(dir: &Path) -> Analysis {
    let opts = Options {
        lab: find_lab(None, Some(dir)),
        ..Options::default()
    };
    analyze(&[dir.to_path_buf()], &opts).unwrap()
}

#[test]
fn rollout_pack_tables() {
    let (_t, dir) = copy_pack();
    let a = analyse(&dir);
    assert_eq!(a.stats().unparseable, 0);
    assert_eq!(a.verdict.verdict, Outcome::Held, "{:?}", a.gates);
    assert_eq!(
        a.verdict.hypothesis.as_deref(),
        Some("A rollout hides every error.")
    );

    // Q3: the transition from r1 to r2 takes two ticks (20 s).
    let q3 = a.table("q3-").unwrap();
    let tr = (0..q3.rows.len())
        .find(|&i| q3.get(i, "row_type").unwrap() == "transition")
        .unwrap();
    let detail = q3.get(tr, "detail").unwrap().as_str().unwrap();
    assert!(detail.contains("(20.0 s)"), "{detail}");

    // Q4 and Q7.
    let q4 = a.table("q4-").unwrap();
    assert_eq!(q4.get(0, "unique_revisions").unwrap(), 2);
    let q7 = a.table("q7-").unwrap();
    let count = |reason: &str, detail: &str| {
        (0..q7.rows.len())
            .find(|&i| {
                q7.get(i, "row_type").unwrap() == "count"
                    && q7.get(i, "reason").unwrap() == reason
                    && q7.get(i, "detail").unwrap() == detail
            })
            .map(|i| q7.get(i, "count").unwrap().as_u64().unwrap())
    };
    assert_eq!(count("ProbeFailed", "liveness"), Some(1));
    assert_eq!(count("ContainerTerminated", "ProbeFailure"), Some(1));
    assert_eq!(count("ContainerTerminated", "exit 137"), Some(1));

    // Forensics: the failed request's replica was terminated; the lab caps the attribution.
    // (the second row is the side stream's failed request, in the same window)
    let f = a.table("forensics").unwrap();
    assert_eq!(f.rows.len(), 2);
    assert_eq!(f.get(1, "scenario").unwrap(), "slow20");
    assert_eq!(f.get(0, "level").unwrap(), "[Correlated]");
    assert!(
        f.get(0, "attribution")
            .unwrap()
            .as_str()
            .unwrap()
            .contains("subject--r2-a")
    );
    assert!(
        a.statements
            .iter()
            .all(|s| s.level != analysis::Level::Inferred)
    );

    // Cutover: r1 then r2, overlapping.
    let c = a.table("cutover").unwrap();
    assert_eq!(c.get(0, "revision").unwrap(), "subject--r1");
    assert!(c.get(0, "overlap_with_next_s").unwrap().as_f64().unwrap() > 0.0);

    // In-flight: the side-stream request failed 3 s after its replica's SIGTERM.
    let inf = a.table("inflight").unwrap();
    assert_eq!(
        inf.get(0, "seconds_after_event").unwrap().as_f64().unwrap(),
        3.0
    );

    // Restart cadence: 60 s between the two terminations.
    let rc = a.table("restart-cadence").unwrap();
    assert_eq!(rc.get(0, "min_interval_s").unwrap().as_f64().unwrap(), 60.0);
}

#[test]
fn rollout_pack_files_manifest_and_report_snapshot() {
    let (_t, dir) = copy_pack();
    let a = analyse(&dir);
    pack::write(&a, &dir, pack::Parts::All).unwrap();
    for f in [
        "verdict.json",
        "gates.json",
        "inputs.json",
        "report.md",
        "manifest.sha256",
        "tables/q1-per-run-summary.json",
        "tables/q2-buckets-10s.tsv",
        "tables/q7-system-events.tsv",
        "report.html",
        "charts/timeline.svg",
    ] {
        assert!(dir.join(f).is_file(), "{f} missing");
    }
    let verdict: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("verdict.json")).unwrap()).unwrap();
    assert_eq!(verdict["falsified"], false);
    assert_eq!(verdict["verdict"], "held");
    // The manifest covers the logs, the lab file and every output, and nothing left as temp.
    let manifest = std::fs::read_to_string(dir.join("manifest.sha256")).unwrap();
    for f in [
        "lab.toml",
        "logs/ContainerAppSystemLogs_CL.ndjson",
        "report.md",
        "verdict.json",
    ] {
        assert!(
            manifest.lines().any(|l| l.ends_with(&format!("  {f}"))),
            "{f}"
        );
    }
    assert!(!manifest.contains(".tmp."));
    // Re-reading the pack ignores its own outputs.
    let again = analyse(&dir);
    assert_eq!(again.stats().lines, a.stats().lines);

    // Snapshot of report.md (UPDATE_SNAPSHOTS=1 rewrites it).
    let report = std::fs::read_to_string(dir.join("report.md"))
        .unwrap()
        .replace(&dir.display().to_string(), "<pack>");
    assert!(report.starts_with("# Verdict: HELD"));
    let snap = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/rollout-report.md");
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&snap, &report).unwrap();
    }
    let want = std::fs::read_to_string(&snap).unwrap_or_default();
    assert_eq!(
        report, want,
        "report.md changed; rerun with UPDATE_SNAPSHOTS=1 and review the diff"
    );
}
