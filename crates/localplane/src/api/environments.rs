//! Managed environments: PUT (read as appmodel's `ManagedEnvironment` properties, a 400 naming
//! the key that does not fit; stored as sent, with their location and tags), GET (appmodel's
//! type, `plane::views`), and DELETE, refused while an app or a job is in one.

use axum::extract::{Path, State};
use axum::response::IntoResponse;
use bytes::Bytes;
use http::StatusCode;
use serde_json::{Value, json};

use crate::error::ArmError;
use crate::handler::{ApiState, Origin, parse_body, with_lro};
use crate::listing;
use crate::plane::{EnvRes, OpResult, Plane, key};

use super::ArmResult;

pub(crate) async fn put_env(
    State(s): State<ApiState>,
    origin: Origin,
    Path((sub, rg, name)): Path<(String, String, String)>,
    body: Bytes,
) -> ArmResult {
    let body = parse_body(&body)?;
    let (location, tags, properties) = parse_env_body(body)?;
    let mut st = s.plane.lock();
    let existed = st.envs.contains_key(&key(&name));
    let env = EnvRes {
        sub: sub.clone(),
        rg,
        name: name.clone(),
        location,
        tags,
        properties,
    };
    let location = env.location.clone();
    let out = listing::env_json(&env);
    let id = out["id"].as_str().unwrap_or_default().to_owned();
    st.envs.insert(key(&name), env);
    let op = s.plane.new_op(&mut st, &sub, &location, true);
    Plane::set_op_result(&mut st, &op, OpResult::Resource(id));
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
        &origin,
        &op,
        false,
    ))
}

/// An environment's PUT body as stored: its location (`local` when it has none), tags and
/// properties, as sent (`null`s dropped), once they read as appmodel's `ManagedEnvironment`
/// members; else ARM's 400 naming the key that does not fit.
fn parse_env_body(mut body: Value) -> Result<(String, Value, Value), ArmError> {
    crate::model::strip_nulls(&mut body);
    let properties = body.get("properties").cloned().unwrap_or(json!({}));
    crate::model::from_json::<appmodel::ManagedEnvironmentProperties>(&properties, "properties")?;
    let tags = body.get("tags").cloned().unwrap_or(json!({}));
    crate::model::from_json::<std::collections::BTreeMap<String, String>>(&tags, "tags")?;
    let location = body
        .get("location")
        .and_then(Value::as_str)
        .unwrap_or("local")
        .to_string();
    Ok((location, tags, properties))
}

pub(crate) async fn get_env(
    State(s): State<ApiState>,
    Path((_sub, rg, name)): Path<(String, String, String)>,
) -> ArmResult {
    let st = s.plane.lock();
    let e = st
        .envs
        .get(&key(&name))
        .ok_or_else(|| ArmError::not_found("Microsoft.App/managedEnvironments", &name, &rg))?;
    Ok(axum::Json(listing::env_json(e)).into_response())
}

/// `DELETE` of an environment: refused while an app or a job is in it (ARM's 409: Azure
/// deletes an environment only once it is empty); 204 when there is no such environment.
pub(crate) async fn delete_env(
    State(s): State<ApiState>,
    origin: Origin,
    Path((sub, _rg, name)): Path<(String, String, String)>,
) -> ArmResult {
    let mut st = s.plane.lock();
    let Some(env) = st.envs.get(&key(&name)) else {
        return Ok(StatusCode::NO_CONTENT.into_response());
    };
    let suffix = format!("/managedenvironments/{}", env.name.to_ascii_lowercase());
    let in_env = |props: &Value| {
        ["environmentId", "managedEnvironmentId"].iter().any(|k| {
            props
                .get(*k)
                .and_then(Value::as_str)
                .is_some_and(|id| id.to_ascii_lowercase().ends_with(&suffix))
        })
    };
    let users: Vec<String> = st
        .apps
        .values()
        .filter(|a| in_env(&a.properties))
        .map(|a| a.name.clone())
        .chain(
            st.jobs
                .values()
                .filter(|j| in_env(&j.properties))
                .map(|j| j.name.clone()),
        )
        .collect();
    if !users.is_empty() {
        return Err(ArmError::new(
            StatusCode::CONFLICT,
            "ManagedEnvironmentHasContainerApps",
            format!(
                "Managed environment '{name}' still holds {}; delete them first.",
                users.join(", ")
            ),
        ));
    }
    let location = env.location.clone();
    st.envs.remove(&key(&name));
    let op = s.plane.new_op(&mut st, &sub, &location, true);
    drop(st);
    s.plane.persist();
    Ok(with_lro(
        StatusCode::ACCEPTED.into_response(),
        &s.plane,
        &origin,
        &op,
        true,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_environment_body_is_stored_as_sent_once_it_reads_as_the_wire_model() {
        let body = json!({
            "location": "West Europe",
            "tags": {"team": "lab"},
            "properties": {
                "zoneRedundant": false,
                "workloadProfiles": [{"name": "Consumption", "workloadProfileType": "Consumption"}],
                "daprConfiguration": null
            }
        });
        let (location, tags, props) = parse_env_body(body).expect("a valid body");
        assert_eq!(location, "West Europe");
        assert_eq!(tags, json!({"team": "lab"}));
        assert_eq!(
            props,
            json!({
                "zoneRedundant": false,
                "workloadProfiles": [{"name": "Consumption", "workloadProfileType": "Consumption"}]
            }),
            "unknown members kept, nulls dropped"
        );
        let (location, tags, props) = parse_env_body(json!({})).expect("an empty body");
        assert_eq!(
            (location.as_str(), tags, props),
            ("local", json!({}), json!({}))
        );
    }

    #[test]
    fn an_environment_body_that_does_not_fit_is_a_400_naming_its_key() {
        for (body, key) in [
            (
                json!({"properties": {"defaultDomain": 5}}),
                "properties.defaultDomain",
            ),
            (json!({"properties": []}), "properties"),
            (json!({"tags": {"team": 1}}), "tags.team"),
        ] {
            let e = parse_env_body(body).expect_err("a 400");
            assert_eq!(e.status, 400);
            assert_eq!(e.code, "InvalidRequestContent");
            assert!(e.message.contains(key), "{key}: {}", e.message);
        }
    }
}
