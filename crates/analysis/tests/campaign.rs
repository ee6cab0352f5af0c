//! Campaigns from fixture packs: copies of the real quick rollout pack
//! (`fixtures/quick-rollout-pack`, 3 rollouts and 2 restarts each) judged together pool their
//! events with exact bounds; an invalid run is listed and counts against `min_valid_runs`; packs
//! of two labs are refused; and planted packs (one with a 25 s outage) falsify the campaign at
//! the lab's default `falsified_runs` of 1.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use analysis::campaign::{self, CampaignError};
use analysis::{Analysis, Options, Outcome, analyze, find_lab};
use serde_json::json;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/quick-rollout-pack")
}

/// A copy of the quick rollout pack named `name` under `root`.
fn copy_pack(root: &Path, name: &str) -> PathBuf {
    let (tmp, dir) = testkit::pack::copy_fixture(&fixture(), &["lab.toml", "profile", "runs.json"]);
    let to = root.join(name);
    std::fs::rename(&dir, &to).unwrap();
    drop(tmp);
    to
}

fn analysed(dir: &Path) -> (PathBuf, Analysis) {
    let opts = Options {
        lab: find_lab(None, Some(dir)),
        ..Options::default()
    };
    (
        dir.to_path_buf(),
        analyze(&[dir.to_path_buf()], &opts).unwrap(),
    )
}

/// Removes the preflight staircase's `step` lines, so `headroom_shown` cannot pass.
fn drop_staircase(pack: &Path) {
    let f = pack.join("logs/ContainerAppConsoleLogs_CL.ndjson");
    let text = std::fs::read_to_string(&f).unwrap();
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| !l.contains(r#"\"kind\":\"step\""#))
        .collect();
    assert!(
        kept.len() < text.lines().count(),
        "the fixture has step lines"
    );
    std::fs::write(&f, kept.join("\n") + "\n").unwrap();
}

#[test]
fn three_held_runs_pool_their_events_with_exact_bounds() {
    let root = tempfile::tempdir().unwrap();
    let packs: Vec<(PathBuf, Analysis)> = (0..3)
        .map(|i| {
            analysed(&copy_pack(
                root.path(),
                &format!("startup-degraded-20261201T12000{i}Z"),
            ))
        })
        .collect();
    for (_, a) in &packs {
        assert_eq!(a.verdict.verdict, Outcome::Held, "{:?}", a.verdict.reasons);
    }
    let per_run = packs[0].1.events.len();
    assert_eq!(per_run, 5, "3 rollouts and 2 restarts");
    let c = campaign::judge(&packs).unwrap();
    assert_eq!(c.lab, "startup-degraded");
    assert_eq!(c.verdict, Outcome::Held, "{:?}", c.reasons);
    assert_eq!((c.runs.len(), c.valid_runs, c.falsified_runs), (3, 3, 0));
    assert_eq!(c.events.len(), 15);
    let b = c.bursts.unwrap();
    assert_eq!((b.with_burst, b.events), (0, 15));
    // 0 of 15: the exact upper bound is 1 - 0.025^(1/15), 21.8 %.
    assert!((b.ci95_hi_pct - 21.80).abs() < 0.01, "{b:?}");
    let r = c.pooled_error_rate.unwrap();
    let one = packs[0].1.verdict.judged_error_rate.unwrap();
    assert_eq!(r.requests, 3 * one.requests);
    assert!(
        r.hi_pct < one.hi_pct,
        "three runs bound the rate tighter than one"
    );
    assert!(c.runs.iter().all(|r| r.headroom_ratio.is_some()));
    // The report says it, and is written whole.
    let out = root.path().join("campaign");
    let files = c.write(&out).unwrap();
    assert_eq!(files.len(), 2);
    let md = std::fs::read_to_string(out.join("campaign.md")).unwrap();
    assert!(md.starts_with("# Campaign verdict: HELD"), "{md}");
    assert!(
        md.contains("- **events with a burst:** 0 of 15 (0.000 %, 95 % CI 0.000–21.802 %"),
        "{md}"
    );
    assert!(
        md.contains("the per-event burst probability is below 21.802 % at 95 %"),
        "{md}"
    );
    assert_eq!(
        md.matches("| startup-degraded-20261201T12000").count(),
        3 + 15
    );
    let j: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("campaign.json")).unwrap()).unwrap();
    assert_eq!(j["verdict"], "held");
    assert_eq!(j["bursts"]["events"], 15);
}

#[test]
fn an_invalid_run_is_listed_and_counts_against_min_valid_runs() {
    let root = tempfile::tempdir().unwrap();
    let dirs: Vec<PathBuf> = (0..3)
        .map(|i| copy_pack(root.path(), &format!("startup-degraded-20261201T12000{i}Z")))
        .collect();
    drop_staircase(&dirs[1]);
    let packs: Vec<(PathBuf, Analysis)> = dirs.iter().map(|d| analysed(d)).collect();
    assert_eq!(packs[1].1.verdict.verdict, Outcome::Invalid);
    // Default: every run must be valid.
    let c = campaign::judge(&packs).unwrap();
    assert_eq!(c.verdict, Outcome::Invalid);
    assert_eq!(c.runs.len(), 3, "the invalid run is listed");
    assert!(
        c.reasons[0].contains("2 of 3 run(s) valid, the lab requires at least 3")
            && c.reasons[0].contains("startup-degraded-20261201T120001Z"),
        "{:?}",
        c.reasons
    );
    assert_eq!(c.events.len(), 10, "only the valid runs' events are pooled");
    // The first pack's lab pre-registers 2 valid runs: the same packs hold.
    let lab = dirs[0].join("lab.toml");
    let text = std::fs::read_to_string(&lab).unwrap();
    std::fs::write(
        &lab,
        format!("{text}\n[campaign]\nruns = 3\nmin_valid_runs = 2\n"),
    )
    .unwrap();
    let packs: Vec<(PathBuf, Analysis)> = dirs.iter().map(|d| analysed(d)).collect();
    let c = campaign::judge(&packs).unwrap();
    assert_eq!(c.verdict, Outcome::Held, "{:?}", c.reasons);
    assert_eq!(c.runs[1].verdict, Outcome::Invalid);
}

#[test]
fn packs_of_two_labs_are_not_one_campaign() {
    let root = tempfile::tempdir().unwrap();
    let a = analysed(&copy_pack(root.path(), "startup-degraded-20261201T120000Z"));
    let b = analysed(&copy_pack(root.path(), "other-lab-20261201T120000Z"));
    let err = campaign::judge(&[a, b]).unwrap_err();
    assert!(matches!(err, CampaignError::Mixed { .. }), "{err}");
    assert!(matches!(
        campaign::judge(&[]).unwrap_err(),
        CampaignError::NoPacks
    ));
}

/// A planted pack: 80 s at 200 RPS with every request failing from `outage_from_s` for
/// `outage_s` (none when 0).
fn planted(root: &Path, name: &str, outage_from_s: i64, outage_s: i64) -> (PathBuf, Analysis) {
    let t0 = 1_781_273_900_i64;
    let dir = root.join(name).join("logs");
    std::fs::create_dir_all(&dir).unwrap();
    let mut text = String::new();
    for w in 0..8_i64 {
        let (a, b) = (w * 10, w * 10 + 10);
        let overlap = (b.min(outage_from_s + outage_s) - a.max(outage_from_s)).max(0);
        let err = if outage_s == 0 { 0 } else { overlap * 200 };
        let line = json!({"kind": "bucket",
            "ts": logline::Timestamp::from_epoch_ms((t0 + b) * 1000).to_rfc3339_ms(),
            "run_id": "perturbation-planted", "window_s": 10, "bucket_start_epoch_s": t0 + a,
            "bucket_start_iso": logline::Timestamp::from_epoch_ms((t0 + a) * 1000).to_rfc3339_ms(),
            "count": 2000, "ok": 2000 - err, "err": err,
            "err_pct": err as f64 / 20.0, "target_rps": 200});
        text.push_str(&format!("{line}\n"));
    }
    std::fs::write(dir.join("loadgen.ndjson"), text).unwrap();
    let pack = root.join(name);
    (pack.clone(), analyze(&[pack], &Options::default()).unwrap())
}

#[test]
fn one_falsified_run_falsifies_the_campaign_by_default() {
    let root = tempfile::tempdir().unwrap();
    let packs = vec![
        planted(root.path(), "planted-20261201T120000Z", 0, 0),
        planted(root.path(), "planted-20261201T120001Z", 12, 25),
        planted(root.path(), "planted-20261201T120002Z", 0, 0),
    ];
    let c = campaign::judge(&packs).unwrap();
    assert_eq!(c.verdict, Outcome::Falsified, "{:?}", c.reasons);
    assert_eq!((c.valid_runs, c.falsified_runs), (3, 1));
    let r = c.pooled_error_rate.unwrap();
    assert_eq!((r.errors, r.requests), (5_000, 48_000));
    assert!(c.blindness.is_some());
}
