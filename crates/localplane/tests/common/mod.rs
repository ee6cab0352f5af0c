//! Test support: localplane in-process (testkit's harness) with a small JSON client for its
//! ARM API, the evidence rows it writes, and the app bodies the tests deploy.
#![allow(dead_code, clippy::unwrap_used)]

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use localplane::RuntimeKind;
use serde_json::Value;
use testkit::localplane::Harness;

pub use testkit::arm_plane::SUBSCRIPTION as SUB;
pub const RG: &str = "rg-lab";
pub const AV: &str = "api-version=2025-07-01";

/// A localplane (testkit's harness) with a JSON client for its ARM API.
pub struct Plane {
    pub plane: Harness,
    pub base: String,
    pub client: Client<HttpConnector, Full<Bytes>>,
}

impl Plane {
    fn on(plane: Harness) -> Plane {
        Plane {
            base: plane.base_url(),
            plane,
            client: Client::builder(TokioExecutor::new()).build(HttpConnector::new()),
        }
    }

    /// A localplane on the process runtime (the workspace's `subject` binary as replicas).
    pub async fn process() -> Plane {
        Plane::on(Harness::process().await)
    }

    /// A localplane on the Docker runtime, or `None` when `PROBELAB_SKIP_DOCKER=1`: through
    /// testkit's gate, so a missing engine or image fails loudly and what a killed test run
    /// left behind is removed first.
    pub async fn docker() -> Option<Plane> {
        let docker = testkit::docker::require_docker().await?;
        for image in ["subject", "loadgen"] {
            docker.require_image(image).await;
        }
        Some(Plane::on(Harness::start(RuntimeKind::Docker).await))
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

    /// PUTs app `name` and waits for its operation (at most 60 s); returns the operation's final
    /// status (`Succeeded`, `Failed`).
    pub async fn put_app(&self, name: &str, body: Value) -> String {
        let (code, h, v) = self
            .call("PUT", &format!("{}?{AV}", self.app_url(name)), Some(body))
            .await;
        assert!(code == 200 || code == 201, "{code} {v}");
        self.wait_op(&h, Duration::from_secs(60)).await
    }

    /// App `name`, as its GET answers it.
    pub async fn get_app(&self, name: &str) -> Value {
        let (code, _, v) = self
            .call("GET", &format!("{}?{AV}", self.app_url(name)), None)
            .await;
        assert_eq!(code, 200, "{v}");
        v
    }

    /// App `name`'s latest revision and its ingress fqdn.
    pub async fn latest_revision_and_fqdn(&self, name: &str) -> (String, String) {
        let v = self.get_app(name).await;
        let field = |p: &str| {
            v.pointer(p)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        (
            field("/properties/latestRevisionName"),
            field("/properties/configuration/ingress/fqdn"),
        )
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

    /// The environment `env`'s ARM URL.
    pub fn env_url(&self) -> String {
        format!(
            "{}/subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.App/managedEnvironments/env?{AV}",
            self.base
        )
    }

    /// PUTs the environment `env` (201 the first time, 200 after).
    pub async fn put_env(&self) -> u16 {
        let (code, _, v) = self
            .call(
                "PUT",
                &self.env_url(),
                Some(serde_json::json!({"location": "local", "properties": {}})),
            )
            .await;
        assert!(code == 200 || code == 201, "{code} {v}");
        code
    }

    /// Revision `rev` of app `app`, as its GET answers it.
    pub async fn revision(&self, app: &str, rev: &str) -> Value {
        let (code, _, v) = self
            .call(
                "GET",
                &format!("{}/revisions/{rev}?{AV}", self.app_url(app)),
                None,
            )
            .await;
        assert_eq!(code, 200, "{v}");
        v
    }

    /// The replicas of revision `rev` of app `app`, as `GET .../replicas` lists them.
    pub async fn replicas(&self, app: &str, rev: &str) -> Vec<Value> {
        let (code, _, v) = self
            .call(
                "GET",
                &format!("{}/revisions/{rev}/replicas?{AV}", self.app_url(app)),
                None,
            )
            .await;
        assert_eq!(code, 200, "{v}");
        v["value"].as_array().cloned().unwrap_or_default()
    }

    pub fn system_rows(&self) -> Vec<Value> {
        read_rows(
            &self
                .plane
                .evidence_dir()
                .join("logs/ContainerAppSystemLogs_CL.ndjson"),
        )
    }

    pub fn console_rows(&self) -> Vec<Value> {
        read_rows(
            &self
                .plane
                .evidence_dir()
                .join("logs/ContainerAppConsoleLogs_CL.ndjson"),
        )
    }

    /// Shuts localplane down (within a minute).
    pub async fn stop(self) {
        self.plane.stop().await;
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

/// True when `reps` (replica JSON) are `n` replicas, each Running with every container ready.
pub fn all_ready(reps: &[Value], n: usize) -> bool {
    reps.len() == n
        && reps.iter().all(|r| {
            r["properties"]["runningState"] == "Running"
                && r["properties"]["containers"]
                    .as_array()
                    .is_some_and(|c| c.iter().all(|c| c["ready"] == true))
        })
}

/// A readiness probe on the subject's `/readyz` that reads every second and fails at the first
/// miss: the fastest a test sees a replica become ready, or stop being so.
pub fn readiness() -> Value {
    serde_json::json!([{"type": "Readiness", "httpGet": {"path": "/readyz", "port": 8080},
        "periodSeconds": 1, "failureThreshold": 1}])
}

/// A subject app (`probelab/subject:dev` in environment `env` of [`RG`]) with `env` on its
/// container, `replicas` replicas and `probes`.
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
