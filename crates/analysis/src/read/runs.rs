//! `runs.json`, the record of a run the runner writes into its evidence pack: each step's time
//! span, its job executions (load name → run_id; a sampler execution per event carries `event`
//! and, as `run_id`, that event's perturbation id), its fired actions (each with its event's
//! `perturbation_id`), the platform the run used and the top-level `log_write_failures`. The
//! runner writes it and the analysis reads it through the same types; every member is read
//! leniently, so packs written before a member existed still read.
//!
//! ```json
//! {"lab": "...", "profile": "full", "target": "local", "started": "...", "ended": "...",
//!  "incomplete": false,
//!  "steps": [{"name": "outage", "phase": "outage", "start": "...", "end": "...",
//!             "runs": [{"load": "readiness-only", "run_id": "outage-readiness-only-..."}],
//!             "actions": [{"event": 1, "kind": "dependency", "app": "dep", "ts": "...",
//!                          "outcome": "ok", "status": 200, "dur_ms": 12, "detail": ""}]}]}
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::Error;
use crate::ts::parse_ms;

/// The file name in an evidence pack.
pub const RUNS_FILE: &str = "runs.json";

/// `runs.json`: written by the runner as a run goes (after every step, atomically), read by the
/// analysis. One type for both: every field the runner writes, each read leniently (a member
/// absent in an older pack takes its default), unknown members ignored.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunsRecord {
    #[serde(default)]
    pub lab: String,
    /// The profile the lab ran with (`full`, `quick`).
    #[serde(default)]
    pub profile: String,
    /// `local` (localplane) or `azure`.
    #[serde(default)]
    pub target: String,
    #[serde(default)]
    pub started: String,
    #[serde(default)]
    pub ended: Option<String>,
    /// True until the run ended normally (Ctrl-C or an error leave it true).
    #[serde(default)]
    pub incomplete: bool,
    /// Why the run is incomplete, when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<String>,
    /// Duration scale applied to the schedule (1 = as the profile says; tests only).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub time_scale: f64,
    /// localplane's platform timings the run's apps used (`fast`, `recorded`: the lab's
    /// `localplane_timings`); absent on Azure, whose timings are its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub localplane_timings: Option<String>,
    /// Each app's emulator knobs (app name → the `localplane.*` tags it sets; empty: every
    /// behaviour as documented), so the report can name the semantics the run used; absent on
    /// Azure and in packs written before the runner recorded them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub localplane_knobs: Option<BTreeMap<String, BTreeMap<String, String>>>,
    #[serde(default)]
    pub steps: Vec<StepRecord>,
    /// Log rows the run could not write (a full disk, a lost file): the run stays
    /// `incomplete` and the analysis judges the pack `invalid` (precondition `data_complete`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub log_write_failures: Vec<LogWriteFailure>,
}

fn one() -> f64 {
    1.0
}

fn is_one(x: &f64) -> bool {
    (*x - 1.0).abs() < f64::EPSILON
}

/// One evidence file whose writes failed during the run (`log_write_failures[]`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LogWriteFailure {
    /// The file, relative to the pack (`logs/ContainerAppSystemLogs_CL.ndjson`).
    #[serde(default)]
    pub file: String,
    /// The first error (`No space left on device (os error 28)`).
    #[serde(default)]
    pub error: String,
    /// When the first write failed (RFC 3339, ms).
    #[serde(default)]
    pub first_failed_ts: String,
    /// Rows of every failed write (each failed write is cut back to the last whole line; later
    /// writes that succeed are kept).
    #[serde(default)]
    pub rows_lost: u64,
}

/// One step of the schedule.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    pub name: String,
    #[serde(default)]
    pub phase: String,
    pub start: String,
    #[serde(default)]
    pub end: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perturbation_id: Option<String>,
    #[serde(default)]
    pub runs: Vec<RunRecord>,
    #[serde(default)]
    pub actions: Vec<ActionRecord>,
}

/// One job execution of a step (a load, or the sampler).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The load's name, or `sampler`.
    pub load: String,
    pub run_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<String>,
    /// The execution's final status (`Succeeded`, `Failed`, ...), or why it did not start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// For a sampler run: the 1-based event whose window it samples (its `run_id` is then that
    /// event's perturbation id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<u32>,
}

/// One fired action (and its restore, when it has one).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ActionRecord {
    /// 1-based event number within the step.
    #[serde(default)]
    pub event: u32,
    /// `rollout`, `restart`, `dependency`, `dependency-restore`, `simulate`, `simulate-reset`,
    /// `saturate`, `set-env`, ...
    #[serde(default)]
    pub kind: String,
    /// The app the action targeted (empty for a job action).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub app: String,
    /// The `[[jobs]]` entry a `job-start` or `job-stop` targeted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
    /// When it was fired (RFC 3339, ms).
    pub ts: String,
    /// `ok` or `failed`.
    #[serde(default)]
    pub outcome: String,
    /// The HTTP status of the answer, when there was one (an app's, or ARM's when it refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The ARM error code of a failed ARM action (`ContainerAppRevisionNotActive`, `Timeout`,
    /// ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    #[serde(default)]
    pub dur_ms: u64,
    #[serde(default)]
    pub detail: String,
    /// The event's own perturbation id, `<step>-event-<N>-<stamp>` (the `PERTURBATION_ID` of the
    /// sampler run of that event's window); absent in packs written before per-event ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perturbation_id: Option<String>,
    /// `enqueue`: the ids of the items the queue added, as it answered them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<String>,
    /// `job-start`: the execution it started; `job-stop`: the executions it stopped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub executions: Vec<String>,
}

impl ActionRecord {
    /// The record of a job action: the job named in `job`, not in `app`.
    pub fn as_job_action(mut self, job: &str) -> ActionRecord {
        self.app.clear();
        self.job = Some(job.to_owned());
        self
    }
}

impl RunsRecord {
    /// Where the run ran and with which platform timings, in words (report.md and report.html),
    /// or `None` when runs.json does not say (`target` absent).
    pub fn platform(&self) -> Option<String> {
        let profile = if self.profile.is_empty() {
            String::new()
        } else {
            format!(" (profile {})", self.profile)
        };
        match self.target.as_str() {
            "" => None,
            "azure" => Some(format!(
                "Azure Container Apps{profile}: the service's own timings"
            )),
            "local" => {
                let timings = match self.localplane_timings.as_deref() {
                    Some(t) => match ::lab::LocalplaneTimings::parse(t) {
                        Some(known) => format!("timings {}", known.meaning()),
                        None => format!("timings {t:?} (not a known choice)"),
                    },
                    None => "timings not recorded in runs.json".to_owned(),
                };
                Some(format!(
                    "localplane{profile}, {timings}; {}",
                    semantics(self.localplane_knobs.as_ref())
                ))
            }
            other => Some(format!("{other}{profile}")),
        }
    }
}

/// The readiness and scaling semantics a localplane run used, in words: Learn's documented
/// behaviour, then each app's `localplane.*` tags that select another (`knobs`: runs.json's
/// `localplane_knobs`; `None` in packs that did not record them).
fn semantics(knobs: Option<&BTreeMap<String, BTreeMap<String, String>>>) -> String {
    let Some(knobs) = knobs else {
        return "readiness and scaling semantics not recorded in runs.json (packs before \
                2026-12-04 ran localplane's earlier defaults)"
            .to_owned();
    };
    let chosen: Vec<String> = knobs
        .iter()
        .filter(|(_, tags)| !tags.is_empty())
        .map(|(app, tags)| {
            let tags: Vec<String> = tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("app {app} selects {}", tags.join(", "))
        })
        .collect();
    let documented = "revision readiness and scaling as Microsoft Learn documents them (a new \
                      revision takes the traffic once every replica, at the serving revision's \
                      count, is ready; the HTTP rule every 15 s on the past 15 s's requests / 15, \
                      scale-up steps 1, 4, 8, ..., scale-in after a 300 s window)";
    if chosen.is_empty() {
        documented.to_owned()
    } else {
        format!("{documented}, except: {}", chosen.join("; "))
    }
}
impl RunsRecord {
    /// Reads `runs.json`.
    pub fn read(path: &Path) -> Result<RunsRecord, Error> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        Self::parse(&text).map_err(|e| Error::Internal(format!("{}: {e}", path.display())))
    }

    pub fn parse(text: &str) -> Result<RunsRecord, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// Writes `runs.json` into the pack directory `pack`, atomically (temp file, then rename).
    pub fn write(&self, pack: &Path) -> Result<(), Error> {
        let path = pack.join(RUNS_FILE);
        let mut b = serde_json::to_vec_pretty(self)
            .map_err(|e| Error::Internal(format!("{}: {e}", path.display())))?;
        b.push(b'\n');
        crate::atomic::write_atomic(&path, &b)
    }

    pub fn step(&self, name: &str) -> Option<&StepRecord> {
        self.steps.iter().find(|s| s.name == name)
    }

    /// The whole run's span in epoch ms (end open when the run has not ended).
    pub fn span_ms(&self) -> (Option<i64>, Option<i64>) {
        (
            parse_ms(&self.started),
            self.ended.as_deref().and_then(parse_ms),
        )
    }
}

impl StepRecord {
    pub fn start_ms(&self) -> Option<i64> {
        parse_ms(&self.start)
    }

    pub fn end_ms(&self) -> Option<i64> {
        self.end.as_deref().and_then(parse_ms)
    }

    /// The sampler execution of event `n`, when the runner recorded one.
    pub fn sampler_of(&self, n: u32) -> Option<&RunRecord> {
        self.runs
            .iter()
            .find(|r| r.load == "sampler" && r.event == Some(n))
    }

    /// The first action's time, when the step fired any.
    pub fn first_action_ms(&self) -> Option<i64> {
        self.actions.iter().filter_map(|a| parse_ms(&a.ts)).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_runner_names_and_ignores_extra_keys() {
        let r = RunsRecord::parse(
            r#"{"lab":"x","profile":"full","target":"local","started":"2026-01-01T00:00:00.000Z",
                "ended":null,"incomplete":true,"time_scale":0.5,
                "steps":[{"name":"s","phase":"s","start":"2026-01-01T00:00:10.000Z","end":null,
                  "runs":[{"load":"main","run_id":"s-1","job":"j"}],
                  "actions":[{"event":1,"kind":"saturate","app":"a","ts":"2026-01-01T00:00:12.000Z",
                    "outcome":"failed","dur_ms":5,"detail":"reset"}]}]}"#,
        )
        .unwrap();
        let s = r.step("s").unwrap();
        assert_eq!(s.runs[0].run_id, "s-1");
        assert_eq!(s.first_action_ms().unwrap() - s.start_ms().unwrap(), 2_000);
        assert_eq!(s.end_ms(), None);
        assert_eq!(s.actions[0].outcome, "failed");
    }

    /// report.md and report.html say where the run ran and with which timings, quick or full.
    #[test]
    fn platform_names_the_target_profile_and_timings() {
        let with = |extra: &str| {
            RunsRecord::parse(&format!(
                r#"{{"started":"2026-01-01T00:00:00.000Z",{extra}"steps":[]}}"#
            ))
            .unwrap()
            .platform()
        };
        let quick =
            with(r#""profile":"quick","target":"local","localplane_timings":"fast","#).unwrap();
        assert!(
            quick.starts_with("localplane (profile quick), timings fast: not calibrated"),
            "{quick}"
        );
        let full =
            with(r#""profile":"full","target":"local","localplane_timings":"recorded","#).unwrap();
        assert!(
            full.starts_with("localplane (profile full), timings recorded: calibrated"),
            "{full}"
        );
        // The semantics: Learn's, unless an app's tags select another; old packs say so.
        assert!(
            quick.contains("semantics not recorded in runs.json"),
            "{quick}"
        );
        let documented = with(
            r#""target":"local","localplane_timings":"fast","localplane_knobs":{"subject":{}},"#,
        )
        .unwrap();
        assert!(
            documented.ends_with("scale-in after a 300 s window)"),
            "{documented}"
        );
        let reported = with(
            r#""target":"local","localplane_knobs":{"subject":{"localplane.revisionReady":"firstReplica","localplane.newRevisionReplicas":"minReplicas"},"load":{}},"#,
        )
        .unwrap();
        assert!(
            reported.ends_with(
                "except: app subject selects localplane.newRevisionReplicas=minReplicas, \
                 localplane.revisionReady=firstReplica"
            ),
            "{reported}"
        );
        let odd = with(r#""target":"local","localplane_timings":"slow","#).unwrap();
        assert!(odd.contains("\"slow\" (not a known choice)"), "{odd}");
        let old = with(r#""target":"local","#).unwrap();
        assert!(old.contains("timings not recorded"), "{old}");
        let azure = with(r#""profile":"full","target":"azure","#).unwrap();
        assert_eq!(
            azure,
            "Azure Container Apps (profile full): the service's own timings"
        );
        assert_eq!(with(""), None);
    }
}
