//! What one record is: a console or system row (`Log_s`), one of our JSON lines, a k6 logfmt line,
//! or something else (counted and quoted). Every shape goes through [`scan`] first: a `req` line
//! (with or without `scheduled_ts`, any key order and whitespace) and a console row's `Log_s` are
//! read without allocating; what the scanner declines (nested values, escapes in a `req` field,
//! wrong types) goes to serde, which decides, and reports what it cannot read.

use std::borrow::Cow;

use logline::Line;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::fold::{KNOWN_KINDS, ReqIn, SystemCols, req, system_row, table_row, typed_line};
use super::logfmt::{is_logfmt, logfmt_msg, msg_into, msg_quote};
use super::scan::{self, InQuotes, Inner, Inside, Plain, Stop, Val};
use crate::read::model::{Acc, Loc, bump};
use crate::ts::parse_ms;

/// Buffers one reader reuses for every record (`Log_s` unescaped by the scan, the unescaped
/// logfmt `msg`).
#[derive(Default)]
pub(crate) struct Scratch {
    log: Vec<u8>,
    msg: Vec<u8>,
}

/// The fields of a record the analysis reads from any line or row, as the scanner found them.
#[derive(Default)]
struct Fields<'a> {
    kind: Option<Val<'a>>,
    ts: Option<Val<'a>>,
    run_id: Option<Val<'a>>,
    perturbation_id: Option<Val<'a>>,
    scenario: Option<Val<'a>>,
    scheduled_ts: Option<Val<'a>>,
    code: Option<Val<'a>>,
    dur_ms: Option<Val<'a>>,
    ok: Option<Val<'a>>,
    err_class: Option<Val<'a>>,
    err_msg: Option<Val<'a>>,
    revision: Option<Val<'a>>,
    replica: Option<Val<'a>>,
    log: Option<Val<'a>>,
    /// A column that makes the row a system row, or a table name.
    system: bool,
}

impl<'a> Fields<'a> {
    #[inline]
    fn take(&mut self, k: &[u8], v: Val<'a>) {
        // By length first: each arm then compares a few fixed-size words, not every key in turn.
        let slot = match (k.len(), k) {
            (4, b"kind") => &mut self.kind,
            (2, b"ts") => &mut self.ts,
            (6, b"run_id") => &mut self.run_id,
            (15, b"perturbation_id") => &mut self.perturbation_id,
            (8, b"scenario") => &mut self.scenario,
            (12, b"scheduled_ts") => &mut self.scheduled_ts,
            (4, b"code") => &mut self.code,
            (6, b"dur_ms") => &mut self.dur_ms,
            (2, b"ok") => &mut self.ok,
            (9, b"err_class") => &mut self.err_class,
            (7, b"err_msg") => &mut self.err_msg,
            (8, b"revision") => &mut self.revision,
            (7, b"replica") => &mut self.replica,
            (5, b"Log_s") => &mut self.log,
            (8, b"Reason_s") => {
                self.system = true;
                return;
            }
            (9, b"TableName") | (4, b"Type") => {
                if let Val::Str(s, _) = v
                    && memchr::memmem::find(s, b"SystemLogs").is_some()
                {
                    self.system = true;
                }
                return;
            }
            _ => return,
        };
        *slot = Some(v);
    }
}

/// `b` (a slice of `s`) as a `&str` of `s`: no copy, no second UTF-8 check.
#[inline]
fn sub<'a>(s: &'a str, b: &[u8]) -> Option<&'a str> {
    let start = (b.as_ptr() as usize).checked_sub(s.as_ptr() as usize)?;
    s.get(start..start + b.len())
}

/// An optional string field: absent or null is `Some(None)`; escaped or another type is `None`
/// (serde decides).
#[inline]
fn opt_str<'a>(s: &'a str, v: Option<Val<'_>>) -> Option<Option<&'a str>> {
    match v {
        None | Some(Val::Null) => Some(None),
        Some(Val::Str(b, false)) => Some(Some(sub(s, b)?)),
        Some(_) => None,
    }
}

/// One line of a line-shaped file (without its newline).
pub(crate) fn outer_line(acc: &mut Acc, sc: &mut Scratch, raw: &[u8], loc: &Loc) {
    let s = match std::str::from_utf8(raw) {
        Ok(s) => s.trim(),
        Err(_) => {
            let s = String::from_utf8_lossy(raw);
            acc.stats.unparseable_at(loc, s.trim(), "not UTF-8");
            return;
        }
    };
    if s.is_empty() {
        acc.stats.blank += 1;
        return;
    }
    if s.starts_with('{') {
        json_record(acc, sc, s, loc);
    } else if is_logfmt(s.as_bytes()) {
        logfmt_line(acc, &mut sc.msg, s, loc, true);
    } else {
        acc.stats
            .unparseable_at(loc, s, "neither JSON nor a k6 logfmt line");
    }
}

/// A JSON object at the top of a line-shaped file: a Log Analytics row, or one of our lines
/// printed directly.
pub(crate) fn json_record(acc: &mut Acc, sc: &mut Scratch, s: &str, loc: &Loc) {
    let mut f = Fields::default();
    let mut fi = Fields::default();
    let mut inner = Inner::new(&mut sc.log, |k, v| fi.take(k, v));
    let scanned =
        scan::object_into::<Plain, _>(s.as_bytes(), 0, b"Log_s", &mut inner, |k, v| f.take(k, v));
    let inside = inner.inside;
    // Anything after the object (the line is trimmed) is for serde to refuse.
    if scanned != Ok(s.len()) || !record(acc, sc, s, &f, (inside, &fi), loc) {
        json_slow(acc, s, loc, true);
    }
}

/// What became of a document's row.
pub(crate) enum Row {
    /// Read; the row ended at this index.
    Read(usize),
    /// The scanner read it but the fast paths do not take it: serde must.
    Slow,
}

/// The flat row object at the start of `b` (an element of a JSON list export): read when the fast
/// paths take it; `Err` when the scanner declines it or it is cut off.
pub(crate) fn row_at(acc: &mut Acc, sc: &mut Scratch, b: &[u8], loc: &Loc) -> Result<Row, Stop> {
    let mut f = Fields::default();
    let mut fi = Fields::default();
    let mut inner = Inner::new(&mut sc.log, |k, v| fi.take(k, v));
    let end = scan::object_into::<Plain, _>(b, 0, b"Log_s", &mut inner, |k, v| f.take(k, v))?;
    let inside = inner.inside;
    let Ok(s) = std::str::from_utf8(&b[..end]) else {
        return Ok(Row::Slow);
    };
    Ok(if record(acc, sc, s, &f, (inside, &fi), loc) {
        Row::Read(end)
    } else {
        Row::Slow
    })
}

/// The flat row array at the start of `b` (a query API row), its values named by `cols`.
pub(crate) fn api_row_at(
    acc: &mut Acc,
    sc: &mut Scratch,
    b: &[u8],
    cols: &[String],
    loc: &Loc,
) -> Result<Row, Stop> {
    let mut f = Fields::default();
    let mut fi = Fields::default();
    let mut extra = false;
    let log = cols.iter().position(|c| c == "Log_s");
    let mut inner = Inner::new(&mut sc.log, |k, v| fi.take(k, v));
    let end = scan::array_into(b, 0, log, &mut inner, |i, v| match cols.get(i) {
        Some(k) => f.take(k.as_bytes(), v),
        None => extra = true,
    })?;
    let inside = inner.inside;
    let Ok(s) = std::str::from_utf8(&b[..end]) else {
        return Ok(Row::Slow);
    };
    Ok(if !extra && record(acc, sc, s, &f, (inside, &fi), loc) {
        Row::Read(end)
    } else {
        Row::Slow
    })
}

/// A scanned record (line or row) through the fast paths: a console row's `Log_s` (read in
/// place when `inner` says so, else from its copy), or a `req` line. `false` when neither takes
/// it (the caller hands it to serde); nothing is folded then.
fn record(
    acc: &mut Acc,
    sc: &mut Scratch,
    s: &str,
    f: &Fields<'_>,
    inner: (Inside, &Fields<'_>),
    loc: &Loc,
) -> bool {
    let Some(log) = f.log else {
        return matches!(f.kind, Some(Val::Str(b"req", false))) && fast_req(acc, s, f);
    };
    if f.system {
        return false;
    }
    let Val::Str(raw, escaped) = log else {
        return false;
    };
    let Scratch { log, msg } = sc;
    let text = match inner {
        (Inside::Read, fi) => {
            if matches!(fi.kind, Some(Val::Str(b"req", false))) && fast_req(acc, s, fi) {
                acc.stats.kind("console-row");
                return true;
            }
            // Another kind of line, or a field the fast path does not take: read its copy.
            if !scan::unescape(raw, log) {
                return false;
            }
            std::str::from_utf8(log).ok()
        }
        (Inside::Copied, _) if escaped => std::str::from_utf8(log).ok(),
        (Inside::Copied, _) => sub(s, raw),
        (Inside::No, _) => None,
    };
    let Some(text) = text else {
        return false;
    };
    acc.stats.kind("console-row");
    inner_line_with(acc, msg, text, loc);
    true
}

/// A `req` line from the scanned fields; `false` when a field is not what the fast path reads
/// (serde then decides).
#[inline]
fn fast_req(acc: &mut Acc, s: &str, f: &Fields<'_>) -> bool {
    let Some(Val::Str(ts, false)) = f.ts else {
        return false;
    };
    let Some(ts_ms) = sub(s, ts).and_then(parse_ms) else {
        return false;
    };
    let Some(Val::Num(d)) = f.dur_ms else {
        return false;
    };
    let Some(dur_ms) = scan::f64_of(d).filter(|d| d.is_finite()) else {
        return false;
    };
    let Some(Val::Bool(ok)) = f.ok else {
        return false;
    };
    let code = match f.code {
        None | Some(Val::Null) => None,
        Some(Val::Num(c)) => match scan::u16_of(c) {
            Some(c) => Some(c),
            None => return false,
        },
        Some(_) => return false,
    };
    let (
        Some(run_id),
        Some(perturbation_id),
        Some(scenario),
        Some(err_class),
        Some(err_msg),
        Some(revision),
        Some(replica),
    ) = (
        opt_str(s, f.run_id),
        opt_str(s, f.perturbation_id),
        opt_str(s, f.scenario),
        opt_str(s, f.err_class),
        opt_str(s, f.err_msg),
        opt_str(s, f.revision),
        opt_str(s, f.replica),
    )
    else {
        return false;
    };
    // The scheduled time is only kept for failed requests: parsed only for them. Without one
    // (other clients), a request is taken to start when it was sent (`ts - dur_ms`).
    let scheduled_ms = if ok {
        ts_ms
    } else {
        match f.scheduled_ts {
            None | Some(Val::Null) => ts_ms - dur_ms.round() as i64,
            Some(Val::Str(b, false)) => match sub(s, b).and_then(parse_ms) {
                Some(ms) => ms,
                None => return false,
            },
            Some(_) => return false,
        }
    };
    acc.stats.req_fast += 1;
    req(
        acc,
        ReqIn {
            run_id: run_id.unwrap_or("unknown"),
            perturbation_id,
            scenario: scenario.unwrap_or("main"),
            ts_ms,
            scheduled_ms,
            code,
            dur_ms,
            ok,
            err_class,
            err_msg,
            revision,
            replica,
        },
    );
    true
}

/// The printed line inside a console row (`Log_s`), with a reader's buffers.
fn inner_line_with(acc: &mut Acc, msg: &mut Vec<u8>, raw: &str, loc: &Loc) {
    let s = raw.trim();
    if s.starts_with('{') {
        json_line(acc, s, loc, false);
    } else if is_logfmt(s.as_bytes()) {
        logfmt_line(acc, msg, s, loc, false);
    } else {
        acc.stats.foreign_at(loc, s);
    }
}

/// The printed line inside a console row (`Log_s`) of an export row read by serde.
pub(crate) fn inner_line(acc: &mut Acc, raw: &str, loc: &Loc) {
    inner_line_with(acc, &mut Vec::new(), raw, loc);
}

/// One row object of a JSON export (or an NDJSON row the fast path could not read): folded
/// ([`table_row`]), or, for a console row, its printed line parsed.
pub(crate) fn row_object(acc: &mut Acc, m: &Map<String, Value>, loc: &Loc) {
    if let Some(log) = table_row(acc, m, loc) {
        acc.stats.kind("console-row");
        inner_line(acc, &log, loc);
    }
}

/// A legacy k6 line: the JSON is the logfmt `msg` value.
fn logfmt_line(acc: &mut Acc, buf: &mut Vec<u8>, s: &str, loc: &Loc, top: bool) {
    if k6_req_in_place(acc, s) {
        acc.stats.kind("k6-logfmt");
        return;
    }
    let owned;
    let msg: &str = if msg_into(s.as_bytes(), buf).is_some()
        && let Ok(m) = std::str::from_utf8(buf)
    {
        m
    } else if let Some(m) = logfmt_msg(s) {
        owned = m;
        &owned
    } else {
        if top {
            acc.stats
                .unparseable_at(loc, s, "logfmt line without a quoted msg");
        } else {
            acc.stats.foreign_at(loc, s);
        }
        return;
    };
    let m = msg.trim();
    if m.starts_with('{') {
        acc.stats.kind("k6-logfmt");
        json_line(acc, m, loc, top);
    } else {
        // k6's own messages (progress, warnings): not ours, counted.
        acc.stats.foreign_at(loc, s);
    }
}

/// A k6 `req` line read where it lies: its `msg` value scanned as JSON in quotes
/// ([`InQuotes`]), not unescaped into a copy first. `false`, with nothing folded, when the
/// scanner or the fast path declines (a JSON escape in a value, another kind, a torn line): the
/// caller then unescapes `msg` and reads the copy.
#[inline]
fn k6_req_in_place(acc: &mut Acc, s: &str) -> bool {
    let b = s.as_bytes();
    let Some(q) = msg_quote(b) else {
        return false;
    };
    let mut f = Fields::default();
    let Ok(end) = scan::object::<InQuotes>(b, q + 1, |k, v| f.take(k, v)) else {
        return false;
    };
    // Only spaces may stand between the object and the quote that closes `msg`.
    let close = end + b[end..].iter().take_while(|&&c| c == b' ').count();
    b.get(close) == Some(&b'"')
        && matches!(f.kind, Some(Val::Str(b"req", false)))
        && fast_req(acc, s, &f)
}

/// One of our JSON lines (from `Log_s` or a k6 `msg`).
fn json_line(acc: &mut Acc, s: &str, loc: &Loc, top: bool) {
    let mut f = Fields::default();
    if scan::object::<Plain>(s.as_bytes(), 0, |k, v| f.take(k, v)) == Ok(s.len())
        && matches!(f.kind, Some(Val::Str(b"req", false)))
        && fast_req(acc, s, &f)
    {
        return;
    }
    json_slow(acc, s, loc, top);
}

/// The fields of a Log Analytics row we use (serde path).
#[derive(Deserialize)]
struct RowB<'a> {
    #[serde(rename = "Log_s", borrow, default)]
    log: Option<Cow<'a, str>>,
    #[serde(rename = "TimeGenerated", borrow, default)]
    time: Option<Cow<'a, str>>,
    #[serde(rename = "ContainerAppName_s", borrow, default)]
    app: Option<Cow<'a, str>>,
    #[serde(rename = "JobName_s", borrow, default)]
    job: Option<Cow<'a, str>>,
    #[serde(rename = "RevisionName_s", borrow, default)]
    revision: Option<Cow<'a, str>>,
    #[serde(rename = "ExecutionName_s", borrow, default)]
    execution: Option<Cow<'a, str>>,
    #[serde(rename = "ReplicaName_s", borrow, default)]
    replica: Option<Cow<'a, str>>,
    #[serde(rename = "Reason_s", borrow, default)]
    reason: Option<Cow<'a, str>>,
    #[serde(rename = "Type_s", borrow, default)]
    type_s: Option<Cow<'a, str>>,
}

/// A `req` line as serde reads it (escaped strings, `scheduled_ts` optional).
#[derive(Deserialize)]
struct ReqB<'a> {
    #[serde(borrow)]
    ts: Cow<'a, str>,
    #[serde(default, borrow)]
    run_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    perturbation_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    scenario: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    scheduled_ts: Option<Cow<'a, str>>,
    #[serde(default)]
    code: Option<u16>,
    dur_ms: f64,
    ok: bool,
    #[serde(default, borrow)]
    err_class: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    err_msg: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    revision: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    replica: Option<Cow<'a, str>>,
}

/// A line the scanner declined: serde reads it, or says why it cannot.
fn json_slow(acc: &mut Acc, s: &str, loc: &Loc, top: bool) {
    if top && memchr::memmem::find(s.as_bytes(), b"\"Log_s\"").is_some() {
        match serde_json::from_str::<RowB<'_>>(s) {
            Ok(row) => {
                if row.reason.is_some() {
                    system_row(
                        acc,
                        row.time.as_deref(),
                        &SystemCols {
                            app: row.app.as_deref().or(row.job.as_deref()),
                            revision: row.revision.as_deref(),
                            execution: row.execution.as_deref(),
                            replica: row.replica.as_deref(),
                            reason: row.reason.as_deref(),
                            log: row.log.as_deref(),
                            type_s: row.type_s.as_deref(),
                        },
                        loc,
                    );
                } else {
                    acc.stats.kind("console-row");
                    inner_line(acc, row.log.as_deref().unwrap_or(""), loc);
                }
            }
            Err(_) => match serde_json::from_str::<Map<String, Value>>(s) {
                Ok(m) => row_object(acc, &m, loc),
                Err(e) => acc.stats.unparseable_at(loc, s, &e.to_string()),
            },
        }
        return;
    }
    if let Ok(r) = serde_json::from_str::<ReqB<'_>>(s)
        && matches!(peek_kind(s).as_deref(), Some("req"))
        && let Some(ts_ms) = parse_ms(&r.ts)
        && r.dur_ms.is_finite()
    {
        let scheduled_ms = match r.scheduled_ts.as_deref() {
            _ if r.ok => Some(ts_ms),
            None => Some(ts_ms - r.dur_ms.round() as i64),
            Some(t) => parse_ms(t),
        };
        if let Some(scheduled_ms) = scheduled_ms {
            acc.stats.req_fast += 1;
            req(
                acc,
                ReqIn {
                    run_id: r.run_id.as_deref().unwrap_or("unknown"),
                    perturbation_id: r.perturbation_id.as_deref(),
                    scenario: r.scenario.as_deref().unwrap_or("main"),
                    ts_ms,
                    scheduled_ms,
                    code: r.code,
                    dur_ms: r.dur_ms,
                    ok: r.ok,
                    err_class: r.err_class.as_deref(),
                    err_msg: r.err_msg.as_deref(),
                    revision: r.revision.as_deref(),
                    replica: r.replica.as_deref(),
                },
            );
            return;
        }
    }
    match Line::from_json(s) {
        Ok(line) => typed_line(acc, line),
        Err(e) => match serde_json::from_str::<Map<String, Value>>(s) {
            Ok(m) => match m.get("kind").and_then(Value::as_str) {
                Some(k) if KNOWN_KINDS.contains(&k) => {
                    acc.stats
                        .unparseable_at(loc, s, &format!("bad {k} line: {e}"));
                }
                Some(k) => bump(&mut acc.stats.unknown_kind, k, 1),
                None if top => row_object(acc, &m, loc),
                None => acc.stats.foreign_at(loc, s),
            },
            Err(e) => {
                if top {
                    acc.stats.unparseable_at(loc, s, &e.to_string());
                } else {
                    acc.stats.foreign_at(loc, s);
                }
            }
        },
    }
}

/// The `kind` of a JSON object (serde, for the slow path: any escapes, any position).
fn peek_kind(s: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct K {
        kind: Option<String>,
    }
    serde_json::from_str::<K>(s).ok()?.kind
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(line: &str) -> Acc {
        let mut acc = Acc::new(10_000);
        let loc = Loc {
            file: "f".into(),
            line: 1,
        };
        outer_line(&mut acc, &mut Scratch::default(), line.as_bytes(), &loc);
        acc.finish();
        acc
    }

    fn reqs(a: &Acc) -> (u64, u64, u64) {
        a.runs
            .iter()
            .flat_map(|r| r.reqs.values())
            .fold((0, 0, 0), |x, w| {
                (x.0 + w.count, x.1 + w.err, x.2 + w.hist.len())
            })
    }

    const LINE: &str = r#"{"kind":"req","ts":"2026-06-12T14:18:20.123Z","run_id":"r","scenario":"main","scheduled_ts":"2026-06-12T14:18:20.100Z","code":503,"dur_ms":23.5,"ok":false,"err_class":"http_5xx","revision":"a","replica":null}"#;

    #[test]
    fn the_fast_path_reads_any_order_and_whitespace_without_scheduled_ts() {
        for line in [
            LINE.to_owned(),
            r#"{"ok": false, "dur_ms": 23.5, "code": 503, "ts": "2026-06-12T14:18:20.123Z", "kind": "req", "run_id": "r"}"#.to_owned(),
            LINE.replace(",", ",\t "),
        ] {
            let a = one(&line);
            assert_eq!(a.stats.by_kind.get("req"), Some(&1), "{line}");
            assert_eq!(a.stats.unparseable, 0);
            assert_eq!(reqs(&a), (1, 1, 1));
            assert_eq!(a.failed[0].ts_ms, 1_781_273_900_123);
            assert_eq!(a.failed[0].err_class.as_deref(), Some("http_5xx"));
        }
        // No scheduled_ts: the request is taken to start when sent.
        let a = one(&LINE.replace(r#""scheduled_ts":"2026-06-12T14:18:20.100Z","#, ""));
        assert_eq!(a.failed[0].scheduled_ms, 1_781_273_900_123 - 24);
    }

    #[test]
    fn what_the_scanner_declines_serde_reads_the_same_or_reports() {
        let fast = one(LINE);
        // escapes, nested values and odd types take the serde path
        for line in [
            LINE.replace("http_5xx", "http\\u005f5xx"),
            LINE.replace(r#""replica":null"#, r#""replica":null,"extra":{"a":[1]}"#),
        ] {
            let a = one(&line);
            assert_eq!(reqs(&a), reqs(&fast), "{line}");
            assert_eq!(a.failed[0].err_class.as_deref(), Some("http_5xx"));
        }
        for line in [
            LINE.replace(r#""code":503"#, r#""code":"503""#),
            LINE.replace(r#""ok":false,"#, ""),
            LINE.replace(r#""dur_ms":23.5"#, r#""dur_ms":"x""#),
            LINE.replace(r#""ts":"2026-06-12T14:18:20.123Z""#, r#""ts":"yesterday""#),
            LINE[..LINE.len() - 1].to_owned(),
        ] {
            let a = one(&line);
            assert_eq!(reqs(&a), (0, 0, 0), "{line}");
            assert_eq!(a.stats.unparseable, 1, "{line}");
            assert_eq!(a.stats.quoted.len(), 1);
        }
    }

    #[test]
    fn console_rows_and_k6_lines_unescape_the_inner_line() {
        let esc = serde_json::to_string(LINE).unwrap();
        let row = format!(
            r#"{{"ContainerAppName_s":"loadgen","Log_s":{esc},"TimeGenerated":"2026-06-12T14:18:20.124Z"}}"#
        );
        let a = one(&row);
        assert_eq!(a.stats.by_kind.get("console-row"), Some(&1));
        assert_eq!(reqs(&a), (1, 1, 1));
        let k6 = format!(
            r#"time="2026-06-12T14:18:20Z" level=info msg="{}" source=console"#,
            LINE.replace('"', "\\\"")
        );
        let a = one(&k6);
        assert_eq!(a.stats.by_kind.get("k6-logfmt"), Some(&1));
        assert_eq!(reqs(&a), (1, 1, 1));
        // a k6 line inside a console row
        let row = format!(
            r#"{{"Log_s":{},"TimeGenerated":"2026-06-12T14:18:20.124Z"}}"#,
            serde_json::to_string(&k6).unwrap()
        );
        assert_eq!(reqs(&one(&row)), (1, 1, 1));
        // a system row is not a console row
        let sys = r#"{"Log_s":"Stopping","Reason_s":"ContainerTerminated","TimeGenerated":"2026-06-12T14:18:20.124Z","ContainerAppName_s":"subject"}"#;
        let a = one(sys);
        assert_eq!(a.system.len(), 1);
        assert_eq!(a.system[0].reason, "ContainerTerminated");
    }

    /// `LINE` as k6 prints it: logrus logfmt, the JSON quoted as Go's `strconv.Quote` does.
    fn k6(json: &str) -> String {
        let q = json.replace('\\', "\\\\").replace('"', "\\\"");
        format!(r#"time="2026-06-12T14:18:20Z" level=info msg="{q}" source=console"#)
    }

    /// What a read counted: requests (count, err, samples), failed requests' (ts, err_msg),
    /// and the line counters.
    type Seen = ((u64, u64, u64), Vec<(i64, Option<String>)>, u64, u64);

    fn seen(a: &Acc) -> Seen {
        let failed = a
            .failed
            .iter()
            .map(|f| (f.ts_ms, f.err_msg.clone()))
            .collect();
        (reqs(a), failed, a.stats.unparseable, a.stats.foreign)
    }

    #[test]
    fn a_k6_line_is_read_in_place_as_its_unescaped_copy_would_be() {
        let plain = one(LINE);
        let a = one(&k6(LINE));
        assert_eq!(a.stats.by_kind.get("k6-logfmt"), Some(&1));
        assert_eq!(a.stats.by_kind.get("req"), Some(&1));
        assert_eq!(seen(&a), seen(&plain));
        assert_eq!(a.failed[0].scheduled_ms, plain.failed[0].scheduled_ms);
        assert!(k6_req_in_place(&mut Acc::new(10_000), &k6(LINE)));
        // Escaped quotes and backslashes in a value (`\\\"` in the logfmt): the in-place scan
        // declines, the unescaped copy is read, nothing is lost or changed.
        let quoted = LINE.replace(
            r#""replica":null"#,
            r#""err_msg":"upstream said \"no\" C:\\x","replica":null"#,
        );
        assert!(!k6_req_in_place(&mut Acc::new(10_000), &k6(&quoted)));
        let a = one(&k6(&quoted));
        assert_eq!(reqs(&a), (1, 1, 1));
        assert_eq!(
            a.failed[0].err_msg.as_deref(),
            Some(r#"upstream said "no" C:\x"#)
        );
        assert_eq!(a.stats.by_kind.get("k6-logfmt"), Some(&1));
        // Keys in any order, the JSON's and logfmt's; spaces after the JSON's separators; CRLF.
        let reordered = r#"{"ok": false, "dur_ms": 23.5, "code": 503, "ts": "2026-06-12T14:18:20.123Z", "kind": "req", "run_id": "r", "err_class": "http_5xx", "revision": "a", "scheduled_ts": "2026-06-12T14:18:20.100Z", "scenario": "main"}"#;
        let q = reordered.replace('"', "\\\"");
        for line in [
            k6(reordered),
            format!(r#"source=console msg="{q}" level=info time="2026-06-12T14:18:20Z""#),
            format!(r#"msg="{q}""#),
            format!("{}\r", k6(LINE)),
            format!(r#"level=info msg=" {q} " source=console"#),
        ] {
            let a = one(&line);
            assert_eq!(seen(&a), seen(&plain), "{line}");
        }
    }

    #[test]
    fn a_torn_or_odd_k6_line_is_reported_not_guessed() {
        let line = k6(LINE);
        // Torn anywhere inside the msg (the last line of a file a crash cut): unparseable, and
        // never a request read from half a line.
        let open = line.find("msg=\"").unwrap() + 5;
        let close = line.rfind('"').unwrap();
        for cut in open..close {
            let a = one(&line[..cut]);
            assert_eq!(reqs(&a), (0, 0, 0), "cut at {cut}: {}", &line[..cut]);
            assert_eq!(a.stats.unparseable + a.stats.foreign, 1, "cut at {cut}");
        }
        // Text after the JSON inside msg: serde refuses it, so do we.
        let q = LINE.replace('"', "\\\"");
        let a = one(&format!(r#"level=info msg="{q} and more""#));
        assert_eq!((reqs(&a), a.stats.unparseable), ((0, 0, 0), 1));
        // A logfmt escape between the JSON's tokens (a tab, `\t`): the in-place scan declines,
        // the unescaped copy is JSON with a tab in it, and is read.
        let a = one(&format!(
            r#"level=info msg="{}""#,
            q.replacen(',', ",\\t", 1)
        ));
        assert_eq!(seen(&a), seen(&one(LINE)));
        // k6's own messages are not ours: counted as foreign.
        let a = one(r#"time="2026-06-12T14:18:20Z" level=warn msg="Request Failed" error="EOF""#);
        assert_eq!((reqs(&a), a.stats.foreign), ((0, 0, 0), 1));
    }

    #[test]
    fn text_after_a_json_line_is_not_read_as_a_request() {
        for line in [
            format!("{LINE} x"),
            format!("{LINE}}}"),
            format!("{LINE},{LINE}"),
        ] {
            let a = one(&line);
            assert_eq!(reqs(&a), (0, 0, 0), "{line}");
            assert_eq!(a.stats.unparseable, 1, "{line}");
        }
    }

    #[test]
    fn unparseable_lines_are_counted_and_quoted() {
        for line in ["garbage", "{\"kind\":\"req\"", "\u{1}"] {
            let a = one(line);
            assert_eq!(a.stats.unparseable, 1, "{line}");
        }
        let mut acc = Acc::new(10_000);
        let loc = Loc {
            file: "f".into(),
            line: 1,
        };
        outer_line(&mut acc, &mut Scratch::default(), b"{\"a\":\"\xff\"}", &loc);
        assert_eq!(acc.stats.unparseable, 1);
        assert!(acc.stats.quoted[0].1.contains("not UTF-8"));
    }
}
