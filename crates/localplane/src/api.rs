//! The ARM subset: routes under
//! `/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.App/`, the operation status
//! endpoints, and the fault admin endpoint.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::Router;
use axum::extract::{Path, Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use bytes::Bytes;
use http::{HeaderValue, StatusCode};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::error::ArmError;
use crate::faults;
use crate::handler::{ApiState, op_urls, parse_body, valid_name, with_lro};
use crate::model::{Knobs, from_json, ingress_spec, merge_patch, secrets_of, template_spec};
use crate::plane::{App, EnvRes, OpStatus, Plane, Revision, key, random_suffix};

type ArmResult = Result<Response, ArmError>;

const P: &str = "/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.App";

pub fn router(state: ApiState) -> Router {
    let arm = Router::new()
        .route(&format!("{P}/managedEnvironments/{{env}}"), put(put_env).get(get_env))
        .route(&format!("{P}/containerApps"), get(list_apps))
        .route(
            &format!("{P}/containerApps/{{app}}"),
            put(put_app).get(get_app).patch(patch_app).delete(delete_app),
        )
        .route(&format!("{P}/containerApps/{{app}}/revisions"), get(list_revisions))
        .route(&format!("{P}/containerApps/{{app}}/revisions/{{rev}}"), get(get_revision))
        .route(
            &format!("{P}/containerApps/{{app}}/revisions/{{rev}}/{{action}}"),
            post(revision_action).get(list_replicas_via_action),
        )
        .route(
            &format!("{P}/containerApps/{{app}}/revisions/{{rev}}/replicas/{{replica}}"),
            get(get_replica),
        )
        .route(
            &format!("{P}/jobs/{{job}}"),
            put(crate::jobs::put_job)
                .get(crate::jobs::get_job)
                .patch(crate::jobs::patch_job)
                .delete(crate::jobs::delete_job),
        )
        .route(&format!("{P}/jobs/{{job}}/start"), post(crate::jobs::start_job))
        .route(&format!("{P}/jobs/{{job}}/executions"), get(crate::jobs::list_executions))
        .route(
            &format!("{P}/jobs/{{job}}/executions/{{exec}}"),
            get(crate::jobs::get_execution),
        )
        .route(
            &format!("{P}/jobs/{{job}}/executions/{{exec}}/stop"),
            post(crate::jobs::stop_execution),
        )
        .route(
            "/subscriptions/{sub}/providers/Microsoft.App/locations/{loc}/containerappOperationStatuses/{op}",
            get(op_status),
        )
        .route(
            "/subscriptions/{sub}/providers/Microsoft.App/locations/{loc}/containerappOperationResults/{op}",
            get(op_result),
        )
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn(require_api_version))
        .layer(middleware::from_fn_with_state(state.faults.clone(), faults::inject))
        .with_state(state.clone());
    let admin = Router::new()
        .route(
            "/localplane/faults",
            post(faults::post_faults).delete(faults::delete_faults),
        )
        .with_state(state.faults.clone())
        .route("/localplane/healthz", get(|| async { "ok" }))
        .method_not_allowed_fallback(method_not_allowed)
        .merge(
            Router::new()
                .route("/localplane/apps/{app}/endpoints", get(app_endpoints))
                .with_state(state.clone()),
        );
    let inner = admin.merge(arm);
    Router::new()
        .fallback_service(inner)
        .layer(middleware::from_fn(normalize_path))
        .layer(middleware::from_fn(arm_shaped_errors))
}

/// Every error answer in ARM's shape: axum's own rejections (an undecodable path segment, a
/// body it could not read) are plain text; they become `{"error":{"code","message"}}` with the
/// same status and their text as the message.
async fn arm_shaped_errors(req: Request, next: Next) -> Response {
    let resp = next.run(req).await;
    let status = resp.status();
    let is_json = resp
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return resp;
    }
    let text = match axum::body::to_bytes(resp.into_body(), 64 * 1024).await {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) => format!("(unreadable error body: {e})"),
    };
    let code = match status {
        StatusCode::BAD_REQUEST => "InvalidRequestContent",
        StatusCode::NOT_FOUND => "NotFound",
        StatusCode::METHOD_NOT_ALLOWED => "MethodNotAllowed",
        StatusCode::PAYLOAD_TOO_LARGE => "RequestTooLarge",
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "UnsupportedMediaType",
        s if s.is_server_error() => "InternalServerError",
        _ => "BadRequest",
    };
    let message = if text.is_empty() {
        status.canonical_reason().unwrap_or("error").to_owned()
    } else {
        text
    };
    ArmError::new(status, code, message).into_response()
}

/// Admin (not ARM): an app's ingress address and the replica endpoints it routes to now, for
/// benchmarks and debugging.
async fn app_endpoints(State(s): State<ApiState>, Path(app): Path<String>) -> ArmResult {
    let st = s.plane.lock();
    let a = st
        .apps
        .get(&key(&app))
        .ok_or_else(|| app_not_found(&app, "*"))?;
    let backends: Vec<Value> = a
        .routes
        .snapshot()
        .iter()
        .map(|b| json!({"addr": b.addr.to_string(), "revision": b.revision, "replica": b.replica}))
        .collect();
    Ok(axum::Json(json!({"ingress": a.fqdn(), "backends": backends})).into_response())
}

async fn not_found(req: Request) -> ArmError {
    ArmError::new(
        StatusCode::NOT_FOUND,
        "NoRegisteredProviderFound",
        format!(
            "localplane does not serve {} {} (only a Microsoft.App subset)",
            req.method(),
            req.uri().path()
        ),
    )
}

/// A known path with a method it does not serve: ARM's error body (axum's default is empty).
async fn method_not_allowed(req: Request) -> ArmError {
    ArmError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "MethodNotAllowed",
        format!(
            "The method {} is not allowed on {}.",
            req.method(),
            req.uri().path()
        ),
    )
}

/// ARM paths are case-insensitive: canonicalise the fixed segments before routing.
async fn normalize_path(mut req: Request, next: Next) -> Response {
    const CANON: &[&str] = &[
        "subscriptions",
        "resourceGroups",
        "providers",
        "Microsoft.App",
        "managedEnvironments",
        "containerApps",
        "revisions",
        "replicas",
        "jobs",
        "executions",
        "start",
        "stop",
        "restart",
        "activate",
        "deactivate",
        "locations",
        "containerappOperationStatuses",
        "containerappOperationResults",
    ];
    let path = req.uri().path();
    if path.starts_with("/subscriptions") || path.to_ascii_lowercase().starts_with("/subscriptions")
    {
        let segs: Vec<String> = path
            .split('/')
            .enumerate()
            .map(|(i, s)| {
                // Even positions (after the leading empty one) and the provider namespace are
                // keywords; odd positions are names and keep their case.
                if i % 2 == 1 || s.eq_ignore_ascii_case("Microsoft.App") {
                    CANON
                        .iter()
                        .find(|c| c.eq_ignore_ascii_case(s))
                        .map_or_else(|| s.to_string(), |c| c.to_string())
                } else {
                    s.to_string()
                }
            })
            .collect();
        let new_path = segs.join("/");
        let pq = match req.uri().query() {
            Some(q) => format!("{new_path}?{q}"),
            None => new_path,
        };
        if let Ok(uri) = pq.parse() {
            *req.uri_mut() = uri;
        }
    }
    next.run(req).await
}

async fn require_api_version(req: Request, next: Next) -> Response {
    let has = req
        .uri()
        .query()
        .map(|q| {
            q.split('&')
                .any(|kv| kv.starts_with("api-version=") && kv.len() > 12)
        })
        .unwrap_or(false);
    if !has {
        return ArmError::bad_request(
            "MissingApiVersionParameter",
            "The api-version query parameter (?api-version=) is required for all requests.",
        )
        .into_response();
    }
    next.run(req).await
}

async fn put_env(
    State(s): State<ApiState>,
    Path((sub, rg, name)): Path<(String, String, String)>,
    body: Bytes,
) -> ArmResult {
    let body = parse_body(&body)?;
    let mut st = s.plane.lock();
    let existed = st.envs.contains_key(&key(&name));
    let env = EnvRes {
        sub: sub.clone(),
        rg,
        name: name.clone(),
        location: body
            .get("location")
            .and_then(Value::as_str)
            .unwrap_or("local")
            .to_string(),
        tags: body.get("tags").cloned().unwrap_or(json!({})),
        properties: body.get("properties").cloned().unwrap_or(json!({})),
    };
    let location = env.location.clone();
    let out = env_json(&env);
    st.envs.insert(key(&name), env);
    let op = s.plane.new_op(&mut st, &sub, &location, true);
    drop(st);
    s.plane.persist();
    let code = if existed {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    Ok(with_lro(
        (code, axum::Json(out)).into_response(),
        &s.plane,
        &op,
        false,
    ))
}

fn env_json(e: &EnvRes) -> Value {
    let mut props = e.properties.clone();
    if let Some(p) = props.as_object_mut() {
        p.insert("provisioningState".into(), json!("Succeeded"));
        p.insert("defaultDomain".into(), json!(crate::plane::DEFAULT_DOMAIN));
        p.insert("staticIp".into(), json!("127.0.0.1"));
    }
    json!({
        "id": format!("/subscriptions/{}/resourceGroups/{}/providers/Microsoft.App/managedEnvironments/{}", e.sub, e.rg, e.name),
        "name": e.name,
        "type": "Microsoft.App/managedEnvironments",
        "location": e.location,
        "tags": e.tags,
        "properties": props,
    })
}

async fn get_env(
    State(s): State<ApiState>,
    Path((_sub, rg, name)): Path<(String, String, String)>,
) -> ArmResult {
    let st = s.plane.lock();
    let e = st
        .envs
        .get(&key(&name))
        .ok_or_else(|| ArmError::not_found("Microsoft.App/managedEnvironments", &name, &rg))?;
    Ok(axum::Json(env_json(e)).into_response())
}

fn app_not_found(name: &str, rg: &str) -> ArmError {
    ArmError::not_found("Microsoft.App/containerApps", name, rg)
}

fn app_provisioning(st: &crate::plane::State, app: &App) -> &'static str {
    let pending = app.pending_ops.iter().any(|o| {
        st.ops
            .get(o)
            .is_some_and(|op| op.status == OpStatus::InProgress)
    });
    if pending { "InProgress" } else { "Succeeded" }
}

async fn list_apps(
    State(s): State<ApiState>,
    Path((_sub, rg)): Path<(String, String)>,
) -> ArmResult {
    let st = s.plane.lock();
    let value: Vec<Value> = st
        .apps
        .values()
        .filter(|a| a.rg.eq_ignore_ascii_case(&rg))
        .map(|a| a.to_json(app_provisioning(&st, a)))
        .collect();
    Ok(axum::Json(json!({ "value": value })).into_response())
}

async fn get_app(
    State(s): State<ApiState>,
    Path((_sub, rg, name)): Path<(String, String, String)>,
) -> ArmResult {
    let st = s.plane.lock();
    let app = st
        .apps
        .get(&key(&name))
        .ok_or_else(|| app_not_found(&name, &rg))?;
    Ok(axum::Json(app.to_json(app_provisioning(&st, app))).into_response())
}

async fn put_app(
    State(s): State<ApiState>,
    Path((sub, rg, name)): Path<(String, String, String)>,
    body: Bytes,
) -> ArmResult {
    let body = parse_body(&body)?;
    upsert_app(&s, &sub, &rg, &name, body, false).await
}

async fn patch_app(
    State(s): State<ApiState>,
    Path((sub, rg, name)): Path<(String, String, String)>,
    body: Bytes,
) -> ArmResult {
    let patch = parse_body(&body)?;
    let mut current = {
        let st = s.plane.lock();
        let app = st
            .apps
            .get(&key(&name))
            .ok_or_else(|| app_not_found(&name, &rg))?;
        let mut props = app.properties.clone();
        if let (Some(p), Some(t)) = (
            props.as_object_mut(),
            app.latest().map(|r| r.template.clone()),
        ) {
            p.insert("template".into(), t);
        }
        json!({"location": app.location, "tags": app.tags, "properties": props})
    };
    merge_patch(&mut current, &patch);
    upsert_app(&s, &sub, &rg, &name, current, true).await
}

/// A container app name as the service takes it, or its 400 `ContainerAppInvalidName`.
fn check_app_name(name: &str) -> Result<(), ArmError> {
    if valid_name(name) {
        return Ok(());
    }
    Err(ArmError::bad_request(
        "ContainerAppInvalidName",
        format!(
            "Invalid ContainerApp name '{name}'. A name must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character and cannot have '--'. The length must not be more than 32 characters."
        ),
    ))
}

async fn upsert_app(
    s: &ApiState,
    sub: &str,
    rg: &str,
    name: &str,
    body: Value,
    is_patch: bool,
) -> ArmResult {
    check_app_name(name)?;
    let parsed = parse_app_body(body)?;
    let (multiple, rules) = {
        let st = s.plane.lock();
        traffic_of(st.apps.get(&key(name)), name, &parsed)?
    };
    // Bind a listener up front (cheap; dropped if the app already has one).
    let listener = if parsed.ingress.is_some() {
        Some(std::net::TcpListener::bind(("127.0.0.1", 0)).map_err(|e| {
            ArmError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "InternalServerError",
                format!("cannot bind ingress: {e}"),
            )
        })?)
    } else {
        None
    };
    let plane = &s.plane;
    let mut guard = plane.lock();
    let st = &mut *guard;
    let k = key(name);
    let creating = !st.apps.contains_key(&k);
    if creating && is_patch {
        return Err(app_not_found(name, rg));
    }
    if creating {
        st.apps.insert(k.clone(), new_app(sub, rg, name, &parsed));
    }
    let AppBody {
        props,
        template,
        spec,
        ingress,
        tags,
        knobs,
        location,
        configuration: _,
    } = parsed;
    let Some(app) = st.apps.get_mut(&k) else {
        return Err(app_not_found(name, rg));
    };
    app.tags = tags;
    app.properties = props;
    app.knobs = knobs;
    app.location = location.clone();
    app.ingress = ingress;
    app.multiple = multiple;
    app.traffic_rules = rules;
    if app.ingress.is_some()
        && app.ingress_port.is_none()
        && let Some(l) = listener
    {
        start_ingress(plane, app, l)?;
    }
    let new_revision = add_revision_if_changed(app, template, spec)?;
    let op = plane.new_op(st, sub, &location, !new_revision);
    let Some(app) = st.apps.get_mut(&k) else {
        return Err(app_not_found(name, rg));
    };
    if new_revision {
        app.pending_ops.push(op.clone());
    }
    let notify = app.notify.clone();
    let stop = app.controller_stop.clone();
    let out = app.to_json(if new_revision {
        "InProgress"
    } else {
        "Succeeded"
    });
    drop(guard);
    if creating {
        plane.spawn_controller(name.to_string(), notify.clone(), stop);
    }
    notify.notify_one();
    plane.persist();
    let (code, location_header) = if is_patch {
        (StatusCode::ACCEPTED, true)
    } else if creating || new_revision {
        (StatusCode::CREATED, false)
    } else {
        (StatusCode::OK, false)
    };
    Ok(with_lro(
        (code, axum::Json(out)).into_response(),
        plane,
        &op,
        location_header,
    ))
}

/// A new app `name` with what `body` asks for, no revision yet and no controller running.
fn new_app(sub: &str, rg: &str, name: &str, body: &AppBody) -> App {
    App {
        sub: sub.to_string(),
        rg: rg.to_string(),
        name: name.to_string(),
        location: body.location.clone(),
        tags: body.tags.clone(),
        properties: body.props.clone(),
        knobs: body.knobs.clone(),
        ingress: body.ingress.clone(),
        ingress_port: None,
        ingress_stop: CancellationToken::new(),
        routes: Arc::new(crate::ingress::Routes::default()),
        revisions: Vec::new(),
        traffic_rev: None,
        multiple: false,
        traffic_rules: Vec::new(),
        notify: Arc::new(tokio::sync::Notify::new()),
        pending_ops: Vec::new(),
        controller_stop: CancellationToken::new(),
    }
}

/// Adds a revision to `app` when `template` differs from its latest one's (named by
/// `revisionSuffix` or a random suffix); `true` when it did. A suffix already taken is a 400.
fn add_revision_if_changed(
    app: &mut App,
    template: Value,
    spec: crate::model::TemplateSpec,
) -> Result<bool, ArmError> {
    if !app.latest().is_none_or(|r| r.template != template) {
        return Ok(false);
    }
    let suffix = spec
        .revision_suffix
        .clone()
        .unwrap_or_else(|| random_suffix(7));
    let rev_name = format!("{}--{}", app.name, suffix);
    if app.revision(&rev_name).is_some() {
        return Err(ArmError::bad_request(
            "ContainerAppRevisionSuffixConflict",
            format!(
                "Revision with suffix '{suffix}' already exists; change 'revisionSuffix' or leave it empty."
            ),
        ));
    }
    let now = labkit::Timestamp::now();
    app.revisions.push(Revision {
        name: rev_name,
        created: now,
        template,
        spec,
        active: true,
        traffic: 0,
        provisioned: false,
        replicas: Vec::new(),
        last_active: now,
    });
    Ok(true)
}

/// The revision mode and the checked traffic rules of `body` for app `name` (`app`: as it is
/// now, if it exists): a `revisionName` must name one of its revisions or the one this body
/// creates (a new template with a `revisionSuffix`, as a blue-green deployment names it).
fn traffic_of(
    app: Option<&App>,
    name: &str,
    body: &AppBody,
) -> Result<(bool, Vec<crate::traffic::Rule>), ArmError> {
    let creates = (app.and_then(|a| a.latest()).map(|r| &r.template) != Some(&body.template))
        .then(|| {
            body.spec
                .revision_suffix
                .as_ref()
                .map(|x| format!("{name}--{x}"))
        })
        .flatten();
    let exists = |n: &str| {
        creates
            .as_deref()
            .is_some_and(|c| c.eq_ignore_ascii_case(n))
            || app.is_some_and(|a| a.revision(n).is_some())
    };
    let cfg = body.configuration.as_ref();
    Ok((
        crate::traffic::is_multiple(cfg),
        crate::traffic::rules(cfg, exists)?,
    ))
}

/// A container app PUT (or a PATCH merged over the app) read and validated: the stored JSON
/// (unknown fields and all) beside the typed specs localplane acts on.
struct AppBody {
    props: Value,
    template: Value,
    spec: crate::model::TemplateSpec,
    ingress: Option<crate::model::IngressSpec>,
    tags: Value,
    knobs: Knobs,
    location: String,
    /// The typed `properties.configuration` (revision mode and traffic rules).
    configuration: Option<appmodel::Configuration>,
}

/// Reads a container app body as the wire model (`appmodel::ContainerApp`, what `arm` sends)
/// and validates it: `properties` and `properties.template` are required, the template and the
/// ingress are checked as the service checks them, the `localplane.*` tags are read as knobs.
fn parse_app_body(body: Value) -> Result<AppBody, ArmError> {
    let Some(props) = body.get("properties").filter(|p| p.is_object()) else {
        return Err(ArmError::bad_request(
            "InvalidRequestContent",
            "'properties' is required",
        ));
    };
    let Some(template) = props.get("template").filter(|t| t.is_object()).cloned() else {
        return Err(ArmError::bad_request(
            "InvalidRequestContent",
            "'properties.template' is required",
        ));
    };
    crate::traffic::check_raw_weights(props)?;
    crate::retention::check_raw(props)?;
    let app: appmodel::ContainerApp = from_json(&body, "")?;
    let template_typed = app.properties.template.unwrap_or_default();
    let configuration = app.properties.configuration;
    let secrets = secrets_of(configuration.as_ref().and_then(|c| c.secrets.as_deref()));
    let spec = template_spec(&template_typed, &secrets)?;
    let ingress = ingress_spec(configuration.as_ref())?;
    let tags = body
        .get("tags")
        .cloned()
        .filter(|t| t.is_object())
        .unwrap_or(json!({}));
    let knobs = Knobs::from_tags(Some(&tags))?;
    let mut body = body;
    let props = body
        .get_mut("properties")
        .map(Value::take)
        .unwrap_or_default();
    Ok(AppBody {
        props,
        template,
        spec,
        ingress,
        tags,
        knobs,
        location: app.location.unwrap_or_else(|| "local".to_owned()),
        configuration,
    })
}

/// Starts app ingress on `listener` (caller holds the state lock).
pub fn start_ingress(
    plane: &Arc<Plane>,
    app: &mut App,
    listener: std::net::TcpListener,
) -> Result<(), ArmError> {
    let fail = |e: std::io::Error| {
        ArmError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalServerError",
            format!("ingress: {e}"),
        )
    };
    listener.set_nonblocking(true).map_err(fail)?;
    let port = listener.local_addr().map_err(fail)?.port();
    let l = tokio::net::TcpListener::from_std(listener).map_err(fail)?;
    app.ingress_port = Some(port);
    plane.ctx.tracker.spawn(crate::ingress::serve(
        l,
        app.routes.clone(),
        app.ingress_stop.clone(),
    ));
    let stop = app.ingress_stop.clone();
    let shutdown = plane.ctx.shutdown.clone();
    // Ingress outlives the replicas' grace periods at shutdown; it ends with the app.
    tokio::spawn(async move {
        shutdown.cancelled().await;
        stop.cancel();
    });
    Ok(())
}

async fn delete_app(
    State(s): State<ApiState>,
    Path((sub, _rg, name)): Path<(String, String, String)>,
) -> ArmResult {
    let plane = s.plane.clone();
    let mut st = plane.lock();
    let Some(app) = st.apps.remove(&key(&name)) else {
        return Ok(StatusCode::NO_CONTENT.into_response());
    };
    app.controller_stop.cancel();
    app.ingress_stop.cancel();
    let replicas: Vec<_> = app
        .revisions
        .iter()
        .flat_map(|r| r.replicas.clone())
        .collect();
    for r in &replicas {
        r.retiring.store(true, Ordering::SeqCst);
        r.routable.store(false, Ordering::SeqCst);
        r.cancel.cancel();
    }
    let op = plane.new_op(&mut st, &sub, &app.location, false);
    drop(st);
    let p2 = plane.clone();
    let op2 = op.clone();
    plane.ctx.tracker.spawn(async move {
        for r in replicas {
            let mut done = r.done.subscribe();
            let _ =
                tokio::time::timeout(std::time::Duration::from_secs(660), done.wait_for(|d| *d))
                    .await;
        }
        let mut st = p2.lock();
        Plane::finish_op(&mut st, &op2, OpStatus::Succeeded, None);
    });
    plane.persist();
    Ok(with_lro(
        StatusCode::ACCEPTED.into_response(),
        &plane,
        &op,
        true,
    ))
}

async fn list_revisions(
    State(s): State<ApiState>,
    Path((_sub, rg, name)): Path<(String, String, String)>,
) -> ArmResult {
    let st = s.plane.lock();
    let app = st
        .apps
        .get(&key(&name))
        .ok_or_else(|| app_not_found(&name, &rg))?;
    let value: Vec<Value> = app.revisions.iter().map(|r| app.revision_json(r)).collect();
    Ok(axum::Json(json!({ "value": value })).into_response())
}

fn revision_not_found(rev: &str) -> ArmError {
    ArmError::new(
        StatusCode::NOT_FOUND,
        "ContainerAppRevisionNotFound",
        format!("Revision '{rev}' was not found."),
    )
}

async fn get_revision(
    State(s): State<ApiState>,
    Path((_sub, rg, name, rev)): Path<(String, String, String, String)>,
) -> ArmResult {
    let st = s.plane.lock();
    let app = st
        .apps
        .get(&key(&name))
        .ok_or_else(|| app_not_found(&name, &rg))?;
    let r = app.revision(&rev).ok_or_else(|| revision_not_found(&rev))?;
    Ok(axum::Json(app.revision_json(r)).into_response())
}

async fn revision_action(
    State(s): State<ApiState>,
    Path((_sub, rg, name, rev, action)): Path<(String, String, String, String, String)>,
) -> ArmResult {
    let plane = s.plane.clone();
    let mut st = plane.lock();
    let app = st
        .apps
        .get_mut(&key(&name))
        .ok_or_else(|| app_not_found(&name, &rg))?;
    let idx = app
        .revisions
        .iter()
        .position(|r| r.name.eq_ignore_ascii_case(&rev))
        .ok_or_else(|| revision_not_found(&rev))?;
    let rev_name = app.revisions[idx].name.clone();
    match action.as_str() {
        "restart" => {
            if !app.revisions[idx].active {
                return Err(ArmError::bad_request(
                    "ContainerAppRevisionNotActive",
                    format!("Revision '{rev_name}' is not active and cannot be restarted."),
                ));
            }
            drop(st);
            plane.restart_revision(&name, &rev_name);
        }
        "activate" => {
            app.revisions[idx].active = true;
            app.notify.notify_one();
        }
        "deactivate" => {
            let weight = if app.multiple {
                app.split_targets().0.get(idx).copied().unwrap_or(0)
            } else {
                0
            };
            if weight > 0 {
                return Err(ArmError::bad_request(
                    "ContainerAppRevisionHasTraffic",
                    format!(
                        "Revision '{rev_name}' cannot be deactivated: it receives {weight}% of the traffic. Set its traffic weight to 0 in ingress.traffic first."
                    ),
                ));
            }
            plane.deactivate_locked(app, idx);
            app.notify.notify_one();
        }
        other => {
            return Err(ArmError::new(
                StatusCode::NOT_FOUND,
                "NotFound",
                format!("Unknown revision action '{other}'."),
            ));
        }
    }
    Ok(StatusCode::OK.into_response())
}

/// `GET .../revisions/{rev}/replicas` shares its path shape with the POST actions.
async fn list_replicas_via_action(
    State(s): State<ApiState>,
    Path((_sub, rg, name, rev, action)): Path<(String, String, String, String, String)>,
) -> ArmResult {
    if action != "replicas" {
        return Err(ArmError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            format!("GET is not allowed on '{action}'."),
        ));
    }
    let st = s.plane.lock();
    let app = st
        .apps
        .get(&key(&name))
        .ok_or_else(|| app_not_found(&name, &rg))?;
    let r = app.revision(&rev).ok_or_else(|| revision_not_found(&rev))?;
    let value: Vec<Value> = r
        .replicas
        .iter()
        .filter(|x| !x.is_done())
        .map(|x| app.replica_json(r, x))
        .collect();
    Ok(axum::Json(json!({ "value": value })).into_response())
}

async fn get_replica(
    State(s): State<ApiState>,
    Path((_sub, rg, name, rev, replica)): Path<(String, String, String, String, String)>,
) -> ArmResult {
    let st = s.plane.lock();
    let app = st
        .apps
        .get(&key(&name))
        .ok_or_else(|| app_not_found(&name, &rg))?;
    let r = app.revision(&rev).ok_or_else(|| revision_not_found(&rev))?;
    let x = r
        .replicas
        .iter()
        .find(|x| x.name.eq_ignore_ascii_case(&replica) && !x.is_done())
        .ok_or_else(|| {
            ArmError::new(
                StatusCode::NOT_FOUND,
                "ContainerAppReplicaNotFound",
                format!("Replica '{replica}' was not found."),
            )
        })?;
    Ok(axum::Json(app.replica_json(r, x)).into_response())
}

fn op_not_found(op: &str) -> ArmError {
    ArmError::new(
        StatusCode::NOT_FOUND,
        "OperationNotFound",
        format!("Operation '{op}' was not found."),
    )
}

async fn op_status(
    State(s): State<ApiState>,
    Path((sub, loc, op)): Path<(String, String, String)>,
) -> ArmResult {
    let st = s.plane.lock();
    let o = st.ops.get(&op).ok_or_else(|| op_not_found(&op))?;
    let mut v = json!({
        "id": format!("/subscriptions/{sub}/providers/Microsoft.App/locations/{loc}/containerappOperationStatuses/{op}"),
        "name": o.id,
        "status": match o.status {
            OpStatus::InProgress => "InProgress",
            OpStatus::Succeeded => "Succeeded",
            OpStatus::Failed => "Failed",
        },
        "startTime": o.start.to_rfc3339_ms(),
    });
    if let Some(end) = o.end {
        v["endTime"] = json!(end.to_rfc3339_ms());
    }
    if let Some((code, message)) = &o.error {
        v["error"] = json!({"code": code, "message": message});
    }
    let mut resp = axum::Json(v).into_response();
    if o.status == OpStatus::InProgress {
        resp.headers_mut()
            .insert(http::header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    Ok(resp)
}

async fn op_result(
    State(s): State<ApiState>,
    Path((_sub, _loc, op)): Path<(String, String, String)>,
) -> ArmResult {
    let o = {
        let st = s.plane.lock();
        st.ops.get(&op).cloned().ok_or_else(|| op_not_found(&op))?
    };
    match o.status {
        OpStatus::InProgress => {
            let (_, result_url) = op_urls(&s.plane, &o);
            let mut resp = StatusCode::ACCEPTED.into_response();
            if let Ok(v) = HeaderValue::from_str(&result_url) {
                resp.headers_mut().insert(http::header::LOCATION, v);
            }
            resp.headers_mut()
                .insert(http::header::RETRY_AFTER, HeaderValue::from_static("1"));
            Ok(resp)
        }
        OpStatus::Succeeded => Ok(StatusCode::NO_CONTENT.into_response()),
        OpStatus::Failed => {
            let (code, message) = o
                .error
                .unwrap_or_else(|| ("Failed".into(), "Operation failed.".into()));
            Err(ArmError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                &code,
                message,
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_app_body;
    use serde_json::{Value, json};

    /// The PUT body of the spec's `ContainerApps_CreateOrUpdate` example (2024-03-01), the
    /// fixture `appmodel`'s tests pin the wire model with.
    fn spec_put_body() -> Value {
        let path = format!(
            "{}/../appmodel/tests/fixtures/ContainerApps_CreateOrUpdate_request.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path).expect("the spec fixture");
        let v: Value = serde_json::from_str(&text).expect("JSON");
        v["parameters"]["containerAppEnvelope"].clone()
    }

    #[test]
    fn the_spec_example_put_body_is_accepted_and_stored_whole() {
        let body = spec_put_body();
        let parsed = parse_app_body(body.clone()).expect("the spec's own example is valid");
        assert_eq!(
            parsed.props, body["properties"],
            "stored as sent, unknown fields and all"
        );
        let scale = &parsed.props["template"]["scale"];
        assert_eq!(scale["rules"][0]["custom"]["type"], "http");
        let cfg = &parsed.props["configuration"];
        assert_eq!(cfg["maxInactiveRevisions"], 10);
        assert_eq!(cfg["ingress"]["stickySessions"]["affinity"], "sticky");
        assert_eq!(
            parsed.spec.scale.not_emulated,
            vec!["httpscalingrule".to_string()],
            "the typed scale is kept for its users (a custom rule: stored, not acted on)"
        );
        assert_eq!(parsed.spec.scale.min_replicas, 1);
        assert_eq!(parsed.spec.scale.max_replicas, 5);
        assert_eq!(parsed.ingress.map(|i| i.target_port), Some(3000));
        assert_eq!(parsed.location, "East US");
    }

    #[test]
    fn a_body_that_does_not_fit_the_wire_model_is_a_400_naming_its_key() {
        let mut body = spec_put_body();
        body["properties"]["template"]["scale"]["maxReplicas"] = json!("five");
        let e = parse_app_body(body).err().expect("a 400");
        assert_eq!(e.status, 400);
        assert_eq!(e.code, "InvalidRequestContent");
        assert!(
            e.message.contains("properties.template.scale.maxReplicas"),
            "{}",
            e.message
        );
    }
}
