//! What loadgen's test binaries share: an in-process run and the lines it printed, by kind.

#![allow(clippy::unwrap_used, dead_code)] // test helpers; each test binary uses a subset

use labkit::event::Line;
use labkit::event::loadgen::{Bucket, Req, Summary};

/// Runs loadgen in-process with `args` (after the binary name) and returns its lines.
pub async fn run(args: &[&str]) -> Vec<Line> {
    let mut a = vec!["loadgen"];
    a.extend_from_slice(args);
    let cfg = loadgen::Config::from_args(a).unwrap();
    let (out, lines) = loadgen::Output::memory();
    loadgen::run(cfg, out, std::future::pending()).await;
    lines.lock().unwrap().clone()
}

/// Like [`run`], spread over `shards` runtimes: the test's own plus `shards - 1` current-thread
/// runtimes on their own threads, as `loadgen --threads N` does.
pub async fn run_sharded(args: &[&str], shards: usize) -> Vec<Line> {
    let mut a = vec!["loadgen"];
    a.extend_from_slice(args);
    let cfg = loadgen::Config::from_args(a).unwrap();
    let (out, lines) = loadgen::Output::memory();
    let over = tokio_util::sync::CancellationToken::new();
    let (handles, threads): (Vec<_>, Vec<_>) = (1..shards)
        .map(|_| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let h = rt.handle().clone();
            let over = over.clone();
            (h, std::thread::spawn(move || rt.block_on(over.cancelled())))
        })
        .unzip();
    loadgen::run_sharded(cfg, out, std::future::pending(), &handles).await;
    over.cancel();
    for t in threads {
        t.join().unwrap();
    }
    lines.lock().unwrap().clone()
}

pub fn buckets<'a>(lines: &'a [Line], scenario: &str) -> Vec<&'a Bucket> {
    lines
        .iter()
        .filter_map(|l| match l {
            Line::Bucket(b) if b.scenario == scenario => Some(b),
            _ => None,
        })
        .collect()
}

pub fn summary<'a>(lines: &'a [Line], scenario: &str) -> &'a Summary {
    lines
        .iter()
        .find_map(|l| match l {
            Line::Summary(s) if s.scenario == scenario => Some(s),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no summary for {scenario}"))
}

pub fn reqs<'a>(lines: &'a [Line], scenario: &str) -> Vec<&'a Req> {
    lines
        .iter()
        .filter_map(|l| match l {
            Line::Req(r) if r.scenario == scenario => Some(r),
            _ => None,
        })
        .collect()
}
