//! Load checks: `status_seen`, `no_errors`, `errors_at_least`, `recovers`, `slowest_between`,
//! `error_rate_between`, `served_share_between`, `errors_served_by`, over the windows of the
//! step's runs of the load (`bucket` lines, or `req` lines when the run has none). [Measured]

use lab::Check;
use serde_json::{Value, json};

use super::{Eval, Inputs, invalid, judged, load_runs, with};
use crate::judge::verdict::Status;
use crate::read::runs::RunsRecord;
use crate::ts::iso_ms;

/// One aligned window of the selected lines.
struct Win {
    run_id: String,
    start_ms: i64,
    count: u64,
    err: u64,
    status: u64,
    /// The slowest response of the window (ms), when its source tells it.
    max_ms: Option<f64>,
    /// Responses by the revision that served them.
    served_by: std::collections::BTreeMap<String, u64>,
}

/// The windows a load check judges (the step's runs of its load, one scenario), with the totals
/// and the names its detail uses.
struct LoadSel<'a> {
    load: &'a String,
    scenario: &'a str,
    /// `the run` or `step "name"`.
    where_: String,
    /// The run ids that have lines of the scenario.
    present: Vec<&'a str>,
    /// In time order (then run id).
    wins: Vec<Win>,
    requests: u64,
    errors: u64,
}

impl LoadSel<'_> {
    /// The Q2 row of window `w` (`<q2_name>#<index>`), when Q2 has it.
    fn row_of(&self, inp: &Inputs, w: &Win) -> Option<String> {
        inp.q2
            .iter()
            .position(|r| {
                r.run_id == w.run_id && r.scenario == self.scenario && r.start_ms == w.start_ms
            })
            .map(|i| format!("{}#{i}", inp.q2_name))
    }

    /// The Q2 rows of the windows for which `f` holds.
    fn rows_where(&self, inp: &Inputs, f: &dyn Fn(&Win) -> bool) -> Vec<String> {
        self.wins
            .iter()
            .filter(|w| f(w))
            .filter_map(|w| self.row_of(inp, w))
            .collect()
    }

    /// The numbers every load check reports.
    fn base(&self) -> Value {
        json!({"load": self.load, "scenario": self.scenario, "run_ids": self.present,
               "windows": self.wins.len(), "requests": self.requests, "errors": self.errors})
    }
}

/// Selects the windows of a load check: its step's (or every step's) runs of `load`, read from
/// the `req` lines when the run's windows come from them, else from its buckets.
fn load_windows<'a>(c: &'a Check, runs: &'a RunsRecord, inp: &Inputs) -> Result<LoadSel<'a>, Eval> {
    let Some(load) = &c.load else {
        return Err(invalid(format!("check kind {} needs `load`", c.kind)));
    };
    let scenario = c.scenario.as_deref().unwrap_or("main");
    let (run_ids, where_) = load_runs(c, load, runs)?;
    let code = c.status.map(|s| s.to_string());
    let mut wins: Vec<Win> = Vec::new();
    let mut present = Vec::new();
    for id in &run_ids {
        let Some(r) = inp
            .acc
            .runs
            .iter()
            .find(|r| r.run_id == *id && r.scenario == scenario)
        else {
            continue;
        };
        present.push(*id);
        let st = |m: &std::collections::BTreeMap<String, u64>| {
            code.as_ref().and_then(|k| m.get(k)).copied().unwrap_or(0)
        };
        if r.windows_from_reqs() {
            for (k, w) in &r.reqs {
                wins.push(Win {
                    run_id: id.to_string(),
                    start_ms: *k,
                    count: w.count,
                    err: w.err,
                    status: st(&w.status),
                    max_ms: (w.count > 0).then(|| w.hist.max() as f64 / 1000.0),
                    served_by: w.served_by.clone(),
                });
            }
        } else {
            for (k, w) in &r.buckets {
                wins.push(Win {
                    run_id: id.to_string(),
                    start_ms: *k,
                    count: w.count,
                    err: w.err,
                    status: st(&w.status),
                    max_ms: w.max_ms,
                    served_by: w.served_by.clone(),
                });
            }
        }
    }
    if present.is_empty() {
        return Err(invalid(format!(
            "no loadgen lines of scenario {scenario:?} for run(s) {} (load {load:?}, {where_})",
            run_ids.join(", ")
        )));
    }
    wins.sort_by(|a, b| (a.start_ms, &a.run_id).cmp(&(b.start_ms, &b.run_id)));
    let requests: u64 = wins.iter().map(|w| w.count).sum();
    let errors: u64 = wins.iter().map(|w| w.err).sum();
    Ok(LoadSel {
        load,
        scenario,
        where_,
        present,
        wins,
        requests,
        errors,
    })
}

/// A load check (`status_seen`, `no_errors`, `errors_at_least`, `recovers`) over its windows.
pub(super) fn load_check(c: &Check, runs: &RunsRecord, inp: &Inputs) -> Eval {
    let sel = match load_windows(c, runs, inp) {
        Ok(s) => s,
        Err(e) => return e,
    };
    let (load, scenario, where_) = (sel.load, sel.scenario, &sel.where_);
    let (requests, errors) = (sel.requests, sel.errors);
    match c.kind.as_str() {
        "status_seen" => {
            let Some(status) = c.status else {
                return invalid("status_seen needs `status`");
            };
            let min = c.min.unwrap_or(1.0);
            let seen: u64 = sel.wins.iter().map(|w| w.status).sum();
            judged(
                seen as f64 >= min,
                format!(
                    "{seen} response(s) with status {status} (need >= {min}) in {requests} requests of {load}/{scenario}, {where_}"
                ),
                with(
                    sel.base(),
                    json!({"status": status, "seen": seen, "min": min}),
                ),
                sel.rows_where(inp, &|w| w.status > 0),
            )
        }
        "no_errors" => {
            if requests == 0 {
                return invalid(format!(
                    "no requests of {load}/{scenario} in {where_}: nothing to judge"
                ));
            }
            judged(
                errors == 0,
                format!("{errors} error(s) in {requests} requests of {load}/{scenario}, {where_}"),
                sel.base(),
                sel.rows_where(inp, &|w| w.err > 0),
            )
        }
        "errors_at_least" => {
            let min = c.min.unwrap_or(1.0);
            judged(
                errors as f64 >= min,
                format!(
                    "{errors} error(s) (need >= {min}) in {requests} requests of {load}/{scenario}, {where_}"
                ),
                with(sel.base(), json!({"min": min})),
                sel.rows_where(inp, &|w| w.err > 0),
            )
        }
        "slowest_between" => slowest_between(c, &sel, inp),
        "error_rate_between" => error_rate_between(c, &sel, inp),
        "errors_served_by" => errors_served_by(c, &sel, inp),
        "served_share_between" => served_share_between(c, &sel, inp),
        _ => recovers(&sel, inp),
    }
}

/// `slowest_between`: the slowest response of the windows (their largest `max_ms`: a bucket's
/// max, or the slowest `req` line) is within `[min, max]` ms. Not evaluated without requests or
/// when no window tells its slowest response.
fn slowest_between(c: &Check, sel: &LoadSel, inp: &Inputs) -> Eval {
    let (load, scenario, where_) = (sel.load, sel.scenario, &sel.where_);
    let (Some(lo), Some(hi)) = (c.min, c.max) else {
        return invalid("slowest_between needs `min` and `max` (ms)");
    };
    if sel.requests == 0 {
        return invalid(format!(
            "no requests of {load}/{scenario} in {where_}: nothing to judge"
        ));
    }
    let slowest = sel
        .wins
        .iter()
        .filter_map(|w| w.max_ms.map(|m| (m, w)))
        .max_by(|a, b| a.0.total_cmp(&b.0));
    let Some((ms, win)) = slowest else {
        return invalid(format!(
            "no window of {load}/{scenario} in {where_} tells its slowest response"
        ));
    };
    let ok = ms >= lo && ms <= hi;
    judged(
        ok,
        format!(
            "slowest response {ms:.0} ms (must be {lo}-{hi} ms) of {} requests of {load}/{scenario}, {where_}, in the window at {}",
            sel.requests,
            iso_ms(win.start_ms)
        ),
        with(
            sel.base(),
            json!({"slowest_ms": ms, "min_ms": lo, "max_ms": hi,
                   "window": iso_ms(win.start_ms)}),
        ),
        sel.row_of(inp, win).into_iter().collect(),
    )
}

/// `error_rate_between`: each window with at least `min_requests` requests has an error rate in
/// `[min_pct, max_pct]`. Not evaluated when no window has that many requests.
fn error_rate_between(c: &Check, sel: &LoadSel, inp: &Inputs) -> Eval {
    let (load, scenario, where_) = (sel.load, sel.scenario, &sel.where_);
    let (Some(lo), Some(hi)) = (c.min_pct, c.max_pct) else {
        return invalid("error_rate_between needs `min_pct` and `max_pct`");
    };
    let floor = c.min_requests.unwrap_or(lab::checks::DEFAULT_MIN_REQUESTS);
    let pct_of = |w: &Win| logline::line::err_pct(w.err, w.count);
    let judged_wins: Vec<&Win> = sel.wins.iter().filter(|w| w.count >= floor).collect();
    let skipped = sel.wins.len() - judged_wins.len();
    if judged_wins.is_empty() {
        return invalid(format!(
            "no window of {load}/{scenario} in {where_} holds {floor} requests ({} window(s), {} requests): no error rate to judge",
            sel.wins.len(),
            sel.requests
        ));
    }
    let outside = |w: &Win| {
        let p = pct_of(w);
        p < lo || p > hi
    };
    let bad: Vec<&&Win> = judged_wins.iter().filter(|w| outside(w)).collect();
    let rates: Vec<Value> = judged_wins
        .iter()
        .map(|w| {
            json!({"window": iso_ms(w.start_ms), "requests": w.count, "errors": w.err,
                        "err_pct": (pct_of(w) * 1000.0).round() / 1000.0})
        })
        .collect();
    let (min_seen, max_seen) = judged_wins
        .iter()
        .map(|w| pct_of(w))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
            (a.min(p), b.max(p))
        });
    judged(
        bad.is_empty(),
        format!(
            "{} of {} window(s) with >= {floor} requests outside {lo}-{hi} % errors (seen {min_seen:.2}-{max_seen:.2} %), {} smaller window(s) not judged, {load}/{scenario}, {where_}",
            bad.len(),
            judged_wins.len(),
            skipped
        ),
        with(
            sel.base(),
            json!({"min_pct": lo, "max_pct": hi, "min_requests": floor,
                   "judged": judged_wins.len(), "outside": bad.len(), "not_judged": skipped,
                   "min_err_pct": min_seen, "max_err_pct": max_seen, "per_window": rates}),
        ),
        sel.rows_where(inp, &|w| w.count >= floor && outside(w)),
    )
}

/// `served_share_between`: the share of the responses served by `<app>--<revision>`.
fn served_share_between(c: &Check, sel: &LoadSel, inp: &Inputs) -> Eval {
    let (load, scenario, where_) = (sel.load, sel.scenario, &sel.where_);
    let (Some(app), Some(sfx), Some(lo), Some(hi)) = (&c.app, &c.revision, c.min_pct, c.max_pct)
    else {
        return invalid("served_share_between needs `app`, `revision`, `min_pct` and `max_pct`");
    };
    let want = lab::arm_body::revision_name(app, sfx);
    let mut by_rev: std::collections::BTreeMap<&str, u64> = Default::default();
    for w in &sel.wins {
        for (k, v) in &w.served_by {
            *by_rev.entry(k.as_str()).or_insert(0) += v;
        }
    }
    let responses: u64 = by_rev.values().sum();
    if responses == 0 {
        return invalid(format!(
            "no response of {load}/{scenario} in {where_}: no share to judge"
        ));
    }
    let mine = by_rev.get(want.as_str()).copied().unwrap_or(0);
    let share = mine as f64 * 100.0 / responses as f64;
    let list: Vec<String> = by_rev.iter().map(|(k, v)| format!("{k} {v}")).collect();
    judged(
        share >= lo && share <= hi,
        format!(
            "{want} served {mine} of {responses} responses ({share:.2} %, must be {lo}-{hi} %) of {load}/{scenario}, {where_}: {}",
            list.join(", ")
        ),
        with(
            sel.base(),
            json!({"revision": want, "served": mine, "responses": responses,
                   "share_pct": share, "min_pct": lo, "max_pct": hi, "served_by": by_rev}),
        ),
        sel.rows_where(inp, &|w| w.count > 0),
    )
}

/// `errors_served_by`: every failed request of the runs was answered by `<app>--<revision>`,
/// read from their `req` lines, which must hold every error the windows count.
fn errors_served_by(c: &Check, sel: &LoadSel, inp: &Inputs) -> Eval {
    let (load, scenario, where_) = (sel.load, sel.scenario, &sel.where_);
    let (Some(app), Some(sfx)) = (&c.app, &c.revision) else {
        return invalid("errors_served_by needs `app` and `revision`");
    };
    let want = lab::arm_body::revision_name(app, sfx);
    let mut by_rev: std::collections::BTreeMap<String, u64> = Default::default();
    for r in inp
        .acc
        .runs
        .iter()
        .filter(|r| r.scenario == scenario && sel.present.contains(&r.run_id.as_str()))
    {
        for (k, v) in r.req_errors_by_revision() {
            *by_rev.entry(k).or_insert(0) += v;
        }
    }
    let attributed: u64 = by_rev.values().sum();
    let numbers = with(
        sel.base(),
        json!({"revision": want, "errors_by_revision": by_rev, "attributed": attributed}),
    );
    if attributed < sel.errors {
        return Eval {
            status: Status::NotEvaluated,
            detail: format!(
                "the windows of {load}/{scenario} in {where_} count {} error(s), its req lines hold {attributed}: {} cannot be attributed to a revision (req lines lost, or log_requests = none)",
                sel.errors,
                sel.errors - attributed
            ),
            numbers,
            rows: Vec::new(),
        };
    }
    if attributed > sel.errors {
        return Eval {
            status: Status::NotEvaluated,
            detail: format!(
                "the req lines of {load}/{scenario} in {where_} hold {attributed} error(s), its windows count {}: the two sources disagree, so the attribution is not judged",
                sel.errors
            ),
            numbers,
            rows: Vec::new(),
        };
    }
    let elsewhere: u64 = by_rev
        .iter()
        .filter(|(k, _)| **k != want)
        .map(|(_, v)| v)
        .sum();
    let list: Vec<String> = by_rev.iter().map(|(k, v)| format!("{k} {v}")).collect();
    let detail = if attributed == 0 {
        format!(
            "no error in {} requests of {load}/{scenario}, {where_}: none served by another revision than {want}",
            sel.requests
        )
    } else {
        format!(
            "{} of {attributed} error(s) served by another revision than {want} ({}), {load}/{scenario}, {where_}",
            elsewhere,
            list.join(", ")
        )
    };
    judged(
        elsewhere == 0,
        detail,
        numbers,
        sel.rows_where(inp, &|w| w.err > 0),
    )
}

/// `recovers`: the windows have errors, and the last window with requests has none.
fn recovers(sel: &LoadSel, inp: &Inputs) -> Eval {
    let (load, scenario, where_) = (sel.load, sel.scenario, &sel.where_);
    let (requests, wins) = (sel.requests, &sel.wins);
    let last_bad = wins.iter().rposition(|w| w.err > 0);
    let last_served = wins.iter().rposition(|w| w.count > 0);
    let Some(last_served) = last_served else {
        return invalid(format!(
            "no requests of {load}/{scenario} in {where_}: nothing to judge"
        ));
    };
    let ok = last_bad.is_some_and(|b| last_served > b);
    let detail = match last_bad {
        None => format!(
            "no errors at all in {requests} requests of {load}/{scenario}, {where_}: nothing to recover from"
        ),
        Some(b) if ok => format!(
            "errors until the window at {}, then {} window(s) with requests and none",
            iso_ms(wins[b].start_ms),
            wins[b + 1..].iter().filter(|w| w.count > 0).count()
        ),
        Some(b) => format!(
            "still failing in the last window with requests ({})",
            iso_ms(wins[b].start_ms)
        ),
    };
    let mut rows: Vec<String> = Vec::new();
    if let Some(r) = last_bad.and_then(|b| sel.row_of(inp, &wins[b])) {
        rows.push(r);
    }
    if let Some(r) = sel.row_of(inp, &wins[last_served]) {
        rows.push(r);
    }
    judged(
        ok,
        detail,
        with(
            sel.base(),
            json!({"last_error_window": last_bad.map(|b| iso_ms(wins[b].start_ms)),
                   "last_window_with_requests": iso_ms(wins[last_served].start_ms)}),
        ),
        rows,
    )
}
