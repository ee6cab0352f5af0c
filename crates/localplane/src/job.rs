//! A Container Apps job as the plane keeps it: its trigger and configuration (read from the
//! resource's `properties.configuration` by [`parse_config`], the replica counts from the
//! trigger's own config, an event trigger's scale by [`crate::event::parse_scale`], what
//! `replicaTimeout` bounds from the tag `localplane.replicaTimeout`),
//! its executions with their status, and the ARM JSON of both. Below `plane`, which stores jobs,
//! and `jobs`, which serves and runs them.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use appmodel as wire;
use logline::Timestamp;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::cron::Cron;
use crate::error::ArmError;
use crate::event::EventScale;

#[derive(Debug, Clone, PartialEq)]
pub enum Trigger {
    Manual,
    Schedule(Cron),
    /// `triggerType: Event`: executions started by the poller of [`crate::event`].
    Event(EventScale),
}

/// The termination grace of a job replica: SIGTERM, then SIGKILL 30 s later, whatever the
/// template says. The job template has no `terminationGracePeriodSeconds` (the spec's
/// `JobTemplate` is `initContainers`, `containers`, `volumes`), and a maintainer calls it "the
/// 30-second hard timeout on job termination" (microsoft/azure-container-apps#1669), which the
/// issue's author sees both "where the Replica Timeout is exceeded or the app job is manually
/// suspended". docs/FIDELITY.md, "ARM API", rows "replicaTimeout" and "job termination grace".
pub const TERMINATION_GRACE: Duration = Duration::from_secs(30);

/// What `replicaTimeout` bounds: each replica from its own start (default: the spec's "Maximum
/// number of seconds a replica is allowed to run", Learn's "The maximum time in seconds to wait
/// for a replica to complete"), or the whole execution from its start, retries included, as a
/// Kubernetes Job's `activeDeadlineSeconds` does (tag `localplane.replicaTimeout=execution`: the
/// `DeadlineExceeded` / "Job was active longer than specified deadline" row users post,
/// microsoft/azure-container-apps#986).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimeoutScope {
    #[default]
    Replica,
    Execution,
}

/// `replica` (default) or `execution`: see [`TimeoutScope`].
pub const TAG_REPLICA_TIMEOUT: &str = "localplane.replicaTimeout";

impl TimeoutScope {
    /// Reads the tag [`TAG_REPLICA_TIMEOUT`] from a job's `tags`.
    pub fn from_tags(tags: Option<&Value>) -> Result<TimeoutScope, ArmError> {
        crate::tags::choice(
            |k| tags.and_then(|t| t.get(k)).and_then(Value::as_str),
            TAG_REPLICA_TIMEOUT,
            &[
                ("replica", TimeoutScope::Replica),
                ("execution", TimeoutScope::Execution),
            ],
        )
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct JobConfig {
    pub trigger: Trigger,
    pub replica_timeout: Duration,
    /// Whether `replica_timeout` bounds each replica or the whole execution.
    pub timeout_scope: TimeoutScope,
    pub retry_limit: u32,
    /// Replicas an execution runs at once (the trigger config's `parallelism`, default 1).
    pub parallelism: u32,
    /// Replicas that must succeed for the execution to succeed (`replicaCompletionCount`,
    /// default 1).
    pub completions: u32,
}

pub struct Job {
    pub sub: String,
    pub rg: String,
    pub name: String,
    pub location: String,
    pub tags: Value,
    pub properties: Value,
    pub config: JobConfig,
    pub executions: Vec<Execution>,
    pub scheduler_stop: CancellationToken,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecStatus {
    Running,
    Processing,
    Stopped,
    Failed,
    Succeeded,
}

impl ExecStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ExecStatus::Running => "Running",
            ExecStatus::Processing => "Processing",
            ExecStatus::Stopped => "Stopped",
            ExecStatus::Failed => "Failed",
            ExecStatus::Succeeded => "Succeeded",
        }
    }
}

#[derive(Debug)]
pub struct ExecState {
    pub status: ExecStatus,
    pub end: Option<Timestamp>,
}

pub struct Execution {
    pub name: String,
    pub start: Timestamp,
    pub template: Value,
    pub state: Arc<Mutex<ExecState>>,
    pub cancel: CancellationToken,
}

impl Job {
    pub fn id(&self) -> String {
        format!(
            "/subscriptions/{}/resourceGroups/{}/providers/Microsoft.App/jobs/{}",
            self.sub, self.rg, self.name
        )
    }

    /// The job as its GET answers it: the properties the client sent (unknown ones kept), with
    /// its states. The PUT or PATCH that set them was refused unless they read as this type
    /// (`jobs::job_properties`), so they read back.
    pub fn job_view(&self) -> wire::Job {
        let mut props: wire::JobProperties =
            serde_json::from_value(self.properties.clone()).unwrap_or_default();
        props.provisioning_state = Some(wire::ProvisioningState::Succeeded);
        props.running_state = Some("Ready".into());
        props.outbound_ip_addresses = Some(vec!["127.0.0.1".into()]);
        props.event_stream_endpoint = Some(format!("{}/eventstream", self.id()));
        wire::Job {
            id: Some(self.id()),
            name: Some(self.name.clone()),
            kind: Some("Microsoft.App/jobs".into()),
            location: Some(self.location.clone()),
            tags: serde_json::from_value(self.tags.clone()).ok(),
            identity: None,
            properties: props,
            extra: wire::Extra::new(),
        }
    }

    /// Execution `e` as its GET answers it.
    pub fn execution_view(&self, e: &Execution) -> wire::JobExecution {
        let (status, end) = e
            .state
            .lock()
            .map(|s| (s.status, s.end))
            .unwrap_or((ExecStatus::Running, None));
        wire::JobExecution {
            name: e.name.clone(),
            id: Some(format!("{}/executions/{}", self.id(), e.name)),
            kind: Some("Microsoft.App/jobs/executions".into()),
            properties: wire::JobExecutionProperties {
                status: Some(status.as_str().into()),
                start_time: Some(e.start.to_rfc3339_s()),
                end_time: end.map(|t| t.to_rfc3339_s()),
                template: serde_json::from_value(e.template.clone()).ok(),
                extra: wire::Extra::new(),
            },
            extra: wire::Extra::new(),
        }
    }
}

/// The job's configuration from its `properties` and its `tags` (the localplane tags).
/// ARM's 404 for job `name` of resource group `rg`.
pub fn job_not_found(name: &str, rg: &str) -> ArmError {
    ArmError::not_found("Microsoft.App/jobs", name, rg)
}

pub fn parse_config(props: &Value, tags: Option<&Value>) -> Result<JobConfig, ArmError> {
    let timeout_scope = TimeoutScope::from_tags(tags)?;
    let cfg = props
        .get("configuration")
        .filter(|c| c.is_object())
        .ok_or_else(|| {
            ArmError::bad_request(
                "InvalidRequestContent",
                "'properties.configuration' is required",
            )
        })?;
    let replica_timeout = cfg
        .get("replicaTimeout")
        .and_then(Value::as_u64)
        .filter(|t| *t > 0)
        .ok_or_else(|| {
            ArmError::bad_request(
                "InvalidRequestContent",
                "'configuration.replicaTimeout' must be a positive integer (seconds)",
            )
        })?;
    let retry_limit = cfg
        .get("replicaRetryLimit")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let trigger = match cfg.get("triggerType").and_then(Value::as_str) {
        Some(t) if t.eq_ignore_ascii_case("Manual") => Trigger::Manual,
        Some(t) if t.eq_ignore_ascii_case("Schedule") => {
            let expr = cfg
                .get("scheduleTriggerConfig")
                .and_then(|s| s.get("cronExpression"))
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    ArmError::bad_request(
                        "InvalidRequestContent",
                        "'scheduleTriggerConfig.cronExpression' is required for triggerType Schedule",
                    )
                })?;
            Trigger::Schedule(Cron::parse(expr).map_err(|e| {
                ArmError::bad_request(
                    "JobInvalidCronExpression",
                    format!("cronExpression '{expr}': {e}"),
                )
            })?)
        }
        Some(t) if t.eq_ignore_ascii_case("Event") => {
            let scale = cfg.get("eventTriggerConfig").and_then(|e| e.get("scale"));
            Trigger::Event(crate::event::parse_scale(scale, tags)?)
        }
        other => {
            return Err(ArmError::bad_request(
                "InvalidRequestContent",
                format!(
                    "'configuration.triggerType' must be Manual, Schedule or Event, got {other:?}"
                ),
            ));
        }
    };
    let counts = match trigger {
        Trigger::Manual => "manualTriggerConfig",
        Trigger::Schedule(_) => "scheduleTriggerConfig",
        Trigger::Event(_) => "eventTriggerConfig",
    };
    let count = |k: &str| replica_count(cfg.get(counts), counts, k);
    Ok(JobConfig {
        trigger,
        replica_timeout: Duration::from_secs(replica_timeout),
        timeout_scope,
        retry_limit: u32::try_from(retry_limit).unwrap_or(u32::MAX),
        parallelism: count("parallelism")?,
        completions: count("replicaCompletionCount")?,
    })
}

/// `<section>.<k>` of a job's trigger configuration: a positive integer, 1 when absent.
fn replica_count(section: Option<&Value>, name: &str, k: &str) -> Result<u32, ArmError> {
    match section.and_then(|s| s.get(k)) {
        None | Some(Value::Null) => Ok(1),
        Some(v) => v
            .as_u64()
            .filter(|n| *n >= 1)
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| {
                ArmError::bad_request(
                    "InvalidRequestContent",
                    format!("'configuration.{name}.{k}' must be a positive integer, got {v}"),
                )
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The configuration of a job without tags.
    fn parse_config(props: &Value) -> Result<JobConfig, ArmError> {
        super::parse_config(props, None)
    }

    #[test]
    fn the_timeout_bounds_each_replica_unless_the_tag_says_execution() {
        let props = json!({"configuration":{"triggerType":"Manual","replicaTimeout":60}});
        let scope = |tags: Value| super::parse_config(&props, Some(&tags)).map(|c| c.timeout_scope);
        assert_eq!(
            parse_config(&props).unwrap().timeout_scope,
            TimeoutScope::Replica
        );
        assert_eq!(scope(json!({})).unwrap(), TimeoutScope::Replica);
        assert_eq!(
            scope(json!({"localplane.replicaTimeout": "replica"})).unwrap(),
            TimeoutScope::Replica
        );
        assert_eq!(
            scope(json!({"localplane.replicaTimeout": "execution"})).unwrap(),
            TimeoutScope::Execution
        );
        let e = scope(json!({"localplane.replicaTimeout": "job"})).unwrap_err();
        assert_eq!(e.code, "InvalidRequestContent");
        assert!(
            e.message.contains("must be replica or execution"),
            "{}",
            e.message
        );
    }

    #[test]
    fn config_validation() {
        assert!(
            parse_config(&json!({"configuration":{"triggerType":"Manual","replicaTimeout":60}}))
                .is_ok()
        );
        assert!(parse_config(&json!({"configuration":{"triggerType":"Schedule","replicaTimeout":60,"scheduleTriggerConfig":{"cronExpression":"*/5 * * * *"}}})).is_ok());
        assert!(
            parse_config(&json!({"configuration":{"triggerType":"Schedule","replicaTimeout":60}}))
                .is_err()
        );
        assert!(parse_config(&json!({"configuration":{"triggerType":"Manual"}})).is_err());
    }

    #[test]
    fn replica_counts_default_to_one_and_must_be_positive() {
        let manual = |m: Value| {
            parse_config(
                &json!({"configuration":{"triggerType":"Manual","replicaTimeout":60,
                "manualTriggerConfig": m}}),
            )
        };
        let c = manual(json!({})).unwrap();
        assert_eq!((c.parallelism, c.completions), (1, 1));
        let c = manual(json!({"parallelism": 3, "replicaCompletionCount": 2})).unwrap();
        assert_eq!((c.parallelism, c.completions), (3, 2));
        for bad in [json!(0), json!(-1), json!("3"), json!(1.5)] {
            let e = manual(json!({ "parallelism": bad })).unwrap_err();
            assert!(
                e.message
                    .contains("'configuration.manualTriggerConfig.parallelism' must be"),
                "{}",
                e.message
            );
        }
        let c = parse_config(
            &json!({"configuration":{"triggerType":"Schedule","replicaTimeout":60,
            "scheduleTriggerConfig":{"cronExpression":"*/5 * * * *","parallelism":2}}}),
        )
        .unwrap();
        assert_eq!((c.parallelism, c.completions), (2, 1));
    }

    #[test]
    fn an_event_trigger_reads_its_scale_and_its_replica_counts() {
        let props = json!({"configuration":{"triggerType":"Event","replicaTimeout":10,
            "replicaRetryLimit":10,"eventTriggerConfig":{"replicaCompletionCount":1,
            "parallelism":4,"scale":{"pollingInterval":40,"minExecutions":1,"maxExecutions":5,
            "rules":[{"name":"queue","type":"metrics-api","metadata":{
                "url":"http://127.0.0.1:9/queue","valueLocation":"length","targetValue":"1"}}]}}}});
        let c = parse_config(&props).unwrap();
        assert_eq!((c.parallelism, c.completions), (4, 1));
        let Trigger::Event(scale) = c.trigger else {
            panic!("an event trigger: {:?}", c.trigger)
        };
        assert_eq!(scale.polling_interval, Duration::from_secs(40));
        assert_eq!((scale.min_executions, scale.max_executions), (1, 5));
        let e = parse_config(
            &json!({"configuration":{"triggerType":"Event","replicaTimeout":10,
            "eventTriggerConfig":{}}}),
        )
        .unwrap_err();
        assert!(e.message.contains("scale"), "{}", e.message);
    }
}
