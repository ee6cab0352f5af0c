//! Reading resources by scope: the list endpoints at resource-group and subscription scope for
//! container apps, jobs and managed environments (`az containerapp list`, `job list`, `env
//! list`), and a resource's body by its ARM id (what an operation's result URL answers).

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::handler::ApiState;
use crate::plane::{App, EnvRes, OpStatus, State as PlaneState, key};

/// The resource kinds listed by scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    ContainerApps,
    Jobs,
    ManagedEnvironments,
}

/// The bodies of every resource of `kind` in `sub` (and in `rg`, when given), as their GETs
/// answer them.
pub fn list(st: &PlaneState, kind: Kind, sub: &str, rg: Option<&str>) -> Vec<Value> {
    let in_scope = |s: &str, r: &str| {
        s.eq_ignore_ascii_case(sub) && rg.is_none_or(|rg| r.eq_ignore_ascii_case(rg))
    };
    match kind {
        Kind::ContainerApps => st
            .apps
            .values()
            .filter(|a| in_scope(&a.sub, &a.rg))
            .map(|a| app_value(st, a))
            .collect(),
        Kind::Jobs => st
            .jobs
            .values()
            .filter(|j| in_scope(&j.sub, &j.rg))
            .map(job_value)
            .collect(),
        Kind::ManagedEnvironments => st
            .envs
            .values()
            .filter(|e| in_scope(&e.sub, &e.rg))
            .map(env_json)
            .collect(),
    }
}

fn value(v: Vec<Value>) -> Response {
    axum::Json(json!({ "value": v })).into_response()
}

pub async fn apps_in_group(
    State(s): State<ApiState>,
    Path((sub, rg)): Path<(String, String)>,
) -> Response {
    value(list(&s.plane.lock(), Kind::ContainerApps, &sub, Some(&rg)))
}

pub async fn apps_in_subscription(State(s): State<ApiState>, Path(sub): Path<String>) -> Response {
    value(list(&s.plane.lock(), Kind::ContainerApps, &sub, None))
}

pub async fn jobs_in_group(
    State(s): State<ApiState>,
    Path((sub, rg)): Path<(String, String)>,
) -> Response {
    value(list(&s.plane.lock(), Kind::Jobs, &sub, Some(&rg)))
}

pub async fn jobs_in_subscription(State(s): State<ApiState>, Path(sub): Path<String>) -> Response {
    value(list(&s.plane.lock(), Kind::Jobs, &sub, None))
}

pub async fn envs_in_group(
    State(s): State<ApiState>,
    Path((sub, rg)): Path<(String, String)>,
) -> Response {
    value(list(
        &s.plane.lock(),
        Kind::ManagedEnvironments,
        &sub,
        Some(&rg),
    ))
}

pub async fn envs_in_subscription(State(s): State<ApiState>, Path(sub): Path<String>) -> Response {
    value(list(&s.plane.lock(), Kind::ManagedEnvironments, &sub, None))
}

/// The body of the resource with ARM id `id` (`.../containerApps/{name}`, `.../jobs/{name}`,
/// `.../managedEnvironments/{name}`) as its GET answers now; `None` when it is gone.
pub fn resource_json(st: &PlaneState, id: &str) -> Option<Value> {
    let segs: Vec<&str> = id.split('/').collect();
    let (kind, name) = match segs.as_slice() {
        [.., kind, name] => (*kind, *name),
        _ => return None,
    };
    if kind.eq_ignore_ascii_case("containerApps") {
        let a = st.apps.get(&key(name))?;
        Some(app_value(st, a))
    } else if kind.eq_ignore_ascii_case("jobs") {
        st.jobs.get(&key(name)).map(job_value)
    } else if kind.eq_ignore_ascii_case("managedEnvironments") {
        st.envs.get(&key(name)).map(env_json)
    } else {
        None
    }
}

/// An app's GET body as JSON, beside the other kinds' (a typed body always serializes: its
/// maps have text keys).
fn app_value(st: &PlaneState, a: &crate::plane::App) -> Value {
    serde_json::to_value(a.app_view(app_provisioning(st, a))).unwrap_or(Value::Null)
}

/// A job's GET body as JSON (as [`app_value`]).
fn job_value(j: &crate::job::Job) -> Value {
    serde_json::to_value(j.job_view()).unwrap_or(Value::Null)
}

/// An environment as its GET answers it.
pub(crate) fn env_json(e: &EnvRes) -> Value {
    serde_json::to_value(e.env_view()).unwrap_or(Value::Null)
}

/// An app's `provisioningState`: `InProgress` while an operation on it runs.
pub(crate) fn app_provisioning(st: &PlaneState, app: &App) -> &'static str {
    let pending = app.pending_ops.iter().any(|o| {
        st.ops
            .get(o)
            .is_some_and(|op| op.status == OpStatus::InProgress)
    });
    if pending { "InProgress" } else { "Succeeded" }
}
