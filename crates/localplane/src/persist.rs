//! State persistence: resource definitions are written to `<state_dir>/state.json` after every
//! change (temp file + rename) and read back at start, so a restarted localplane rebuilds the
//! same apps (latest revision active, same ingress port when it is free) and jobs.

use std::sync::Arc;

use logline::Timestamp;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::Error;
use crate::model::{Knobs, parse_ingress, parse_template};
use crate::plane::{App, EnvRes, GroupRes, Plane, Revision, key};

pub const STATE_FILE: &str = "state.json";

impl Plane {
    /// Writes the resource definitions to the state dir (best effort; failures are logged).
    pub fn persist(&self) {
        let doc = {
            let st = self.lock();
            let groups: Vec<Value> = st
                .groups
                .values()
                .map(|g| json!({"sub": g.sub, "name": g.name, "location": g.location, "tags": g.tags}))
                .collect();
            let envs: Vec<Value> = st
                .envs
                .values()
                .map(|e| json!({"sub": e.sub, "rg": e.rg, "name": e.name, "location": e.location, "tags": e.tags, "properties": e.properties}))
                .collect();
            let apps: Vec<Value> = st
                .apps
                .values()
                .map(|a| {
                    json!({
                        "sub": a.sub, "rg": a.rg, "name": a.name, "location": a.location, "tags": a.tags,
                        "properties": a.properties, "ingress_port": a.ingress_port,
                        "revisions": a.revisions.iter().map(|r| json!({"name": r.name, "created": r.created.to_rfc3339_ms(), "template": r.template})).collect::<Vec<_>>(),
                    })
                })
                .collect();
            let jobs: Vec<Value> = st
                .jobs
                .values()
                .map(|j| json!({"sub": j.sub, "rg": j.rg, "name": j.name, "location": j.location, "tags": j.tags, "properties": j.properties}))
                .collect();
            self.set_peers(st.apps.values().map(|a| a.name.clone()).collect());
            json!({"version": 1, "groups": groups, "envs": envs, "apps": apps, "jobs": jobs})
        };
        let path = self.ctx.state_dir.join(STATE_FILE);
        let tmp = self.ctx.state_dir.join(format!("{STATE_FILE}.tmp"));
        let write = || -> std::io::Result<()> {
            std::fs::write(&tmp, serde_json::to_vec_pretty(&doc).unwrap_or_default())?;
            std::fs::rename(&tmp, &path)
        };
        if let Err(e) = write() {
            tracing::warn!(path = %path.display(), error = %e, "cannot persist state");
        }
    }
}

fn s(v: &Value, k: &str) -> String {
    v.get(k).and_then(Value::as_str).unwrap_or("").to_string()
}

/// Rebuilds the plane from `<state_dir>/state.json` if it exists.
pub fn restore(plane: &Arc<Plane>) -> Result<(), Error> {
    let path = plane.ctx.state_dir.join(STATE_FILE);
    let text = match std::fs::read(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(Error::Io {
                path,
                error: source,
            });
        }
    };
    let doc: Value = serde_json::from_slice(&text).map_err(|source| Error::State {
        path: path.clone(),
        error: source,
    })?;
    let empty = Vec::new();
    let mut st = plane.lock();
    for g in doc
        .get("groups")
        .and_then(Value::as_array)
        .unwrap_or(&empty)
    {
        st.groups.insert(
            key(&s(g, "name")),
            GroupRes {
                sub: s(g, "sub"),
                name: s(g, "name"),
                location: s(g, "location"),
                tags: g.get("tags").cloned().unwrap_or(json!({})),
            },
        );
    }
    for e in doc.get("envs").and_then(Value::as_array).unwrap_or(&empty) {
        st.envs.insert(
            key(&s(e, "name")),
            EnvRes {
                sub: s(e, "sub"),
                rg: s(e, "rg"),
                name: s(e, "name"),
                location: s(e, "location"),
                tags: e.get("tags").cloned().unwrap_or(json!({})),
                properties: e.get("properties").cloned().unwrap_or(json!({})),
            },
        );
    }
    let mut controllers = Vec::new();
    for a in doc.get("apps").and_then(Value::as_array).unwrap_or(&empty) {
        let Some(app) = restore_app(plane, a)? else {
            continue;
        };
        controllers.push((
            app.name.clone(),
            app.notify.clone(),
            app.controller_stop.clone(),
        ));
        st.apps.insert(key(&app.name), app);
    }
    let jobs: Vec<Value> = doc
        .get("jobs")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    drop(st);
    for (name, notify, stop) in controllers {
        plane.spawn_controller(name, notify, stop);
    }
    for j in jobs {
        crate::jobs::restore_job(plane, &j);
    }
    Ok(())
}

/// The app a state file entry describes, its ingress started (on the port it had when that is
/// free); `None` (logged) when its configuration no longer parses.
fn restore_app(plane: &Arc<Plane>, a: &Value) -> Result<Option<App>, Error> {
    let props = a.get("properties").cloned().unwrap_or(json!({}));
    let tags = a.get("tags").cloned().unwrap_or(json!({}));
    let config = props.get("configuration");
    let (Ok(ingress), Ok(knobs)) = (parse_ingress(config), Knobs::from_tags(Some(&tags))) else {
        tracing::warn!(app = %s(a, "name"), "skipping unparsable app in state file");
        return Ok(None);
    };
    let revisions = restore_revisions(a, config);
    let typed: Option<appmodel::Configuration> =
        config.and_then(|c| serde_json::from_value(c.clone()).ok());
    let multiple = crate::traffic::is_multiple(typed.as_ref());
    // Rules that no longer resolve (a revision lost with its template) fall back to the default.
    let traffic_rules = crate::traffic::rules(typed.as_ref(), |n| {
        revisions.iter().any(|r| r.name.eq_ignore_ascii_case(n))
    })
    .unwrap_or_default();
    let mut app = App {
        sub: s(a, "sub"),
        rg: s(a, "rg"),
        name: s(a, "name"),
        location: s(a, "location"),
        tags,
        properties: props,
        knobs,
        ingress,
        ingress_port: None,
        ingress_stop: CancellationToken::new(),
        routes: Default::default(),
        revisions,
        traffic_rev: None,
        multiple,
        traffic_rules,
        notify: Default::default(),
        pending_ops: Vec::new(),
        controller_stop: CancellationToken::new(),
    };
    if app.ingress.is_some() {
        let want = a
            .get("ingress_port")
            .and_then(Value::as_u64)
            .and_then(|p| u16::try_from(p).ok())
            .unwrap_or(0);
        let listener = std::net::TcpListener::bind(("127.0.0.1", want))
            .or_else(|_| std::net::TcpListener::bind(("127.0.0.1", 0)))
            .map_err(|source| Error::Bind {
                addr: std::net::SocketAddr::from(([127, 0, 0, 1], want)),
                error: source,
            })?;
        crate::api::start_ingress(plane, &mut app, listener)
            .map_err(|e| Error::Runtime(e.message))?;
    }
    Ok(Some(app))
}

/// The revisions of app entry `a` whose template still parses: the last one active (and not yet
/// provisioned, so the controller switches traffic to it again), the others inactive.
fn restore_revisions(a: &Value, config: Option<&Value>) -> Vec<Revision> {
    let empty = Vec::new();
    let revs = a
        .get("revisions")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    let mut revisions = Vec::new();
    for (i, r) in revs.iter().enumerate() {
        let template = r.get("template").cloned().unwrap_or(json!({}));
        let Ok(spec) = parse_template(&template, config) else {
            continue;
        };
        let created = r
            .get("created")
            .and_then(Value::as_str)
            .and_then(|t| t.parse::<Timestamp>().ok())
            .unwrap_or_else(Timestamp::now);
        revisions.push(Revision {
            name: s(r, "name"),
            created,
            template,
            target: spec.replica_count(),
            spec,
            active: i + 1 == revs.len(),
            traffic: 0,
            provisioned: i + 1 != revs.len(),
            replicas: Vec::new(),
            last_active: created,
        });
    }
    revisions
}
