//! The models against the example payloads of the Microsoft.App REST specification.
//!
//! Fixtures are copied verbatim from Azure/azure-rest-api-specs,
//! `specification/app/resource-manager/Microsoft.App/stable/<version>/examples/<name>.json`:
//! Revisions_List, ContainerApps_Get, Job_Get, Job_Executions_Get, Job_Execution_Get and
//! Job_Start from 2024-03-01; Replicas_List from 2025-01-01 (the first stable version whose example
//! shows `runningState`).

#![allow(clippy::unwrap_used)] // test helpers: a failure is the test failing

use arm::models::*;
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
    assert!(c.extra.contains_key("execEndpoint"), "unknown fields kept");
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
fn setting_one_env_var_keeps_the_whole_template() {
    let app: ContainerApp = serde_json::from_value(body("ContainerApps_Get")).unwrap();
    let mut t = app.properties.template.clone().unwrap();
    let before = serde_json::to_value(&t).unwrap();
    assert!(arm::client::set_env_in_template(&mut t, None, "SIMULATION", "zombie").unwrap());
    assert!(!arm::client::set_env_in_template(&mut t, None, "SIMULATION", "zombie").unwrap());
    assert_eq!(t.containers[0].env_value("SIMULATION"), Some("zombie"));
    let mut after = serde_json::to_value(&t).unwrap();
    after["containers"][0]
        .as_object_mut()
        .unwrap()
        .remove("env");
    assert_eq!(after, before, "only env changed");
    assert!(arm::client::set_env_in_template(&mut t, Some("nope"), "A", "b").is_err());
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
