//! The ARM API's route table and the middleware every request passes: ARM's error shape for
//! axum's own rejections, case-insensitive fixed segments, repeated slashes, the required
//! `api-version`, and ARM's 404/405 naming the method and path. The handlers live by what they
//! serve: `api` (environments, apps, revisions, operations), `jobs`, `listing` (lists by
//! scope), `tenancy` (what real clients touch before Microsoft.App), `faults`.

use axum::Router;
use axum::extract::Request;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use http::StatusCode;

use crate::api;
use crate::error::ArmError;
use crate::faults;
use crate::handler::ApiState;
use crate::{listing, tenancy};

const P: &str = "/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.App";
/// The subscription scope of the list endpoints.
const S: &str = "/subscriptions/{sub}/providers/Microsoft.App";

// Long on purpose: the whole route table in one place reads best whole.
pub fn router(state: ApiState) -> Router {
    let arm = Router::new()
        .route(
            &format!("{P}/managedEnvironments/{{env}}"),
            put(api::put_env).get(api::get_env).delete(api::delete_env),
        )
        .route(&format!("{P}/managedEnvironments"), get(listing::envs_in_group))
        .route(&format!("{P}/containerApps"), get(listing::apps_in_group))
        .route(&format!("{P}/jobs"), get(listing::jobs_in_group))
        .route(&format!("{S}/containerApps"), get(listing::apps_in_subscription))
        .route(&format!("{S}/jobs"), get(listing::jobs_in_subscription))
        .route(&format!("{S}/managedEnvironments"), get(listing::envs_in_subscription))
        .route(
            &format!("{P}/containerApps/{{app}}"),
            put(api::put_app).get(api::get_app).patch(api::patch_app).delete(api::delete_app),
        )
        .route(&format!("{P}/containerApps/{{app}}/revisions"), get(api::list_revisions))
        .route(&format!("{P}/containerApps/{{app}}/revisions/{{rev}}"), get(api::get_revision))
        .route(
            &format!("{P}/containerApps/{{app}}/revisions/{{rev}}/{{action}}"),
            post(api::revision_action).get(api::list_replicas_via_action),
        )
        .route(
            &format!("{P}/containerApps/{{app}}/revisions/{{rev}}/replicas/{{replica}}"),
            get(api::get_replica),
        )
        .route(
            &format!("{P}/jobs/{{job}}"),
            put(crate::jobs::put_job)
                .get(crate::jobs::get_job)
                .patch(crate::jobs::patch_job)
                .delete(crate::jobs::delete_job),
        )
        .route(&format!("{P}/jobs/{{job}}/start"), post(crate::jobs::start_job))
        .route(&format!("{P}/jobs/{{job}}/stop"), post(crate::jobs::stop_all_executions))
        .route(
            &format!("{P}/jobs/{{job}}/stop/{{exec}}"),
            post(crate::jobs::stop_execution),
        )
        .route(&format!("{P}/jobs/{{job}}/executions"), get(crate::jobs::list_executions))
        .route(
            &format!("{P}/jobs/{{job}}/executions/{{exec}}"),
            get(crate::jobs::get_execution),
        )
        .route(
            &format!("{P}/jobs/{{job}}/executions/{{exec}}/stop"),
            post(crate::jobs::stop_execution),
        )
        .route("/metadata/endpoints", get(tenancy::metadata_endpoints))
        .route(tenancy::IDENTITY_PATH, get(tenancy::identity_token))
        .route(tenancy::IMDS_PATH, get(tenancy::identity_token))
        .route("/subscriptions", get(tenancy::list_subscriptions))
        .route("/tenants", get(tenancy::list_tenants))
        .route("/subscriptions/{sub}", get(tenancy::get_subscription))
        .route("/subscriptions/{sub}/resourceGroups", get(tenancy::list_groups))
        .route(
            "/subscriptions/{sub}/resourceGroups/{rg}",
            put(tenancy::put_group)
                .get(tenancy::get_group)
                .head(tenancy::head_group)
                .delete(tenancy::delete_group),
        )
        .route(S, get(tenancy::get_app_provider))
        .route(&format!("{S}/register"), post(tenancy::get_app_provider))
        .route("/subscriptions/{sub}/providers/{ns}", get(tenancy::get_provider))
        .route(
            "/subscriptions/{sub}/providers/{ns}/{action}",
            post(tenancy::register_provider),
        )
        .route(
            "/subscriptions/{sub}/providers/Microsoft.App/locations/{loc}/containerappOperationStatuses/{op}",
            get(api::op_status),
        )
        .route(
            "/subscriptions/{sub}/providers/Microsoft.App/locations/{loc}/containerappOperationResults/{op}",
            get(api::op_result),
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
                .route("/localplane/apps/{app}/endpoints", get(api::app_endpoints))
                .route(
                    "/localplane/apps/{app}/maintenance",
                    post(crate::maintenance::post_maintenance),
                )
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

/// ARM paths are case-insensitive: canonicalise the fixed segments before routing. Repeated
/// slashes are one (`az cloud register --endpoint-resource-manager https://host/` asks for
/// `https://host//metadata/endpoints`, which ARM serves).
async fn normalize_path(mut req: Request, next: Next) -> Response {
    if req.uri().path().contains("//") {
        let mut path = String::with_capacity(req.uri().path().len());
        for c in req.uri().path().chars() {
            if !(c == '/' && path.ends_with('/')) {
                path.push(c);
            }
        }
        let pq = match req.uri().query() {
            Some(q) => format!("{path}?{q}"),
            None => path,
        };
        if let Ok(uri) = pq.parse() {
            *req.uri_mut() = uri;
        }
    }
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
        "register",
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
