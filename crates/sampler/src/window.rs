//! The sampling window: a start marker, ticks at absolute times, an end marker.
//!
//! This is the one tick loop of probelab; `audit` runs it too (with its own interval, window and
//! labels). The schedule is `start + k * interval` for `k in 0..ticks`, measured on the
//! monotonic clock (`tokio::time::Instant`, so tests can pause time):
//!
//! - A tick's ARM calls get the end of the tick's slot (`start + (k+1) * interval`) as their
//!   deadline: no retry is started that could not finish in the slot, and an in-flight call is
//!   cut at the slot's end. Work therefore never pushes the next tick back; failures become
//!   `SamplerError` lines and the schedule goes on.
//! - A tick that nevertheless starts late (a stalled machine) by more than [`LATE_REPORT`] is
//!   reported as `SamplerError { operation: "tick_late", late_ms }`. Ticks missed entirely (more
//!   than one interval late) are not run: each is reported as `tick_skipped`, and the loop goes
//!   on with the tick now due. Never `sleep(interval)` after the work: there is no drift.
//! - Every line of a tick carries the tick's number and its start time as `ts` (the wall clock at
//!   the window's start plus monotonic time elapsed), so a tick's lines group together.
//! - The end marker is written when the window ends (`start + duration`), or at once when the
//!   shutdown future completes (SIGTERM), with the ticks scheduled and completed.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use arm::{ArmClient, Scope};
use logline::Timestamp;
use logline::line::{MarkerPhase, PerturbationWindowMarker, SamplerError};
use tokio::time::Instant;

use crate::sink::Sink;
use crate::tick::{LineContext, TickResult, sample_tick};

/// A tick starting later than this is reported as `tick_late`.
pub const LATE_REPORT: Duration = Duration::from_millis(50);

/// How far past its slot a tick may run before it is abandoned as `tick_timeout` (its calls
/// are cut at the slot's end already; this only catches a stuck future).
pub const TICK_GRACE: Duration = Duration::from_millis(100);

/// What one window samples, and how often.
#[derive(Clone, Debug)]
pub struct Window {
    pub scope: Scope,
    pub apps: Vec<String>,
    /// Jobs whose executions are listed each tick.
    pub jobs: Vec<String>,
    pub interval: Duration,
    pub duration: Duration,
    pub ctx: LineContext,
}

impl Window {
    /// How many ticks fit: `floor(duration / interval)`, at least one.
    pub fn ticks(&self) -> u64 {
        ticks_in(self.duration, self.interval)
    }
}

/// `floor(duration / interval)`, at least one.
pub fn ticks_in(duration: Duration, interval: Duration) -> u64 {
    if interval.is_zero() {
        return 1;
    }
    let n = duration.as_nanos() / interval.as_nanos();
    u64::try_from(n).unwrap_or(u64::MAX).max(1)
}

/// How a window went.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub ticks_scheduled: u64,
    /// Ticks that ran (whether or not all their calls succeeded).
    pub ticks_run: u64,
    /// Ticks all of whose calls succeeded.
    pub ticks_completed: u64,
    /// Ticks not run because the loop was more than an interval late.
    pub ticks_skipped: u64,
    /// `SamplerError` lines written.
    pub errors: u64,
    /// The shutdown future fired before the window ended.
    pub interrupted: bool,
}

fn wall_at(wall0: Timestamp, elapsed: Duration) -> Timestamp {
    chrono::Duration::from_std(elapsed)
        .ok()
        .and_then(|d| wall0.0.checked_add_signed(d))
        .map(Timestamp)
        .unwrap_or(wall0)
}

/// `interval * k`, saturating.
pub fn offset(interval: Duration, k: u64) -> Duration {
    let nanos = interval.as_nanos().saturating_mul(u128::from(k));
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Runs one window: start marker, ticks, end marker. Returns when the window is over or
/// `shutdown` completes.
pub async fn run_window(
    window: &Window,
    client: &ArmClient,
    sink: &dyn Sink,
    shutdown: impl Future<Output = ()>,
) -> Outcome {
    let ctx = &window.ctx;
    let mut run = WindowRun::begin(window, sink);
    let ticks = run.out.ticks_scheduled;
    tokio::pin!(shutdown);

    let mut k: u64 = 0;
    'ticks: while k < ticks {
        let due = run.due(k);
        tokio::select! {
            _ = tokio::time::sleep_until(due) => {}
            _ = &mut shutdown => { run.out.interrupted = true; break 'ticks; }
        }
        let now = Instant::now();
        // Missed whole slots: report them, then run the tick that is due now.
        k = run.skip_missed(k, now);
        if k >= ticks {
            break;
        }
        let ts = run.ts_at(now);
        run.report_late(k, ts, now.saturating_duration_since(run.due(k)));
        let slot_end = run.due(k + 1);
        let tick_client = client.with_deadline(slot_end);
        let work = sample_tick(
            &tick_client,
            &window.scope,
            (&window.apps, &window.jobs),
            ctx,
            k,
            ts,
        );
        // Belt and braces: every call is already bounded by the slot; this bounds the tick as a
        // whole (a stuck future anywhere) a little after it.
        let result = tokio::select! {
            r = tokio::time::timeout_at(slot_end + TICK_GRACE, work) => {
                r.unwrap_or_else(|_| stuck_tick(ctx, ts, k))
            }
            _ = &mut shutdown => { run.out.interrupted = true; break 'ticks; }
        };
        run.record(result);
        k += 1;
    }
    run.finish(shutdown).await
}

/// A window being run: where its lines go, its clocks (monotonic and wall) at the start, and
/// how it has gone so far.
struct WindowRun<'a> {
    window: &'a Window,
    sink: &'a dyn Sink,
    start: Instant,
    wall0: Timestamp,
    out: Outcome,
}

impl<'a> WindowRun<'a> {
    /// Starts the window's clocks now and writes its start marker.
    fn begin(window: &'a Window, sink: &'a dyn Sink) -> WindowRun<'a> {
        let start = Instant::now();
        let wall0 = Timestamp::now();
        let out = Outcome {
            ticks_scheduled: window.ticks(),
            ..Outcome::default()
        };
        sink.emit(marker(window, wall0, MarkerPhase::Start, None).into());
        WindowRun {
            window,
            sink,
            start,
            wall0,
            out,
        }
    }

    /// When tick `k` is due.
    fn due(&self, k: u64) -> Instant {
        self.start + offset(self.window.interval, k)
    }

    /// The wall-clock time of monotonic instant `now`.
    fn ts_at(&self, now: Instant) -> Timestamp {
        wall_at(self.wall0, now - self.start)
    }

    /// Reports every tick from `k` whose whole slot passed before `now` as `tick_skipped`;
    /// returns the tick due now.
    fn skip_missed(&mut self, k: u64, now: Instant) -> u64 {
        let late = now.saturating_duration_since(self.due(k));
        let behind =
            u64::try_from(late.as_nanos() / self.window.interval.as_nanos()).unwrap_or(u64::MAX);
        if behind == 0 {
            return k;
        }
        let ts = self.ts_at(now);
        for j in k..(k + behind).min(self.out.ticks_scheduled) {
            self.sink.emit(
                SamplerError {
                    tick: Some(j),
                    late_ms: Some(ms(now.saturating_duration_since(self.due(j)))),
                    ..self.window.ctx.error(
                        ts,
                        "tick_skipped",
                        "tick not run: the sampler was more than one interval late".into(),
                    )
                }
                .into(),
            );
            self.out.errors += 1;
            self.out.ticks_skipped += 1;
        }
        k + behind
    }

    /// Reports tick `k` as `tick_late` when it starts more than [`LATE_REPORT`] late.
    fn report_late(&mut self, k: u64, ts: Timestamp, late: Duration) {
        if late <= LATE_REPORT {
            return;
        }
        self.sink.emit(
            SamplerError {
                tick: Some(k),
                late_ms: Some(ms(late)),
                ..self.window.ctx.error(
                    ts,
                    "tick_late",
                    format!("tick started {} ms after its scheduled time", ms(late)),
                )
            }
            .into(),
        );
        self.out.errors += 1;
    }

    /// Writes a tick's lines and counts it.
    fn record(&mut self, result: TickResult) {
        for line in result.lines {
            self.sink.emit(line);
        }
        self.out.ticks_run += 1;
        self.out.errors += result.errors as u64;
        if result.errors == 0 {
            self.out.ticks_completed += 1;
        }
    }

    /// Waits for the window's end (unless interrupted already, or `shutdown` completes first),
    /// reports an interruption, and writes the end marker.
    async fn finish<F: Future<Output = ()>>(mut self, mut shutdown: Pin<&mut F>) -> Outcome {
        if !self.out.interrupted {
            let end = self.start + self.window.duration;
            tokio::select! {
                _ = tokio::time::sleep_until(end) => {}
                _ = &mut shutdown => { self.out.interrupted = true; }
            }
        }
        let ts_end = self.ts_at(Instant::now());
        if self.out.interrupted {
            self.sink.emit(
                self.window
                    .ctx
                    .error(
                        ts_end,
                        "interrupted",
                        format!(
                            "shutdown signal before the window ended: {} of {} ticks run",
                            self.out.ticks_run, self.out.ticks_scheduled
                        ),
                    )
                    .into(),
            );
            self.out.errors += 1;
        }
        self.sink
            .emit(marker(self.window, ts_end, MarkerPhase::End, Some(&self.out)).into());
        self.out
    }
}

/// The result of a tick abandoned after its slot.
fn stuck_tick(ctx: &LineContext, ts: Timestamp, k: u64) -> TickResult {
    let line = SamplerError {
        tick: Some(k),
        ..ctx.error(
            ts,
            "tick_timeout",
            format!("tick {k} did not finish within its slot; its samples are lost"),
        )
    };
    TickResult {
        lines: vec![line.into()],
        errors: 1,
    }
}

fn marker(
    window: &Window,
    ts: Timestamp,
    phase: MarkerPhase,
    outcome: Option<&Outcome>,
) -> PerturbationWindowMarker {
    PerturbationWindowMarker {
        ts,
        run_id: window.ctx.run_id.clone(),
        perturbation_id: window.ctx.perturbation_id.clone(),
        sampler: Some(window.ctx.sampler.clone()),
        phase,
        apps: window.apps.clone(),
        interval_s: Some(window.interval.as_secs_f64()),
        duration_s: Some(window.duration.as_secs_f64()),
        ticks_scheduled: outcome.map(|o| o.ticks_scheduled),
        ticks_completed: outcome.map(|o| o.ticks_completed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_whole_intervals_in_the_window() {
        let s = Duration::from_secs;
        assert_eq!(ticks_in(s(600), s(5)), 120);
        assert_eq!(ticks_in(s(200), s(30)), 6);
        assert_eq!(ticks_in(s(60), s(1)), 60);
        assert_eq!(ticks_in(s(1), s(5)), 1);
        assert_eq!(ticks_in(s(1), Duration::ZERO), 1);
    }

    #[test]
    fn wall_time_follows_monotonic_elapsed() {
        let t0: Timestamp = "2026-06-12T14:18:20.000Z".parse().unwrap();
        assert_eq!(
            wall_at(t0, Duration::from_millis(5_250)).to_string(),
            "2026-06-12T14:18:25.250Z"
        );
    }
}
