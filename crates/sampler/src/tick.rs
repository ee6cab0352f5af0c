//! One tick: every app's revisions, every live revision's replicas, and every job's executions,
//! as sample lines.

use arm::models::{JobExecution, Replica, Revision};
use arm::{ArmClient, ArmError, Scope};
use futures::future::join_all;
use logline::Timestamp;
use logline::line::{
    ContainerSample, JobExecutionSample, Line, ReplicaInventorySample, RevisionStateSample,
    SamplerError,
};

/// What every line of a run carries.
#[derive(Clone, Debug, Default)]
pub struct LineContext {
    /// `perturbation-sampler` or `audit`.
    pub sampler: String,
    pub run_id: Option<String>,
    pub perturbation_id: Option<String>,
}

impl LineContext {
    /// A `SamplerError` line with only `operation` and `message` set; callers fill in the
    /// rest with struct update syntax.
    pub fn error(&self, ts: Timestamp, operation: &str, message: String) -> SamplerError {
        SamplerError {
            ts,
            run_id: self.run_id.clone(),
            perturbation_id: self.perturbation_id.clone(),
            sampler: Some(self.sampler.clone()),
            tick: None,
            app: None,
            operation: operation.to_owned(),
            status: None,
            code: None,
            message,
            late_ms: None,
        }
    }

    fn arm_error(
        &self,
        ts: Timestamp,
        tick: u64,
        app: &str,
        operation: &str,
        e: &ArmError,
    ) -> Line {
        // A token failure is not the listing's fault: report it as the `token` operation.
        let operation = if matches!(e, ArmError::Token(_)) {
            "token"
        } else {
            operation
        };
        SamplerError {
            tick: Some(tick),
            app: Some(app.to_owned()),
            status: e.status(),
            code: Some(e.code().to_owned()),
            ..self.error(ts, operation, e.message())
        }
        .into()
    }
}

/// The lines of one tick, and whether every call succeeded.
#[derive(Debug, Default)]
pub struct TickResult {
    pub lines: Vec<Line>,
    pub errors: usize,
}

/// Samples every app and every job once. All lines carry `ts` (the tick's start) and `tick`.
pub async fn sample_tick(
    client: &ArmClient,
    scope: &Scope,
    (apps, jobs): (&[String], &[String]),
    ctx: &LineContext,
    tick: u64,
    ts: Timestamp,
) -> TickResult {
    let (per_app, per_job) = futures::join!(
        join_all(
            apps.iter()
                .map(|app| sample_app(client, scope, app, ctx, tick, ts)),
        ),
        join_all(
            jobs.iter()
                .map(|job| sample_job(client, scope, job, ctx, tick, ts)),
        )
    );
    let mut out = TickResult::default();
    for r in per_app.into_iter().chain(per_job) {
        out.lines.extend(r.lines);
        out.errors += r.errors;
    }
    out
}

/// One job's executions (the list ARM keeps, newest first), one line each.
async fn sample_job(
    client: &ArmClient,
    scope: &Scope,
    job: &str,
    ctx: &LineContext,
    tick: u64,
    ts: Timestamp,
) -> TickResult {
    match client.list_executions(scope, job).await {
        Ok(execs) => TickResult {
            lines: execs
                .iter()
                .map(|e| Line::from(execution_line(ctx, job, e, tick, ts)))
                .collect(),
            errors: 0,
        },
        Err(e) => TickResult {
            lines: vec![ctx.arm_error(ts, tick, job, "list_executions", &e)],
            errors: 1,
        },
    }
}

/// An execution as a `JobExecutionSample`.
pub fn execution_line(
    ctx: &LineContext,
    job: &str,
    e: &JobExecution,
    tick: u64,
    ts: Timestamp,
) -> JobExecutionSample {
    let p = &e.properties;
    JobExecutionSample {
        ts,
        run_id: ctx.run_id.clone(),
        perturbation_id: ctx.perturbation_id.clone(),
        sampler: Some(ctx.sampler.clone()),
        tick: Some(tick),
        job: job.to_owned(),
        execution: e.name.clone(),
        status: p
            .status
            .as_ref()
            .map(|s| s.as_str().to_owned())
            .unwrap_or_default(),
        start_time: p.start_time.clone(),
        end_time: p.end_time.clone(),
    }
}

async fn sample_app(
    client: &ArmClient,
    scope: &Scope,
    app: &str,
    ctx: &LineContext,
    tick: u64,
    ts: Timestamp,
) -> TickResult {
    let mut out = TickResult::default();
    let revisions = match client.list_revisions(scope, app).await {
        Ok(r) => r,
        Err(e) => {
            out.lines
                .push(ctx.arm_error(ts, tick, app, "list_revisions", &e));
            out.errors += 1;
            return out;
        }
    };
    for rev in &revisions {
        out.lines
            .push(revision_line(ctx, app, rev, tick, ts).into());
    }
    // Replicas of revisions that can have any: listing an inactive, empty revision is a
    // wasted call (and an error on Azure).
    let live: Vec<&Revision> = revisions
        .iter()
        .filter(|r| r.properties.active || r.properties.replicas > 0)
        .collect();
    let replicas = join_all(
        live.iter()
            .map(|rev| client.list_replicas(scope, app, &rev.name)),
    )
    .await;
    for (rev, result) in live.iter().zip(replicas) {
        match result {
            Ok(reps) => out.lines.extend(
                reps.iter()
                    .map(|rep| Line::from(replica_line(ctx, app, &rev.name, rep, tick, ts))),
            ),
            Err(e) => {
                out.lines
                    .push(ctx.arm_error(ts, tick, app, "list_replicas", &e));
                out.errors += 1;
            }
        }
    }
    out
}

/// A revision as a `RevisionStateSample` (the original sampler's field names).
pub fn revision_line(
    ctx: &LineContext,
    app: &str,
    rev: &Revision,
    tick: u64,
    ts: Timestamp,
) -> RevisionStateSample {
    let p = &rev.properties;
    RevisionStateSample {
        ts,
        run_id: ctx.run_id.clone(),
        perturbation_id: ctx.perturbation_id.clone(),
        sampler: Some(ctx.sampler.clone()),
        tick: Some(tick),
        app: app.to_owned(),
        revision: rev.name.clone(),
        active: p.active,
        replicas: p.replicas,
        traffic_weight: p.traffic_weight,
        provisioning_state: p
            .provisioning_state
            .as_ref()
            .map(|s| s.as_str().to_owned())
            .unwrap_or_default(),
        health_state: p.health_state.as_ref().map(|s| s.as_str().to_owned()),
        running_state: p.running_state.as_ref().map(|s| s.as_str().to_owned()),
        created_time: p.created_time.clone(),
        last_active_time: p.last_active_time.clone(),
    }
}

/// A replica as a `ReplicaInventorySample`.
pub fn replica_line(
    ctx: &LineContext,
    app: &str,
    revision: &str,
    rep: &Replica,
    tick: u64,
    ts: Timestamp,
) -> ReplicaInventorySample {
    let p = &rep.properties;
    ReplicaInventorySample {
        ts,
        run_id: ctx.run_id.clone(),
        perturbation_id: ctx.perturbation_id.clone(),
        sampler: Some(ctx.sampler.clone()),
        tick: Some(tick),
        app: app.to_owned(),
        revision: revision.to_owned(),
        replica: rep.name.clone(),
        running_state: p
            .running_state
            .as_ref()
            .map(|s| s.as_str().to_owned())
            .unwrap_or_else(|| "Unknown".to_owned()),
        created_time: p.created_time.clone(),
        containers: p
            .containers
            .iter()
            .map(|c| ContainerSample {
                name: c.name.clone(),
                ready: c.ready,
                started: c.started,
                restart_count: c.restart_count,
                running_state: c.running_state.as_ref().map(|s| s.as_str().to_owned()),
            })
            .collect(),
    }
}
