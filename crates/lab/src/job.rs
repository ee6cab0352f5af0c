//! A lab's `[[jobs]]`: Container Apps Jobs that are themselves under test (not the runner's
//! loadgen and sampler jobs), in the shape of a `Microsoft.App/jobs` template.
//!
//! Only the event trigger is offered for now: a job that KEDA's `metrics-api` scaler starts
//! from the length of a `subject` app's queue (`GET http://<queue_app>/queue`, `length`), the
//! event source that runs here with nothing pulled. [`crate::arm_body::job`] renders it as the
//! spec's `Job_CreateOrUpdate_EventTrigger` example renders an event-driven job.

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
    /// What starts executions.
    pub event: EventTrigger,
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
}
