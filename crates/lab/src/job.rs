//! A lab's `[[jobs]]`: Container Apps Jobs that are themselves under test (not the runner's
//! loadgen and sampler jobs), in the shape of a `Microsoft.App/jobs` template.
//!
//! Each job has one trigger, as a Container Apps Job has one `triggerType`: `manual` (started by
//! the `job-start` action), `schedule` (a cron expression) or `event` (KEDA's `metrics-api`
//! scaler reading the length of a `subject` app's queue, `GET http://<queue_app>/queue`, the
//! event source that runs here with nothing pulled). [`crate::arm_body::job`] renders each as the
//! spec's `Job_CreateOrUpdate` examples render it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A job under test.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Job {
    /// The job's resource name (distinct from every app's).
    pub name: String,
    /// `probelab/<name>:<tag>`, as an app's.
    pub image: String,
    /// The container's env. Container Apps sets `CONTAINER_APP_JOB_NAME` and
    /// `CONTAINER_APP_JOB_EXECUTION_NAME`; a `subject` worker reports them as its app and
    /// revision.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// `configuration.replicaTimeout`: seconds a replica may run (Container Apps' minimum is 1).
    pub replica_timeout_seconds: u64,
    /// `configuration.replicaRetryLimit`: failed replicas retried (default 0).
    #[serde(default)]
    pub replica_retry_limit: u32,
    /// Replicas per execution (`parallelism` and `replicaCompletionCount`, default 1).
    #[serde(default)]
    pub parallelism: Option<u32>,
    /// What localplane's `replicaTimeout` bounds (tag `localplane.replicaTimeout`): each
    /// replica, as the spec and Learn word it (default), or the whole execution, retries
    /// included, as the `DeadlineExceeded` rows users report read. Ignored by Azure.
    #[serde(default)]
    pub replica_timeout_scope: Option<TimeoutScope>,
    /// Started by hand (`job-start`): `triggerType: Manual`.
    #[serde(default)]
    pub manual: Option<ManualTrigger>,
    /// Started by a cron schedule: `triggerType: Schedule`.
    #[serde(default)]
    pub schedule: Option<ScheduleTrigger>,
    /// Started by a queue's length: `triggerType: Event`.
    #[serde(default)]
    pub event: Option<EventTrigger>,
}

/// localplane's two readings of `replicaTimeout` (see FIDELITY, row "`replicaTimeout`").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TimeoutScope {
    /// Each replica may run `replicaTimeout` from its own start (the documents).
    Replica,
    /// The execution may run `replicaTimeout`, retries included (the reported rows).
    Execution,
}

impl TimeoutScope {
    /// The value of the `localplane.replicaTimeout` tag.
    pub fn as_str(self) -> &'static str {
        match self {
            TimeoutScope::Replica => "replica",
            TimeoutScope::Execution => "execution",
        }
    }
}

/// `manualTriggerConfig`: executions start only when asked (`manual = {}`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManualTrigger {}

/// `scheduleTriggerConfig`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleTrigger {
    /// `cronExpression`: five fields, UTC (`*/1 * * * *` every minute, the shortest period).
    pub cron: String,
}

/// A job's one trigger.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Trigger<'a> {
    Manual,
    Schedule(&'a ScheduleTrigger),
    Event(&'a EventTrigger),
}

/// `eventTriggerConfig` with one `metrics-api` rule reading a `subject` app's queue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventTrigger {
    /// The `subject` app (with ingress) whose `/queue` the rule reads.
    pub queue_app: String,
    /// `scale.pollingInterval`, seconds (Container Apps' default 30).
    pub polling_seconds: u32,
    /// `scale.minExecutions` (default 0).
    #[serde(default)]
    pub min_executions: u32,
    /// `scale.maxExecutions`: the most executions at once.
    pub max_executions: u32,
    /// The rule's `targetValue`: queue items per execution (default 1).
    #[serde(default)]
    pub items_per_execution: Option<u32>,
}

impl Job {
    /// Replicas per execution.
    pub fn replicas_per_execution(&self) -> u32 {
        self.parallelism.unwrap_or(1)
    }

    /// The job's trigger, or `None` unless exactly one of `manual`, `schedule` and `event` is
    /// given (`lab::load` rejects such a job).
    pub fn trigger(&self) -> Option<Trigger<'_>> {
        match (&self.manual, &self.schedule, &self.event) {
            (Some(_), None, None) => Some(Trigger::Manual),
            (None, Some(s), None) => Some(Trigger::Schedule(s)),
            (None, None, Some(e)) => Some(Trigger::Event(e)),
            _ => None,
        }
    }

    /// The event trigger, when the job has one (and only that trigger).
    pub fn event_trigger(&self) -> Option<&EventTrigger> {
        match self.trigger() {
            Some(Trigger::Event(e)) => Some(e),
            _ => None,
        }
    }

    /// The `localplane.*` tags the job selects.
    pub fn localplane_tags(&self) -> Vec<(String, String)> {
        self.replica_timeout_scope
            .map(|s| {
                (
                    "localplane.replicaTimeout".to_owned(),
                    s.as_str().to_owned(),
                )
            })
            .into_iter()
            .collect()
    }
}
