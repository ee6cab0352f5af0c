//! `labctl analyze --out OUT FILES...` without the orchestrator around it: the same library calls
//! (analysis::analyze + pack::write, the original lab's rule), for benchmarks that should not
//! have to build every labctl command. Prints the verdict line and the phase timings.
//!
//! `cargo run --release -p analysis --example analyze_pack -- OUT FILE...`

use std::path::PathBuf;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let Some((out, inputs)) = args.split_first() else {
        return Err("usage: analyze_pack OUT FILE...".into());
    };
    let t0 = Instant::now();
    let a = analysis::analyze(inputs, &analysis::Options::default())?;
    let t1 = Instant::now();
    analysis::render::pack::write(&a, out, analysis::render::pack::Parts::All)?;
    let v = &a.verdict;
    println!(
        "verdict: {} (falsified: {}); {} lines, {} windows, {} requests, {} errors; read+compute {:.3} s, write {:.3} s",
        v.verdict.as_str(),
        v.falsified,
        a.stats().lines,
        a.q2.len(),
        a.runs.iter().map(|r| r.requests).sum::<u64>(),
        a.runs.iter().map(|r| r.err).sum::<u64>(),
        (t1 - t0).as_secs_f64(),
        t1.elapsed().as_secs_f64()
    );
    Ok(())
}
