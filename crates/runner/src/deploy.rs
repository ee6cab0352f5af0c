//! Deploying a lab: the managed environment and the two jobs (local only: on Azure they come
//! from infra/main.bicep), every app (`lab::arm_body::container_app`), then waiting until each
//! app's latest revision is ready, except the apps whose lab entry says `wait_ready = false`:
//! their PUT is not waited for either, so the steps start while they start.

use std::time::Duration;

use lab::Lab;
use lab::arm_body::{Placement, container_app};
use reqwest::Method;
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::RunError;
use crate::target::Target;

pub const LOADGEN_IMAGE: &str = "probelab/loadgen:dev";
pub const SAMPLER_IMAGE: &str = "probelab/perturbation-sampler:dev";

/// Every image a local run of `lab` needs.
pub fn images(lab: &Lab) -> Vec<String> {
    let mut v: Vec<String> = lab.apps.iter().map(|a| a.image.clone()).collect();
    v.extend(lab.jobs.iter().map(|j| j.image.clone()));
    v.push(LOADGEN_IMAGE.into());
    if lab.steps.iter().any(|s| s.action.is_some() || s.sample) {
        v.push(SAMPLER_IMAGE.into());
    }
    v.sort();
    v.dedup();
    v
}

/// Checks that the Docker engine answers and has every image (nothing is pulled); the message
/// names the build script. Asks the engine through its unix socket (`DOCKER_HOST=unix://...`,
/// else the default path), not the `docker` CLI, which the probelab/lab image does not carry;
/// a TCP `DOCKER_HOST` is left to localplane, which reaches it on its own.
pub fn check_docker_images(images: &[String]) -> Result<(), RunError> {
    let Some(socket) = docker_socket() else {
        return Ok(());
    };
    let mut missing = Vec::new();
    for image in images {
        if !engine_has_image(&socket, image)? {
            missing.push(image.as_str());
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    Err(RunError::Prerequisite(format!(
        "image(s) missing on the Docker engine: {}; nothing is pulled: build them with \
         scripts/build-images.sh",
        missing.join(", ")
    )))
}

fn docker_socket() -> Option<std::path::PathBuf> {
    match std::env::var("DOCKER_HOST") {
        Ok(h) if !h.is_empty() => h.strip_prefix("unix://").map(std::path::PathBuf::from),
        _ => Some(std::path::PathBuf::from("/var/run/docker.sock")),
    }
}

/// Whether the engine behind `socket` has `image` (`GET /images/<image>/json`: 200 or 404).
fn engine_has_image(socket: &std::path::Path, image: &str) -> Result<bool, RunError> {
    use std::io::{Read, Write};
    let mut s = std::os::unix::net::UnixStream::connect(socket).map_err(|e| {
        RunError::Prerequisite(format!(
            "Docker is not reachable at {} ({e}); start the engine, mount its socket, or use \
             --runtime process",
            socket.display()
        ))
    })?;
    let asked = s
        .set_read_timeout(Some(Duration::from_secs(10)))
        .and_then(|()| s.set_write_timeout(Some(Duration::from_secs(10))))
        .and_then(|()| {
            write!(
                s,
                "GET /images/{image}/json HTTP/1.0\r\nHost: docker\r\n\r\n"
            )
        });
    let io = |what: &str, e: std::io::Error| {
        RunError::Prerequisite(format!("{what} the Docker engine about {image}: {e}"))
    };
    asked.map_err(|e| io("asking", e))?;
    let mut head = [0u8; 16];
    let mut got = 0;
    while got < head.len() {
        let n = s
            .read(&mut head[got..])
            .map_err(|e| io("reading the answer of", e))?;
        if n == 0 {
            break;
        }
        got += n;
    }
    // "HTTP/1.0 200 OK" / "HTTP/1.1 404 Not Found"
    let line = String::from_utf8_lossy(&head[..got]);
    match line.split_whitespace().nth(1) {
        Some("200") => Ok(true),
        Some("404") => Ok(false),
        other => Err(RunError::Prerequisite(format!(
            "unexpected answer from the Docker engine about {image}: {other:?}"
        ))),
    }
}

/// The local environment and jobs (Azure has them from infra/main.bicep).
pub async fn local_infrastructure(t: &Target, replica_timeout: Duration) -> Result<(), RunError> {
    t.send(
        "put_environment",
        Method::PUT,
        &t.resource_path("managedEnvironments", &t.env_name),
        Some(&json!({ "location": "local", "properties": {} })),
    )
    .await?;
    let common = vec![
        json!({"name": "SUBSCRIPTION_ID", "value": t.scope.subscription_id}),
        json!({"name": "RESOURCE_GROUP", "value": t.scope.resource_group}),
    ];
    for (job, image) in [
        (&t.loadgen_job, LOADGEN_IMAGE),
        (&t.sampler_job, SAMPLER_IMAGE),
    ] {
        let body = job_body(t, image, replica_timeout, common.clone());
        t.send(
            "put_job",
            Method::PUT,
            &t.resource_path("jobs", job),
            Some(&body),
        )
        .await?;
    }
    Ok(())
}

/// A Manual job running `image` (one container named `main`, as in infra/modules/job.bicep).
pub fn job_body(t: &Target, image: &str, replica_timeout: Duration, env: Vec<Value>) -> Value {
    json!({
        "location": "local",
        "properties": {
            "environmentId": t.environment_id(),
            "configuration": {
                "triggerType": "Manual",
                "replicaTimeout": replica_timeout.as_secs().max(60),
                "replicaRetryLimit": 0,
                "manualTriggerConfig": { "parallelism": 1, "replicaCompletionCount": 1 },
            },
            "template": {
                "containers": [{
                    "name": "main",
                    "image": t.image(image),
                    "env": env,
                    "resources": { "cpu": 1.0, "memory": "2Gi" },
                }],
            },
        }
    })
}

/// PUTs every app of the lab.
pub async fn apps(
    t: &Target,
    lab: &Lab,
    lab_name: &str,
    simulate_token: Option<&str>,
    location: &str,
) -> Result<(), RunError> {
    let env_id = t.environment_id();
    for app in &lab.apps {
        let mut a = app.clone();
        a.image = t.image(&a.image);
        let placement = Placement {
            location,
            environment_id: &env_id,
            simulate_token,
            // Azure stores and ignores the `localplane.*` tags.
            tags: &[
                ("lab", lab_name),
                ("managedBy", "probelab"),
                (
                    localplane::timings::TAG_TIMINGS,
                    lab.localplane_timings.as_str(),
                ),
            ],
            registry: t.registry.as_ref().map(|r| r.placement()),
        };
        let body = serde_json::to_value(container_app(&a, &placement)).map_err(|e| {
            RunError::Arm(arm::ArmError::Invalid(format!(
                "put_app {}: cannot encode the body: {e}",
                app.name
            )))
        })?;
        let path = t.resource_path("containerApps", &app.name);
        if app.wait_ready {
            t.send("put_app", Method::PUT, &path, Some(&body)).await?;
        } else {
            // The operation succeeds only once the revision is ready, which for this app may
            // be never (the startup probe kills it) or minutes later: the PUT is accepted, and
            // what follows is what the lab observes.
            t.send_accepted("put_app", Method::PUT, &path, Some(&body))
                .await?;
        }
    }
    Ok(())
}

/// PUTs every job of the lab (`[[jobs]]`, the jobs under test), each waited for as ARM's
/// operation: after the apps are ready, so an event job's first poll finds its queue serving.
/// On Azure the job stays after the run, as the apps do; its trigger finds an empty queue.
pub async fn jobs(t: &Target, lab: &Lab, lab_name: &str, location: &str) -> Result<(), RunError> {
    let env_id = t.environment_id();
    for job in &lab.jobs {
        let mut j = job.clone();
        j.image = t.image(&j.image);
        let placement = Placement {
            location,
            environment_id: &env_id,
            simulate_token: None,
            tags: &[("lab", lab_name), ("managedBy", "probelab")],
            registry: t.registry.as_ref().map(|r| r.placement()),
        };
        let body = serde_json::to_value(lab::arm_body::job(&j, &placement)).map_err(|e| {
            RunError::Arm(arm::ArmError::Invalid(format!(
                "put_job {}: cannot encode the body: {e}",
                job.name
            )))
        })?;
        t.send(
            "put_job",
            Method::PUT,
            &t.resource_path("jobs", &job.name),
            Some(&body),
        )
        .await?;
    }
    Ok(())
}

/// The apps the runner waits for before the first step (`wait_ready`, default true), in lab
/// order.
pub fn awaited_apps(lab: &Lab) -> Vec<String> {
    lab.apps
        .iter()
        .filter(|a| a.wait_ready)
        .map(|a| a.name.clone())
        .collect()
}

/// The (app, path) pairs [`wait_serving`] polls: each load's target with its `ready_path` (else
/// its `path`), once each, except targets the runner does not wait for.
pub fn serving_targets(lab: &Lab) -> Vec<(&str, &str)> {
    let mut targets: Vec<(&str, &str)> = lab
        .load
        .iter()
        .filter(|l| lab.app(&l.target).is_none_or(|a| a.wait_ready))
        .map(|l| {
            (
                l.target.as_str(),
                l.ready_path.as_deref().unwrap_or(&l.path),
            )
        })
        .collect();
    targets.sort_unstable();
    targets.dedup();
    targets
}

/// Waits until each app's latest revision is its latest ready one.
pub async fn wait_ready(t: &Target, apps: &[String], timeout: Duration) -> Result<(), RunError> {
    let deadline = Instant::now() + timeout;
    for app in apps {
        let mut last;
        loop {
            match t.arm.get_app(&t.scope, app).await {
                Ok(a) => {
                    let p = &a.properties;
                    match (&p.latest_revision_name, &p.latest_ready_revision_name) {
                        (Some(l), Some(r)) if !l.is_empty() && l == r => break,
                        (l, r) => {
                            last = format!(
                                "latest revision {}, latest ready {}",
                                l.as_deref().unwrap_or("none"),
                                r.as_deref().unwrap_or("none")
                            );
                        }
                    }
                }
                Err(e) => last = e.to_string(),
            }
            if Instant::now() >= deadline {
                return Err(RunError::Timeout(format!(
                    "app {app} was not ready within {}s ({last}); its system log rows in \
                     logs/ContainerAppSystemLogs_CL.ndjson say why",
                    timeout.as_secs()
                )));
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
    Ok(())
}

/// Consecutive good answers that count as "serving".
pub const SERVING_STREAK: u32 = 5;

/// Waits until every app a load targets answers its load path (or the load's `ready_path`) with
/// 2xx/3xx through the ingress [`SERVING_STREAK`] times in a row (apps with `wait_ready = false`
/// excepted: [`serving_targets`]). Readiness alone is not enough: an app whose readiness lies
/// (the positive control) is "ready" long before it serves, and a baseline started then would
/// measure the warm-up instead of the steady state.
pub async fn wait_serving(t: &Target, lab: &Lab, timeout: Duration) -> Result<(), RunError> {
    let http = arm::tls::client_builder()
        .timeout(Duration::from_secs(5))
        .pool_max_idle_per_host(0)
        .build()
        .map_err(|e| RunError::Config(format!("cannot build the HTTP client: {e}")))?;
    let deadline = Instant::now() + timeout;
    for (app, path) in serving_targets(lab) {
        let url = format!("{}{path}", t.app_host_url(app).await?);
        let mut streak = 0;
        let mut last = String::new();
        while streak < SERVING_STREAK {
            match http.get(&url).send().await {
                Ok(r) if r.status().is_success() || r.status().is_redirection() => streak += 1,
                Ok(r) => {
                    streak = 0;
                    last = format!("HTTP {}", r.status().as_u16());
                }
                Err(e) => {
                    streak = 0;
                    last = e.to_string();
                }
            }
            if Instant::now() >= deadline {
                return Err(RunError::Timeout(format!(
                    "app {app} did not serve {url} within {}s (last answer: {last})",
                    timeout.as_secs()
                )));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// A one-connection fake engine answering `status_line`; returns the request it got.
    fn fake_engine(
        status_line: &'static str,
    ) -> (tempfile::TempDir, std::thread::JoinHandle<String>) {
        use std::io::{Read, Write};
        let dir = tempfile::tempdir().unwrap();
        let listener =
            std::os::unix::net::UnixListener::bind(dir.path().join("docker.sock")).unwrap();
        let h = std::thread::spawn(move || {
            let (mut c, _) = listener.accept().unwrap();
            // Read the whole request head (it may come in several writes) before answering:
            // answering and closing early made the client's next write fail with EPIPE.
            let mut req = Vec::new();
            let mut buf = [0u8; 256];
            while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = c.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                req.extend_from_slice(&buf[..n]);
            }
            c.write_all(format!("{status_line}\r\nContent-Length: 0\r\n\r\n").as_bytes())
                .unwrap();
            String::from_utf8_lossy(&req).into_owned()
        });
        (dir, h)
    }

    /// A lab of two apps, `slow` (with `slow_line` added) and `fast`, each the target of a
    /// load.
    fn two_apps(slow_line: &str) -> Lab {
        let text = format!(
            r#"
title = "t"
question = "q?"
kind = "observation"
[hypothesis]
text = "h"
[[apps]]
name = "slow"
image = "probelab/subject:dev"
ingress = {{ target_port = 8080 }}
{slow_line}
[[apps]]
name = "fast"
image = "probelab/subject:dev"
ingress = {{ target_port = 8080 }}
[[load]]
name = "a"
target = "slow"
rate = 1
[[load]]
name = "b"
target = "fast"
path = "/slow?seconds=60"
ready_path = "/"
rate = 1
[[steps]]
name = "s"
phase = "s"
duration = "10s"
sample = true
[[checks]]
name = "c"
kind = "no_errors"
load = "a"
"#
        );
        lab::parse(&text, "x.toml".as_ref(), "full").unwrap()
    }

    #[test]
    fn apps_with_wait_ready_false_are_neither_awaited_nor_polled_for_serving() {
        let waited = two_apps("");
        assert_eq!(awaited_apps(&waited), ["slow", "fast"]);
        assert_eq!(serving_targets(&waited), [("fast", "/"), ("slow", "/")]);
        let not = two_apps("wait_ready = false");
        assert_eq!(awaited_apps(&not), ["fast"]);
        assert_eq!(serving_targets(&not), [("fast", "/")]);
        // A sample step runs the sampler, so its image is checked before a local run.
        assert!(images(&not).contains(&SAMPLER_IMAGE.to_owned()));
    }

    /// A fake ARM endpoint whose container app PUTs start an operation that never ends;
    /// counts the PUTs and the polls of the operation.
    async fn endless_operations() -> (String, Arc<AtomicU32>, Arc<AtomicU32>) {
        use axum::routing::{get, put};
        let puts = Arc::new(AtomicU32::new(0));
        let polls = Arc::new(AtomicU32::new(0));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let op = format!("{base}/operations/1?api-version=x");
        let (p, q) = (puts.clone(), polls.clone());
        let app = axum::Router::new()
            .route(
                "/subscriptions/{s}/resourceGroups/{g}/providers/Microsoft.App/containerApps/{a}",
                put(move || {
                    p.fetch_add(1, Ordering::SeqCst);
                    let op = op.clone();
                    async move {
                        (
                            axum::http::StatusCode::CREATED,
                            [("azure-asyncoperation", op)],
                            "{}",
                        )
                    }
                }),
            )
            .route(
                "/operations/1",
                get(move || {
                    q.fetch_add(1, Ordering::SeqCst);
                    async { r#"{"status":"InProgress"}"# }
                }),
            );
        tokio::spawn(async move { axum::serve(listener, app).await });
        (base, puts, polls)
    }

    #[tokio::test]
    async fn the_put_of_an_app_not_waited_for_does_not_wait_for_its_operation() {
        let (base, puts, polls) = endless_operations().await;
        let t = Target::local(&base, crate::target::Addressing::ByName).unwrap();
        // Only `slow` is not waited for: its PUT returns once accepted, the operation unpolled.
        let mut lab = two_apps("wait_ready = false");
        lab.apps.truncate(1);
        let done =
            tokio::time::timeout(Duration::from_secs(20), apps(&t, &lab, "x", None, "local")).await;
        assert!(matches!(done, Ok(Ok(()))), "{done:?}");
        assert_eq!(puts.load(Ordering::SeqCst), 1);
        assert_eq!(polls.load(Ordering::SeqCst), 0);
        // Waited for (the default): the PUT waits for the operation, polled until it ends.
        let lab = two_apps("");
        let run = tokio::spawn({
            let t = t.clone();
            async move { apps(&t, &lab, "x", None, "local").await }
        });
        testkit::wait::eventually(
            Duration::from_secs(20),
            "the operation polled twice",
            || {
                let n = polls.load(Ordering::SeqCst);
                async move { (n >= 2).then_some(()) }
            },
        )
        .await;
        assert!(!run.is_finished(), "the PUT did not wait for its operation");
        assert_eq!(puts.load(Ordering::SeqCst), 2);
        run.abort();
    }

    #[test]
    fn the_engine_is_asked_through_its_socket() {
        let (dir, h) = fake_engine("HTTP/1.1 404 Not Found");
        let sock = dir.path().join("docker.sock");
        assert!(!engine_has_image(&sock, "probelab/subject:dev").unwrap());
        assert!(
            h.join()
                .unwrap()
                .starts_with("GET /images/probelab/subject:dev/json HTTP/1.0")
        );
        let (dir, h) = fake_engine("HTTP/1.1 200 OK");
        assert!(engine_has_image(&dir.path().join("docker.sock"), "probelab/lab:dev").unwrap());
        h.join().unwrap();
        let (dir, h) = fake_engine("HTTP/1.1 500 Internal Server Error");
        let e = engine_has_image(&dir.path().join("docker.sock"), "x").unwrap_err();
        assert!(e.to_string().contains("500"), "{e}");
        h.join().unwrap();
        let e = engine_has_image(&dir.path().join("absent.sock"), "x").unwrap_err();
        assert!(e.to_string().contains("not reachable"), "{e}");
    }
}
