//! The original lab's real exports (../shared/fixtures/anchor, beside the repository) must
//! reproduce its published numbers.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use analysis::{Analysis, Options, analyze};

fn anchor(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/anchor");
    assert!(
        dir.is_dir(),
        "anchor fixtures not found at {} (expected shared/ beside the repository clone)",
        dir.display()
    );
    dir.join(name)
}

fn run(name: &str) -> Analysis {
    analyze(&[anchor(name)], &Options::default()).unwrap()
}

fn summary<'a>(a: &'a Analysis, run_id: &str) -> &'a analysis::RunSummary {
    a.runs.iter().find(|r| r.run_id == run_id).unwrap()
}

fn worst(a: &Analysis, run_id: &str) -> f64 {
    a.q2.iter()
        .filter(|r| r.run_id == run_id)
        .map(|r| r.err_pct)
        .fold(0.0, f64::max)
}

#[test]
fn q2_export_of_the_june_12_perturbation_runs() {
    let a = run("q2-buckets-10s-sum-vus-20260613055031.json");
    assert_eq!(a.stats().unparseable, 0);
    let good = summary(&a, "perturbation-20260612150126");
    assert_eq!((good.buckets, good.requests, good.err), (726, 1_144_097, 0));
    let pre = summary(&a, "perturbation-20260612141745");
    assert_eq!((pre.buckets, pre.requests, pre.err), (147, 231_804, 1));
    assert_eq!(
        (worst(&a, "perturbation-20260612141745") * 1000.0).round() / 1000.0,
        0.067
    );
    assert!(
        a.q2.iter().all(|r| r.err_pct <= 0.5),
        "no bucket above 0.5 %"
    );
    assert!(a.streaks.is_empty());
    assert!(!a.verdict.falsified);
    assert_eq!(a.verdict.worst_bucket_err_pct, 0.067);
}

#[test]
fn qc_export_of_the_june_20_rerun() {
    let a = run("qC-k6-buckets-20260620T224056Z.json");
    assert_eq!(a.stats().unparseable, 0);
    let b = summary(&a, "baseline-20260620213447");
    assert_eq!(
        (b.phase.as_str(), b.buckets, b.requests, b.err),
        ("baseline", 30, 47_506, 0)
    );
    let p = summary(&a, "perturbation-20260620220432");
    assert_eq!(
        (p.phase.as_str(), p.buckets, p.requests, p.err),
        ("perturbation", 96, 149_699, 0)
    );
    assert!(!a.verdict.falsified);
    assert_eq!(a.verdict.verdict, analysis::Outcome::Held);
    let q6 = a.table("q6-").unwrap();
    assert_eq!(q6.get(0, "phase").unwrap(), "baseline");
    assert_eq!(q6.get(0, "requests").unwrap(), 47_506);
    assert_eq!(q6.get(1, "requests").unwrap(), 149_699);
}

#[test]
fn azures_recorded_rollouts_stop_old_replicas_without_a_restart() {
    // 15 rollouts and a revision restart: every old replica ends with
    // "... exit code '' and reason 'ManuallyStopped'", which is not a container restart.
    let a = run("q7-system-events-timeline-20260613055431.json");
    assert_eq!(a.stats().unparseable, 0);
    let kinds = analysis::read::wording::terminations(&a.acc.system);
    assert_eq!(kinds.len(), 48);
    assert!(
        kinds
            .values()
            .all(|k| k.label() == "ManuallyStopped" && !k.is_restart()),
        "{kinds:?}"
    );
    assert_eq!(a.table("restart-cadence").unwrap().rows.len(), 0);
    let started = a
        .acc
        .system
        .iter()
        .filter(|e| e.reason == "ContainerStarted")
        .count();
    assert_eq!(started, 51);
}
