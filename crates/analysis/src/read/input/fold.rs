//! Folding: every request, bucket, typed line and export row, whatever shape it was read from,
//! into the accumulator ([`Acc`]). Rows the fast paths do not read arrive here as serde values.

use std::borrow::Cow;
use std::collections::BTreeMap;

use logline::Line;
use logline::clock::window_start_ms;
use serde_json::{Map, Value};

use crate::read::model::{
    Acc, BucketWindow, FailedReq, Loc, MAX_FAILED, SystemEvent, bump, record_ms,
};
use crate::ts::parse_ms;

pub(crate) const KNOWN_KINDS: &[&str] = &[
    "meta",
    "bucket",
    "req",
    "step",
    "client",
    "summary",
    "RevisionStateSample",
    "ReplicaInventorySample",
    "JobExecutionSample",
    "PerturbationWindowMarker",
    "SamplerError",
    "subject",
    "log",
];

pub(crate) fn typed_line(acc: &mut Acc, line: Line) {
    acc.stats.kind(line.kind());
    match line {
        Line::Bucket(b) => {
            let start_ms = b.bucket_start_epoch_s * 1000;
            let scenario = b.scenario.clone();
            bucket(
                acc,
                BucketIn {
                    run_id: b.run_id.as_deref().unwrap_or("unknown"),
                    perturbation_id: b.perturbation_id.as_deref(),
                    scenario: &scenario,
                    start_ms,
                    window_s: Some(b.window_s),
                    count: b.count,
                    ok: b.ok,
                    err: b.err,
                    p50: b.p50_ms,
                    p95: b.p95_ms,
                    p99: b.p99_ms,
                    max: b.max_ms,
                    dropped: b.dropped,
                    target_rps: Some(b.target_rps),
                    maps: Some((b.status, b.errors, b.served_by)),
                },
            );
        }
        Line::Req(r) => {
            let run_id = r.run_id.clone().unwrap_or_else(|| "unknown".to_owned());
            req(
                acc,
                ReqIn {
                    run_id: &run_id,
                    perturbation_id: r.perturbation_id.as_deref(),
                    scenario: &r.scenario,
                    ts_ms: r.ts.epoch_ms(),
                    scheduled_ms: r.scheduled_ts.epoch_ms(),
                    code: r.code,
                    dur_ms: r.dur_ms,
                    ok: r.ok,
                    err_class: r.err_class.as_deref(),
                    err_msg: r.err_msg.as_deref(),
                    revision: r.revision.as_deref(),
                    replica: r.replica.as_deref(),
                },
            );
        }
        Line::Meta(m) => acc.metas.push(m),
        Line::Step(s) => acc.steps.push(s),
        Line::Client(c) => {
            let w = acc.window_ms;
            acc.clients.add(c, w);
        }
        Line::Summary(s) => acc.summaries.push(s),
        Line::RevisionStateSample(s) => acc.rev_samples.push(s),
        Line::ReplicaInventorySample(s) => acc.replica_samples.push(s),
        Line::JobExecutionSample(s) => acc.executions.push(s),
        Line::PerturbationWindowMarker(m) => acc.markers.push(m),
        Line::SamplerError(e) => acc.sampler_errors.push(e),
        Line::Subject(s) => {
            if s.event == logline::line::SubjectEvent::RequestEnd {
                bump(&mut acc.subject_requests, &s.app, 1);
            } else {
                acc.subject.push(s);
            }
        }
        Line::Log(_) => {}
    }
}

/// A request, whatever line it came from.
pub(crate) struct ReqIn<'a> {
    pub run_id: &'a str,
    pub perturbation_id: Option<&'a str>,
    pub scenario: &'a str,
    pub ts_ms: i64,
    pub scheduled_ms: i64,
    pub code: Option<u16>,
    pub dur_ms: f64,
    pub ok: bool,
    pub err_class: Option<&'a str>,
    pub err_msg: Option<&'a str>,
    pub revision: Option<&'a str>,
    pub replica: Option<&'a str>,
}

fn code_str(c: u16, buf: &mut [u8; 5]) -> &str {
    let mut n = c;
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 || i == 0 {
            break;
        }
    }
    std::str::from_utf8(&buf[i..]).unwrap_or("?")
}

/// The class of a failed request whose line names none: by its status as loadgen classes a
/// response (`http_5xx`, ...), `error` when no response arrived.
fn class_of(code: Option<u16>) -> &'static str {
    match code.map(|c| c / 100) {
        None => "error",
        Some(1) => "http_1xx",
        Some(2) => "http_2xx",
        Some(3) => "http_3xx",
        Some(4) => "http_4xx",
        Some(5) => "http_5xx",
        Some(_) => "http_other",
    }
}

pub(crate) fn req(acc: &mut Acc, r: ReqIn<'_>) {
    // Binned by completion time (`ts`), as loadgen's own buckets count a request in the window
    // it completes in.
    let win = window_start_ms(r.ts_ms, acc.window_ms);
    let keep_failed = !r.ok && acc.failed.len() < MAX_FAILED;
    if !r.ok && !keep_failed {
        acc.stats.failed_overflow += 1;
    }
    let run = acc.run(r.run_id, r.scenario);
    if let Some(p) = r.perturbation_id
        && !run.perturbation_ids.contains(p)
    {
        run.perturbation_ids.insert(p.to_owned());
    }
    run.req_first_ms = Some(
        run.req_first_ms
            .map_or(r.scheduled_ms, |f| f.min(r.scheduled_ms)),
    );
    run.req_last_ms = Some(
        run.req_last_ms
            .map_or(r.scheduled_ms, |f| f.max(r.scheduled_ms)),
    );
    if let Some(rev) = r.revision {
        run.saw_revision(rev, r.ts_ms);
    }
    let w = run.reqs.entry(win).or_default();
    w.count += 1;
    if r.ok {
        w.ok += 1;
    } else {
        w.err += 1;
        bump(
            &mut w.errors,
            r.err_class.unwrap_or_else(|| class_of(r.code)),
            1,
        );
        bump(&mut w.err_served_by, r.revision.unwrap_or("unknown"), 1);
    }
    record_ms(&mut w.hist, r.dur_ms);
    let mut b = [0u8; 5];
    bump(
        &mut w.status,
        r.code.map_or("none", |c| code_str(c, &mut b)),
        1,
    );
    bump(&mut w.served_by, r.revision.unwrap_or("unknown"), 1);
    if keep_failed {
        acc.failed.push(FailedReq {
            run_id: r.run_id.to_owned(),
            scenario: r.scenario.to_owned(),
            ts_ms: r.ts_ms,
            scheduled_ms: r.scheduled_ms,
            code: r.code,
            err_class: Some(r.err_class.unwrap_or_else(|| class_of(r.code)).to_owned()),
            err_msg: r.err_msg.map(str::to_owned),
            revision: r.revision.map(str::to_owned),
            replica: r.replica.map(str::to_owned),
            dur_ms: r.dur_ms,
        });
    }
}

type Maps = (
    BTreeMap<String, u64>,
    BTreeMap<String, u64>,
    BTreeMap<String, u64>,
);

/// A bucket, whatever line or row it came from.
pub(crate) struct BucketIn<'a> {
    pub run_id: &'a str,
    pub perturbation_id: Option<&'a str>,
    pub scenario: &'a str,
    pub start_ms: i64,
    pub window_s: Option<u64>,
    pub count: u64,
    pub ok: u64,
    pub err: u64,
    pub p50: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
    pub dropped: u64,
    pub target_rps: Option<f64>,
    pub maps: Option<Maps>,
}

pub(crate) fn bucket(acc: &mut Acc, b: BucketIn<'_>) {
    let window_ms = acc.window_ms;
    if let Some(ws) = b.window_s
        && (ws as i64) * 1000 > window_ms
    {
        acc.stats.warnings.insert(format!(
            "bucket lines of {ws} s are longer than the rule window of {} s; they are counted in the window holding their start",
            window_ms / 1000
        ));
    }
    let win = window_start_ms(b.start_ms, window_ms);
    let run = acc.run(b.run_id, b.scenario);
    if let Some(p) = b.perturbation_id
        && !run.perturbation_ids.contains(p)
    {
        run.perturbation_ids.insert(p.to_owned());
    }
    if let Some(ws) = b.window_s {
        run.bucket_source_windows.insert(ws);
    }
    let w: &mut BucketWindow = run.buckets.entry(win).or_default();
    w.add(b.count, b.ok, b.err, b.p50, b.p95, b.p99, b.max);
    w.dropped += b.dropped;
    if w.target_rps.is_none() {
        w.target_rps = b.target_rps;
    }
    if let Some((status, errors, served)) = b.maps {
        for (m, src) in [
            (&mut w.status, status),
            (&mut w.errors, errors),
            (&mut w.served_by, served),
        ] {
            for (k, v) in src {
                *m.entry(k).or_insert(0) += v;
            }
        }
    }
}

fn get_str<'a>(m: &'a Map<String, Value>, keys: &[&str]) -> Option<Cow<'a, str>> {
    for k in keys {
        match m.get(*k) {
            Some(Value::String(s)) if !s.is_empty() => return Some(Cow::Borrowed(s)),
            Some(Value::Number(n)) => return Some(Cow::Owned(n.to_string())),
            Some(Value::Bool(b)) => return Some(Cow::Owned(b.to_string())),
            _ => {}
        }
    }
    None
}

fn get_f64(m: &Map<String, Value>, keys: &[&str]) -> Option<f64> {
    get_str(m, keys).and_then(|s| s.trim().parse::<f64>().ok())
}

fn get_u64(m: &Map<String, Value>, keys: &[&str]) -> Option<u64> {
    get_f64(m, keys)
        .filter(|v| *v >= 0.0)
        .map(|v| v.round() as u64)
}

const START_KEYS: &[&str] = &[
    "bucket_start_iso",
    "bucket_iso",
    "bucket_start",
    "bucket",
    "window_start",
];
const TOTAL_KEYS: &[&str] = &["total", "total_count", "count", "requests", "req_total"];
const OK_KEYS: &[&str] = &["ok_total", "total_ok", "ok"];
const ERR_KEYS: &[&str] = &["err_total", "total_err", "err", "errors", "err_count"];

/// One row object of a JSON export (or an NDJSON row the fast path could not read), folded: a
/// system row, an aggregated bucket row, one of our lines with its fields as columns, or an
/// unparseable row counted. A console row is not folded here: its printed line (`Log_s`) is
/// returned for the caller to parse (`line::row_object`), so this module needs no parser.
pub(crate) fn table_row<'m>(
    acc: &mut Acc,
    m: &'m Map<String, Value>,
    loc: &Loc,
) -> Option<Cow<'m, str>> {
    let table = get_str(m, &["TableName", "Type"]).unwrap_or_default();
    let is_system = m.contains_key("Reason_s") || table.contains("SystemLogs");
    if is_system {
        system_row(
            acc,
            get_str(m, &["TimeGenerated"]).as_deref(),
            &SystemCols {
                app: get_str(m, &["ContainerAppName_s", "JobName_s"]).as_deref(),
                revision: get_str(m, &["RevisionName_s"]).as_deref(),
                execution: get_str(m, &["ExecutionName_s"]).as_deref(),
                replica: get_str(m, &["ReplicaName_s", "ContainerGroupName_s"]).as_deref(),
                reason: get_str(m, &["Reason_s"]).as_deref(),
                log: get_str(m, &["Log_s"]).as_deref(),
                type_s: get_str(m, &["Type_s"]).as_deref(),
            },
            loc,
        );
        return None;
    }
    if let Some(log) = get_str(m, &["Log_s"]) {
        return Some(log);
    }
    // An already-aggregated bucket table (the original lab's Q2 export).
    let start = get_str(m, START_KEYS)
        .and_then(|s| parse_ms(&s))
        .or_else(|| get_f64(m, &["bucket_start_epoch_s"]).map(|s| (s * 1000.0) as i64));
    let total = get_u64(m, TOTAL_KEYS);
    if let (Some(start_ms), Some(count)) = (start, total) {
        let err = get_u64(m, ERR_KEYS).unwrap_or(0);
        let ok = get_u64(m, OK_KEYS).unwrap_or(count.saturating_sub(err));
        let run_id = get_str(m, &["run_id"]).unwrap_or(Cow::Borrowed("unknown"));
        let pid = get_str(m, &["perturbation_id"]);
        let scenario = get_str(m, &["scenario"]).unwrap_or(Cow::Borrowed("main"));
        acc.stats.bucket_rows += 1;
        bucket(
            acc,
            BucketIn {
                run_id: &run_id,
                perturbation_id: pid.as_deref(),
                scenario: &scenario,
                start_ms,
                window_s: get_u64(m, &["window_s"]),
                count,
                ok,
                err,
                p50: get_f64(m, &["p50_ms"]),
                p95: get_f64(m, &["p95_ms"]),
                p99: get_f64(m, &["p99_ms"]),
                max: get_f64(m, &["max_ms"]),
                dropped: get_u64(m, &["dropped"]).unwrap_or(0),
                target_rps: get_f64(m, &["target_rps"]),
                maps: None,
            },
        );
        return None;
    }
    // A row that is one of our lines with its fields as columns.
    if m.contains_key("kind") {
        let v = Value::Object(m.clone());
        if let Ok(line) = serde_json::from_value::<Line>(v) {
            typed_line(acc, line);
            return None;
        }
    }
    let text = Value::Object(m.clone()).to_string();
    acc.stats.unparseable_at(
        loc,
        &text,
        "row is neither a log row (Log_s), a bucket row (bucket start + total) nor one of our lines",
    );
    None
}

/// The columns of a system row the analysis reads (any may be absent).
pub(crate) struct SystemCols<'a> {
    /// `ContainerAppName_s`, else `JobName_s`.
    pub app: Option<&'a str>,
    pub revision: Option<&'a str>,
    /// `ExecutionName_s` (a job's rows).
    pub execution: Option<&'a str>,
    pub replica: Option<&'a str>,
    pub reason: Option<&'a str>,
    pub log: Option<&'a str>,
    pub type_s: Option<&'a str>,
}

pub(crate) fn system_row(acc: &mut Acc, time: Option<&str>, c: &SystemCols<'_>, loc: &Loc) {
    let log = c.log;
    let Some(ts_ms) = time.and_then(parse_ms) else {
        acc.stats.unparseable_at(
            loc,
            log.unwrap_or(""),
            "system row without a valid TimeGenerated",
        );
        return;
    };
    acc.stats.kind("system-row");
    acc.system.push(SystemEvent {
        ts_ms,
        app: c.app.unwrap_or("").to_owned(),
        revision: c.revision.unwrap_or("").to_owned(),
        execution: c.execution.unwrap_or("").to_owned(),
        replica: c.replica.unwrap_or("").to_owned(),
        reason: c.reason.unwrap_or("").to_owned(),
        msg: log.unwrap_or("").to_owned(),
        kind: c.type_s.unwrap_or("").to_owned(),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_str_formats_without_allocating() {
        let mut b = [0u8; 5];
        assert_eq!(code_str(503, &mut b), "503");
        assert_eq!(code_str(0, &mut b), "0");
    }

    fn line(json: &str) -> Line {
        match serde_json::from_str(json) {
            Ok(l) => l,
            Err(e) => panic!("{json}: {e}"),
        }
    }

    /// One loadgen replica's `bucket` line for run `r` (window 10 s at epoch 1000 s).
    fn replica_bucket(count: u64, err: u64, p50: f64, p99: f64, served: &str) -> Line {
        line(&format!(
            r#"{{"kind":"bucket","ts":"1970-01-01T00:16:50.000Z","run_id":"r","window_s":10,
            "bucket_start_epoch_s":1000,"bucket_start_iso":"1970-01-01T00:16:40Z",
            "count":{count},"ok":{ok},"err":{err},"err_pct":0,"target_rps":200,
            "p50_ms":{p50},"p99_ms":{p99},"status":{{"200":{ok},"503":{err}}},
            "errors":{{"http_5xx":{err}}},"served_by":{{{served}}}}}"#,
            ok = count - err
        ))
    }

    fn replica_req(ms: u64, ok: bool) -> Line {
        line(&format!(
            r#"{{"kind":"req","ts":"1970-01-01T00:16:4{}.{ms:03}Z","run_id":"r",
            "scheduled_ts":"1970-01-01T00:16:40.000Z","code":{},"dur_ms":{ms},"ok":{ok}}}"#,
            ms % 10,
            if ok { 200 } else { 503 }
        ))
    }

    #[test]
    fn two_replicas_buckets_of_one_run_and_window_are_summed() {
        let mut acc = Acc::new(10_000);
        typed_line(&mut acc, replica_bucket(3, 1, 10.0, 40.0, r#""a":2"#));
        typed_line(&mut acc, replica_bucket(2, 0, 20.0, 30.0, r#""a":1,"b":1"#));
        for (ms, ok) in [(5, true), (6, true), (7, false), (8, true), (9, true)] {
            typed_line(&mut acc, replica_req(ms, ok));
        }
        for (n, step_rps, p50) in [(60, 100.0, 4.0), (40, 100.0, 9.0)] {
            typed_line(
                &mut acc,
                line(&format!(
                    r#"{{"kind":"step","ts":"1970-01-01T00:16:40Z","run_id":"r","step":1,
                    "target_rps":{step_rps},"duration_s":10,"count":{n},"ok":{n},"err":0,
                    "achieved_rps":{},"p50_ms":{p50},"p99_ms":{p50}}}"#,
                    n / 10
                )),
            );
        }
        acc.finish();
        assert_eq!(acc.runs.len(), 1, "one run, not one per replica");
        let run = &acc.runs[0];
        let w = &run.buckets[&1_000_000];
        assert_eq!((w.count, w.ok, w.err, w.lines), (5, 4, 1, 2));
        assert_eq!(w.status["200"], 4);
        assert_eq!(w.status["503"], 1);
        assert_eq!(w.errors["http_5xx"], 1);
        assert_eq!(w.served_by["a"], 3);
        assert_eq!(w.served_by["b"], 1);
        // Buckets carry percentiles, not histograms: p50 is the count-weighted mean of the
        // replicas' p50s, p99 the larger of their p99s.
        assert_eq!(w.p50_ms(), Some(14.0));
        assert_eq!(w.p99_ms, Some(40.0));
        // The req lines of both replicas cross-check the summed buckets: the same total, so
        // the buckets stay the source, and the req histogram is merged exactly.
        assert_eq!(run.bucket_totals(), (5, 1));
        assert_eq!(run.req_totals(), (5, 4, 1));
        assert!(!run.windows_from_reqs());
        assert_eq!(run.reqs[&1_000_000].hist.len(), 5);
        // The staircase step of both replicas reads as the load's: 200 RPS.
        assert_eq!(acc.steps.len(), 1);
        let st = &acc.steps[0];
        assert_eq!(
            (st.target_rps, st.count, st.achieved_rps),
            (200.0, 100, 10.0)
        );
        assert_eq!(st.p50_ms, Some(6.0));
        assert_eq!(st.p99_ms, Some(9.0));
    }

    #[test]
    fn a_failure_without_a_class_is_classed_by_its_status_as_loadgen_does() {
        assert_eq!(class_of(Some(503)), "http_5xx");
        assert_eq!(class_of(Some(404)), "http_4xx");
        assert_eq!(class_of(Some(700)), "http_other");
        assert_eq!(class_of(None), "error");
    }
}
