//! Job executions: what starts them by itself (the cron scheduler of a Schedule trigger, the
//! poller of an Event trigger, [`crate::event`]) and the runner of one execution (`parallelism`
//! replicas at once until `replicaCompletionCount` succeeded, `replicaTimeout` per replica or
//! per execution, `replicaRetryLimit`, the fixed 30 s termination grace). The ARM endpoints
//! that create jobs and start or stop executions are [`crate::jobs`]; what a job is and how it
//! is stored, [`crate::job`].

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use logline::Timestamp;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::cron::Cron;
use crate::error::ArmError;
use crate::event::{EventScale, Reading};
use crate::job::{
    ExecState, ExecStatus, Execution, JobConfig, TERMINATION_GRACE, TimeoutScope, Trigger,
    job_not_found,
};
use crate::logsink::{Level, Owner};
use crate::model::{TemplateSpec, parse_template};
use crate::plane::{Plane, key, random_suffix};
use crate::replica::stop_with_grace;
use crate::runtime::{LABEL_MANAGED, LaunchSpec, Launched};

/// Starts what starts a job's executions by itself: the cron scheduler of a Schedule trigger,
/// the poller of an Event trigger (none for Manual); both end when `stop` fires.
pub(crate) fn spawn_trigger(
    plane: &Arc<Plane>,
    job: String,
    trigger: &Trigger,
    stop: CancellationToken,
) {
    match trigger {
        Trigger::Manual => {}
        Trigger::Schedule(cron) => spawn_scheduler(plane, job, cron.clone(), stop),
        Trigger::Event(scale) => spawn_event_poller(plane, job, scale.clone(), stop),
    }
}

/// The poller of an event-driven job, as KEDA's ScaledJob loop: at once, then every
/// `pollingInterval`, it reads each rule's metric (an app's name as the url's host is read at
/// the app's ingress, [`crate::event::resolve_url`]; a failed read writes a `KEDAScalerFailed`
/// row on the job and counts as an inactive rule), counts the job's executions not finished,
/// and starts [`crate::event::executions_to_start`] executions of the job's current template.
fn spawn_event_poller(plane: &Arc<Plane>, job: String, scale: EventScale, stop: CancellationToken) {
    let plane = plane.clone();
    let shutdown = plane.ctx.shutdown.clone();
    let owner = Owner::Job {
        job: job.clone(),
        execution: String::new(),
    };
    plane.ctx.tracker.clone().spawn(async move {
        let mut next = tokio::time::Instant::now();
        loop {
            tokio::select! {
                () = tokio::time::sleep_until(next) => {}
                () = stop.cancelled() => return,
                () = shutdown.cancelled() => return,
            }
            next = (next + scale.polling_interval).max(tokio::time::Instant::now());
            let urls: Vec<String> = {
                let st = plane.lock();
                let fqdn = |name: &str| st.apps.get(&key(name)).and_then(|a| a.fqdn());
                scale
                    .rules
                    .iter()
                    .map(|r| crate::event::resolve_url(&r.url, fqdn))
                    .collect()
            };
            let mut readings = Vec::new();
            for (rule, url) in scale.rules.iter().zip(&urls) {
                match crate::event::read_metric(rule, url).await {
                    Ok(v) => readings.push(Reading::of(rule, v)),
                    Err(e) => plane.ctx.sink.system(
                        &owner,
                        "",
                        "KEDAScalerFailed",
                        Level::Warning,
                        format!("scale rule '{}': {e}", rule.name),
                    ),
                }
            }
            if stop.is_cancelled() {
                return;
            }
            let (running, template) = {
                let st = plane.lock();
                let Some(j) = st.jobs.get(&key(&job)) else {
                    return;
                };
                let running = j
                    .executions
                    .iter()
                    .filter(|e| e.state.lock().map(|x| x.end.is_none()).unwrap_or(false))
                    .count();
                (
                    u32::try_from(running).unwrap_or(u32::MAX),
                    j.properties.get("template").cloned().unwrap_or(json!({})),
                )
            };
            let n = crate::event::executions_to_start(&scale, running, &readings);
            for _ in 0..n {
                if let Err(e) = start_execution(&plane, &job, template.clone()) {
                    tracing::warn!(job = %job, error = %e.message, "event-driven execution failed to start");
                    break;
                }
            }
        }
    });
}

fn spawn_scheduler(plane: &Arc<Plane>, job: String, cron: Cron, stop: CancellationToken) {
    let plane = plane.clone();
    let shutdown = plane.ctx.shutdown.clone();
    plane.ctx.tracker.clone().spawn(async move {
        loop {
            let now = chrono::Utc::now();
            let Some(next) = cron.next_after(now) else { return };
            let wait = (next - now).to_std().unwrap_or(Duration::ZERO);
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = stop.cancelled() => return,
                _ = shutdown.cancelled() => return,
            }
            let template = {
                let st = plane.lock();
                match st.jobs.get(&key(&job)) {
                    Some(j) => j.properties.get("template").cloned().unwrap_or(json!({})),
                    None => return,
                }
            };
            if let Err(e) = start_execution(&plane, &job, template) {
                tracing::warn!(job = %job, error = %e.message, "scheduled execution failed to start");
            }
        }
    });
}

/// Registers an execution and starts its runner; returns the execution name.
pub fn start_execution(
    plane: &Arc<Plane>,
    job_name: &str,
    template: Value,
) -> Result<String, ArmError> {
    let mut st = plane.lock();
    let job = st
        .jobs
        .get_mut(&key(job_name))
        .ok_or_else(|| job_not_found(job_name, ""))?;
    let spec = parse_template(&template, job.properties.get("configuration"))?;
    let exec_name = format!("{}-{}", job.name, random_suffix(7));
    let state = Arc::new(Mutex::new(ExecState {
        status: ExecStatus::Running,
        end: None,
    }));
    let cancel = CancellationToken::new();
    job.executions.push(Execution {
        name: exec_name.clone(),
        start: Timestamp::now(),
        template,
        state: state.clone(),
        cancel: cancel.clone(),
    });
    // Keep the history bounded (Azure keeps the most recent executions).
    if job.executions.len() > 100 {
        job.executions.remove(0);
    }
    let cfg = job.config.clone();
    let name = job.name.clone();
    let env = crate::resources::environment_key(Some(&job.properties));
    drop(st);
    let plane2 = plane.clone();
    let exec2 = exec_name.clone();
    plane.ctx.tracker.spawn(async move {
        let status = run_execution(&plane2, (&name, &exec2), &env, &spec, &cfg, &cancel).await;
        if let Ok(mut s) = state.lock() {
            s.status = status;
            s.end = Some(Timestamp::now());
        }
    });
    Ok(exec_name)
}

/// How one replica of an execution ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReplicaEnd {
    Succeeded,
    Failed,
    /// The execution or localplane was stopped (or the execution gave up on its replicas).
    Stopped,
}

/// Runs execution `exec` of `job` as a Kubernetes Job runs its pods: up to `parallelism`
/// replicas at once, a new one while fewer than `replicaCompletionCount` have succeeded (so a
/// failed replica is replaced), until the failures pass `replicaRetryLimit` (Failed: the
/// replicas still running are stopped) or `replicaCompletionCount` replicas succeeded
/// (Succeeded); its final status. With the timeout per execution (tag
/// `localplane.replicaTimeout=execution`), `replicaTimeout` after the start the execution is
/// Failed with a `DeadlineExceeded` row, its replicas are stopped and none is started, retries
/// left or not (a Job's `activeDeadlineSeconds` "takes precedence over its backoffLimit").
/// Each replica holds a lease of the quotas in environment `env` ([`crate::quota`]): the first
/// replicas start all or none (then the execution fails, with the refusal's system row), and a
/// replacement that does not fit counts as failed.
async fn run_execution(
    plane: &Arc<Plane>,
    (job, exec): (&str, &str),
    env: &str,
    spec: &TemplateSpec,
    cfg: &JobConfig,
    cancel: &CancellationToken,
) -> ExecStatus {
    let ctx = &plane.ctx;
    let owner = Owner::Job {
        job: job.to_string(),
        execution: exec.to_string(),
    };
    let arm = ctx.runtime.arm_endpoint_for_containers(&ctx.base_url);
    let give_up = cancel.child_token();
    let want = cfg.completions.max(1);
    let width = cfg.parallelism.max(1);
    let execution_deadline = (cfg.timeout_scope == TimeoutScope::Execution)
        .then(|| tokio::time::Instant::now() + cfg.replica_timeout);
    let run = Replicas {
        plane,
        names: (job, exec),
        spec,
        cfg,
        owner: &owner,
        arm: &arm,
        cancel: &give_up,
        env,
    };
    let leases = match run.leases(width.min(want)) {
        Some(l) => l,
        None => return ExecStatus::Failed,
    };
    // The first replicas all start before any is waited for (one whose start fails must not
    // keep the others from starting); a replacement starts and runs on its own.
    let first = futures::future::join_all(leases.into_iter().map(|l| run.launch(l))).await;
    let mut running: FuturesUnordered<Pin<Box<dyn Future<Output = ReplicaEnd> + Send + '_>>> =
        first
            .into_iter()
            .map(|l| Box::pin(run.finish(l)) as Pin<Box<dyn Future<Output = _> + Send>>)
            .collect();
    let (mut succeeded, mut failed) = (0u32, 0u32);
    let mut outcome = None;
    loop {
        let end = tokio::select! {
            end = running.next() => match end {
                Some(end) => end,
                None => break,
            },
            () = until(execution_deadline), if outcome.is_none() => {
                ctx.sink.system(
                    &owner,
                    "",
                    "DeadlineExceeded",
                    Level::Warning,
                    "Job was active longer than specified deadline".to_string(),
                );
                outcome = Some(ExecStatus::Failed);
                give_up.cancel();
                continue;
            }
        };
        match end {
            ReplicaEnd::Succeeded => succeeded += 1,
            ReplicaEnd::Failed => failed += 1,
            ReplicaEnd::Stopped => {
                outcome.get_or_insert(ExecStatus::Stopped);
            }
        }
        if outcome.is_some() {
            continue;
        }
        if failed > cfg.retry_limit {
            outcome = Some(ExecStatus::Failed);
            give_up.cancel();
            continue;
        }
        let needed = want.saturating_sub(succeeded).min(width);
        while u32::try_from(running.len()).unwrap_or(u32::MAX) < needed {
            running.push(Box::pin(async {
                let Some(lease) = run.leases(1).and_then(|mut l| l.pop()) else {
                    return ReplicaEnd::Failed;
                };
                let l = run.launch(lease).await;
                run.finish(l).await
            }));
        }
    }
    outcome.unwrap_or(if succeeded >= want {
        ExecStatus::Succeeded
    } else {
        ExecStatus::Failed
    })
}

/// Sleeps until `deadline`, forever without one.
async fn until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// What every replica of one execution shares.
struct Replicas<'a> {
    plane: &'a Arc<Plane>,
    /// The job's and the execution's names.
    names: (&'a str, &'a str),
    spec: &'a TemplateSpec,
    cfg: &'a JobConfig,
    owner: &'a Owner,
    arm: &'a str,
    cancel: &'a CancellationToken,
    /// The job's environment (its key), whose cores quota the replicas count against.
    env: &'a str,
}

/// One replica's containers as launched: those running, whether one failed to start, and the
/// instant its own `replicaTimeout` ends (none when the timeout bounds the execution), and its
/// lease of the quotas.
struct Launch {
    running: Vec<(LaunchSpec, Launched)>,
    failed_launch: bool,
    deadline: Option<tokio::time::Instant>,
    lease: crate::quota::Lease,
}

impl Replicas<'_> {
    /// Leases for `n` replicas, or `None` after writing the refusal's system row.
    fn leases(&self, n: u32) -> Option<Vec<crate::quota::Lease>> {
        let cores = u64::from(self.spec.resources().cpu);
        match self.plane.quota.take(self.env, cores, n) {
            Ok(l) => Some(l),
            Err(e) => {
                self.plane.ctx.sink.system(
                    self.owner,
                    "",
                    crate::quota::REASON,
                    Level::Warning,
                    e.to_string(),
                );
                None
            }
        }
    }

    /// Starts a new replica's containers (none once the execution is stopped or given up).
    async fn launch(&self, lease: crate::quota::Lease) -> Option<Launch> {
        if self.cancel.is_cancelled() {
            return None;
        }
        let (job, exec) = self.names;
        let replica = format!("{exec}-{}", random_suffix(5));
        let deadline = (self.cfg.timeout_scope == TimeoutScope::Replica)
            .then(|| tokio::time::Instant::now() + self.cfg.replica_timeout);
        let mut running = Vec::new();
        let mut failed_launch = false;
        for (idx, c) in self.spec.containers.iter().enumerate() {
            let launch = LaunchSpec {
                owner: self.owner.clone(),
                replica: replica.clone(),
                container: c.name.clone(),
                image: c.image.clone(),
                command: c.command.clone(),
                args: c.args.clone(),
                env: execution_env(&c.env, self.arm, job, exec, &replica),
                labels: execution_labels(job, exec, &replica),
                primary: idx == 0,
                peers: self.plane.peers(),
                resources: c.resources,
            };
            match launch_container(self.plane, &launch).await {
                Some(l) => running.push((launch, l)),
                None => failed_launch = true,
            }
        }
        Some(Launch {
            running,
            failed_launch,
            deadline,
            lease,
        })
    }

    /// Waits for a launched replica's containers (until its own `replicaTimeout`, if it has
    /// one) and removes them.
    async fn finish(&self, launch: Option<Launch>) -> ReplicaEnd {
        let Some(l) = launch else {
            return ReplicaEnd::Stopped;
        };
        // Given back once the replica's containers are gone.
        let _lease = l.lease;
        match wait_containers(self.plane, l.running, l.deadline, self.cancel).await {
            ReplicaWait::Stopped => ReplicaEnd::Stopped,
            ReplicaWait::Exited { all_zero: true } if !l.failed_launch => ReplicaEnd::Succeeded,
            ReplicaWait::Exited { .. } | ReplicaWait::TimedOut => ReplicaEnd::Failed,
        }
    }
}

/// A job container's env: its own, `ARM_ENDPOINT` and `ARM_TOKEN_SOURCE` unless it sets them,
/// and the platform's job, execution and replica names (always the platform's).
fn execution_env(
    own: &[(String, String)],
    arm: &str,
    job: &str,
    exec: &str,
    replica: &str,
) -> Vec<(String, String)> {
    let mut env = own.to_vec();
    let mut set_default = |k: &str, v: &str| {
        if !env.iter().any(|(n, _)| n == k) {
            env.push((k.to_string(), v.to_string()));
        }
    };
    set_default("ARM_ENDPOINT", arm);
    set_default("ARM_TOKEN_SOURCE", "none");
    env.retain(|(n, _)| {
        !matches!(
            n.as_str(),
            "CONTAINER_APP_JOB_NAME"
                | "CONTAINER_APP_JOB_EXECUTION_NAME"
                | "CONTAINER_APP_REPLICA_NAME"
        )
    });
    env.push(("CONTAINER_APP_JOB_NAME".into(), job.to_string()));
    env.push(("CONTAINER_APP_JOB_EXECUTION_NAME".into(), exec.to_string()));
    env.push(("CONTAINER_APP_REPLICA_NAME".into(), replica.to_string()));
    env
}

/// The labels of a job replica's containers (managed, job, execution, replica).
fn execution_labels(job: &str, exec: &str, replica: &str) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    labels.insert(LABEL_MANAGED.to_string(), "true".to_string());
    labels.insert("probelab.job".into(), job.to_string());
    labels.insert("probelab.execution".into(), exec.to_string());
    labels.insert("probelab.replica".into(), replica.to_string());
    labels
}

/// Starts one container of a job replica, writing the system rows Container Apps writes
/// (pull, create, start, or the create failure); `None` when it did not start.
async fn launch_container(plane: &Plane, launch: &LaunchSpec) -> Option<Launched> {
    let ctx = &plane.ctx;
    let sys = |reason: &str, level: Level, msg: String| {
        ctx.sink
            .system(&launch.owner, &launch.replica, reason, level, msg)
    };
    let (name, image) = (&launch.container, &launch.image);
    sys(
        "PullingImage",
        Level::Normal,
        format!("Pulling image '{image}'"),
    );
    sys(
        "PulledImage",
        Level::Normal,
        format!("Successfully pulled image '{image}' in 0.0s"),
    );
    match ctx.runtime.launch(launch, &ctx.sink).await {
        Ok(l) => {
            sys(
                "ContainerCreated",
                Level::Normal,
                format!("Created container '{name}'"),
            );
            sys(
                "ContainerStarted",
                Level::Normal,
                format!("Started container '{name}'"),
            );
            Some(l)
        }
        Err(e) => {
            sys(
                "ContainerCreateFailure",
                Level::Warning,
                format!("Failed to create container '{name}': {e}"),
            );
            None
        }
    }
}

/// How the containers of one job replica ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReplicaWait {
    /// Every container exited by itself; `all_zero` when each with code 0.
    Exited { all_zero: bool },
    /// The replica's own `replicaTimeout` passed first (it was stopped).
    TimedOut,
    /// The execution was stopped, given up or timed out as a whole, or localplane stopped.
    Stopped,
}

/// Waits for every running container of a job replica to exit, until `deadline` (its
/// `replicaTimeout`, Kubernetes' per-pod `activeDeadlineSeconds`: a `DeadlineExceeded` row in
/// the kubelet's words) or a stop of the execution or of localplane; stops the containers still
/// running (all at once, SIGTERM, then SIGKILL after [`TERMINATION_GRACE`], whatever the
/// template's `terminationGracePeriodSeconds`), removes each, and writes its
/// `ContainerTerminated` row.
async fn wait_containers(
    plane: &Plane,
    running: Vec<(LaunchSpec, Launched)>,
    deadline: Option<tokio::time::Instant>,
    cancel: &CancellationToken,
) -> ReplicaWait {
    let ctx = &plane.ctx;
    let all_exited = futures::future::join_all(running.iter().map(|(_, l)| {
        let mut exit = l.exit.clone();
        async move { exited(&mut exit).await }
    }));
    let end = tokio::select! {
        codes = all_exited => ReplicaWait::Exited { all_zero: codes.iter().all(|c| *c == 0) },
        () = until(deadline) => ReplicaWait::TimedOut,
        () = cancel.cancelled() => ReplicaWait::Stopped,
        () = ctx.shutdown.cancelled() => ReplicaWait::Stopped,
    };
    if end == ReplicaWait::TimedOut
        && let Some((launch, _)) = running.first()
    {
        ctx.sink.system(
            &launch.owner,
            &launch.replica,
            "DeadlineExceeded",
            Level::Normal,
            "Pod was active on the node longer than the specified deadline".to_string(),
        );
    }
    futures::future::join_all(running.into_iter().map(|(launch, l)| async move {
        let mut exit = l.exit.clone();
        let code = stop_with_grace(
            &ctx.runtime,
            &l.id,
            &mut exit,
            TERMINATION_GRACE,
            &ctx.hurry,
        )
        .await;
        ctx.runtime.remove(&l.id).await;
        ctx.sink.system(
            &launch.owner,
            &launch.replica,
            "ContainerTerminated",
            if code == 0 {
                Level::Normal
            } else {
                Level::Warning
            },
            format!(
                "Container '{}' was terminated with exit code '{code}'",
                launch.container
            ),
        );
    }))
    .await;
    end
}

/// A container's exit code once it has exited (-1 if its runtime lost it without one).
async fn exited(exit: &mut tokio::sync::watch::Receiver<Option<i64>>) -> i64 {
    let code = exit.wait_for(Option::is_some).await.map(|c| *c);
    match code {
        Ok(code) => code.unwrap_or(-1),
        Err(_) => exit.borrow().unwrap_or(-1),
    }
}
