//! The subset of the runner's `runs.json` the analysis reads: each step's time span, its load
//! runs (load name → run_id; a sampler execution per event carries `event` and, as `run_id`,
//! that event's perturbation id), its recorded actions (each with its event's
//! `perturbation_id`), and the top-level `log_write_failures`. Unknown keys are ignored.
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

use serde::Deserialize;

use crate::Error;
use crate::ts::parse_ms;

/// The file name in an evidence pack.
pub const RUNS_FILE: &str = "runs.json";

/// `runs.json`.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct RunsFile {
    /// The profile the lab ran with (`full`, `quick`).
    #[serde(default)]
    pub profile: String,
    /// `local` (localplane) or `azure`.
    #[serde(default)]
    pub target: String,
    /// localplane's platform timings (`fast`, `recorded`); absent on Azure.
    #[serde(default)]
    pub localplane_timings: Option<String>,
    /// Each app's emulator knobs (app → `localplane.*` tag → value); absent on Azure and in
    /// packs written before the runner recorded them.
    #[serde(default)]
    pub localplane_knobs: Option<BTreeMap<String, BTreeMap<String, String>>>,
    #[serde(default)]
    pub started: String,
    #[serde(default)]
    pub ended: Option<String>,
    #[serde(default)]
    pub incomplete: bool,
    #[serde(default)]
    pub steps: Vec<StepRec>,
    /// Log rows the runner could not write (each one makes `data_complete` fail).
    #[serde(default)]
    pub log_write_failures: Vec<LogWriteFailure>,
}

impl RunsFile {
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

/// A log file the runner failed to write to (`runs.json` `log_write_failures[]`).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct LogWriteFailure {
    /// Path relative to the pack.
    #[serde(default)]
    pub file: String,
    #[serde(default)]
    pub error: String,
    #[serde(default)]
    pub first_failed_ts: String,
    #[serde(default)]
    pub rows_lost: u64,
}

/// One step of the schedule.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct StepRec {
    pub name: String,
    #[serde(default)]
    pub phase: String,
    pub start: String,
    #[serde(default)]
    pub end: Option<String>,
    #[serde(default)]
    pub runs: Vec<RunRec>,
    #[serde(default)]
    pub actions: Vec<ActionRec>,
}

/// One load (or sampler) execution of a step.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct RunRec {
    pub load: String,
    pub run_id: String,
    /// For a sampler execution of one event: its 1-based event number (its `run_id` is then
    /// that event's perturbation id).
    #[serde(default)]
    pub event: Option<u32>,
    /// The execution's final status, or why it did not start.
    #[serde(default)]
    pub status: Option<String>,
}

/// One fired action.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct ActionRec {
    #[serde(default)]
    pub event: u32,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub app: String,
    pub ts: String,
    /// `ok` or `failed`.
    #[serde(default)]
    pub outcome: String,
    #[serde(default)]
    pub status: Option<u16>,
    #[serde(default)]
    pub dur_ms: u64,
    #[serde(default)]
    pub detail: String,
    /// The event's own perturbation id (`<step>-event-<N>-<stamp>`); absent in packs written
    /// before per-event ids.
    #[serde(default)]
    pub perturbation_id: Option<String>,
}

impl RunsFile {
    /// Reads `runs.json`.
    pub fn read(path: &Path) -> Result<RunsFile, Error> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        Self::parse(&text).map_err(|e| Error::Internal(format!("{}: {e}", path.display())))
    }

    pub fn parse(text: &str) -> Result<RunsFile, serde_json::Error> {
        serde_json::from_str(text)
    }

    pub fn step(&self, name: &str) -> Option<&StepRec> {
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

impl StepRec {
    pub fn start_ms(&self) -> Option<i64> {
        parse_ms(&self.start)
    }

    pub fn end_ms(&self) -> Option<i64> {
        self.end.as_deref().and_then(parse_ms)
    }

    /// The sampler execution of event `n`, when the runner recorded one.
    pub fn sampler_of(&self, n: u32) -> Option<&RunRec> {
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
        let r = RunsFile::parse(
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
            RunsFile::parse(&format!(
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
