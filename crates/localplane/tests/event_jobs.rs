//! Event-driven jobs through the ARM API on the process runtime: a job PUT in the shape of the
//! spec's `Job_CreateOrUpdate_EventTrigger` example with a `metrics-api` rule reading the queue
//! of a `subject` app, items enqueued, and what a user sees: executions started at polling
//! intervals, never more than `maxExecutions` at once, the queue drained, each item taken once.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use testkit::eventually;

const ITEMS: usize = 8;
const MAX_EXECUTIONS: usize = 3;
const POLLING_S: u64 = 2;

/// The spec example's body (`Job_CreateorUpdate_EventTrigger.json`, 2024-03-01) with a
/// `metrics-api` rule on app `queue`'s `/queue` and a `subject` queue worker as the container.
fn event_job(worker_queue_url: &str, work_ms: u64) -> Value {
    json!({
        "location": "local",
        "properties": {
            "environmentId": format!("/subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.App/managedEnvironments/env"),
            "configuration": {
                "replicaTimeout": 30,
                "replicaRetryLimit": 1,
                "eventTriggerConfig": {
                    "replicaCompletionCount": 1,
                    "parallelism": 1,
                    "scale": {
                        "pollingInterval": POLLING_S,
                        "minExecutions": 0,
                        "maxExecutions": MAX_EXECUTIONS,
                        "rules": [{
                            "name": "queuelength",
                            "type": "metrics-api",
                            "metadata": {
                                // The app's name, as in Azure's environment (localplane
                                // reads it at the app's ingress).
                                "url": "http://queue/queue",
                                "valueLocation": "length",
                                "targetValue": "1"
                            }
                        }]
                    }
                },
                "triggerType": "Event"
            },
            "template": {
                "containers": [{
                    "image": "probelab/subject:dev",
                    "name": "worker",
                    "env": [
                        {"name": "APP_MODE", "value": "queue-worker"},
                        {"name": "QUEUE_URL", "value": worker_queue_url},
                        {"name": "WORK_MS", "value": work_ms.to_string()}
                    ]
                }]
            }
        }
    })
}

/// The executions of `job` as `GET .../executions` lists them.
async fn executions(lab: &Plane, job: &str) -> Vec<Value> {
    let (code, _, v) = lab
        .call(
            "GET",
            &format!("{}/executions?{AV}", lab.job_url(job)),
            None,
        )
        .await;
    assert_eq!(code, 200, "{v}");
    v["value"].as_array().cloned().unwrap_or_default()
}

fn running(execs: &[Value]) -> usize {
    execs
        .iter()
        .filter(|e| e["properties"]["status"] == "Running")
        .count()
}

fn at(row: &Value) -> chrono::DateTime<chrono::FixedOffset> {
    chrono::DateTime::parse_from_rfc3339(row["TimeGenerated"].as_str().unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_job_drains_a_queue_within_max_executions() {
    // A process reaches the app at its loopback ingress only.
    drains(Plane::process().await, |fqdn| format!("http://{fqdn}")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docker_an_event_job_drains_a_queue_within_max_executions() {
    let Some(lab) = Plane::docker().await else {
        return;
    };
    // A container reaches the app by its name, as in Azure's environment.
    drains(lab, |_| "http://queue".to_string()).await;
}

/// The scenario on `lab`; `worker_url` gives the workers' `QUEUE_URL` from the app's fqdn.
async fn drains(lab: Plane, worker_url: impl Fn(&str) -> String) {
    lab.put_env().await;
    let (code, h, v) = lab
        .call(
            "PUT",
            &format!("{}?{AV}", lab.app_url("queue")),
            Some(subject_app(json!([]), 1, json!([]))),
        )
        .await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(lab.wait_op(&h, Duration::from_secs(30)).await, "Succeeded");
    let (_, _, v) = lab
        .call("GET", &format!("{}?{AV}", lab.app_url("queue")), None)
        .await;
    let queue = v["properties"]["configuration"]["ingress"]["fqdn"]
        .as_str()
        .unwrap()
        .to_string();

    // The spec example's own rule (azure-servicebus) is refused, naming the supported type.
    let mut servicebus = event_job(&worker_url(&queue), 0);
    servicebus["properties"]["configuration"]["eventTriggerConfig"]["scale"]["rules"] = json!([
        {"name": "servicebuscalingrule", "type": "azure-servicebus", "metadata": {"topicName": "my-topic"}}
    ]);
    let (code, _, v) = lab
        .call(
            "PUT",
            &format!("{}?{AV}", lab.job_url("sb")),
            Some(servicebus),
        )
        .await;
    assert_eq!(code, 400, "{v}");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("azure-servicebus") && msg.contains("metrics-api"),
        "{msg}"
    );

    // The job: created at an empty queue, it starts nothing.
    let job = "drain";
    let (code, h, v) = lab
        .call(
            "PUT",
            &format!("{}?{AV}", lab.job_url(job)),
            Some(event_job(&worker_url(&queue), 3000)),
        )
        .await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(lab.wait_op(&h, Duration::from_secs(5)).await, "Succeeded");
    let (_, _, v) = lab
        .call("GET", &format!("{}?{AV}", lab.job_url(job)), None)
        .await;
    let cfg = &v["properties"]["configuration"];
    assert_eq!(cfg["triggerType"], "Event");
    assert_eq!(
        cfg["eventTriggerConfig"]["scale"]["maxExecutions"],
        MAX_EXECUTIONS
    );
    tokio::time::sleep(Duration::from_secs(POLLING_S + 1)).await;
    assert!(
        executions(&lab, job).await.is_empty(),
        "no item, no execution"
    );

    // N items at once; sample the executions list until the queue is empty and all ended.
    let (code, _, v) = lab
        .call("POST", &format!("http://{queue}/queue?items={ITEMS}"), None)
        .await;
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["length"], ITEMS);
    let peak = AtomicUsize::new(0);
    let done = eventually(
        Duration::from_secs(90),
        "queue drained, executions ended",
        || {
            let (lab, peak, queue) = (&lab, &peak, &queue);
            async move {
                let execs = executions(lab, job).await;
                let now = running(&execs);
                assert!(
                    now <= MAX_EXECUTIONS,
                    "{now} executions running at once, maxExecutions {MAX_EXECUTIONS}: {execs:?}"
                );
                peak.fetch_max(now, Ordering::SeqCst);
                let (_, _, q) = lab
                    .call("GET", &format!("http://{queue}/queue"), None)
                    .await;
                (q["length"] == 0 && q["taken"] == ITEMS && now == 0 && !execs.is_empty())
                    .then_some(execs)
            }
        },
    )
    .await;
    assert_eq!(
        peak.into_inner(),
        MAX_EXECUTIONS,
        "the cap was reached, and held"
    );
    assert_eq!(done.len(), ITEMS, "one execution per item: {done:?}");
    for e in &done {
        assert_eq!(e["properties"]["status"], "Succeeded", "{e}");
    }

    // Each item taken exactly once, by one execution each, as the workers logged it.
    let console = lab.console_rows();
    let mut taken = Vec::new();
    for e in &done {
        let name = e["name"].as_str().unwrap();
        let items: Vec<String> = console
            .iter()
            .filter(|r| r["ExecutionName_s"] == name)
            .filter_map(|r| serde_json::from_str::<Value>(r["Log_s"].as_str()?).ok())
            .filter(|l| l["event"] == "QUEUE_ITEM_TAKEN")
            .map(|l| l["item"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(items.len(), 1, "{name} took {items:?}");
        taken.extend(items);
    }
    let unique: BTreeSet<&String> = taken.iter().collect();
    assert_eq!(unique.len(), ITEMS, "no item taken twice: {taken:?}");
    let want: BTreeSet<String> = (1..=ITEMS).map(|i| format!("item-{i}")).collect();
    assert_eq!(
        unique.into_iter().cloned().collect::<BTreeSet<_>>(),
        want,
        "none lost"
    );

    // Executions start at polling instants: the first rows of each execution, grouped by
    // instant, come in batches of at most maxExecutions, the first one full, a polling
    // interval or more apart.
    let system = lab.system_rows();
    let mut starts: Vec<_> = done
        .iter()
        .map(|e| {
            let name = e["name"].as_str().unwrap();
            let rows: Vec<&Value> = system
                .iter()
                .filter(|r| r["ExecutionName_s"] == name)
                .collect();
            for reason in ["PullingImage", "ContainerStarted", "ContainerTerminated"] {
                assert!(
                    rows.iter().any(|r| r["Reason_s"] == reason),
                    "{name} has a {reason} row: {rows:?}"
                );
            }
            rows.iter().map(|r| at(r)).min().unwrap()
        })
        .collect();
    starts.sort();
    let mut batches: Vec<Vec<chrono::DateTime<chrono::FixedOffset>>> = Vec::new();
    for s in starts {
        match batches.last_mut() {
            Some(b) if (s - b[0]).num_milliseconds() < 1000 => b.push(s),
            _ => batches.push(vec![s]),
        }
    }
    let sizes: Vec<usize> = batches.iter().map(Vec::len).collect();
    eprintln!("executions started per polling interval: {sizes:?}");
    assert_eq!(sizes[0], MAX_EXECUTIONS, "{sizes:?}");
    assert!(sizes.iter().all(|n| *n <= MAX_EXECUTIONS), "{sizes:?}");
    for w in batches.windows(2) {
        let gap = (w[1][0] - w[0][0]).num_milliseconds();
        assert!(
            gap >= (POLLING_S * 1000 - 500) as i64,
            "batches {gap} ms apart, polling every {POLLING_S} s: {sizes:?}"
        );
    }
    lab.stop().await;
}

/// `minExecutions` 1 at an empty queue: an execution is always running or being started (each
/// worker finds nothing and exits 0, the next poll starts another), and never more than one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn min_executions_keep_one_running_at_an_empty_queue() {
    let lab = Plane::process().await;
    lab.put_env().await;
    let (code, h, v) = lab
        .call(
            "PUT",
            &format!("{}?{AV}", lab.app_url("queue")),
            Some(subject_app(json!([]), 1, json!([]))),
        )
        .await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(lab.wait_op(&h, Duration::from_secs(30)).await, "Succeeded");
    let (_, _, v) = lab
        .call("GET", &format!("{}?{AV}", lab.app_url("queue")), None)
        .await;
    let fqdn = v["properties"]["configuration"]["ingress"]["fqdn"]
        .as_str()
        .unwrap()
        .to_string();
    let mut body = event_job(&format!("http://{fqdn}"), 0);
    body["properties"]["configuration"]["eventTriggerConfig"]["scale"]["minExecutions"] = json!(1);
    body["properties"]["configuration"]["eventTriggerConfig"]["scale"]["pollingInterval"] =
        json!(1);
    let (code, h, v) = lab
        .call("PUT", &format!("{}?{AV}", lab.job_url("idle")), Some(body))
        .await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(lab.wait_op(&h, Duration::from_secs(5)).await, "Succeeded");
    let done = eventually(Duration::from_secs(60), "3 executions ended", || async {
        let execs = executions(&lab, "idle").await;
        assert!(
            running(&execs) <= 1,
            "one at a time at an empty queue: {execs:?}"
        );
        let ended = execs
            .iter()
            .filter(|e| e["properties"]["status"] == "Succeeded")
            .count();
        (ended >= 3).then_some(execs)
    })
    .await;
    let (code, _, _) = lab
        .call("DELETE", &format!("{}?{AV}", lab.job_url("idle")), None)
        .await;
    assert!(code == 202 || code == 204, "{code}");
    let console = lab.console_rows();
    for e in done
        .iter()
        .filter(|e| e["properties"]["status"] == "Succeeded")
    {
        let name = e["name"].as_str().unwrap();
        assert!(
            console.iter().any(|r| r["ExecutionName_s"] == name
                && r["Log_s"]
                    .as_str()
                    .is_some_and(|l| l.contains("QUEUE_EMPTY"))),
            "{name} found the queue empty"
        );
    }
    lab.stop().await;
}

/// A rule whose url does not answer: a `KEDAScalerFailed` Warning row on the job at each poll,
/// and no execution.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_metric_writes_keda_scaler_failed_and_starts_nothing() {
    let lab = Plane::process().await;
    lab.put_env().await;
    let port = testkit::http::free_port().unwrap();
    let mut body = event_job(&format!("http://127.0.0.1:{port}"), 0);
    body["properties"]["configuration"]["eventTriggerConfig"]["scale"]["rules"][0]["metadata"]["url"] =
        json!(format!("http://127.0.0.1:{port}/queue"));
    let (code, _, v) = lab
        .call("PUT", &format!("{}?{AV}", lab.job_url("blind")), Some(body))
        .await;
    assert_eq!(code, 201, "{v}");
    let rows = eventually(
        Duration::from_secs(20),
        "two KEDAScalerFailed rows",
        || async {
            let rows: Vec<Value> = lab
                .system_rows()
                .into_iter()
                .filter(|r| r["JobName_s"] == "blind" && r["Reason_s"] == "KEDAScalerFailed")
                .collect();
            (rows.len() >= 2).then_some(rows)
        },
    )
    .await;
    assert_eq!(rows[0]["Type_s"], "Warning");
    assert_eq!(rows[0]["ExecutionName_s"], "");
    let log = rows[0]["Log_s"].as_str().unwrap();
    assert!(
        log.contains("queuelength") && log.contains(&port.to_string()),
        "{log}"
    );
    assert!(executions(&lab, "blind").await.is_empty());
    lab.stop().await;
}
