//! Container apps: PUT and PATCH (the body checked against the wire model, a new revision when
//! the template changes, the ingress bound), GET, DELETE (replicas stopped), and the admin view
//! of an app's ingress and the replicas it routes to.
use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::extract::{Path, State};
use axum::response::IntoResponse;
use bytes::Bytes;
use http::StatusCode;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::error::ArmError;
use crate::handler::{ApiState, Origin, parse_body, valid_name, with_lro};
use crate::listing;
use crate::model::{Knobs, from_json, ingress_spec, merge_patch, secrets_of, template_spec};
use crate::plane::{App, OpResult, OpStatus, Plane, Revision, key, random_suffix};

use super::ArmResult;

/// Admin (not ARM): an app's ingress address and the replica endpoints it routes to now, for
/// benchmarks and debugging.
pub(crate) async fn app_endpoints(State(s): State<ApiState>, Path(app): Path<String>) -> ArmResult {
    let st = s.plane.lock();
    let a = find_app(&st, &app, "*")?;
    let backends: Vec<Value> = a
        .routes
        .snapshot()
        .iter()
        .map(|b| json!({"addr": b.addr.to_string(), "revision": b.revision, "replica": b.replica}))
        .collect();
    Ok(axum::Json(json!({"ingress": a.fqdn(), "backends": backends})).into_response())
}

pub(super) fn app_not_found(name: &str, rg: &str) -> ArmError {
    ArmError::not_found("Microsoft.App/containerApps", name, rg)
}

/// App `name` (any case) of `st`, or ARM's 404 naming it in resource group `rg`.
pub(super) fn find_app<'s>(
    st: &'s crate::plane::State,
    name: &str,
    rg: &str,
) -> Result<&'s App, ArmError> {
    st.apps
        .get(&key(name))
        .ok_or_else(|| app_not_found(name, rg))
}

pub(crate) async fn get_app(
    State(s): State<ApiState>,
    Path((_sub, rg, name)): Path<(String, String, String)>,
) -> ArmResult {
    let st = s.plane.lock();
    let app = find_app(&st, &name, &rg)?;
    Ok(axum::Json(app.app_view(listing::app_provisioning(&st, app))).into_response())
}

pub(crate) async fn put_app(
    State(s): State<ApiState>,
    origin: Origin,
    Path((sub, rg, name)): Path<(String, String, String)>,
    body: Bytes,
) -> ArmResult {
    let body = parse_body(&body)?;
    upsert_app(&s, &origin, &sub, &rg, &name, body, false).await
}

pub(crate) async fn patch_app(
    State(s): State<ApiState>,
    origin: Origin,
    Path((sub, rg, name)): Path<(String, String, String)>,
    body: Bytes,
) -> ArmResult {
    let patch = parse_body(&body)?;
    let mut current = {
        let st = s.plane.lock();
        let app = find_app(&st, &name, &rg)?;
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
    upsert_app(&s, &origin, &sub, &rg, &name, current, true).await
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
    origin: &Origin,
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
    let listener = bind_ingress(parsed.ingress.is_some())?;
    let plane = &s.plane;
    let mut guard = plane.lock();
    let st = &mut *guard;
    // The template's total (sidecars included) against the environment's plan.
    let plan = crate::resources::plan_for(
        |k| st.envs.get(k).map(|e| &e.properties),
        Some(&parsed.props),
    );
    crate::resources::check_total(parsed.spec.resources(), plan)?;
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
    let app_id = app.id();
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
    Plane::set_op_result(st, &op, OpResult::Resource(app_id));
    let Some(app) = st.apps.get_mut(&k) else {
        return Err(app_not_found(name, rg));
    };
    if new_revision {
        app.pending_ops.push(op.clone());
    }
    let notify = app.notify.clone();
    let stop = app.controller_stop.clone();
    let out = app.app_view(if new_revision {
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
        origin,
        &op,
        location_header,
    ))
}

/// A listener for an app's ingress on a free loopback port, when `wanted`.
fn bind_ingress(wanted: bool) -> Result<Option<std::net::TcpListener>, ArmError> {
    if !wanted {
        return Ok(None);
    }
    std::net::TcpListener::bind(("127.0.0.1", 0))
        .map(Some)
        .map_err(|e| {
            ArmError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "InternalServerError",
                format!("cannot bind ingress: {e}"),
            )
        })
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

/// Whether two templates are one to the service: equal as the wire type (so a client that sends
/// back what a GET gave it, where an empty list is left out, changes nothing); equal as sent
/// when either does not read as the wire type.
fn same_template(a: &Value, b: &Value) -> bool {
    let typed = |v: &Value| serde_json::from_value::<appmodel::Template>(v.clone()).ok();
    match (typed(a), typed(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// Adds a revision to `app` when `template` differs from its latest one's (named by
/// `revisionSuffix` or a random suffix); `true` when it did. A suffix already taken is a 400.
fn add_revision_if_changed(
    app: &mut App,
    template: Value,
    spec: crate::model::TemplateSpec,
) -> Result<bool, ArmError> {
    if app
        .latest()
        .is_some_and(|r| same_template(&r.template, &template))
    {
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
    let now = logline::Timestamp::now();
    app.revisions.push(Revision {
        name: rev_name,
        created: now,
        template,
        target: spec.replica_count(),
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
/// and validates it (`null` members read as absent): `properties` and `properties.template` are
/// required, the template and the ingress are checked as the service checks them, the
/// `localplane.*` tags are read as knobs.
fn parse_app_body(mut body: Value) -> Result<AppBody, ArmError> {
    crate::model::strip_nulls(&mut body);
    if let Some(props) = body.get_mut("properties") {
        crate::traffic::normalize_raw_weights(props)?;
        if let Some(t) = props.get_mut("template") {
            crate::resources::normalize_template(t)?;
        }
    }
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

pub(crate) async fn delete_app(
    State(s): State<ApiState>,
    origin: Origin,
    Path((sub, _rg, name)): Path<(String, String, String)>,
) -> ArmResult {
    let plane = s.plane.clone();
    let Some((location, stopped)) = remove_app(&plane, &name) else {
        return Ok(StatusCode::NO_CONTENT.into_response());
    };
    let op = {
        let mut st = plane.lock();
        plane.new_op(&mut st, &sub, &location, false)
    };
    let p2 = plane.clone();
    let op2 = op.clone();
    plane.ctx.tracker.spawn(async move {
        stopped.await;
        let mut st = p2.lock();
        Plane::finish_op(&mut st, &op2, OpStatus::Succeeded, None);
    });
    plane.persist();
    Ok(with_lro(
        StatusCode::ACCEPTED.into_response(),
        &plane,
        &origin,
        &op,
        true,
    ))
}

/// Removes app `name` (an app delete, or its resource group's): its controller and ingress
/// stop, every replica leaves routing and gets SIGTERM with its grace period. Returns the
/// app's location and a future that ends when its replicas have stopped; `None` when there
/// is no such app.
pub(crate) fn remove_app(
    plane: &Arc<Plane>,
    name: &str,
) -> Option<(
    String,
    impl std::future::Future<Output = ()> + Send + 'static,
)> {
    let app = plane.lock().apps.remove(&key(name))?;
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
    let stopped = async move {
        for r in replicas {
            let mut done = r.done.subscribe();
            let _ =
                tokio::time::timeout(std::time::Duration::from_secs(660), done.wait_for(|d| *d))
                    .await;
        }
    };
    Some((app.location, stopped))
}

#[cfg(test)]
mod tests {
    use super::{parse_app_body, same_template};
    use serde_json::{Value, json};

    /// The az CLI sends back the template a GET gave it, where an empty list is left out: the
    /// same revision, not a new one; a changed image is a new one.
    #[test]
    fn a_template_sent_back_as_a_get_gave_it_is_the_same_revision() {
        let stored = json!({"revisionSuffix": "v1",
            "containers": [{"name": "app", "image": "probelab/subject:dev", "env": [], "probes": []}]});
        let sent_back = json!({"revisionSuffix": "v1",
            "containers": [{"name": "app", "image": "probelab/subject:dev"}]});
        assert!(same_template(&stored, &sent_back));
        let changed = json!({"revisionSuffix": "v1",
            "containers": [{"name": "app", "image": "probelab/subject:v2"}]});
        assert!(!same_template(&stored, &changed));
        assert!(!same_template(
            &json!({"containers": "?"}),
            &json!({"containers": []})
        ));
    }

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
        // As sent, but with `resources` as a GET shows them: the example's container has none,
        // so Azure's defaults.
        let mut sent = body["properties"].clone();
        sent["template"]["containers"][0]["resources"] =
            json!({"cpu": 0.5, "memory": "1Gi", "ephemeralStorage": "2Gi"});
        assert_eq!(parsed.props, sent, "stored as sent, unknown fields and all");
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
