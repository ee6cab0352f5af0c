//! report.md: the verdict first (with how strong it is: the error rate's exact interval and what
//! the rule cannot see), then the fired events (fired at, new revision, transition, errors in
//! the window and the windows' error rate with its interval), gates, evidence statements, charts, tables and what the readers could
//! not parse. Deterministic (no generation timestamp) so it can be snapshot-tested.

use crate::judge::verdict::Status;
use crate::ts::iso_ms;
use crate::{Analysis, inputs_summary};

/// Rows of each table shown in the report (all rows are in `tables/`).
pub const MAX_REPORT_ROWS: usize = 40;

/// Renders the report; `charts` are file names under `charts/`.
pub fn render(a: &Analysis, charts: &[String]) -> String {
    let v = &a.verdict;
    let mut md = String::new();
    md.push_str(&format!(
        "# Verdict: {}\n\n",
        v.verdict.as_str().to_uppercase()
    ));
    md.push_str(&format!(
        "- **falsified:** {}\n- **hypothesis:** {}\n- **rule:** {}\n- **judged:** {} run(s), {} windows, {} requests, {} errors\n- **worst judged window:** {:.3} % {}\n- **evidence cap:** {}\n",
        v.falsified,
        v.hypothesis.as_deref().unwrap_or("(no lab file: the original lab's rule)"),
        v.rule_text,
        v.judged_runs.len(),
        v.judged_buckets,
        v.judged_requests,
        v.judged_errors,
        v.worst_bucket_err_pct,
        v.worst_bucket.as_deref().unwrap_or(""),
        a.cap.map_or("none".to_owned(), |c| c.tag().to_owned()),
    ));
    for (label, text) in v.strength_facts() {
        md.push_str(&format!("- **{label}:** {text}\n"));
    }
    if let Some(p) = a.runs_file.as_ref().ok().and_then(|r| r.platform()) {
        md.push_str(&format!("- **platform:** {p}\n"));
    }
    for r in &v.reasons {
        md.push_str(&format!("- **why:** {r}\n"));
    }
    md.push_str(&events_section(a));
    md.push_str(
        "\n## Gates\n\n| gate | kind | required | status | detail |\n|---|---|---|---|---|\n",
    );
    for g in &a.gates {
        let st = match g.status {
            Status::Pass => "pass",
            Status::Fail => "**FAIL**",
            Status::NotEvaluated => "not evaluated",
        };
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            g.name,
            g.kind,
            g.required,
            st,
            g.detail.replace('|', "\\|")
        ));
    }
    md.push_str("\n## Findings\n\n");
    for s in &a.statements {
        md.push_str(&format!("- {}\n", s.render()));
    }
    if !charts.is_empty() {
        md.push_str("\n## Charts\n\n");
        for c in charts {
            md.push_str(&format!("![{c}](charts/{c})\n\n"));
        }
    }
    md.push_str("\n## Tables\n");
    for t in &a.tables {
        md.push_str(&format!(
            "\n### {}\n\n`tables/{}.json`, `tables/{}.tsv`\n\n",
            t.title, t.name, t.name
        ));
        md.push_str(&t.to_markdown(MAX_REPORT_ROWS));
    }
    let s = a.stats();
    md.push_str("\n## Inputs\n\n");
    for (f, shape) in &s.files {
        md.push_str(&format!("- `{f}` ({shape})\n"));
    }
    let summary = inputs_summary(a);
    md.push_str(&format!(
        "\n{} lines read; by kind: {}; bucket rows: {}; other programs' lines: {}; unknown kinds: {}; **unparseable: {}**.\n",
        s.lines,
        summary["by_kind"],
        s.bucket_rows,
        s.foreign,
        summary["unknown_kind"],
        s.unparseable
    ));
    for (loc, text) in &s.quoted {
        md.push_str(&format!("\n- `{loc}`: `{}`", text.replace('`', "'")));
    }
    if !s.quoted.is_empty() {
        md.push('\n');
    }
    for w in &s.warnings {
        md.push_str(&format!("\n- warning: {w}\n"));
    }
    md
}

/// `## Events`: one row per fired event of `runs.json` (or why there is none).
pub fn events_section(a: &Analysis) -> String {
    let mut md = String::from("\n## Events\n\n");
    if a.events.is_empty() {
        md.push_str(match &a.runs_file {
            Ok(_) => "No step of runs.json fired an action.\n",
            Err(_) => "No runs.json: the fired events are unknown.\n",
        });
        return md;
    }
    md.push_str(
        "| step | event | kind | perturbation id | fired at | new revision | transition s | errors in window | windows' error rate (95 % CI) | observed |\n|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for e in &a.events {
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            e.step,
            e.event,
            e.kind,
            e.perturbation_id.as_deref().unwrap_or("-"),
            iso_ms(e.fired_ms),
            e.new_revision.as_deref().unwrap_or("-"),
            e.transition_s.map_or("-".to_owned(), |t| format!("{t:.1}")),
            e.errors_in_window,
            e.window_error_rate.map_or("-".to_owned(), |r| r.text()),
            if e.observed {
                "yes".to_owned()
            } else {
                format!(
                    "**NO**: {}",
                    e.problem.as_deref().unwrap_or("").replace('|', "\\|")
                )
            }
        ));
    }
    md
}
