//! The app's routing table, published to its ingress ([`crate::ingress::Routes`]) after every
//! change: single mode's ready replicas of the revision with the traffic, multiple mode's
//! groups by weight and label. A retiring replica that was routed keeps its place while it is
//! still `routable` (`routingRemovalLagMs`): the ingress has not heard yet.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{App, Plane, key};
use crate::ingress::{Backend, Group, Split};
use crate::replica::Replica;

impl Plane {
    /// Recomputes app `name`'s routing table now.
    pub fn refresh_routes(&self, name: &str) {
        let st = self.lock();
        if let Some(app) = st.apps.get(&key(name)) {
            app.publish_routes();
        }
    }
}

impl App {
    /// Publishes the routing table to the app's ingress: its policy, session affinity (single
    /// revision mode only: Learn, "Session affinity is only supported when your app is in
    /// single revision mode") and its backends.
    pub fn publish_routes(&self) {
        self.routes.set_policy(self.knobs.ingress);
        self.routes
            .set_sticky(!self.multiple && self.ingress.as_ref().is_some_and(|i| i.sticky));
        if self.multiple {
            self.publish_split_routes();
            return;
        }
        self.routes.set_split(None);
        let backends = self
            .revisions
            .iter()
            .flat_map(|r| routed_backends(&r.name, &r.replicas, r.traffic > 0))
            .collect();
        self.routes.set(backends);
    }

    /// Multiple mode's routing table: each revision with a weight or a label, its ready
    /// routable replicas (and lagging retiring ones, as in single mode) as its backends.
    fn publish_split_routes(&self) {
        let (weights, labels) = self.split_targets();
        let mut groups = Vec::new();
        let mut group_of = vec![None; self.revisions.len()];
        let mut all = Vec::new();
        for (i, r) in self.revisions.iter().enumerate() {
            let weight = weights.get(i).copied().unwrap_or(0);
            if weight == 0 && !labels.iter().any(|(_, x)| *x == i) {
                continue;
            }
            let mut backends = routed_backends(&r.name, &r.replicas, r.active);
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
        self.routes.set(all);
        self.routes.set_split(Some(Split { groups, labels }));
    }
}

/// The backends among revision `revision`'s `replicas`, each marked routed: a routable replica
/// that serves (`serves`, its revision's share of the traffic, and ready) or lags (retiring
/// and routed before), whatever its readiness.
fn routed_backends(revision: &str, replicas: &[Arc<Replica>], serves: bool) -> Vec<Backend> {
    let mut backends = Vec::new();
    for rep in replicas {
        let serving = serves && rep.ready();
        let lagging = rep.retiring.load(Ordering::SeqCst) && rep.routed.load(Ordering::SeqCst);
        if rep.routable.load(Ordering::SeqCst)
            && (serving || lagging)
            && let Some(addr) = rep.endpoint()
        {
            rep.routed.store(true, Ordering::SeqCst);
            backends.push(Backend {
                addr,
                revision: revision.to_owned(),
                replica: rep.name.clone(),
            });
        }
    }
    backends
}
