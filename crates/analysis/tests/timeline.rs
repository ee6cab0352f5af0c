//! The shared-time-axis timeline and report.html on the real quick rollout pack
//! (`fixtures/quick-rollout-pack`): markers cross every panel, every element sits on one clock,
//! system-event dots sit on their row's label, and the per-event table renders hand-built
//! `EventSummary` values; and Q3's transition rows for traffic-weight changes on packs of
//! revision samples written here.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use analysis::judge::timeline_series;
use analysis::render::html::{self, HtmlOptions};
use analysis::render::timeline_svg;
use analysis::{Analysis, EventSummary, Options, analyze, find_lab};

/// The analysis of the pack `tests/fixtures/<name>` as `labctl analyze` makes it.
fn fixture(name: &str) -> Analysis {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let opts = Options {
        lab: find_lab(None, Some(&dir)),
        ..Options::default()
    };
    analyze(&[dir.join("logs")], &opts).unwrap()
}

fn quick() -> Analysis {
    fixture("quick-rollout-pack")
}

/// The numeric value of `attr` in `tag` (`x1="12.5"`).
fn attr(tag: &str, attr: &str) -> f64 {
    let k = format!(" {attr}=\"");
    let i = tag.find(&k).unwrap_or_else(|| panic!("no {attr} in {tag}")) + k.len();
    let j = tag[i..].find('"').unwrap() + i;
    tag[i..j].parse().unwrap()
}

/// Every opening tag that starts with `prefix`.
fn tags<'a>(svg: &'a str, prefix: &str) -> Vec<&'a str> {
    svg.match_indices(prefix)
        .map(|(i, _)| &svg[i..i + svg[i..].find('>').unwrap() + 1])
        .collect()
}

const LEFT: f64 = 170.0;
const PW: f64 = 1100.0 - 170.0 - 24.0;

#[test]
fn markers_cross_every_panel_on_the_clock_of_the_windows_and_system_events() {
    let a = quick();
    let (t0, t1) = timeline_svg::lab_span(&a).unwrap();
    let x_of = |ms: i64| LEFT + (ms - t0) as f64 / (t1 - t0) as f64 * PW;
    let svg = timeline_svg::lab(&a).unwrap();
    assert!(!svg.contains("<script"));

    // The panels, top to bottom.
    let panels: Vec<(String, f64, f64)> = tags(&svg, r#"<g class="panel" data-panel=""#)
        .iter()
        .map(|g| {
            let name = g.split('"').nth(3).unwrap().to_owned();
            let at = svg.find(*g).unwrap() + g.len();
            let rect = &svg[at..at + svg[at..].find('>').unwrap() + 1];
            (
                name,
                attr(rect, "y"),
                attr(rect, "y") + attr(rect, "height"),
            )
        })
        .collect();
    let names: Vec<&str> = panels.iter().map(|p| p.0.as_str()).collect();
    assert_eq!(
        names,
        [
            "err_pct",
            "latency",
            "served_by",
            "replicas",
            "system-events"
        ]
    );
    let (top, bottom) = (panels[0].1, panels[4].2);

    // One marker per fired event (3 rollouts, 2 restarts), at its fire time, crossing all panels.
    let markers = timeline_svg::markers(&a);
    assert_eq!(markers.len(), 5);
    let rows = a.runs_file.as_ref().unwrap();
    for m in &markers {
        let step = rows.step(&m.step).unwrap();
        let fired = step
            .actions
            .iter()
            .filter(|x| x.event == m.event)
            .map(|x| analysis::ts::parse_ms(&x.ts).unwrap())
            .min()
            .unwrap();
        assert_eq!(m.ts_ms, fired);
        let g = format!(
            r#"<g class="perturbation-marker" data-step="{}" data-event="{}""#,
            m.step, m.event
        );
        let at = svg.find(&g).unwrap_or_else(|| panic!("no {g}"));
        let line = tags(&svg[at..], "<line")[0];
        assert!((attr(line, "x1") - x_of(fired)).abs() < 0.11, "{line}");
        assert!(
            attr(line, "y1") <= top && attr(line, "y2") >= bottom,
            "{line}"
        );
    }

    // Bad windows and system events use the same clock: a dot at ts sits at x_of(ts).
    let first = a
        .acc
        .system
        .iter()
        .find(|e| e.ts_ms >= t0 && e.ts_ms <= t1)
        .unwrap();
    let dots = tags(&svg, r#"<circle class="system-event""#);
    assert!(
        dots.iter()
            .any(|d| (attr(d, "cx") - x_of(first.ts_ms)).abs() < 0.11),
        "no dot at the first system event's time"
    );
    // Events before the first step (the deploy) are left out, not squeezed onto the axis.
    assert!(dots.iter().all(|d| attr(d, "cx") >= LEFT - 0.01));
    assert!(svg.contains("outside this span not shown"));

    // Each dot is centred on its row, whose label is written at the same height.
    let strip = &svg[svg.find(r#"data-panel="system-events""#).unwrap()..];
    let labels: Vec<f64> = tags(strip, r#"<text x="164.0""#)
        .iter()
        .map(|t| attr(t, "y") - 4.0)
        .collect();
    assert!(labels.len() >= 5, "{labels:?}");
    for d in &dots {
        let cy = attr(d, "cy");
        assert!(
            labels.iter().any(|l| (l - cy).abs() < 0.01),
            "dot at {cy} off every row {labels:?}"
        );
    }

    // The revision switch: four revisions in the share panel, each with its replica line.
    for rev in [
        "subject--01b6a0e",
        "subject--rmx4p46lq",
        "subject--rmx4p4tr2",
        "subject--rmx4p5gwf",
    ] {
        assert!(
            svg.matches(&format!(r#"data-revision="{rev}""#)).count() >= 2,
            "{rev} not in both the share and the replica panels"
        );
    }
}

#[test]
fn report_html_lists_gates_then_timeline_then_each_event() {
    let a = quick();
    let events = vec![
        EventSummary {
            step: "perturbation".into(),
            event: 1,
            kind: "rollout".into(),
            perturbation_id: Some("perturbation-event-1-20261201T120253Z".into()),
            fired_ms: 1_764_590_593_000,
            new_revision: Some("subject--rmx4ne7ih".into()),
            transition_s: Some(12.04),
            errors_in_window: 0,
            window_error_rate: None,
            worst_window_err_pct: None,
            burst: false,
            observed: true,
            problem: None,
        },
        EventSummary {
            step: "supplemental-restart".into(),
            event: 2,
            kind: "restart".into(),
            perturbation_id: None,
            fired_ms: 1_764_590_700_000,
            new_revision: None,
            transition_s: None,
            errors_in_window: 7,
            window_error_rate: analysis::judge::strength::ErrorRate::new(7, 2_000),
            worst_window_err_pct: Some(0.7),
            burst: false,
            observed: false,
            problem: Some("no ContainerStarted row <of> the replacement".into()),
        },
    ];
    let page = html::render(&a, &events, &HtmlOptions::default());
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(page.contains(&format!(
        r#"<meta http-equiv="Content-Security-Policy" content="{}">"#,
        html::CSP
    )));
    assert!(
        !page.contains("http-equiv=\"refresh\""),
        "no refresh in a pack's report"
    );
    let verdict = page.find(r#"id="verdict""#).unwrap();
    let gates = page.find(r#"id="gates""#).unwrap();
    let timeline = page
        .find(r#"<svg xmlns="http://www.w3.org/2000/svg" class="timeline" id="timeline""#)
        .unwrap();
    let per_event = page.find(r#"id="events""#).unwrap();
    let tables = page.find(r#"id="tables""#).unwrap();
    assert!(verdict < gates && gates < timeline && timeline < per_event && per_event < tables);
    for g in &a.gates {
        assert!(
            page.contains(&format!(r#"data-gate="{}""#, g.name)),
            "{}",
            g.name
        );
    }
    assert!(page.contains(
        r#"<tr class="event observed" data-step="perturbation" data-event="1"><td>perturbation</td><td>1</td><td>rollout</td><td>2025-12-01T12:03:13Z</td><td>subject--rmx4ne7ih</td><td>12.0</td><td>0</td><td></td><td>yes</td><td>perturbation-event-1-20261201T120253Z</td><td></td></tr>"#
    ), "{}", &page[per_event..per_event + 1500]);
    assert!(page.contains(
        r#"<tr class="event not-observed" data-step="supplemental-restart" data-event="2">"#
    ));
    assert!(page.contains("<td>7</td><td>0.350 % (95 % CI 0.141–0.720 %)</td><td>NO</td>"));
    assert!(
        page.contains("no ContainerStarted row &lt;of&gt; the replacement"),
        "escaped"
    );

    // The live view's page reloads itself and says so.
    let live = html::render(
        &a,
        &[],
        &HtmlOptions {
            refresh_s: Some(10),
            banner: Some("live: step 2/4".into()),
        },
    );
    assert!(live.contains(r#"<meta http-equiv="refresh" content="10">"#));
    assert!(live.contains("live: step 2/4"));
    assert!(live.contains("No per-event summary"));
}

/// A pack without runs.json (logs pulled by hand): no event to mark, so the samplers' windows
/// are drawn instead, labelled as windows, never as perturbation events.
#[test]
fn without_runs_json_the_sampler_windows_are_drawn_and_called_so() {
    // The rollout pack's logs and lab file, without its runs.json.
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rollout-pack");
    let (_tmp, dir) = testkit::pack::copy_fixture(&fixture, &["lab.toml"]);
    let opts = Options {
        lab: find_lab(None, Some(&dir)),
        ..Options::default()
    };
    let a = analyze(&[dir.join("logs")], &opts).unwrap();
    assert!(a.runs_file.is_err());
    let svg = timeline_svg::lab(&a).unwrap();
    assert!(!svg.contains(r#"class="perturbation-marker""#));
    assert!(!a.acc.markers.is_empty());
    assert_eq!(
        svg.matches(r#"class="sampler-window""#).count(),
        a.acc.markers.len()
    );
    assert!(svg.contains("dashed lines are the samplers' windows"));
}

#[test]
fn a_scale_to_zero_pack_draws_replicas_down_to_zero_and_no_sampler_windows() {
    // A real quick run of labs/scale-to-zero-cold-start.toml (2026-12-02): three idle steps in
    // which the app went to zero, three wake-ups, a sampler over every step (`sample = true`).
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/scale-to-zero-pack");
    let opts = Options {
        lab: find_lab(None, Some(&dir)),
        ..Options::default()
    };
    let a = analyze(&[dir.join("logs")], &opts).unwrap();
    assert!(a.runs_file.is_ok());
    assert_eq!(
        a.verdict.verdict,
        analysis::Outcome::Held,
        "{:?}",
        a.verdict
    );
    let series = timeline_svg::replica_series(&a);
    assert_eq!(series.len(), 1, "{:?}", series.keys());
    let (key, execs) = series.iter().next().unwrap();
    assert!(key.starts_with("subject/subject--"), "{key}");
    // One sampler execution per step; at zero the inventory has no row, and the revision
    // sample's tick still counts 0.
    assert_eq!(execs.len(), 6);
    let counts: Vec<f64> = execs
        .iter()
        .flat_map(|(_, p)| p.iter().map(|x| x.1))
        .collect();
    assert!(counts.contains(&0.0), "{counts:?}");
    assert!(counts.contains(&3.0), "scaled out on a wake-up: {counts:?}");
    let svg = timeline_svg::lab(&a).unwrap();
    assert!(svg.contains("no step fired an action"));
    assert!(!svg.contains(r#"class="sampler-window""#));
    // An observation lab has no rule: no threshold line, no window marked bad.
    assert!(!svg.contains(r#"class="threshold""#));
    assert!(!svg.contains(r#"class="bad-window""#));
    assert!(!svg.contains("threshold 0.5 %"));
}

#[test]
fn a_rollout_pack_draws_its_rule_threshold() {
    let svg = timeline_svg::lab(&quick()).unwrap();
    assert_eq!(tags(&svg, r#"<line class="threshold""#).len(), 1);
    assert!(svg.contains("threshold 0.5 %"));
}

/// A pack of revision samples only: ticks 2 s apart from 2026-07-01T10:00:00Z, each tick's
/// `(revision, traffic_weight)` pairs of app `subject`, all under one perturbation id.
fn weights_pack(ticks: &[&[(&str, u32)]]) -> Analysis {
    let t0 = 1_782_900_000_000_i64;
    let mut text = String::new();
    for (i, revs) in ticks.iter().enumerate() {
        let ts = logline::Timestamp::from_epoch_ms(t0 + 2_000 * i as i64).to_rfc3339_ms();
        for (rev, w) in *revs {
            text.push_str(&format!(
                r#"{{"kind":"RevisionStateSample","ts":"{ts}","perturbation_id":"split-event-1","sampler":"perturbation-sampler","tick":{i},"app":"subject","revision":"{rev}","active":true,"replicas":1,"traffic_weight":{w},"provisioning_state":"Provisioned"}}"#
            ));
            text.push('\n');
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("sampler.ndjson"), text).unwrap();
    analyze(&[tmp.path().to_path_buf()], &Options::default()).unwrap()
}

/// Q3's transition rows as (ts, revision, traffic_weight, detail).
fn q3_transitions(a: &Analysis) -> Vec<(String, String, Option<u64>, String)> {
    let q3 = a.table("q3-").unwrap();
    (0..q3.rows.len())
        .filter(|&i| q3.get(i, "row_type").unwrap() == "transition")
        .map(|i| {
            let s = |c: &str| q3.get(i, c).unwrap().as_str().unwrap().to_owned();
            (
                s("ts"),
                s("revision"),
                q3.get(i, "traffic_weight").unwrap().as_u64(),
                s("detail"),
            )
        })
        .collect()
}

#[test]
fn q3_has_a_transition_row_per_traffic_weight_change() {
    let before: &[(&str, u32)] = &[("subject--stable", 100), ("subject--canary", 0)];
    let after: &[(&str, u32)] = &[("subject--stable", 90), ("subject--canary", 10)];
    let a = weights_pack(&[before, before, before, after, after]);
    // Both revisions change at the fourth tick (10:00:06), the first sample with 90/10.
    let ts = "2026-07-01T10:00:06.000Z".to_owned();
    assert_eq!(
        q3_transitions(&a),
        [
            (
                ts.clone(),
                "subject--canary".to_owned(),
                Some(10),
                "traffic weight of subject--canary from 0 % to 10 %: first sample with the new weight"
                    .to_owned()
            ),
            (
                ts,
                "subject--stable".to_owned(),
                Some(90),
                "traffic weight of subject--stable from 100 % to 90 %: first sample with the new weight"
                    .to_owned()
            ),
        ]
    );
    // And a weight that goes back is a change too (the blue/green flip and back).
    let a = weights_pack(&[before, after, before]);
    assert_eq!(q3_transitions(&a).len(), 4);
}

#[test]
fn q3_has_no_weight_transition_when_the_weights_stay() {
    let split: &[(&str, u32)] = &[("subject--stable", 90), ("subject--canary", 10)];
    let a = weights_pack(&[split, split, split, split]);
    assert_eq!(q3_transitions(&a), []);
    // A revision's first sample is its appearance, not a weight change.
    let one: &[(&str, u32)] = &[("subject--stable", 100)];
    let two: &[(&str, u32)] = &[("subject--stable", 100), ("subject--canary", 0)];
    let a = weights_pack(&[one, two, two]);
    assert!(
        q3_transitions(&a)
            .iter()
            .all(|t| !t.3.starts_with("traffic weight")),
        "{:?}",
        q3_transitions(&a)
    );
}

/// The strip's last row shows each revision's state changes as the samplers read them: one dot
/// per change (a revision's first sample, then each sample whose states differ from its previous
/// one), never a repeat of the same states, and its running-state label by it where it fits.
#[test]
fn revision_state_changes_are_a_strip_row_of_their_own() {
    let a = quick();
    let changes = timeline_series::state_changes(&a);
    assert!(!changes.is_empty());
    let mut last: std::collections::BTreeMap<&str, &str> = Default::default();
    for c in &changes {
        assert_eq!(c.reason, timeline_series::STATE_ROW);
        let states = c.msg.split(" (was ").next().unwrap();
        match last.insert(c.revision.as_str(), states) {
            None => assert!(!c.msg.contains("(was"), "a first sample: {}", c.msg),
            Some(prev) => {
                assert_ne!(prev, states, "{}: a change, not a repeat", c.revision);
                assert!(c.msg.ends_with(&format!("(was {prev})")), "{}", c.msg);
            }
        }
    }
    // A rollout's new revision is seen provisioning, then provisioned.
    assert!(
        changes
            .iter()
            .any(|c| c.msg.starts_with("Provisioned/") && c.msg.contains("(was Provisioning/")),
        "{changes:#?}"
    );
    let svg = timeline_svg::lab(&a).unwrap();
    assert!(svg.contains(">revision state (ARM)</text>"));
    let (t0, t1) = timeline_svg::lab_span(&a).unwrap();
    let in_span = changes
        .iter()
        .filter(|c| c.ts_ms >= t0 && c.ts_ms <= t1)
        .count();
    // Each label sits by its own dot: one pushed further than MAX_LABEL_SHIFT by the label
    // before it would name a time when nothing changed, so it is left out (its dot stays, with
    // its tooltip). Labels come right before their dot.
    let labels = tags(&svg, "<text class=\"revision-state\"");
    assert!(
        !labels.is_empty() && labels.len() <= in_span,
        "{} of {in_span}",
        labels.len()
    );
    for (i, _) in svg.match_indices("<text class=\"revision-state\"") {
        let label = tags(&svg[i..], "<text").remove(0);
        let dot = tags(&svg[i..], "<circle class=\"system-event\"").remove(0);
        let shift = attr(label, "x") - (attr(dot, "cx") + 5.0);
        assert!(
            (-0.1..=timeline_svg::MAX_LABEL_SHIFT + 0.1).contains(&shift),
            "a label {shift:.1} px right of its dot: {label}"
        );
    }
}

/// The sticky-rollout quick run of 2026-12-05 (localplane, Docker runtime): 12 virtual clients.
fn sticky() -> Analysis {
    fixture("sticky-rollout-pack")
}

/// The virtual clients that moved are a strip row of their own, one dot and one count per run
/// and window with a move: every client in the rollout and the restart, 8 of 12 (the clients
/// of the two replicas stopped) in the scale-in.
#[test]
fn clients_that_moved_are_a_strip_row_with_their_count() {
    let a = sticky();
    let moves = timeline_series::client_moves(&a);
    assert!(
        moves
            .iter()
            .all(|m| m.reason == timeline_series::CLIENTS_ROW)
    );
    let counts: Vec<u64> = moves
        .iter()
        .map(|m| m.msg.split(' ').next().unwrap().parse().unwrap())
        .collect();
    let by_step = |prefix: &str| -> u64 {
        moves
            .iter()
            .zip(&counts)
            .filter(|(m, _)| m.revision.starts_with(prefix))
            .map(|(_, n)| n)
            .sum()
    };
    assert!(by_step("rollout-") >= 12, "{moves:#?}");
    assert!(by_step("restart-") >= 12, "{moves:#?}");
    assert_eq!(by_step("scale-in-"), 8, "{moves:#?}");
    assert_eq!(by_step("baseline-"), 0, "{moves:#?}");
    let svg = timeline_svg::lab(&a).unwrap();
    assert!(svg.contains(">clients moved (loadgen)</text>"));
    assert_eq!(
        tags(&svg, "<text class=\"clients-moved\"").len(),
        moves.len()
    );
    // The checks read the same lines: the run held.
    assert_eq!(
        a.verdict.verdict,
        analysis::Outcome::Held,
        "{:?}",
        a.verdict
    );
}
