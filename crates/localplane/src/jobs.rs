//! Container Apps jobs' ARM endpoints: jobs (PUT, PATCH, GET, DELETE), a start (with its
//! template override), the executions list and GET, and stops; a job's removal and its restore
//! from the state file. What starts and runs executions: [`crate::execution`]; what a job is and
//! how it is stored: [`crate::job`].

use std::sync::Arc;

use appmodel as wire;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::StatusCode;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::error::ArmError;
use crate::execution::{spawn_trigger, start_execution};
use crate::handler::{ApiState, Origin, parse_body, valid_name, with_lro};
use crate::job::{Execution, Job, JobConfig, job_not_found, parse_config};
use crate::model::{merge_patch, parse_template};
use crate::plane::{Plane, key};

pub async fn put_job(
    State(s): State<ApiState>,
    origin: Origin,
    Path((sub, rg, name)): Path<(String, String, String)>,
    body: Bytes,
) -> Result<Response, ArmError> {
    let body = parse_body(&body)?;
    upsert_job(&s, &origin, &sub, &rg, &name, body, false)
}

pub async fn patch_job(
    State(s): State<ApiState>,
    origin: Origin,
    Path((sub, rg, name)): Path<(String, String, String)>,
    body: Bytes,
) -> Result<Response, ArmError> {
    let patch = parse_body(&body)?;
    let mut current = {
        let st = s.plane.lock();
        let j = st
            .jobs
            .get(&key(&name))
            .ok_or_else(|| job_not_found(&name, &rg))?;
        json!({"location": j.location, "tags": j.tags, "properties": j.properties})
    };
    merge_patch(&mut current, &patch);
    upsert_job(&s, &origin, &sub, &rg, &name, current, true)
}

fn upsert_job(
    s: &ApiState,
    origin: &Origin,
    sub: &str,
    rg: &str,
    name: &str,
    body: Value,
    is_patch: bool,
) -> Result<Response, ArmError> {
    let mut body = body;
    crate::model::strip_nulls(&mut body);
    if !valid_name(name) {
        return Err(ArmError::bad_request(
            "JobInvalidName",
            format!("Invalid job name '{name}'."),
        ));
    }
    let (props, config) = job_properties(&s.plane, &body)?;
    let location = body
        .get("location")
        .and_then(Value::as_str)
        .unwrap_or("local")
        .to_string();
    let tags = body
        .get("tags")
        .cloned()
        .filter(|t| t.is_object())
        .unwrap_or(json!({}));
    let plane = s.plane.clone();
    let mut st = plane.lock();
    let k = key(name);
    let creating = !st.jobs.contains_key(&k);
    if creating {
        st.jobs.insert(
            k.clone(),
            Job {
                sub: sub.to_string(),
                rg: rg.to_string(),
                name: name.to_string(),
                location: location.clone(),
                tags: tags.clone(),
                properties: props.clone(),
                config: config.clone(),
                executions: Vec::new(),
                scheduler_stop: CancellationToken::new(),
            },
        );
    }
    let Some(job) = st.jobs.get_mut(&k) else {
        return Err(job_not_found(name, rg));
    };
    let trigger_changed = creating || job.config.trigger != config.trigger;
    job.location = location.clone();
    job.tags = tags;
    job.properties = props;
    job.config = config.clone();
    if trigger_changed {
        job.scheduler_stop.cancel();
        job.scheduler_stop = CancellationToken::new();
        spawn_trigger(
            &plane,
            name.to_string(),
            &config.trigger,
            job.scheduler_stop.clone(),
        );
    }
    let out = job.job_view();
    let id = job.id();
    let op = plane.new_op(&mut st, sub, &location, true);
    Plane::set_op_result(&mut st, &op, crate::plane::OpResult::Resource(id));
    drop(st);
    plane.persist();
    let code = if is_patch {
        StatusCode::ACCEPTED
    } else if creating {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(with_lro(
        (code, axum::Json(out)).into_response(),
        &plane,
        origin,
        &op,
        is_patch,
    ))
}

pub async fn get_job(
    State(s): State<ApiState>,
    Path((_sub, rg, name)): Path<(String, String, String)>,
) -> Result<Response, ArmError> {
    let st = s.plane.lock();
    let j = st
        .jobs
        .get(&key(&name))
        .ok_or_else(|| job_not_found(&name, &rg))?;
    Ok(axum::Json(j.job_view()).into_response())
}

pub async fn delete_job(
    State(s): State<ApiState>,
    origin: Origin,
    Path((sub, _rg, name)): Path<(String, String, String)>,
) -> Result<Response, ArmError> {
    let plane = s.plane.clone();
    let Some(location) = plane
        .lock()
        .jobs
        .get(&key(&name))
        .map(|j| j.location.clone())
    else {
        return Ok(StatusCode::NO_CONTENT.into_response());
    };
    remove_job(&plane, &name);
    let op = {
        let mut st = plane.lock();
        plane.new_op(&mut st, &sub, &location, true)
    };
    plane.persist();
    Ok(with_lro(
        StatusCode::ACCEPTED.into_response(),
        &plane,
        &origin,
        &op,
        true,
    ))
}

/// A job body's `properties` and configuration, checked: the template with its `resources` as a
/// GET shows them, its containers' total (sidecars included) held to the plan of the
/// environment it names.
fn job_properties(plane: &Plane, body: &Value) -> Result<(Value, JobConfig), ArmError> {
    let mut props = body
        .get("properties")
        .filter(|p| p.is_object())
        .cloned()
        .ok_or_else(|| {
            ArmError::bad_request("InvalidRequestContent", "'properties' is required")
        })?;
    let template = props.get_mut("template").ok_or_else(|| {
        ArmError::bad_request("InvalidRequestContent", "'properties.template' is required")
    })?;
    crate::resources::normalize_template(template)?;
    let spec = parse_template(&props["template"], props.get("configuration"))?;
    {
        let st = plane.lock();
        let plan =
            crate::resources::plan_for(|k| st.envs.get(k).map(|e| &e.properties), Some(&props));
        crate::resources::check_total(spec.resources(), plan)?;
    }
    let config = parse_config(&props, body.get("tags"))?;
    // The wire type the GET answers with (`Job::job_view`): a body that does not fit it is
    // refused here, naming the key, rather than answered without its properties later.
    crate::model::from_json::<wire::JobProperties>(&props, "properties")?;
    Ok((props, config))
}

/// Applies a `JobExecutionTemplate` override: containers are matched by name and merged
/// (JSON merge-patch), unmatched ones are added; `initContainers` replace the job's.
fn apply_override(template: &Value, over: &Value) -> Value {
    let mut t = template.clone();
    if let Some(list) = over.get("containers").and_then(Value::as_array) {
        let mut base: Vec<Value> = t
            .get("containers")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for c in list {
            let n = c.get("name").and_then(Value::as_str);
            match base
                .iter_mut()
                .find(|b| b.get("name").and_then(Value::as_str) == n && n.is_some())
            {
                Some(b) => {
                    // env lists merge by variable name so one override keeps the rest.
                    let mut c2 = c.clone();
                    if let (Some(over_env), Some(base_env)) = (
                        c.get("env").and_then(Value::as_array),
                        b.get("env").and_then(Value::as_array),
                    ) {
                        let mut merged: Vec<Value> = base_env.clone();
                        for e in over_env {
                            let en = e.get("name");
                            merged.retain(|x| x.get("name") != en);
                            merged.push(e.clone());
                        }
                        c2["env"] = Value::Array(merged);
                    }
                    merge_patch(b, &c2);
                }
                None => base.push(c.clone()),
            }
        }
        t["containers"] = Value::Array(base);
    }
    if let Some(ic) = over.get("initContainers") {
        t["initContainers"] = ic.clone();
    }
    t
}

pub async fn start_job(
    State(s): State<ApiState>,
    origin: Origin,
    Path((sub, rg, name)): Path<(String, String, String)>,
    body: Bytes,
) -> Result<Response, ArmError> {
    let over = if body.iter().all(u8::is_ascii_whitespace) {
        None
    } else {
        Some(parse_body(&body)?)
    };
    let plane = s.plane.clone();
    let (exec_name, exec_id, location) = {
        let st = plane.lock();
        let j = st
            .jobs
            .get(&key(&name))
            .ok_or_else(|| job_not_found(&name, &rg))?;
        let template = j.properties.get("template").cloned().unwrap_or(json!({}));
        let mut template = match &over {
            Some(o) => apply_override(&template, o),
            None => template,
        };
        crate::resources::normalize_template(&mut template)?;
        let spec = parse_template(&template, j.properties.get("configuration"))?;
        let plan = crate::resources::plan_for(
            |k| st.envs.get(k).map(|e| &e.properties),
            Some(&j.properties),
        );
        crate::resources::check_total(spec.resources(), plan)?;
        drop(st);
        let exec = start_execution(&plane, &name, template)?;
        let st = plane.lock();
        let j = st
            .jobs
            .get(&key(&name))
            .ok_or_else(|| job_not_found(&name, &rg))?;
        (
            exec.clone(),
            format!("{}/executions/{exec}", j.id()),
            j.location.clone(),
        )
    };
    let body = json!({"name": exec_name, "id": exec_id});
    let op = {
        let mut st = plane.lock();
        let op = plane.new_op(&mut st, &sub, &location, true);
        Plane::set_op_result(&mut st, &op, crate::plane::OpResult::Body(body.clone()));
        op
    };
    let resp = (StatusCode::ACCEPTED, axum::Json(body)).into_response();
    Ok(with_lro(resp, &plane, &origin, &op, true))
}

pub async fn list_executions(
    State(s): State<ApiState>,
    Path((_sub, rg, name)): Path<(String, String, String)>,
) -> Result<Response, ArmError> {
    let st = s.plane.lock();
    let j = st
        .jobs
        .get(&key(&name))
        .ok_or_else(|| job_not_found(&name, &rg))?;
    let page = wire::Page {
        value: j
            .executions
            .iter()
            .rev()
            .map(|e| j.execution_view(e))
            .collect(),
        next_link: None,
    };
    Ok(axum::Json(page).into_response())
}

fn exec_not_found(e: &str) -> ArmError {
    ArmError::new(
        StatusCode::NOT_FOUND,
        "JobExecutionNotFound",
        format!("Job execution '{e}' was not found."),
    )
}

/// The job `name` and its execution `exec`, or the ARM not-found error for whichever is missing.
fn find_execution<'a>(
    st: &'a crate::plane::State,
    rg: &str,
    name: &str,
    exec: &str,
) -> Result<(&'a Job, &'a Execution), ArmError> {
    let j = st
        .jobs
        .get(&key(name))
        .ok_or_else(|| job_not_found(name, rg))?;
    let e = j
        .executions
        .iter()
        .find(|e| e.name == exec)
        .ok_or_else(|| exec_not_found(exec))?;
    Ok((j, e))
}

pub async fn get_execution(
    State(s): State<ApiState>,
    Path((_sub, rg, name, exec)): Path<(String, String, String, String)>,
) -> Result<Response, ArmError> {
    let st = s.plane.lock();
    let (j, e) = find_execution(&st, &rg, &name, &exec)?;
    Ok(axum::Json(j.execution_view(e)).into_response())
}

/// `POST .../jobs/{job}/stop` (`az containerapp job stop` without an execution): stops every
/// running execution; 200 with them (`ContainerAppJobExecutions`), which the CLI prints.
pub async fn stop_all_executions(
    State(s): State<ApiState>,
    Path((_sub, rg, name)): Path<(String, String, String)>,
) -> Result<Response, ArmError> {
    let st = s.plane.lock();
    let j = st
        .jobs
        .get(&key(&name))
        .ok_or_else(|| job_not_found(&name, &rg))?;
    let mut value = Vec::new();
    for e in &j.executions {
        let running = e.state.lock().map(|x| x.end.is_none()).unwrap_or(false);
        if running {
            e.cancel.cancel();
            value.push(j.execution_view(e));
        }
    }
    Ok(axum::Json(wire::Page {
        value,
        next_link: None,
    })
    .into_response())
}

/// Removes job `name` (a job delete, or its resource group's): its scheduler stops and its
/// running executions are stopped. `false` when there is no such job.
pub(crate) fn remove_job(plane: &Arc<Plane>, name: &str) -> bool {
    let Some(job) = plane.lock().jobs.remove(&key(name)) else {
        return false;
    };
    job.scheduler_stop.cancel();
    for e in &job.executions {
        e.cancel.cancel();
    }
    true
}

pub async fn stop_execution(
    State(s): State<ApiState>,
    Path((_sub, rg, name, exec)): Path<(String, String, String, String)>,
) -> Result<Response, ArmError> {
    let st = s.plane.lock();
    let (_, e) = find_execution(&st, &rg, &name, &exec)?;
    e.cancel.cancel();
    Ok(StatusCode::OK.into_response())
}

/// Re-creates a job from the state file (see [`crate::persist`]).
pub fn restore_job(plane: &Arc<Plane>, j: &Value) {
    let props = j.get("properties").cloned().unwrap_or(json!({}));
    let Ok(config) = parse_config(&props, j.get("tags")) else {
        tracing::warn!("skipping unparsable job in state file");
        return;
    };
    let name = j
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let stop = CancellationToken::new();
    spawn_trigger(plane, name.clone(), &config.trigger, stop.clone());
    let get = |k: &str| j.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let mut st = plane.lock();
    st.jobs.insert(
        key(&name),
        Job {
            sub: get("sub"),
            rg: get("rg"),
            name,
            location: get("location"),
            tags: j.get("tags").cloned().unwrap_or(json!({})),
            properties: props,
            config,
            executions: Vec::new(),
            scheduler_stop: stop,
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn override_merges_env_by_name() {
        let t = json!({"containers":[{"name":"a","image":"probelab/subject:dev","env":[{"name":"X","value":"1"},{"name":"Y","value":"2"}]}]});
        let o = json!({"containers":[{"name":"a","env":[{"name":"Y","value":"3"}]}]});
        let r = apply_override(&t, &o);
        assert_eq!(r["containers"][0]["image"], "probelab/subject:dev");
        assert_eq!(
            r["containers"][0]["env"],
            json!([{"name":"X","value":"1"},{"name":"Y","value":"3"}])
        );
    }
}
