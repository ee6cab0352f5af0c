//! The plane: every resource's state, the per-app controllers (replica counts, traffic switch,
//! deactivation, routing), long-running operations, and persistence to the state dir.
//!
//! Single revision mode: the latest revision takes all traffic once ready and the others are
//! deactivated. Multiple revision mode (`activeRevisionsMode: Multiple`): a new revision is
//! started and kept active beside the others, and each revision's traffic weight and labels
//! come from `configuration.ingress.traffic` ([`crate::traffic`]); no revision is deactivated
//! by the controller, and no revision autoscales (each runs `minReplicas`, at least 1).
//!
//! In both modes each change of a revision's traffic weight writes a `RevisionUpdate` system
//! row worded as Learn lists it (`Setting a traffic weight of N% for revision R`), and each
//! controller pass starts by purging the inactive revisions beyond `maxInactiveRevisions`
//! ([`crate::retention`]; no system row).
//!
//! The plane's jobs live in its submodules: [`views`] (the ARM bodies of apps, revisions and
//! replicas), [`controller`] (the per-app pass: scaling, provisioning, the traffic switch,
//! deactivation), [`scaling`] (one scaler step and its rows), [`replicas`] (starting, retiring
//! and replacing replicas) and [`routing`] (the ingress's routing table).

mod controller;
mod replicas;
mod routing;
mod scaling;
mod views;

pub use replicas::with_default_probes;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use logline::Timestamp;
use serde_json::Value;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::ingress::Routes;
use crate::job::Job;
use crate::logsink::Sink;
use crate::model::{IngressSpec, Knobs, TemplateSpec};
use crate::replica::{Replica, SupCtx};
use crate::runtime::Runtime;
use crate::scaler::Scaler;

/// Every environment's `defaultDomain` (its GET), the domain of the label host names.
pub const DEFAULT_DOMAIN: &str = "localplane.internal";

/// The localplane extension on a labelled `ingress.traffic[]` entry of an app GET (multiple
/// mode, with ingress): `{"host": <label host name>, "url": "http://127.0.0.1:<port>"}`.
pub const LABEL_EXTENSION: &str = "localplaneLabel";

/// How long localplane waits for a replica to become ready where nothing else bounds the wait
/// (a restart's or a maintenance's replacement): a new revision's default progress deadline.
pub const OPERATION_TIMEOUT: Duration = crate::model::DEFAULT_PROGRESS_DEADLINE;

pub struct Ctx {
    pub runtime: Runtime,
    pub sink: Sink,
    pub shutdown: CancellationToken,
    /// Fired by [`crate::Localplane::hurry`]: grace periods end at once (SIGKILL).
    pub hurry: CancellationToken,
    pub tracker: TaskTracker,
    pub base_url: String,
    pub state_dir: PathBuf,
    /// Replicas this host runs at most ([`crate::quota`]).
    pub max_replicas: u32,
}

pub struct Plane {
    state: Mutex<State>,
    peer_names: Mutex<Vec<String>>,
    /// The apps whose platform maintenance is under way ([`crate::maintenance`]), by [`key`].
    pub maintaining: Mutex<std::collections::HashSet<String>>,
    /// The replicas running, against each environment's cores quota and the host cap.
    pub quota: Arc<crate::quota::Ledger>,
    pub ctx: Ctx,
}

#[derive(Default)]
pub struct State {
    /// Resource groups created through the API (a group a resource names exists by use too).
    pub groups: BTreeMap<String, GroupRes>,
    pub envs: BTreeMap<String, EnvRes>,
    pub apps: BTreeMap<String, App>,
    pub jobs: BTreeMap<String, Job>,
    pub ops: HashMap<String, Op>,
    /// The scaler of each app's serving revision, by [`scaler_key`].
    pub scalers: HashMap<String, Scaler>,
}

#[derive(Clone, Debug)]
pub struct GroupRes {
    pub sub: String,
    pub name: String,
    pub location: String,
    pub tags: Value,
}

pub struct EnvRes {
    pub sub: String,
    pub rg: String,
    pub name: String,
    pub location: String,
    pub tags: Value,
    pub properties: Value,
}

pub struct App {
    pub sub: String,
    pub rg: String,
    pub name: String,
    pub location: String,
    pub tags: Value,
    /// `properties` as the client sent them (configuration, template, environment id, ...).
    pub properties: Value,
    pub knobs: Knobs,
    pub ingress: Option<IngressSpec>,
    pub ingress_port: Option<u16>,
    pub ingress_stop: CancellationToken,
    pub routes: Arc<Routes>,
    pub revisions: Vec<Revision>,
    /// Single mode: the revision all traffic goes to; `None` in multiple mode.
    pub traffic_rev: Option<String>,
    /// `activeRevisionsMode` is `Multiple`.
    pub multiple: bool,
    /// `configuration.ingress.traffic`, checked (acted on in multiple mode only).
    pub traffic_rules: Vec<crate::traffic::Rule>,
    pub notify: Arc<Notify>,
    pub pending_ops: Vec<String>,
    pub controller_stop: CancellationToken,
}

pub struct Revision {
    pub name: String,
    pub created: Timestamp,
    pub template: Value,
    pub spec: TemplateSpec,
    pub active: bool,
    pub traffic: u32,
    pub provisioned: bool,
    pub replicas: Vec<Arc<Replica>>,
    pub last_active: Timestamp,
    /// The replicas it scales to while it does not serve (set at each controller pass): in
    /// single mode, a new revision's count before it takes the traffic (the app's
    /// `NewRevisionReplicas`); otherwise its `minReplicas`, at least 1.
    pub target: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpStatus {
    InProgress,
    Succeeded,
    Failed,
}

#[derive(Debug, Clone)]
pub struct Op {
    pub id: String,
    pub sub: String,
    pub location: String,
    pub status: OpStatus,
    pub start: Timestamp,
    pub end: Option<Timestamp>,
    pub error: Option<(String, String)>,
    /// When it started, on the monotonic clock: a new revision's operation fails once its app's
    /// progress deadline has passed since.
    pub started: tokio::time::Instant,
    /// What the operation's result URL (`Location`) answers once it succeeded: ARM's 200 with
    /// the resource as it is then (the az CLI reads it: `job update` fails without), or `None`
    /// for 204 (a delete).
    pub result: Option<OpResult>,
}

/// The answer of a succeeded operation's result URL.
#[derive(Clone, Debug)]
pub enum OpResult {
    /// The resource with this ARM id, as its GET answers it when asked.
    Resource(String),
    /// A fixed body (a job start's execution name and id).
    Body(serde_json::Value),
}

impl App {
    pub fn id(&self) -> String {
        format!(
            "/subscriptions/{}/resourceGroups/{}/providers/Microsoft.App/containerApps/{}",
            self.sub, self.rg, self.name
        )
    }

    pub fn fqdn(&self) -> Option<String> {
        self.ingress_port.map(|p| format!("127.0.0.1:{p}"))
    }

    pub fn revision(&self, name: &str) -> Option<&Revision> {
        self.revisions
            .iter()
            .find(|r| r.name.eq_ignore_ascii_case(name))
    }

    pub fn revision_mut(&mut self, name: &str) -> Option<&mut Revision> {
        self.revisions
            .iter_mut()
            .find(|r| r.name.eq_ignore_ascii_case(name))
    }

    pub fn latest(&self) -> Option<&Revision> {
        self.revisions.last()
    }

    /// Removes the inactive revisions beyond `configuration.maxInactiveRevisions` that
    /// [`crate::retention::select`] picks (oldest by creation first; never the latest, single
    /// mode's serving revision, one a `revisionName` rule names, or one with a replica still
    /// running or stopping) and returns their names. Revision indices held before this call are
    /// stale after it. No system row is written: Azure's for a purge is not known.
    pub fn purge_inactive(&mut self) -> Vec<String> {
        let latest = self.revisions.len().checked_sub(1);
        // Oldest first by creation (a stable sort: ties keep the order they were added in).
        let mut order: Vec<usize> = (0..self.revisions.len()).collect();
        order.sort_by_key(|&i| self.revisions[i].created);
        let named = |name: &str| {
            self.traffic_rev
                .as_deref()
                .is_some_and(|t| t.eq_ignore_ascii_case(name))
                || self.traffic_rules.iter().any(|rule| {
                    matches!(&rule.target, crate::traffic::Target::Revision(n) if n.eq_ignore_ascii_case(name))
                })
        };
        let candidates: Vec<crate::retention::Candidate> = order
            .iter()
            .map(|&i| {
                let r = &self.revisions[i];
                crate::retention::Candidate {
                    inactive: !r.active,
                    pinned: Some(i) == latest || named(&r.name),
                    live: r.replicas.iter().any(|x| !x.is_done()),
                }
            })
            .collect();
        let limit = crate::retention::limit(&self.properties);
        let mut gone: Vec<usize> = crate::retention::select(&candidates, limit)
            .into_iter()
            .filter_map(|j| order.get(j).copied())
            .collect();
        // Highest index first, so the indices still to remove stay valid.
        gone.sort_unstable_by(|a, b| b.cmp(a));
        let mut names: Vec<String> = gone
            .into_iter()
            .map(|i| self.revisions.remove(i).name)
            .collect();
        names.reverse();
        names
    }

    /// Multiple mode: each revision's weight and the labels (`(label, revision index)`) the
    /// traffic rules give now; no rules means all traffic to the latest revision.
    /// `latestRevision` is the latest active revision that is provisioned (so traffic moves to
    /// a new revision once it is ready), or the latest revision while none is.
    pub fn split_targets(&self) -> (Vec<u32>, Vec<(String, usize)>) {
        let names: Vec<&str> = self.revisions.iter().map(|r| r.name.as_str()).collect();
        let latest = self
            .revisions
            .iter()
            .rposition(|r| r.active && r.provisioned)
            .or_else(|| self.revisions.len().checked_sub(1));
        let default = [crate::traffic::Rule {
            target: crate::traffic::Target::Latest,
            weight: 100,
            label: None,
        }];
        let rules: &[crate::traffic::Rule] = if self.traffic_rules.is_empty() {
            &default
        } else {
            &self.traffic_rules
        };
        crate::traffic::resolve(rules, &names, latest)
    }

    /// Single mode: `configuration.ingress.traffic` as localplane routes (a GET's view).
    /// The host name of label `label`'s URL, `<app>---<label>.<environment default domain>`, as
    /// Container Apps names it and as [`crate::traffic::split_host`] reads it.
    pub fn label_host(&self, label: &str) -> String {
        format!("{}---{label}.{DEFAULT_DOMAIN}", self.name)
    }
}

/// `<len>` random lowercase letters and digits.
pub fn random_suffix(len: usize) -> String {
    use rand::Rng;
    const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rng();
    (0..len)
        .map(|_| char::from(CHARS[rng.random_range(0..CHARS.len())]))
        .collect()
}

/// Lower-case key for a resource name (ARM names are case-insensitive).
pub fn key(name: &str) -> String {
    name.to_ascii_lowercase()
}

/// The key of an app's revision scaler in [`State::scalers`].
pub fn scaler_key(app: &str, revision: &str) -> String {
    format!("{}/{}", key(app), key(revision))
}

impl Plane {
    pub fn new(ctx: Ctx) -> Arc<Plane> {
        Arc::new(Plane {
            state: Mutex::new(State::default()),
            peer_names: Mutex::new(Vec::new()),
            maintaining: Mutex::new(std::collections::HashSet::new()),
            quota: crate::quota::Ledger::new(ctx.max_replicas),
            ctx,
        })
    }

    pub fn lock(&self) -> MutexGuard<'_, State> {
        match self.state.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    pub fn sup_ctx(&self, notify: Arc<Notify>, timings: crate::timings::Timings) -> SupCtx {
        SupCtx {
            runtime: self.ctx.runtime.clone(),
            sink: self.ctx.sink.clone(),
            notify,
            shutdown: self.ctx.shutdown.clone(),
            hurry: self.ctx.hurry.clone(),
            timings,
        }
    }

    /// Creates a long-running operation and returns its id.
    pub fn new_op(&self, st: &mut State, sub: &str, location: &str, done: bool) -> String {
        let id = format!(
            "{}-{}-{}-{}",
            random_suffix(8),
            random_suffix(4),
            random_suffix(4),
            random_suffix(12)
        );
        let now = Timestamp::now();
        st.ops.insert(
            id.clone(),
            Op {
                id: id.clone(),
                sub: sub.to_string(),
                location: location.to_ascii_lowercase().replace(' ', ""),
                status: if done {
                    OpStatus::Succeeded
                } else {
                    OpStatus::InProgress
                },
                start: now,
                end: if done { Some(now) } else { None },
                error: None,
                started: tokio::time::Instant::now(),
                result: None,
            },
        );
        id
    }

    /// Sets what operation `id`'s result URL answers once it succeeded.
    pub fn set_op_result(st: &mut State, id: &str, result: OpResult) {
        if let Some(op) = st.ops.get_mut(id) {
            op.result = Some(result);
        }
    }

    /// Ends operation `id` with `status` (and `error`), unless it has ended already.
    pub fn finish_op(st: &mut State, id: &str, status: OpStatus, error: Option<(String, String)>) {
        Self::finish_op_in(&mut st.ops, id, status, error);
    }

    /// [`Plane::finish_op`] on the operations map alone (for a caller that holds an app of the
    /// same state mutably).
    fn finish_op_in(
        ops: &mut HashMap<String, Op>,
        id: &str,
        status: OpStatus,
        error: Option<(String, String)>,
    ) {
        if let Some(op) = ops.get_mut(id)
            && op.status == OpStatus::InProgress
        {
            op.status = status;
            op.end = Some(Timestamp::now());
            op.error = error;
        }
    }

    /// App names known now (for name resolution inside containers). Uses `try_lock`-free
    /// access through a snapshot kept by the API layer.
    pub fn peers(&self) -> Vec<String> {
        self.peer_names
            .lock()
            .map(|p| p.clone())
            .unwrap_or_default()
    }

    pub fn set_peers(&self, names: Vec<String>) {
        if let Ok(mut p) = self.peer_names.lock() {
            *p = names;
        }
    }
}
