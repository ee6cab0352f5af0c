//! report.html: the same analysis as report.md, for a browser. One self-contained file: inline
//! CSS and SVG, no script, no font or image from elsewhere, and a Content-Security-Policy
//! (`default-src 'none'`) that forbids any request, so it opens offline and leaks nothing.
//!
//! Order: the verdict and the gates; the lab's shared-time-axis timeline
//! ([`crate::render::timeline_svg`]); the per-event table ([`crate::EventSummary`]); the findings; one
//! timeline zoomed on each step that fired an action; the tables; the inputs. Deterministic for
//! a given analysis (no generation time), except the live view's note.

use std::fmt::Write as _;

use serde_json::Value;

use crate::judge::verdict::Status;
use crate::render::report::MAX_REPORT_ROWS;
use crate::render::timeline_svg::{self, esc};
use crate::ts::iso_s;
use crate::{Analysis, EventSummary};

/// The file name in an evidence pack.
pub const REPORT_HTML: &str = "report.html";

/// The policy in every report.html: nothing may be fetched; inline styles only.
pub const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'";

/// How to render.
#[derive(Clone, Debug, Default)]
pub struct HtmlOptions {
    /// The live view (`labctl lab run --dashboard`): reload every this many seconds.
    pub refresh_s: Option<u64>,
    /// A line shown above the verdict (the live view says the run is still going).
    pub banner: Option<String>,
}

const STYLE: &str = r#"
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1140px;padding:16px;color:#222;background:#fff}
h1{margin:.2em 0}h2{margin-top:1.6em;border-bottom:1px solid #ddd;padding-bottom:.2em}
.banner{background:#fff3cd;border:1px solid #e0c060;padding:6px 10px;margin-bottom:10px}
.verdict{padding:10px 14px;border-radius:6px;border:2px solid}
.verdict.held{border-color:#2ca02c;background:#eef8ee}
.verdict.falsified{border-color:#d62728;background:#fbeeee}
.verdict.invalid{border-color:#b8860b;background:#fbf6e6}
dl.facts{display:grid;grid-template-columns:max-content auto;gap:2px 12px;margin:.6em 0 0}
dl.facts dt{font-weight:600}dl.facts dd{margin:0}
table{border-collapse:collapse;font-size:13px;margin:.4em 0}
th,td{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f2f2f2}
tr.fail td.status{color:#b00;font-weight:700}tr.pass td.status{color:#1a7f1a}
tr.not-evaluated td.status{color:#777}
tr.not-observed td{background:#fdf0f0}
.scroll{overflow-x:auto}
svg.timeline{max-width:100%;height:auto;border:1px solid #ddd}
details{margin:.4em 0}summary{cursor:pointer;font-weight:600}
code{background:#f4f4f4;padding:0 3px}
.muted{color:#666}
"#;

fn cell(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Renders report.html.
pub fn render(a: &Analysis, events: &[EventSummary], opts: &HtmlOptions) -> String {
    let mut h = String::new();
    head(&mut h, a.verdict.verdict.as_str(), opts);
    verdict_section(&mut h, a);
    gates_section(&mut h, a);
    timeline_section(&mut h, a);
    events_section(&mut h, events);
    findings_section(&mut h, a);
    steps_section(&mut h, a);
    tables_section(&mut h, a);
    inputs_section(&mut h, a);
    h.push_str("</body>\n</html>\n");
    h
}

/// The document's head (the policy, the live view's refresh, the style) and the live banner.
fn head(h: &mut String, verdict: &str, opts: &HtmlOptions) {
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    let _ = writeln!(
        h,
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">"
    );
    h.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    if let Some(s) = opts.refresh_s {
        let _ = writeln!(h, "<meta http-equiv=\"refresh\" content=\"{s}\">");
    }
    let _ = writeln!(
        h,
        "<title>Verdict: {} — probelab report</title>\n<style>{STYLE}</style>\n</head>\n<body>",
        verdict.to_uppercase()
    );
    if let Some(b) = &opts.banner {
        let _ = writeln!(h, "<div class=\"banner\" id=\"live\">{}</div>", esc(b));
    }
}

/// The verdict and its facts (hypothesis, rule, what was judged, the evidence cap, why).
fn verdict_section(h: &mut String, a: &Analysis) {
    let v = &a.verdict;
    let verdict = v.verdict.as_str();
    let _ = writeln!(
        h,
        "<section class=\"verdict {verdict}\" id=\"verdict\" data-verdict=\"{verdict}\">\n<h1>Verdict: {}</h1>",
        verdict.to_uppercase()
    );
    h.push_str("<dl class=\"facts\">\n");
    let fact = |h: &mut String, k: &str, v: &str| {
        let _ = writeln!(h, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(v));
    };
    fact(
        h,
        "hypothesis",
        v.hypothesis
            .as_deref()
            .unwrap_or("(no lab file: the original lab's rule)"),
    );
    fact(h, "rule", &v.rule_text);
    fact(h, "falsified", &v.falsified.to_string());
    fact(
        h,
        "judged",
        &format!(
            "{} run(s), {} windows, {} requests, {} errors",
            v.judged_runs.len(),
            v.judged_buckets,
            v.judged_requests,
            v.judged_errors
        ),
    );
    fact(
        h,
        "worst judged window",
        &format!(
            "{:.3} % {}",
            v.worst_bucket_err_pct,
            v.worst_bucket.as_deref().unwrap_or("")
        ),
    );
    fact(h, "evidence cap", a.cap.map_or("none", |c| c.tag()));
    for (label, text) in v.strength_facts() {
        fact(h, label, &text);
    }
    if let Some(p) = a.runs_file.as_ref().ok().and_then(|r| r.platform()) {
        fact(h, "platform", &p);
    }
    for r in &v.reasons {
        fact(h, "why", r);
    }
    h.push_str("</dl>\n</section>\n");
}

/// The gates, one table row each.
fn gates_section(h: &mut String, a: &Analysis) {
    h.push_str("<section id=\"gates\">\n<h2>Gates</h2>\n<div class=\"scroll\"><table>\n<thead><tr><th>gate</th><th>kind</th><th>required</th><th>status</th><th>detail</th></tr></thead>\n<tbody>\n");
    for g in &a.gates {
        let (class, st) = match g.status {
            Status::Pass => ("pass", "pass"),
            Status::Fail => ("fail", "FAIL"),
            Status::NotEvaluated => ("not-evaluated", "not evaluated"),
        };
        let _ = writeln!(
            h,
            "<tr class=\"gate {class}\" data-gate=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td class=\"status\">{st}</td><td>{}</td></tr>",
            esc(&g.name),
            esc(&g.name),
            esc(g.kind),
            g.required,
            esc(&g.detail)
        );
    }
    if a.gates.is_empty() {
        h.push_str("<tr><td colspan=\"5\" class=\"muted\">no gates</td></tr>\n");
    }
    h.push_str("</tbody></table></div>\n</section>\n");
}

/// The lab's shared-time-axis timeline.
fn timeline_section(h: &mut String, a: &Analysis) {
    h.push_str("<section id=\"timeline-section\">\n<h2>Timeline</h2>\n");
    match timeline_svg::lab(a) {
        Some(svg) => {
            h.push_str(if a.lab.is_observation() {
                "<p class=\"muted\">Every panel shares one clock; a red vertical line marks each perturbation event (hover for its id). An observation lab has no threshold: no window is marked.</p>\n"
            } else {
                "<p class=\"muted\">Every panel shares one clock; a red vertical line marks each perturbation event (hover for its id), red dots the windows above the threshold.</p>\n"
            });
            h.push_str(&svg);
            h.push('\n');
        }
        None => h.push_str("<p class=\"muted\">No windows and no steps to draw.</p>\n"),
    }
    h.push_str("</section>\n");
}

/// The per-event table.
fn events_section(h: &mut String, events: &[EventSummary]) {
    h.push_str("<section id=\"events\">\n<h2>Per event</h2>\n");
    if events.is_empty() {
        h.push_str(
            "<p class=\"muted\">No per-event summary: no runs.json, or no step fired an event.</p>\n",
        );
    } else {
        h.push_str("<div class=\"scroll\"><table>\n<thead><tr><th>step</th><th>event</th><th>kind</th><th>fired</th><th>new revision</th><th>transition (s)</th><th>errors in window</th><th>windows' error rate (95 % CI)</th><th>observed</th><th>perturbation id</th><th>problem</th></tr></thead>\n<tbody>\n");
        for e in events {
            let _ = writeln!(
                h,
                "<tr class=\"event {}\" data-step=\"{}\" data-event=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                if e.observed {
                    "observed"
                } else {
                    "not-observed"
                },
                esc(&e.step),
                e.event,
                esc(&e.step),
                e.event,
                esc(&e.kind),
                iso_s(e.fired_ms),
                esc(e.new_revision.as_deref().unwrap_or("")),
                e.transition_s
                    .map(|t| format!("{t:.1}"))
                    .unwrap_or_default(),
                e.errors_in_window,
                e.window_error_rate.map(|r| r.text()).unwrap_or_default(),
                if e.observed { "yes" } else { "NO" },
                esc(e.perturbation_id.as_deref().unwrap_or("")),
                esc(e.problem.as_deref().unwrap_or(""))
            );
        }
        h.push_str("</tbody></table></div>\n");
    }
    h.push_str("</section>\n");
}

/// The findings, one list item per statement.
fn findings_section(h: &mut String, a: &Analysis) {
    h.push_str("<section id=\"findings\">\n<h2>Findings</h2>\n<ul>\n");
    for s in &a.statements {
        let _ = writeln!(h, "<li>{}</li>", esc(&s.render()));
    }
    h.push_str("</ul>\n</section>\n");
}

/// One timeline zoomed on each step that fired an action (no section when none did).
fn steps_section(h: &mut String, a: &Analysis) {
    let steps = timeline_svg::per_step(a);
    if !steps.is_empty() {
        h.push_str("<section id=\"steps\">\n<h2>Steps with perturbations</h2>\n");
        for (name, svg) in steps {
            let _ = writeln!(
                h,
                "<details class=\"step-timeline\" data-step=\"{}\"><summary>{}</summary>\n{svg}\n</details>",
                esc(&name),
                esc(&name)
            );
        }
        h.push_str("</section>\n");
    }
}

/// Every table, its first [`MAX_REPORT_ROWS`] rows, each in a `<details>`.
fn tables_section(h: &mut String, a: &Analysis) {
    let _ = writeln!(
        h,
        "<section id=\"tables\">\n<h2>Tables</h2>\n<p class=\"muted\">The first {MAX_REPORT_ROWS} rows of each; every row is in <code>tables/</code>.</p>"
    );
    for t in &a.tables {
        let _ = writeln!(
            h,
            "<details data-table=\"{}\"><summary>{} <span class=\"muted\">({} rows; <code>tables/{}.json</code>)</span></summary>\n<div class=\"scroll\"><table>\n<thead><tr>",
            esc(&t.name),
            esc(&t.title),
            t.rows.len(),
            esc(&t.name)
        );
        for c in &t.columns {
            let _ = write!(h, "<th>{}</th>", esc(c));
        }
        h.push_str("</tr></thead>\n<tbody>\n");
        for r in t.rows.iter().take(MAX_REPORT_ROWS) {
            h.push_str("<tr>");
            for v in r {
                let _ = write!(h, "<td>{}</td>", esc(&cell(v)));
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</tbody></table></div>\n</details>\n");
    }
    h.push_str("</section>\n");
}

/// The inputs read: files and their shapes, line counts, quoted bad lines, warnings.
fn inputs_section(h: &mut String, a: &Analysis) {
    let s = a.stats();
    h.push_str("<section id=\"inputs\">\n<h2>Inputs</h2>\n<ul>\n");
    for (f, shape) in &s.files {
        let _ = writeln!(h, "<li><code>{}</code> ({})</li>", esc(f), esc(shape));
    }
    let _ = writeln!(
        h,
        "</ul>\n<p>{} lines read; bucket rows: {}; other programs' lines: {}; <strong>unparseable: {}</strong>.</p>",
        s.lines, s.bucket_rows, s.foreign, s.unparseable
    );
    for (loc, text) in &s.quoted {
        let _ = writeln!(
            h,
            "<p><code>{}</code>: <code>{}</code></p>",
            esc(&loc.to_string()),
            esc(text)
        );
    }
    for w in &s.warnings {
        let _ = writeln!(h, "<p>warning: {}</p>", esc(w));
    }
    h.push_str("</section>\n");
}
