//! lab: the lab file, a pre-registered experiment.
//!
//! A lab file (`labs/*.toml`) states the question, the hypothesis and the binding rule before
//! anything runs, then the apps under test, the load, the steps (baseline, perturbation events,
//! preflight staircase) and, for labs that are observations rather than falsification tests, the
//! checks the analysis evaluates. One file serves both targets: the apps are rendered into the
//! same Microsoft.App ARM bodies for Azure and for localplane ([`arm_body`]).
//!
//! [`load`] validates a lab completely before anything runs: the types and unknown keys (with the
//! key path of a wrong value), every cross-reference, every range, every `[[checks]]` entry
//! against its kind, the preconditions' demands on the schedule, and the profile invariant (a
//! profile may not change the pre-registration or weaken a precondition). [`parse_recorded`]
//! reads a finished run's copy into the same [`Lab`]: not validated, unknown keys skipped and
//! named (how the analysis reads an evidence pack).
//!
//! - [`schema`]: the types;
//! - [`action`]: a step's perturbation (`action = { kind = ... }`);
//! - [`job`]: the `[[jobs]]` under test (event-driven jobs);
//! - [`checks`]: the `[[checks]]` kinds and their parameters (the analysis evaluates them);
//! - [`validate`]: what serde cannot check, as [`validate::Problem`]s with key paths;
//! - [`profile`]: `[profiles.<name>]` overlays (`full` is the file itself, `quick` the same shape
//!   in minutes) and what an overlay may not do;
//! - [`describe`]: the catalogue line and the pre-registration in words (`labctl lab list/show`);
//! - [`arm_body`]: a lab app as a `containerApps` PUT body.

pub mod action;
pub mod arm_body;
pub mod checks;
pub mod describe;
pub mod job;
pub mod profile;
pub mod schema;
pub mod validate;

pub use checks::{CheckKind, Need};
pub use schema::{
    Action, App, Campaign, Check, EventTrigger, Hypothesis, Job, Lab, LabKind, Load,
    LocalplaneTimings, ManualTrigger, Preconditions, Prefixes, ScheduleTrigger, Step, TimeoutScope,
    Trigger,
};
pub use validate::{Problem, Problems};

use std::path::{Path, PathBuf};

/// Why a lab file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error("cannot read lab file {path}: {error}")]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{path}: not valid TOML: {msg}")]
    Toml { path: PathBuf, msg: String },
    #[error(
        "{path}: profile {profile:?} is not defined: no [profiles.{profile}] (defined: {defined})"
    )]
    UnknownProfile {
        path: PathBuf,
        profile: String,
        defined: String,
    },
    /// A key of the wrong type, a missing or an unknown key (`key` is its path, `.` the top).
    #[error("{path} (profile {profile}): {key}: {msg}")]
    Schema {
        path: PathBuf,
        profile: String,
        key: String,
        msg: String,
    },
    /// A profile of the file (any of them, not only the one asked for) changes the
    /// pre-registration or weakens a precondition.
    #[error("{path} (profile {profile}): {problems}")]
    Profile {
        path: PathBuf,
        profile: String,
        problems: Problems,
    },
    #[error("{path} (profile {profile}): invalid lab: {problems}")]
    Invalid {
        path: PathBuf,
        profile: String,
        problems: Problems,
    },
}

impl LabError {
    /// The key paths the error is about (empty for read, TOML and profile-name errors).
    pub fn keys(&self) -> Vec<&str> {
        match self {
            LabError::Schema { key, .. } => vec![key.as_str()],
            LabError::Profile { problems, .. } | LabError::Invalid { problems, .. } => {
                problems.0.iter().map(|p| p.key.as_str()).collect()
            }
            _ => Vec::new(),
        }
    }
}

/// A lab file as an evidence pack recorded it, read by [`parse_recorded`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Recorded {
    pub lab: Lab,
    /// The key paths this version of the format does not know, skipped (e.g. `steps[0].color`).
    pub skipped: Vec<String>,
}

/// Parses a lab file the way a judge reads a finished run's: `profile` applied as the runner
/// applied it (`None`: the file as written, its profiles dropped), **not validated** (a run is
/// judged by the lab it ran, even one a later validator would refuse), and every key this
/// version does not know skipped and named, so a pack written by an older or newer version still
/// reads. Into the same [`Lab`] as [`parse`]: a wrong type or a missing key is still an error.
pub fn parse_recorded(
    text: &str,
    path: &Path,
    profile: Option<&str>,
) -> Result<Recorded, LabError> {
    let mut doc: toml::Table = toml::from_str(text).map_err(|e| LabError::Toml {
        path: path.to_owned(),
        msg: e.to_string(),
    })?;
    let shown = profile.unwrap_or("as written");
    match profile {
        Some(name) => {
            doc = profile::apply(doc, name).map_err(|defined| LabError::UnknownProfile {
                path: path.to_owned(),
                profile: name.to_owned(),
                defined: defined.to_string(),
            })?;
        }
        None => {
            doc.remove("profiles");
        }
    }
    let mut doc = toml::Value::Table(doc);
    let mut skipped = Vec::new();
    loop {
        match serde_path_to_error::deserialize::<_, Lab>(doc.clone()) {
            Ok(lab) => return Ok(Recorded { lab, skipped }),
            Err(e) => {
                let key = e.path().to_string();
                let msg = e.into_inner().message().trim().to_owned();
                let removed = unknown_field(&msg).and_then(|f| remove_key(&mut doc, &key, f));
                match removed {
                    Some(at) => skipped.push(at),
                    None => {
                        return Err(LabError::Schema {
                            path: path.to_owned(),
                            profile: shown.to_owned(),
                            key,
                            msg,
                        });
                    }
                }
            }
        }
    }
}

/// The field serde's "unknown field `x`, expected ..." message names.
fn unknown_field(msg: &str) -> Option<&str> {
    let rest = msg.strip_prefix("unknown field `")?;
    rest.split_once('`').map(|(f, _)| f)
}

/// Removes `field` from the table at `at` (a serde_path_to_error path, which may already end in
/// the field) and returns the removed key's path, or `None` when there is no such key (so the
/// caller never loops).
fn remove_key(doc: &mut toml::Value, at: &str, field: &str) -> Option<String> {
    let segments: Vec<&str> = if at == "." {
        Vec::new()
    } else {
        at.split('.').collect()
    };
    for parents in [
        segments.as_slice(),
        segments.split_last().map_or(&[][..], |(_, p)| p),
    ] {
        if let Some(toml::Value::Table(t)) = walk(doc, parents)
            && t.remove(field).is_some()
        {
            let mut shown = parents.join(".");
            if !shown.is_empty() {
                shown.push('.');
            }
            shown.push_str(field);
            return Some(shown);
        }
    }
    None
}

/// The value at `path` (`steps[0]`, `action`, ... segments) in `doc`.
fn walk<'a>(doc: &'a mut toml::Value, path: &[&str]) -> Option<&'a mut toml::Value> {
    let mut at = doc;
    for seg in path {
        let (name, indexes) = match seg.split_once('[') {
            Some((n, rest)) => (n, Some(rest)),
            None => (*seg, None),
        };
        if !name.is_empty() {
            at = at.as_table_mut()?.get_mut(name)?;
        }
        for ix in indexes.into_iter().flat_map(|r| r.split('[')) {
            let i: usize = ix.trim_end_matches(']').parse().ok()?;
            at = at.as_array_mut()?.get_mut(i)?;
        }
    }
    Some(at)
}

/// Reads a lab file and applies a profile (`full` means the file as written, unless it defines
/// a `[profiles.full]` overlay), then validates it completely (see the crate docs).
pub fn load(path: &Path, profile: &str) -> Result<Lab, LabError> {
    let text = std::fs::read_to_string(path).map_err(|source| LabError::Read {
        path: path.to_owned(),
        error: source,
    })?;
    parse(&text, path, profile)
}

/// Parses lab text (see [`load`]); `path` is used in messages only.
pub fn parse(text: &str, path: &Path, profile: &str) -> Result<Lab, LabError> {
    let doc: toml::Table = toml::from_str(text).map_err(|e| LabError::Toml {
        path: path.to_owned(),
        msg: e.to_string(),
    })?;
    let problems = profile::all_invariant_problems(&doc);
    if !problems.is_empty() {
        return Err(LabError::Profile {
            path: path.to_owned(),
            profile: profile.to_owned(),
            problems: Problems(problems),
        });
    }
    let merged = profile::apply(doc, profile).map_err(|defined| LabError::UnknownProfile {
        path: path.to_owned(),
        profile: profile.to_owned(),
        defined: defined.to_string(),
    })?;
    let lab: Lab = serde_path_to_error::deserialize(toml::Value::Table(merged)).map_err(
        |e: serde_path_to_error::Error<toml::de::Error>| {
            let key = e.path().to_string();
            LabError::Schema {
                path: path.to_owned(),
                profile: profile.to_owned(),
                key: if key == "." {
                    "(top level)".into()
                } else {
                    key
                },
                msg: e.into_inner().message().trim().to_owned(),
            }
        },
    )?;
    lab.validate().map_err(|problems| LabError::Invalid {
        path: path.to_owned(),
        profile: profile.to_owned(),
        problems,
    })?;
    Ok(lab)
}
