//! The shared-time-axis timeline: one SVG whose panels share one clock, so a reader sees the
//! story of a lab (event fired → new revision → switch → errors or none) in one picture.
//!
//! Panels, top to bottom: the steps as bands; err_pct per rule window with the threshold (bad
//! windows as red dots; an observation lab has no rule, so neither is drawn); p50/p99 latency;
//! the share of responses per revision (`served_by`); replicas per revision (counted from the
//! samplers' `ReplicaInventorySample` ticks); the system events as a strip, one row per reason,
//! then a row of the revisions' state changes as the samplers read them from ARM, each labelled
//! with its running state, and a row of the virtual clients that moved, each labelled with their
//! number. The value panels and the strip are drawn in `panels`. A vertical marker crosses every panel at each fired
//! perturbation event (`runs.json` actions, one per step and event). Window values are drawn
//! at the window's middle; markers and system events at their own time.
//!
//! Hand-written SVG (no scripts, no external references), deterministic for a given analysis.
//! Elements carry `class`/`data-*` attributes (`perturbation-marker`, `data-panel`) so a test
//! can find them in the DOM.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::Analysis;
use crate::judge::rule::BucketRow;
use crate::judge::timeline_series::{
    CLIENTS_ROW, EXECUTION_ROW, STATE_ROW, client_moves, execution_changes, main_rows,
    state_changes,
};
pub use crate::judge::timeline_series::{
    Marker, ReplicaSeries, StepSpan, job_replica_series, lab_span, markers, replica_series, steps,
};
use crate::read::model::SystemEvent;
use crate::ts::iso_s;

mod panels;

pub use panels::MAX_LABEL_SHIFT;
use panels::{
    err_panel, latency_panel, replica_panel, revision_colours, share_panel, system_strip,
};

const W: f64 = 1100.0;
const LEFT: f64 = 170.0;
const RIGHT: f64 = 24.0;
const PW: f64 = W - LEFT - RIGHT;
const PALETTE: [&str; 8] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
];
const MARKER: &str = "#d62728";

/// XML text escaping (also for attribute values).
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

struct Axis {
    t0: i64,
    t1: i64,
}

impl Axis {
    fn x(&self, ms: i64) -> f64 {
        LEFT + (ms - self.t0) as f64 / (self.t1 - self.t0).max(1) as f64 * PW
    }
    fn inside(&self, ms: i64) -> bool {
        ms >= self.t0 && ms <= self.t1
    }
}

/// A "nice" tick step for `span` (same unit) aiming at about `n` ticks.
fn nice_step(span: f64, n: f64) -> f64 {
    let raw = (span / n).max(f64::MIN_POSITIVE);
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let nice = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

fn fmt_num(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').to_owned()
    }
}

fn fmt_rel(s: i64) -> String {
    if s % 60 == 0 {
        format!("+{}m", s / 60)
    } else {
        format!("+{}m{:02}s", s / 60, s % 60)
    }
}

/// One value panel: its box and y scale.
struct Panel {
    top: f64,
    h: f64,
    ymax: f64,
}

impl Panel {
    fn y(&self, v: f64) -> f64 {
        self.top + self.h - (v / self.ymax).clamp(0.0, 1.05) * self.h
    }
}

fn panel_frame(svg: &mut String, p: &Panel, name: &str, title: &str, unit: &str) {
    let _ = write!(
        svg,
        r##"<g class="panel" data-panel="{name}"><rect x="{LEFT}" y="{:.1}" width="{PW}" height="{:.1}" fill="none" stroke="#999"/>"##,
        p.top, p.h
    );
    let _ = write!(
        svg,
        r##"<text x="8" y="{:.1}" font-weight="bold">{}</text><text x="8" y="{:.1}" fill="#555">{}</text>"##,
        p.top + 24.0,
        esc(title),
        p.top + 38.0,
        esc(unit)
    );
    let step = nice_step(p.ymax, 3.0);
    let mut v = 0.0;
    while v <= p.ymax + 1e-9 {
        let y = p.y(v);
        let _ = write!(
            svg,
            r##"<line x1="{:.1}" y1="{y:.1}" x2="{LEFT}" y2="{y:.1}" stroke="#999"/><text x="{:.1}" y="{:.1}" text-anchor="end" fill="#333">{}</text>"##,
            LEFT - 4.0,
            LEFT - 6.0,
            y + 4.0,
            fmt_num(v)
        );
        if v > 0.0 {
            let _ = write!(
                svg,
                r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#eee"/>"##,
                LEFT + PW
            );
        }
        v += step;
    }
}

fn legend(svg: &mut String, p: &Panel, items: &[(String, String, bool)]) {
    // Right-aligned, just above the panel's box: (label, colour, dashed).
    let mut x = LEFT + PW - 6.0;
    for (label, color, dashed) in items.iter().rev() {
        let w = 7.0 * label.chars().count() as f64 + 26.0;
        x -= w;
        let dash = if *dashed {
            r#" stroke-dasharray="5,3""#
        } else {
            ""
        };
        let _ = write!(
            svg,
            r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="14" fill="#fff" fill-opacity="0.85"/><line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{color}" stroke-width="2"{dash}/><text x="{:.1}" y="{:.1}">{}</text>"##,
            x - 2.0,
            p.top - 15.0,
            w,
            x,
            p.top - 8.0,
            x + 16.0,
            p.top - 8.0,
            x + 20.0,
            p.top - 4.0,
            esc(label)
        );
    }
}

/// Polylines through `(ms, value)` points, broken where consecutive points are more than `gap`
/// apart (a run ends, the load paused).
fn polylines(svg: &mut String, ax: &Axis, p: &Panel, pts: &[(i64, f64)], gap: i64, style: &str) {
    let mut seg: Vec<(i64, f64)> = Vec::new();
    let flush = |svg: &mut String, seg: &mut Vec<(i64, f64)>| {
        if seg.len() == 1 {
            let (t, v) = seg[0];
            let _ = write!(
                svg,
                r#"<circle cx="{:.1}" cy="{:.1}" r="1.8" {style}/>"#,
                ax.x(t),
                p.y(v)
            );
        } else if seg.len() > 1 {
            let pts: Vec<String> = seg
                .iter()
                .map(|&(t, v)| format!("{:.1},{:.1}", ax.x(t), p.y(v)))
                .collect();
            let _ = write!(
                svg,
                r#"<polyline fill="none" {style} points="{}"/>"#,
                pts.join(" ")
            );
        }
        seg.clear();
    };
    for &(t, v) in pts {
        if !ax.inside(t) {
            continue;
        }
        if seg.last().is_some_and(|&(lt, _)| t - lt > gap) {
            flush(svg, &mut seg);
        }
        seg.push((t, v));
    }
    flush(svg, &mut seg);
}

/// What one timeline draws: the data of the span `ax`, gathered once for every panel.
struct Scene<'a> {
    a: &'a Analysis,
    ax: Axis,
    /// The rule window, ms (at least 1).
    wms: i64,
    /// Rows of the main scenario, per run, in time order.
    rows: BTreeMap<&'a str, Vec<&'a BucketRow>>,
    /// Those rows whose window touches the span.
    all: Vec<&'a BucketRow>,
    /// The revisions that served a response in the span (`unknown` left out).
    revisions: Vec<String>,
    replicas: ReplicaSeries,
    /// System events inside the span, then the revisions' state changes
    /// ([`crate::judge::timeline_series::state_changes`]) and the clients' moves
    /// ([`crate::judge::timeline_series::client_moves`]); `outside` counts the system events left out.
    events: Vec<SystemEvent>,
    outside: usize,
    /// The reasons of `events`, one strip row each (the state row, then the clients row, last).
    reasons: Vec<&'a str>,
    markers: Vec<Marker>,
    steps: Vec<StepSpan>,
}

impl<'a> Scene<'a> {
    /// Gathers what the timeline from `t0` to `t1` (epoch ms) shows.
    fn new(a: &'a Analysis, t0: i64, t1: i64) -> Self {
        let ax = Axis {
            t0,
            t1: t1.max(t0 + 1000),
        };
        let wms = a.acc.window_ms.max(1);
        let rows = main_rows(a);
        let in_span = |r: &&BucketRow| r.start_ms + wms >= ax.t0 && r.start_ms <= ax.t1;
        let all: Vec<&BucketRow> = rows.values().flatten().copied().filter(in_span).collect();
        let revisions: Vec<String> = {
            let s: BTreeSet<&String> = all
                .iter()
                .flat_map(|r| r.served_by.keys())
                .filter(|k| k.as_str() != "unknown")
                .collect();
            s.into_iter().cloned().collect()
        };
        let mut replicas = replica_series(a);
        replicas.extend(job_replica_series(a));
        let mut events: Vec<SystemEvent> = a
            .acc
            .system
            .iter()
            .filter(|e| ax.inside(e.ts_ms))
            .cloned()
            .collect();
        let outside = a.acc.system.len() - events.len();
        let mut reasons: Vec<&str> = {
            let s: BTreeSet<&str> = a
                .acc
                .system
                .iter()
                .filter(|e| ax.inside(e.ts_ms))
                .map(|e| e.reason.as_str())
                .collect();
            s.into_iter().collect()
        };
        let states: Vec<SystemEvent> = state_changes(a)
            .into_iter()
            .filter(|e| ax.inside(e.ts_ms))
            .collect();
        if !states.is_empty() {
            reasons.push(STATE_ROW);
        }
        events.extend(states);
        let moves: Vec<SystemEvent> = client_moves(a)
            .into_iter()
            .filter(|e| ax.inside(e.ts_ms))
            .collect();
        if !moves.is_empty() {
            reasons.push(CLIENTS_ROW);
        }
        events.extend(moves);
        let executions: Vec<SystemEvent> = execution_changes(a)
            .into_iter()
            .filter(|e| ax.inside(e.ts_ms))
            .collect();
        if !executions.is_empty() {
            reasons.push(EXECUTION_ROW);
        }
        events.extend(executions);
        let markers: Vec<Marker> = markers(a)
            .into_iter()
            .filter(|m| ax.inside(m.ts_ms))
            .collect();
        let steps: Vec<StepSpan> = steps(a)
            .into_iter()
            .filter(|s| s.end_ms >= ax.t0 && s.start_ms <= ax.t1)
            .collect();
        Scene {
            a,
            ax,
            wms,
            rows,
            all,
            revisions,
            replicas,
            events,
            outside,
            reasons,
            markers,
            steps,
        }
    }
}

/// Where everything sits, top to bottom: the title, the step band's top, the four value panels,
/// the system events strip and the time axis.
struct Layout {
    title_h: f64,
    band_top: f64,
    /// Whether the errors, latency and responses panels are drawn: not for a lab without a
    /// load whose logs hold no window (a lab of jobs alone), where they could only be empty.
    load_panels: bool,
    p_err: Panel,
    p_lat: Panel,
    p_share: Panel,
    p_rep: Panel,
    row_h: f64,
    strip_top: f64,
    strip_h: f64,
    axis_y: f64,
    height: f64,
}

impl Layout {
    /// The layout for `sc`: each value panel's y scale fits its data in the span.
    fn new(sc: &Scene) -> Self {
        let thr = sc.a.rule.threshold_pct;
        let title_h = 26.0;
        let band_top = title_h + 18.0;
        let band_h = 20.0;
        let gap = 20.0;
        let load_panels = !sc.a.lab.load.is_empty() || !sc.rows.is_empty();
        // Without them, the three load panels take no room (no height, no gap after them) and
        // the replica panel follows the step band at one gap.
        let h = |full: f64| if load_panels { full } else { 0.0 };
        let after = h(gap);
        let p_err = Panel {
            top: band_top + band_h + gap,
            h: h(130.0),
            ymax: sc
                .all
                .iter()
                .map(|r| r.err_pct)
                .fold(
                    if sc.a.lab.is_observation() {
                        1.0
                    } else {
                        thr * 2.0
                    },
                    f64::max,
                )
                .max(0.001)
                * 1.1,
        };
        let p_lat = Panel {
            top: p_err.top + p_err.h + after,
            h: h(110.0),
            ymax: sc
                .all
                .iter()
                .filter_map(|r| r.p99_ms.or(r.p50_ms))
                .fold(1.0, f64::max)
                * 1.1,
        };
        let p_share = Panel {
            top: p_lat.top + p_lat.h + after,
            h: h(100.0),
            ymax: 100.0,
        };
        let rep_max = sc
            .replicas
            .values()
            .flatten()
            .flat_map(|(_, pts)| pts.iter().filter(|p| sc.ax.inside(p.0)).map(|p| p.1))
            .fold(1.0, f64::max);
        let p_rep = Panel {
            top: p_share.top + p_share.h + after,
            h: 90.0,
            ymax: rep_max + 1.0,
        };
        let row_h = 16.0;
        let strip_top = p_rep.top + p_rep.h + gap;
        let strip_h = row_h * sc.reasons.len().max(1) as f64;
        let axis_y = strip_top + strip_h;
        let height = axis_y + 54.0;
        Layout {
            title_h,
            band_top,
            load_panels,
            p_err,
            p_lat,
            p_share,
            p_rep,
            row_h,
            strip_top,
            strip_h,
            axis_y,
            height,
        }
    }
}

/// Renders the timeline from `t0` to `t1` (epoch ms). `id` prefixes the SVG's element ids so
/// several timelines can share one HTML page.
pub fn render(a: &Analysis, t0: i64, t1: i64, id: &str, title: &str) -> String {
    let sc = Scene::new(a, t0, t1);
    let lay = Layout::new(&sc);
    let mut svg = String::new();
    header(&mut svg, &sc, &lay, id, title);
    step_bands(&mut svg, &sc, &lay);
    time_axis(&mut svg, &sc, &lay);
    let colours = revision_colours(&sc);
    if lay.load_panels {
        err_panel(&mut svg, &sc, &lay);
        latency_panel(&mut svg, &sc, &lay);
        share_panel(&mut svg, &sc, &lay, &colours);
    }
    replica_panel(&mut svg, &sc, &lay, &colours);
    system_strip(&mut svg, &sc, &lay);
    // Without runs.json the samplers' windows bracket the perturbations; with it, a lab without
    // actions has none to bracket, and the step bands already show when each sampler ran.
    if sc.markers.is_empty() && sc.a.runs_file.is_err() {
        sampler_windows(&mut svg, &sc, &lay);
    }
    perturbation_markers(&mut svg, &sc, &lay);
    let _ = write!(svg, "</svg>");
    svg
}

/// Opens the `<svg>` element and writes the title and the legend line above the panels.
fn header(svg: &mut String, sc: &Scene, lay: &Layout, id: &str, title: &str) {
    let height = lay.height;
    let _ = write!(
        svg,
        r##"<svg xmlns="http://www.w3.org/2000/svg" class="timeline" id="{id}" width="{W}" height="{height:.0}" viewBox="0 0 {W} {height:.0}" font-family="sans-serif" font-size="11" role="img" aria-label="{}">"##,
        esc(title)
    );
    let _ = write!(
        svg,
        r##"<rect width="{W}" height="{height:.0}" fill="#fff"/><text x="8" y="18" font-size="15" font-weight="bold">{}</text>"##,
        esc(title)
    );
    let _ = write!(
        svg,
        r##"<text x="{:.1}" y="18" text-anchor="end" fill="#555">{} s windows · one clock for every panel · {}</text>"##,
        LEFT + PW,
        sc.wms / 1000,
        match (sc.markers.is_empty(), sc.a.runs_file.is_ok()) {
            (false, _) => "red lines: the perturbation events",
            (true, true) => "no step fired an action: no perturbation event",
            (true, false) => {
                "no fired event recorded (no runs.json): dashed lines are the samplers' windows"
            }
        }
    );
}

/// The step bands, behind every panel, and their row label.
fn step_bands(svg: &mut String, sc: &Scene, lay: &Layout) {
    let ax = &sc.ax;
    let (band_top, axis_y) = (lay.band_top, lay.axis_y);
    let _ = write!(svg, r#"<g class="steps">"#);
    for (i, s) in sc.steps.iter().enumerate() {
        let x0 = ax.x(s.start_ms.max(ax.t0));
        let x1 = ax.x(s.end_ms.min(ax.t1));
        let fill = if i % 2 == 0 { "#eef2f7" } else { "#f8f8f8" };
        let _ = write!(
            svg,
            r##"<g class="step" data-step="{}"><rect x="{x0:.1}" y="{band_top:.1}" width="{:.1}" height="{:.1}" fill="{fill}"/><text x="{:.1}" y="{:.1}" fill="#333">{}</text><title>{}</title></g>"##,
            esc(&s.name),
            (x1 - x0).max(0.5),
            axis_y - band_top,
            x0 + 3.0,
            band_top + 14.0,
            esc(&clip(&s.name, ((x1 - x0) / 6.5) as usize)),
            esc(&format!(
                "step {} (phase {}): {} to {}",
                s.name,
                s.phase,
                iso_s(s.start_ms),
                iso_s(s.end_ms)
            ))
        );
    }
    let _ = write!(svg, "</g>");
    let _ = write!(
        svg,
        r##"<text x="8" y="{:.1}" font-weight="bold">steps</text>"##,
        band_top + 14.0
    );
}

/// The time grid across the panels and the time axis below them, in time since the span's start.
fn time_axis(svg: &mut String, sc: &Scene, lay: &Layout) {
    let ax = &sc.ax;
    let axis_y = lay.axis_y;
    let span_s = (ax.t1 - ax.t0) as f64 / 1000.0;
    let tick_s = [
        5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400,
    ]
    .into_iter()
    .find(|&t| span_s / t as f64 <= 12.0)
    .unwrap_or(28800);
    let _ = write!(svg, r#"<g class="time-axis">"#);
    let mut s = 0i64;
    while s as f64 <= span_s {
        let x = ax.x(ax.t0 + s * 1000);
        let _ = write!(
            svg,
            r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#ddd"/><line x1="{x:.1}" y1="{axis_y:.1}" x2="{x:.1}" y2="{:.1}" stroke="#333"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            if lay.load_panels {
                lay.p_err.top
            } else {
                lay.p_rep.top
            },
            axis_y,
            axis_y + 5.0,
            axis_y + 17.0,
            fmt_rel(s)
        );
        s += tick_s;
    }
    let _ = write!(
        svg,
        r##"<line x1="{LEFT}" y1="{axis_y:.1}" x2="{:.1}" y2="{axis_y:.1}" stroke="#333"/><text x="{:.1}" y="{:.1}" text-anchor="middle" fill="#333">time since {} (UTC), to {}</text></g>"##,
        LEFT + PW,
        LEFT + PW / 2.0,
        axis_y + 34.0,
        iso_s(ax.t0),
        iso_s(ax.t1)
    );
}

/// Without fired events (no runs.json: logs pulled or exported by hand), the samplers' windows,
/// dashed and labelled as such: they bracket the perturbations, they do not date them.
fn sampler_windows(svg: &mut String, sc: &Scene, lay: &Layout) {
    let (band_top, axis_y) = (lay.band_top, lay.axis_y);
    let _ = write!(svg, r#"<g class="sampler-windows">"#);
    for m in
        sc.a.acc
            .markers
            .iter()
            .filter(|m| sc.ax.inside(m.ts.epoch_ms()))
    {
        let x = sc.ax.x(m.ts.epoch_ms());
        let phase = match m.phase {
            logline::line::MarkerPhase::Start => "start",
            logline::line::MarkerPhase::End => "end",
        };
        let _ = write!(
            svg,
            r##"<g class="sampler-window" data-phase="{phase}"><line x1="{x:.1}" y1="{band_top:.1}" x2="{x:.1}" y2="{axis_y:.1}" stroke="#555" stroke-dasharray="4,3"/><text x="{:.1}" y="{:.1}" fill="#555"{}>window {phase}</text><title>{}</title></g>"##,
            if phase == "end" { x - 2.0 } else { x + 2.0 },
            lay.title_h + 14.0,
            if phase == "end" {
                r#" text-anchor="end""#
            } else {
                ""
            },
            esc(&format!(
                "sampler window {phase} {} {}",
                iso_s(m.ts.epoch_ms()),
                m.perturbation_id.as_deref().unwrap_or("")
            ))
        );
    }
    let _ = write!(svg, "</g>");
}

/// The perturbation markers across every panel, on top of everything else.
fn perturbation_markers(svg: &mut String, sc: &Scene, lay: &Layout) {
    let axis_y = lay.axis_y;
    let _ = write!(svg, r#"<g class="perturbation-markers">"#);
    for m in &sc.markers {
        let x = sc.ax.x(m.ts_ms);
        let label = format!("{} {}", m.kind, m.event);
        let ly = lay.title_h + 6.0;
        let _ = write!(
            svg,
            r##"<g class="perturbation-marker" data-step="{}" data-event="{}" data-kind="{}" data-ts="{}"{}><line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{axis_y:.1}" stroke="{MARKER}" stroke-width="1.4"/><text x="{:.1}" y="{:.1}" fill="{MARKER}">{}</text><title>{}</title></g>"##,
            esc(&m.step),
            m.event,
            esc(&m.kind),
            iso_s(m.ts_ms),
            m.perturbation_id
                .as_deref()
                .map(|p| format!(r#" data-perturbation-id="{}""#, esc(p)))
                .unwrap_or_default(),
            lay.band_top,
            x + 2.0,
            ly + 8.0,
            esc(&label),
            esc(&format!(
                "{} event {} ({}) fired {}{}{}",
                m.step,
                m.event,
                m.kind,
                iso_s(m.ts_ms),
                m.perturbation_id
                    .as_deref()
                    .map(|p| format!(", {p}"))
                    .unwrap_or_default(),
                if m.outcome == "ok" {
                    String::new()
                } else {
                    format!(", outcome {}", m.outcome)
                }
            ))
        );
    }
    let _ = write!(svg, "</g>");
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else if n <= 1 {
        String::new()
    } else {
        let t: String = s.chars().take(n - 1).collect();
        format!("{t}…")
    }
}

/// The lab's timeline (`None` when there is nothing to draw).
pub fn lab(a: &Analysis) -> Option<String> {
    let (t0, t1) = lab_span(a)?;
    Some(render(a, t0, t1, "timeline", "Timeline of the lab"))
}

/// One timeline per step that fired an action, zoomed on that step.
pub fn per_step(a: &Analysis) -> Vec<(String, String)> {
    steps(a)
        .into_iter()
        .filter(|s| s.has_actions && s.end_ms > s.start_ms)
        .map(|s| {
            let id = format!("timeline-{}", safe(&s.name));
            let svg = render(
                a,
                s.start_ms,
                s.end_ms,
                &id,
                &format!("Step {} (phase {})", s.name, s.phase),
            );
            (safe(&s.name), svg)
        })
        .collect()
}

/// A file-name-safe form of `s`.
pub fn safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
