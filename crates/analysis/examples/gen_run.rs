//! Generates a synthetic run for benchmarks and tests: one request per line (or row) at a constant
//! rate, with a rolling revision change every 10 minutes and a few errors around each, written in
//! one of the shapes the analysis reads. Every shape holds the same requests (same seed), so the
//! analysis must compute the same Q1/Q2 tables from each.
//!
//! `cargo run --release -p analysis --example gen_run -- OUT [HOURS] [RPS] [SHAPE]`
//! (default 2 h at 200 RPS: 1.44 M requests; SHAPE default `loadgen`).
//!
//! Shapes, each as its real producer writes it:
//! - `loadgen`: our loadgen's `req` lines (logline's types, every field loadgen prints);
//! - `client`: another client's `req` lines as Python's `json.dumps` writes a dict (`", "` and
//!   `": "` separators, its own key order), the original k6 script's field set (`kind, ts, run_id,
//!   perturbation_id, code, dur_ms, ok, err_msg, revision, replica`: no `scheduled_ts`, no
//!   `scenario`, no `err_class`);
//! - `k6`: the original k6 script's lines as k6 prints them (logrus logfmt, `msg` holding the
//!   `JSON.stringify` output quoted);
//! - `console`: `ContainerAppConsoleLogs_CL` NDJSON rows as localplane's log sink writes them for a
//!   job's stdout (`crates/localplane/src/logsink.rs`: serde_json, keys sorted), `Log_s` holding
//!   the loadgen line;
//! - `az`: the same rows as `az monitor log-analytics query` prints them (a JSON list, indent 2,
//!   keys sorted, `TableName` added, every value a string);
//! - `query-api`: the same rows as the Log Analytics query API answers
//!   (`{"tables":[{"name","columns","rows"}]}`, compact).

use std::io::{BufWriter, Write};

#[path = "../tests/support/gen_shapes.rs"]
mod gen_shapes;

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let out = args.get(1).map_or("run.ndjson", String::as_str);
    let hours: f64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(2.0);
    let rps: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(200);
    let shape = args.get(4).map_or("loadgen", String::as_str);
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(out)?);
    gen_shapes::write(&mut w, hours, rps, 2000, shape)?;
    w.flush()
}
