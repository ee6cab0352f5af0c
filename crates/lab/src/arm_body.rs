//! A lab app rendered as a Microsoft.App `containerApps` PUT body (and a lab job as a `jobs` one): an [`appmodel::ContainerApp`],
//! the one model of the resource that `arm` sends and localplane parses.
//!
//! The same body goes to Azure and to localplane; emulator-only knobs travel as resource tags
//! (`localplane.*`), which Azure stores and ignores.

use std::collections::BTreeMap;

use appmodel::{
    ActiveRevisionsMode, Affinity, Configuration, Container, ContainerApp, ContainerAppProperties,
    ContainerResources, EnvVar, EventTriggerConfig, HttpGetAction, HttpScaleRule, Ingress,
    JobConfiguration, JobProperties, JobScale, JobScaleRule, ManagedServiceIdentity, ProbeType,
    RegistryCredentials, Scale, ScaleRule, ScheduleTriggerConfig, Secret, StickySessions,
    TcpSocketAction, Template, TrafficWeight, TriggerType,
};
use serde_json::{Map, Value};

use crate::schema::{App, EventTrigger, Job, Probe, RevisionsMode, TrafficEntry, Trigger};

/// The secret name `SIMULATE_TOKEN` is stored under in each subject app.
pub const SIMULATE_TOKEN_SECRET: &str = "simulate-token";

/// Where the app goes and what it carries besides the lab's own spec.
#[derive(Clone, Debug)]
pub struct Placement<'a> {
    pub location: &'a str,
    /// The managed environment's resource id.
    pub environment_id: &'a str,
    /// When set, stored as a Container Apps secret and passed as `SIMULATE_TOKEN` by secretRef,
    /// so the value never appears in the template's env.
    pub simulate_token: Option<&'a str>,
    /// Extra tags (e.g. `lab`, `run`).
    pub tags: &'a [(&'a str, &'a str)],
    /// The private registry the image is pulled from, with the user-assigned identity that has
    /// `AcrPull` on it (Azure). `None` for images the platform can pull without credentials
    /// (localplane, which never pulls).
    pub registry: Option<Registry<'a>>,
}

/// A registry the app pulls from with a user-assigned managed identity (never a password).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Registry<'a> {
    /// The login server, e.g. `myacr.azurecr.io`.
    pub server: &'a str,
    /// The resource id of the user-assigned identity with `AcrPull` on the registry.
    pub identity: &'a str,
}

/// `template.scale`: the fixed count as `minReplicas = maxReplicas`, or the lab's scale rule
/// (an `http` rule named `http-concurrency` when it sets `concurrent_requests`, else no rule,
/// which is Container Apps' default HTTP rule).
fn scale(app: &App) -> Scale {
    let Some(s) = &app.scale else {
        return Scale {
            min_replicas: Some(app.min_replicas()),
            max_replicas: Some(app.max_replicas()),
            ..Scale::default()
        };
    };
    let rules = s
        .concurrent_requests
        .map(|n| ScaleRule {
            name: Some("http-concurrency".to_owned()),
            http: Some(HttpScaleRule {
                metadata: Some(BTreeMap::from([(
                    "concurrentRequests".to_owned(),
                    n.to_string(),
                )])),
                ..HttpScaleRule::default()
            }),
            ..ScaleRule::default()
        })
        .into_iter()
        .collect();
    Scale {
        min_replicas: Some(s.min_replicas),
        max_replicas: Some(s.max_replicas),
        cooldown_period: s.cooldown_seconds,
        polling_interval: s.polling_seconds,
        rules,
        ..Scale::default()
    }
}

/// The PUT body for `app`, as the wire model `arm` sends and localplane parses.
pub fn container_app(app: &App, at: &Placement<'_>) -> ContainerApp {
    let mut env = env_vars(&app.env);
    let mut configuration = Configuration {
        active_revisions_mode: Some(match app.revisions_mode {
            RevisionsMode::Single => ActiveRevisionsMode::Single,
            RevisionsMode::Multiple => ActiveRevisionsMode::Multiple,
        }),
        ingress: app.ingress.as_ref().map(|ing| Ingress {
            external: Some(ing.external),
            target_port: Some(i32::from(ing.target_port)),
            transport: Some("auto".to_owned()),
            traffic: traffic_weights(&app.name, &app.traffic),
            sticky_sessions: ing.sticky_sessions.then(|| StickySessions {
                affinity: Some(Affinity::Sticky),
                ..StickySessions::default()
            }),
            ..Ingress::default()
        }),
        ..Configuration::default()
    };
    if let Some(token) = at.simulate_token {
        configuration.secrets = Some(vec![Secret {
            name: Some(SIMULATE_TOKEN_SECRET.to_owned()),
            value: Some(token.to_owned()),
            ..Secret::default()
        }]);
        env.retain(|e| e.name != "SIMULATE_TOKEN");
        env.push(EnvVar {
            name: "SIMULATE_TOKEN".to_owned(),
            secret_ref: Some(SIMULATE_TOKEN_SECRET.to_owned()),
            ..EnvVar::default()
        });
    }
    configuration.registries = at.registry.map(registries);
    let template = Template {
        containers: vec![Container {
            name: Some(app.name.clone()),
            image: Some(app.image.clone()),
            env,
            probes: app.probes.iter().map(probe).collect(),
            resources: Some(ContainerResources {
                cpu: Some(0.5),
                memory: Some("1Gi".to_owned()),
                ..ContainerResources::default()
            }),
            ..Container::default()
        }],
        scale: Some(scale(app)),
        termination_grace_period_seconds: app.termination_grace_seconds,
        revision_suffix: app.revision_suffix.clone(),
        ..Template::default()
    };
    let tags = tags(app, at);
    ContainerApp {
        location: Some(at.location.to_owned()),
        tags: Some(tags),
        // The registry entry names the identity; the app must also be assigned it.
        identity: at.registry.map(|r| user_assigned(r.identity)),
        properties: ContainerAppProperties {
            environment_id: Some(at.environment_id.to_owned()),
            configuration: Some(configuration),
            template: Some(template),
            ..ContainerAppProperties::default()
        },
        ..ContainerApp::default()
    }
}

/// A lab job rendered as a `Microsoft.App/jobs` PUT body, in the shape of the spec's
/// `Job_CreateOrUpdate` examples for its trigger: `manualTriggerConfig` or
/// `scheduleTriggerConfig` (`cronExpression`) with `parallelism` and `replicaCompletionCount`,
/// or `eventTriggerConfig` with one `metrics-api` rule named `queue-length` reading
/// `http://<queue_app>/queue`'s `length` (an app's name reaches it inside the environment),
/// `targetValue` the items per execution. A job without exactly one trigger (which `lab::load`
/// rejects) renders as a Manual one.
pub fn job(job: &Job, at: &Placement<'_>) -> appmodel::Job {
    let per_execution = job.replicas_per_execution();
    let env = env_vars(&job.env);
    let mut configuration = JobConfiguration {
        replica_timeout: Some(job.replica_timeout_seconds),
        replica_retry_limit: Some(job.replica_retry_limit),
        registries: at.registry.map(registries),
        ..JobConfiguration::default()
    };
    match job.trigger() {
        Some(Trigger::Event(e)) => {
            configuration.trigger_type = Some(TriggerType::Event);
            configuration.event_trigger_config = Some(event_trigger(e, per_execution));
        }
        Some(Trigger::Schedule(s)) => {
            configuration.trigger_type = Some(TriggerType::Schedule);
            configuration.schedule_trigger_config = Some(ScheduleTriggerConfig {
                cron_expression: Some(s.cron.clone()),
                parallelism: Some(per_execution),
                replica_completion_count: Some(per_execution),
                ..ScheduleTriggerConfig::default()
            });
        }
        Some(Trigger::Manual) | None => {
            configuration.trigger_type = Some(TriggerType::Manual);
            configuration.manual_trigger_config = Some(serde_json::json!({
                "parallelism": per_execution,
                "replicaCompletionCount": per_execution,
            }));
        }
    }
    let mut tags: BTreeMap<String, String> = at
        .tags
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    tags.extend(job.localplane_tags());
    appmodel::Job {
        location: Some(at.location.to_owned()),
        tags: Some(tags),
        identity: at.registry.map(|r| user_assigned(r.identity)),
        properties: JobProperties {
            environment_id: Some(at.environment_id.to_owned()),
            configuration: Some(configuration),
            template: Some(Template {
                containers: vec![Container {
                    name: Some(job.name.clone()),
                    image: Some(job.image.clone()),
                    env,
                    resources: Some(ContainerResources {
                        cpu: Some(0.25),
                        memory: Some("0.5Gi".to_owned()),
                        ..ContainerResources::default()
                    }),
                    ..Container::default()
                }],
                ..Template::default()
            }),
            ..JobProperties::default()
        },
        ..appmodel::Job::default()
    }
}

/// `eventTriggerConfig` of an event-driven lab job.
fn event_trigger(e: &EventTrigger, per_execution: u32) -> EventTriggerConfig {
    let rule = JobScaleRule {
        name: Some("queue-length".to_owned()),
        kind: Some("metrics-api".to_owned()),
        metadata: Some(serde_json::json!({
            "url": format!("http://{}/queue", e.queue_app),
            "valueLocation": "length",
            "targetValue": e.items_per_execution.unwrap_or(1).to_string(),
        })),
        ..JobScaleRule::default()
    };
    EventTriggerConfig {
        parallelism: Some(per_execution),
        replica_completion_count: Some(per_execution),
        scale: Some(JobScale {
            polling_interval: Some(e.polling_seconds),
            min_executions: Some(e.min_executions),
            max_executions: Some(e.max_executions),
            rules: vec![rule],
            ..JobScale::default()
        }),
        ..EventTriggerConfig::default()
    }
}

/// A container's env as `EnvVar`s, by name.
fn env_vars(env: &BTreeMap<String, String>) -> Vec<EnvVar> {
    env.iter()
        .map(|(k, v)| EnvVar {
            name: k.clone(),
            value: Some(v.clone()),
            ..EnvVar::default()
        })
        .collect()
}

/// `configuration.registries`: the registry, pulled from with its identity (never a password).
fn registries(r: Registry<'_>) -> Vec<RegistryCredentials> {
    vec![RegistryCredentials {
        server: Some(r.server.to_owned()),
        identity: Some(r.identity.to_owned()),
        ..RegistryCredentials::default()
    }]
}

/// The identity block assigning one user-assigned identity.
fn user_assigned(identity: &str) -> ManagedServiceIdentity {
    ManagedServiceIdentity {
        kind: "UserAssigned".to_owned(),
        user_assigned_identities: Some(BTreeMap::from([(
            identity.to_owned(),
            Value::Object(Map::new()),
        )])),
        ..ManagedServiceIdentity::default()
    }
}

/// The app's tags: the placement's (e.g. `lab`, `run`) and its emulator knobs as `localplane.*`
/// tags, which Azure stores and ignores.
fn tags(app: &App, at: &Placement<'_>) -> BTreeMap<String, String> {
    let mut tags: BTreeMap<String, String> = at
        .tags
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    tags.extend(app.localplane_tags());
    tags
}

/// The revision a lab names by its suffix: `<app>--<suffix>`, as Container Apps names it.
pub fn revision_name(app: &str, suffix: &str) -> String {
    format!("{app}--{suffix}")
}

/// A lab's traffic entries as `ingress.traffic` (`TrafficWeight`s) of app `app`.
pub fn traffic_weights(app: &str, entries: &[TrafficEntry]) -> Vec<TrafficWeight> {
    entries
        .iter()
        .map(|e| TrafficWeight {
            revision_name: e.revision.as_deref().map(|s| revision_name(app, s)),
            latest_revision: e.latest.then_some(true),
            weight: Some(e.weight),
            label: e.label.clone(),
            ..TrafficWeight::default()
        })
        .collect()
}

fn probe(p: &Probe) -> appmodel::Probe {
    let port = i32::from(p.port);
    let (http_get, tcp_socket) = match &p.path {
        Some(path) => (
            Some(HttpGetAction {
                path: Some(path.clone()),
                port,
                ..HttpGetAction::default()
            }),
            None,
        ),
        None => (
            None,
            Some(TcpSocketAction {
                port,
                ..TcpSocketAction::default()
            }),
        ),
    };
    appmodel::Probe {
        probe_type: Some(ProbeType::from(p.kind.as_str())),
        http_get,
        tcp_socket,
        initial_delay_seconds: p.initial_delay_seconds,
        period_seconds: p.period_seconds,
        timeout_seconds: p.timeout_seconds,
        failure_threshold: p.failure_threshold,
        success_threshold: p.success_threshold,
        ..appmodel::Probe::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Ingress;
    use serde_json::json;

    /// The body as it goes on the wire.
    fn wire(app: &App, at: &Placement<'_>) -> Value {
        serde_json::to_value(container_app(app, at)).unwrap()
    }

    fn app() -> App {
        App {
            name: "subject".into(),
            image: "probelab/subject:dev".into(),
            replicas: Some(3),
            scale: None,
            termination_grace_seconds: Some(30),
            ingress: Some(Ingress {
                external: true,
                target_port: 8080,
                sticky_sessions: false,
            }),
            env: [("STARTUP_DELAY_SECONDS".to_owned(), "25".to_owned())].into(),
            probes: vec![
                Probe {
                    kind: "Readiness".into(),
                    path: Some("/healthz".into()),
                    port: 8080,
                    initial_delay_seconds: None,
                    period_seconds: Some(5),
                    timeout_seconds: Some(3),
                    failure_threshold: Some(3),
                    success_threshold: None,
                },
                Probe {
                    kind: "Liveness".into(),
                    path: None,
                    port: 8080,
                    initial_delay_seconds: None,
                    period_seconds: None,
                    timeout_seconds: None,
                    failure_threshold: None,
                    success_threshold: None,
                },
            ],
            revision_ready: Some("firstReplica".into()),
            new_revision_replicas: Some("minReplicas".into()),
            drain_delay_seconds: Some(15),
            routing_removal_lag_ms: None,
            http_metric: Some("peakInFlight".into()),
            scale_up: None,
            scale_down_stabilization: Some("cooldownPeriod".into()),
            ingress_timeout: Some("request".into()),
            connect_retries: Some(0),
            maintenance: Some("stopFirst".into()),
            progress_deadline_seconds: Some(45),
            revisions_mode: RevisionsMode::Single,
            revision_suffix: None,
            traffic: Vec::new(),
            wait_ready: true,
        }
    }

    /// Where a test's app goes: a local environment, no tags, no registry.
    const LOCAL: Placement<'static> = Placement {
        location: "local",
        environment_id: "env",
        simulate_token: None,
        tags: &[],
        registry: None,
    };

    #[test]
    fn multiple_mode_names_its_first_revision_and_gives_it_the_traffic() {
        let at = LOCAL;
        let single = wire(&app(), &at);
        assert_eq!(
            single["properties"]["configuration"]["activeRevisionsMode"],
            "Single"
        );
        assert!(single["properties"]["template"]["revisionSuffix"].is_null());
        let mut a = app();
        a.revisions_mode = RevisionsMode::Multiple;
        a.revision_suffix = Some("blue".into());
        a.traffic = vec![
            TrafficEntry {
                revision: Some("blue".into()),
                latest: false,
                weight: 100,
                label: Some("blue".into()),
            },
            TrafficEntry {
                revision: None,
                latest: true,
                weight: 0,
                label: None,
            },
        ];
        let body = wire(&a, &at);
        let c = &body["properties"]["configuration"];
        assert_eq!(c["activeRevisionsMode"], "Multiple");
        assert_eq!(
            c["ingress"]["traffic"],
            json!([
                {"revisionName": "subject--blue", "weight": 100, "label": "blue"},
                {"latestRevision": true, "weight": 0}
            ])
        );
        assert_eq!(body["properties"]["template"]["revisionSuffix"], "blue");
    }

    #[test]
    fn sticky_sessions_become_the_ingress_affinity_only_when_asked_for() {
        let at = LOCAL;
        let plain = wire(&app(), &at);
        assert!(plain["properties"]["configuration"]["ingress"]["stickySessions"].is_null());
        let mut a = app();
        if let Some(i) = a.ingress.as_mut() {
            i.sticky_sessions = true;
        }
        let body = wire(&a, &at);
        assert_eq!(
            body["properties"]["configuration"]["ingress"]["stickySessions"],
            json!({"affinity": "sticky"})
        );
    }

    #[test]
    fn renders_the_container_apps_template_shape() {
        let at = Placement {
            location: "swedencentral",
            environment_id: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.App/managedEnvironments/env",
            simulate_token: None,
            tags: &[("lab", "startup-degraded")],
            registry: None,
        };
        let body = wire(&app(), &at);
        let t = &body["properties"]["template"];
        assert_eq!(t["scale"]["minReplicas"], 3);
        assert_eq!(t["scale"]["maxReplicas"], 3);
        assert_eq!(t["terminationGracePeriodSeconds"], 30);
        let c = &t["containers"][0];
        assert_eq!(c["image"], "probelab/subject:dev");
        assert_eq!(
            c["env"][0],
            json!({"name": "STARTUP_DELAY_SECONDS", "value": "25"})
        );
        assert_eq!(c["probes"][0]["httpGet"]["path"], "/healthz");
        assert_eq!(c["probes"][0]["periodSeconds"], 5);
        assert_eq!(c["probes"][1]["tcpSocket"]["port"], 8080);
        assert!(
            c["probes"][1].get("periodSeconds").is_none(),
            "defaults are the platform's"
        );
        let cfg = &body["properties"]["configuration"];
        assert_eq!(cfg["ingress"]["targetPort"], 8080);
        assert_eq!(cfg["activeRevisionsMode"], "Single");
        assert_eq!(body["tags"]["localplane.revisionReady"], "firstReplica");
        assert_eq!(
            body["tags"]["localplane.newRevisionReplicas"],
            "minReplicas"
        );
        assert_eq!(body["tags"]["localplane.drainDelaySeconds"], "15");
        assert_eq!(body["tags"]["localplane.httpMetric"], "peakInFlight");
        assert_eq!(
            body["tags"]["localplane.scaleDownStabilization"],
            "cooldownPeriod"
        );
        assert!(body["tags"].get("localplane.scaleUp").is_none());
        assert_eq!(body["tags"]["localplane.ingressTimeout"], "request");
        assert_eq!(body["tags"]["localplane.connectRetries"], "0");
        assert_eq!(body["tags"]["localplane.maintenance"], "stopFirst");
        assert_eq!(body["tags"]["localplane.progressDeadlineSeconds"], "45");
        assert_eq!(body["tags"]["lab"], "startup-degraded");
        // No registry: nothing about pulling, no identity (what localplane gets).
        assert!(cfg.get("registries").is_none());
        assert!(body.get("identity").is_none());
    }

    #[test]
    fn a_scale_block_renders_the_http_rule_and_the_periods() {
        let at = LOCAL;
        let mut a = app();
        a.replicas = None;
        a.scale = Some(crate::schema::AppScale {
            min_replicas: 0,
            max_replicas: 3,
            concurrent_requests: Some(4),
            polling_seconds: Some(1),
            cooldown_seconds: Some(10),
        });
        let s = &wire(&a, &at)["properties"]["template"]["scale"];
        assert_eq!(
            *s,
            json!({"minReplicas": 0, "maxReplicas": 3, "cooldownPeriod": 10, "pollingInterval": 1,
                   "rules": [{"name": "http-concurrency",
                              "http": {"metadata": {"concurrentRequests": "4"}}}]})
        );
        // Without concurrent_requests and the periods: the platform's defaults, no rule.
        a.scale = Some(crate::schema::AppScale {
            min_replicas: 0,
            max_replicas: 10,
            concurrent_requests: None,
            polling_seconds: None,
            cooldown_seconds: None,
        });
        let s = &wire(&a, &at)["properties"]["template"]["scale"];
        assert_eq!(*s, json!({"minReplicas": 0, "maxReplicas": 10}));
    }

    #[test]
    fn an_app_on_azure_pulls_from_the_registry_with_the_pull_identity() {
        let pull = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/probelab-pull";
        let mut a = app();
        a.image = "probelabacr1.azurecr.io/probelab/subject:dev".into();
        let at = Placement {
            location: "swedencentral",
            environment_id: "e",
            simulate_token: None,
            tags: &[],
            registry: Some(Registry {
                server: "probelabacr1.azurecr.io",
                identity: pull,
            }),
        };
        let body = wire(&a, &at);
        assert_eq!(
            body["properties"]["configuration"]["registries"],
            json!([{ "server": "probelabacr1.azurecr.io", "identity": pull }])
        );
        assert_eq!(body["identity"]["type"], "UserAssigned");
        assert_eq!(
            body["identity"]["userAssignedIdentities"],
            json!({ pull: {} }),
            "the app is assigned exactly the pull identity"
        );
        // Never a password: the registry entry has no username or passwordSecretRef.
        let reg = &body["properties"]["configuration"]["registries"][0];
        assert!(reg.get("username").is_none() && reg.get("passwordSecretRef").is_none());
        // The rest of the body is unchanged by the registry.
        assert_eq!(
            body["properties"]["configuration"]["ingress"]["targetPort"],
            8080
        );
    }

    /// The key paths of the spec example `Job_CreateorUpdate_EventTrigger.json` (2024-03-01):
    /// `configuration.triggerType`, `eventTriggerConfig` with `parallelism`,
    /// `replicaCompletionCount` and `scale` {`pollingInterval`, `minExecutions`,
    /// `maxExecutions`, `rules` [{`name`, `type`, `metadata`}]}.
    #[test]
    fn a_lab_job_renders_the_spec_examples_event_trigger_shape() {
        let job: Job = toml::from_str(
            r#"
name = "worker"
image = "probelab/subject:dev"
replica_timeout_seconds = 60
replica_retry_limit = 2
parallelism = 2
env = { APP_MODE = "queue-worker" }
[event]
queue_app = "queue"
polling_seconds = 5
max_executions = 4
items_per_execution = 3
"#,
        )
        .unwrap();
        let at = Placement {
            location: "local",
            environment_id: "e",
            simulate_token: None,
            tags: &[("lab", "l")],
            registry: None,
        };
        let body = serde_json::to_value(super::job(&job, &at)).unwrap();
        let c = &body["properties"]["configuration"];
        assert_eq!(c["triggerType"], "Event");
        assert_eq!(
            (c["replicaTimeout"].clone(), c["replicaRetryLimit"].clone()),
            (json!(60), json!(2))
        );
        assert_eq!(
            c["eventTriggerConfig"],
            json!({
                "parallelism": 2,
                "replicaCompletionCount": 2,
                "scale": {
                    "pollingInterval": 5,
                    "minExecutions": 0,
                    "maxExecutions": 4,
                    "rules": [{
                        "name": "queue-length",
                        "type": "metrics-api",
                        "metadata": {
                            "url": "http://queue/queue",
                            "valueLocation": "length",
                            "targetValue": "3"
                        }
                    }]
                }
            })
        );
        let container = &body["properties"]["template"]["containers"][0];
        assert_eq!(container["image"], "probelab/subject:dev");
        assert_eq!(
            container["env"],
            json!([{ "name": "APP_MODE", "value": "queue-worker" }])
        );
        assert_eq!(body["tags"], json!({ "lab": "l" }));
        assert!(body.get("identity").is_none() && c.get("registries").is_none());
    }

    /// The manual and schedule triggers as the spec's `JobConfiguration` defines them:
    /// `manualTriggerConfig` / `scheduleTriggerConfig` (`cronExpression`) with `parallelism`
    /// and `replicaCompletionCount`; the timeout scope as its localplane tag.
    #[test]
    fn manual_and_scheduled_lab_jobs_render_their_trigger_configs() {
        let at = Placement {
            location: "local",
            environment_id: "e",
            simulate_token: None,
            tags: &[("lab", "l")],
            registry: None,
        };
        let base = r#"
name = "batch"
image = "probelab/subject:dev"
replica_timeout_seconds = 5
replica_retry_limit = 1
"#;
        let manual: Job = toml::from_str(&format!(
            "{base}replica_timeout_scope = \"execution\"\nmanual = {{}}\n"
        ))
        .unwrap();
        let body = serde_json::to_value(super::job(&manual, &at)).unwrap();
        let c = &body["properties"]["configuration"];
        assert_eq!(c["triggerType"], "Manual");
        assert_eq!(
            c["manualTriggerConfig"],
            json!({ "parallelism": 1, "replicaCompletionCount": 1 })
        );
        assert!(c.get("eventTriggerConfig").is_none() && c.get("scheduleTriggerConfig").is_none());
        assert_eq!(
            body["tags"],
            json!({ "lab": "l", "localplane.replicaTimeout": "execution" })
        );
        let scheduled: Job =
            toml::from_str(&format!("{base}[schedule]\ncron = \"*/1 * * * *\"\n")).unwrap();
        let body = serde_json::to_value(super::job(&scheduled, &at)).unwrap();
        let c = &body["properties"]["configuration"];
        assert_eq!(c["triggerType"], "Schedule");
        assert_eq!(
            c["scheduleTriggerConfig"],
            json!({ "cronExpression": "*/1 * * * *", "parallelism": 1, "replicaCompletionCount": 1 })
        );
        assert!(c.get("manualTriggerConfig").is_none());
        assert_eq!(body["tags"], json!({ "lab": "l" }));
    }

    #[test]
    fn simulate_token_travels_as_a_secret_ref_never_as_a_value() {
        let mut a = app();
        a.env.insert("SIMULATE_TOKEN".into(), "leaky".into());
        let at = Placement {
            location: "l",
            environment_id: "e",
            simulate_token: Some("s3cret"),
            tags: &[],
            registry: None,
        };
        let body = wire(&a, &at);
        let env = body["properties"]["template"]["containers"][0]["env"]
            .as_array()
            .unwrap();
        let token: Vec<_> = env
            .iter()
            .filter(|e| e["name"] == "SIMULATE_TOKEN")
            .collect();
        assert_eq!(token.len(), 1);
        assert_eq!(token[0]["secretRef"], SIMULATE_TOKEN_SECRET);
        assert!(token[0].get("value").is_none());
        assert!(
            !body["properties"]["template"]
                .to_string()
                .contains("s3cret")
        );
        assert!(!body.to_string().contains("leaky"));
        assert_eq!(
            body["properties"]["configuration"]["secrets"][0]["value"],
            "s3cret"
        );
    }
}
