//! The lab file of an analysis: `lab.toml` in an evidence pack (or `--lab`), read into the lab
//! crate's [`lab::Lab`] (the one type of the format) by [`lab::parse_recorded`]: with the profile
//! the run used, not validated, keys this version does not know skipped and named. Beside it,
//! the analysis' own questions of a lab: the phase of a run ([`phase_of`]) and the evidence cap
//! ([`evidence_cap`]). Every key is documented in docs/LAB-FILE.md; the analysis reads
//! `kind`, `[hypothesis]`, `[rule]`, `[preconditions]`, `[phases]`, `[[load]]` (name, rate,
//! target), `[[steps]]` (name, phase, staircase, events, action), `[[checks]]`, `[[jobs]]` and
//! `[campaign]`.
//!
//! Without a lab file the analysis judges a [`Lab::default`]: nothing pre-registered, the
//! command line's rule.

use std::path::Path;

use lab::{Lab, Recorded};

use crate::Error;
use crate::read::evidence::Level;
use crate::read::runs::RunsRecord;

/// The file of an evidence pack that names the profile the lab ran with.
pub const PROFILE_FILE: &str = "profile";

/// Reads a lab file with the profile the run used: in an evidence pack the `profile` file beside
/// `lab.toml` names it (the runner writes it), and its `[profiles.<name>]` overlay is applied as
/// the runner applied it (so a quick profile's shorter check `within` is the one judged).
/// Without that file: the file as written.
pub fn read(path: &Path) -> Result<Recorded, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let profile = path
        .parent()
        .and_then(|d| std::fs::read_to_string(d.join(PROFILE_FILE)).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty());
    lab::parse_recorded(&text, path, profile.as_deref()).map_err(|e| Error::Lab {
        path: path.display().to_string(),
        msg: e.to_string(),
    })
}

/// The hypothesis, when the lab states one.
pub fn hypothesis(lab: &Lab) -> Option<&str> {
    Some(lab.hypothesis.text.as_str()).filter(|t| !t.is_empty())
}

/// The evidence cap, when the lab sets one.
pub fn evidence_cap(lab: &Lab) -> Result<Option<Level>, Error> {
    match &lab.hypothesis.evidence_cap {
        None => Ok(None),
        Some(s) => Level::parse(s).map(Some).ok_or_else(|| Error::Lab {
            path: "lab.toml".into(),
            msg: format!("unknown evidence level {s:?} in [hypothesis] evidence_cap"),
        }),
    }
}

/// The phase of a run: the lab's `[phases]` prefixes first (longest prefix wins); then the
/// phase of the step whose load runs list it in `runs.json` (that step's `phase` in the lab
/// file, else in `runs.json`); then the lab's step phases as run id prefixes (`<phase>-`, as the
/// runner names runs; for logs without `runs.json`; longest wins); then the built-in prefixes,
/// then `other`.
pub fn phase_of(lab: &Lab, run_id: &str, runs: Option<&RunsRecord>) -> String {
    let mut best: Option<(&str, usize)> = None;
    for (name, p) in &lab.phases {
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
        let in_lab = lab.step(&step.name).map(|s| s.phase.as_str());
        match in_lab {
            Some(p) if !p.is_empty() => return p.to_owned(),
            _ if !step.phase.is_empty() => return step.phase.clone(),
            _ => {}
        }
    }
    let by_prefix = lab
        .step_phases()
        .into_iter()
        .filter(|p| run_id.starts_with(&format!("{p}-")))
        .max_by_key(|p| p.len());
    if let Some(p) = by_prefix {
        return p.to_owned();
    }
    default_phase(run_id).to_owned()
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A test's lab subset, completed and read as a pack's lab file is.
    fn parse(subset: &str) -> Lab {
        parse_with_profile(subset, None)
    }

    fn parse_with_profile(subset: &str, profile: Option<&str>) -> Lab {
        let text = testkit::pack::complete_lab(subset);
        lab::parse_recorded(&text, Path::new("lab.toml"), profile)
            .unwrap()
            .lab
    }

    #[test]
    fn skips_and_names_keys_it_does_not_know_and_reads_the_rest() {
        let text = testkit::pack::complete_lab(
            r#"
            title = "startup degraded"
            color = "blue"
            [hypothesis]
            text = "no 5xx"
            evidence_cap = "[Strongly Suggested]"
            [rule]
            window = "10s"
            consecutive = 3
            threshold_pct = 0.5
            flavour = "strict"
            [phases]
            baseline = "warmup-"
            [[steps]]
            name = "baseline"
            phase = "baseline"
            [[steps]]
            name = "perturbation"
            phase = "perturbation"
            note = "from a later version"
            "#,
        );
        let read = lab::parse_recorded(&text, Path::new("lab.toml"), None).unwrap();
        assert_eq!(
            read.skipped,
            ["color", "rule.flavour", "steps[1].note"],
            "each unknown key is named once, by its path"
        );
        let lab = read.lab;
        assert_eq!(lab.rule.as_ref().map(|r| r.consecutive), Some(3));
        assert_eq!(lab.steps.len(), 2);
        assert_eq!(evidence_cap(&lab).unwrap(), Some(Level::StronglySuggested));
        assert_eq!(phase_of(&lab, "warmup-1", None), "baseline");
        assert_eq!(
            phase_of(&lab, "supplemental-restart-2", None),
            "supplemental-restart"
        );
        assert_eq!(phase_of(&lab, "x", None), "other");
    }

    /// An observation lab's runs are named after its own step phases (`split-main-<stamp>`):
    /// the phase is the step's, from runs.json's step that ran it or, without runs.json, from
    /// the run id's prefix; `[phases]` still wins, and an unknown run is `other`.
    #[test]
    fn a_runs_phase_is_its_steps_phase() {
        let lab = parse(
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
        );
        let runs = RunsRecord::parse(
            r#"{"started":"2026-01-01T00:00:00.000Z","steps":[
                {"name":"split","phase":"split","start":"2026-01-01T00:00:00.000Z",
                 "runs":[{"load":"main","run_id":"odd-name-1"}]},
                {"name":"gone","phase":"gone-phase","start":"2026-01-01T00:00:00.000Z",
                 "runs":[{"load":"main","run_id":"gone-main-1"}]}]}"#,
        )
        .unwrap();
        let r = Some(&runs);
        assert_eq!(phase_of(&lab, "odd-name-1", r), "split");
        assert_eq!(phase_of(&lab, "gone-main-1", r), "gone-phase");
        assert_eq!(phase_of(&lab, "split-main-20260101T000000Z", None), "split");
        assert_eq!(phase_of(&lab, "split-late-main-1", None), "split-late");
        assert_eq!(phase_of(&lab, "baseline-main-1", None), "baseline");
        assert_eq!(phase_of(&lab, "settle-1", r), "steady");
        assert_eq!(phase_of(&lab, "nothing-1", r), "other");
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
            let lab = parse(&format!("{extra}\n{steps}"));
            crate::judge::rule::Rule::default().with_lab(&lab).unwrap()
        };
        let default = rule("");
        assert!(default.judges("warmup") && default.judges("perturbation"));
        assert!(default.judges("other"));
        assert!(!default.judges("baseline") && !default.judges("preflight"));
        let named = rule(
            "[rule]\nwindow = \"10s\"\nconsecutive = 3\nthreshold_pct = 0.5\nphases = [\"perturbation\"]",
        );
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
        let full = parse(WITH_QUICK);
        assert_eq!(full.checks[0].within.as_deref(), Some("150s"));
        let quick = parse_with_profile(WITH_QUICK, Some("quick"));
        assert_eq!(quick.checks.len(), 2);
        assert_eq!(quick.checks[0].within.as_deref(), Some("75s"));
        assert_eq!(
            quick.checks[0].min,
            Some(2.0),
            "the rest of the check is kept"
        );
        let named_full = parse_with_profile(WITH_QUICK, Some("full"));
        assert_eq!(named_full.checks[0].within.as_deref(), Some("150s"));
        let whole = testkit::pack::complete_lab(WITH_QUICK);
        assert!(lab::parse_recorded(&whole, Path::new("lab.toml"), Some("slow")).is_err());

        // In a pack, the `profile` file beside lab.toml picks the overlay.
        let dir = tempfile::tempdir().unwrap();
        let lab = dir.path().join("lab.toml");
        std::fs::write(&lab, whole).unwrap();
        assert_eq!(
            read(&lab).unwrap().lab.checks[0].within.as_deref(),
            Some("150s")
        );
        std::fs::write(dir.path().join(PROFILE_FILE), "quick\n").unwrap();
        assert_eq!(
            read(&lab).unwrap().lab.checks[0].within.as_deref(),
            Some("75s")
        );
    }
}
