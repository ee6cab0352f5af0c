//! Writes a synthetic run in each shape the analysis reads (shared by `examples/gen_run.rs` and
//! `tests/shapes.rs`). See `examples/gen_run.rs` for the shapes and their producers.
#![allow(dead_code)]

use std::io::Write;

use analysis::ts::iso_ms as iso;
use logline::Timestamp;
use logline::line::Req;

/// One generated request.
struct R {
    ts_ms: i64,
    sched_ms: i64,
    dur_ms: f64,
    failed: bool,
    generation: i64,
    rev: i64,
    replica: u64,
}

const RUN_ID: &str = "perturbation-20260612141800";
pub const SHAPES: &[&str] = &["loadgen", "client", "k6", "console", "az", "query-api"];
const ERR_MSG: &str = "no healthy upstream";

fn requests(
    hours: f64,
    rps: u64,
    fail_one_in: u64,
    mut f: impl FnMut(&R) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let total = (hours * 3600.0) as u64 * rps;
    let t0: i64 = 1_781_273_900_000; // 2026-06-12T14:18:20Z
    let mut rng: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        // xorshift64*: deterministic, no dependency.
        rng ^= rng >> 12;
        rng ^= rng << 25;
        rng ^= rng >> 27;
        rng.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    for i in 0..total {
        let sched = t0 + (i as i64 * 1000) / rps as i64;
        let r = next();
        let dur = 5.0 + (r % 40_000) as f64 / 1000.0 + if r % 97 == 0 { 250.0 } else { 0.0 };
        let generation = (sched - t0) / 600_000;
        let since_switch = (sched - t0) % 600_000;
        // Around each switch, a handful of failures (1 in 2000 requests for 20 s).
        let failed = since_switch < 20_000 && generation > 0 && r % fail_one_in == 7;
        let rev = if since_switch < 15_000 && generation > 0 && r % 2 == 0 {
            generation - 1
        } else {
            generation
        };
        f(&R {
            ts_ms: sched + dur as i64,
            sched_ms: sched,
            dur_ms: dur,
            failed,
            generation,
            rev,
            replica: r % 3,
        })?;
    }
    Ok(())
}

fn revision(r: &R) -> String {
    format!("subject--r{:03}", r.rev)
}

fn replica(r: &R) -> String {
    format!("subject--r{:03}-{:x}", r.rev, r.replica)
}

/// The line loadgen prints for this request.
fn loadgen_line(r: &R) -> String {
    logline::Line::Req(Req {
        ts: Timestamp::from_epoch_ms(r.ts_ms),
        run_id: Some(RUN_ID.to_owned()),
        perturbation_id: Some(format!("p{:02}", r.generation)),
        scenario: "main".to_owned(),
        scheduled_ts: Timestamp::from_epoch_ms(r.sched_ms),
        code: Some(if r.failed { 503 } else { 200 }),
        dur_ms: r.dur_ms,
        send_dur_ms: Some(r.dur_ms),
        ok: !r.failed,
        err_class: r.failed.then(|| "http_5xx".to_owned()),
        err_msg: r.failed.then(|| ERR_MSG.to_owned()),
        revision: Some(revision(r)),
        replica: Some(replica(r)),
    })
    .to_json()
}

/// A number as JavaScript prints it (integral values without a fraction).
fn js_num(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{}", x as i64)
    } else {
        format!("{x:?}")
    }
}

fn q(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// The original k6 script's `JSON.stringify` of a request.
fn k6_json(r: &R) -> String {
    format!(
        r#"{{"kind":"req","ts":"{}","run_id":"{RUN_ID}","perturbation_id":"p{:02}","code":{},"dur_ms":{},"ok":{},"err_msg":{},"revision":"{}","replica":"{}"}}"#,
        iso(r.ts_ms),
        r.generation,
        if r.failed { 503 } else { 200 },
        js_num(r.dur_ms),
        !r.failed,
        q(if r.failed { ERR_MSG } else { "" }),
        revision(r),
        replica(r),
    )
}

/// A hand-written Python client: `print(json.dumps(rec))` of a dict built in its own order.
fn client_line(r: &R) -> String {
    format!(
        r#"{{"ts": "{}", "kind": "req", "code": {}, "ok": {}, "dur_ms": {:?}, "run_id": "{RUN_ID}", "perturbation_id": "p{:02}", "revision": "{}", "replica": "{}", "err_msg": {}}}"#,
        iso(r.ts_ms),
        if r.failed { 503 } else { 200 },
        if r.failed { "false" } else { "true" },
        r.dur_ms,
        r.generation,
        revision(r),
        replica(r),
        if r.failed {
            q(ERR_MSG)
        } else {
            "null".to_owned()
        },
    )
}

/// k6's logrus text line for `console.log(line)`: `msg` quoted with Go's `%q`.
fn k6_line(r: &R) -> String {
    let json = k6_json(r);
    let secs = Timestamp::from_epoch_ms(r.ts_ms / 1000 * 1000).to_rfc3339_ms();
    let time = secs.replace(".000Z", "Z");
    let mut msg = String::with_capacity(json.len() + 32);
    for c in json.chars() {
        match c {
            '"' => msg.push_str("\\\""),
            '\\' => msg.push_str("\\\\"),
            c => msg.push(c),
        }
    }
    format!(r#"time="{time}" level=info msg="{msg}" source=console"#)
}

/// The columns of a console row for loadgen's job stdout, sorted as serde_json's map writes them.
fn console_cols(r: &R) -> Vec<(&'static str, String)> {
    vec![
        ("ContainerAppName_s", "loadgen".to_owned()),
        ("ContainerGroupName_s", "loadgen-exec-1-x7k2p".to_owned()),
        ("ContainerName_s", "loadgen".to_owned()),
        ("ExecutionName_s", "loadgen-exec-1".to_owned()),
        ("JobName_s", "loadgen".to_owned()),
        ("Log_s", loadgen_line(r)),
        ("RevisionName_s", String::new()),
        ("Stream_s", "stdout".to_owned()),
        // When localplane read the line: shortly after loadgen printed it.
        ("TimeGenerated", iso(r.ts_ms + 1)),
        ("Type", "ContainerAppConsoleLogs_CL".to_owned()),
    ]
}

fn console_line(r: &R) -> String {
    let mut s = String::from("{");
    for (i, (k, v)) in console_cols(r).iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&q(k));
        s.push(':');
        s.push_str(&q(v));
    }
    s.push('}');
    s
}

/// Writes `hours` of requests at `rps` (one in `fail_one_in` failing around each revision switch)
/// in `shape`.
pub fn write(
    w: &mut impl Write,
    hours: f64,
    rps: u64,
    fail_one_in: u64,
    shape: &str,
) -> std::io::Result<()> {
    match shape {
        "loadgen" => requests(hours, rps, fail_one_in, |r| {
            writeln!(w, "{}", loadgen_line(r))
        })?,
        "client" => requests(hours, rps, fail_one_in, |r| {
            writeln!(w, "{}", client_line(r))
        })?,
        "k6" => requests(hours, rps, fail_one_in, |r| writeln!(w, "{}", k6_line(r)))?,
        "console" => requests(hours, rps, fail_one_in, |r| {
            writeln!(w, "{}", console_line(r))
        })?,
        "az" => {
            // knack's json output: json.dumps(indent=2, sort_keys=True, separators=(',', ': ')).
            w.write_all(b"[")?;
            let mut first = true;
            requests(hours, rps, fail_one_in, |r| {
                let mut cols = console_cols(r);
                cols.push(("TableName", "PrimaryResult".to_owned()));
                cols.sort_by_key(|c| c.0);
                w.write_all(if first { b"\n  {\n" } else { b",\n  {\n" })?;
                first = false;
                for (i, (k, v)) in cols.iter().enumerate() {
                    let sep = if i + 1 < cols.len() { "," } else { "" };
                    writeln!(w, "    {}: {}{sep}", q(k), q(v))?;
                }
                w.write_all(b"  }")
            })?;
            w.write_all(b"\n]\n")?;
        }
        "query-api" => {
            let names = [
                "TimeGenerated",
                "ContainerAppName_s",
                "RevisionName_s",
                "ContainerGroupName_s",
                "ContainerName_s",
                "Stream_s",
                "Log_s",
                "JobName_s",
                "ExecutionName_s",
                "Type",
            ];
            let cols: Vec<String> = names
                .iter()
                .map(|n| {
                    let t = if *n == "TimeGenerated" {
                        "datetime"
                    } else {
                        "string"
                    };
                    format!(r#"{{"name":"{n}","type":"{t}"}}"#)
                })
                .collect();
            write!(
                w,
                r#"{{"tables":[{{"name":"PrimaryResult","columns":[{}],"rows":["#,
                cols.join(",")
            )?;
            let mut first = true;
            requests(hours, rps, fail_one_in, |r| {
                let m: std::collections::BTreeMap<&str, String> =
                    console_cols(r).into_iter().collect();
                let vals: Vec<String> = names
                    .iter()
                    .map(|n| q(m.get(n).map_or("", String::as_str)))
                    .collect();
                if !first {
                    w.write_all(b",")?;
                }
                first = false;
                write!(w, "[{}]", vals.join(","))
            })?;
            w.write_all(b"]}]}")?;
        }
        other => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("unknown shape {other}: loadgen, client, k6, console, az or query-api"),
            ));
        }
    }
    Ok(())
}
