//! The part of a lab file (`lab.toml` in an evidence pack) the analysis reads.
//!
//! The orchestrator defines the full lab format (`labs/*.toml`, the `lab` crate); the analysis
//! reads only the tables below. `[hypothesis]`, `[preconditions]` and `[[checks]]` are the lab
//! crate's own types (one definition of each); in the others, and at the top level, every other
//! key is ignored, so the lab format can grow freely:
//!
//! ```toml
//! [hypothesis]
//! text = "A rolling rollout with a 25 s startup hides every 5xx from clients."
//! evidence_cap = "Strongly Suggested"   # strongest level any attribution may carry
//!
//! [rule]                 # the binding falsification rule
//! window = "10s"         # or window_s = 10
//! consecutive = 3        # K consecutive windows ...
//! threshold_pct = 0.5    # ... each with err_pct strictly above this
//! phases = ["perturbation", "supplemental-restart"]   # phases the rule judges
//!
//! [preconditions]        # each `true` makes missing data a failed precondition
//! baseline_clean = true
//! headroom = true
//! headroom_factor = 5.0  # p50(at the load's rate) / p50(at the staircase step below) must reach this
//! perturbations_observed = true
//! expected_perturbations = 12
//!
//! [phases]               # phase name = run_id prefix(es); otherwise the built-in prefixes
//! baseline = "baseline-"
//! perturbation = ["perturbation-", "rollout-"]
//!
//! [[load]]              # name and rate: the rate the headroom gate looks for in the staircase
//! name = "main"
//! rate = 200
//!
//! [[steps]]             # name, staircase, events, action kind/app: what was scheduled
//! name = "perturbation"
//! events = 12
//! action = { kind = "rollout", app = "subject" }
//! ```
//!
//! An observation lab (`kind = "observation"`) has `[[checks]]` entries instead of a rule
//! (`lab::Check`: `name, kind, app, load, scenario, step, probe, status, min, max, within`, each
//! kind's parameters in `lab::checks`; evaluated by [`crate::judge::checks`]).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::Error;
use crate::read::runs::RunsRecord;

/// Why a lab file's text could not be read as a [`LabFile`] (printed after the file's path by
/// [`Error::Lab`]).
#[derive(Debug, thiserror::Error)]
pub enum LabFileError {
    /// Not TOML, or TOML whose values do not have the types the analysis reads.
    #[error("{0}")]
    Toml(toml::de::Error),
    /// `--profile` (or the pack's profile file) names a profile the lab file does not define.
    #[error("profile {name:?} is not defined in the lab file (defined: {defined})")]
    UndefinedProfile { name: String, defined: String },
}
use crate::read::evidence::Level;

/// The lab file subset (every table optional, unknown keys ignored).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct LabFile {
    /// `falsification` (default) or `observation` (the verdict comes from `[[checks]]`).
    #[serde(default)]
    pub kind: Option<String>,
    /// `[hypothesis]`, when the file has one.
    #[serde(default)]
    pub hypothesis: Option<Hypothesis>,
    #[serde(default)]
    pub rule: RuleSpec,
    #[serde(default)]
    pub preconditions: Preconditions,
    #[serde(default)]
    pub phases: BTreeMap<String, Prefixes>,
    /// `[[checks]]`: the expected observations of an observation lab ([`crate::judge::checks`]).
    #[serde(default)]
    pub checks: Vec<CheckSpec>,
    /// `[[jobs]]`: the jobs under test (the lab crate's type), read by the job checks.
    #[serde(default)]
    pub jobs: Vec<lab::Job>,
    /// `[[load]]`: each load's name and rate (the headroom gate's "lab's load rate").
    #[serde(default)]
    pub load: Vec<LoadSpec>,
    /// `[[steps]]`: each step's name, staircase and scheduled events.
    #[serde(default)]
    pub steps: Vec<StepSpec>,
    /// `[campaign]`: how several runs are judged together ([`crate::campaign`]).
    #[serde(default)]
    pub campaign: lab::Campaign,
}

/// One `[[load]]` entry (only what the analysis reads).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct LoadSpec {
    pub name: String,
    #[serde(default)]
    pub rate: Option<f64>,
    /// The app whose ingress it targets (absent in a hand-written lab subset).
    #[serde(default)]
    pub target: Option<String>,
}

/// One `[[steps]]` entry (only what the analysis reads).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct StepSpec {
    pub name: String,
    #[serde(default)]
    pub phase: Option<String>,
    #[serde(default)]
    pub staircase: Vec<f64>,
    /// How many times the step's action is scheduled.
    #[serde(default)]
    pub events: Option<u32>,
    #[serde(default)]
    pub action: Option<ActionSpec>,
}

/// A step's `action` (its kind and app).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct ActionSpec {
    pub kind: String,
    #[serde(default)]
    pub app: Option<String>,
}

/// One `[[checks]]` entry: the lab crate's type, where the kinds and their parameters are
/// defined and validated (`lab::checks`); an unknown kind reads as `CheckKind::Unknown`.
pub use lab::Check as CheckSpec;

/// `[hypothesis]`: the lab crate's type (`lab::Hypothesis`: `text`, `evidence_cap`, `expect`),
/// so a key the lab format does not know is an error here as it is there.
pub use lab::Hypothesis;

/// `[rule]`: every key optional; missing ones come from the command line defaults (so not
/// `lab::Rule`, whose `window`, `consecutive` and `threshold_pct` a lab must write; analysis also
/// takes `window_s`, the original lab's form).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct RuleSpec {
    pub window: Option<String>,
    pub window_s: Option<u64>,
    pub consecutive: Option<u32>,
    pub threshold_pct: Option<f64>,
    pub phases: Option<Vec<String>>,
}

/// `[preconditions]`: the lab crate's type (`lab::Preconditions`: `baseline_clean`, `headroom`,
/// `headroom_factor` (default [`crate::judge::verdict::DEFAULT_HEADROOM_FACTOR`], 5),
/// `perturbations_observed` (every fired event of `runs.json` observed, [`crate::judge::events`]),
/// `expected_perturbations`).
pub use lab::Preconditions;

/// A phase's run_id prefix, one or several.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum Prefixes {
    One(String),
    Many(Vec<String>),
}

impl Prefixes {
    fn iter(&self) -> Box<dyn Iterator<Item = &str> + '_> {
        match self {
            Prefixes::One(s) => Box::new(std::iter::once(s.as_str())),
            Prefixes::Many(v) => Box::new(v.iter().map(String::as_str)),
        }
    }
}

impl LabFile {
    /// Reads and parses a lab file, with the profile the run used: in an evidence pack the
    /// `profile` file beside `lab.toml` names it (the runner writes it), and its
    /// `[profiles.<name>]` overlay is applied as the runner applied it (so a quick profile's
    /// shorter check `within` is the one judged). Without that file: the file as written.
    pub fn read(path: &Path) -> Result<LabFile, Error> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        let profile = path
            .parent()
            .and_then(|d| std::fs::read_to_string(d.join(PROFILE_FILE)).ok())
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty());
        Self::parse_with_profile(&text, profile.as_deref()).map_err(|e| Error::Lab {
            path: path.display().to_string(),
            msg: e.to_string(),
        })
    }

    /// Parses the text of a lab file as written (no profile applied).
    pub fn parse(text: &str) -> Result<LabFile, LabFileError> {
        Self::parse_with_profile(text, None)
    }

    /// Parses the text of a lab file with `[profiles.<profile>]` merged over it (`full`, or a
    /// profile the file does not define as `full`, is the file as written; any other undefined
    /// profile is an error). The merge is `lab::profile::apply`, the one the runner uses: tables key
    /// by key, arrays of tables with a `name` element by element on that name, every other value
    /// replaced.
    pub fn parse_with_profile(text: &str, profile: Option<&str>) -> Result<LabFile, LabFileError> {
        let mut doc: toml::Table = toml::from_str(text).map_err(LabFileError::Toml)?;
        if let Some(name) = profile {
            doc = lab::profile::apply(doc, name).map_err(|defined| {
                LabFileError::UndefinedProfile {
                    name: name.to_owned(),
                    defined: defined.to_string(),
                }
            })?;
        } else {
            doc.remove("profiles");
        }
        toml::Value::Table(doc)
            .try_into()
            .map_err(LabFileError::Toml)
    }

    /// The rate of the load named `name`, or of the lab's only load when `name` is `None`.
    pub fn load_rate(&self, name: Option<&str>) -> Option<f64> {
        match name {
            Some(n) => self.load.iter().find(|l| l.name == n)?.rate,
            None if self.load.len() == 1 => self.load[0].rate,
            None => None,
        }
    }

    /// Whether the verdict comes from `[[checks]]` (`kind = "observation"`).
    pub fn is_observation(&self) -> bool {
        self.kind.as_deref() == Some("observation")
    }

    /// The evidence cap, when the lab sets one.
    pub fn cap(&self) -> Result<Option<Level>, Error> {
        match self
            .hypothesis
            .as_ref()
            .and_then(|h| h.evidence_cap.as_ref())
        {
            None => Ok(None),
            Some(s) => Level::parse(s).map(Some).ok_or_else(|| Error::Lab {
                path: "lab.toml".into(),
                msg: format!("unknown evidence level {s:?} in [hypothesis] evidence_cap"),
            }),
        }
    }

    /// The phase of a run: the lab's `[phases]` prefixes first (longest prefix wins); then the
    /// phase of the step whose load runs list it in `runs.json` (that step's `phase` in the lab
    /// file, else in `runs.json`); then the lab's step phases as run id prefixes (`<phase>-`,
    /// as the runner names runs; for logs without `runs.json`; longest wins); then the built-in
    /// prefixes, then `other`.
    pub fn phase_of(&self, run_id: &str, runs: Option<&RunsRecord>) -> String {
        let mut best: Option<(&str, usize)> = None;
        for (name, p) in &self.phases {
            for prefix in p.iter() {
                if run_id.starts_with(prefix) && best.is_none_or(|(_, l)| prefix.len() > l) {
                    best = Some((name, prefix.len()));
                }
            }
        }
        if let Some((name, _)) = best {
            return name.to_owned();
        }
        let recorded = runs.and_then(|r| {
            r.steps
                .iter()
                .find(|s| s.runs.iter().any(|x| x.run_id == run_id))
        });
        if let Some(step) = recorded {
            let in_lab = self
                .steps
                .iter()
                .find(|s| s.name == step.name)
                .and_then(|s| s.phase.as_deref());
            match in_lab {
                Some(p) if !p.is_empty() => return p.to_owned(),
                _ if !step.phase.is_empty() => return step.phase.clone(),
                _ => {}
            }
        }
        let by_prefix = self
            .steps
            .iter()
            .filter_map(|s| s.phase.as_deref())
            .filter(|p| !p.is_empty() && run_id.starts_with(&format!("{p}-")))
            .max_by_key(|p| p.len());
        if let Some(p) = by_prefix {
            return p.to_owned();
        }
        default_phase(run_id).to_owned()
    }

    /// The phases of the lab's steps, each once, in step order.
    pub fn step_phases(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for p in self.steps.iter().filter_map(|s| s.phase.as_deref()) {
            if !p.is_empty() && !out.contains(&p) {
                out.push(p);
            }
        }
        out
    }
}

/// The phase implied by the original lab's run_id prefixes.
pub fn default_phase(run_id: &str) -> &'static str {
    for (prefix, phase) in [
        ("baseline-", "baseline"),
        ("perturbation-", "perturbation"),
        ("supplemental-restart-", "supplemental-restart"),
        ("preflight-", "preflight"),
    ] {
        if run_id.starts_with(prefix) {
            return phase;
        }
    }
    "other"
}

/// The file of an evidence pack that names the profile the lab ran with.
pub const PROFILE_FILE: &str = "profile";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerates_extra_keys_and_reads_the_subset() {
        let lab = LabFile::parse(
            r#"
            title = "startup degraded"
            [hypothesis]
            text = "no 5xx"
            evidence_cap = "[Strongly Suggested]"
            [rule]
            window = "10s"
            consecutive = 3
            threshold_pct = 0.5
            [phases]
            baseline = "warmup-"
            [[apps]]
            name = "subject"
            "#,
        )
        .unwrap();
        assert_eq!(lab.rule.consecutive, Some(3));
        assert_eq!(lab.cap().unwrap(), Some(Level::StronglySuggested));
        assert_eq!(lab.phase_of("warmup-1", None), "baseline");
        assert_eq!(
            lab.phase_of("supplemental-restart-2", None),
            "supplemental-restart"
        );
        assert_eq!(lab.phase_of("x", None), "other");
    }

    /// An observation lab's runs are named after its own step phases (`split-main-<stamp>`):
    /// the phase is the step's, from runs.json's step that ran it or, without runs.json, from
    /// the run id's prefix; `[phases]` still wins, and an unknown run is `other`.
    #[test]
    fn a_runs_phase_is_its_steps_phase() {
        let lab = LabFile::parse(
            r#"
            kind = "observation"
            [phases]
            steady = "settle-"
            [[steps]]
            name = "baseline"
            phase = "baseline"
            [[steps]]
            name = "split"
            phase = "split"
            [[steps]]
            name = "split-late"
            phase = "split-late"
            [[steps]]
            name = "steady"
            phase = "steady"
            "#,
        )
        .unwrap();
        let runs = RunsRecord::parse(
            r#"{"started":"2026-01-01T00:00:00.000Z","steps":[
                {"name":"split","phase":"split","start":"2026-01-01T00:00:00.000Z",
                 "runs":[{"load":"main","run_id":"odd-name-1"}]},
                {"name":"gone","phase":"gone-phase","start":"2026-01-01T00:00:00.000Z",
                 "runs":[{"load":"main","run_id":"gone-main-1"}]}]}"#,
        )
        .unwrap();
        let r = Some(&runs);
        assert_eq!(lab.phase_of("odd-name-1", r), "split");
        assert_eq!(lab.phase_of("gone-main-1", r), "gone-phase");
        assert_eq!(lab.phase_of("split-main-20260101T000000Z", None), "split");
        assert_eq!(lab.phase_of("split-late-main-1", None), "split-late");
        assert_eq!(lab.phase_of("baseline-main-1", None), "baseline");
        assert_eq!(lab.phase_of("settle-1", r), "steady");
        assert_eq!(lab.phase_of("nothing-1", r), "other");
        assert_eq!(
            lab.step_phases(),
            ["baseline", "split", "split-late", "steady"]
        );
    }

    /// Runs that once read as `other` (judged by default) now read as their step's phase: a lab
    /// without `[rule] phases` judges those phases too, never the baseline or the preflight; a
    /// lab that names its phases judges only those.
    #[test]
    fn default_judged_phases_take_in_the_step_phases() {
        let steps = r#"
            [[steps]]
            name = "preflight"
            phase = "preflight"
            [[steps]]
            name = "baseline"
            phase = "baseline"
            [[steps]]
            name = "warmup"
            phase = "warmup"
            [[steps]]
            name = "perturbation"
            phase = "perturbation"
            "#;
        let rule = |extra: &str| {
            let lab = LabFile::parse(&format!("{extra}\n{steps}")).unwrap();
            crate::judge::rule::Rule::default().with_lab(&lab).unwrap()
        };
        let default = rule("");
        assert!(default.judges("warmup") && default.judges("perturbation"));
        assert!(default.judges("other"));
        assert!(!default.judges("baseline") && !default.judges("preflight"));
        let named = rule("[rule]\nphases = [\"perturbation\"]");
        assert_eq!(named.phases, ["perturbation"]);
    }

    const WITH_QUICK: &str = r#"
        kind = "observation"
        [[checks]]
        name = "restarts in a loop"
        kind = "restart_count_at_least"
        app = "rl"
        min = 2
        within = "150s"
        [[checks]]
        name = "never restarted"
        kind = "restart_count_at_most"
        app = "ro"
        [[profiles.quick.checks]]
        name = "restarts in a loop"
        within = "75s"
    "#;

    #[test]
    fn a_pack_is_judged_with_the_profile_it_ran_with() {
        let full = LabFile::parse(WITH_QUICK).unwrap();
        assert_eq!(full.checks[0].within.as_deref(), Some("150s"));
        let quick = LabFile::parse_with_profile(WITH_QUICK, Some("quick")).unwrap();
        assert_eq!(quick.checks.len(), 2);
        assert_eq!(quick.checks[0].within.as_deref(), Some("75s"));
        assert_eq!(
            quick.checks[0].min,
            Some(2.0),
            "the rest of the check is kept"
        );
        let named_full = LabFile::parse_with_profile(WITH_QUICK, Some("full")).unwrap();
        assert_eq!(named_full.checks[0].within.as_deref(), Some("150s"));
        assert!(LabFile::parse_with_profile(WITH_QUICK, Some("slow")).is_err());

        // In a pack, the `profile` file beside lab.toml picks the overlay.
        let dir = tempfile::tempdir().unwrap();
        let lab = dir.path().join("lab.toml");
        std::fs::write(&lab, WITH_QUICK).unwrap();
        assert_eq!(
            LabFile::read(&lab).unwrap().checks[0].within.as_deref(),
            Some("150s")
        );
        std::fs::write(dir.path().join(PROFILE_FILE), "quick\n").unwrap();
        assert_eq!(
            LabFile::read(&lab).unwrap().checks[0].within.as_deref(),
            Some("75s")
        );
    }
}
