//! Replicas and the per-container supervisor: start, probe, kill on liveness/startup failure,
//! restart with kubelet's back-off, stop with the grace period.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use logline::Timestamp;
use tokio::sync::{Notify, mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::logsink::{Level, Owner, Sink};
use crate::model::{ContainerSpec, Probe, ProbeKind};
use crate::prober::{Counter, ProbeFailure, run_probe, sleep_or};
use crate::runtime::{LaunchSpec, Launched, Runtime, wait_exit};

/// Kubelet's crash-loop back-off: first restart at once, then 10 s doubling to 300 s, reset
/// after 10 minutes of running. (`recorded` timings cap it lower: [`crate::timings`].)
pub const BACKOFF_INITIAL: Duration = crate::timings::KUBELET_BACKOFF_INITIAL;
pub const BACKOFF_MAX: Duration = crate::timings::KUBELET_BACKOFF_MAX;
pub const BACKOFF_RESET: Duration = Duration::from_secs(600);

/// What the ARM API reports for one container of a replica.
#[derive(Debug, Clone)]
pub struct ContainerStatus {
    pub name: String,
    /// `Running` | `Terminated` | `Waiting` (the spec's `ContainerAppReplicaRunningState`).
    pub running_state: &'static str,
    pub details: String,
    pub ready: bool,
    pub started: bool,
    pub restart_count: u32,
    pub container_id: String,
    pub endpoint: Option<SocketAddr>,
}

#[derive(Debug)]
pub struct Replica {
    pub name: String,
    pub owner: Owner,
    pub created: Timestamp,
    pub containers: Vec<Mutex<ContainerStatus>>,
    /// Cleared when the replica is taken out of routing (deactivation, restart, delete).
    pub routable: AtomicBool,
    /// Set once the replica was in an ingress routing table.
    pub routed: AtomicBool,
    /// Set once a stop was requested, so reconcile does not count the replica.
    pub retiring: AtomicBool,
    /// Fired to stop the replica: SIGTERM, grace, SIGKILL.
    pub cancel: CancellationToken,
    running: AtomicUsize,
    /// Becomes `true` when every container's supervisor has ended.
    pub done: watch::Sender<bool>,
    /// Its share of the quotas ([`crate::quota`]), given back when it is done.
    lease: Mutex<Option<crate::quota::Lease>>,
}

impl Replica {
    pub fn new(name: String, owner: Owner, containers: &[ContainerSpec]) -> Arc<Replica> {
        let (done, _) = watch::channel(false);
        Arc::new(Replica {
            name,
            owner,
            created: Timestamp::now(),
            containers: containers
                .iter()
                .map(|c| {
                    Mutex::new(ContainerStatus {
                        name: c.name.clone(),
                        running_state: "Waiting",
                        details: "ContainerCreating".into(),
                        ready: false,
                        started: false,
                        restart_count: 0,
                        container_id: String::new(),
                        endpoint: None,
                    })
                })
                .collect(),
            routable: AtomicBool::new(true),
            routed: AtomicBool::new(false),
            retiring: AtomicBool::new(false),
            cancel: CancellationToken::new(),
            running: AtomicUsize::new(containers.len()),
            done,
            lease: Mutex::new(None),
        })
    }

    /// Holds `lease` until every container of the replica has ended.
    pub fn hold(&self, lease: crate::quota::Lease) {
        if let Ok(mut l) = self.lease.lock() {
            *l = Some(lease);
        }
    }

    pub fn statuses(&self) -> Vec<ContainerStatus> {
        self.containers
            .iter()
            .filter_map(|c| c.lock().ok().map(|s| s.clone()))
            .collect()
    }

    /// All containers started and ready.
    pub fn ready(&self) -> bool {
        let s = self.statuses();
        !s.is_empty() && s.iter().all(|c| c.ready && c.running_state == "Running")
    }

    /// Where ingress sends this replica's traffic (the first container's target port).
    pub fn endpoint(&self) -> Option<SocketAddr> {
        self.containers
            .first()
            .and_then(|c| c.lock().ok().and_then(|s| s.endpoint))
    }

    /// `Running` when every container runs, `NotRunning` otherwise (replica `runningState`).
    pub fn running_state(&self) -> &'static str {
        let s = self.statuses();
        if !s.is_empty() && s.iter().all(|c| c.running_state == "Running") {
            "Running"
        } else {
            "NotRunning"
        }
    }

    pub fn is_done(&self) -> bool {
        *self.done.borrow()
    }

    pub fn restart_count(&self) -> u32 {
        self.statuses().iter().map(|c| c.restart_count).sum()
    }

    fn update(&self, idx: usize, f: impl FnOnce(&mut ContainerStatus)) {
        if let Some(Ok(mut s)) = self.containers.get(idx).map(|c| c.lock()) {
            f(&mut s);
        }
    }

    fn container_ended(&self) {
        if self.running.fetch_sub(1, Ordering::SeqCst) == 1 {
            if let Ok(mut l) = self.lease.lock() {
                l.take();
            }
            self.done.send_replace(true);
        }
    }
}

/// What a supervisor needs from the plane.
#[derive(Clone)]
pub struct SupCtx {
    pub runtime: Runtime,
    pub sink: Sink,
    /// Wakes the owning app's controller (readiness and liveness changes).
    pub notify: Arc<Notify>,
    /// Ends every supervisor (localplane shutdown): containers are stopped with their grace.
    pub shutdown: CancellationToken,
    /// Cuts every grace period short (a second Ctrl-C/SIGTERM): SIGKILL at once.
    pub hurry: CancellationToken,
    /// The app's platform step durations (provisioning delay, back-off).
    pub timings: crate::timings::Timings,
}

enum Outcome {
    Exited(i64),
    ProbeKill(ProbeKind),
    Stop,
}

/// Supervises container `idx` of `rep` until the replica is cancelled.
pub async fn supervise(
    ctx: SupCtx,
    rep: Arc<Replica>,
    idx: usize,
    spec: ContainerSpec,
    template_grace: Duration,
    target_port: Option<u16>,
    launch: LaunchSpec,
) {
    let c = Supervised {
        ctx: &ctx,
        rep: &rep,
        idx,
        spec: &spec,
    };
    let mut backoff = Duration::ZERO;
    let mut first = true;
    // Between `AssigningReplica` and the first start: image pull and scheduling on Azure.
    if !ctx.timings.provision.is_zero() {
        let stop = rep.cancel.clone();
        let shut = ctx.shutdown.clone();
        tokio::select! {
            _ = sleep_or(ctx.timings.provision, &stop) => {}
            _ = shut.cancelled() => {}
        }
    }
    loop {
        if rep.cancel.is_cancelled() || ctx.shutdown.is_cancelled() {
            break;
        }
        if !first {
            if !c.back_off(backoff).await {
                break;
            }
            // kubelet restarts the first time at once, then waits 10 s, 20 s, ... 300 s.
            backoff = ctx.timings.next_backoff(backoff);
        }
        first = false;
        let Some(launched) = c.start(&launch).await else {
            continue;
        };
        let started_at = tokio::time::Instant::now();
        let endpoint = target_port.map(|p| SocketAddr::new(launched.host, launched.port(p)));
        rep.update(idx, |s| {
            s.running_state = "Running";
            s.details = String::new();
            s.container_id = launched.id.clone();
            s.endpoint = endpoint;
            s.started = false;
            s.ready = false;
        });
        let mut exit = launched.exit.clone();
        let outcome = run_container(&ctx, &rep, idx, &spec, &launched, &mut exit).await;
        c.end(&outcome, template_grace, &launched, &mut exit).await;
        if matches!(outcome, Outcome::Stop) {
            break;
        }
        if started_at.elapsed() >= BACKOFF_RESET {
            backoff = Duration::ZERO;
        }
    }
    rep.container_ended();
    ctx.notify.notify_one();
}

/// The container a supervisor looks after: container `idx` of replica `rep`, run from `spec`.
struct Supervised<'a> {
    ctx: &'a SupCtx,
    rep: &'a Replica,
    idx: usize,
    spec: &'a ContainerSpec,
}

impl Supervised<'_> {
    /// Writes a system row of the replica.
    fn system(&self, reason: &str, level: Level, msg: String) {
        self.ctx
            .sink
            .system(&self.rep.owner, &self.rep.name, reason, level, msg)
    }

    /// Changes the container's status.
    fn update(&self, f: impl FnOnce(&mut ContainerStatus)) {
        self.rep.update(self.idx, f);
    }

    /// Before a restart: the container waits in `CrashLoopBackOff` for `backoff` (a `BackOff`
    /// row when it is not zero) and counts the restart; `false` when the replica or localplane
    /// stopped during the wait.
    async fn back_off(&self, backoff: Duration) -> bool {
        self.update(|s| {
            s.running_state = "Waiting";
            s.details = "CrashLoopBackOff".into();
        });
        if !backoff.is_zero() {
            self.system(
                "BackOff",
                Level::Warning,
                format!(
                    "Back-off restarting failed container '{}' for {} seconds",
                    self.spec.name,
                    backoff.as_secs()
                ),
            );
        }
        let stop = self.rep.cancel.clone();
        let shut = self.ctx.shutdown.clone();
        let completed = tokio::select! {
            r = sleep_or(backoff, &stop) => r,
            _ = shut.cancelled() => false,
        };
        if completed {
            self.update(|s| s.restart_count += 1);
        }
        completed
    }

    /// Launches the container with the rows Container Apps writes (pull, create, start); on a
    /// failure a `ContainerCreateFailure` row, the error in the container's status, and `None`.
    async fn start(&self, launch: &LaunchSpec) -> Option<Launched> {
        let spec = self.spec;
        self.system(
            "PullingImage",
            Level::Normal,
            format!("Pulling image '{}'", spec.image),
        );
        self.system(
            "PulledImage",
            Level::Normal,
            format!("Successfully pulled image '{}' in 0.0s", spec.image),
        );
        let launched = match self.ctx.runtime.launch(launch, &self.ctx.sink).await {
            Ok(l) => l,
            Err(e) => {
                self.system(
                    "ContainerCreateFailure",
                    Level::Warning,
                    format!("Failed to create container '{}': {e}", spec.name),
                );
                self.update(|s| {
                    s.running_state = "Waiting";
                    s.details = e.to_string();
                });
                return None;
            }
        };
        self.system(
            "ContainerCreated",
            Level::Normal,
            format!("Created container '{}'", spec.name),
        );
        self.system(
            "ContainerStarted",
            Level::Normal,
            format!("Started container '{}'", spec.name),
        );
        Some(launched)
    }

    /// Ends a run of the container after `outcome`: the termination rows, a stop with the
    /// probe's grace period or `template_grace` while it still runs, removal, and the status
    /// `Terminated`.
    async fn end(
        &self,
        outcome: &Outcome,
        template_grace: Duration,
        launched: &Launched,
        exit: &mut watch::Receiver<Option<i64>>,
    ) {
        let spec = self.spec;
        let (kill_grace, term_msg) = match outcome {
            Outcome::ProbeKill(kind) => {
                // kubelet's `Killing` event, worded as Container Apps prints it.
                self.system(
                    "Killing",
                    Level::Warning,
                    format!(
                        "Container {} failed {} probe, will be restarted",
                        spec.name,
                        kind.word().to_ascii_lowercase()
                    ),
                );
                let g = spec
                    .probe(*kind)
                    .and_then(|p| p.grace)
                    .unwrap_or(template_grace);
                (
                    Some(g),
                    Some(format!(
                        "Container '{}' was terminated with reason 'ProbeFailure'",
                        spec.name
                    )),
                )
            }
            Outcome::Exited(code) => (
                None,
                Some(format!(
                    "Container '{}' was terminated with exit code '{code}'",
                    spec.name
                )),
            ),
            // Retired by the platform (rollout, restart, deactivation, delete) as Container
            // Apps words it; localplane's own shutdown writes nothing.
            Outcome::Stop if self.rep.cancel.is_cancelled() => (
                Some(template_grace),
                Some(format!(
                    "Container '{}' was terminated with exit code '' and reason 'ManuallyStopped'",
                    spec.name
                )),
            ),
            Outcome::Stop => (Some(template_grace), None),
        };
        if let Some(msg) = term_msg {
            self.system("ContainerTerminated", Level::Warning, msg);
        }
        let ctx = self.ctx;
        if matches!(outcome, Outcome::ProbeKill(_)) {
            self.update(|s| s.ready = false);
            ctx.notify.notify_one();
        }
        if let Some(grace) = kill_grace {
            let code = stop_with_grace(&ctx.runtime, &launched.id, exit, grace, &ctx.hurry).await;
            if matches!(outcome, Outcome::ProbeKill(_)) {
                // After the `ProbeFailure` row, the killed container's own exit (137 when the
                // grace period ran out): not a second restart.
                self.system(
                    "ContainerTerminated",
                    Level::Warning,
                    format!(
                        "Container '{}' was terminated with exit code '{code}'",
                        spec.name
                    ),
                );
            }
        }
        ctx.runtime.remove(&launched.id).await;
        let stopping = matches!(outcome, Outcome::Stop);
        self.update(|s| {
            s.running_state = "Terminated";
            s.ready = false;
            s.started = false;
            // A stopped replica keeps its address: with `routingRemovalLagMs` the ingress keeps
            // sending to it (connection refused) until routing catches up, as in Kubernetes.
            if !stopping {
                s.endpoint = None;
            }
        });
        ctx.notify.notify_one();
    }
}

/// 0 → 10 s → 20 s → ... → 300 s.
pub fn next_backoff(current: Duration) -> Duration {
    if current.is_zero() {
        BACKOFF_INITIAL
    } else {
        (current * 2).min(BACKOFF_MAX)
    }
}

/// SIGTERM, wait up to `grace` (cut short when `hurry` fires), SIGKILL; returns the exit code.
pub async fn stop_with_grace(
    rt: &Runtime,
    id: &str,
    exit: &mut watch::Receiver<Option<i64>>,
    grace: Duration,
    hurry: &CancellationToken,
) -> i64 {
    if let Some(c) = *exit.borrow() {
        return c;
    }
    if !hurry.is_cancelled() {
        rt.terminate(id).await;
        let waited = tokio::select! {
            c = wait_exit(exit, grace) => c,
            _ = hurry.cancelled() => None,
        };
        if let Some(c) = waited {
            return c;
        }
    }
    rt.kill(id).await;
    wait_exit(exit, Duration::from_secs(15))
        .await
        .unwrap_or(137)
}

async fn run_container(
    ctx: &SupCtx,
    rep: &Arc<Replica>,
    idx: usize,
    spec: &ContainerSpec,
    launched: &Launched,
    exit: &mut watch::Receiver<Option<i64>>,
) -> Outcome {
    let (tx, mut rx) = mpsc::channel::<(ProbeKind, Result<(), ProbeFailure>)>(16);
    let (started_tx, started_rx) = watch::channel(spec.probe(ProbeKind::Startup).is_none());
    let probes_stop = CancellationToken::new();
    let _guard = probes_stop.clone().drop_guard();
    for probe in &spec.probes {
        tokio::spawn(probe_worker(
            probe.clone(),
            launched.host,
            launched.port_override,
            started_rx.clone(),
            tx.clone(),
            probes_stop.clone(),
        ));
    }
    drop(tx);
    let mut startup = spec.probe(ProbeKind::Startup).map(Counter::startup);
    let mut readiness = spec
        .probe(ProbeKind::Readiness)
        .map(|p| Counter::new(false, p));
    let mut liveness = spec
        .probe(ProbeKind::Liveness)
        .map(|p| Counter::new(true, p));
    let set_started = |rep: &Arc<Replica>, has_readiness: bool| {
        rep.update(idx, |s| {
            s.started = true;
            if !has_readiness {
                s.ready = true;
            }
        });
        ctx.notify.notify_one();
    };
    if startup.is_none() {
        set_started(rep, readiness.is_some());
    }
    loop {
        tokio::select! {
            biased;
            _ = rep.cancel.cancelled() => return Outcome::Stop,
            _ = ctx.shutdown.cancelled() => return Outcome::Stop,
            changed = exit.changed() => {
                if changed.is_err() || exit.borrow().is_some() {
                    return Outcome::Exited(exit.borrow().unwrap_or(-1));
                }
            }
            msg = rx.recv() => {
                let Some((kind, result)) = msg else {
                    // No probes at all: just wait for the exit or the stop.
                    tokio::select! {
                        _ = rep.cancel.cancelled() => return Outcome::Stop,
                        _ = ctx.shutdown.cancelled() => return Outcome::Stop,
                        _ = exit.changed() => return Outcome::Exited(exit.borrow().unwrap_or(-1)),
                    }
                };
                if let Err(msg) = &result {
                    ctx.sink.system(&rep.owner, &rep.name, "ProbeFailed", Level::Warning, msg.to_string());
                }
                let ok = result.is_ok();
                match kind {
                    ProbeKind::Startup => {
                        if let Some(c) = startup.as_mut() {
                            match c.record(ok) {
                                Some(true) => {
                                    started_tx.send_replace(true);
                                    set_started(rep, readiness.is_some());
                                }
                                Some(false) => return Outcome::ProbeKill(ProbeKind::Startup),
                                None => {}
                            }
                        }
                    }
                    ProbeKind::Readiness => {
                        if let Some(c) = readiness.as_mut()
                            && let Some(state) = c.record(ok) {
                                rep.update(idx, |s| s.ready = state);
                                ctx.notify.notify_one();
                            }
                    }
                    ProbeKind::Liveness => {
                        if let Some(c) = liveness.as_mut()
                            && c.record(ok) == Some(false) {
                                return Outcome::ProbeKill(ProbeKind::Liveness);
                            }
                    }
                }
            }
        }
    }
}

async fn probe_worker(
    probe: Probe,
    host: std::net::IpAddr,
    port_override: Option<u16>,
    mut started: watch::Receiver<bool>,
    tx: mpsc::Sender<(ProbeKind, Result<(), ProbeFailure>)>,
    stop: CancellationToken,
) {
    if !sleep_or(probe.initial_delay, &stop).await {
        return;
    }
    let mut ticker = tokio::time::interval(probe.period);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut done_startup = false;
    loop {
        tokio::select! {
            _ = ticker.tick() => {}
            _ = stop.cancelled() => return,
        }
        if probe.kind == ProbeKind::Startup {
            if done_startup || *started.borrow_and_update() {
                // kubelet stops the startup probe once it succeeded.
                done_startup = true;
                continue;
            }
        } else if !*started.borrow_and_update() {
            continue;
        }
        let r = tokio::select! {
            r = run_probe(&probe, host, port_override) => r,
            _ = stop.cancelled() => return,
        };
        if tx.send((probe.kind, r)).await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kubelet's back-off, on paused time: a container that cannot start is retried at once,
    /// then after 10, 20, 40, 80 s.
    #[tokio::test(start_paused = true)]
    async fn restart_backoff_on_paused_time() {
        use crate::logsink::Row;
        use crate::runtime::process::ProcessRuntime;
        let empty = tempfile::tempdir().unwrap();
        let (sink, mut rx) = Sink::channel();
        let ctx = SupCtx {
            runtime: Runtime::Process(ProcessRuntime::new(empty.path().to_path_buf())),
            sink,
            notify: Arc::new(Notify::new()),
            shutdown: CancellationToken::new(),
            hurry: CancellationToken::new(),
            timings: crate::timings::Timings::FAST,
        };
        let spec = ContainerSpec {
            name: "subject".into(),
            image: "probelab/subject:dev".into(),
            command: vec![],
            args: vec![],
            env: vec![],
            probes: vec![],
            resources: crate::resources::Resources::DEFAULT,
        };
        let owner = Owner::App {
            app: "a".into(),
            revision: "a--1".into(),
        };
        let rep = Replica::new("a--1-x".into(), owner.clone(), std::slice::from_ref(&spec));
        let launch = LaunchSpec {
            owner,
            replica: rep.name.clone(),
            container: "subject".into(),
            image: spec.image.clone(),
            command: vec![],
            args: vec![],
            env: vec![],
            labels: Default::default(),
            primary: true,
            peers: vec![],
            resources: crate::resources::Resources::DEFAULT,
        };
        let t0 = tokio::time::Instant::now();
        let task = tokio::spawn(supervise(
            ctx,
            rep.clone(),
            0,
            spec,
            Duration::from_secs(1),
            Some(8080),
            launch,
        ));
        let mut attempts = Vec::new();
        while attempts.len() < 6 {
            match rx.recv().await {
                Some(Row::System { reason, .. }) if reason == "ContainerCreateFailure" => {
                    attempts.push(t0.elapsed().as_secs());
                }
                Some(_) => {}
                None => break,
            }
        }
        assert_eq!(attempts, vec![0, 0, 10, 30, 70, 150]);
        assert_eq!(rep.restart_count(), 5);
        rep.cancel.cancel();
        task.await.unwrap();
        assert!(rep.is_done());
    }

    #[test]
    fn backoff_sequence() {
        let mut b = Duration::ZERO;
        let mut seen = vec![];
        for _ in 0..8 {
            b = next_backoff(b);
            seen.push(b.as_secs());
        }
        assert_eq!(seen, vec![10, 20, 40, 80, 160, 300, 300, 300]);
    }
}
