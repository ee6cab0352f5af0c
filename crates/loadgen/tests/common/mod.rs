//! What loadgen's test binaries share: an in-process run and the lines it printed, by kind.

#![allow(clippy::unwrap_used, dead_code)] // test helpers; each test binary uses a subset

use logline::line::Line;
use logline::line::loadgen::{Bucket, Req, Summary};

/// Runs loadgen in-process with `args` (after the binary name) and returns its lines.
pub async fn run(args: &[&str]) -> Vec<Line> {
    let mut a = vec!["loadgen"];
    a.extend_from_slice(args);
    let cfg = loadgen::Config::from_args(a).unwrap();
    let (out, lines) = loadgen::Output::memory();
    loadgen::run(cfg, out, std::future::pending()).await;
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
