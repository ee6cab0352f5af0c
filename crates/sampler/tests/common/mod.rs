//! Shared by the sampler's integration tests: configs, clients, schedule assertions.
#![allow(dead_code, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use arm::{ArmClient, ClientConfig, TokenSource};
use clap::Parser;
use logline::line::Line;
use sampler::SamplerConfig;

pub fn config(base: &str, apps: &str, interval: &str, duration: &str) -> SamplerConfig {
    SamplerConfig::try_parse_from([
        "perturbation-sampler",
        "--subscription-id",
        testkit::arm_plane::SUBSCRIPTION,
        "--resource-group",
        "rg",
        "--container-app-names",
        apps,
        "--arm-endpoint",
        base,
        "--arm-token-source",
        "none",
        "--perturbation-id",
        "p-test",
        "--interval",
        interval,
        "--duration",
        duration,
    ])
    .unwrap()
}

pub fn client(cfg: &SamplerConfig) -> ArmClient {
    let mut c: ClientConfig = cfg.arm.client_config();
    c.retry.base_delay = Duration::from_millis(50);
    ArmClient::new(c, TokenSource::none()).unwrap()
}

pub fn tick_of(line: &Line) -> Option<u64> {
    match line {
        Line::RevisionStateSample(s) => s.tick,
        Line::ReplicaInventorySample(s) => s.tick,
        _ => None,
    }
}

pub fn ts_ms(line: &Line) -> i64 {
    match line {
        Line::RevisionStateSample(s) => s.ts.epoch_ms(),
        Line::ReplicaInventorySample(s) => s.ts.epoch_ms(),
        Line::PerturbationWindowMarker(m) => m.ts.epoch_ms(),
        Line::SamplerError(e) => e.ts.epoch_ms(),
        _ => 0,
    }
}

/// Tick number -> the `ts` of its sample lines (all of a tick's lines share it).
pub fn tick_starts(lines: &[Line]) -> BTreeMap<u64, i64> {
    let mut out = BTreeMap::new();
    for l in lines {
        if let Some(t) = tick_of(l) {
            let prev = out.insert(t, ts_ms(l));
            assert!(prev.is_none() || prev == Some(ts_ms(l)), "one ts per tick");
        }
    }
    out
}

/// Asserts every tick in `starts` began within `tol_ms` of `start + k * interval`, but for at
/// most one tick that a stall of the shared machine made later, by what the sampler itself
/// reported in that tick's `tick_late` line. The schedule stays the window's start plus whole
/// intervals: a late tick never moves the next one, and a drift (every tick later) fails.
pub fn assert_on_schedule(
    lines: &[Line],
    starts: &BTreeMap<u64, i64>,
    interval_ms: i64,
    tol_ms: i64,
) {
    let Line::PerturbationWindowMarker(start) = &lines[0] else {
        panic!("first line is the start marker: {:?}", lines[0]);
    };
    let t0 = start.ts.epoch_ms();
    let mut stalls = 0;
    for (k, ts) in starts {
        let off = ts - t0 - *k as i64 * interval_ms;
        if off.abs() <= tol_ms {
            continue;
        }
        stalls += 1;
        assert!(
            stalls <= 1,
            "tick {k} started {off} ms off schedule, a second late tick"
        );
        let reported = testkit::lines::sampler_errors(lines)
            .into_iter()
            .find(|e| e.operation == "tick_late" && e.tick == Some(*k))
            .and_then(|e| e.late_ms);
        let Some(late_ms) = reported else {
            panic!("tick {k} started {off} ms off schedule and no tick_late line says so");
        };
        assert!(
            (off - late_ms as i64).abs() <= 2,
            "tick {k} started {off} ms late but its tick_late line says {late_ms} ms"
        );
    }
}

/// POSTs a fault to localplane's admin endpoint (part of the fake, not of ARM).
pub async fn post_fault(base: &str, body: &str) {
    let addr = base
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .unwrap();
    let headers = [("content-type", "application/json")];
    let r = testkit::http::fetch(
        addr,
        "POST",
        "/localplane/faults",
        &headers,
        body,
        Duration::from_secs(10),
    )
    .await
    .unwrap();
    assert!((200..300).contains(&r.status), "{r:?}");
}
