//! loadgen: a constant-arrival-rate HTTP load generator that prints JSON lines.
//!
//! - **Open model** (default): requests of a scenario are due at absolute offsets from the run's
//!   start ([`profile`]: `start + i / rate`, or a ramp / staircase), each spawned as its own task
//!   when due. Latency is measured from the scheduled time (coordinated-omission free) and from
//!   the actual send. A request that would exceed `--max-in-flight` is counted as `dropped` and
//!   never queued (k6's dropped iterations); so is one due before the end of the run but still
//!   unsent a second after it (a scheduler that fell behind) or at a signal (sent + dropped =
//!   every arrival due).
//! - **Closed model** (`--workers N --think D`): N workers, each with its own connection.
//! - **Side streams** (`--also`): extra open-model scenarios with their own connections.
//! - **Output**: `meta`, a `bucket` per scenario per wall-clock aligned window (also when empty),
//!   `req` lines per `--log-requests`, `step` lines for a staircase, `client` lines of virtual
//!   clients ([`clients`]), a `summary` per scenario and a closing `meta` (see
//!   `logline::line::loadgen`).
//!
//! One aggregator task (`aggregator`) owns every counter and histogram; request tasks report to
//! it over a channel, so the hot path takes no lock. Nothing is kept per request: memory is
//! bounded by the number of scenarios, staircase steps and virtual clients.

mod aggregator;
pub mod client;
pub mod clients;
pub mod config;
pub mod h1;
pub mod pacer;
pub mod profile;
pub mod stats;
pub mod target;
pub mod tls;

use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use logline::Timestamp;
use logline::line::Line;
use logline::line::loadgen::{Meta, MetaPhase, Summary};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::aggregator::Aggregator;
use crate::client::{HttpClient, status_class};
use crate::clients::{Change, Clients};
pub use crate::config::{Args, ArgsError, Config, ConfigError};
use crate::config::{LogRequests, Model, ScenarioConfig, StatusSet};
use crate::pacer::Pacer;
use crate::profile::Profile;
use crate::stats::{Outcome, header_text};

/// Where lines go: stdout (the binary) or memory (tests).
#[derive(Clone)]
pub enum Output {
    Stdout,
    Memory(Arc<Mutex<Vec<Line>>>),
}

impl Output {
    /// An in-memory output and the vector it fills.
    pub fn memory() -> (Output, Arc<Mutex<Vec<Line>>>) {
        let v = Arc::new(Mutex::new(Vec::new()));
        (Output::Memory(v.clone()), v)
    }

    fn emit(&self, line: impl Into<Line>) {
        match self {
            Output::Stdout => logline::log::emit(line),
            Output::Memory(v) => {
                if let Ok(mut v) = v.lock() {
                    v.push(line.into());
                }
            }
        }
    }
}

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("cannot start the async runtime")]
    Runtime(#[source] std::io::Error),
    #[error("cannot install the signal handler")]
    Signal(#[source] std::io::Error),
}

/// What a finished run reports (the same numbers as its `summary` lines).
#[derive(Debug)]
pub struct Report {
    pub summaries: Vec<Summary>,
    pub interrupted: bool,
}

enum Msg {
    Done(Outcome),
    Dropped {
        scenario: usize,
        step: Option<u32>,
    },
    StepStart(u32),
    /// A virtual client was first served, moved or got a cookie.
    Client {
        scenario: usize,
        done_ms: i64,
        code: Option<u16>,
        revision: Option<String>,
        change: Change,
    },
    Finish {
        interrupted: bool,
        elapsed: Duration,
    },
}

/// Shared by the scheduler and the request tasks of one scenario.
struct Scn {
    idx: usize,
    cfg: ScenarioConfig,
    client: Option<HttpClient>,
    /// The virtual clients (`--clients`) of an open-model scenario that has them.
    clients: Option<Clients>,
    in_flight: AtomicUsize,
    started: AtomicU64,
    tx: mpsc::UnboundedSender<Msg>,
    ok_status: StatusSet,
    start: Instant,
    start_wall_ms: i64,
    want_msg: bool,
}

impl Scn {
    /// Counts an arrival of (staircase) `step` as dropped: due, never sent.
    fn dropped(&self, step: Option<u32>) {
        let _ = self.tx.send(Msg::Dropped {
            scenario: self.idx,
            step,
        });
    }

    fn wall_ms(&self, t: Instant) -> i64 {
        self.start_wall_ms
            + i64::try_from(t.saturating_duration_since(self.start).as_millis())
                .unwrap_or(i64::MAX / 2)
    }

    fn report(
        &self,
        r: client::Response,
        scheduled: Instant,
        sent: Instant,
        done: Instant,
        step: Option<u32>,
    ) {
        let ok = r.status.is_some_and(|c| self.ok_status.contains(c));
        let err_class = match (ok, r.err_class, r.status) {
            (true, _, _) => None,
            (false, Some(c), _) => Some(c),
            (false, None, Some(code)) => Some(status_class(code)),
            (false, None, None) => Some("other"),
        };
        let us = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        let o = Outcome {
            scenario: self.idx,
            step,
            lat_us: us(done.saturating_duration_since(scheduled)),
            send_us: us(done.saturating_duration_since(sent)),
            late_us: us(sent.saturating_duration_since(scheduled)),
            scheduled_ms: self.wall_ms(scheduled),
            done_ms: self.wall_ms(done),
            status: r.status,
            ok,
            err_class,
            err_msg: r.err_msg,
            revision: r.revision,
            replica: r.replica,
        };
        let _ = self.tx.send(Msg::Done(o));
    }

    /// Applies a response of virtual client `c` to it, reporting what changed.
    fn report_client(&self, c: usize, r: &client::Response, done: Instant) {
        let Some(clients) = &self.clients else {
            return;
        };
        let done_ms = self.wall_ms(done);
        if let Some(change) = clients.observe(c, r.replica.as_ref(), &r.set_cookies) {
            let _ = self.tx.send(Msg::Client {
                scenario: self.idx,
                done_ms,
                code: r.status,
                revision: r.revision.as_ref().map(header_text),
                change,
            });
        }
    }
}

/// Decrements a scenario's in-flight count when a request task ends, also when it is aborted.
struct InFlight(Arc<Scn>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// How long after the end of the run a late open-model scheduler may still send arrivals that
/// were due before the end; past it they count as dropped.
const SCHEDULER_LAG_AT_END: Duration = Duration::from_secs(1);

fn now_wall_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX / 2))
        .unwrap_or(0)
}

/// Runs the load to its end (or until `shutdown` resolves), printing every line to `out`.
///
/// Errors of the target never end the run: they are classified and counted.
pub async fn run(cfg: Config, out: Output, shutdown: impl Future<Output = ()>) -> Report {
    let start = Instant::now();
    let start_wall_ms = now_wall_ms();
    out.emit(meta(
        &cfg,
        Timestamp::from_epoch_ms(start_wall_ms),
        MetaPhase::Start,
    ));

    let run_len = match &cfg.scenarios[0].model {
        Model::Open(p) => cfg.duration.min(Duration::from_secs_f64(p.secs())),
        Model::Closed { .. } => cfg.duration,
    };
    let end = start + run_len;
    let (tx, rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();

    let scns = scenarios(&cfg, &tx, start, start_wall_ms);
    drop(tx);

    let agg = Aggregator::new(&cfg, &scns, out.clone(), start, start_wall_ms, run_len);
    let agg = tokio::spawn(agg.run(rx));

    let schedulers = spawn_load(&cfg, &scns, run_len, end, &cancel);

    tokio::pin!(shutdown);
    let interrupted = tokio::select! {
        _ = tokio::time::sleep_until(end) => false,
        _ = &mut shutdown => true,
    };
    if interrupted {
        cancel.cancel();
    }
    let interrupted =
        stop_schedulers(schedulers, &cancel, end, interrupted, shutdown.as_mut()).await;
    // Closed-model workers stop between requests.
    cancel.cancel();
    let elapsed = Instant::now().saturating_duration_since(start).min(run_len);
    wait_in_flight(&scns, cfg.grace, interrupted, shutdown.as_mut()).await;
    let _ = scns[0].tx.send(Msg::Finish {
        interrupted,
        elapsed,
    });
    let summaries = agg.await.unwrap_or_default();
    out.emit(meta(&cfg, Timestamp::now(), MetaPhase::End));
    Report {
        summaries,
        interrupted,
    }
}

/// The `meta` line of `phase` (start or end of the run), at `ts`.
fn meta(cfg: &Config, ts: Timestamp, phase: MetaPhase) -> Meta {
    Meta {
        ts,
        run_id: cfg.run_id.clone(),
        perturbation_id: cfg.perturbation_id.clone(),
        phase,
        tool: "loadgen".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        config: cfg.echo.clone(),
    }
}

/// The shared state of each scenario, reporting to the aggregator over `tx`; an open-model
/// scenario gets its pooled client here (a closed-model worker makes its own).
fn scenarios(
    cfg: &Config,
    tx: &mpsc::UnboundedSender<Msg>,
    start: Instant,
    start_wall_ms: i64,
) -> Vec<Arc<Scn>> {
    cfg.scenarios
        .iter()
        .enumerate()
        .map(|(idx, sc)| {
            let open = matches!(sc.model, Model::Open(_));
            let clients = (open && sc.clients > 0).then(|| Clients::new(sc.clients));
            let client = open.then(|| {
                let c = HttpClient::new(
                    sc.target.clone(),
                    sc.connection,
                    sc.timeout,
                    sc.max_in_flight,
                    cfg.revision_header.clone(),
                    cfg.replica_header.clone(),
                );
                if clients.is_some() {
                    c.keeping_cookies()
                } else {
                    c
                }
            });
            Arc::new(Scn {
                idx,
                cfg: sc.clone(),
                client,
                clients,
                in_flight: AtomicUsize::new(0),
                started: AtomicU64::new(0),
                tx: tx.clone(),
                ok_status: cfg.ok_status.clone(),
                start,
                start_wall_ms,
                want_msg: sc.log_requests != LogRequests::None,
            })
        })
        .collect()
}

/// Spawns one scheduler per open-model scenario (side streams hold their peak rate for the
/// whole run) and the workers of a closed-model one; returns the schedulers, which end by
/// themselves at `end`.
fn spawn_load(
    cfg: &Config,
    scns: &[Arc<Scn>],
    run_len: Duration,
    end: Instant,
    cancel: &CancellationToken,
) -> Vec<tokio::task::JoinHandle<()>> {
    let mut schedulers = Vec::new();
    for s in scns {
        match &s.cfg.model {
            Model::Open(p) => {
                let profile = if s.idx == 0 {
                    p.clone()
                } else {
                    Profile::constant(p.peak_rate(), run_len.as_secs_f64())
                };
                schedulers.push(tokio::spawn(open_loop(
                    s.clone(),
                    profile,
                    end,
                    cfg.pacing,
                    cancel.clone(),
                )));
            }
            Model::Closed { workers, think } => {
                for _ in 0..*workers {
                    let client = HttpClient::new(
                        s.cfg.target.clone(),
                        s.cfg.connection,
                        s.cfg.timeout,
                        1,
                        cfg.revision_header.clone(),
                        cfg.replica_header.clone(),
                    );
                    tokio::spawn(worker(s.clone(), client, *think, end, cancel.clone()));
                }
            }
        }
    }
    schedulers
}

/// Waits for the open-model schedulers to end; returns whether the run was interrupted (by
/// then or during the wait).
///
/// At the natural end the schedulers finish by themselves once their last arrival before `end`
/// is sent; one woken a little late (pacing slack, a busy thread) still sends it. Only a
/// scheduler still behind [`SCHEDULER_LAG_AT_END`] later is stopped, and what it has not sent
/// counts as dropped; a signal stops them at once.
async fn stop_schedulers(
    schedulers: Vec<tokio::task::JoinHandle<()>>,
    cancel: &CancellationToken,
    end: Instant,
    mut interrupted: bool,
    mut shutdown: std::pin::Pin<&mut impl Future<Output = ()>>,
) -> bool {
    let lag_deadline = tokio::time::sleep_until(end + SCHEDULER_LAG_AT_END);
    tokio::pin!(lag_deadline);
    for mut h in schedulers {
        if !cancel.is_cancelled() {
            tokio::select! {
                _ = &mut h => continue,
                _ = &mut lag_deadline => {}
                _ = &mut shutdown, if !interrupted => interrupted = true,
            }
            cancel.cancel();
        }
        let _ = h.await;
    }
    interrupted
}

/// Waits for in-flight requests: up to the longest timeout after a natural end, up to `grace`
/// after a signal (or a signal during the wait).
async fn wait_in_flight(
    scns: &[Arc<Scn>],
    grace: Duration,
    interrupted: bool,
    mut shutdown: std::pin::Pin<&mut impl Future<Output = ()>>,
) {
    let longest = scns.iter().map(|s| s.cfg.timeout).max().unwrap_or_default();
    let mut deadline = Instant::now()
        + if interrupted {
            grace
        } else {
            longest + Duration::from_secs(1)
        };
    let mut interrupted_now = interrupted;
    while scns.iter().any(|s| s.in_flight.load(Ordering::Acquire) > 0) && Instant::now() < deadline
    {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(5)) => {}
            _ = &mut shutdown, if !interrupted_now => {
                interrupted_now = true;
                deadline = deadline.min(Instant::now() + grace);
            }
        }
    }
}

/// Builds the runtime (current-thread for `--threads 1`), installs SIGTERM/SIGINT handling and
/// runs to the end. What the binary calls.
pub fn run_blocking(cfg: Config, out: Output) -> Result<Report, RunError> {
    let rt = if cfg.threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(cfg.threads)
            .enable_all()
            .build()
    }
    .map_err(RunError::Runtime)?;
    rt.block_on(async move {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate()).map_err(RunError::Signal)?;
        let mut int = signal(SignalKind::interrupt()).map_err(RunError::Signal)?;
        let shutdown = async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        };
        Ok(run(cfg, out, shutdown).await)
    })
}

/// The open-model scheduler of one scenario: waits for each absolute due time ([`Pacer`]: a
/// timerfd on Linux, within `--pacing` of it) and spawns the request, or counts it as dropped
/// when the scenario is at its in-flight cap.
async fn open_loop(
    s: Arc<Scn>,
    profile: Profile,
    end: Instant,
    pacing: Duration,
    cancel: CancellationToken,
) {
    let mut pacer = Pacer::new(pacing);
    let cancelled = cancel.cancelled();
    tokio::pin!(cancelled);
    let mut cur_step = None;
    let mut arrivals = profile.arrivals();
    // The index of the arrival sent next (its virtual client's, with `--clients`).
    let mut sent_count: u64 = 0;
    while let Some((offset, step)) = arrivals.next() {
        let at = s.start + offset;
        if at >= end {
            break;
        }
        let stopped = if at > Instant::now() {
            tokio::select! {
                biased;
                _ = &mut cancelled => true,
                _ = pacer.wait_until(at) => false,
            }
        } else {
            cancel.is_cancelled()
        };
        if stopped {
            // The run stops. When this scheduler was behind (a CPU too busy to keep up, even
            // for the wake-up it waited for) this arrival and others may be due but unsent:
            // they count as dropped, so that sent + dropped is every arrival due by the stop.
            let stop = Instant::now();
            let due = std::iter::once((offset, step))
                .chain(arrivals)
                .take_while(|(o, _)| {
                    let t = s.start + *o;
                    t <= stop && t < end
                });
            for (_, step) in due {
                s.dropped(step);
            }
            break;
        }
        // A new staircase step begins (after the pause): the previous step's line can go out.
        if step.is_some() && step != cur_step {
            cur_step = step;
            if let Some(k) = step {
                let _ = s.tx.send(Msg::StepStart(k));
            }
        }
        if s.in_flight.load(Ordering::Acquire) >= s.cfg.max_in_flight {
            s.dropped(step);
            continue;
        }
        s.in_flight.fetch_add(1, Ordering::AcqRel);
        s.started.fetch_add(1, Ordering::AcqRel);
        let guard = InFlight(s.clone());
        let vc = s.clients.as_ref().map(|c| c.of_arrival(sent_count));
        sent_count += 1;
        tokio::spawn(async move {
            let s = &guard.0;
            let cookie = vc.and_then(|c| s.clients.as_ref()?.cookie(c));
            let sent = Instant::now();
            if let Some(c) = &s.client {
                let (r, closing) = c.get(s.want_msg, cookie.as_deref()).await;
                let done = Instant::now();
                if let Some(vc) = vc {
                    s.report_client(vc, &r, done);
                }
                s.report(r, at, sent, done, step);
                closing.finish().await;
            }
            drop(guard);
        });
    }
}

/// One closed-model worker: request, think, repeat, on its own persistent connection.
async fn worker(
    s: Arc<Scn>,
    client: HttpClient,
    think: Duration,
    end: Instant,
    cancel: CancellationToken,
) {
    loop {
        if cancel.is_cancelled() || Instant::now() >= end {
            break;
        }
        s.in_flight.fetch_add(1, Ordering::AcqRel);
        s.started.fetch_add(1, Ordering::AcqRel);
        let guard = InFlight(s.clone());
        let sent = Instant::now();
        let (r, closing) = client.get(s.want_msg, None).await;
        s.report(r, sent, sent, Instant::now(), None);
        closing.finish().await;
        drop(guard);
        if !think.is_zero() {
            tokio::select! {
                _ = cancel.cancelled() => break,
                _ = tokio::time::sleep(think) => {}
            }
        }
    }
}
