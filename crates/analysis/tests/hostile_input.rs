//! Hostile and random input (issue 19, points 5 and 6): an unparseable line is counted and
//! quoted escaped, never raw; random NDJSON never panics and every line that is not an event is
//! counted unparseable.
#![allow(clippy::unwrap_used)]

use analysis::{Options, analyze};
use proptest::prelude::*;

fn run(text: &[u8]) -> analysis::Analysis {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("loadgen.ndjson");
    std::fs::write(&f, text).unwrap();
    analyze(&[f], &Options::default()).unwrap()
}

#[test]
fn escape_sequences_in_a_log_line_are_quoted_escaped() {
    let evil = "\u{1b}]0;owned\u{7}\u{1b}[2J\u{1b}[31mred\rover\u{8}";
    let a = run(format!("{evil}\n{{\"kind\":\"bucket\", \"ts\": 5\n").as_bytes());
    let s = a.stats();
    assert_eq!(s.unparseable, 2, "{:?}", s.quoted);
    let md = analysis::render::report::render(&a, &[]);
    for text in s
        .quoted
        .iter()
        .map(|(_, t)| t.as_str())
        .chain([md.as_str()])
    {
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "a raw control character: {text:?}"
        );
    }
    assert!(md.contains("\\u{1b}[2J"), "{md}");
    assert!(
        s.quoted[0].1.contains("\\u{1b}]0;owned\\u{7}"),
        "{:?}",
        s.quoted
    );
}

fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        // Arbitrary text (no newline: one line each).
        "[^\n]{0,80}",
        // JSON objects shaped like our events with random values.
        (
            proptest::sample::select(
                &[
                    "bucket",
                    "req",
                    "summary",
                    "meta",
                    "RevisionStateSample",
                    "PerturbationWindowMarker",
                    "x"
                ][..]
            ),
            "[^\n\"\\\\]{0,20}",
            any::<i64>()
        )
            .prop_map(|(k, s, n)| format!(
                r#"{{"kind":"{k}","ts":"{s}","count":{n},"err_pct":"{s}"}}"#
            )),
        // Valid JSON that is not an object.
        any::<i64>().prop_map(|n| n.to_string()),
        Just("[1,2]".to_owned()),
        Just("null".to_owned()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn random_ndjson_never_panics_and_plain_text_is_counted_unparseable(
        lines in proptest::collection::vec(line(), 0..30),
        garbage in proptest::collection::vec(any::<u8>(), 0..200),
    ) {
        // The first line makes it NDJSON (a file opening with `[` is read as one exported JSON
        // document and counted as one unparseable document when it is not).
        let mut text = format!("{{\"kind\":\"note\"}}\n{}", lines.join("\n")).into_bytes();
        text.push(b'\n');
        text.extend_from_slice(&garbage);
        let a = run(&text);
        let s = a.stats();
        let plain = lines
            .iter()
            .filter(|l| {
                let t = l.trim();
                !t.is_empty() && serde_json::from_str::<serde_json::Value>(t).is_err()
                    && !t.contains('=') // a k6 logfmt line is another format, read as such
            })
            .count() as u64;
        prop_assert!(s.unparseable >= plain, "unparseable {} < {plain} plain-text lines", s.unparseable);
        for (_, q) in &s.quoted {
            prop_assert!(!q.chars().any(char::is_control), "raw control character in {q:?}");
        }
        let md = analysis::render::report::render(&a, &[]);
        prop_assert!(!md.chars().any(|c| c.is_control() && c != '\n'), "raw control character in report.md");
    }
}

/// Point 7: merging histograms never drops counts (`Histogram::add` refuses a source holding
/// values above the destination's bound; those are now clamped, as recording clamps).
#[test]
fn merging_latency_histograms_keeps_every_count() {
    let mut dst = analysis::read::model::new_hist();
    let mut src = hdrhistogram::Histogram::<u32>::new(2).unwrap(); // auto-resizing
    src.record(7_200_000_000).unwrap(); // 2 h in µs: above new_hist's 1 h bound
    src.record(1_000).unwrap();
    analysis::read::model::merge_hist(&mut dst, &src);
    assert_eq!(dst.len(), 2);
    assert!(
        dst.max() >= 3_500_000_000,
        "clamped to the bound: {}",
        dst.max()
    );
}
