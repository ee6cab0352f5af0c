//! The timeline's value panels (errors, latency, responses by revision, replicas by revision)
//! and the system events strip, each drawn from the [`Scene`] into its place in the [`Layout`].

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::judge::rule::BucketRow;
use crate::judge::timeline_series::{CLIENTS_ROW, EXECUTION_ROW, STATE_ROW};
use crate::ts::iso_s;

use super::{LEFT, Layout, PALETTE, PW, Panel, Scene, clip, esc, legend, panel_frame, polylines};

/// The err_pct panel: one line per run, the threshold, the bad windows as red dots.
pub(super) fn err_panel(svg: &mut String, sc: &Scene, lay: &Layout) {
    let (ax, p_err, wms) = (&sc.ax, &lay.p_err, sc.wms);
    let thr = sc.a.rule.threshold_pct;
    panel_frame(
        svg,
        p_err,
        "err_pct",
        "errors",
        &format!("% per {} s window", wms / 1000),
    );
    // An observation lab has no rule: no threshold to draw, no window is "bad" (a canary's
    // expected 2 % would otherwise show as a row of red dots over a line it never had).
    let ruled = !sc.a.lab.is_observation();
    if ruled {
        let y = p_err.y(thr);
        let _ = write!(
            svg,
            r##"<line class="threshold" x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#d62728" stroke-dasharray="6,3"/>"##,
            LEFT + PW
        );
    }
    for run in sc.rows.values() {
        let pts: Vec<(i64, f64)> = run
            .iter()
            .map(|r| (r.start_ms + wms / 2, r.err_pct))
            .collect();
        polylines(
            svg,
            ax,
            p_err,
            &pts,
            wms * 3 / 2,
            r##"stroke="#1f77b4" stroke-width="1.5""##,
        );
    }
    for r in sc.all.iter().filter(|r| ruled && r.is_bad(&sc.a.rule)) {
        let _ = write!(
            svg,
            r##"<circle class="bad-window" cx="{:.1}" cy="{:.1}" r="3" fill="#d62728"><title>{} {}: {:.3} %</title></circle>"##,
            ax.x(r.start_ms + wms / 2),
            p_err.y(r.err_pct),
            esc(&r.run_id),
            iso_s(r.start_ms),
            r.err_pct
        );
    }
    let mut keys: Vec<(String, String, bool)> = vec![("err_pct".into(), PALETTE[0].into(), false)];
    if ruled {
        keys.push((format!("threshold {thr} %"), "#d62728".into(), true));
    }
    legend(svg, p_err, &keys);
    let _ = write!(svg, "</g>");
}

/// The latency panel: p50 and p99 per run.
pub(super) fn latency_panel(svg: &mut String, sc: &Scene, lay: &Layout) {
    let (ax, p_lat, wms) = (&sc.ax, &lay.p_lat, sc.wms);
    panel_frame(svg, p_lat, "latency", "latency", "ms (p50, p99)");
    for run in sc.rows.values() {
        for (f, color) in [
            (
                (|r: &BucketRow| r.p50_ms) as fn(&BucketRow) -> Option<f64>,
                PALETTE[2],
            ),
            (|r: &BucketRow| r.p99_ms, PALETTE[1]),
        ] {
            let pts: Vec<(i64, f64)> = run
                .iter()
                .filter_map(|r| f(r).map(|v| (r.start_ms + wms / 2, v)))
                .collect();
            polylines(
                svg,
                ax,
                p_lat,
                &pts,
                wms * 3 / 2,
                &format!(r#"stroke="{color}" stroke-width="1.3""#),
            );
        }
    }
    legend(
        svg,
        p_lat,
        &[
            ("p50".into(), PALETTE[2].into(), false),
            ("p99".into(), PALETTE[1].into(), false),
        ],
    );
    let _ = write!(svg, "</g>");
}

/// One colour per revision, shared by the share and the replica panels.
pub(super) fn revision_colours(sc: &Scene) -> BTreeMap<String, &'static str> {
    let mut rev_color: BTreeMap<String, &'static str> = BTreeMap::new();
    let mut all_revs: BTreeSet<String> = sc.revisions.iter().cloned().collect();
    all_revs.extend(sc.replicas.keys().map(|k| colour_key(k).to_owned()));
    for (i, r) in all_revs.iter().enumerate() {
        rev_color.insert(r.clone(), PALETTE[i % PALETTE.len()]);
    }
    rev_color
}

/// What a replica series is coloured by: its revision (after `<app>/`, so a revision has one
/// colour in every panel), or the whole key of a job's series (one colour per job and source).
fn colour_key(key: &str) -> &str {
    match key.split_once('/') {
        Some((_, rev)) if !is_job_series(key) => rev,
        _ => key,
    }
}

/// Whether a replica series is a job's (`<job>/job replicas (...)`), not a revision's.
fn is_job_series(key: &str) -> bool {
    key.ends_with(crate::judge::timeline_series::JOB_SERIES)
        || key.ends_with(crate::judge::timeline_series::JOB_ROWS_SERIES)
}

/// The colour of `rev` in `colours` (grey for a revision without one).
fn colour_of(colours: &BTreeMap<String, &'static str>, rev: &str) -> &'static str {
    colours.get(rev).copied().unwrap_or("#777")
}

/// The share of each window's responses per revision (`served_by`).
pub(super) fn share_panel(
    svg: &mut String,
    sc: &Scene,
    lay: &Layout,
    colours: &BTreeMap<String, &'static str>,
) {
    let (ax, p_share, wms) = (&sc.ax, &lay.p_share, sc.wms);
    panel_frame(
        svg,
        p_share,
        "served_by",
        "responses by revision",
        "% of each window",
    );
    for rev in &sc.revisions {
        for run in sc.rows.values() {
            let pts: Vec<(i64, f64)> = run
                .iter()
                .filter(|r| r.count > 0)
                .map(|r| {
                    let n = r.served_by.get(rev).copied().unwrap_or(0);
                    (r.start_ms + wms / 2, n as f64 * 100.0 / r.count as f64)
                })
                .collect();
            polylines(
                svg,
                ax,
                p_share,
                &pts,
                wms * 3 / 2,
                &format!(
                    r#"stroke="{}" stroke-width="1.6" data-revision="{}""#,
                    colour_of(colours, rev),
                    esc(rev)
                ),
            );
        }
    }
    if sc.revisions.is_empty() {
        no_data(svg, p_share, "no responses name their revision");
    }
    let items: Vec<(String, String, bool)> = sc
        .revisions
        .iter()
        .map(|r| (r.clone(), colour_of(colours, r).to_owned(), false))
        .collect();
    legend(svg, p_share, &items);
    let _ = write!(svg, "</g>");
}

/// Replicas per revision, as steps (a count holds until the sampler's next tick).
pub(super) fn replica_panel(
    svg: &mut String,
    sc: &Scene,
    lay: &Layout,
    colours: &BTreeMap<String, &'static str>,
) {
    let (ax, p_rep) = (&sc.ax, &lay.p_rep);
    let jobs = sc.replicas.keys().any(|k| is_job_series(k));
    panel_frame(
        svg,
        p_rep,
        "replicas",
        if jobs {
            "replicas"
        } else {
            "replicas by revision"
        },
        // The legend names each job series' source (rows or lines).
        if jobs {
            "by revision, by job"
        } else {
            "sampler's inventory"
        },
    );
    let mut rep_items = Vec::new();
    let mut drawn = false;
    for (key, execs) in &sc.replicas {
        let rev = colour_key(key);
        let color = colour_of(colours, rev);
        // A sampler's counts are per tick: a gap of a minute is a missing sample and breaks
        // the line. A job's counts change only when a replica starts or ends: no gap is one.
        let max_gap = if is_job_series(key) { i64::MAX } else { 60_000 };
        let mut any = false;
        for (_, pts) in execs {
            any |= pts.iter().any(|p| ax.inside(p.0));
            // Steps: a count holds until the next tick.
            let mut stepped = Vec::new();
            for (i, &(t, v)) in pts.iter().enumerate() {
                if i > 0 {
                    stepped.push((t, pts[i - 1].1));
                }
                stepped.push((t, v));
            }
            polylines(
                svg,
                ax,
                p_rep,
                &stepped,
                max_gap,
                &format!(
                    r#"stroke="{color}" stroke-width="1.6" data-revision="{}""#,
                    esc(rev)
                ),
            );
        }
        if any {
            drawn = true;
            rep_items.push((key.clone(), color.to_owned(), false));
        }
    }
    if !drawn {
        no_data(svg, p_rep, "no replica inventory sampled in this span");
    }
    legend(svg, p_rep, &rep_items);
    let _ = write!(svg, "</g>");
}

/// How far right of its dot a label may be pushed by the label before it.
pub const MAX_LABEL_SHIFT: f64 = 12.0;

/// The system events strip: one row per reason, each dot centred on its row's label.
pub(super) fn system_strip(svg: &mut String, sc: &Scene, lay: &Layout) {
    let (strip_top, strip_h, row_h) = (lay.strip_top, lay.strip_h, lay.row_h);
    let _ = write!(
        svg,
        r##"<g class="panel" data-panel="system-events"><rect x="{LEFT}" y="{strip_top:.1}" width="{PW}" height="{strip_h:.1}" fill="none" stroke="#999"/>"##
    );
    if sc.reasons.is_empty() {
        let _ = write!(
            svg,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end" fill="#555">system events</text><text x="{:.1}" y="{:.1}" fill="#777">none in this span</text>"##,
            LEFT - 6.0,
            strip_top + row_h / 2.0 + 4.0,
            LEFT + 6.0,
            strip_top + row_h / 2.0 + 4.0
        );
    }
    for (i, reason) in sc.reasons.iter().enumerate() {
        let cy = strip_top + row_h * i as f64 + row_h / 2.0;
        let color = PALETTE[i % PALETTE.len()];
        if i > 0 {
            let _ = write!(
                svg,
                r##"<line x1="{LEFT}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#eee"/>"##,
                cy - row_h / 2.0,
                LEFT + PW,
                cy - row_h / 2.0
            );
        }
        let _ = write!(
            svg,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="end" fill="#333">{}</text>"##,
            LEFT - 6.0,
            cy + 4.0,
            esc(&clip(reason, 24))
        );
        // Where the last state label ends, so the next one starts after it, not over it.
        let mut label_end = f64::MIN;
        for e in sc.events.iter().filter(|e| e.reason == *reason) {
            // Readable in a picture: a revision's running state (the middle of `p/r/h (was
            // ...)`), the number of clients that moved.
            let label = match *reason {
                STATE_ROW => Some(("revision-state", e.msg.split('/').nth(1).unwrap_or(""))),
                CLIENTS_ROW => Some(("clients-moved", e.msg.split(' ').next().unwrap_or(""))),
                EXECUTION_ROW => Some((
                    "execution-status",
                    e.msg.split([' ', ':']).next().unwrap_or(""),
                )),
                _ => None,
            };
            // Executions come many at a time, and a rollout changes two revisions' states
            // several times within seconds: a label pushed far from its dot by the one before
            // would name a time when nothing happened, so it is left out (the dot's tooltip
            // still says it, and the pack's tables list every change).
            let at = sc.ax.x(e.ts_ms) + 5.0;
            let crowded = label_end + 4.0 > at + MAX_LABEL_SHIFT;
            if let Some((class, text)) = label.filter(|_| !crowded) {
                let x = at.max(label_end + 4.0);
                label_end = x + 5.5 * text.chars().count() as f64;
                let _ = write!(
                    svg,
                    r##"<text class="{class}" x="{x:.1}" y="{:.1}" font-size="9" fill="#555">{}</text>"##,
                    cy - 4.0,
                    esc(text)
                );
            }
            let _ = write!(
                svg,
                r##"<circle class="system-event" cx="{:.1}" cy="{cy:.1}" r="3.5" fill="{color}"><title>{}</title></circle>"##,
                sc.ax.x(e.ts_ms),
                esc(&format!(
                    "{} {} {} {}: {}",
                    iso_s(e.ts_ms),
                    e.reason,
                    e.revision,
                    e.replica,
                    e.msg
                ))
            );
        }
    }
    if sc.outside > 0 {
        let _ = write!(
            svg,
            r##"<text x="8" y="{:.1}" fill="#777">{} system event(s) outside this span not shown</text>"##,
            lay.axis_y + 46.0,
            sc.outside
        );
    }
    let _ = write!(svg, "</g>");
}

fn no_data(svg: &mut String, p: &Panel, text: &str) {
    let _ = write!(
        svg,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#777">{}</text>"##,
        LEFT + PW / 2.0,
        p.top + p.h / 2.0,
        esc(text)
    );
}
