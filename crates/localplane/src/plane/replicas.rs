//! A revision's replicas: leasing and starting one (its environment, labels and default
//! probes), retiring one with the app's drain knobs, and replacing them one by one (a revision
//! restart, platform maintenance).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::Value;

use super::{App, OPERATION_TIMEOUT, Plane, key, random_suffix, scaler_key};
use crate::logsink::{Level, Owner};
use crate::replica::{Replica, supervise};
use crate::runtime::{LABEL_MANAGED, LaunchSpec};

impl Plane {
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
            app.publish_routes();
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
