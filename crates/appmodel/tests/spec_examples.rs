//! The models against the example payloads of the Microsoft.App REST specification.
//!
//! Fixtures are copied verbatim from Azure/azure-rest-api-specs,
//! `specification/app/resource-manager/Microsoft.App/stable/<version>/examples/<name>.json`:
//! Revisions_List, ContainerApps_Get, Job_Get, Job_Executions_Get, Job_Execution_Get and
//! Job_Start from 2024-03-01; from ContainerApps_CreateOrUpdate (2024-03-01) its request only,
//! `ContainerApps_CreateOrUpdate_request.json` (the PUT body a client sends); Replicas_List from 2025-01-01 (the first stable version whose example
//! shows `runningState`).

#![allow(clippy::unwrap_used)] // test helpers: a failure is the test failing

use appmodel::*;
use serde_json::Value;

fn example(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn body(name: &str) -> Value {
    example(name)["responses"]["200"]["body"].clone()
}

/// Serialising what we parsed gives back the same JSON: nothing is lost on a round-trip
/// (`null`s aside, which we omit).
fn assert_lossless<T: serde::Serialize + serde::de::DeserializeOwned>(v: &Value) -> T {
    let parsed: T = serde_json::from_value(v.clone()).unwrap();
    let mut back = serde_json::to_value(&parsed).unwrap();
    let mut want = v.clone();
    strip_nulls(&mut want);
    strip_nulls(&mut back);
    assert_eq!(back, want);
    parsed
}

fn strip_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, x| !x.is_null());
            m.values_mut().for_each(strip_nulls);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

#[test]
fn revisions_list_example_parses() {
    let page: Page<Revision> = assert_lossless(&body("Revisions_List"));
    assert_eq!(page.next_link, None);
    let rev = &page.value[0];
    assert_eq!(rev.name, "testcontainerApp0-pjxhsye");
    assert!(rev.properties.active);
    assert_eq!(rev.properties.replicas, 1);
    assert_eq!(rev.properties.traffic_weight, 80);
    assert_eq!(
        rev.properties.created_time.as_deref(),
        Some("2021-05-24T21:24:22+00:00")
    );
    let template = rev.properties.template.as_ref().unwrap();
    assert_eq!(template.scale.as_ref().unwrap().max_replicas, Some(5));
}

#[test]
fn replicas_list_example_parses() {
    let page: Page<Replica> = assert_lossless(&body("Replicas_List"));
    let rep = &page.value[0];
    assert_eq!(rep.name, "myapp--0wlqy09-5d9774cff-5wnd8");
    assert_eq!(
        rep.properties.running_state,
        Some(ReplicaRunningState::Running)
    );
    let c = &rep.properties.containers[0];
    assert_eq!(c.name, "hello92");
    assert!(c.ready && c.started);
    assert_eq!(c.restart_count, 0);
    assert_eq!(c.running_state, Some(ContainerRunningState::Running));
    assert_eq!(c.exec_endpoint.as_deref(), Some("testExecEndpoint"));
    assert_eq!(
        c.log_stream_endpoint.as_deref(),
        Some("testLogStreamEndpoint")
    );
}

#[test]
fn container_app_example_parses_and_keeps_what_we_do_not_model() {
    let app: ContainerApp = assert_lossless(&body("ContainerApps_Get"));
    let p = &app.properties;
    assert_eq!(p.provisioning_state, Some(ProvisioningState::Succeeded));
    let ingress = p.configuration.as_ref().unwrap().ingress.as_ref().unwrap();
    assert_eq!(ingress.target_port, Some(3000));
    assert_eq!(ingress.traffic[1].label.as_deref(), Some("staging"));
    let t = p.template.as_ref().unwrap();
    assert_eq!(
        t.containers[0].image.as_deref(),
        Some("repo/testcontainerapp0:v4")
    );
    assert!(t.extra.contains_key("initContainers"));
    assert!(t.extra.contains_key("serviceBinds"));
}

#[test]
fn container_app_scale_sticky_sessions_and_revisions_mode_follow_the_spec() {
    let app: ContainerApp = assert_lossless(&body("ContainerApps_Get"));
    let p = &app.properties;
    let cfg = p.configuration.as_ref().unwrap();
    assert_eq!(cfg.max_inactive_revisions, Some(10));
    let ingress = cfg.ingress.as_ref().unwrap();
    assert_eq!(
        ingress.sticky_sessions.as_ref().unwrap().affinity,
        Some(Affinity::Sticky)
    );
    assert_eq!(ingress.traffic[0].weight, Some(80));
    assert_eq!(
        ingress.traffic[0].revision_name.as_deref(),
        Some("testcontainerapp0-ab1234")
    );
    let scale = p.template.as_ref().unwrap().scale.as_ref().unwrap();
    assert_eq!((scale.min_replicas, scale.max_replicas), (Some(1), Some(5)));
    let rule = &scale.rules[0];
    assert_eq!(rule.name.as_deref(), Some("httpscalingrule"));
    let http = rule.http.as_ref().unwrap();
    assert_eq!(http.metadata.as_ref().unwrap()["concurrentRequests"], "50");
    assert!(rule.custom.is_none() && rule.tcp.is_none() && rule.azure_queue.is_none());
}

#[test]
fn create_or_update_request_parses_with_a_custom_scale_rule() {
    let ex = example("ContainerApps_CreateOrUpdate_request");
    let app: ContainerApp = assert_lossless(&ex["parameters"]["containerAppEnvelope"]);
    let p = &app.properties;
    let ingress = p.configuration.as_ref().unwrap().ingress.as_ref().unwrap();
    assert_eq!(ingress.traffic[0].label.as_deref(), Some("production"));
    assert!(
        ingress.extra.contains_key("corsPolicy"),
        "unknown fields kept"
    );
    let t = p.template.as_ref().unwrap();
    let probe = &t.containers[0].probes[0];
    let get = probe.http_get.as_ref().unwrap();
    assert_eq!(get.port, 8080);
    assert_eq!(get.http_headers.as_ref().unwrap()[0].name, "Custom-Header");
    let custom = t.scale.as_ref().unwrap().rules[0].custom.as_ref().unwrap();
    assert_eq!(custom.kind.as_deref(), Some("http"));
    assert_eq!(
        custom.metadata.as_ref().unwrap()["concurrentRequests"],
        "50"
    );
}

/// The scale rule kinds and traffic fields no example above carries, in the spec's shapes
/// (`ScaleRule.tcp`, `ScaleRule.azureQueue`, `ScaleRuleAuth`, `Scale.cooldownPeriod`,
/// `Scale.pollingInterval`, `TrafficWeight.latestRevision`, `activeRevisionsMode`).
#[test]
fn every_scale_rule_kind_and_traffic_weight_round_trips() {
    let t = serde_json::json!({
        "containers": [{"name": "a", "image": "i"}],
        "scale": {
            "minReplicas": 0, "maxReplicas": 30, "cooldownPeriod": 60, "pollingInterval": 15,
            "rules": [
                {"name": "tcp", "tcp": {"metadata": {"concurrentConnections": "10"}}},
                {"name": "queue", "azureQueue": {"queueName": "jobs", "queueLength": 5,
                    "auth": [{"secretRef": "conn", "triggerParameter": "connection"}]}},
                {"name": "cpu", "custom": {"type": "cpu", "metadata": {"type": "Utilization", "value": "70"}}}
            ]
        }
    });
    let t: Template = assert_lossless(&t);
    let s = t.scale.as_ref().unwrap();
    assert_eq!(
        (s.cooldown_period, s.polling_interval),
        (Some(60), Some(15))
    );
    assert_eq!(
        s.rules[0].tcp.as_ref().unwrap().metadata.as_ref().unwrap()["concurrentConnections"],
        "10"
    );
    let q = s.rules[1].azure_queue.as_ref().unwrap();
    assert_eq!(
        (q.queue_name.as_deref(), q.queue_length),
        (Some("jobs"), Some(5))
    );
    assert_eq!(q.auth[0].trigger_parameter.as_deref(), Some("connection"));
    let cfg = serde_json::json!({
        "activeRevisionsMode": "Multiple",
        "ingress": {"targetPort": 8080, "stickySessions": {"affinity": "none"},
            "traffic": [{"latestRevision": true, "weight": 90}, {"revisionName": "a--v1", "weight": 10, "label": "old"}]}
    });
    let cfg: Configuration = assert_lossless(&cfg);
    assert_eq!(
        cfg.active_revisions_mode,
        Some(ActiveRevisionsMode::Multiple)
    );
    let ing = cfg.ingress.as_ref().unwrap();
    assert_eq!(
        ing.sticky_sessions.as_ref().unwrap().affinity,
        Some(Affinity::None)
    );
    assert_eq!(ing.traffic[0].latest_revision, Some(true));
    assert_eq!(ing.traffic[1].label.as_deref(), Some("old"));
}

#[test]
fn job_example_parses() {
    let job: Job = assert_lossless(&body("Job_Get"));
    let cfg = job.properties.configuration.as_ref().unwrap();
    assert_eq!(cfg.trigger_type, Some(TriggerType::Manual));
    assert_eq!(cfg.replica_timeout, Some(10));
    assert_eq!(cfg.replica_retry_limit, Some(10));
}

#[test]
fn job_executions_examples_parse() {
    let page: Page<JobExecution> = assert_lossless(&body("Job_Executions_Get"));
    assert_eq!(page.value[0].name, "testcontainerAppJob-27944454");
    assert_eq!(
        page.value[0].properties.status,
        Some(JobExecutionStatus::Running)
    );
    let one: JobExecution = assert_lossless(&body("Job_Execution_Get"));
    assert_eq!(one.name, "jobExecution1");
    let t = one.properties.template.as_ref().unwrap();
    assert_eq!(
        t.init_containers[0].command.as_deref().unwrap(),
        ["/bin/sh"]
    );
}

#[test]
fn job_start_request_and_answer_parse() {
    let ex = example("Job_Start");
    let _: JobExecutionTemplate = assert_lossless(&ex["parameters"]["template"]);
    let started: JobExecutionBase = assert_lossless(&ex["responses"]["200"]["body"]);
    assert_eq!(started.name, "testcontainerappsob0-pjxhsye");
}

#[test]
fn unknown_enum_values_are_kept_verbatim() {
    let json = serde_json::json!({
        "name": "r1",
        "properties": {"runningState": "Hibernating", "healthState": "Healthy",
                        "provisioningState": "Provisioned", "active": false}
    });
    let rev: Revision = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(
        rev.properties.running_state,
        Some(RevisionRunningState::Other("Hibernating".into()))
    );
    assert_eq!(
        rev.properties.health_state,
        Some(RevisionHealthState::Healthy)
    );
    let back = serde_json::to_value(&rev).unwrap();
    assert_eq!(back["properties"]["runningState"], "Hibernating");
}

#[test]
fn probes_round_trip() {
    let c = serde_json::json!({
        "name": "subject", "image": "probelab/subject:dev",
        "env": [{"name": "PORT", "value": "8080"}, {"name": "KEY", "secretRef": "key"}],
        "probes": [
            {"type": "Liveness", "httpGet": {"path": "/health", "port": 8080},
             "periodSeconds": 10, "timeoutSeconds": 5, "failureThreshold": 3},
            {"type": "Readiness", "tcpSocket": {"port": 8080}, "initialDelaySeconds": 2},
            {"type": "Startup", "httpGet": {"path": "/startup", "port": 8080, "httpHeaders": []}}
        ]
    });
    let parsed: Container = assert_lossless(&c);
    assert_eq!(parsed.probes[0].probe_type, Some(ProbeType::Liveness));
    assert_eq!(parsed.probes[1].tcp_socket.as_ref().unwrap().port, 8080);
    assert_eq!(parsed.env[1].secret_ref.as_deref(), Some("key"));
}

/// An environment GET body in the spec's shape (`ManagedEnvironment`, `ManagedEnvironments.json`
/// of 2024-03-01; our own values): the three members localplane answers are typed, the rest
/// (workload profiles, VNet, KEDA and Dapr versions, ...) kept as sent.
#[test]
fn a_managed_environment_body_round_trips_with_its_unmodelled_members() {
    let body = serde_json::json!({
        "id": "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.App/managedEnvironments/env",
        "name": "env",
        "type": "Microsoft.App/managedEnvironments",
        "location": "West Europe",
        "tags": {"team": "lab"},
        "properties": {
            "provisioningState": "Succeeded",
            "deploymentErrors": null,
            "defaultDomain": "env.westeurope.azurecontainerapps.io",
            "staticIp": "10.0.0.4",
            "zoneRedundant": false,
            "vnetConfiguration": {"infrastructureSubnetId": "/subscriptions/x/subnets/s"},
            "workloadProfiles": [
                {"name": "Consumption", "workloadProfileType": "Consumption"},
                {"name": "d4", "workloadProfileType": "D4", "minimumCount": 1, "maximumCount": 3}
            ],
            "kedaConfiguration": {"version": "2.12.0"},
            "daprConfiguration": {"version": "1.12.5"},
            "peerAuthentication": {"mtls": {"enabled": false}}
        }
    });
    let env: ManagedEnvironment = assert_lossless(&body);
    assert_eq!(env.name.as_deref(), Some("env"));
    assert_eq!(
        env.kind.as_deref(),
        Some("Microsoft.App/managedEnvironments")
    );
    let p = &env.properties;
    assert_eq!(p.provisioning_state.as_deref(), Some("Succeeded"));
    assert_eq!(
        p.default_domain.as_deref(),
        Some("env.westeurope.azurecontainerapps.io")
    );
    assert_eq!(p.static_ip.as_deref(), Some("10.0.0.4"));
    assert_eq!(p.extra["workloadProfiles"][1]["maximumCount"], 3);
    assert!(p.extra.contains_key("kedaConfiguration"));
}
