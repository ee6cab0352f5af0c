//! lab: the lab file, a pre-registered experiment.
//!
//! A lab file (`labs/*.toml`) states the question, the hypothesis and the binding rule before
//! anything runs, then the apps under test, the load, the steps (baseline, perturbation events,
//! preflight staircase) and, for labs that are observations rather than falsification tests, the
//! checks the analysis evaluates. One file serves both targets: the apps are rendered into the
//! same Microsoft.App ARM bodies for Azure and for localplane ([`arm_body`]).
//!
//! - [`schema`]: the types and their validation;
//! - [`profile`]: `[profiles.<name>]` overlays (`full` is the file itself, `quick` the same shape
//!   in minutes);
//! - [`arm_body`]: a lab app as a `containerApps` PUT body.

pub mod arm_body;
pub mod profile;
pub mod schema;

pub use schema::{Action, App, Check, Lab, LabKind, Load, Step};

use std::path::{Path, PathBuf};

/// Why a lab file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error("cannot read lab file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not valid TOML: {msg}")]
    Toml { path: PathBuf, msg: String },
    #[error("{path}: profile {profile:?} is not defined (defined: {defined})")]
    UnknownProfile {
        path: PathBuf,
        profile: String,
        defined: String,
    },
    #[error("{path} (profile {profile}): {msg}")]
    Schema {
        path: PathBuf,
        profile: String,
        msg: String,
    },
    #[error("{path} (profile {profile}): invalid lab: {msg}")]
    Invalid {
        path: PathBuf,
        profile: String,
        msg: String,
    },
}

/// Reads a lab file and applies a profile (`full` means the file as written, unless it defines
/// a `[profiles.full]` overlay).
pub fn load(path: &Path, profile: &str) -> Result<Lab, LabError> {
    let text = std::fs::read_to_string(path).map_err(|source| LabError::Read {
        path: path.to_owned(),
        source,
    })?;
    parse(&text, path, profile)
}

/// Parses lab text (see [`load`]); `path` is used in messages only.
pub fn parse(text: &str, path: &Path, profile: &str) -> Result<Lab, LabError> {
    let doc: toml::Table = toml::from_str(text).map_err(|e| LabError::Toml {
        path: path.to_owned(),
        msg: e.to_string(),
    })?;
    let merged = profile::apply(doc, profile).map_err(|defined| LabError::UnknownProfile {
        path: path.to_owned(),
        profile: profile.to_owned(),
        defined,
    })?;
    let lab: Lab = toml::Value::Table(merged)
        .try_into()
        .map_err(|e: toml::de::Error| LabError::Schema {
            path: path.to_owned(),
            profile: profile.to_owned(),
            msg: e.to_string(),
        })?;
    lab.validate().map_err(|msg| LabError::Invalid {
        path: path.to_owned(),
        profile: profile.to_owned(),
        msg,
    })?;
    Ok(lab)
}
