//! The per-app controller: one pass ([`Plane::reconcile`]) drops finished replicas, purges
//! old revisions, scales each active revision toward its count, provisions the latest once it
//! is ready, switches the traffic to it (single mode) and deactivates the others, ends the
//! operations waiting on it and publishes the routing table.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use logline::Timestamp;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::{App, Op, OpStatus, Plane, Revision, key, scaler_key};
use crate::logsink::{Level, Owner, Sink};
use crate::model::ReadyPolicy;
use crate::replica::Replica;
use crate::scaler::Scaler;

impl Plane {
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
        app.publish_routes();
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
