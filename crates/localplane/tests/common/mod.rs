//! Test support: start localplane in-process, a small JSON HTTP client, polling helpers.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use localplane::{Localplane, LocalplaneConfig, RuntimeKind};
use serde_json::Value;

pub const SUB: &str = "00000000-0000-0000-0000-000000000000";
pub const RG: &str = "rg-lab";
pub const AV: &str = "api-version=2025-07-01";

/// `target/<profile>/`, found from the test binary (`target/<profile>/deps/<test>`).
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let dir = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("test binary lives in target/<profile>/deps")
        .to_path_buf();
    {
        let bin = "subject";
        assert!(
            dir.join(bin).is_file(),
            "{} is missing: run `cargo build -p subject` (nextest builds all workspace binaries first; plain `cargo test -p localplane` does not)",
            dir.join(bin).display()
        );
    }
    dir
}

pub struct Lab {
    pub lp: Option<Localplane>,
    pub base: String,
    pub dir: tempfile::TempDir,
    pub client: Client<HttpConnector, Full<Bytes>>,
}

impl Lab {
    pub async fn process() -> Lab {
        let dir = tempfile::tempdir().unwrap();
        let lp = localplane::start(LocalplaneConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            state_dir: dir.path().join("state"),
            evidence_dir: dir.path().join("evidence"),
            runtime: RuntimeKind::Process { bin_dir: bin_dir() },
        })
        .await
        .unwrap();
        let base = lp.base_url();
        Lab {
            lp: Some(lp),
            base,
            dir,
            client: Client::builder(TokioExecutor::new()).build(HttpConnector::new()),
        }
    }

    /// A localplane on the Docker runtime, or `None` when `PROBELAB_SKIP_DOCKER=1`: through
    /// testkit's gate, so a missing engine or image fails loudly and what a killed test run
    /// left behind is removed first.
    pub async fn docker() -> Option<Lab> {
        let docker = testkit::docker::require_docker().await?;
        for image in ["subject", "loadgen"] {
            docker.require_image(image).await;
        }
        let dir = tempfile::tempdir().unwrap();
        let lp = localplane::start(LocalplaneConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            state_dir: dir.path().join("state"),
            evidence_dir: dir.path().join("evidence"),
            runtime: RuntimeKind::Docker,
        })
        .await
        .expect("localplane on Docker (is the engine running? set PROBELAB_SKIP_DOCKER=1 to skip)");
        let base = lp.base_url();
        Some(Lab {
            lp: Some(lp),
            base,
            dir,
            client: Client::builder(TokioExecutor::new()).build(HttpConnector::new()),
        })
    }

    pub fn app_url(&self, app: &str) -> String {
        format!(
            "{}/subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.App/containerApps/{app}",
            self.base
        )
    }

    pub fn job_url(&self, job: &str) -> String {
        format!(
            "{}/subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.App/jobs/{job}",
            self.base
        )
    }

    pub async fn call(
        &self,
        method: &str,
        url: &str,
        body: Option<Value>,
    ) -> (u16, http::HeaderMap, Value) {
        call(&self.client, method, url, body).await
    }

    /// Polls the `Azure-AsyncOperation` URL until it is no longer InProgress.
    pub async fn wait_op(&self, headers: &http::HeaderMap, limit: Duration) -> String {
        let url = headers
            .get("azure-asyncoperation")
            .expect("Azure-AsyncOperation header")
            .to_str()
            .unwrap()
            .to_string();
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let (code, _, v) = self.call("GET", &url, None).await;
            assert_eq!(code, 200, "{v}");
            let s = v["status"].as_str().unwrap().to_string();
            if s != "InProgress" || tokio::time::Instant::now() > deadline {
                return s;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    pub fn system_rows(&self) -> Vec<Value> {
        read_rows(
            &self
                .dir
                .path()
                .join("evidence/logs/ContainerAppSystemLogs_CL.ndjson"),
        )
    }

    pub fn console_rows(&self) -> Vec<Value> {
        read_rows(
            &self
                .dir
                .path()
                .join("evidence/logs/ContainerAppConsoleLogs_CL.ndjson"),
        )
    }

    pub async fn stop(mut self) {
        if let Some(lp) = self.lp.take() {
            tokio::time::timeout(Duration::from_secs(60), lp.shutdown())
                .await
                .expect("shutdown within 60 s")
                .unwrap();
        }
    }
}

impl Drop for Lab {
    /// Guard: whatever a failed test left behind in Docker goes (by owner label).
    fn drop(&mut self) {
        if let Some(lp) = &self.lp {
            // A test that panicked never called stop(): keep its supervisors from restarting
            // the containers removed below.
            lp.begin_shutdown();
            std::thread::sleep(Duration::from_secs(1));
        }
        let state = self.dir.path().join("state");
        let owner = localplane::runtime::docker::owner_id(&state);
        if let Ok(out) = std::process::Command::new("docker")
            .args([
                "ps",
                "-aq",
                "--filter",
                &format!("label=probelab.owner={owner}"),
            ])
            .output()
        {
            let ids: Vec<String> = String::from_utf8_lossy(&out.stdout)
                .split_whitespace()
                .map(String::from)
                .collect();
            if !ids.is_empty() {
                let _ = std::process::Command::new("docker")
                    .arg("rm")
                    .arg("-f")
                    .args(&ids)
                    .output();
            }
            let _ = std::process::Command::new("docker")
                .args(["network", "rm", &format!("probelab-lp-{owner}")])
                .output();
        }
    }
}

pub fn read_rows(p: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

pub async fn call(
    client: &Client<HttpConnector, Full<Bytes>>,
    method: &str,
    url: &str,
    body: Option<Value>,
) -> (u16, http::HeaderMap, Value) {
    let bytes = body
        .map(|b| serde_json::to_vec(&b).unwrap())
        .unwrap_or_default();
    let req = http::Request::builder()
        .method(method)
        .uri(url)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(bytes)))
        .unwrap();
    let resp = tokio::time::timeout(Duration::from_secs(30), client.request(req))
        .await
        .expect("request within 30 s")
        .unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    let v = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into()))
    };
    (status, headers, v)
}

/// Polls `f` every 100 ms until it returns `Some`, or panics after `limit` naming `what`.
pub async fn eventually<T, F, Fut>(limit: Duration, what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {limit:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub fn subject_app(env: Value, replicas: u32, probes: Value) -> Value {
    serde_json::json!({
        "location": "local",
        "properties": {
            "environmentId": format!("/subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.App/managedEnvironments/env"),
            "configuration": {
                "activeRevisionsMode": "Single",
                "ingress": {"external": true, "targetPort": 8080}
            },
            "template": {
                "terminationGracePeriodSeconds": 5,
                "containers": [{
                    "name": "subject",
                    "image": "probelab/subject:dev",
                    "env": env,
                    "probes": probes,
                }],
                "scale": {"minReplicas": replicas, "maxReplicas": replicas}
            }
        }
    })
}
