//! An app's revisions and their replicas: lists, GETs, and the revision actions (restart,
//! activate, deactivate; a deactivation refused while the revision has traffic).

use appmodel as wire;
use axum::extract::{Path, State};
use axum::response::IntoResponse;
use http::StatusCode;
use serde_json::json;

use crate::error::ArmError;
use crate::handler::ApiState;
use crate::plane::key;

use super::ArmResult;
use super::apps::{app_not_found, find_app};

pub(crate) async fn list_revisions(
    State(s): State<ApiState>,
    Path((_sub, rg, name)): Path<(String, String, String)>,
) -> ArmResult {
    let st = s.plane.lock();
    let app = find_app(&st, &name, &rg)?;
    let page = wire::Page {
        value: app.revisions.iter().map(|r| app.revision_view(r)).collect(),
        next_link: None,
    };
    Ok(axum::Json(page).into_response())
}

fn revision_not_found(rev: &str) -> ArmError {
    ArmError::new(
        StatusCode::NOT_FOUND,
        "ContainerAppRevisionNotFound",
        format!("Revision '{rev}' was not found."),
    )
}

pub(crate) async fn get_revision(
    State(s): State<ApiState>,
    Path((_sub, rg, name, rev)): Path<(String, String, String, String)>,
) -> ArmResult {
    let st = s.plane.lock();
    let app = find_app(&st, &name, &rg)?;
    let r = app.revision(&rev).ok_or_else(|| revision_not_found(&rev))?;
    Ok(axum::Json(app.revision_view(r)).into_response())
}

pub(crate) async fn revision_action(
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
    // The spec gives these 200s no schema, yet the az CLI parses the body as JSON (`r.json()`
    // in `restart_revision`, `activate_revision`, `deactivate_revision`), so Azure answers one.
    Ok(axum::Json(json!({})).into_response())
}

/// `GET .../revisions/{rev}/replicas` shares its path shape with the POST actions.
pub(crate) async fn list_replicas_via_action(
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
    let app = find_app(&st, &name, &rg)?;
    let r = app.revision(&rev).ok_or_else(|| revision_not_found(&rev))?;
    let page = wire::Page {
        value: r
            .replicas
            .iter()
            .filter(|x| !x.is_done())
            .map(|x| app.replica_view(r, x))
            .collect(),
        next_link: None,
    };
    Ok(axum::Json(page).into_response())
}

pub(crate) async fn get_replica(
    State(s): State<ApiState>,
    Path((_sub, rg, name, rev, replica)): Path<(String, String, String, String, String)>,
) -> ArmResult {
    let st = s.plane.lock();
    let app = find_app(&st, &name, &rg)?;
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
    Ok(axum::Json(app.replica_view(r, x)).into_response())
}
