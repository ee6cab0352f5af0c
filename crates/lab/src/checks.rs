//! An observation lab's `[[checks]]`: the one place their kinds and parameters are defined.
//!
//! [`lab::load`](crate::load) validates every entry against [`CheckKind::params`] (which keys a
//! kind needs, which it accepts, the range of each value, and that its `app`, `load`, `scenario`
//! and `step` exist in the lab), so a typo is a lab-file error before anything runs. The analysis
//! (`analysis::judge::checks`) reads the same [`Check`] type and evaluates each kind; its exhaustive
//! match on [`CheckKind`] makes a kind added here a compile error there until it is evaluated.
//!
//! An unknown `kind` still deserializes (as [`CheckKind::Unknown`]) so that the analysis of a
//! hand-written pack can name it in a `not_evaluated` gate; `lab::load` rejects it.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What a check observes. The names are the `kind` values of the lab file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum CheckKind {
    /// Responses of the load with HTTP `status` ≥ `min` (1). [Measured]
    StatusSeen,
    /// No error in the load's windows, which must hold at least one request. [Measured]
    NoErrors,
    /// Errors of the load ≥ `min` (1). [Measured]
    ErrorsAtLeast,
    /// The load's windows have errors and the last window with requests has none. [Measured]
    Recovers,
    /// `ContainerTerminated` events of `app` ≥ `min` (1). [Observed]
    RestartCountAtLeast,
    /// `ContainerTerminated` events of `app` ≤ `max` (0). [Observed]
    RestartCountAtMost,
    /// `ProbeFailed` events of `app` for probe type `probe` ≥ `min` (1). [Observed]
    ProbeFailed,
    /// Of `app`'s probe types, `probe` is the first to reach `min` (1) failures. [Observed]
    ProbeFailedFirst,
    /// A recorded action of the step for `app` failed. [Observed]
    ActionFailed,
    /// The slowest response of the load is between `min` and `max` milliseconds (e.g. a request
    /// held through a cold start: at least the startup delay, at most a bound). [Measured]
    SlowestBetween,
    /// System events of `app` with `reason` (and `contains` in the message) ≥ `min` (1), e.g. the
    /// scale decisions `KEDAScaleTargetActivated` or `SuccessfulRescale`. [Observed]
    SystemEventAtLeast,
    /// Samples of `app`'s revisions in scope (with `new_revision = true`, only of revisions
    /// created within it) with `running_state` (and `provisioning_state`, `health_state` when
    /// given), as the perturbation sampler read them from ARM, number at least `min` (1), e.g. a
    /// new revision that never became ready reported `Failed`.
    /// [Observed]
    RevisionStateSeen,
    /// Every window of the load in scope holding at least `min_requests` (100) requests has an
    /// error rate between `min_pct` and `max_pct` percent: a canary's share of the traffic times
    /// its failure rate, within a tolerance. [Measured]
    ErrorRateBetween,
    /// Every failed request of the load in scope was served by revision `<app>--<revision>`
    /// (its `req` line's `X-Revision`), and the `req` lines hold every error the windows count.
    /// [Measured]
    ErrorsServedBy,
    /// The share of the load's responses in scope served by revision `<app>--<revision>` is
    /// between `min_pct` and `max_pct` percent (a split's share; 100 after a switch). [Measured]
    ServedShareBetween,
    /// The virtual clients of the load (its `clients`) that moved to another replica in scope
    /// (a response from another replica than their previous one, read from loadgen's `client`
    /// lines) number at least `min` and at most `max` (either may be left out, not both).
    /// [Measured]
    ClientsMoved,
    /// Every item the `enqueue` actions in scope added to the queue of `job`'s event source was
    /// taken by exactly one replica of `job` and finished there (the workers' `QUEUE_ITEM_TAKEN`
    /// and `QUEUE_ITEM_DONE` lines): none taken twice, none lost. [Observed]
    QueueItemsOnce,
    /// The items the `enqueue` actions in scope added were all finished by `job`'s replicas at
    /// most `max` seconds after the first of those actions: the queue drained in time.
    /// [Observed]
    QueueDrainedWithin,
    /// Replicas of `job` alive at once in scope (each from its first line to its last, as the
    /// workers logged them) never number more than `max`: with one replica per execution, the
    /// executions running at once, against `maxExecutions`. [Observed]
    JobReplicasAtMost,
    /// Every execution of `job` started in scope ended with `execution_status` (the last status
    /// the sampler read from ARM's executions list), and, with `replicas`, ran exactly that many
    /// replicas (`ContainerStarted` rows of the execution: a retried replica is a new one). The
    /// system rows' own reading of the outcome is compared and a disagreement named. [Observed]
    JobExecutionsEnd,
    /// Every replica of `job` started in scope ended (its `ContainerTerminated` row) with
    /// `exit_code` when given, between `min` and `max` seconds after `since`: its own
    /// `ContainerStarted` row (`start`, default) or its own `SIGTERM_RECEIVED` line (`sigterm`),
    /// e.g. killed at a `replicaTimeout` or at the fixed grace after a stop. [Observed]
    JobReplicaExit,
    /// Executions of `job` started in scope that ran at once (each from its first replica's
    /// `ContainerStarted` row to its last replica's `ContainerTerminated` row) number at least
    /// `min` and at most `max` (either may be left out, not both): scheduled executions that
    /// overlap, or an event trigger's cap. [Observed]
    JobExecutionsAtOnce,
    /// A `kind` this version does not know (rejected by `lab::load`).
    Unknown(String),
}

/// Whether a check kind needs a parameter or merely accepts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    Required,
    Optional,
}

/// One parameter a check kind accepts, with what it means (for `lab show` and errors).
#[derive(Clone, Copy, Debug)]
pub struct Param {
    pub key: &'static str,
    pub need: Need,
    pub meaning: &'static str,
}

const fn req(key: &'static str, meaning: &'static str) -> Param {
    Param {
        key,
        need: Need::Required,
        meaning,
    }
}

const fn opt(key: &'static str, meaning: &'static str) -> Param {
    Param {
        key,
        need: Need::Optional,
        meaning,
    }
}

const LOAD: Param = req("load", "the [[load]] whose windows are read");
const SCENARIO: Param = opt(
    "scenario",
    "the load's stream: main (default) or an `also` stream's name",
);
const STEP: Param = opt("step", "the step in scope (default: the whole run)");
const APP: Param = req("app", "the app whose system events are read");
const WITHIN: Param = opt(
    "within",
    "only events within this long of the step's first action (or start)",
);
const PROBE: Param = req("probe", "Startup, Readiness or Liveness");
const MIN_COUNT: Param = opt("min", "at least this many (a whole number >= 1; default 1)");

/// `clients_moved`'s parameters.
const MOVED: &[Param] = &[
    req("load", "the [[load]] whose virtual clients are read"),
    SCENARIO,
    STEP,
    opt(
        "min",
        "at least this many clients moved (a whole number >= 1; min or max or both)",
    ),
    opt("max", "at most this many clients moved (>= 0)"),
];

const JOB: Param = req("job", "the [[jobs]] entry whose replicas' lines are read");
const QUEUE_STEP: Param = opt(
    "step",
    "the step whose `enqueue` actions and worker lines are read (default: the whole run)",
);
/// `queue_items_once`'s parameters.
const QUEUE_ONCE: &[Param] = &[JOB, QUEUE_STEP];
/// `queue_drained_within`'s parameters.
const QUEUE_DRAINED: &[Param] = &[
    JOB,
    QUEUE_STEP,
    req(
        "max",
        "at most this many seconds from the first enqueue to the last of its items done",
    ),
];
/// `job_replicas_at_most`'s parameters.
const JOB_REPLICAS: &[Param] = &[
    JOB,
    STEP,
    req("max", "at most this many replicas of the job alive at once"),
];

/// `job_executions_end`'s parameters.
const JOB_END: &[Param] = &[
    req("job", "the [[jobs]] entry whose executions are read"),
    opt(
        "step",
        "the step in which the executions started (default: the whole run)",
    ),
    req(
        "execution_status",
        "the status each ends with: Succeeded, Failed or Stopped",
    ),
    opt(
        "replicas",
        "and the replicas each ran, retries included (a whole number >= 1)",
    ),
];
/// `job_replica_exit`'s parameters.
const JOB_EXIT: &[Param] = &[
    req("job", "the [[jobs]] entry whose replicas' rows are read"),
    opt(
        "step",
        "the step in which the replicas started (default: the whole run)",
    ),
    opt(
        "exit_code",
        "the exit code each ends with, e.g. 137 (killed), 143 (SIGTERM)",
    ),
    opt(
        "since",
        "`start` (its ContainerStarted row, default) or `sigterm` (its SIGTERM_RECEIVED line)",
    ),
    opt("min", "each ends at least this many seconds after `since`"),
    req("max", "and at most this many seconds after it"),
];

/// `revision_state_seen`'s parameters.
const STATE_APP: Param = req("app", "the app whose revisions' samples are read");
const RUNNING: Param = req(
    "running_state",
    "the revision's runningState, e.g. Failed, Processing, Running",
);
const PROVISIONING: Param = opt(
    "provisioning_state",
    "and its provisioningState, e.g. Provisioning, Failed",
);
const HEALTH: Param = opt(
    "health_state",
    "and its healthState: Healthy, Unhealthy, None",
);
const NEW_REVISION: Param = opt(
    "new_revision",
    "true: only revisions created within the scope (the step's own new revision)",
);
const STATES: &[Param] = &[
    STATE_APP,
    RUNNING,
    PROVISIONING,
    HEALTH,
    NEW_REVISION,
    STEP,
    WITHIN,
    MIN_COUNT,
];

/// `job_executions_at_once`'s parameters.
const JOB_AT_ONCE: &[Param] = &[
    req("job", "the [[jobs]] entry whose executions' rows are read"),
    opt(
        "step",
        "the step in which the executions started (default: the whole run)",
    ),
    opt(
        "min",
        "at least this many ran at once (a whole number >= 1; min or max or both)",
    ),
    opt("max", "at most this many ran at once (>= 0)"),
];

/// Every known kind, in the order the docs list them.
pub const ALL: [CheckKind; 22] = [
    CheckKind::StatusSeen,
    CheckKind::NoErrors,
    CheckKind::ErrorsAtLeast,
    CheckKind::Recovers,
    CheckKind::RestartCountAtLeast,
    CheckKind::RestartCountAtMost,
    CheckKind::ProbeFailed,
    CheckKind::ProbeFailedFirst,
    CheckKind::ActionFailed,
    CheckKind::SlowestBetween,
    CheckKind::SystemEventAtLeast,
    CheckKind::RevisionStateSeen,
    CheckKind::ErrorRateBetween,
    CheckKind::ErrorsServedBy,
    CheckKind::ServedShareBetween,
    CheckKind::ClientsMoved,
    CheckKind::QueueItemsOnce,
    CheckKind::QueueDrainedWithin,
    CheckKind::JobReplicasAtMost,
    CheckKind::JobExecutionsEnd,
    CheckKind::JobReplicaExit,
    CheckKind::JobExecutionsAtOnce,
];

/// The `kind` names of [`ALL`].
pub const KINDS: &[&str] = &[
    "status_seen",
    "no_errors",
    "errors_at_least",
    "recovers",
    "restart_count_at_least",
    "restart_count_at_most",
    "probe_failed",
    "probe_failed_first",
    "action_failed",
    "slowest_between",
    "system_event_at_least",
    "revision_state_seen",
    "error_rate_between",
    "errors_served_by",
    "served_share_between",
    "clients_moved",
    "queue_items_once",
    "queue_drained_within",
    "job_replicas_at_most",
    "job_executions_end",
    "job_replica_exit",
    "job_executions_at_once",
];

impl CheckKind {
    /// The kind's name as the lab file writes it.
    pub fn as_str(&self) -> &str {
        match self {
            CheckKind::StatusSeen => "status_seen",
            CheckKind::NoErrors => "no_errors",
            CheckKind::ErrorsAtLeast => "errors_at_least",
            CheckKind::Recovers => "recovers",
            CheckKind::RestartCountAtLeast => "restart_count_at_least",
            CheckKind::RestartCountAtMost => "restart_count_at_most",
            CheckKind::ProbeFailed => "probe_failed",
            CheckKind::ProbeFailedFirst => "probe_failed_first",
            CheckKind::ActionFailed => "action_failed",
            CheckKind::SlowestBetween => "slowest_between",
            CheckKind::SystemEventAtLeast => "system_event_at_least",
            CheckKind::RevisionStateSeen => "revision_state_seen",
            CheckKind::ErrorRateBetween => "error_rate_between",
            CheckKind::ErrorsServedBy => "errors_served_by",
            CheckKind::ServedShareBetween => "served_share_between",
            CheckKind::ClientsMoved => "clients_moved",
            CheckKind::QueueItemsOnce => "queue_items_once",
            CheckKind::QueueDrainedWithin => "queue_drained_within",
            CheckKind::JobReplicasAtMost => "job_replicas_at_most",
            CheckKind::JobExecutionsEnd => "job_executions_end",
            CheckKind::JobReplicaExit => "job_replica_exit",
            CheckKind::JobExecutionsAtOnce => "job_executions_at_once",
            CheckKind::Unknown(s) => s,
        }
    }

    /// The parameters the kind accepts besides `name` and `kind` (empty for an unknown kind).
    pub fn params(&self) -> &'static [Param] {
        const STATUS: Param = req("status", "the HTTP status looked for (100-599)");
        const MAX: Param = opt("max", "at most this many (a whole number >= 0; default 0)");
        const ACTION_APP: Param = req("app", "the app the step's action targets");
        const ACTION_STEP: Param = opt(
            "step",
            "the step whose actions are read (default: every step)",
        );
        const MIN_MS: Param = req("min", "the slowest response takes at least this many ms");
        const MAX_MS: Param = req("max", "and at most this many ms");
        const REASON: Param = req(
            "reason",
            "the system event's reason, e.g. KEDAScaleTargetActivated",
        );
        const CONTAINS: Param = opt(
            "contains",
            "only events whose message contains this text (case-sensitive)",
        );
        const MIN_PCT: Param = req(
            "min_pct",
            "each judged window's error rate is at least this %",
        );
        const MAX_PCT: Param = req("max_pct", "and at most this %");
        const MIN_REQUESTS: Param = opt(
            "min_requests",
            "windows with fewer requests are listed, not judged (default 100)",
        );
        const REV_APP: Param = req("app", "the app whose revision is named");
        const REVISION: Param = req(
            "revision",
            "the revision's suffix (`canary` for `<app>--canary`)",
        );
        const RATE: &[Param] = &[LOAD, SCENARIO, STEP, MIN_PCT, MAX_PCT, MIN_REQUESTS];
        const SERVED: &[Param] = &[LOAD, SCENARIO, STEP, REV_APP, REVISION];
        const SHARE_MIN: Param = req(
            "min_pct",
            "the revision serves at least this % of the responses",
        );
        const SHARE_MAX: Param = req("max_pct", "and at most this %");
        const SHARE: &[Param] = &[
            LOAD, SCENARIO, STEP, REV_APP, REVISION, SHARE_MIN, SHARE_MAX,
        ];
        const STATUS_SEEN: &[Param] = &[LOAD, SCENARIO, STEP, STATUS, MIN_COUNT];
        const SLOWEST: &[Param] = &[LOAD, SCENARIO, STEP, MIN_MS, MAX_MS];
        const EVENTS: &[Param] = &[APP, REASON, CONTAINS, STEP, WITHIN, MIN_COUNT];
        const LOAD_ONLY: &[Param] = &[LOAD, SCENARIO, STEP];
        const ERRORS: &[Param] = &[LOAD, SCENARIO, STEP, MIN_COUNT];
        const RESTARTS_MIN: &[Param] = &[APP, STEP, WITHIN, MIN_COUNT];
        const RESTARTS_MAX: &[Param] = &[APP, STEP, WITHIN, MAX];
        const PROBES: &[Param] = &[APP, PROBE, STEP, WITHIN, MIN_COUNT];
        const ACTION: &[Param] = &[ACTION_APP, ACTION_STEP];
        match self {
            CheckKind::StatusSeen => STATUS_SEEN,
            CheckKind::NoErrors | CheckKind::Recovers => LOAD_ONLY,
            CheckKind::ErrorsAtLeast => ERRORS,
            CheckKind::RestartCountAtLeast => RESTARTS_MIN,
            CheckKind::RestartCountAtMost => RESTARTS_MAX,
            CheckKind::ProbeFailed | CheckKind::ProbeFailedFirst => PROBES,
            CheckKind::ActionFailed => ACTION,
            CheckKind::SlowestBetween => SLOWEST,
            CheckKind::SystemEventAtLeast => EVENTS,
            CheckKind::RevisionStateSeen => STATES,
            CheckKind::ErrorRateBetween => RATE,
            CheckKind::ErrorsServedBy => SERVED,
            CheckKind::ServedShareBetween => SHARE,
            CheckKind::ClientsMoved => MOVED,
            CheckKind::QueueItemsOnce => QUEUE_ONCE,
            CheckKind::QueueDrainedWithin => QUEUE_DRAINED,
            CheckKind::JobReplicasAtMost => JOB_REPLICAS,
            CheckKind::JobExecutionsEnd => JOB_END,
            CheckKind::JobReplicaExit => JOB_EXIT,
            CheckKind::JobExecutionsAtOnce => JOB_AT_ONCE,
            CheckKind::Unknown(_) => &[],
        }
    }
}

impl From<String> for CheckKind {
    fn from(s: String) -> CheckKind {
        ALL.iter()
            .find(|k| k.as_str() == s)
            .cloned()
            .unwrap_or(CheckKind::Unknown(s))
    }
}

impl From<CheckKind> for String {
    fn from(k: CheckKind) -> String {
        k.as_str().to_owned()
    }
}

impl fmt::Display for CheckKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for CheckKind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// An expected observation, evaluated by the analysis into the verdict. Which keys a kind
/// takes is [`CheckKind::params`]; every other key is an error at load time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Check {
    pub name: String,
    pub kind: CheckKind,
    #[serde(default)]
    pub app: Option<String>,
    #[serde(default)]
    pub job: Option<String>,
    #[serde(default)]
    pub load: Option<String>,
    #[serde(default)]
    pub scenario: Option<String>,
    #[serde(default)]
    pub step: Option<String>,
    #[serde(default)]
    pub probe: Option<String>,
    #[serde(default)]
    pub status: Option<u16>,
    #[serde(default)]
    pub min: Option<f64>,
    #[serde(default)]
    pub max: Option<f64>,
    #[serde(default)]
    pub within: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub contains: Option<String>,
    #[serde(default)]
    pub min_pct: Option<f64>,
    #[serde(default)]
    pub max_pct: Option<f64>,
    #[serde(default)]
    pub min_requests: Option<u64>,
    #[serde(default)]
    pub revision: Option<String>,
    #[serde(default)]
    pub running_state: Option<String>,
    #[serde(default)]
    pub provisioning_state: Option<String>,
    #[serde(default)]
    pub health_state: Option<String>,
    #[serde(default)]
    pub new_revision: Option<bool>,
    #[serde(default)]
    pub execution_status: Option<String>,
    #[serde(default)]
    pub replicas: Option<u32>,
    #[serde(default)]
    pub exit_code: Option<i64>,
    #[serde(default)]
    pub since: Option<String>,
}

/// The execution statuses `job_executions_end` can expect: the final ones of the spec's
/// `JobExecution.properties.status` enum.
pub const FINAL_EXECUTION_STATUSES: &[&str] = &["Succeeded", "Failed", "Stopped"];

/// `job_replica_exit`'s `since` values, as the lab file writes them.
pub const REPLICA_EXIT_SINCE: &[&str] = &["start", "created", "execution", "sigterm"];

/// What `job_replica_exit` times a replica's end from: the lab file's `since`, read once here
/// for the validator, the lab's description and the analysis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplicaExitSince {
    /// Its `ContainerStarted` row (`start`, the default).
    Start,
    /// Its first row (`created`): when its `replicaTimeout` starts counting.
    Created,
    /// Its execution's first row (`execution`): when an execution-wide deadline starts.
    Execution,
    /// Its own `SIGTERM_RECEIVED` line (`sigterm`).
    Sigterm,
}

impl ReplicaExitSince {
    /// The value `since` names ([`REPLICA_EXIT_SINCE`]); `None` sets the default, `start`;
    /// `Err` returns a value that is none of them.
    pub fn parse(since: Option<&str>) -> Result<Self, &str> {
        match since.unwrap_or("start") {
            "start" => Ok(ReplicaExitSince::Start),
            "created" => Ok(ReplicaExitSince::Created),
            "execution" => Ok(ReplicaExitSince::Execution),
            "sigterm" => Ok(ReplicaExitSince::Sigterm),
            other => Err(other),
        }
    }

    /// The lab file's word for it.
    pub fn key(self) -> &'static str {
        match self {
            ReplicaExitSince::Start => "start",
            ReplicaExitSince::Created => "created",
            ReplicaExitSince::Execution => "execution",
            ReplicaExitSince::Sigterm => "sigterm",
        }
    }

    /// The instant in words: "its start", "its creation", ...
    pub fn words(self) -> &'static str {
        match self {
            ReplicaExitSince::Start => "its start",
            ReplicaExitSince::Created => "its creation",
            ReplicaExitSince::Execution => "its execution's start",
            ReplicaExitSince::Sigterm => "its SIGTERM",
        }
    }
}

/// The fewest requests a window needs for `error_rate_between` to judge it, by default: at 100
/// requests one error moves the rate by 1 %, the coarsest step a tolerance of ±0.5 % can read.
pub const DEFAULT_MIN_REQUESTS: u64 = 100;

impl Check {
    /// The parameters this entry sets (besides `name` and `kind`).
    pub fn set_params(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        for (k, set) in [
            ("app", self.app.is_some()),
            ("job", self.job.is_some()),
            ("load", self.load.is_some()),
            ("scenario", self.scenario.is_some()),
            ("step", self.step.is_some()),
            ("probe", self.probe.is_some()),
            ("status", self.status.is_some()),
            ("min", self.min.is_some()),
            ("max", self.max.is_some()),
            ("within", self.within.is_some()),
            ("reason", self.reason.is_some()),
            ("contains", self.contains.is_some()),
            ("min_pct", self.min_pct.is_some()),
            ("max_pct", self.max_pct.is_some()),
            ("min_requests", self.min_requests.is_some()),
            ("revision", self.revision.is_some()),
            ("running_state", self.running_state.is_some()),
            ("provisioning_state", self.provisioning_state.is_some()),
            ("health_state", self.health_state.is_some()),
            ("new_revision", self.new_revision.is_some()),
            ("execution_status", self.execution_status.is_some()),
            ("replicas", self.replicas.is_some()),
            ("exit_code", self.exit_code.is_some()),
            ("since", self.since.is_some()),
        ] {
            if set {
                v.push(k);
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_round_trips_by_name_and_kinds_lists_them_all() {
        assert_eq!(ALL.len(), KINDS.len());
        for (k, name) in ALL.iter().zip(KINDS) {
            assert_eq!(k.as_str(), *name);
            assert_eq!(CheckKind::from((*name).to_owned()), *k);
            assert!(!k.params().is_empty(), "{name} has parameters");
        }
        assert_eq!(
            CheckKind::from("latency_below".to_owned()),
            CheckKind::Unknown("latency_below".into())
        );
    }

    #[test]
    fn every_listed_since_value_parses_back_to_its_key_and_no_other_does() {
        for key in REPLICA_EXIT_SINCE {
            let since = ReplicaExitSince::parse(Some(key)).expect("a listed value parses");
            assert_eq!(since.key(), *key);
        }
        assert_eq!(ReplicaExitSince::parse(None), Ok(ReplicaExitSince::Start));
        assert_eq!(ReplicaExitSince::parse(Some("stop")), Err("stop"));
    }
}
