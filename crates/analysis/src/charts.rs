//! SVG charts (plotters): err_pct per window with the threshold line and perturbation markers,
//! p50/p99 over time, revision share over time (cutover), and the system events as a strip.
//! One set per run of the main scenario (at most [`MAX_RUN_CHARTS`] runs), x in minutes since
//! the run's first window.

use std::collections::BTreeMap;

use plotters::prelude::*;

use crate::rule::BucketRow;
use crate::ts::iso_s;
use crate::{Analysis, Error};

pub const MAX_RUN_CHARTS: usize = 20;
const SIZE: (u32, u32) = (960, 320);
const PALETTE: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
];

fn err<E: std::fmt::Debug>(e: E) -> Error {
    Error::Internal(format!("chart: {e:?}"))
}

fn safe(s: &str) -> String {
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

/// Renders every chart: `(file name, svg)`.
pub fn render(a: &Analysis) -> Result<Vec<(String, String)>, Error> {
    let mut by_run: BTreeMap<&str, Vec<&BucketRow>> = BTreeMap::new();
    for r in a.q2.iter().filter(|r| r.scenario == "main") {
        by_run.entry(r.run_id.as_str()).or_default().push(r);
    }
    let mut out = Vec::new();
    for (run, rows) in by_run.into_iter().take(MAX_RUN_CHARTS) {
        let Some(t0) = rows.first().map(|r| r.start_ms) else {
            continue;
        };
        let markers: Vec<f64> = a
            .acc
            .markers
            .iter()
            .map(|m| m.ts.epoch_ms())
            .chain(
                a.acc
                    .system
                    .iter()
                    .filter(|e| e.reason == "RevisionDeactivating")
                    .map(|e| e.ts_ms),
            )
            .filter(|&m| {
                m >= t0
                    && rows
                        .last()
                        .is_some_and(|l| m <= l.start_ms + a.acc.window_ms)
            })
            .map(|m| (m - t0) as f64 / 60_000.0)
            .collect();
        let f = safe(run);
        out.push((
            format!("{f}-err-pct.svg"),
            err_chart(a, run, t0, &rows, &markers)?,
        ));
        out.push((format!("{f}-latency.svg"), latency_chart(run, t0, &rows)?));
        if rows
            .iter()
            .any(|r| r.served_by.keys().any(|k| k != "unknown"))
        {
            out.push((
                format!("{f}-revision-share.svg"),
                share_chart(run, t0, &rows)?,
            ));
        }
    }
    if !a.acc.system.is_empty() {
        out.push(("system-events.svg".into(), events_chart(a)?));
    }
    Ok(out)
}

fn x_of(t0: i64, ms: i64) -> f64 {
    (ms - t0) as f64 / 60_000.0
}

fn err_chart(
    a: &Analysis,
    run: &str,
    t0: i64,
    rows: &[&BucketRow],
    markers: &[f64],
) -> Result<String, Error> {
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let xmax = rows.last().map_or(1.0, |r| x_of(t0, r.start_ms)).max(0.1);
        let thr = a.rule.threshold_pct;
        let ymax = rows.iter().map(|r| r.err_pct).fold(thr * 2.0, f64::max) * 1.1;
        let mut c = ChartBuilder::on(&root)
            .caption(
                format!("{run}: err_pct per {} s window", a.rule.window_s),
                ("sans-serif", 16),
            )
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(55)
            .build_cartesian_2d(0f64..xmax, 0f64..ymax)
            .map_err(err)?;
        c.configure_mesh()
            .x_desc(format!("minutes since {}", iso_s(t0)))
            .y_desc("err %")
            .draw()
            .map_err(err)?;
        for &m in markers {
            c.draw_series(std::iter::once(PathElement::new(
                vec![(m, 0.0), (m, ymax)],
                RGBColor(200, 200, 200),
            )))
            .map_err(err)?;
        }
        c.draw_series(std::iter::once(PathElement::new(
            vec![(0.0, thr), (xmax, thr)],
            RED,
        )))
        .map_err(err)?
        .label(format!("threshold {thr} %"))
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 15, y)], RED));
        c.draw_series(LineSeries::new(
            rows.iter().map(|r| (x_of(t0, r.start_ms), r.err_pct)),
            PALETTE[0],
        ))
        .map_err(err)?
        .label("err_pct")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 15, y)], PALETTE[0]));
        c.draw_series(
            rows.iter()
                .filter(|r| r.is_bad(&a.rule))
                .map(|r| Circle::new((x_of(t0, r.start_ms), r.err_pct), 3, RED.filled())),
        )
        .map_err(err)?;
        c.configure_series_labels()
            .border_style(BLACK)
            .background_style(WHITE)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(s)
}

fn latency_chart(run: &str, t0: i64, rows: &[&BucketRow]) -> Result<String, Error> {
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let xmax = rows.last().map_or(1.0, |r| x_of(t0, r.start_ms)).max(0.1);
        let ymax = rows
            .iter()
            .filter_map(|r| r.p99_ms.or(r.p50_ms))
            .fold(1.0, f64::max)
            * 1.1;
        let mut c = ChartBuilder::on(&root)
            .caption(
                format!("{run}: latency per window (ms)"),
                ("sans-serif", 16),
            )
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(55)
            .build_cartesian_2d(0f64..xmax, 0f64..ymax)
            .map_err(err)?;
        c.configure_mesh()
            .x_desc(format!("minutes since {}", iso_s(t0)))
            .y_desc("ms")
            .draw()
            .map_err(err)?;
        for (i, (name, f)) in [
            (
                "p50",
                (|r: &BucketRow| r.p50_ms) as fn(&BucketRow) -> Option<f64>,
            ),
            ("p99", |r: &BucketRow| r.p99_ms),
        ]
        .into_iter()
        .enumerate()
        {
            let color = PALETTE[i];
            c.draw_series(LineSeries::new(
                rows.iter()
                    .filter_map(|r| f(r).map(|v| (x_of(t0, r.start_ms), v))),
                color,
            ))
            .map_err(err)?
            .label(name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 15, y)], color));
        }
        c.configure_series_labels()
            .border_style(BLACK)
            .background_style(WHITE)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(s)
}

fn share_chart(run: &str, t0: i64, rows: &[&BucketRow]) -> Result<String, Error> {
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let xmax = rows.last().map_or(1.0, |r| x_of(t0, r.start_ms)).max(0.1);
        let mut c = ChartBuilder::on(&root)
            .caption(
                format!("{run}: share of responses per revision (%)"),
                ("sans-serif", 16),
            )
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(55)
            .build_cartesian_2d(0f64..xmax, 0f64..105f64)
            .map_err(err)?;
        c.configure_mesh()
            .x_desc(format!("minutes since {}", iso_s(t0)))
            .y_desc("% of responses")
            .draw()
            .map_err(err)?;
        let revs: Vec<&String> = {
            let mut v: Vec<&String> = rows.iter().flat_map(|r| r.served_by.keys()).collect();
            v.sort();
            v.dedup();
            v
        };
        for (i, rev) in revs.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            c.draw_series(LineSeries::new(
                rows.iter().filter(|r| r.count > 0).map(|r| {
                    let n = r.served_by.get(*rev).copied().unwrap_or(0);
                    (x_of(t0, r.start_ms), n as f64 * 100.0 / r.count as f64)
                }),
                color,
            ))
            .map_err(err)?
            .label(rev.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 15, y)], color));
        }
        c.configure_series_labels()
            .border_style(BLACK)
            .background_style(WHITE)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(s)
}

fn events_chart(a: &Analysis) -> Result<String, Error> {
    let ev = &a.acc.system;
    let mut reasons: Vec<&str> = ev.iter().map(|e| e.reason.as_str()).collect();
    reasons.sort();
    reasons.dedup();
    let t0 = ev.first().map_or(0, |e| e.ts_ms);
    let xmax = ev.last().map_or(1.0, |e| x_of(t0, e.ts_ms)).max(0.1);
    let mut s = String::new();
    {
        let h = 80 + 24 * reasons.len() as u32;
        let root = SVGBackend::with_string(&mut s, (SIZE.0, h)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut c = ChartBuilder::on(&root)
            .caption("system events", ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(170)
            .build_cartesian_2d(0f64..xmax, 0f64..reasons.len() as f64)
            .map_err(err)?;
        let labels = reasons.clone();
        c.configure_mesh()
            .x_desc(format!("minutes since {}", iso_s(t0)))
            .y_labels(reasons.len() + 1)
            .y_label_formatter(&move |y| {
                let i = y.floor() as usize;
                labels.get(i).map(|s| (*s).to_owned()).unwrap_or_default()
            })
            .draw()
            .map_err(err)?;
        for (i, reason) in reasons.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            c.draw_series(
                ev.iter()
                    .filter(|e| e.reason == *reason)
                    .map(|e| Circle::new((x_of(t0, e.ts_ms), i as f64 + 0.5), 4, color.filled())),
            )
            .map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(s)
}
