//! The ARM bodies of an app, its revisions and their replicas as a GET answers them: the
//! properties the client sent, with what the plane knows now (states, traffic, FQDNs).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use logline::Timestamp;
use serde_json::{Value, json};

use super::{App, LABEL_EXTENSION, Revision};
use crate::replica::Replica;

impl App {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
