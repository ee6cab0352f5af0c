//! One scaler step of an app's serving revision ([`Plane::scale_step`]): activation from zero
//! when a request waits, an evaluation when one is due, and the system rows of the change;
//! and the scale-in that retires replicas.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{App, Plane, scaler_key};
use crate::logsink::{Level, Owner};
use crate::replica::Replica;
use crate::scaler::{Change, Scaler};

impl Plane {
    /// One scaler step for the serving revision `idx` (caller holds the lock): activation when
    /// a request waits at an app at zero, an evaluation when one is due, the system rows for a
    /// change; returns the replica count the revision should run.
    pub(super) fn scale_step(
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
    pub(super) fn scale_in(self: &Arc<Self>, app: &App, idx: usize, count: usize) {
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
}
