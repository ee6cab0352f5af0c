//! The lab file's types. Unknown keys are errors: a typo in a pre-registration must not pass
//! silently. Durations are written as text (`10s`, `2m`, `600s`) and parsed with
//! [`logline::config::parse_duration`].

use std::collections::BTreeMap;
use std::time::Duration;

use logline::config::parse_duration;
use serde::{Deserialize, Serialize};

pub use crate::action::{Action, TrafficEntry};
pub use crate::job::{EventTrigger, Job, ManualTrigger, ScheduleTrigger, TimeoutScope, Trigger};

/// A whole lab, after its profile was applied. The default is the lab of bare logs: nothing
/// pre-registered (the analysis then judges by its command-line rule).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lab {
    pub title: String,
    /// The question the lab answers, in one sentence.
    pub question: String,
    #[serde(default)]
    pub kind: LabKind,
    /// Where the lab comes from (the write-up it reproduces).
    #[serde(default)]
    pub source: Option<String>,
    pub hypothesis: Hypothesis,
    /// The binding falsification rule (required for falsification labs).
    #[serde(default)]
    pub rule: Option<Rule>,
    #[serde(default)]
    pub preconditions: Preconditions,
    /// Phase name → run_id prefix(es), read by the analysis.
    #[serde(default)]
    pub phases: BTreeMap<String, Prefixes>,
    /// `[[apps]]`: the container apps (a lab of jobs alone may have none).
    #[serde(default)]
    pub apps: Vec<App>,
    /// `[[jobs]]`: Container Apps Jobs under test (see [`crate::job`]).
    #[serde(default)]
    pub jobs: Vec<Job>,
    #[serde(default)]
    pub load: Vec<Load>,
    pub steps: Vec<Step>,
    #[serde(default)]
    pub checks: Vec<Check>,
    /// `[campaign]`: how `labctl campaign` judges several runs of this lab together
    /// (pre-registered like the rule; defaults when absent).
    #[serde(default)]
    pub campaign: Campaign,
    /// Emulator knob (ignored on Azure): how long localplane's platform steps take for every
    /// app of the lab, sent as the resource tag `localplane.timings`. The shipped labs' full
    /// profiles say `recorded` and their quick profiles `fast`.
    #[serde(default)]
    pub localplane_timings: LocalplaneTimings,
}

/// localplane's platform step durations for a lab's apps (see localplane's `timings` module).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LocalplaneTimings {
    /// As short as the emulation allows: replicas start at once, the old revision goes at the
    /// switch, kubelet's restart back-off. For tests and quick profiles.
    #[default]
    Fast,
    /// Calibrated from a recording of the real service: replica provisioning, the old
    /// revision kept after the switch, the restart back-off cap.
    Recorded,
}

impl LocalplaneTimings {
    /// The tag value localplane parses (`fast`, `recorded`).
    pub fn as_str(self) -> &'static str {
        match self {
            LocalplaneTimings::Fast => "fast",
            LocalplaneTimings::Recorded => "recorded",
        }
    }

    /// The value of `s` (`fast`, `recorded`), `None` for anything else.
    pub fn parse(s: &str) -> Option<LocalplaneTimings> {
        match s {
            "fast" => Some(LocalplaneTimings::Fast),
            "recorded" => Some(LocalplaneTimings::Recorded),
            _ => None,
        }
    }

    /// What the choice means, for progress lines and the report.
    pub fn meaning(self) -> &'static str {
        match self {
            LocalplaneTimings::Fast => {
                "fast: not calibrated; replicas start at once after AssigningReplica, the old \
                 revision stops at the traffic switch, kubelet's restart back-off (10 s doubling \
                 to 300 s)"
            }
            LocalplaneTimings::Recorded => {
                "recorded: calibrated from a recording of Container Apps; replicas start 16 s \
                 after AssigningReplica, the old revision keeps running 38 s after the traffic \
                 switch, restart back-off capped at 40 s"
            }
        }
    }
}

/// Whether the verdict comes from a falsification rule or from expected observations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LabKind {
    /// `held` / `falsified` by the `[rule]`.
    #[default]
    Falsification,
    /// `held` when every `[[checks]]` entry is observed.
    Observation,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hypothesis {
    pub text: String,
    /// The strongest evidence level an attribution may carry (`Strongly Suggested`, ...).
    #[serde(default)]
    pub evidence_cap: Option<String>,
    /// What the lab expects: `held` for a masking claim, `falsified` for a positive control.
    #[serde(default)]
    pub expect: Option<String>,
}

/// `[campaign]`: the verdict of several runs of one lab, pre-registered. Every run is listed
/// with its verdict; an `invalid` run is never dropped: it counts against `min_valid_runs`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Campaign {
    /// How many runs `labctl campaign run` makes when `--runs` is not given (the original
    /// lab's 12 events are 4 quick runs of the rollout lab).
    #[serde(default = "default_campaign_runs")]
    pub runs: u32,
    /// The campaign is `falsified` when at least this many valid runs are `falsified`.
    #[serde(default = "one")]
    pub falsified_runs: u32,
    /// The campaign is `invalid` when fewer runs than this are valid (`held` or `falsified`);
    /// without it, every run must be valid.
    #[serde(default)]
    pub min_valid_runs: Option<u32>,
}

/// Runs of a campaign when the lab does not say.
pub const DEFAULT_CAMPAIGN_RUNS: u32 = 4;

fn default_campaign_runs() -> u32 {
    DEFAULT_CAMPAIGN_RUNS
}

fn one() -> u32 {
    1
}

impl Default for Campaign {
    fn default() -> Self {
        Campaign {
            runs: DEFAULT_CAMPAIGN_RUNS,
            falsified_runs: 1,
            min_valid_runs: None,
        }
    }
}

impl Campaign {
    /// The valid runs a campaign of `runs` runs needs.
    pub fn min_valid(&self, runs: u32) -> u32 {
        self.min_valid_runs.unwrap_or(runs)
    }

    /// The campaign rule in words.
    pub fn describe(&self) -> String {
        let valid = match self.min_valid_runs {
            Some(n) => format!("at least {n} run(s) valid"),
            None => "every run valid".to_owned(),
        };
        format!(
            "falsified when at least {} valid run(s) are falsified; invalid unless {valid} (an invalid run is listed, never dropped); {} runs by default",
            self.falsified_runs, self.runs
        )
    }
}

/// A `[phases]` entry: the run_id prefix of a phase's runs, one or several.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Prefixes {
    One(String),
    Many(Vec<String>),
}

impl Prefixes {
    /// Each prefix, in the order written.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        let (one, many): (Option<&String>, &[String]) = match self {
            Prefixes::One(s) => (Some(s), &[]),
            Prefixes::Many(v) => (None, v),
        };
        one.into_iter().chain(many).map(String::as_str)
    }
}

/// The binding rule: falsified when, in a judged phase, `consecutive` windows of `window` each
/// have err_pct strictly above `threshold_pct`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    pub window: String,
    pub consecutive: u32,
    pub threshold_pct: f64,
    #[serde(default)]
    pub phases: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Preconditions {
    #[serde(default)]
    pub baseline_clean: bool,
    #[serde(default)]
    pub headroom: bool,
    #[serde(default)]
    pub headroom_factor: Option<f64>,
    #[serde(default)]
    pub perturbations_observed: bool,
    #[serde(default)]
    pub expected_perturbations: Option<u32>,
}

/// An app under test, in the shape of a Container Apps template.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct App {
    pub name: String,
    /// `probelab/<name>:<tag>`; `:dev` locally, the pushed tag on Azure.
    pub image: String,
    /// A fixed replica count (`minReplicas = maxReplicas`); without it and without `scale`, 1.
    #[serde(default)]
    pub replicas: Option<u32>,
    /// Scale rule instead of a fixed count (exclusive with `replicas`).
    #[serde(default)]
    pub scale: Option<AppScale>,
    #[serde(default)]
    pub termination_grace_seconds: Option<u64>,
    #[serde(default)]
    pub ingress: Option<Ingress>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub probes: Vec<Probe>,
    /// Emulator knobs (ignored on Azure, recorded in the pack). `revision_ready`: when a new
    /// revision counts as ready, `allReplicas` (localplane's default: Learn's zero-downtime
    /// rule) or `firstReplica` (the application-lifecycle page's older wording).
    /// `new_revision_replicas`: how many replicas a new revision starts before it takes the
    /// traffic, `previous` (default: the serving revision's count within the new one's limits,
    /// Learn) or `minReplicas` (microsoft/azure-container-apps#638's report).
    #[serde(default)]
    pub revision_ready: Option<String>,
    #[serde(default)]
    pub new_revision_replicas: Option<String>,
    /// Emulator knob: seconds between removing a replica from routing and SIGTERM.
    #[serde(default)]
    pub drain_delay_seconds: Option<u64>,
    /// Emulator knob: milliseconds routing continues after SIGTERM.
    #[serde(default)]
    pub routing_removal_lag_ms: Option<u64>,
    /// Emulator knobs for the HTTP rule, each a localplane tag; unset, localplane follows
    /// Microsoft Learn ("Set scaling rules", Scale behavior). `http_metric`: `requestRate`
    /// (requests in the past 15 s / 15, every 15 s) or `peakInFlight` (requests in flight at
    /// once, at the polling interval: KEDA's HTTP add-on). `scale_up`: `steps` (1, 4, 8, 16,
    /// ...) or `atOnce`. `scale_down_stabilization`: seconds (Learn: 300) or `cooldownPeriod`.
    #[serde(default)]
    pub http_metric: Option<String>,
    #[serde(default)]
    pub scale_up: Option<String>,
    #[serde(default)]
    pub scale_down_stabilization: Option<String>,
    /// Emulator knob: what the ingress's 240 s measures, `idle` (localplane's default: Envoy's
    /// stream idle timeout, as users observe it) or `request` (Envoy's route timeout to the
    /// response headers, as Learn's wording reads); docs/FIDELITY.md, "Ingress".
    #[serde(default)]
    pub ingress_timeout: Option<String>,
    /// Emulator knob: retries of a refused upstream connect (localplane's default 1, Envoy's
    /// default; 0: none).
    #[serde(default)]
    pub connect_retries: Option<u32>,
    /// Emulator knob: how platform maintenance (the `maintenance` action) moves the app's
    /// replicas, `rolling` (localplane's default: Learn's rolling updates in stages, each
    /// replacement ready before its replica stops) or `stopFirst` (each replica stopped before
    /// its replacement starts, as microsoft/azure-container-apps#1436 and #1144 report).
    #[serde(default)]
    pub maintenance: Option<String>,
    /// Emulator knob: seconds a new revision may take to become ready before its operation
    /// fails and it reports `Failed` (localplane's default 600, Kubernetes'
    /// `progressDeadlineSeconds`; 1 to 3600). A quick profile shortens it.
    #[serde(default)]
    pub progress_deadline_seconds: Option<u64>,
    /// Whether the runner waits, before the first step, for this app's creation to finish, its
    /// latest revision to be ready and (when a load targets it) its ingress to serve; default
    /// `true`. `false` is for an app whose startup is itself what the lab observes: one that
    /// never becomes ready (killed by its startup probe) would otherwise hold the run until the
    /// ready timeout, and one that becomes ready only after minutes would have done its
    /// startup before the first step, out of the steps' scope. The runner then only PUTs it
    /// (without waiting for the operation) and the steps start while it starts; a load that
    /// targets it may not set `ready_path` (nothing polls it).
    #[serde(default = "yes")]
    pub wait_ready: bool,
    /// Container Apps' `activeRevisionsMode`: `single` (the default: the latest revision takes
    /// all traffic) or `multiple` (revisions take the traffic `traffic` gives them).
    #[serde(default)]
    pub revisions_mode: RevisionsMode,
    /// The first revision's `revisionSuffix` (its name is `<app>--<suffix>`), so `traffic` and
    /// the actions can name it; without it the platform picks one.
    #[serde(default)]
    pub revision_suffix: Option<String>,
    /// `ingress.traffic` at deploy (multiple mode): whose weights sum to 100.
    #[serde(default)]
    pub traffic: Vec<TrafficEntry>,
}

/// `configuration.activeRevisionsMode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RevisionsMode {
    #[default]
    Single,
    Multiple,
}

/// An app's `template.scale` with Container Apps' HTTP rule: replicas between `min_replicas`
/// (0 allowed: scale to zero) and `max_replicas`, desired = ceil(concurrent requests /
/// `concurrent_requests`). Unset fields keep the platform's defaults (Microsoft Learn, "Set
/// scaling rules": concurrentRequests 10, pollingInterval 30 s, cooldownPeriod 300 s).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppScale {
    pub min_replicas: u32,
    pub max_replicas: u32,
    /// The HTTP rule's `concurrentRequests`; without it the platform's default HTTP rule.
    #[serde(default)]
    pub concurrent_requests: Option<u32>,
    #[serde(default)]
    pub polling_seconds: Option<u32>,
    #[serde(default)]
    pub cooldown_seconds: Option<u32>,
}

impl App {
    /// The emulator knobs this app sets, as the `localplane.*` resource tags localplane reads
    /// (Azure stores and ignores them); an unset knob is absent (localplane's default, the
    /// documented behaviour).
    pub fn localplane_tags(&self) -> BTreeMap<String, String> {
        let text = [
            ("localplane.revisionReady", &self.revision_ready),
            (
                "localplane.newRevisionReplicas",
                &self.new_revision_replicas,
            ),
            ("localplane.httpMetric", &self.http_metric),
            ("localplane.scaleUp", &self.scale_up),
            (
                "localplane.scaleDownStabilization",
                &self.scale_down_stabilization,
            ),
            ("localplane.ingressTimeout", &self.ingress_timeout),
            ("localplane.maintenance", &self.maintenance),
        ];
        let numbers = [
            ("localplane.drainDelaySeconds", self.drain_delay_seconds),
            (
                "localplane.routingRemovalLagMs",
                self.routing_removal_lag_ms,
            ),
            (
                "localplane.connectRetries",
                self.connect_retries.map(u64::from),
            ),
            (
                "localplane.progressDeadlineSeconds",
                self.progress_deadline_seconds,
            ),
        ];
        let text = text
            .into_iter()
            .filter_map(|(k, v)| v.clone().map(|v| (k.to_owned(), v)));
        let numbers = numbers
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k.to_owned(), v.to_string())));
        text.chain(numbers).collect()
    }

    /// The replicas the app runs at least: `replicas`, `scale.min_replicas`, else 1.
    pub fn min_replicas(&self) -> u32 {
        match (&self.scale, self.replicas) {
            (Some(s), _) => s.min_replicas,
            (None, Some(n)) => n,
            (None, None) => 1,
        }
    }

    /// The replicas the app runs at most.
    pub fn max_replicas(&self) -> u32 {
        match (&self.scale, self.replicas) {
            (Some(s), _) => s.max_replicas,
            (None, Some(n)) => n,
            (None, None) => 1,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ingress {
    #[serde(default = "yes")]
    pub external: bool,
    pub target_port: u16,
    /// Session affinity (`stickySessions.affinity: sticky`): a client's cookie keeps it on one
    /// replica. Single revision mode only, as Container Apps supports it.
    #[serde(default)]
    pub sticky_sessions: bool,
}

fn yes() -> bool {
    true
}

/// A probe, in Container Apps' terms.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Probe {
    /// `Startup`, `Readiness` or `Liveness`.
    #[serde(rename = "type")]
    pub kind: String,
    /// HTTP GET path; absent for a TCP probe.
    #[serde(default)]
    pub path: Option<String>,
    pub port: u16,
    #[serde(default)]
    pub initial_delay_seconds: Option<u32>,
    #[serde(default)]
    pub period_seconds: Option<u32>,
    #[serde(default)]
    pub timeout_seconds: Option<u32>,
    #[serde(default)]
    pub failure_threshold: Option<u32>,
    #[serde(default)]
    pub success_threshold: Option<u32>,
}

/// One load stream: a loadgen job against an app's ingress.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Load {
    pub name: String,
    /// The app whose ingress is the target.
    pub target: String,
    #[serde(default = "root_path")]
    pub path: String,
    /// Open model: requests per second. Closed model: ignored.
    #[serde(default)]
    pub rate: Option<f64>,
    /// `close` (a new connection per request) or `keep-alive`.
    #[serde(default = "keep_alive")]
    pub connection: String,
    /// Closed model: this many workers, each with one persistent connection.
    #[serde(default)]
    pub workers: Option<u32>,
    #[serde(default)]
    pub think: Option<String>,
    #[serde(default)]
    pub timeout: Option<String>,
    /// Side streams, loadgen `--also` syntax.
    #[serde(default)]
    pub also: Vec<String>,
    #[serde(default)]
    pub log_requests: Option<String>,
    /// The path the runner polls before the first step until the target serves it 5 times in a
    /// row (default: `path`). Set it when the load's own requests are long (`/slow?seconds=60`),
    /// which the serving check's 5 s timeout would never see answered.
    #[serde(default)]
    pub ready_path: Option<String>,
    /// Loadgen replicas (the job's `parallelism` and `replicaCompletionCount`), default 1:
    /// each drives `rate / replicas` (every staircase rate and `also` stream's `rate=` too) or
    /// `workers / replicas` workers with its own connections, all under the same run_id; the
    /// analysis sums their windows. At most [`MAX_LOAD_REPLICAS`].
    #[serde(default)]
    pub replicas: Option<u32>,
    /// Open model: the arrivals spread over this many virtual clients, each keeping its own
    /// cookies (loadgen `--clients`), so an affinity cookie pins each to a replica; loadgen
    /// prints a `client` line when one is pinned, moves or gets a cookie. 1 to
    /// [`MAX_LOAD_CLIENTS`], with one loadgen replica.
    #[serde(default)]
    pub clients: Option<u32>,
}

/// The most virtual clients one load may ask for (loadgen's own bound).
pub const MAX_LOAD_CLIENTS: u32 = 10_000;

/// The most loadgen replicas one load may ask for.
pub const MAX_LOAD_REPLICAS: u32 = 20;

impl Load {
    /// How many loadgen replicas drive this load (1 when `replicas` is not set).
    pub fn replica_count(&self) -> u32 {
        self.replicas.unwrap_or(1)
    }

    /// The scenarios the load's lines carry: `main` and each `also` stream's `name=`.
    pub fn scenarios(&self) -> Vec<String> {
        let mut v = vec!["main".to_owned()];
        for a in &self.also {
            for part in a.split(',') {
                if let Some((k, val)) = part.split_once('=')
                    && k.trim() == "name"
                {
                    v.push(val.trim().to_owned());
                }
            }
        }
        v
    }
}

fn root_path() -> String {
    "/".to_owned()
}

fn keep_alive() -> String {
    "keep-alive".to_owned()
}

/// One step of the schedule. Steps run in order; each runs every load (or those named) for its
/// duration, with a run_id of `<phase>-...`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    pub name: String,
    /// `preflight`, `baseline`, `perturbation`, `supplemental-restart` or any other label.
    pub phase: String,
    /// How long the step's load runs. Without it: `events × interval`.
    #[serde(default)]
    pub duration: Option<String>,
    /// What happens during the step, `events` times, every `interval`, the first after `offset`.
    #[serde(default)]
    pub action: Option<Action>,
    #[serde(default)]
    pub events: Option<u32>,
    #[serde(default)]
    pub interval: Option<String>,
    #[serde(default)]
    pub offset: Option<String>,
    /// Preflight staircase: rates stepped through, each for `staircase_step`, with pauses.
    #[serde(default)]
    pub staircase: Vec<f64>,
    #[serde(default)]
    pub staircase_step: Option<String>,
    #[serde(default)]
    pub staircase_pause: Option<String>,
    /// Loads that run in this step (default: all).
    #[serde(default)]
    pub loads: Option<Vec<String>>,
    /// Runs the perturbation sampler over the whole step (revision states and replica counts
    /// every tick), for a step without an action: a scaling lab's idle and load steps, whose
    /// replica counts are the story. An action step samples around each event already.
    #[serde(default)]
    pub sample: bool,
}

pub use crate::checks::Check;

impl Lab {
    /// The `[[apps]]` entry named `name`.
    pub fn app(&self, name: &str) -> Option<&App> {
        self.apps.iter().find(|a| a.name == name)
    }

    /// The `[[jobs]]` entry named `name`.
    pub fn job(&self, name: &str) -> Option<&Job> {
        self.jobs.iter().find(|j| j.name == name)
    }

    /// The `[[load]]` entry named `name`.
    pub fn load_named(&self, name: &str) -> Option<&Load> {
        self.load.iter().find(|l| l.name == name)
    }

    /// The `[[steps]]` entry named `name`.
    pub fn step(&self, name: &str) -> Option<&Step> {
        self.steps.iter().find(|s| s.name == name)
    }

    /// How many events the schedule fires in the steps with an action whose phase the rule
    /// judges (every action step when the rule names no phases).
    pub fn judged_events(&self) -> u32 {
        let phases: &[String] = self.rule.as_ref().map_or(&[], |r| r.phases.as_slice());
        self.steps
            .iter()
            .filter(|s| s.action.is_some())
            .filter(|s| phases.is_empty() || phases.contains(&s.phase))
            .map(|s| s.events.unwrap_or(1))
            .sum()
    }

    /// Whether the verdict comes from `[[checks]]` (`kind = "observation"`).
    pub fn is_observation(&self) -> bool {
        self.kind == LabKind::Observation
    }

    /// The rate of the load named `name`, or of the lab's only load when `name` is `None` (the
    /// headroom gate's "lab's load rate").
    pub fn load_rate(&self, name: Option<&str>) -> Option<f64> {
        match name {
            Some(n) => self.load_named(n)?.rate,
            None => match self.load.as_slice() {
                [only] => only.rate,
                _ => None,
            },
        }
    }

    /// The phases of the steps, each once, in step order.
    pub fn step_phases(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for s in &self.steps {
            if !s.phase.is_empty() && !out.contains(&s.phase.as_str()) {
                out.push(&s.phase);
            }
        }
        out
    }

    /// The loads a step runs (its `loads`, or every load).
    pub fn step_loads(&self, step: &Step) -> Vec<&Load> {
        self.load
            .iter()
            .filter(|l| step.loads.as_ref().is_none_or(|n| n.contains(&l.name)))
            .collect()
    }

    /// The revision suffixes the lab names for `app`: its first revision's and its revision
    /// actions'.
    pub fn revision_suffixes(&self, app: &str) -> Vec<&str> {
        let first = self
            .app(app)
            .and_then(|a| a.revision_suffix.as_deref())
            .into_iter();
        let actions = self.steps.iter().filter_map(|s| match &s.action {
            Some(Action::Revision { app: a, suffix, .. }) if a == app => Some(suffix.as_str()),
            _ => None,
        });
        first.chain(actions).collect()
    }

    /// The steps whose action only localplane performs (`maintenance`): a lab with one does
    /// not run on Azure.
    pub fn localplane_only_steps(&self) -> Vec<&str> {
        self.steps
            .iter()
            .filter(|s| matches!(s.action, Some(Action::Maintenance { .. })))
            .map(|s| s.name.as_str())
            .collect()
    }
}

impl Step {
    /// How long the step's load runs: `duration`, else `offset + events × interval`, else the
    /// staircase's total.
    pub fn load_duration(&self) -> Duration {
        let d = |s: &Option<String>| s.as_deref().and_then(|s| parse_duration(s).ok());
        if let Some(x) = d(&self.duration) {
            return x;
        }
        if let (Some(n), Some(i)) = (self.events, d(&self.interval)) {
            return d(&self.offset).unwrap_or_default() + i * n;
        }
        let step = d(&self.staircase_step).unwrap_or_default();
        let pause = d(&self.staircase_pause).unwrap_or_default();
        let n = u32::try_from(self.staircase.len()).unwrap_or(u32::MAX);
        step * n + pause * n.saturating_sub(1)
    }
}
