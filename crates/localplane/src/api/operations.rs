//! Long-running operations: the status URL (`Azure-AsyncOperation`) and the result URL
//! (`Location`), as ARM answers them while in progress, once succeeded and once failed.

use axum::extract::{Path, State};
use axum::response::IntoResponse;
use http::{HeaderValue, StatusCode};
use serde_json::json;

use crate::error::ArmError;
use crate::handler::{ApiState, Origin, op_urls};
use crate::plane::{OpResult, OpStatus};

use super::ArmResult;

fn op_not_found(op: &str) -> ArmError {
    ArmError::new(
        StatusCode::NOT_FOUND,
        "OperationNotFound",
        format!("Operation '{op}' was not found."),
    )
}

pub(crate) async fn op_status(
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

pub(crate) async fn op_result(
    State(s): State<ApiState>,
    origin: Origin,
    Path((_sub, _loc, op)): Path<(String, String, String)>,
) -> ArmResult {
    let o = {
        let st = s.plane.lock();
        st.ops.get(&op).cloned().ok_or_else(|| op_not_found(&op))?
    };
    match o.status {
        OpStatus::InProgress => {
            let (_, result_url) = op_urls(&s.plane, &origin, &o);
            let mut resp = StatusCode::ACCEPTED.into_response();
            if let Ok(v) = HeaderValue::from_str(&result_url) {
                resp.headers_mut().insert(http::header::LOCATION, v);
            }
            resp.headers_mut()
                .insert(http::header::RETRY_AFTER, HeaderValue::from_static("1"));
            Ok(resp)
        }
        // ARM's result URL answers 200 with the resource once a PUT/PATCH is done (the az CLI's
        // `poll_results` returns that body; `job update` fails on an empty one), 204 when the
        // operation has none (a delete, or a resource deleted since).
        OpStatus::Succeeded => {
            let body = match &o.result {
                Some(OpResult::Body(v)) => Some(v.clone()),
                Some(OpResult::Resource(id)) => crate::listing::resource_json(&s.plane.lock(), id),
                None => None,
            };
            Ok(match body {
                Some(v) => axum::Json(v).into_response(),
                None => StatusCode::NO_CONTENT.into_response(),
            })
        }
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
