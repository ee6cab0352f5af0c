//! The aggregator: the one task that owns every counter and histogram of a run. Request tasks
//! and schedulers report to it over a channel ([`Msg`]); it prints a `bucket` per scenario per
//! wall-clock aligned window (also when empty), the `req` and `client` lines, a staircase's
//! `step` lines and, at the end, each scenario's `summary`.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use logline::Timestamp;
use logline::line::err_pct;
use logline::line::loadgen::{Bucket, ClientChange, Req, Step, Summary};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::config::{LogRequests, Model};
use crate::profile::Profile;
use crate::stats::{Outcome, Tally, header_text, percentiles, q_ms, round3};
use crate::{Config, Msg, Output, Scn};

/// The tally of staircase step `k` (1-based), if there is one.
fn step_slot(steps: &mut [(Tally, bool)], k: Option<u32>) -> Option<&mut Tally> {
    let i = usize::try_from(k?).ok()?.checked_sub(1)?;
    steps.get_mut(i).map(|(t, _)| t)
}

struct ScnAgg {
    name: String,
    log: LogRequests,
    profile: Option<Profile>,
    window: Tally,
    total: Tally,
}

/// The run's counters, windows and output; see the module docs.
pub(crate) struct Aggregator {
    out: Output,
    run_id: Option<String>,
    perturbation_id: Option<String>,
    window_ms: i64,
    start: Instant,
    start_wall_ms: i64,
    run_len: Duration,
    scns: Vec<ScnAgg>,
    started: Vec<Arc<Scn>>,
    steps: Vec<(Tally, bool)>,
    step_cfg: Option<(Vec<f64>, Duration)>,
    progress: bool,
}

impl Aggregator {
    pub(crate) fn new(
        cfg: &Config,
        scns: &[Arc<Scn>],
        out: Output,
        start: Instant,
        start_wall_ms: i64,
        run_len: Duration,
    ) -> Self {
        let step_cfg = match &cfg.scenarios[0].model {
            Model::Open(p) if p.segments.iter().any(|s| s.step.is_some()) => Some((
                p.segments
                    .iter()
                    .filter(|s| s.step.is_some())
                    .map(|s| s.r0)
                    .collect::<Vec<_>>(),
                p.segments
                    .iter()
                    .find(|s| s.step.is_some())
                    .map(|s| Duration::from_secs_f64(s.secs))
                    .unwrap_or_default(),
            )),
            _ => None,
        };
        let n_steps = step_cfg.as_ref().map_or(0, |s| s.0.len());
        Aggregator {
            out,
            run_id: cfg.run_id.clone(),
            perturbation_id: cfg.perturbation_id.clone(),
            window_ms: i64::try_from(cfg.bucket.as_millis()).unwrap_or(10_000),
            start,
            start_wall_ms,
            run_len,
            scns: cfg
                .scenarios
                .iter()
                .map(|s| ScnAgg {
                    name: s.name.clone(),
                    log: s.log_requests,
                    profile: match &s.model {
                        Model::Open(p) => Some(p.clone()),
                        Model::Closed { .. } => None,
                    },
                    window: Tally::new(false),
                    total: Tally::new(true),
                })
                .collect(),
            started: scns.to_vec(),
            steps: (0..n_steps).map(|_| (Tally::new(false), false)).collect(),
            step_cfg,
            progress: logline::log::stderr_is_terminal(),
        }
    }

    fn instant_of(&self, wall_ms: i64) -> Instant {
        self.start + Duration::from_millis(u64::try_from(wall_ms - self.start_wall_ms).unwrap_or(0))
    }

    /// Runs until the last [`Msg::Finish`] (or every sender is gone); the summaries.
    pub(crate) async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Msg>) -> Vec<Summary> {
        let mut win_start = logline::clock::window_start_ms(self.start_wall_ms, self.window_ms);
        let mut buf = Vec::with_capacity(256);
        let tick = tokio::time::sleep_until(self.instant_of(win_start + self.window_ms));
        tokio::pin!(tick);
        let (interrupted, elapsed) = loop {
            tokio::select! {
                biased;
                n = rx.recv_many(&mut buf, 256) => {
                    if n == 0 {
                        break (false, self.run_len);
                    }
                    let mut fin = None;
                    for m in buf.drain(..) {
                        match m {
                            Msg::Finish { interrupted, elapsed } => fin = Some((interrupted, elapsed)),
                            m => self.handle(m),
                        }
                    }
                    if let Some(f) = fin {
                        break f;
                    }
                }
                _ = &mut tick => {
                    self.emit_buckets(win_start);
                    win_start += self.window_ms;
                    tick.as_mut().reset(self.instant_of(win_start + self.window_ms));
                }
            }
        };
        // No more results are accepted; record what is already queued.
        rx.close();
        while let Ok(m) = rx.try_recv() {
            if !matches!(m, Msg::Finish { .. }) {
                self.handle(m);
            }
        }
        // Requests still running now were cut off by the end of the grace period.
        for (i, s) in self.started.clone().iter().enumerate() {
            let started = s.started.load(Ordering::Acquire);
            let done = self.scns[i].total.count;
            let aborted = started.saturating_sub(done);
            if aborted > 0 {
                let sa = &mut self.scns[i];
                for t in [&mut sa.window, &mut sa.total] {
                    t.count += aborted;
                    t.err += aborted;
                    *t.errors.entry("aborted").or_insert(0) += aborted;
                }
            }
        }
        let sched_end_ms = self.start_wall_ms + i64::try_from(elapsed.as_millis()).unwrap_or(0);
        let any = self
            .scns
            .iter()
            .any(|s| s.window.count + s.window.dropped > 0);
        if any || win_start < sched_end_ms {
            self.emit_buckets(win_start);
        }
        self.emit_steps(u32::MAX);
        let summaries = self.summaries(interrupted, elapsed);
        for s in &summaries {
            self.out.emit(s.clone());
        }
        summaries
    }

    fn handle(&mut self, m: Msg) {
        match m {
            Msg::Done(o) => {
                let sa = &mut self.scns[o.scenario];
                sa.window.record(&o);
                sa.total.record(&o);
                if let Some(t) = step_slot(&mut self.steps, o.step) {
                    t.record(&o);
                }
                let log = match sa.log {
                    LogRequests::All => true,
                    LogRequests::Errors => !o.ok,
                    LogRequests::None => false,
                };
                if log {
                    let name = sa.name.clone();
                    self.emit_req(name, o);
                }
            }
            Msg::Dropped { scenario, step } => {
                let sa = &mut self.scns[scenario];
                sa.window.dropped += 1;
                sa.total.dropped += 1;
                if let Some(t) = step_slot(&mut self.steps, step) {
                    t.dropped += 1;
                }
            }
            Msg::StepStart(k) => self.emit_steps(k),
            Msg::Client {
                scenario,
                done_ms,
                code,
                revision,
                change,
            } => self.out.emit(ClientChange {
                ts: Timestamp::from_epoch_ms(done_ms),
                run_id: self.run_id.clone(),
                perturbation_id: self.perturbation_id.clone(),
                scenario: self.scns[scenario].name.clone(),
                client: change.client,
                code,
                replica: change.replica,
                revision,
                previous_replica: change.previous_replica,
                set_cookie: change.set_cookie,
            }),
            Msg::Finish { .. } => {}
        }
    }

    fn emit_req(&self, scenario: String, o: Outcome) {
        self.out.emit(Req {
            ts: Timestamp::from_epoch_ms(o.done_ms),
            run_id: self.run_id.clone(),
            perturbation_id: self.perturbation_id.clone(),
            scenario,
            scheduled_ts: Timestamp::from_epoch_ms(o.scheduled_ms),
            code: o.status,
            dur_ms: round3(o.lat_us as f64 / 1000.0),
            send_dur_ms: Some(round3(o.send_us as f64 / 1000.0)),
            ok: o.ok,
            err_class: o.err_class.map(str::to_owned),
            err_msg: o.err_msg,
            revision: o.revision.as_ref().map(header_text),
            replica: o.replica.as_ref().map(header_text),
        });
    }

    /// Emits the step lines of every step before `k` not yet emitted.
    fn emit_steps(&mut self, k: u32) {
        let Some((rates, step_len)) = self.step_cfg.clone() else {
            return;
        };
        for (i, (t, emitted)) in self.steps.iter_mut().enumerate() {
            let n = u32::try_from(i + 1).unwrap_or(u32::MAX);
            if n >= k || *emitted {
                continue;
            }
            *emitted = true;
            let secs = step_len.as_secs_f64();
            self.out.emit(Step {
                ts: Timestamp::now(),
                run_id: self.run_id.clone(),
                perturbation_id: self.perturbation_id.clone(),
                step: n,
                target_rps: rates.get(i).copied().unwrap_or(0.0),
                duration_s: secs,
                count: t.count,
                ok: t.ok,
                err: t.err,
                dropped: t.dropped,
                achieved_rps: if secs > 0.0 {
                    round3(t.count as f64 / secs)
                } else {
                    0.0
                },
                p50_ms: q_ms(&t.lat, 0.5),
                p95_ms: q_ms(&t.lat, 0.95),
                p99_ms: q_ms(&t.lat, 0.99),
            });
        }
    }

    fn emit_buckets(&mut self, win_start: i64) {
        let offset_s = ((win_start - self.start_wall_ms).max(0) as f64) / 1000.0;
        for sa in &mut self.scns {
            let w = &sa.window;
            let start_ts = Timestamp::from_epoch_ms(win_start);
            let target = sa.profile.as_ref().map_or(0.0, |p| p.rate_at(offset_s).0);
            self.out.emit(Bucket {
                ts: Timestamp::now(),
                run_id: self.run_id.clone(),
                perturbation_id: self.perturbation_id.clone(),
                window_s: u64::try_from(self.window_ms / 1000).unwrap_or(0),
                bucket_start_epoch_s: start_ts.epoch_s(),
                bucket_start_iso: start_ts.to_rfc3339_s(),
                count: w.count,
                ok: w.ok,
                err: w.err,
                err_pct: round3(err_pct(w.err, w.count)),
                target_rps: target,
                scenario: sa.name.clone(),
                dropped: w.dropped,
                p50_ms: q_ms(&w.lat, 0.5),
                p95_ms: q_ms(&w.lat, 0.95),
                p99_ms: q_ms(&w.lat, 0.99),
                max_ms: (!w.lat.is_empty()).then(|| round3(w.lat.max() as f64 / 1000.0)),
                send_p50_ms: q_ms(&w.send, 0.5),
                send_p99_ms: q_ms(&w.send, 0.99),
                status: w.status_map(),
                errors: w.errors_map(),
                served_by: w.served_by_map(),
            });
            if self.progress {
                let done = Instant::now()
                    .saturating_duration_since(self.start)
                    .as_secs();
                let total = self.run_len.as_secs();
                eprintln!(
                    "loadgen {done}s/{total}s {}: {:.1} rps, {} ok, {} err, {} dropped, ETA {}s",
                    sa.name,
                    w.count as f64 * 1000.0 / self.window_ms as f64,
                    w.ok,
                    w.err,
                    w.dropped,
                    total.saturating_sub(done)
                );
            }
            sa.window.reset();
        }
    }

    fn summaries(&self, interrupted: bool, elapsed: Duration) -> Vec<Summary> {
        let secs = elapsed.as_secs_f64().max(1e-9);
        let ratio = match self.steps.as_slice() {
            [a, b, ..] => match (q_ms(&a.0.lat, 0.5), q_ms(&b.0.lat, 0.5)) {
                (Some(x), Some(y)) if x > 0.0 => Some(round3(y / x)),
                _ => None,
            },
            _ => None,
        };
        self.scns
            .iter()
            .enumerate()
            .map(|(i, sa)| {
                let t = &sa.total;
                let target = sa.profile.as_ref().map_or(0.0, |p| {
                    let len = self.run_len.as_secs_f64().max(1e-9);
                    round3(p.count_until(len) / len)
                });
                Summary {
                    ts: Timestamp::now(),
                    run_id: self.run_id.clone(),
                    perturbation_id: self.perturbation_id.clone(),
                    scenario: sa.name.clone(),
                    duration_s: round3(secs),
                    count: t.count,
                    ok: t.ok,
                    err: t.err,
                    err_pct: round3(err_pct(t.err, t.count)),
                    dropped: t.dropped,
                    target_rps: target,
                    achieved_rps: round3(t.count as f64 / secs),
                    latency: percentiles(&t.lat),
                    send_latency: percentiles(&t.send),
                    lateness: t.late.as_ref().and_then(percentiles),
                    status: t.status_map(),
                    errors: t.errors_map(),
                    served_by: t.served_by_map(),
                    staircase_p50_ratio: if i == 0 { ratio } else { None },
                    interrupted,
                }
            })
            .collect()
    }
}
