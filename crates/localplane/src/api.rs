//! The ARM subset's handlers for `/subscriptions/{sub}/resourceGroups/{rg}/providers/
//! Microsoft.App/` (jobs aside, in `crate::jobs`), by what they serve: [`environments`],
//! [`apps`] (and the admin endpoints view of an app), [`revisions`] (and their replicas) and
//! [`operations`] (the status and result URLs of long-running operations).

mod apps;
mod environments;
mod operations;
mod revisions;

pub(crate) use apps::{
    app_endpoints, delete_app, get_app, patch_app, put_app, remove_app, start_ingress,
};
pub(crate) use environments::{delete_env, get_env, put_env};
pub(crate) use operations::{op_result, op_status};
pub(crate) use revisions::{
    get_replica, get_revision, list_replicas_via_action, list_revisions, revision_action,
};

pub(crate) type ArmResult = Result<axum::response::Response, crate::error::ArmError>;
