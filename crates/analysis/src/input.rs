//! Readers: auto-detect each input's shape and fold its lines into an [`Acc`].
//!
//! Shapes, mixable in one call:
//! - NDJSON `ContainerAppConsoleLogs_CL` / `ContainerAppSystemLogs_CL` rows (`Log_s` holds the
//!   printed line, itself one of ours or a legacy k6 logfmt line);
//! - raw stdout of our images (one JSON object per line);
//! - legacy k6 logfmt lines (`time="..." level=info msg="{\"kind\":\"bucket\",...}"`);
//! - a Log Analytics query API result (`{"tables":[{"columns":[...],"rows":[...]}]}`) or an
//!   `az monitor log-analytics query` list of row objects (values often strings), including
//!   already-aggregated bucket tables (a bucket start plus total/ok/err per run_id).
//!
//! Line-shaped files are streamed (memory flat in the number of lines); files over
//! [`PARALLEL_MIN_BYTES`] are split at a newline near the middle and read by two threads whose
//! accumulators are merged. JSON documents (query exports) are parsed whole: they hold query
//! results, not raw request lines. Nothing unparseable is fatal: it is counted and the first
//! few are quoted with file:line.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use labkit::Line;
use labkit::clock::window_start_ms;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::Error;
use crate::model::{Acc, BucketWindow, FailedReq, Loc, MAX_FAILED, SystemEvent, bump, record_ms};
use crate::ts::parse_ms;

/// Files at least this large are read by two threads.
pub const PARALLEL_MIN_BYTES: u64 = 8 << 20;

/// Output files of an evidence pack, never read back as inputs.
const OUTPUT_NAMES: &[&str] = &[
    "gates.json",
    "verdict.json",
    "report.md",
    "manifest.sha256",
    "lab.toml",
    "inputs.json",
    "runs.json",
];

/// The input files for `paths`: files as given, directories walked (their `logs/` folder only
/// when there is one; the pack's own outputs are skipped), sorted.
pub fn collect(paths: &[PathBuf]) -> Result<Vec<PathBuf>, Error> {
    let mut out = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|e| Error::io(p, e))?;
        if meta.is_dir() {
            let logs = p.join("logs");
            let root = if logs.is_dir() { logs } else { p.clone() };
            walk(&root, &mut out)?;
        } else {
            out.push(p.clone());
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), Error> {
    let rd = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    for entry in rd {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || name.contains(".tmp") {
            continue;
        }
        let ft = entry.file_type().map_err(|e| Error::io(&path, e))?;
        if ft.is_dir() {
            if matches!(name.as_str(), "tables" | "charts" | "kql") {
                continue;
            }
            walk(&path, out)?;
        } else if !OUTPUT_NAMES.contains(&name.as_str())
            && !name.ends_with(".svg")
            && !name.ends_with(".tsv")
            && !name.ends_with(".md")
            && !name.ends_with(".toml")
        {
            out.push(path);
        }
    }
    Ok(())
}

/// Reads every input into one accumulator binned into `window_ms` windows.
pub fn read_all(files: &[PathBuf], window_ms: i64) -> Result<Acc, Error> {
    let mut acc = Acc::new(window_ms);
    for f in files {
        let one = read_file(f, window_ms)?;
        acc.merge(one);
    }
    acc.finish();
    Ok(acc)
}

/// What a file looked like on its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// One record per line (NDJSON rows, raw stdout, k6 logfmt).
    Lines,
    /// One JSON document (query API result or az list).
    Document,
}

fn sniff(path: &Path) -> Result<Shape, Error> {
    let mut f = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut head = vec![0u8; 64 << 10];
    let mut n = 0;
    loop {
        let r = f.read(&mut head[n..]).map_err(|e| Error::io(path, e))?;
        if r == 0 {
            break;
        }
        n += r;
        if n == head.len() {
            break;
        }
    }
    let head = &head[..n];
    let start = head.iter().position(|b| !b.is_ascii_whitespace());
    let Some(start) = start else {
        return Ok(Shape::Lines);
    };
    match head[start] {
        b'[' => Ok(Shape::Document),
        b'{' => {
            // NDJSON when the first line is a complete object that is not a query API result.
            let line_end = memchr::memchr(b'\n', &head[start..]).map(|i| start + i);
            let first = &head[start..line_end.unwrap_or(n)];
            match serde_json::from_slice::<Map<String, Value>>(first) {
                Ok(obj) if !obj.contains_key("tables") => Ok(Shape::Lines),
                _ => Ok(Shape::Document),
            }
        }
        _ => Ok(Shape::Lines),
    }
}

/// Reads one file into its own accumulator.
pub fn read_file(path: &Path, window_ms: i64) -> Result<Acc, Error> {
    let name = path.display().to_string();
    let shape = sniff(path)?;
    let size = std::fs::metadata(path)
        .map_err(|e| Error::io(path, e))?
        .len();
    let mut acc = match shape {
        Shape::Document => read_document(path, &name, window_ms)?,
        Shape::Lines if size >= PARALLEL_MIN_BYTES => {
            read_lines_parallel(path, &name, size, window_ms)?
        }
        Shape::Lines => read_lines(path, &name, 0, size, window_ms)?,
    };
    let what = match shape {
        Shape::Document => "json-document",
        Shape::Lines => "lines",
    };
    acc.stats.files.insert(0, (name, what.to_owned()));
    Ok(acc)
}

fn read_lines_parallel(path: &Path, name: &str, size: u64, window_ms: i64) -> Result<Acc, Error> {
    // Split at the first newline after the middle.
    let mut f = File::open(path).map_err(|e| Error::io(path, e))?;
    f.seek(SeekFrom::Start(size / 2))
        .map_err(|e| Error::io(path, e))?;
    let mut r = BufReader::new(f);
    let mut skip = Vec::new();
    let n = r
        .read_until(b'\n', &mut skip)
        .map_err(|e| Error::io(path, e))?;
    let mid = size / 2 + n as u64;
    let (a, b) = std::thread::scope(|s| {
        let hb = s.spawn(|| read_lines(path, name, mid, size, window_ms));
        let a = read_lines(path, name, 0, mid, window_ms);
        let b = hb
            .join()
            .unwrap_or_else(|_| Err(Error::Internal("reader thread panicked".to_owned())));
        (a, b)
    });
    let mut a = a?;
    let mut b = b?;
    b.stats.shift_lines(a.stats.lines);
    a.merge(b);
    Ok(a)
}

/// Streams the lines in `[from, to)` of a file (line numbers counted from `from`).
fn read_lines(path: &Path, name: &str, from: u64, to: u64, window_ms: i64) -> Result<Acc, Error> {
    let mut f = File::open(path).map_err(|e| Error::io(path, e))?;
    f.seek(SeekFrom::Start(from))
        .map_err(|e| Error::io(path, e))?;
    let mut r = BufReader::with_capacity(1 << 20, f.take(to - from));
    let mut acc = Acc::new(window_ms);
    let mut buf = Vec::with_capacity(4096);
    let mut loc = Loc {
        file: name.to_owned(),
        line: 0,
    };
    loop {
        buf.clear();
        let n = r
            .read_until(b'\n', &mut buf)
            .map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        loc.line += 1;
        acc.stats.lines += 1;
        match std::str::from_utf8(&buf) {
            Ok(s) => outer_line(&mut acc, s, &loc),
            Err(_) => {
                let s = String::from_utf8_lossy(&buf);
                acc.stats.unparseable_at(&loc, &s, "not UTF-8");
            }
        }
    }
    Ok(acc)
}

fn read_document(path: &Path, name: &str, window_ms: i64) -> Result<Acc, Error> {
    let mut acc = Acc::new(window_ms);
    let f = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut loc = Loc {
        file: name.to_owned(),
        line: 1,
    };
    let doc: Value = match serde_json::from_reader(BufReader::new(f)) {
        Ok(v) => v,
        Err(e) => {
            acc.stats.lines += 1;
            loc.line = e.line() as u64;
            acc.stats
                .unparseable_at(&loc, "(JSON document)", &e.to_string());
            return Ok(acc);
        }
    };
    match doc {
        Value::Array(rows) => {
            for (i, row) in rows.into_iter().enumerate() {
                loc.line = i as u64 + 1;
                acc.stats.lines += 1;
                match row {
                    Value::Object(m) => row_object(&mut acc, &m, &loc),
                    other => {
                        acc.stats
                            .unparseable_at(&loc, &other.to_string(), "row is not an object")
                    }
                }
            }
        }
        Value::Object(m) if m.contains_key("tables") => {
            let tables = m
                .get("tables")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let mut n = 0u64;
            for t in tables {
                let cols: Vec<String> = t
                    .get("columns")
                    .and_then(Value::as_array)
                    .map(|cs| {
                        cs.iter()
                            .map(|c| match c {
                                Value::String(s) => s.clone(),
                                other => other
                                    .get("name")
                                    .and_then(Value::as_str)
                                    .unwrap_or("")
                                    .to_owned(),
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let rows = t
                    .get("rows")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                for row in rows {
                    n += 1;
                    loc.line = n;
                    acc.stats.lines += 1;
                    let Some(vals) = row.as_array() else {
                        acc.stats
                            .unparseable_at(&loc, &row.to_string(), "row is not an array");
                        continue;
                    };
                    let m: Map<String, Value> =
                        cols.iter().cloned().zip(vals.iter().cloned()).collect();
                    row_object(&mut acc, &m, &loc);
                }
            }
        }
        Value::Object(m) => {
            acc.stats.lines += 1;
            row_object(&mut acc, &m, &loc);
        }
        other => {
            acc.stats.lines += 1;
            acc.stats
                .unparseable_at(&loc, &other.to_string(), "not an object or a list");
        }
    }
    Ok(acc)
}

/// The fields of a Log Analytics row we use (NDJSON fast path).
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
    #[serde(rename = "ReplicaName_s", borrow, default)]
    replica: Option<Cow<'a, str>>,
    #[serde(rename = "Reason_s", borrow, default)]
    reason: Option<Cow<'a, str>>,
    #[serde(rename = "Type_s", borrow, default)]
    type_s: Option<Cow<'a, str>>,
}

/// One line of a line-shaped file.
pub(crate) fn outer_line(acc: &mut Acc, raw: &str, loc: &Loc) {
    let s = raw.trim();
    if s.is_empty() {
        acc.stats.blank += 1;
        return;
    }
    if s.starts_with('{') {
        if LOG_S.find(s.as_bytes()).is_some() {
            match serde_json::from_str::<RowB<'_>>(s) {
                Ok(row) => {
                    if row.reason.is_some() {
                        system_row(
                            acc,
                            row.time.as_deref(),
                            row.app.as_deref().or(row.job.as_deref()),
                            row.revision.as_deref(),
                            row.replica.as_deref(),
                            row.reason.as_deref(),
                            row.log.as_deref(),
                            row.type_s.as_deref(),
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
        json_line(acc, s, loc, true);
        return;
    }
    if is_logfmt(s) {
        logfmt_line(acc, s, loc, true);
        return;
    }
    acc.stats
        .unparseable_at(loc, s, "neither JSON nor a k6 logfmt line");
}

fn is_logfmt(s: &str) -> bool {
    s.starts_with("time=") || s.contains(" msg=\"") || s.starts_with("msg=\"")
}

/// The printed line inside a console row (`Log_s`).
fn inner_line(acc: &mut Acc, raw: &str, loc: &Loc) {
    let s = raw.trim();
    if s.starts_with('{') {
        json_line(acc, s, loc, false);
    } else if is_logfmt(s) {
        logfmt_line(acc, s, loc, false);
    } else {
        acc.stats.foreign_at(loc, s);
    }
}

/// A legacy k6 line: the JSON is the logfmt `msg` value.
fn logfmt_line(acc: &mut Acc, s: &str, loc: &Loc, top: bool) {
    let Some(msg) = logfmt_msg(s) else {
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

/// The unescaped value of `msg="..."` in a logfmt line.
pub fn logfmt_msg(s: &str) -> Option<String> {
    let start = if s.starts_with("msg=\"") {
        4
    } else {
        s.find(" msg=\"")? + 5
    };
    let b = s.as_bytes();
    let mut i = start + 1;
    let mut escaped = false;
    while i < b.len() {
        match b[i] {
            b'\\' if !escaped => escaped = true,
            b'"' if !escaped => break,
            _ => escaped = false,
        }
        i += 1;
    }
    if i >= b.len() {
        return None;
    }
    let quoted = &s[start..=i];
    serde_json::from_str::<String>(quoted).ok()
}

/// Searchers built once: `memmem::find` would build one per call, per line.
static LOG_S: LazyLock<memchr::memmem::Finder<'static>> =
    LazyLock::new(|| memchr::memmem::Finder::new(b"\"Log_s\""));
static KIND: LazyLock<memchr::memmem::Finder<'static>> =
    LazyLock::new(|| memchr::memmem::Finder::new(b"\"kind\""));

/// `"kind":"<value>"` of a JSON line, read without parsing it.
fn peek_kind(s: &str) -> Option<&str> {
    // Our images print `kind` first.
    if let Some(rest) = s.strip_prefix("{\"kind\":\"") {
        return rest.find('"').map(|e| &rest[..e]);
    }
    let i = KIND.find(s.as_bytes())?;
    let rest = s[i + 6..].trim_start();
    let rest = rest.strip_prefix(':')?.trim_start();
    let rest = rest.strip_prefix('"')?;
    let end = rest.find('"')?;
    Some(&rest[..end])
}

/// Borrowed `req` line (fast path; lines with escaped strings take the slow path).
#[derive(Deserialize)]
struct ReqB<'a> {
    ts: &'a str,
    #[serde(default)]
    run_id: Option<&'a str>,
    #[serde(default)]
    perturbation_id: Option<&'a str>,
    #[serde(default)]
    scenario: Option<&'a str>,
    scheduled_ts: &'a str,
    #[serde(default)]
    code: Option<u16>,
    dur_ms: f64,
    ok: bool,
    #[serde(default)]
    err_class: Option<&'a str>,
    #[serde(default)]
    err_msg: Option<&'a str>,
    #[serde(default)]
    revision: Option<&'a str>,
    #[serde(default)]
    replica: Option<&'a str>,
}

/// A scalar value of a flat JSON object, borrowed from the line.
#[derive(Clone, Copy)]
enum Scalar<'a> {
    Str(&'a str),
    Num(&'a str),
    Bool(bool),
    Null,
}

/// Walks a flat JSON object (string keys; scalar values; no escapes) calling `f` per pair.
/// `None` when the line is anything else, so the caller falls back to serde.
fn scan_flat<'a>(s: &'a str, mut f: impl FnMut(&'a str, Scalar<'a>)) -> Option<()> {
    let b = s.as_bytes();
    let mut i = 0;
    let ws = |i: &mut usize| {
        while *i < b.len() && b[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    let string = |i: &mut usize| -> Option<&'a str> {
        // at the opening quote
        let start = *i + 1;
        let end = start + memchr::memchr2(b'"', b'\\', &b[start..])?;
        if b[end] != b'"' {
            return None;
        }
        *i = end + 1;
        s.get(start..end)
    };
    ws(&mut i);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    loop {
        ws(&mut i);
        match b.get(i)? {
            b'}' => return Some(()),
            b'"' => {}
            _ => return None,
        }
        let key = string(&mut i)?;
        ws(&mut i);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i += 1;
        ws(&mut i);
        let v = match b.get(i)? {
            b'"' => Scalar::Str(string(&mut i)?),
            b't' if b[i..].starts_with(b"true") => {
                i += 4;
                Scalar::Bool(true)
            }
            b'f' if b[i..].starts_with(b"false") => {
                i += 5;
                Scalar::Bool(false)
            }
            b'n' if b[i..].starts_with(b"null") => {
                i += 4;
                Scalar::Null
            }
            c if *c == b'-' || c.is_ascii_digit() => {
                let start = i;
                while i < b.len() && matches!(b[i], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
                {
                    i += 1;
                }
                Scalar::Num(s.get(start..i)?)
            }
            _ => return None,
        };
        f(key, v);
        ws(&mut i);
        match b.get(i)? {
            b',' => i += 1,
            b'}' => return Some(()),
            _ => return None,
        }
    }
}

/// The fast path for `req` lines: a flat scan, no allocation. `None` falls back to serde.
fn fast_req(s: &str) -> Option<ReqB<'_>> {
    let mut r = ReqB {
        ts: "",
        run_id: None,
        perturbation_id: None,
        scenario: None,
        scheduled_ts: "",
        code: None,
        dur_ms: f64::NAN,
        ok: false,
        err_class: None,
        err_msg: None,
        revision: None,
        replica: None,
    };
    let mut ok_seen = false;
    let mut bad = false;
    scan_flat(s, |k, v| match (k, v) {
        ("ts", Scalar::Str(x)) => r.ts = x,
        ("scheduled_ts", Scalar::Str(x)) => r.scheduled_ts = x,
        ("run_id", Scalar::Str(x)) => r.run_id = Some(x),
        ("perturbation_id", Scalar::Str(x)) => r.perturbation_id = Some(x),
        ("scenario", Scalar::Str(x)) => r.scenario = Some(x),
        ("code", Scalar::Num(x)) => match x.parse() {
            Ok(c) => r.code = Some(c),
            Err(_) => bad = true,
        },
        ("dur_ms", Scalar::Num(x)) => r.dur_ms = x.parse().unwrap_or(f64::NAN),
        ("ok", Scalar::Bool(x)) => {
            r.ok = x;
            ok_seen = true;
        }
        ("err_class", Scalar::Str(x)) => r.err_class = Some(x),
        ("err_msg", Scalar::Str(x)) => r.err_msg = Some(x),
        ("revision", Scalar::Str(x)) => r.revision = Some(x),
        ("replica", Scalar::Str(x)) => r.replica = Some(x),
        (_, Scalar::Null) => {}
        ("kind" | "send_dur_ms", _) => {}
        (
            "ts" | "scheduled_ts" | "run_id" | "perturbation_id" | "scenario" | "code" | "dur_ms"
            | "ok" | "err_class" | "err_msg" | "revision" | "replica",
            _,
        ) => bad = true,
        _ => {}
    })?;
    (!bad && ok_seen && r.dur_ms.is_finite() && !r.ts.is_empty() && !r.scheduled_ts.is_empty())
        .then_some(r)
}

/// One of our JSON lines (raw, from `Log_s`, or from a k6 `msg`).
fn json_line(acc: &mut Acc, s: &str, loc: &Loc, top: bool) {
    if peek_kind(s) == Some("req")
        && let Some(r) = fast_req(s).or_else(|| serde_json::from_str::<ReqB<'_>>(s).ok())
        && let Some(ts) = parse_ms(r.ts)
        // The scheduled time is only kept for failed requests; skip parsing it otherwise.
        && let Some(sched) = if r.ok { Some(ts) } else { parse_ms(r.scheduled_ts) }
    {
        acc.stats.req_fast += 1;
        req(
            acc,
            ReqIn {
                run_id: r.run_id.unwrap_or("unknown"),
                perturbation_id: r.perturbation_id,
                scenario: r.scenario.unwrap_or("main"),
                ts_ms: ts,
                scheduled_ms: sched,
                code: r.code,
                dur_ms: r.dur_ms,
                ok: r.ok,
                err_class: r.err_class,
                err_msg: r.err_msg,
                revision: r.revision,
                replica: r.replica,
            },
        );
        return;
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

const KNOWN_KINDS: &[&str] = &[
    "meta",
    "bucket",
    "req",
    "step",
    "summary",
    "RevisionStateSample",
    "ReplicaInventorySample",
    "PerturbationWindowMarker",
    "SamplerError",
    "subject",
    "log",
];

fn typed_line(acc: &mut Acc, line: Line) {
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
        Line::Summary(s) => acc.summaries.push(s),
        Line::RevisionStateSample(s) => acc.rev_samples.push(s),
        Line::ReplicaInventorySample(s) => acc.replica_samples.push(s),
        Line::PerturbationWindowMarker(m) => acc.markers.push(m),
        Line::SamplerError(e) => acc.sampler_errors.push(e),
        Line::Subject(s) => {
            if s.event == labkit::event::SubjectEvent::RequestEnd {
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
        bump(&mut w.errors, r.err_class.unwrap_or("error"), 1);
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
            err_class: r.err_class.map(str::to_owned),
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

/// One row object of a JSON export (or an NDJSON row the fast path could not read).
fn row_object(acc: &mut Acc, m: &Map<String, Value>, loc: &Loc) {
    let table = get_str(m, &["TableName", "Type"]).unwrap_or_default();
    let is_system = m.contains_key("Reason_s") || table.contains("SystemLogs");
    if is_system {
        system_row(
            acc,
            get_str(m, &["TimeGenerated"]).as_deref(),
            get_str(m, &["ContainerAppName_s", "JobName_s"]).as_deref(),
            get_str(m, &["RevisionName_s"]).as_deref(),
            get_str(m, &["ReplicaName_s", "ContainerGroupName_s"]).as_deref(),
            get_str(m, &["Reason_s"]).as_deref(),
            get_str(m, &["Log_s"]).as_deref(),
            get_str(m, &["Type_s"]).as_deref(),
            loc,
        );
        return;
    }
    if let Some(log) = get_str(m, &["Log_s"]) {
        acc.stats.kind("console-row");
        inner_line(acc, &log, loc);
        return;
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
        return;
    }
    // A row that is one of our lines with its fields as columns.
    if m.contains_key("kind") {
        let v = Value::Object(m.clone());
        if let Ok(line) = serde_json::from_value::<Line>(v) {
            typed_line(acc, line);
            return;
        }
    }
    let text = Value::Object(m.clone()).to_string();
    acc.stats.unparseable_at(
        loc,
        &text,
        "row is neither a log row (Log_s), a bucket row (bucket start + total) nor one of our lines",
    );
}

#[allow(clippy::too_many_arguments)]
fn system_row(
    acc: &mut Acc,
    time: Option<&str>,
    app: Option<&str>,
    revision: Option<&str>,
    replica: Option<&str>,
    reason: Option<&str>,
    log: Option<&str>,
    type_s: Option<&str>,
    loc: &Loc,
) {
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
        app: app.unwrap_or("").to_owned(),
        revision: revision.unwrap_or("").to_owned(),
        replica: replica.unwrap_or("").to_owned(),
        reason: reason.unwrap_or("").to_owned(),
        msg: log.unwrap_or("").to_owned(),
        kind: type_s.unwrap_or("").to_owned(),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logfmt_msg_unescapes_the_json() {
        let l = r#"time="2026-06-12T14:18:21Z" level=info msg="{\"kind\":\"bucket\",\"count\":3}" source=console"#;
        assert_eq!(logfmt_msg(l).unwrap(), r#"{"kind":"bucket","count":3}"#);
    }

    #[test]
    fn peek_kind_reads_the_tag() {
        assert_eq!(peek_kind(r#"{"kind": "req","ts":"x"}"#), Some("req"));
        assert_eq!(peek_kind(r#"{"ts":"x"}"#), None);
    }

    #[test]
    fn the_fast_req_path_agrees_with_serde_and_declines_what_it_cannot_read() {
        let line = r#"{"kind":"req","ts":"2026-06-12T14:18:20.123Z","run_id":"r","scenario":"main","scheduled_ts":"2026-06-12T14:18:20.100Z","code":503,"dur_ms":23.5,"ok":false,"err_class":"http_5xx","revision":"a","replica":null}"#;
        let f = fast_req(line).unwrap();
        let s: ReqB<'_> = serde_json::from_str(line).unwrap();
        assert_eq!(
            (f.ts, f.code, f.dur_ms, f.ok),
            (s.ts, s.code, s.dur_ms, s.ok)
        );
        assert_eq!(
            (f.err_class, f.revision, f.replica),
            (Some("http_5xx"), Some("a"), None)
        );
        // escapes, nested values, wrong types and missing fields go to serde
        assert!(fast_req(&line.replace("http_5xx", "http\\u0035xx")).is_none());
        assert!(fast_req(&line.replace(r#""code":503"#, r#""code":{"a":1}"#)).is_none());
        assert!(fast_req(&line.replace(r#""code":503"#, r#""code":"503""#)).is_none());
        assert!(fast_req(&line.replace(r#""ok":false,"#, "")).is_none());
    }

    #[test]
    fn two_reader_threads_count_like_one_and_keep_line_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.ndjson");
        let mut text = String::new();
        for i in 0..2000 {
            if i == 1500 {
                text.push_str("garbage\n");
            }
            let ok = i % 100 != 0;
            text.push_str(&format!(
                r#"{{"kind":"req","ts":"2026-06-12T14:18:{:02}.000Z","run_id":"r","scenario":"main","scheduled_ts":"2026-06-12T14:18:00.000Z","code":200,"dur_ms":{}.5,"ok":{ok},"revision":"a"}}"#,
                i % 60,
                i % 50
            ));
            text.push('\n');
        }
        std::fs::write(&path, &text).unwrap();
        let size = text.len() as u64;
        let one = read_lines(&path, "f", 0, size, 10_000).unwrap();
        let two = read_lines_parallel(&path, "f", size, 10_000).unwrap();
        let sum = |a: &Acc| {
            a.runs[0]
                .reqs
                .values()
                .map(|w| (w.count, w.err, w.hist.len()))
                .fold((0, 0, 0), |x, y| (x.0 + y.0, x.1 + y.1, x.2 + y.2))
        };
        assert_eq!(sum(&one), (2000, 20, 2000));
        assert_eq!(sum(&two), sum(&one));
        assert_eq!(two.stats.lines, 2001);
        assert_eq!(
            two.stats.quoted[0].0.line, 1501,
            "line number across the split"
        );
        assert_eq!(one.stats.quoted[0].0.line, 1501);
    }

    #[test]
    fn code_str_formats_without_allocating() {
        let mut b = [0u8; 5];
        assert_eq!(code_str(503, &mut b), "503");
        assert_eq!(code_str(0, &mut b), "0");
    }
}
