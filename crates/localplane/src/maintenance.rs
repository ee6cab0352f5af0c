//! Platform maintenance: what Container Apps' own updates of the nodes under an environment do
//! to an app's replicas. Container Apps starts them itself (Learn, "Azure Container Apps planned
//! maintenance": critical updates "Anytime", noncritical ones in the maintenance window when one
//! is set); localplane starts one on request through its admin API,
//! `POST /localplane/apps/{app}/maintenance`, a long-running operation in ARM's shape (202,
//! `Azure-AsyncOperation`, `Location`) that ends when every replica was moved, its result the
//! [`Report`] of what moved.
//!
//! Every replica of the app's active revisions is moved once, one at a time, in the form the
//! app's `localplane.maintenance` tag selects ([`MaintenanceForm`]):
//! - `rolling` (the default; Learn, "Reliability in Azure Container Apps", *Resilience to service
//!   maintenance*): each replica's replacement is started and ready before the replica is
//!   stopped, as a revision restart replaces them ([`Plane::replace_replicas`]);
//! - `stopFirst` (microsoft/azure-container-apps#1436 and #1144): the replica is taken out of
//!   routing and stopped (SIGTERM, its grace period, SIGKILL), the controller starts its
//!   replacement once it is gone, and the next replica waits until that replacement is ready.
//!
//! The moves write the rows any replica's start and stop writes (`AssigningReplica`, ...,
//! `ContainerTerminated` with reason `ManuallyStopped`); no row names the maintenance, as no
//! source shows one (docs/FIDELITY.md, "Platform maintenance").

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::extract::{Path, State};
use axum::response::IntoResponse;
use http::StatusCode;
use serde::Serialize;

use crate::api::ArmResult;
use crate::error::ArmError;
use crate::handler::{ApiState, Origin, with_lro};
use crate::model::MaintenanceForm;
use crate::plane::{OpResult, OpStatus, Plane, key};
use crate::replica::Replica;

/// The 409 of a second maintenance of an app while one is under way.
pub const CODE_IN_PROGRESS: &str = "MaintenanceInProgress";
/// The failed operation's code when a replacement did not become ready in time.
pub const CODE_NOT_READY: &str = "MaintenanceReplicaNotReady";

/// Why a maintenance did not end with every replica moved and its replacement ready (the failed
/// operation's message).
#[derive(Debug, thiserror::Error)]
pub enum MaintenanceError {
    #[error("app '{0}' was deleted")]
    AppGone(String),
    #[error("replica '{0}' did not stop")]
    NotStopped(String),
    #[error("no replacement of replica '{0}' was started")]
    NoReplacement(String),
    #[error("the replacement '{replacement}' of replica '{replica}' did not become ready")]
    ReplacementNotReady {
        replica: String,
        replacement: String,
    },
    #[error("replica '{replica}' of revision '{revision}' is not ready after the maintenance")]
    NotReadyAfter { replica: String, revision: String },
}

/// What a maintenance will move, fixed when it starts: the 202's body.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub app: String,
    /// `rolling` or `stopFirst`.
    pub form: &'static str,
    /// Each active revision with the replicas to move, in the order they are moved.
    pub revisions: Vec<PlannedRevision>,
    #[serde(skip)]
    replicas: Vec<Vec<Arc<Replica>>>,
    /// The app's subscription and location, for its operation's URLs.
    #[serde(skip)]
    sub: String,
    #[serde(skip)]
    location: String,
    #[serde(skip)]
    kind: MaintenanceForm,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedRevision {
    pub name: String,
    pub replicas: Vec<String>,
}

/// What one maintenance moved: the operation's result.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub app: String,
    pub form: &'static str,
    pub revisions: Vec<RevisionMoves>,
}

/// The moves within one active revision.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RevisionMoves {
    pub name: String,
    /// The replicas stopped, in the order they were moved.
    pub moved: Vec<String>,
    /// The replicas it runs once the maintenance is over.
    pub replicas: Vec<String>,
}

impl MaintenanceForm {
    /// The tag value that selects it.
    pub fn as_str(self) -> &'static str {
        match self {
            MaintenanceForm::Rolling => "rolling",
            MaintenanceForm::StopFirst => "stopFirst",
        }
    }
}

/// `POST /localplane/apps/{app}/maintenance`: starts the app's maintenance and answers 202 with
/// the operation's URLs; 404 for an unknown app, 409 while one is under way.
pub(crate) async fn post_maintenance(
    State(s): State<ApiState>,
    origin: Origin,
    Path(app): Path<String>,
) -> ArmResult {
    let plane = s.plane.clone();
    let plan = plan(&plane, &app)
        .map_err(|_| ArmError::not_found("Microsoft.App/containerApps", &app, "*"))?;
    let name = plan.app.clone();
    let accepted = serde_json::to_value(&plan).unwrap_or_default();
    if !maintaining(&plane).insert(key(&name)) {
        return Err(ArmError::new(
            StatusCode::CONFLICT,
            CODE_IN_PROGRESS,
            format!("A platform maintenance of app '{name}' is under way."),
        ));
    }
    let op = {
        let mut st = plane.lock();
        plane.new_op(&mut st, &plan.sub, &plan.location, false)
    };
    let (task_plane, op_id) = (plane.clone(), op.clone());
    plane.ctx.tracker.spawn(async move {
        let outcome = maintain(&task_plane, plan).await;
        {
            let mut st = task_plane.lock();
            match outcome {
                Ok(report) => {
                    let body = serde_json::to_value(&report).unwrap_or_default();
                    Plane::set_op_result(&mut st, &op_id, OpResult::Body(body));
                    Plane::finish_op(&mut st, &op_id, OpStatus::Succeeded, None);
                }
                Err(e) => Plane::finish_op(
                    &mut st,
                    &op_id,
                    OpStatus::Failed,
                    Some((CODE_NOT_READY.into(), e.to_string())),
                ),
            }
        }
        maintaining(&task_plane).remove(&key(&name));
    });
    Ok(with_lro(
        (StatusCode::ACCEPTED, axum::Json(accepted)).into_response(),
        &plane,
        &origin,
        &op,
        true,
    ))
}

fn maintaining(plane: &Plane) -> std::sync::MutexGuard<'_, HashSet<String>> {
    plane
        .maintaining
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What a maintenance of app `app` moves now: every replica of its active revisions, in its
/// form; `Err` when the app is gone.
pub fn plan(plane: &Plane, app: &str) -> Result<Plan, MaintenanceError> {
    let st = plane.lock();
    let a = st
        .apps
        .get(&key(app))
        .ok_or_else(|| MaintenanceError::AppGone(app.to_owned()))?;
    let active: Vec<&crate::plane::Revision> = a.revisions.iter().filter(|r| r.active).collect();
    let replicas: Vec<Vec<Arc<Replica>>> = active.iter().map(|r| live_of(r)).collect();
    Ok(Plan {
        app: a.name.clone(),
        form: a.knobs.maintenance.as_str(),
        revisions: active
            .iter()
            .zip(&replicas)
            .map(|(r, reps)| PlannedRevision {
                name: r.name.clone(),
                replicas: reps.iter().map(|x| x.name.clone()).collect(),
            })
            .collect(),
        replicas,
        sub: a.sub.clone(),
        location: a.location.clone(),
        kind: a.knobs.maintenance,
    })
}

/// Moves every replica of `plan` once, one at a time, in its form; `Err` names a replacement
/// that did not become ready within [`crate::plane::OPERATION_TIMEOUT`] (or the app's deletion).
pub async fn maintain(plane: &Arc<Plane>, plan: Plan) -> Result<Report, MaintenanceError> {
    let app = plan.app.as_str();
    let mut out = Vec::new();
    for (rev, before) in plan.revisions.iter().zip(&plan.replicas) {
        let rev = rev.name.as_str();
        if before.is_empty() {
            continue;
        }
        match plan.kind {
            MaintenanceForm::Rolling => plane.replace_replicas(app, rev).await,
            MaintenanceForm::StopFirst => {
                for rep in before {
                    stop_first(plane, app, rev, rep).await?;
                }
            }
        }
        let after = live(plane, app, rev);
        if let Some(r) = after.iter().find(|r| !r.ready()) {
            return Err(MaintenanceError::NotReadyAfter {
                replica: r.name.clone(),
                revision: rev.to_owned(),
            });
        }
        out.push(RevisionMoves {
            name: rev.to_owned(),
            moved: before.iter().map(|r| r.name.clone()).collect(),
            replicas: after.iter().map(|r| r.name.clone()).collect(),
        });
    }
    Ok(Report {
        app: plan.app.clone(),
        form: plan.form,
        revisions: out,
    })
}

/// The stop-first move of `rep`: out of routing and stopped while it still counts against its
/// revision, so the controller replaces it once it is gone; returns when the replacement is
/// ready.
async fn stop_first(
    plane: &Arc<Plane>,
    app: &str,
    rev: &str,
    rep: &Arc<Replica>,
) -> Result<(), MaintenanceError> {
    let known: HashSet<String> = {
        let st = plane.lock();
        let a = st
            .apps
            .get(&key(app))
            .ok_or_else(|| MaintenanceError::AppGone(app.to_owned()))?;
        if rep.retiring.load(Ordering::SeqCst) || rep.is_done() {
            return Ok(()); // stopped by someone else meanwhile (a scale-in, a deactivation)
        }
        let known = a
            .revision(rev)
            .map(|r| r.replicas.iter().map(|x| x.name.clone()).collect())
            .unwrap_or_default();
        plane.take_out(a, rep.clone());
        known
    };
    let stopped = plane.wait_until(|| rep.is_done()).await;
    if !stopped {
        return Err(MaintenanceError::NotStopped(rep.name.clone()));
    }
    let mut replacement: Option<Arc<Replica>> = None;
    let ready = plane
        .wait_until(|| {
            if replacement.is_none() {
                replacement = live(plane, app, rev)
                    .into_iter()
                    .find(|r| !known.contains(&r.name));
            }
            replacement.as_ref().is_some_and(|r| r.ready())
        })
        .await;
    if ready {
        Ok(())
    } else {
        Err(match replacement {
            Some(r) => MaintenanceError::ReplacementNotReady {
                replica: rep.name.clone(),
                replacement: r.name.clone(),
            },
            None => MaintenanceError::NoReplacement(rep.name.clone()),
        })
    }
}

/// The replicas of revision `rev` of app `app` that are not being retired.
fn live(plane: &Plane, app: &str, rev: &str) -> Vec<Arc<Replica>> {
    let st = plane.lock();
    st.apps
        .get(&key(app))
        .and_then(|a| a.revision(rev))
        .map(live_of)
        .unwrap_or_default()
}

/// The replicas of `r` that are not being retired nor gone.
fn live_of(r: &crate::plane::Revision) -> Vec<Arc<Replica>> {
    r.replicas
        .iter()
        .filter(|x| !x.retiring.load(Ordering::SeqCst) && !x.is_done())
        .cloned()
        .collect()
}
