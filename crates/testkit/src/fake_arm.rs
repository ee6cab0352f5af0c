//! A small in-process fake of the ARM subset the samplers use: arm's, the samplers' and
//! labctl's tests drive the ARM client against it.
//!
//! It serves `containerApps/{app}` (GET, PATCH answered 202 + `Azure-AsyncOperation`),
//! `revisions` (paged by `page_size` with `nextLink`), `revisions/{rev}/replicas`,
//! `revisions/{rev}/restart` (202 + `Location`), the operation URLs, and localplane's fault admin
//! endpoint `POST /localplane/faults` (`{"kind":"429"|"500"|"hang","count":N,"retry_after_s":2}`,
//! `DELETE` clears), so the same fault tests run against either. It records every ARM request
//! with its `Authorization` header so tests can check tokens and refreshes.
//!
//! Binds 127.0.0.1 on a free port only.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// One injected fault: the next `count` ARM requests fail this way.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
pub struct Fault {
    /// `429`, `500` or `hang`.
    pub kind: String,
    #[serde(default = "one")]
    pub count: u32,
    #[serde(default)]
    pub retry_after_s: Option<u64>,
}

fn one() -> u32 {
    1
}

/// A revision the fake serves.
#[derive(Clone, Debug)]
pub struct FakeRevision {
    pub name: String,
    pub active: bool,
    pub traffic_weight: u32,
    pub replicas: Vec<String>,
}

/// One request the fake received.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
    /// The `Authorization` header, verbatim (tests compare it with the tokens they issued).
    pub authorization: Option<String>,
    /// Status answered.
    pub status: u16,
}

#[derive(Default)]
struct FakeState {
    apps: BTreeMap<String, Vec<FakeRevision>>,
    templates: BTreeMap<String, Value>,
    faults: VecDeque<Fault>,
    seen: Vec<Seen>,
    ops: BTreeMap<String, u32>,
    page_size: Option<usize>,
    hang: Duration,
}

/// The running fake. Dropping it stops the server.
pub struct FakeArm {
    addr: SocketAddr,
    state: Arc<Mutex<FakeState>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeArm {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn lock(state: &Mutex<FakeState>) -> std::sync::MutexGuard<'_, FakeState> {
    state.lock().unwrap_or_else(|p| p.into_inner())
}

impl FakeArm {
    /// Starts the fake on 127.0.0.1 with no apps.
    pub async fn start() -> std::io::Result<FakeArm> {
        let state = Arc::new(Mutex::new(FakeState {
            hang: Duration::from_secs(30),
            ..FakeState::default()
        }));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let app = Router::new().fallback(handle).with_state(state.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(FakeArm { addr, state, task })
    }

    /// `http://127.0.0.1:PORT/`.
    pub fn base_url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Adds (or replaces) an app with these revisions.
    pub fn set_app(&self, app: &str, revisions: Vec<FakeRevision>) {
        let mut s = lock(&self.state);
        s.apps.insert(app.to_owned(), revisions);
        s.templates.entry(app.to_owned()).or_insert_with(|| {
            json!({"containers": [{"name": app, "image": "probelab/subject:dev",
                   "env": [{"name": "PORT", "value": "8080"}]}],
                   "scale": {"minReplicas": 1, "maxReplicas": 3}, "volumes": []})
        });
    }

    /// An app with `n_revisions` revisions (`{app}--r{i}`); the last is active with 100 %
    /// traffic and `replicas` replicas, the others inactive with none.
    pub fn add_simple_app(&self, app: &str, n_revisions: usize, replicas: usize) {
        let revisions = (0..n_revisions)
            .map(|i| {
                let name = format!("{app}--r{i}");
                let last = i + 1 == n_revisions;
                FakeRevision {
                    // Only the active revision runs replicas, as after a finished rollout.
                    replicas: if last {
                        (0..replicas).map(|k| format!("{name}-rep{k}")).collect()
                    } else {
                        Vec::new()
                    },
                    name,
                    active: last,
                    traffic_weight: if last { 100 } else { 0 },
                }
            })
            .collect();
        self.set_app(app, revisions);
    }

    /// Lists come back `n` items per page, linked by `nextLink`.
    pub fn set_page_size(&self, n: usize) {
        lock(&self.state).page_size = Some(n.max(1));
    }

    /// How long a `hang` fault holds the request.
    pub fn set_hang(&self, d: Duration) {
        lock(&self.state).hang = d;
    }

    /// Queues a fault.
    pub fn inject(&self, fault: Fault) {
        lock(&self.state).faults.push_back(fault);
    }

    /// Every ARM request so far.
    pub fn seen(&self) -> Vec<Seen> {
        lock(&self.state).seen.clone()
    }

    /// The app's current template.
    pub fn template(&self, app: &str) -> Option<Value> {
        lock(&self.state).templates.get(app).cloned()
    }
}

fn arm_error(status: StatusCode, code: &str, message: &str) -> Response {
    (
        status,
        [("content-type", "application/json")],
        json!({"error": {"code": code, "message": message}}).to_string(),
    )
        .into_response()
}

fn json_ok(status: StatusCode, v: Value) -> Response {
    (
        status,
        [("content-type", "application/json")],
        v.to_string(),
    )
        .into_response()
}

async fn handle(
    State(state): State<Arc<Mutex<FakeState>>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_owned();
    if path == "/localplane/faults" {
        return faults_admin(&state, &method, &body);
    }
    let authorization = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let fault = {
        let mut s = lock(&state);
        let f = s.faults.front_mut().map(|f| {
            f.count = f.count.saturating_sub(1);
            f.clone()
        });
        if s.faults.front().is_some_and(|f| f.count == 0) {
            s.faults.pop_front();
        }
        f
    };
    let resp = match fault {
        Some(f) if f.kind == "429" => {
            let mut r = arm_error(
                StatusCode::TOO_MANY_REQUESTS,
                "TooManyRequests",
                "injected throttle",
            );
            if let Some(s) = f.retry_after_s
                && let Ok(v) = s.to_string().parse()
            {
                r.headers_mut().insert("retry-after", v);
            }
            r
        }
        Some(f) if f.kind == "500" => arm_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalServerError",
            "injected failure",
        ),
        Some(_) => {
            let hang = lock(&state).hang;
            tokio::time::sleep(hang).await;
            arm_error(
                StatusCode::GATEWAY_TIMEOUT,
                "GatewayTimeout",
                "injected hang",
            )
        }
        None => {
            let host = headers
                .get("host")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("127.0.0.1");
            route(&state, &method, &uri, &format!("http://{host}"), &body)
        }
    };
    lock(&state).seen.push(Seen {
        method: method.to_string(),
        path,
        authorization,
        status: resp.status().as_u16(),
    });
    resp
}

fn faults_admin(state: &Mutex<FakeState>, method: &Method, body: &[u8]) -> Response {
    if method == Method::DELETE {
        lock(state).faults.clear();
        return StatusCode::NO_CONTENT.into_response();
    }
    match serde_json::from_slice::<Fault>(body) {
        Ok(f) => {
            lock(state).faults.push_back(f);
            StatusCode::NO_CONTENT.into_response()
        }
        Err(e) => arm_error(StatusCode::BAD_REQUEST, "BadRequest", &e.to_string()),
    }
}

fn page(uri: &Uri, base: &str, items: Vec<Value>, page_size: Option<usize>) -> Value {
    let skip: usize = uri
        .query()
        .unwrap_or("")
        .split('&')
        .find_map(|kv| kv.strip_prefix("$skiptoken="))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let Some(n) = page_size else {
        return json!({ "value": items });
    };
    let chunk: Vec<Value> = items.iter().skip(skip).take(n).cloned().collect();
    if skip + n < items.len() {
        let next = format!(
            "{}?api-version=2024-03-01&$skiptoken={}",
            uri.path(),
            skip + n
        );
        json!({ "value": chunk, "nextLink": format!("{base}{next}") })
    } else {
        json!({ "value": chunk, "nextLink": null })
    }
}

fn route(
    state: &Mutex<FakeState>,
    method: &Method,
    uri: &Uri,
    base: &str,
    body: &[u8],
) -> Response {
    let segs: Vec<&str> = uri.path().trim_matches('/').split('/').collect();
    let mut s = lock(state);
    if segs.len() == 2 && (segs[0] == "operations" || segs[0] == "operationResults") {
        return operation_poll(&mut s, segs[0], segs[1]);
    }
    // subscriptions/{s}/resourceGroups/{rg}/providers/Microsoft.App/containerApps/{app}/...
    if segs.len() < 8 || segs[5] != "Microsoft.App" || segs[6] != "containerApps" {
        return arm_error(StatusCode::NOT_FOUND, "NotFound", "no such route");
    }
    let app = segs[7].to_owned();
    let Some(revisions) = s.apps.get(&app).cloned() else {
        return arm_error(
            StatusCode::NOT_FOUND,
            "ResourceNotFound",
            &format!("The Resource 'Microsoft.App/containerApps/{app}' was not found."),
        );
    };
    match (method.as_str(), &segs[8..]) {
        ("GET", []) => {
            let template = s.templates.get(&app).cloned().unwrap_or(Value::Null);
            json_ok(
                StatusCode::OK,
                json!({"name": app, "type": "Microsoft.App/containerApps",
                       "properties": {"provisioningState": "Succeeded", "template": template}}),
            )
        }
        ("PATCH", []) => patch_app(&mut s, &app, base, body),
        ("GET", ["revisions"]) => {
            let items = revisions.iter().map(revision_json).collect();
            json_ok(StatusCode::OK, page(uri, base, items, s.page_size))
        }
        ("GET", ["revisions", rev, "replicas"]) => {
            let Some(r) = revisions.iter().find(|r| r.name == *rev) else {
                return arm_error(StatusCode::NOT_FOUND, "ResourceNotFound", "no revision");
            };
            let items = r
                .replicas
                .iter()
                .map(|name| replica_json(name, &app))
                .collect();
            json_ok(StatusCode::OK, page(uri, base, items, s.page_size))
        }
        ("POST", ["revisions", _rev, "restart" | "activate" | "deactivate"]) => {
            revision_operation(&mut s, base)
        }
        _ => arm_error(StatusCode::NOT_FOUND, "NotFound", "no such route"),
    }
}

/// `/operations/{id}` and `/operationResults/{id}` (`kind`): in progress on the first poll,
/// done after.
fn operation_poll(s: &mut FakeState, kind: &str, id: &str) -> Response {
    let polls = s.ops.entry(id.to_owned()).or_insert(0);
    *polls += 1;
    let done = *polls >= 2;
    match (kind, done) {
        ("operations", false) => json_ok(StatusCode::OK, json!({"status": "InProgress"})),
        ("operations", true) => json_ok(StatusCode::OK, json!({"status": "Succeeded"})),
        (_, false) => {
            let mut r = StatusCode::ACCEPTED.into_response();
            r.headers_mut()
                .insert("retry-after", axum::http::HeaderValue::from_static("0"));
            r
        }
        (_, true) => StatusCode::NO_CONTENT.into_response(),
    }
}

/// PATCH of an app: keeps the body's template, answers 202 with both operation headers.
fn patch_app(s: &mut FakeState, app: &str, base: &str, body: &[u8]) -> Response {
    let patch: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    if let Some(t) = patch.pointer("/properties/template") {
        s.templates.insert(app.to_owned(), t.clone());
    }
    let id = format!("op{}", s.ops.len() + 1);
    s.ops.insert(id.clone(), 0);
    let mut r = StatusCode::ACCEPTED.into_response();
    let h = r.headers_mut();
    if let Ok(v) = format!("{base}/operations/{id}").parse() {
        h.insert("azure-asyncoperation", v);
    }
    if let Ok(v) = format!("{base}/operationResults/{id}").parse() {
        h.insert("location", v);
    }
    h.insert("retry-after", axum::http::HeaderValue::from_static("0"));
    r
}

/// A revision as ARM lists it.
fn revision_json(r: &FakeRevision) -> Value {
    json!({"name": r.name, "type": "Microsoft.App/containerApps/revisions",
       "properties": {"active": r.active, "replicas": r.replicas.len(),
         "trafficWeight": r.traffic_weight,
         "provisioningState": "Provisioned",
         "healthState": if r.active { "Healthy" } else { "None" },
         "runningState": if r.active { "Running" } else { "Stopped" },
         "createdTime": "2026-06-12T14:00:00+00:00"}})
}

/// A running replica of `app` as ARM lists it (one ready container named like the app).
fn replica_json(name: &str, app: &str) -> Value {
    json!({"name": name, "properties": {"runningState": "Running",
       "createdTime": "2026-06-12T14:00:05Z",
       "containers": [{"name": app, "ready": true, "started": true,
                       "restartCount": 0, "runningState": "Running"}]}})
}

/// A revision restart, activation or deactivation: 202 with a `Location` to poll.
fn revision_operation(s: &mut FakeState, base: &str) -> Response {
    let id = format!("op{}", s.ops.len() + 1);
    s.ops.insert(id.clone(), 0);
    let mut r = StatusCode::ACCEPTED.into_response();
    if let Ok(v) = format!("{base}/operationResults/{id}").parse() {
        r.headers_mut().insert("location", v);
    }
    r.headers_mut()
        .insert("retry-after", axum::http::HeaderValue::from_static("0"));
    r
}

// ---------------------------------------------------------------------------------------------
// The Container Apps / App Service managed identity endpoint.

/// One token request the fake identity endpoint received.
#[derive(Clone, Debug)]
pub struct IdentityRequest {
    /// The `X-IDENTITY-HEADER` value (tests compare it with the secret they set).
    pub identity_header: Option<String>,
    pub api_version: Option<String>,
    pub resource: Option<String>,
    pub client_id: Option<String>,
    /// Status answered (400 when a check failed).
    pub status: u16,
}

struct IdentityState {
    header_secret: String,
    client_id: Option<String>,
    lifetime_s: i64,
    token_prefix: String,
    issued: u32,
    requests: Vec<IdentityRequest>,
    /// Resources whose token is fixed (e.g. localplane's `LOCALPLANE_TOKEN` for ARM).
    fixed: BTreeMap<String, String>,
}

/// A fake `IDENTITY_ENDPOINT`: checks `X-IDENTITY-HEADER`, `api-version=2019-08-01` and
/// `client_id`, and answers `{"access_token": "<prefix>-<n>", "expires_on": "<unix secs>", ...}`
/// with `expires_on` as a string, as Container Apps does. Binds 127.0.0.1 only.
pub struct FakeIdentity {
    addr: SocketAddr,
    state: Arc<Mutex<IdentityState>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeIdentity {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeIdentity {
    /// Starts the endpoint. Tokens are `<token_prefix>-1`, `-2`, ..., each valid `lifetime_s`.
    pub async fn start(
        header_secret: &str,
        client_id: Option<&str>,
        token_prefix: &str,
        lifetime_s: i64,
    ) -> std::io::Result<FakeIdentity> {
        let state = Arc::new(Mutex::new(IdentityState {
            header_secret: header_secret.to_owned(),
            client_id: client_id.map(str::to_owned),
            lifetime_s,
            token_prefix: token_prefix.to_owned(),
            issued: 0,
            requests: Vec::new(),
            fixed: BTreeMap::new(),
        }));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let app = Router::new()
            .fallback(identity_handle)
            .with_state(state.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(FakeIdentity { addr, state, task })
    }

    /// The value for `IDENTITY_ENDPOINT`.
    pub fn endpoint(&self) -> String {
        format!("http://{}/msi/token", self.addr)
    }

    /// Answers `token` for `resource` (as the request's `resource` parameter names it, e.g.
    /// `https://management.azure.com`) instead of `<prefix>-<n>`: a service that checks one
    /// fixed token (localplane's `--token`) then accepts what this identity issues for it.
    pub fn issue_for(&self, resource: &str, token: &str) {
        self.state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .fixed
            .insert(resource.trim_end_matches('/').to_owned(), token.to_owned());
    }

    /// Every token request so far.
    pub fn requests(&self) -> Vec<IdentityRequest> {
        self.state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .requests
            .clone()
    }

    /// Tokens issued so far.
    pub fn issued(&self) -> u32 {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).issued
    }
}

async fn identity_handle(
    State(state): State<Arc<Mutex<IdentityState>>>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let query: BTreeMap<String, String> =
        url::form_urlencoded::parse(uri.query().unwrap_or("").as_bytes())
            .into_owned()
            .collect();
    let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
    let mut req = IdentityRequest {
        identity_header: headers
            .get("x-identity-header")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        api_version: query.get("api-version").cloned(),
        resource: query.get("resource").cloned(),
        client_id: query.get("client_id").cloned(),
        status: 200,
    };
    let ok = req.identity_header.as_deref() == Some(s.header_secret.as_str())
        && req.api_version.as_deref() == Some("2019-08-01")
        && req.resource.is_some()
        && req.client_id == s.client_id;
    if !ok {
        req.status = 400;
        s.requests.push(req);
        return (
            StatusCode::BAD_REQUEST,
            [("content-type", "application/json")],
            json!({"error": "invalid_request", "error_description": "checks failed"}).to_string(),
        )
            .into_response();
    }
    s.issued += 1;
    let resource = req.resource.clone().unwrap_or_default();
    let token = match s.fixed.get(resource.trim_end_matches('/')) {
        Some(t) => t.clone(),
        None => format!("{}-{}", s.token_prefix, s.issued),
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    s.requests.push(req);
    json_ok(
        StatusCode::OK,
        json!({
            "access_token": token,
            "expires_on": (now + s.lifetime_s).to_string(),
            "resource": resource,
            "token_type": "Bearer",
            "client_id": s.client_id.clone().unwrap_or_default(),
        }),
    )
}
