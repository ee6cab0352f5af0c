//! How strong a verdict is, on planted packs: loadgen `bucket` lines of a perturbation run at
//! 200 RPS (a request every 5 ms) in which every request of one span fails, placed at every
//! offset against the 10 s windows, judged by the original rule (3 consecutive 10 s windows
//! above 0.5 %). The limits `strength::Blindness` computes are where the verdict changes: an
//! outage of 2,021 requests (10.105 s) or fewer is never caught, one of up to 4,020 is caught or
//! missed by where it falls, one of 4,021 or more always; the report says so beside the verdict,
//! with the error rate's exact interval.
#![allow(clippy::unwrap_used)]

use analysis::judge::strength::{Blindness, Visibility};
use analysis::{Analysis, Options, Outcome, Rule, analyze};
use serde_json::json;

/// The run's start (epoch s), on a window boundary.
const T0: i64 = 1_781_273_900;
/// One request every 5 ms: 200 RPS.
const STEP_MS: i64 = 5;
/// Windows in the run.
const WINDOWS: i64 = 8;

/// The bucket lines of an 80 s run whose request `k` (sent at `k × 5 ms`) fails when `fails(k)`.
fn bucket_lines(fails: impl Fn(i64) -> bool) -> String {
    let per_window = 10_000 / STEP_MS;
    let mut text = String::new();
    for w in 0..WINDOWS {
        let err = (w * per_window..(w + 1) * per_window)
            .filter(|&k| fails(k))
            .count() as i64;
        let start = T0 + 10 * w;
        let line = json!({"kind": "bucket",
            "ts": logline::Timestamp::from_epoch_ms((start + 10) * 1000).to_rfc3339_ms(),
            "run_id": "perturbation-planted", "window_s": 10, "bucket_start_epoch_s": start,
            "bucket_start_iso": logline::Timestamp::from_epoch_ms(start * 1000).to_rfc3339_ms(),
            "count": per_window, "ok": per_window - err, "err": err,
            "err_pct": 100.0 * err as f64 / per_window as f64, "target_rps": 200});
        text.push_str(&format!("{line}\n"));
    }
    text
}

fn analyse(lines: &str) -> Analysis {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("loadgen.ndjson");
    std::fs::write(&f, lines).unwrap();
    analyze(&[f], &Options::default()).unwrap()
}

/// Every request sent in [start, start + len) milliseconds fails.
fn outage(start_ms: i64, len_ms: i64) -> Analysis {
    analyse(&bucket_lines(|k| {
        let t = k * STEP_MS;
        t >= start_ms && t < start_ms + len_ms
    }))
}

/// The verdicts of an outage of `len_ms` started at every `step_ms` across one window (after a
/// first clean window, so every placement fits the run).
fn placements(len_ms: i64, step_ms: i64) -> Vec<Outcome> {
    offsets_verdicts(len_ms, (0..10_000 / step_ms).map(|i| i * step_ms))
}

fn offsets_verdicts(len_ms: i64, offsets: impl Iterator<Item = i64>) -> Vec<Outcome> {
    offsets
        .map(|o| outage(10_000 + o, len_ms).verdict.verdict)
        .collect()
}

#[test]
fn an_8_s_outage_is_held_and_the_report_says_the_rule_cannot_see_it() {
    for o in placements(8_000, 500) {
        assert_eq!(o, Outcome::Held);
    }
    let a = outage(13_000, 8_000);
    assert_eq!(a.verdict.judged_errors, 1_600);
    let md = analysis::render::report::render(&a, &[]);
    assert!(
        md.contains("- **what the rule cannot see:** At 200 RPS this rule cannot see an outage (every request failing) of 2021 requests or fewer (10.105 s)"),
        "{md}"
    );
    // The rate with its exact interval: 1,600 of 16,000 is 10 %, 9.54–10.47 %.
    let r = a.verdict.judged_error_rate.unwrap();
    assert_eq!((r.errors, r.requests), (1_600, 16_000));
    assert!(
        r.lo_pct > 9.5 && r.lo_pct < 9.6 && r.hi_pct > 10.4 && r.hi_pct < 10.5,
        "{r:?}"
    );
    assert!(
        md.contains("- **error rate:** 1600 errors in 16000 requests: 10.000 % (95 % CI "),
        "{md}"
    );
    let html = analysis::render::html::render(&a, &a.events, &Default::default());
    assert!(html.contains("<dt>what the rule cannot see</dt>"), "{html}");
}

#[test]
fn a_25_s_outage_is_falsified_wherever_it_falls() {
    for o in placements(25_000, 250) {
        assert_eq!(o, Outcome::Falsified);
    }
    let a = outage(12_345, 25_000);
    let md = analysis::render::report::render(&a, &[]);
    assert!(md.contains("- **bursts:** "), "{md}");
    // Each burst's interval is in Q5 too.
    let q5 = a.table("q5-").unwrap();
    assert!(q5.get(0, "err_pct_ci95_hi").unwrap().as_f64().unwrap() <= 100.0);
    assert!(q5.get(0, "err_pct_ci95_lo").unwrap().as_f64().unwrap() > 50.0);
}

#[test]
fn the_computed_limits_are_where_the_verdict_changes() {
    let b = Blindness::of(&Rule::default(), 200.0);
    let never = b.never_caught_up_to.unwrap().requests;
    let always = b.always_caught_from.unwrap().requests;
    // Placements: every request (5 ms) in the first and the last 100 ms of a window, where an
    // outage's ends decide, and every 250 ms between.
    let offsets = || {
        (0..20)
            .map(|i| i * STEP_MS)
            .chain((1..40).map(|i| i * 250))
            .chain((0..20).map(|i| 9_900 + i * STEP_MS))
    };
    for (m, expect) in [
        (never, Visibility::Never),
        (never + 1, Visibility::DependsOnPlacement),
        (always - 1, Visibility::DependsOnPlacement),
        (always, Visibility::Always),
    ] {
        assert_eq!(b.outage(m), expect, "{m}");
        let got = offsets_verdicts(m as i64 * STEP_MS, offsets());
        let caught = got.iter().filter(|o| **o == Outcome::Falsified).count();
        let seen = match caught {
            0 => Visibility::Never,
            n if n == got.len() => Visibility::Always,
            _ => Visibility::DependsOnPlacement,
        };
        assert_eq!(
            seen,
            expect,
            "an outage of {m} requests: caught at {caught} of {} placements",
            got.len()
        );
    }
}

#[test]
fn a_partial_failure_is_caught_above_twice_the_threshold_and_never_at_it() {
    let b = Blindness::of(&Rule::default(), 200.0);
    assert_eq!(b.partial_always_caught_above_pct, Some(1.1));
    assert_eq!(b.partial_never_caught_up_to_pct, 0.5);
    // 1.2 % of requests (3 in every 250) failing for the rule's 30 s span, placed every 250 ms
    // across a window.
    for i in 0..40 {
        let start = 10_000 + i * 250;
        let a = analyse(&bucket_lines(|k| {
            let t = k * STEP_MS;
            t >= start && t < start + 30_000 && k % 250 < 3
        }));
        assert_eq!(
            a.verdict.verdict,
            Outcome::Falsified,
            "1.2 % from {start} ms"
        );
    }
    // 0.5 %, every 200th request, for the whole run: never above the threshold.
    let a = analyse(&bucket_lines(|k| k % 200 == 0));
    assert_eq!(a.verdict.verdict, Outcome::Held);
    assert_eq!(a.verdict.judged_errors, 80);
}
