//! The ARM bodies of an environment, an app, its revisions and their replicas as a GET answers
//! them, as appmodel's types (the wire model the PUT bodies were parsed into): the properties
//! the client sent, with what the plane knows now (states, traffic, FQDNs).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use logline::Timestamp;
use serde_json::{Value, json};

use appmodel as wire;

use super::{App, EnvRes, LABEL_EXTENSION, Revision};
use crate::replica::Replica;

impl EnvRes {
    /// The environment as its GET answers it: the properties the client sent (unknown ones
    /// kept), provisioned, with localplane's domain and address.
    pub fn env_view(&self) -> wire::ManagedEnvironment {
        // The PUT that set them was parsed into this type before it was accepted
        // (`api::environments`), so they read back.
        let mut props: wire::ManagedEnvironmentProperties =
            serde_json::from_value(self.properties.clone()).unwrap_or_default();
        props.provisioning_state = Some("Succeeded".into());
        props.default_domain = Some(super::DEFAULT_DOMAIN.into());
        props.static_ip = Some("127.0.0.1".into());
        wire::ManagedEnvironment {
            id: Some(format!(
                "/subscriptions/{}/resourceGroups/{}/providers/Microsoft.App/managedEnvironments/{}",
                self.sub, self.rg, self.name
            )),
            name: Some(self.name.clone()),
            kind: Some("Microsoft.App/managedEnvironments".into()),
            location: Some(self.location.clone()),
            tags: serde_json::from_value(self.tags.clone()).ok(),
            properties: props,
            extra: wire::Extra::new(),
        }
    }
}

impl App {
    /// Single mode: `configuration.ingress.traffic` as localplane routes (a GET's view).
    fn single_traffic(&self, latest: Option<&String>) -> Vec<wire::TrafficWeight> {
        let traffic: Vec<wire::TrafficWeight> = self
            .revisions
            .iter()
            .filter(|r| r.traffic > 0)
            .map(|r| wire::TrafficWeight {
                revision_name: Some(r.name.clone()),
                weight: Some(r.traffic),
                latest_revision: Some(Some(&r.name) == latest),
                ..wire::TrafficWeight::default()
            })
            .collect();
        if traffic.is_empty() {
            vec![latest_takes_all()]
        } else {
            traffic
        }
    }

    /// Multiple mode: `configuration.ingress.traffic` as the rules say (a GET's view). An entry
    /// with a `label` also carries localplane's extension `localplaneLabel` when the app has
    /// ingress: `host`, the label host name to send as `Host`, and `url`, the address to send
    /// it to (the app's ingress port); the ARM spec has no per-label FQDN field.
    fn multiple_traffic(&self) -> Vec<wire::TrafficWeight> {
        if self.traffic_rules.is_empty() {
            return vec![latest_takes_all()];
        }
        self.traffic_rules
            .iter()
            .map(|r| {
                let mut e = match &r.target {
                    crate::traffic::Target::Latest => wire::TrafficWeight {
                        latest_revision: Some(true),
                        ..wire::TrafficWeight::default()
                    },
                    crate::traffic::Target::Revision(n) => wire::TrafficWeight {
                        revision_name: Some(n.clone()),
                        latest_revision: Some(false),
                        ..wire::TrafficWeight::default()
                    },
                };
                e.weight = Some(r.weight);
                if let Some(l) = &r.label {
                    e.label = Some(l.clone());
                    if let Some(port) = self.ingress_port {
                        e.extra.insert(
                            LABEL_EXTENSION.into(),
                            json!({
                                "host": self.label_host(l),
                                "url": format!("http://127.0.0.1:{port}"),
                            }),
                        );
                    }
                }
                e
            })
            .collect()
    }

    /// The app as its GET answers it: the properties the client sent (unknown ones kept), with
    /// what the plane knows now (states, the latest revision's template, traffic, FQDNs).
    pub fn app_view(&self, provisioning: &str) -> wire::ContainerApp {
        // The PUT or PATCH that set them was parsed into this type before it was accepted
        // (`api::apps`), so they read back.
        let mut props: wire::ContainerAppProperties =
            serde_json::from_value(self.properties.clone()).unwrap_or_default();
        let latest = self.latest().map(|r| r.name.clone());
        let fqdn = self.fqdn().unwrap_or_default();
        let env_id = props
            .environment_id
            .clone()
            .or_else(|| props.managed_environment_id.clone());
        props.provisioning_state = Some(provisioning.into());
        props.running_status = Some("Running".into());
        props.managed_environment_id.clone_from(&env_id);
        props.environment_id = env_id;
        props.latest_ready_revision_name = self
            .revisions
            .iter()
            .rev()
            .find(|r| r.provisioned)
            .map(|r| r.name.clone());
        props.latest_revision_fqdn = Some(fqdn.clone());
        props.outbound_ip_addresses = Some(vec!["127.0.0.1".into()]);
        props.event_stream_endpoint = Some(format!("{}/eventstream", self.id()));
        if let Some(t) = self.latest().and_then(|r| template_view(&r.template)) {
            props.template = Some(t);
        }
        let cfg = props
            .configuration
            .get_or_insert_with(wire::Configuration::default);
        cfg.active_revisions_mode
            .get_or_insert(wire::ActiveRevisionsMode::Single);
        if let Some(ing) = cfg.ingress.as_mut() {
            ing.fqdn = Some(fqdn);
            ing.transport.get_or_insert_with(|| "Auto".into());
            ing.allow_insecure.get_or_insert(false);
            ing.traffic = if self.multiple {
                self.multiple_traffic()
            } else {
                self.single_traffic(latest.as_ref())
            };
        }
        props.latest_revision_name = latest;
        wire::ContainerApp {
            id: Some(self.id()),
            name: Some(self.name.clone()),
            kind: Some("Microsoft.App/containerApps".into()),
            location: Some(self.location.clone()),
            tags: serde_json::from_value(self.tags.clone()).ok(),
            identity: None,
            properties: props,
            extra: wire::Extra::new(),
        }
    }

    /// The revision as its GET answers it.
    pub fn revision_view(&self, r: &Revision) -> wire::Revision {
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
        wire::Revision {
            id: Some(format!("{}/revisions/{}", self.id(), r.name)),
            name: r.name.clone(),
            kind: Some("Microsoft.App/containerApps/revisions".into()),
            properties: wire::RevisionProperties {
                created_time: Some(r.created.to_rfc3339_s()),
                last_active_time: Some(r.last_active.to_rfc3339_s()),
                fqdn: Some(self.fqdn().unwrap_or_default()),
                template: template_view(&r.template),
                active: r.active,
                replicas: u32::try_from(live.len()).unwrap_or(u32::MAX),
                traffic_weight: r.traffic,
                provisioning_error: None,
                health_state: Some(health.into()),
                provisioning_state: Some(provisioning.into()),
                running_state: Some(running.into()),
                running_state_details: details,
                extra: wire::Extra::new(),
            },
            extra: wire::Extra::new(),
        }
    }

    /// A replica of revision `r` as its GET answers it.
    pub fn replica_view(&self, r: &Revision, rep: &Replica) -> wire::Replica {
        let containers = rep
            .statuses()
            .into_iter()
            .map(|c| wire::ReplicaContainer {
                name: c.name,
                container_id: Some(c.container_id),
                ready: c.ready,
                started: c.started,
                restart_count: c.restart_count,
                running_state: Some(c.running_state.into()),
                running_state_details: Some(c.details),
                log_stream_endpoint: Some(String::new()),
                exec_endpoint: Some(String::new()),
                extra: wire::Extra::new(),
            })
            .collect();
        wire::Replica {
            id: Some(format!(
                "{}/revisions/{}/replicas/{}",
                self.id(),
                r.name,
                rep.name
            )),
            name: rep.name.clone(),
            kind: Some("Microsoft.App/containerApps/revisions/replicas".into()),
            properties: wire::ReplicaProperties {
                created_time: Some(rep.created.to_rfc3339_s()),
                running_state: Some(rep.running_state().into()),
                running_state_details: Some(String::new()),
                containers,
                init_containers: Some(Vec::new()),
                extra: wire::Extra::new(),
            },
            extra: wire::Extra::new(),
        }
    }
}

/// A revision's template as the wire type. The PUT or PATCH that made the revision was parsed
/// into this type before it was accepted (`api::apps`), so it reads back; a template that did
/// not would be left out rather than invented.
fn template_view(template: &Value) -> Option<wire::Template> {
    serde_json::from_value(template.clone()).ok()
}

/// The traffic entry of an app without rules: every request to the latest revision.
fn latest_takes_all() -> wire::TrafficWeight {
    wire::TrafficWeight {
        weight: Some(100),
        latest_revision: Some(true),
        ..wire::TrafficWeight::default()
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
    fn an_environment_reads_back_as_sent_provisioned_with_localplanes_domain() {
        let env = EnvRes {
            sub: "sub".into(),
            rg: "rg".into(),
            name: "env".into(),
            location: "West Europe".into(),
            tags: json!({"team": "lab"}),
            properties: json!({
                "zoneRedundant": false,
                "workloadProfiles": [{"name": "Consumption", "workloadProfileType": "Consumption"}]
            }),
        };
        let body = serde_json::to_value(env.env_view()).expect("serializes");
        assert_eq!(
            body,
            json!({
                "id": "/subscriptions/sub/resourceGroups/rg/providers/Microsoft.App/managedEnvironments/env",
                "name": "env",
                "type": "Microsoft.App/managedEnvironments",
                "location": "West Europe",
                "tags": {"team": "lab"},
                "properties": {
                    "provisioningState": "Succeeded",
                    "defaultDomain": "localplane.internal",
                    "staticIp": "127.0.0.1",
                    "zoneRedundant": false,
                    "workloadProfiles": [{"name": "Consumption", "workloadProfileType": "Consumption"}]
                }
            })
        );
    }

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
