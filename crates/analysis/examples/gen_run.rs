//! Generates a synthetic loadgen run for benchmarks: one `req` line per request at a constant
//! rate, with a rolling revision change every 10 minutes and a few errors around each.
//!
//! `cargo run --release -p analysis --example gen_run -- OUT.ndjson [HOURS] [RPS]`
//! (default 2 h at 200 RPS: ≈1.44 M lines, ≈250 MB).

use std::io::{BufWriter, Write};

use labkit::Timestamp;

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let out = args.get(1).map_or("run.ndjson", String::as_str);
    let hours: f64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(2.0);
    let rps: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(200);
    let total = (hours * 3600.0) as u64 * rps;
    let t0: i64 = 1_781_273_900_000; // 2026-06-12T14:18:20Z
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(out)?);
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
        let failed = since_switch < 20_000 && generation > 0 && r % 2000 == 7;
        let rev = if since_switch < 15_000 && generation > 0 && r % 2 == 0 {
            generation - 1
        } else {
            generation
        };
        let ts = Timestamp::from_epoch_ms(sched + dur as i64).to_rfc3339_ms();
        let st = Timestamp::from_epoch_ms(sched).to_rfc3339_ms();
        if failed {
            writeln!(
                w,
                r#"{{"kind":"req","ts":"{ts}","run_id":"perturbation-20260612141800","perturbation_id":"p{generation:02}","scenario":"main","scheduled_ts":"{st}","code":503,"dur_ms":{dur:.3},"ok":false,"err_class":"http_5xx","err_msg":"no healthy upstream","revision":"subject--r{rev:03}","replica":"subject--r{rev:03}-{:x}"}}"#,
                r % 3
            )?;
        } else {
            writeln!(
                w,
                r#"{{"kind":"req","ts":"{ts}","run_id":"perturbation-20260612141800","perturbation_id":"p{generation:02}","scenario":"main","scheduled_ts":"{st}","code":200,"dur_ms":{dur:.3},"ok":true,"revision":"subject--r{rev:03}","replica":"subject--r{rev:03}-{:x}"}}"#,
                r % 3
            )?;
        }
    }
    w.flush()
}
