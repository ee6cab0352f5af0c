//! localplane (a [`Harness`]) driven through the `arm` crate's typed client, with one managed
//! environment and the subject app: where the sampler's tests and the images' tests start
//! (feature `localplane`). localplane's own tests speak raw JSON to the same API on purpose (the
//! wire is what they test) and share only [`SUBSCRIPTION`] and [`resource_path`].

use std::time::{Duration, Instant};

use arm::client::Method;
use arm::models::{ContainerApp, Replica, Revision};
use arm::{ArmClient, ClientConfig, Scope, TokenSource};
use serde_json::json;

use crate::localplane::Harness;

pub use crate::SUBSCRIPTION;

/// The app under test: the subject image.
pub const APP: &str = "subject";

/// The managed environment [`ArmPlane::on`] creates.
pub const ENVIRONMENT: &str = "env";

/// How often the typed client polls a long-running operation here (localplane answers fast).
const LRO_POLL: Duration = Duration::from_millis(200);

/// `/subscriptions/<SUBSCRIPTION>/resourceGroups/<rg>/providers/Microsoft.App/<kind>/<name>`.
pub fn resource_path(rg: &str, kind: &str, name: &str) -> String {
    format!(
        "/subscriptions/{SUBSCRIPTION}/resourceGroups/{rg}/providers/Microsoft.App/{kind}/{name}"
    )
}

/// What one look at the app found.
enum Settle {
    /// The active revision and its replicas, as asked.
    Settled(Box<Revision>, Vec<Replica>),
    /// Not yet: what was seen instead.
    Waiting { last_seen: String },
}

/// A localplane with a typed ARM client (no token) and the managed environment
/// [`ENVIRONMENT`] in one resource group.
pub struct ArmPlane {
    pub plane: Harness,
    pub arm: ArmClient,
    pub scope: Scope,
}

impl ArmPlane {
    /// Takes `plane`, makes a typed client for it and PUTs [`ENVIRONMENT`] in resource group
    /// `rg`.
    ///
    /// # Panics
    /// When the client cannot be made or the environment is not created.
    pub async fn on(plane: Harness, rg: &str) -> ArmPlane {
        let endpoint = plane
            .base_url()
            .parse()
            .unwrap_or_else(|e| panic!("base url {}: {e}", plane.base_url()));
        let mut cfg = ClientConfig::new(endpoint);
        cfg.lro_poll = LRO_POLL;
        let arm = ArmClient::new(cfg, TokenSource::none())
            .unwrap_or_else(|e| panic!("ARM client for localplane: {e}"));
        let lab = ArmPlane {
            plane,
            arm,
            scope: Scope::new(SUBSCRIPTION, rg),
        };
        let url = lab
            .arm
            .resource_url(&lab.environment_id())
            .unwrap_or_else(|e| panic!("environment url: {e}"));
        lab.arm
            .send_and_wait(
                "put_env",
                Method::PUT,
                url,
                Some(&json!({"location": "local", "properties": {}})),
            )
            .await
            .unwrap_or_else(|e| panic!("PUT managed environment: {e}"));
        lab
    }

    /// The environment's resource id.
    pub fn environment_id(&self) -> String {
        resource_path(
            &self.scope.resource_group,
            "managedEnvironments",
            ENVIRONMENT,
        )
    }

    /// PUTs app [`APP`] (the subject image, `replicas` replicas, no startup delay, 1 s startup
    /// and readiness probes, 1 s grace) and waits (at most 60 s) until its one revision has them
    /// all ready. Returns that revision.
    ///
    /// # Panics
    /// When the PUT fails or the app does not settle.
    pub async fn put_subject(&self, replicas: u32) -> Revision {
        let app: ContainerApp = serde_json::from_value(json!({
            "location": "local",
            "properties": {
                "environmentId": self.environment_id(),
                "configuration": {"activeRevisionsMode": "Single",
                                  "ingress": {"external": true, "targetPort": 8080}},
                "template": {
                    "terminationGracePeriodSeconds": 1,
                    "containers": [{
                        "name": "subject",
                        "image": "probelab/subject:dev",
                        "env": [{"name": "STARTUP_DELAY_SECONDS", "value": "0"}],
                        "probes": [
                            {"type": "Startup", "httpGet": {"path": "/healthz", "port": 8080},
                             "periodSeconds": 1, "failureThreshold": 30},
                            {"type": "Readiness", "httpGet": {"path": "/healthz", "port": 8080},
                             "periodSeconds": 1, "failureThreshold": 3}
                        ]
                    }],
                    "scale": {"minReplicas": replicas, "maxReplicas": replicas}
                }
            }
        }))
        .unwrap_or_else(|e| panic!("app body: {e}"));
        self.arm
            .put_app(&self.scope, APP, &app)
            .await
            .unwrap_or_else(|e| panic!("PUT app {APP}: {e}"));
        self.settle(1, replicas, Duration::from_secs(60)).await.0
    }

    /// Waits (at most `limit`) until [`APP`] has `revisions` revisions, one of them active with
    /// `replicas` replicas whose containers are all started and ready, the others without
    /// replicas. Returns the active revision and its replicas.
    ///
    /// # Panics
    /// When it does not, with the last state seen.
    pub async fn settle(
        &self,
        revisions: usize,
        replicas: u32,
        limit: Duration,
    ) -> (Revision, Vec<Replica>) {
        let start = Instant::now();
        loop {
            let last = match self.settled(revisions, replicas).await {
                Settle::Settled(revision, replicas) => return (*revision, replicas),
                Settle::Waiting { last_seen } => last_seen,
            };
            assert!(
                start.elapsed() < limit,
                "app {APP} did not settle on {revisions} revision(s) with {replicas} ready \
                 replica(s) within {limit:?}; last seen: {last}"
            );
            tokio::time::sleep(LRO_POLL).await;
        }
    }

    async fn settled(&self, revisions: usize, replicas: u32) -> Settle {
        let waiting = |last_seen: String| Settle::Waiting { last_seen };
        let revs = match self.arm.list_revisions(&self.scope, APP).await {
            Ok(revs) => revs,
            Err(e) => return waiting(format!("list revisions: {e}")),
        };
        let summary = || {
            revs.iter()
                .map(|r| {
                    format!(
                        "{} active={} replicas={} traffic={}",
                        r.name,
                        r.properties.active,
                        r.properties.replicas,
                        r.properties.traffic_weight
                    )
                })
                .collect::<Vec<_>>()
                .join("; ")
        };
        let active: Vec<&Revision> = revs.iter().filter(|r| r.properties.active).collect();
        let others_empty = revs
            .iter()
            .filter(|r| !r.properties.active)
            .all(|r| r.properties.replicas == 0);
        if revs.len() != revisions || active.len() != 1 || !others_empty {
            return waiting(summary());
        }
        let reps = match self
            .arm
            .list_replicas(&self.scope, APP, &active[0].name)
            .await
        {
            Ok(reps) => reps,
            Err(e) => return waiting(format!("list replicas: {e}")),
        };
        let ready = reps.iter().all(|r| {
            !r.properties.containers.is_empty()
                && r.properties.containers.iter().all(|c| c.ready && c.started)
        });
        if reps.len() != replicas as usize || !ready {
            return waiting(format!(
                "{}; {} replica(s), ready={ready}",
                summary(),
                reps.len()
            ));
        }
        Settle::Settled(Box::new(active[0].clone()), reps)
    }

    /// Shuts localplane down ([`Harness::stop`]).
    pub async fn stop(self) {
        self.plane.stop().await;
    }
}
