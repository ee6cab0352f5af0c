//! A step's perturbation: the `action` table of a `[[steps]]` entry, tagged by `kind`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A perturbation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Action {
    /// A template change: `ROLLOUT_GENERATION` set to the event number, so a new revision rolls out.
    Rollout { app: String },
    /// Revision restart of the app's active revision.
    Restart { app: String },
    /// Change the dependency app at run time (`POST /admin/dependency`), restored after
    /// `restore_after` when given.
    Dependency {
        app: String,
        #[serde(default)]
        healthy: Option<bool>,
        #[serde(default)]
        delay_ms: Option<u64>,
        #[serde(default)]
        fail_rate: Option<f64>,
        #[serde(default)]
        restore_after: Option<String>,
    },
    /// `POST /simulate/<mode>` on the app (`zombie`, `deadlock`, `crash`, `reset`).
    Simulate {
        app: String,
        mode: String,
        #[serde(default)]
        restore_after: Option<String>,
    },
    /// One blocking request (e.g. `/delay?seconds=60`) through the app's ingress.
    Saturate { app: String, path: String },
    /// Set env vars on the app's template (a new revision), e.g. to switch `SHUTDOWN_MODE`.
    SetEnv {
        app: String,
        env: BTreeMap<String, String>,
    },
    /// A new revision named `<app>--<suffix>` (with `env` set on its container), and, in the
    /// same ARM call, `traffic` when given: how a canary or a blue/green deployment creates its
    /// second revision without giving it traffic yet.
    Revision {
        app: String,
        suffix: String,
        #[serde(default)]
        env: BTreeMap<String, String>,
        #[serde(default)]
        traffic: Vec<TrafficEntry>,
    },
    /// New `ingress.traffic` weights (multiple mode) in one ARM call: a split or a switch.
    Traffic {
        app: String,
        traffic: Vec<TrafficEntry>,
    },
    /// Deactivates the revision `<app>--<revision>` (multiple mode).
    Deactivate { app: String, revision: String },
    /// Platform maintenance of the app: every replica moved once, one at a time, in the form
    /// its `maintenance` knob selects (localplane only: Container Apps starts its maintenance
    /// itself, never on request).
    Maintenance { app: String },
    /// `POST /queue?items=N` through the app's ingress: `items` work items for an event-driven
    /// job (the queue answers its totals, from which the run records the items' ids).
    Enqueue { app: String, items: u64 },
    /// `POST .../jobs/<job>/start` (`az containerapp job start`): one execution of a `[[jobs]]`
    /// entry; the run records its name.
    JobStart { job: String },
    /// `POST .../jobs/<job>/stop` (`az containerapp job stop`): every running execution of the
    /// job is stopped; the run records their names.
    JobStop { job: String },
}

impl Action {
    /// The action's `kind` as the lab file writes it (`rollout`, `set-env`, `job-start`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Action::Rollout { .. } => "rollout",
            Action::Restart { .. } => "restart",
            Action::Dependency { .. } => "dependency",
            Action::Simulate { .. } => "simulate",
            Action::Saturate { .. } => "saturate",
            Action::SetEnv { .. } => "set-env",
            Action::Revision { .. } => "revision",
            Action::Traffic { .. } => "traffic",
            Action::Deactivate { .. } => "deactivate",
            Action::Maintenance { .. } => "maintenance",
            Action::Enqueue { .. } => "enqueue",
            Action::JobStart { .. } => "job-start",
            Action::JobStop { .. } => "job-stop",
        }
    }

    /// The kind of the record the run writes when it undoes the action after `restore_after`
    /// (`dependency-restore`, `simulate-reset`); `None` for an action with nothing to undo.
    pub fn restore_kind(&self) -> Option<&'static str> {
        match self {
            Action::Dependency { .. } => Some("dependency-restore"),
            Action::Simulate { .. } => Some("simulate-reset"),
            _ => None,
        }
    }

    /// The app the action targets (`None` for a job action).
    pub fn app(&self) -> Option<&str> {
        Some(match self {
            Action::Rollout { app }
            | Action::Restart { app }
            | Action::Dependency { app, .. }
            | Action::Simulate { app, .. }
            | Action::Saturate { app, .. }
            | Action::SetEnv { app, .. }
            | Action::Revision { app, .. }
            | Action::Traffic { app, .. }
            | Action::Deactivate { app, .. }
            | Action::Maintenance { app }
            | Action::Enqueue { app, .. } => app,
            Action::JobStart { .. } | Action::JobStop { .. } => return None,
        })
    }

    /// The `[[jobs]]` entry the action targets (`None` for an app action).
    pub fn job(&self) -> Option<&str> {
        match self {
            Action::JobStart { job } | Action::JobStop { job } => Some(job),
            _ => None,
        }
    }

    /// What the action targets, app or job: for progress lines and records.
    pub fn target(&self) -> &str {
        self.app().or(self.job()).unwrap_or_default()
    }
}

/// One `ingress.traffic` entry: a weight for a revision named by its suffix (or for the latest
/// revision), with an optional label (its own FQDN, `<app>---<label>.<domain>`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrafficEntry {
    /// The revision's suffix (`blue` for `<app>--blue`); exclusive with `latest`.
    #[serde(default)]
    pub revision: Option<String>,
    /// The app's latest revision, whichever it is (`latestRevision: true`).
    #[serde(default)]
    pub latest: bool,
    pub weight: u32,
    #[serde(default)]
    pub label: Option<String>,
}
