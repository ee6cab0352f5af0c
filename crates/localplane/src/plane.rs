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

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use labkit::Timestamp;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::ingress::{Backend, Group, Routes, Split};
use crate::job::Job;
use crate::logsink::{Level, Owner, Sink};
use crate::model::{IngressSpec, Knobs, ReadyPolicy, TemplateSpec};
use crate::replica::{Replica, SupCtx, supervise};
use crate::runtime::{LABEL_MANAGED, LaunchSpec, Runtime};
use crate::scaler::{Change, Scaler};

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
    fn single_traffic_json(&self, latest: Option<&String>) -> Value {
        let traffic: Vec<Value> = self
            .revisions
            .iter()
            .filter(|r| r.traffic > 0)
            .map(|r| json!({"revisionName": r.name, "weight": r.traffic, "latestRevision": Some(&r.name) == latest}))
            .collect();
        if traffic.is_empty() {
            json!([{"weight": 100, "latestRevision": true}])
        } else {
            json!(traffic)
        }
    }

    /// The host name of label `label`'s URL, `<app>---<label>.<environment default domain>`, as
    /// Container Apps names it and as [`crate::traffic::split_host`] reads it.
    pub fn label_host(&self, label: &str) -> String {
        format!("{}---{label}.{DEFAULT_DOMAIN}", self.name)
    }

    /// Multiple mode: `configuration.ingress.traffic` as the rules say (a GET's view). An entry
    /// with a `label` also carries localplane's extension `localplaneLabel` when the app has
    /// ingress: `host`, the label host name to send as `Host`, and `url`, the address to send
    /// it to (the app's ingress port); the ARM spec has no per-label FQDN field.
    fn traffic_json(&self) -> Value {
        if self.traffic_rules.is_empty() {
            return json!([{"weight": 100, "latestRevision": true}]);
        }
        let v: Vec<Value> = self
            .traffic_rules
            .iter()
            .map(|r| {
                let mut e = match &r.target {
                    crate::traffic::Target::Latest => json!({"latestRevision": true}),
                    crate::traffic::Target::Revision(n) => {
                        json!({"revisionName": n, "latestRevision": false})
                    }
                };
                e["weight"] = json!(r.weight);
                if let Some(l) = &r.label {
                    e["label"] = json!(l);
                    if let Some(port) = self.ingress_port {
                        e[LABEL_EXTENSION] = json!({
                            "host": self.label_host(l),
                            "url": format!("http://127.0.0.1:{port}"),
                        });
                    }
                }
                e
            })
            .collect();
        json!(v)
    }

    pub fn to_json(&self, provisioning: &str) -> Value {
        let mut props = self.properties.clone();
        if !props.is_object() {
            props = json!({});
        }
        let latest = self.latest().map(|r| r.name.clone());
        let latest_ready = self
            .revisions
            .iter()
            .rev()
            .find(|r| r.provisioned)
            .map(|r| r.name.clone());
        let env_id = props
            .get("environmentId")
            .or_else(|| props.get("managedEnvironmentId"))
            .cloned()
            .unwrap_or(Value::Null);
        if let Some(p) = props.as_object_mut() {
            p.insert("provisioningState".into(), json!(provisioning));
            p.insert("runningStatus".into(), json!("Running"));
            p.insert("managedEnvironmentId".into(), env_id.clone());
            p.insert("environmentId".into(), env_id);
            p.insert("latestRevisionName".into(), json!(latest));
            p.insert("latestReadyRevisionName".into(), json!(latest_ready));
            p.insert(
                "latestRevisionFqdn".into(),
                json!(self.fqdn().unwrap_or_default()),
            );
            p.insert("outboundIpAddresses".into(), json!(["127.0.0.1"]));
            p.insert(
                "eventStreamEndpoint".into(),
                json!(format!("{}/eventstream", self.id())),
            );
            if let Some(t) = self.latest().map(|r| r.template.clone()) {
                p.insert("template".into(), t);
            }
            let cfg = p.entry("configuration").or_insert(json!({}));
            if let Some(c) = cfg.as_object_mut() {
                c.entry("activeRevisionsMode").or_insert(json!("Single"));
                if let Some(ing) = c.get_mut("ingress").and_then(Value::as_object_mut) {
                    ing.insert("fqdn".into(), json!(self.fqdn().unwrap_or_default()));
                    ing.entry("transport").or_insert(json!("Auto"));
                    ing.entry("allowInsecure").or_insert(json!(false));
                    let traffic = if self.multiple {
                        self.traffic_json()
                    } else {
                        self.single_traffic_json(latest.as_ref())
                    };
                    ing.insert("traffic".into(), traffic);
                }
            }
        }
        json!({
            "id": self.id(),
            "name": self.name,
            "type": "Microsoft.App/containerApps",
            "location": self.location,
            "tags": self.tags,
            "properties": props,
        })
    }

    pub fn revision_json(&self, r: &Revision) -> Value {
        let live: Vec<&Arc<Replica>> = r.replicas.iter().filter(|x| !x.is_done()).collect();
        let views: Vec<ReplicaView> = live
            .iter()
            .filter(|x| !x.retiring.load(Ordering::SeqCst))
            .map(|x| {
                let statuses = x.statuses();
                ReplicaView {
                    ready: x.ready(),
                    restarted: statuses
                        .iter()
                        .any(|c| c.restart_count > 0 || c.details == "CrashLoopBackOff"),
                }
            })
            .collect();
        // Past its progress deadline without becoming ready (the app's knob, 600 s by default).
        let deadline_ms =
            i64::try_from(self.knobs.progress_deadline.as_millis()).unwrap_or(i64::MAX);
        let expired =
            !r.provisioned && Timestamp::now().epoch_ms() - r.created.epoch_ms() >= deadline_ms;
        let (provisioning, running, health) = revision_state(
            r.active,
            r.provisioned,
            expired,
            !live.is_empty(),
            &views,
            r.spec.scale.max_replicas as usize,
        );
        // The wording users post for a revision past the deadline (#1219).
        let details = expired.then(|| {
            format!(
                "Deployment Progress Deadline Exceeded. {}/{} replicas ready.",
                views.iter().filter(|v| v.ready).count(),
                r.target.max(1)
            )
        });
        json!({
            "id": format!("{}/revisions/{}", self.id(), r.name),
            "name": r.name,
            "type": "Microsoft.App/containerApps/revisions",
            "properties": {
                "createdTime": r.created.to_rfc3339_s(),
                "lastActiveTime": r.last_active.to_rfc3339_s(),
                "fqdn": self.fqdn().unwrap_or_default(),
                "template": r.template,
                "active": r.active,
                "replicas": live.len(),
                "trafficWeight": r.traffic,
                "provisioningError": Value::Null,
                "healthState": health,
                "provisioningState": provisioning,
                "runningState": running,
                "runningStateDetails": details,
            }
        })
    }

    pub fn replica_json(&self, r: &Revision, rep: &Replica) -> Value {
        let containers: Vec<Value> = rep
            .statuses()
            .iter()
            .map(|c| {
                json!({
                    "name": c.name,
                    "containerId": c.container_id,
                    "ready": c.ready,
                    "started": c.started,
                    "restartCount": c.restart_count,
                    "runningState": c.running_state,
                    "runningStateDetails": c.details,
                    "logStreamEndpoint": "",
                    "execEndpoint": "",
                })
            })
            .collect();
        json!({
            "id": format!("{}/revisions/{}/replicas/{}", self.id(), r.name, rep.name),
            "name": rep.name,
            "type": "Microsoft.App/containerApps/revisions/replicas",
            "properties": {
                "createdTime": rep.created.to_rfc3339_s(),
                "runningState": rep.running_state(),
                "runningStateDetails": "",
                "containers": containers,
                "initContainers": [],
            }
        })
    }
}

/// One serving (not retiring) replica, as [`revision_state`] sees it.
#[derive(Clone, Copy, Debug)]
struct ReplicaView {
    /// Every container started and ready.
    ready: bool,
    /// A container was restarted (a probe kill or an exit) or waits in its back-off.
    restarted: bool,
}

/// A revision's `(provisioningState, runningState, healthState)`:
/// - inactive: `Deprovisioning` while replicas still stop, then `Deprovisioned`; `Stopped`;
/// - active, never ready yet: `Provisioning`, `Processing` (a revision that never gets ready
///   stays there, as Learn's deployment troubleshooting describes);
/// - a ready serving replica: `Running`, or `RunningAtMaxScale` at `maxReplicas` (a `min = max`
///   app always is), `Healthy`;
/// - no ready replica, one of them restarted (liveness kills, crashes): `Failed`, `Unhealthy`;
/// - no ready replica, none restarted (readiness failing): `Activating`, `Unhealthy`: the two
///   states the original lab write-ups saw Azure report for these cases;
/// - no serving replica at all (scaled to zero, or every container failed to be created):
///   `Degraded`, `Unhealthy`.
fn revision_state(
    active: bool,
    provisioned: bool,
    expired: bool,
    any_live: bool,
    serving: &[ReplicaView],
    max_replicas: usize,
) -> (&'static str, &'static str, &'static str) {
    if !active {
        return if any_live {
            ("Deprovisioning", "Stopped", "None")
        } else {
            ("Deprovisioned", "Stopped", "None")
        };
    }
    if !provisioned {
        return if expired {
            ("Failed", "Failed", "Unhealthy")
        } else {
            ("Provisioning", "Processing", "None")
        };
    }
    if serving.iter().any(|v| v.ready) {
        return if serving.len() >= max_replicas {
            ("Provisioned", "RunningAtMaxScale", "Healthy")
        } else {
            ("Provisioned", "Running", "Healthy")
        };
    }
    if serving.iter().any(|v| v.restarted) {
        ("Provisioned", "Failed", "Unhealthy")
    } else if !serving.is_empty() {
        ("Provisioned", "Activating", "Unhealthy")
    } else {
        ("Provisioned", "Degraded", "Unhealthy")
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

    pub fn finish_op(st: &mut State, id: &str, status: OpStatus, error: Option<(String, String)>) {
        if let Some(op) = st.ops.get_mut(id)
            && op.status == OpStatus::InProgress
        {
            op.status = status;
            op.end = Some(Timestamp::now());
            op.error = error;
        }
    }

    /// Starts the controller task of app `name` (once, at creation).
    pub fn spawn_controller(
        self: &Arc<Self>,
        name: String,
        notify: Arc<Notify>,
        stop: CancellationToken,
    ) {
        let plane = self.clone();
        let shutdown = self.ctx.shutdown.clone();
        // A request held at the app's ingress (an app at zero) wakes the controller too.
        let routes = self.lock().apps.get(&key(&name)).map(|a| a.routes.clone());
        self.ctx.tracker.spawn(async move {
            let routes = routes.unwrap_or_default();
            loop {
                if !plane.reconcile(&name) {
                    break;
                }
                tokio::select! {
                    _ = notify.notified() => {}
                    _ = routes.demand.notified() => {}
                    _ = tokio::time::sleep(Duration::from_millis(500)) => {}
                    _ = stop.cancelled() => break,
                    _ = shutdown.cancelled() => break,
                }
            }
        });
    }

    /// Leases for `n` more replicas of revision `rev_idx` of `app` ([`crate::quota`]): all of
    /// them or, with the refusal's system row (once, until the revision starts from none
    /// again), none.
    pub fn lease_replicas(
        &self,
        app: &App,
        rev_idx: usize,
        n: u32,
    ) -> Result<Vec<crate::quota::Lease>, crate::quota::Exceeded> {
        let Some(rev) = app.revisions.get(rev_idx) else {
            return Ok(Vec::new());
        };
        let env = crate::resources::environment_key(Some(&app.properties));
        let cores = u64::from(rev.spec.resources().cpu);
        let noted = scaler_key(&app.name, &rev.name);
        match self.quota.take(&env, cores, n) {
            Ok(leases) => Ok(leases),
            Err(e) => {
                if self.quota.note(&noted) {
                    let owner = Owner::App {
                        app: app.name.clone(),
                        revision: rev.name.clone(),
                    };
                    self.ctx.sink.system(
                        &owner,
                        "",
                        crate::quota::REASON,
                        Level::Warning,
                        e.to_string(),
                    );
                }
                Err(e)
            }
        }
    }

    /// Starts a new replica of revision `rev_idx` of `app`, holding `lease` while it runs
    /// (caller holds the lock).
    pub fn spawn_replica(
        self: &Arc<Self>,
        app: &mut App,
        rev_idx: usize,
        lease: crate::quota::Lease,
    ) -> Option<Arc<Replica>> {
        let fqdn = app.fqdn().unwrap_or_default();
        let rev = app.revisions.get_mut(rev_idx)?;
        let replica_name = format!("{}-{}-{}", rev.name, random_suffix(9), random_suffix(5));
        let owner = Owner::App {
            app: app.name.clone(),
            revision: rev.name.clone(),
        };
        let rep = Replica::new(replica_name.clone(), owner.clone(), &rev.spec.containers);
        rep.hold(lease);
        self.ctx.sink.system(
            &owner,
            &replica_name,
            "AssigningReplica",
            Level::Normal,
            format!("Replica '{replica_name}' has been scheduled to run on a node."),
        );
        let target_port = app.ingress.as_ref().map(|i| i.target_port);
        let peers = self.peers();
        for (idx, c) in rev.spec.containers.iter().enumerate() {
            let mut env = c.env.clone();
            let mut set = |k: &str, v: String| {
                env.retain(|(n, _)| n != k);
                env.push((k.to_string(), v));
            };
            set("CONTAINER_APP_NAME", app.name.clone());
            set("CONTAINER_APP_REVISION", rev.name.clone());
            set("CONTAINER_APP_REPLICA_NAME", replica_name.clone());
            set("CONTAINER_APP_HOSTNAME", fqdn.clone());
            if let Some(p) = target_port {
                set("CONTAINER_APP_PORT", p.to_string());
            }
            let mut labels = BTreeMap::new();
            labels.insert(LABEL_MANAGED.to_string(), "true".to_string());
            labels.insert("probelab.app".into(), app.name.clone());
            labels.insert("probelab.revision".into(), rev.name.clone());
            labels.insert("probelab.replica".into(), replica_name.clone());
            labels.insert(
                "probelab.env".into(),
                app.properties
                    .get("environmentId")
                    .or_else(|| app.properties.get("managedEnvironmentId"))
                    .and_then(Value::as_str)
                    .and_then(|s| s.rsplit('/').next())
                    .unwrap_or("")
                    .to_string(),
            );
            let launch = LaunchSpec {
                owner: owner.clone(),
                replica: replica_name.clone(),
                container: c.name.clone(),
                image: c.image.clone(),
                command: c.command.clone(),
                args: c.args.clone(),
                env,
                labels,
                primary: idx == 0,
                peers: peers.clone(),
                resources: c.resources,
            };
            let ctx = self.sup_ctx(app.notify.clone(), app.knobs.timings);
            let grace = rev.spec.grace;
            let tp = if idx == 0 { target_port } else { None };
            let spec = with_default_probes(c.clone(), if idx == 0 { target_port } else { None });
            self.ctx
                .tracker
                .spawn(supervise(ctx, rep.clone(), idx, spec, grace, tp, launch));
        }
        rev.replicas.push(rep.clone());
        Some(rep)
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

    /// Recomputes app `name`'s routing table now.
    pub fn refresh_routes(&self, name: &str) {
        let st = self.lock();
        if let Some(app) = st.apps.get(&key(name)) {
            set_routes(app);
        }
    }

    /// One controller pass over app `name`; `false` once the app is gone.
    pub fn reconcile(self: &Arc<Self>, name: &str) -> bool {
        let mut guard = self.lock();
        let st = &mut *guard;
        let Some(app) = st.apps.get_mut(&key(name)) else {
            let prefix = scaler_key(name, "");
            st.scalers.retain(|k, _| !k.starts_with(&prefix));
            return false;
        };
        // Drop finished replicas, then the inactive revisions beyond the app's limit (before
        // any revision index below is computed).
        for r in &mut app.revisions {
            r.replicas.retain(|x| !x.is_done());
        }
        // (A purged revision's scaler goes with the other non-serving ones' just below.)
        let purged = app.purge_inactive();
        if !purged.is_empty() {
            tracing::debug!(app = %app.name, revisions = ?purged, "purged inactive revisions");
        }
        // Only the serving revision scales; other revisions' scalers go. Multiple mode has
        // none: its revisions run their initial count.
        if app.multiple {
            app.traffic_rev = None;
        }
        let serving = app
            .traffic_rev
            .as_deref()
            .and_then(|t| app.revisions.iter().position(|r| r.active && r.name == t));
        let keep = serving.map(|i| scaler_key(&app.name, &app.revisions[i].name));
        let prefix = scaler_key(&app.name, "");
        st.scalers
            .retain(|k, _| !k.starts_with(&prefix) || Some(k) == keep.as_ref());
        let refused = self.scale_revisions(app, serving, &mut st.scalers);
        // The latest revision could not start its replicas: its operations fail with the quota
        // error (Azure's "Provisioning times out with a failure", without the wait).
        let latest = app.revisions.len().checked_sub(1);
        if let Some((_, e)) = refused.iter().find(|(i, _)| Some(*i) == latest) {
            for op in std::mem::take(&mut app.pending_ops) {
                Self::finish_op_in(
                    &mut st.ops,
                    &op,
                    OpStatus::Failed,
                    Some((crate::quota::CODE.into(), e.to_string())),
                );
            }
        }
        if serving.is_none() {
            app.routes.set_hold(false);
        }
        if let Some(latest_idx) = app.revisions.len().checked_sub(1) {
            if app.multiple {
                self.provision_older(app, latest_idx);
            }
            self.advance_latest(app, latest_idx, &mut st.ops);
        }
        // Operations of new revisions past the app's progress deadline fail.
        let now = tokio::time::Instant::now();
        app.pending_ops.retain(|op| {
            let expired = st
                .ops
                .get(op)
                .is_some_and(|o| o.started + app.knobs.progress_deadline <= now);
            if expired {
                Self::finish_op_in(
                    &mut st.ops,
                    op,
                    OpStatus::Failed,
                    Some((
                        "ContainerAppOperationError".into(),
                        format!(
                            "Failed to provision revision for container app '{}'. Error \
                             details: Operation expired.",
                            app.name
                        ),
                    )),
                );
            }
            !expired
        });
        if app.multiple {
            let (weights, _) = app.split_targets();
            for (r, w) in app.revisions.iter_mut().zip(weights) {
                if r.traffic != w {
                    traffic_weight_row(&self.ctx.sink, &app.name, &r.name, w);
                }
                r.traffic = w;
            }
        }
        for r in &mut app.revisions {
            if r.traffic > 0 {
                r.last_active = Timestamp::now();
            }
        }
        set_routes(app);
        drop(guard);
        if !purged.is_empty() {
            self.persist();
        }
        true
    }

    /// Starts or retires replicas of each active revision toward its desired count: the
    /// scaler's for the `serving` one; the others keep what they run, at least their `target`:
    /// a new revision of a serving app in single mode the app's `NewRevisionReplicas` count
    /// (it scales on its own once it serves), any other `minReplicas` (at least 1); an old one
    /// keeps its replicas until it is deactivated.
    ///
    /// Each replica needs its lease ([`crate::quota`]): a revision with none running starts all
    /// of them or none (its refusal returned by revision index); one scaling out starts as many
    /// as fit.
    fn scale_revisions(
        self: &Arc<Self>,
        app: &mut App,
        serving: Option<usize>,
        scalers: &mut HashMap<String, Scaler>,
    ) -> Vec<(usize, crate::quota::Exceeded)> {
        let mut refused = Vec::new();
        let serving_count = serving.map(|i| live_count(&app.revisions[i]) as u32);
        let latest = app.revisions.len().checked_sub(1);
        for i in 0..app.revisions.len() {
            let r = &app.revisions[i];
            let (active, have) = (r.active, live_count(r));
            // A new revision of a serving app (single mode) scales to the app's rule's count
            // before it takes the traffic; any other non-serving revision to its initial count.
            let previous = serving_count.filter(|_| Some(i) == latest && !r.provisioned);
            let scale = &r.spec.scale;
            let target = app.knobs.new_revision_replicas.target(
                previous,
                scale.min_replicas,
                scale.max_replicas,
            );
            app.revisions[i].target = target;
            if !active || self.ctx.shutdown.is_cancelled() {
                continue;
            }
            let want = if Some(i) == serving {
                self.scale_step(app, i, have as u32, scalers) as usize
            } else {
                (target as usize).max(have)
            };
            if want > have {
                let n = u32::try_from(want - have).unwrap_or(u32::MAX);
                let leases = match self.lease_replicas(app, i, n) {
                    Ok(l) => {
                        if have == 0 {
                            let r = &app.revisions[i];
                            self.quota.forget(&scaler_key(&app.name, &r.name));
                        }
                        l
                    }
                    Err(e) if have == 0 => {
                        refused.push((i, e));
                        Vec::new()
                    }
                    // Scaling out: as many as fit.
                    Err(_) => (1..n)
                        .map_while(|_| self.lease_replicas(app, i, 1).ok())
                        .flatten()
                        .collect(),
                };
                for lease in leases {
                    self.spawn_replica(app, i, lease);
                }
            }
            if have > want {
                self.scale_in(app, i, have - want);
            }
        }
        refused
    }

    /// The latest revision's progress: provisioned (`RevisionReady`) once it is ready by the
    /// app's policy, then the traffic switch to it; its pending operations succeed once it is
    /// provisioned.
    fn advance_latest(
        self: &Arc<Self>,
        app: &mut App,
        latest_idx: usize,
        ops: &mut HashMap<String, Op>,
    ) {
        let latest = &app.revisions[latest_idx];
        let ready = latest.active && is_ready(app.knobs.ready_policy, latest);
        let latest_name = latest.name.clone();
        if ready && !latest.provisioned {
            self.mark_provisioned(&app.name, &mut app.revisions[latest_idx]);
        }
        if ready && !app.multiple && app.traffic_rev.as_deref() != Some(latest_name.as_str()) {
            self.switch_traffic(app, latest_idx, latest_name);
        }
        if app.revisions[latest_idx].provisioned {
            for op in std::mem::take(&mut app.pending_ops) {
                Self::finish_op_in(ops, &op, OpStatus::Succeeded, None);
            }
        }
    }

    /// Multiple mode: an active revision older than the latest (`latest_idx`) that was never
    /// provisioned (a newer one came before it was ready, or it was activated again) is
    /// provisioned (`RevisionReady`) once it is ready by the app's policy.
    fn provision_older(&self, app: &mut App, latest_idx: usize) {
        let policy = app.knobs.ready_policy;
        for r in app.revisions.iter_mut().take(latest_idx) {
            if r.active && !r.provisioned && is_ready(policy, r) {
                self.mark_provisioned(&app.name, r);
            }
        }
    }

    /// Marks revision `rev` of app `app` provisioned, with Azure's `RevisionReady` row.
    fn mark_provisioned(&self, app: &str, rev: &mut Revision) {
        rev.provisioned = true;
        let owner = Owner::App {
            app: app.to_owned(),
            revision: rev.name.clone(),
        };
        self.ctx.sink.system(
            &owner,
            "",
            "RevisionReady",
            Level::Normal,
            format!("Successfully provisioned revision '{}'", rev.name),
        );
    }

    /// Sends all traffic to revision `latest_idx` (`latest_name`, `RevisionUpdate`) and
    /// deactivates the other active revisions, at once or after the app's
    /// `old_revision_linger`.
    fn switch_traffic(self: &Arc<Self>, app: &mut App, latest_idx: usize, latest_name: String) {
        app.traffic_rev = Some(latest_name.clone());
        let now = Timestamp::now();
        let mut to_stop = Vec::new();
        for (i, r) in app.revisions.iter_mut().enumerate() {
            if i == latest_idx {
                r.traffic = 100;
                r.last_active = now;
            } else {
                r.traffic = 0;
                if r.active {
                    to_stop.push(i);
                }
            }
        }
        traffic_weight_row(&self.ctx.sink, &app.name, &latest_name, 100);
        let linger = app.knobs.timings.old_revision_linger;
        if linger.is_zero() {
            for &i in &to_stop {
                self.deactivate_locked(app, i);
            }
            self.complete_rollout(app, &to_stop, latest_name);
        } else {
            // Container Apps keeps the old revision running for a while after the switch
            // (recorded: ~38 s), then deactivates it.
            let names: Vec<String> = to_stop
                .iter()
                .map(|&i| app.revisions[i].name.clone())
                .collect();
            self.deactivate_after(linger, app.name.clone(), names, latest_name);
        }
    }

    /// After `linger`, deactivates those of the revisions `names` of app `app_name` that are
    /// still old, active and without traffic, and completes the rollout to `latest_name`.
    fn deactivate_after(
        self: &Arc<Self>,
        linger: Duration,
        app_name: String,
        names: Vec<String>,
        latest_name: String,
    ) {
        let plane = self.clone();
        let shutdown = self.ctx.shutdown.clone();
        self.ctx.tracker.spawn(async move {
            tokio::select! {
                _ = tokio::time::sleep(linger) => {}
                _ = shutdown.cancelled() => return,
            }
            let mut st = plane.lock();
            let Some(app) = st.apps.get_mut(&key(&app_name)) else {
                return;
            };
            // Only what is still an old, active revision without traffic.
            let idx: Vec<usize> = app
                .revisions
                .iter()
                .enumerate()
                .filter(|(_, r)| {
                    names.contains(&r.name)
                        && r.active
                        && r.traffic == 0
                        && app.traffic_rev.as_deref() != Some(r.name.as_str())
                })
                .map(|(i, _)| i)
                .collect();
            for &i in &idx {
                plane.deactivate_locked(app, i);
            }
            plane.complete_rollout(app, &idx, latest_name);
            app.notify.notify_one();
        });
    }

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

    /// Deactivates revision `idx`: out of routing, then SIGTERM after the drain delay.
    pub fn deactivate_locked(self: &Arc<Self>, app: &mut App, idx: usize) {
        let Some(rev) = app.revisions.get_mut(idx) else {
            return;
        };
        rev.active = false;
        rev.traffic = 0;
        let owner = Owner::App {
            app: app.name.clone(),
            revision: rev.name.clone(),
        };
        self.ctx.sink.system(
            &owner,
            "",
            "RevisionDeactivating",
            Level::Normal,
            format!("Deactivating old revisions for ContainerApp '{}'", app.name),
        );
        let reps = rev.replicas.clone();
        for rep in reps {
            self.retire(app, rep);
        }
    }

    /// Once the replicas of the deactivated revisions `old` have stopped, writes
    /// `RollingRevisionCompleted` for revision `new` (caller holds the lock).
    fn complete_rollout(self: &Arc<Self>, app: &App, old: &[usize], new: String) {
        if old.is_empty() {
            return;
        }
        let reps: Vec<Arc<Replica>> = old
            .iter()
            .filter_map(|&i| app.revisions.get(i))
            .flat_map(|r| r.replicas.clone())
            .collect();
        let owner = Owner::App {
            app: app.name.clone(),
            revision: new.clone(),
        };
        let sink = self.ctx.sink.clone();
        let shutdown = self.ctx.shutdown.clone();
        self.ctx.tracker.spawn(async move {
            for r in reps {
                let mut done = r.done.subscribe();
                tokio::select! {
                    _ = done.wait_for(|d| *d) => {}
                    _ = shutdown.cancelled() => return,
                }
            }
            sink.system(
                &owner,
                "",
                "RollingRevisionCompleted",
                Level::Normal,
                format!("Rolling revision update to '{new}' completed"),
            );
        });
    }

    /// Takes a replica out of service with the app's drain knobs: routing removal and SIGTERM
    /// ordered as `drainDelaySeconds` / `routingRemovalLagMs` say.
    pub fn retire(self: &Arc<Self>, app: &App, rep: Arc<Replica>) {
        if rep.retiring.swap(true, Ordering::SeqCst) {
            return;
        }
        self.take_out(app, rep);
    }

    /// Out of routing and stopped as [`Plane::retire`] does, but still counted against its
    /// revision's replicas until it is gone, so the controller replaces it only then (platform
    /// maintenance's stop-first form, [`crate::maintenance`]).
    pub fn take_out(self: &Arc<Self>, app: &App, rep: Arc<Replica>) {
        let knobs = app.knobs.clone();
        let plane = self.clone();
        let app_name = app.name.clone();
        let notify = app.notify.clone();
        if knobs.routing_removal_lag.is_zero() {
            rep.routable.store(false, Ordering::SeqCst);
            set_routes(app);
        }
        self.ctx.tracker.spawn(async move {
            tokio::time::sleep(knobs.drain_delay).await;
            rep.cancel.cancel();
            if !knobs.routing_removal_lag.is_zero() {
                tokio::time::sleep(knobs.routing_removal_lag).await;
                rep.routable.store(false, Ordering::SeqCst);
                plane.refresh_routes(&app_name);
            }
            notify.notify_one();
        });
    }

    /// One scaler step for the serving revision `idx` (caller holds the lock): activation when
    /// a request waits at an app at zero, an evaluation when one is due, the system rows for a
    /// change; returns the replica count the revision should run.
    fn scale_step(
        self: &Arc<Self>,
        app: &mut App,
        idx: usize,
        running: u32,
        scalers: &mut HashMap<String, Scaler>,
    ) -> u32 {
        let now = tokio::time::Instant::now();
        let rev = &app.revisions[idx];
        let spec = rev.spec.scale.clone();
        let owner = Owner::App {
            app: app.name.clone(),
            revision: rev.name.clone(),
        };
        let sink = &self.ctx.sink;
        let k = scaler_key(&app.name, &rev.name);
        let sc = scalers.entry(k).or_insert_with(|| {
            sink.system(
                &owner,
                "",
                "KEDAScalersStarted",
                Level::Normal,
                format!(
                    "KEDA is starting a watch for revision '{}' to monitor scale operations",
                    rev.name
                ),
            );
            // It starts from what it runs (a new revision: the count it scaled to before it
            // took the traffic), so the 300 s window applies to it as to any scale-in.
            Scaler::new(
                spec.clone(),
                app.knobs.scaling,
                running.max(spec.initial_replicas()),
                now,
            )
        });
        sc.set_behavior(app.knobs.scaling);
        // An app that can scale to zero holds requests while it has no routable replica.
        app.routes.set_hold(spec.min_replicas == 0);
        let waiting = app.routes.in_flight();
        let (change, capped) = if sc.replicas() == 0 && waiting > 0 {
            (sc.activate(now), None)
        } else if sc.due(now) {
            let d = sc.evaluate(now, app.routes.take_observation());
            (d.change, d.capped)
        } else {
            (None, None)
        };
        self.scale_rows(&owner, &rev.name, &spec, waiting, change, capped);
        sc.replicas()
    }

    /// The system rows of a scaler step: the change, and `RunningAtMaxScale` when capped.
    fn scale_rows(
        &self,
        owner: &Owner,
        rev_name: &str,
        spec: &crate::scaler::ScaleSpec,
        waiting: u32,
        change: Option<Change>,
        capped: Option<u32>,
    ) {
        let sink = &self.ctx.sink;
        let target = spec.http.as_ref().map_or(0, |r| r.concurrent_requests);
        let row =
            |reason: &str, level: Level, msg: String| sink.system(owner, "", reason, level, msg);
        match change {
            None => {}
            Some(Change::Activated { to }) => row(
                "KEDAScaleTargetActivated",
                Level::Normal,
                format!(
                    "Scaled revision '{}' from 0 to {to}: {waiting} request(s) at the ingress",
                    rev_name
                ),
            ),
            Some(Change::Deactivated { from, idle }) => row(
                "KEDAScaleTargetDeactivated",
                Level::Normal,
                format!(
                    "Deactivated revision '{}' from {from} to 0: no requests for {} s (cooldownPeriod {} s)",
                    rev_name,
                    idle.as_secs(),
                    spec.cooldown_period.as_secs()
                ),
            ),
            Some(Change::Out { from, to, metric }) => row(
                "SuccessfulRescale",
                Level::Normal,
                format!(
                    "New size: {to}; reason: {metric} above the target of {target} per replica (was {from})"
                ),
            ),
            Some(Change::In {
                from,
                to,
                metric,
                window,
            }) => row(
                "SuccessfulRescale",
                Level::Normal,
                format!(
                    "New size: {to}; reason: {metric} below the target of {target} per replica for the scale-down stabilization window of {} s (was {from})",
                    window.as_secs()
                ),
            ),
        }
        if let Some(wanted) = capped {
            row(
                "RunningAtMaxScale",
                Level::Warning,
                format!(
                    "Revision '{}' is running at its maximum of {} replicas; the scale rule asks for {wanted}",
                    rev_name, spec.max_replicas
                ),
            );
        }
    }

    /// Scale-in: retires `count` replicas of revision `idx` (not ready ones first, then the
    /// newest), each out of routing first, then SIGTERM, the grace period, SIGKILL, and its
    /// `ManuallyStopped` row, as any retired replica.
    fn scale_in(self: &Arc<Self>, app: &App, idx: usize, count: usize) {
        let Some(rev) = app.revisions.get(idx) else {
            return;
        };
        let mut live: Vec<Arc<Replica>> = rev
            .replicas
            .iter()
            .filter(|x| !x.retiring.load(Ordering::SeqCst))
            .cloned()
            .collect();
        live.sort_by_key(|r| (r.ready(), std::cmp::Reverse(r.created)));
        for rep in live.into_iter().take(count) {
            self.retire(app, rep);
        }
    }

    /// Polls `done` every 100 ms until it holds (`true`), [`OPERATION_TIMEOUT`] passes or
    /// localplane shuts down (`false`): the bounded wait for a replacement replica.
    pub async fn wait_until(&self, mut done: impl FnMut() -> bool) -> bool {
        let deadline = tokio::time::Instant::now() + OPERATION_TIMEOUT;
        loop {
            if done() {
                return true;
            }
            if self.ctx.shutdown.is_cancelled() || tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Restarts revision `rev` replica by replica, as Container Apps does (recorded): a new
    /// replica is assigned; once it is ready the next new one is assigned and then the old one
    /// it replaces is retired (`ManuallyStopped`); after the last, the last old one is retired.
    pub fn restart_revision(self: &Arc<Self>, app_name: &str, rev_name: &str) {
        let plane = self.clone();
        let app_name = app_name.to_string();
        let rev_name = rev_name.to_string();
        self.ctx
            .tracker
            .spawn(async move { plane.replace_replicas(&app_name, &rev_name).await });
    }

    /// The replica-by-replica replacement of [`Plane::restart_revision`], done when the last
    /// old replica is retired (platform maintenance's rolling form awaits it).
    pub async fn replace_replicas(self: &Arc<Self>, app_name: &str, rev_name: &str) {
        let plane = self;
        let old: Vec<Arc<Replica>> = {
            let st = plane.lock();
            st.apps
                .get(&key(app_name))
                .and_then(|a| a.revision(rev_name))
                .map(|r| {
                    r.replicas
                        .iter()
                        .filter(|x| !x.retiring.load(Ordering::SeqCst))
                        .cloned()
                        .collect()
                })
                .unwrap_or_default()
        };
        let retire = |plane: &Arc<Plane>, app: &App, rep: Arc<Replica>| {
            rep.retiring.store(false, Ordering::SeqCst);
            plane.retire(app, rep);
        };
        let mut replaced: Option<Arc<Replica>> = None;
        for old_rep in old {
            let new_rep = {
                let mut st = plane.lock();
                let Some(app) = st.apps.get_mut(&key(app_name)) else {
                    return;
                };
                let Some(idx) = app.revisions.iter().position(|r| r.name == rev_name) else {
                    return;
                };
                if !app.revisions[idx].active {
                    return;
                }
                // Mark the old one retiring first so reconcile does not add a third.
                old_rep.retiring.store(true, Ordering::SeqCst);
                let new_rep = match plane.lease_replicas(app, idx, 1) {
                    Ok(mut l) => l.pop().and_then(|l| plane.spawn_replica(app, idx, l)),
                    Err(_) => {
                        old_rep.retiring.store(false, Ordering::SeqCst);
                        None
                    }
                };
                // The previous old replica goes after the next assignment, as recorded.
                if let Some(prev) = replaced.take() {
                    retire(plane, app, prev);
                }
                new_rep
            };
            let Some(new_rep) = new_rep else { return };
            plane
                .wait_until(|| new_rep.ready() || new_rep.is_done())
                .await;
            replaced = Some(old_rep);
        }
        if let Some(prev) = replaced {
            let st = plane.lock();
            if let Some(app) = st.apps.get(&key(app_name)) {
                retire(plane, app, prev);
            }
        }
    }
}

/// The replicas of `r` that are not being retired.
fn live_count(r: &Revision) -> usize {
    r.replicas
        .iter()
        .filter(|x| !x.retiring.load(Ordering::SeqCst))
        .count()
}

/// Whether revision `r` is ready by `policy` ([`ready_enough`] with its ready replicas).
fn is_ready(policy: ReadyPolicy, r: &Revision) -> bool {
    let ready = r
        .replicas
        .iter()
        .filter(|x| !x.retiring.load(Ordering::SeqCst) && x.ready())
        .count();
    ready_enough(policy, ready, r.target)
}

/// Whether `ready` replicas (started, readiness passed) make a revision whose `target` count is
/// that ready: all of the target (Learn's zero-downtime rule), or one (the older wording).
fn ready_enough(policy: ReadyPolicy, ready: usize, target: u32) -> bool {
    match policy {
        ReadyPolicy::AllReplicas => ready >= (target as usize).max(1),
        ReadyPolicy::FirstReplica => ready >= 1,
    }
}

/// The system row of a revision's traffic weight becoming `weight`: reason `RevisionUpdate`
/// (from issue 18's survey, not in a published export), message as Learn's "Monitor logs in
/// Azure Container Apps with Log Analytics" lists it for the source "Traffic weight":
/// `Setting a traffic weight of <percentage>% for revision <revision-name>`.
fn traffic_weight_row(sink: &Sink, app: &str, revision: &str, weight: u32) {
    let owner = Owner::App {
        app: app.to_owned(),
        revision: revision.to_owned(),
    };
    sink.system(
        &owner,
        "",
        "RevisionUpdate",
        Level::Normal,
        format!("Setting a traffic weight of {weight}% for revision {revision}"),
    );
}

fn set_routes(app: &App) {
    app.routes.set_policy(app.knobs.ingress);
    // Session affinity is acted on in single revision mode only (Learn: "Session affinity is
    // only supported when your app is in single revision mode").
    app.routes
        .set_sticky(!app.multiple && app.ingress.as_ref().is_some_and(|i| i.sticky));
    if app.multiple {
        set_split_routes(app);
        return;
    }
    app.routes.set_split(None);
    let mut backends = Vec::new();
    for r in &app.revisions {
        for rep in &r.replicas {
            // Serving: a ready replica of a revision with traffic. Lagging: a retiring replica
            // that was being routed keeps its place while `routable` (routingRemovalLagMs),
            // whatever its readiness or its revision's weight: the ingress has not heard yet.
            let serving = r.traffic > 0 && rep.ready();
            let lagging = rep.retiring.load(Ordering::SeqCst) && rep.routed.load(Ordering::SeqCst);
            if rep.routable.load(Ordering::SeqCst)
                && (serving || lagging)
                && let Some(addr) = rep.endpoint()
            {
                rep.routed.store(true, Ordering::SeqCst);
                backends.push(Backend {
                    addr,
                    revision: r.name.clone(),
                    replica: rep.name.clone(),
                });
            }
        }
    }
    app.routes.set(backends);
}

/// Multiple mode's routing table: each revision with a weight or a label, its ready routable
/// replicas (and lagging retiring ones, as in single mode) as its backends.
fn set_split_routes(app: &App) {
    let (weights, labels) = app.split_targets();
    let mut groups = Vec::new();
    let mut group_of = vec![None; app.revisions.len()];
    let mut all = Vec::new();
    for (i, r) in app.revisions.iter().enumerate() {
        let weight = weights.get(i).copied().unwrap_or(0);
        if weight == 0 && !labels.iter().any(|(_, x)| *x == i) {
            continue;
        }
        let mut backends = Vec::new();
        for rep in &r.replicas {
            let serving = r.active && rep.ready();
            let lagging = rep.retiring.load(Ordering::SeqCst) && rep.routed.load(Ordering::SeqCst);
            if rep.routable.load(Ordering::SeqCst)
                && (serving || lagging)
                && let Some(addr) = rep.endpoint()
            {
                rep.routed.store(true, Ordering::SeqCst);
                backends.push(Backend {
                    addr,
                    revision: r.name.clone(),
                    replica: rep.name.clone(),
                });
            }
        }
        backends.sort_by(|a, b| a.replica.cmp(&b.replica));
        all.extend(backends.iter().cloned());
        group_of[i] = Some(groups.len());
        groups.push(Group {
            revision: r.name.clone(),
            weight,
            backends,
        });
    }
    let labels = labels
        .into_iter()
        .filter_map(|(l, i)| group_of.get(i).copied().flatten().map(|g| (l, g)))
        .collect();
    app.routes.set(all);
    app.routes.set_split(Some(Split { groups, labels }));
}

/// Container Apps adds TCP probes on the ingress target port to the main container when ingress
/// is enabled and the template defines none of that type.
pub fn with_default_probes(
    mut c: crate::model::ContainerSpec,
    target_port: Option<u16>,
) -> crate::model::ContainerSpec {
    use crate::model::{Probe, ProbeAction, ProbeKind};
    let Some(port) = target_port else { return c };
    let mk = |kind, initial: u64, period: u64, timeout: u64, failure: u32| Probe {
        kind,
        action: ProbeAction::Tcp { port },
        initial_delay: Duration::from_secs(initial),
        period: Duration::from_secs(period),
        timeout: Duration::from_secs(timeout),
        failure_threshold: failure,
        success_threshold: 1,
        grace: None,
    };
    if c.probe(ProbeKind::Startup).is_none() {
        c.probes.push(mk(ProbeKind::Startup, 1, 1, 3, 240));
    }
    if c.probe(ProbeKind::Readiness).is_none() {
        c.probes.push(mk(ProbeKind::Readiness, 3, 5, 5, 48));
    }
    if c.probe(ProbeKind::Liveness).is_none() {
        c.probes.push(mk(ProbeKind::Liveness, 0, 10, 1, 3));
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ContainerSpec, ProbeKind};

    fn container(name: &str) -> ContainerSpec {
        ContainerSpec {
            name: name.into(),
            image: "probelab/subject:dev".into(),
            command: vec![],
            args: vec![],
            env: vec![],
            probes: vec![],
            resources: crate::resources::Resources::DEFAULT,
        }
    }

    const READY: ReplicaView = ReplicaView {
        ready: true,
        restarted: false,
    };
    const UNREADY: ReplicaView = ReplicaView {
        ready: false,
        restarted: false,
    };
    const RESTARTED: ReplicaView = ReplicaView {
        ready: false,
        restarted: true,
    };

    #[test]
    fn revision_states_follow_its_replicas() {
        let st = |views: &[ReplicaView], max| revision_state(true, true, false, true, views, max);
        // Ready below and at maxReplicas.
        assert_eq!(st(&[READY, UNREADY], 3).1, "Running");
        assert_eq!(st(&[READY, UNREADY], 2).1, "RunningAtMaxScale");
        assert_eq!(
            st(&[READY], 1),
            ("Provisioned", "RunningAtMaxScale", "Healthy")
        );
        // One ready replica keeps the revision Running whatever the others do.
        assert_eq!(st(&[READY, RESTARTED], 3).1, "Running");
        // No ready replica: readiness failing is Activating, a restarted one makes it Failed.
        assert_eq!(
            st(&[UNREADY, UNREADY], 3),
            ("Provisioned", "Activating", "Unhealthy")
        );
        assert_eq!(
            st(&[UNREADY, RESTARTED], 3),
            ("Provisioned", "Failed", "Unhealthy")
        );
        // None serving.
        assert_eq!(st(&[], 3), ("Provisioned", "Degraded", "Unhealthy"));
        // Never ready yet: Provisioning, whatever the replicas do.
        assert_eq!(
            revision_state(true, false, false, true, &[RESTARTED], 1),
            ("Provisioning", "Processing", "None")
        );
        // Never ready by its progress deadline: Failed and Unhealthy, however its replicas run;
        // a revision that did become ready is past any deadline.
        assert_eq!(
            revision_state(true, false, true, true, &[RESTARTED], 1),
            ("Failed", "Failed", "Unhealthy")
        );
        assert_eq!(
            revision_state(true, false, true, true, &[UNREADY], 1),
            ("Failed", "Failed", "Unhealthy")
        );
        assert_eq!(
            revision_state(true, true, true, true, &[READY], 1).1,
            "RunningAtMaxScale"
        );
        // Inactive.
        assert_eq!(
            revision_state(false, true, false, true, &[READY], 1),
            ("Deprovisioning", "Stopped", "None")
        );
        assert_eq!(
            revision_state(false, true, false, false, &[], 1),
            ("Deprovisioned", "Stopped", "None")
        );
    }

    #[test]
    fn a_revision_is_ready_when_every_replica_of_its_target_is() {
        use ReadyPolicy::{AllReplicas, FirstReplica};
        // Learn's rule: 2 of 3 is not ready, 3 of 3 is; a target of 1 needs its one replica.
        assert!(!ready_enough(AllReplicas, 2, 3));
        assert!(ready_enough(AllReplicas, 3, 3));
        assert!(!ready_enough(AllReplicas, 0, 1));
        assert!(ready_enough(AllReplicas, 1, 1));
        // The older wording: the first ready replica is enough, none is not.
        assert!(ready_enough(FirstReplica, 1, 3));
        assert!(!ready_enough(FirstReplica, 0, 3));
    }

    /// `spawn_replica` passes the ingress target port to the first container only, so a
    /// sidecar (no port) gets no default probes.
    #[test]
    fn default_probes_only_with_a_target_port() {
        let main = with_default_probes(container("main"), Some(8080));
        let kinds: Vec<ProbeKind> = main.probes.iter().map(|p| p.kind).collect();
        assert_eq!(
            kinds,
            vec![
                ProbeKind::Startup,
                ProbeKind::Readiness,
                ProbeKind::Liveness
            ]
        );
        assert!(
            with_default_probes(container("sidecar"), None)
                .probes
                .is_empty()
        );
    }
}
