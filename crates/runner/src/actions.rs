//! Performing a step's action once, and recording what happened.
//!
//! - `rollout`: `ROLLOUT_GENERATION=<n>` on the app's container through ARM (a new revision;
//!   `n` counts per app over the whole run, so no two rollouts send the same template);
//! - `restart`: revision restart of the revision that has the traffic;
//! - `dependency`: `POST <app>/admin/dependency` with the given fields, restored (healthy, no
//!   delay, no failures) after `restore_after`;
//! - `simulate`: `POST <app>/simulate/<mode>`, `POST /simulate/reset` after `restore_after`;
//! - `saturate`: one blocking `GET <app><path>`; its outcome is the point (worker saturation
//!   expects it to be lost);
//! - `set-env`: the given env on the app's container (a new revision).
//! - `revision`: a new revision named `<app>--<suffix>` (env on its container) and, in the same
//!   ARM PATCH, the traffic rules when given (multiple revision mode);
//! - `traffic`: new `ingress.traffic` weights in one ARM PATCH (a split, a blue/green switch);
//! - `deactivate`: `POST .../revisions/<app>--<suffix>/deactivate`;
//! - `maintenance`: `POST /localplane/apps/<app>/maintenance` (localplane's admin API), waited
//!   for as a long-running operation;
//! - `enqueue`: `POST <app>/queue?items=N`, the ids the queue answers kept in the record;
//! - `job-start`: one execution of a lab job (`POST .../jobs/<job>/start`), its name kept;
//! - `job-stop`: every execution of the job that ARM lists as `Running` or `Processing` stopped
//!   (`POST .../executions/<name>/stop` each), their names kept.
//!
//! HTTP actions reach the app's ingress from the host (its `fqdn`) with the run's
//! `X-Simulate-Token`. A failure is recorded (`outcome: failed`), never fatal.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::Utc;
use lab::Action;
use logline::config::parse_duration;
use reqwest::Method;
use serde_json::{Map, Value, json};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::RunError;
use crate::pack::{ActionRecord, iso};
use crate::schedule::scaled;
use crate::target::{Target, TargetKind};

/// The header the subject checks on `/simulate/*` and `/admin/*`.
pub const TOKEN_HEADER: &str = "X-Simulate-Token";
/// The longest a blocking (saturate) request is waited for.
pub const SATURATE_LIMIT: Duration = Duration::from_secs(900);
/// Per-request timeout of the short admin calls.
pub const ADMIN_TIMEOUT: Duration = Duration::from_secs(15);

/// The event an action record belongs to: its number in the run and its record kinds, both
/// from the lab's [`Action`] (`Action::kind`, `Action::restore_kind`), so a record's `kind` is
/// always the lab file's word for the action.
#[derive(Clone, Copy)]
struct Event {
    n: u32,
    kind: &'static str,
    restore_kind: Option<&'static str>,
}

impl Event {
    /// The same event, recorded as the action's restore (its own kind when it has none).
    fn restore(self) -> Event {
        Event {
            kind: self.restore_kind.unwrap_or(self.kind),
            ..self
        }
    }
}

/// Performs actions against one target.
pub struct Actor {
    pub target: Arc<Target>,
    http: reqwest::Client,
    token: Option<String>,
    generations: Mutex<HashMap<String, u32>>,
    scale: f64,
}

impl Actor {
    pub fn new(target: Arc<Target>, token: Option<String>, scale: f64) -> Result<Self, RunError> {
        let http = arm::tls::client_builder()
            .pool_max_idle_per_host(0)
            .build()
            .map_err(|e| RunError::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(Actor {
            target,
            http,
            token,
            generations: Mutex::new(HashMap::new()),
            scale,
        })
    }

    fn next_generation(&self, app: &str) -> u32 {
        let mut g = self
            .generations
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let n = g.entry(app.to_owned()).or_insert(0);
        *n += 1;
        *n
    }

    /// Performs `action` as event `event`; returns its record(s) (the action, and its restore).
    pub async fn perform(
        self: Arc<Self>,
        action: Action,
        event: u32,
        cancel: CancellationToken,
    ) -> Vec<ActionRecord> {
        let app = action.target().to_owned();
        let ev = Event {
            n: event,
            kind: action.kind(),
            restore_kind: action.restore_kind(),
        };
        match action {
            Action::Rollout { .. } => vec![self.rollout(ev, &app).await],
            Action::SetEnv { env, .. } => vec![self.set_env(ev, &app, env).await],
            Action::Restart { .. } => vec![self.restart_action(ev, &app).await],
            Action::Dependency {
                healthy,
                delay_ms,
                fail_rate,
                restore_after,
                ..
            } => {
                let body = dependency_body(healthy, delay_ms, fail_rate);
                self.dependency(ev, &app, body, restore_after.as_deref(), &cancel)
                    .await
            }
            Action::Simulate {
                mode,
                restore_after,
                ..
            } => {
                self.simulate(ev, &app, &mode, restore_after.as_deref(), &cancel)
                    .await
            }
            Action::Saturate { path, .. } => vec![self.saturate(ev, &app, &path, &cancel).await],
            Action::Revision {
                suffix,
                env,
                traffic,
                ..
            } => vec![self.revision(ev, &app, &suffix, env, &traffic).await],
            Action::Traffic { traffic, .. } => vec![self.traffic(ev, &app, &traffic).await],
            Action::Deactivate { revision, .. } => {
                vec![self.deactivate(ev, &app, &revision).await]
            }
            Action::Maintenance { .. } => vec![self.maintenance(ev, &app).await],
            Action::Enqueue { items, .. } => vec![self.enqueue(ev, &app, items).await],
            Action::JobStart { job } => vec![self.job_start(ev, &job).await],
            Action::JobStop { job } => vec![self.job_stop(ev, &job).await],
        }
    }

    /// `job-start`: one execution of `job`, as `az containerapp job start` starts it.
    async fn job_start(&self, ev: Event, job: &str) -> ActionRecord {
        let t = &self.target;
        let mut started = Vec::new();
        let mut rec = self
            .timed(ev, job, async {
                let e = t.arm.start_job(&t.scope, job, None).await?;
                started.push(e.name.clone());
                Ok::<_, ActionFailure>((None, format!("execution {} started", e.name)))
            })
            .await;
        rec.executions = started;
        rec.as_job_action(job)
    }

    /// `job-stop`: every running execution of `job` stopped, one stop call each.
    async fn job_stop(&self, ev: Event, job: &str) -> ActionRecord {
        let t = &self.target;
        let mut stopped = Vec::new();
        let mut rec = self
            .timed(ev, job, async {
                let running: Vec<String> = t
                    .arm
                    .list_executions(&t.scope, job)
                    .await?
                    .into_iter()
                    .filter(|e| {
                        matches!(
                            e.properties.status.as_ref().map(|s| s.as_str()),
                            Some("Running" | "Processing")
                        )
                    })
                    .map(|e| e.name)
                    .collect();
                if running.is_empty() {
                    return Err(ActionFailure::from(format!(
                        "job {job} has no running execution to stop"
                    )));
                }
                for name in &running {
                    t.arm.stop_execution(&t.scope, job, name).await?;
                    stopped.push(name.clone());
                }
                Ok((None, format!("stopped {}", running.join(", "))))
            })
            .await;
        rec.executions = stopped;
        rec.as_job_action(job)
    }

    /// `rollout`: the app's next `ROLLOUT_GENERATION` on its container (a new revision).
    async fn rollout(&self, ev: Event, app: &str) -> ActionRecord {
        let generation = self.next_generation(app);
        let env = [("ROLLOUT_GENERATION".to_owned(), generation.to_string())];
        self.timed(ev, app, async {
            self.patch_env(app, &env)
                .await
                .map(|rev| (None, format!("ROLLOUT_GENERATION={generation}: {rev}")))
        })
        .await
    }

    /// `set-env`: the given env on the app's container (a new revision).
    async fn set_env(&self, ev: Event, app: &str, env: BTreeMap<String, String>) -> ActionRecord {
        let pairs: Vec<(String, String)> = env.into_iter().collect();
        self.timed(ev, app, async {
            let names: Vec<&str> = pairs.iter().map(|(k, _)| k.as_str()).collect();
            self.patch_env(app, &pairs)
                .await
                .map(|rev| (None, format!("{}: {rev}", names.join(","))))
        })
        .await
    }

    /// `revision`: a new revision `<app>--<suffix>` with `env` on its container, and `traffic`
    /// (when given) in the same PATCH, so the new revision never holds weight it was not given.
    async fn revision(
        &self,
        ev: Event,
        app: &str,
        suffix: &str,
        env: BTreeMap<String, String>,
        traffic: &[lab::schema::TrafficEntry],
    ) -> ActionRecord {
        let t = &self.target;
        let weights = lab::arm_body::traffic_weights(app, traffic);
        let split = lab::describe::traffic_text(app, traffic);
        self.timed(ev, app, async {
            let edit = |template: &mut arm::models::Template| {
                set_app_container_env(template, app, env.iter())?;
                template.revision_suffix = Some(suffix.to_owned());
                Ok(())
            };
            let after = if weights.is_empty() {
                t.arm.update_app_template(&t.scope, app, edit).await?
            } else {
                t.arm
                    .update_app_template_and_traffic(&t.scope, app, edit, weights)
                    .await?
            };
            let rev = after
                .properties
                .latest_revision_name
                .unwrap_or_else(|| "?".into());
            let detail = if split.is_empty() {
                format!("new revision {rev}")
            } else {
                format!("new revision {rev}; traffic {split}")
            };
            Ok::<_, ActionFailure>((None, detail))
        })
        .await
    }

    /// `traffic`: the app's `ingress.traffic` replaced in one PATCH.
    async fn traffic(
        &self,
        ev: Event,
        app: &str,
        traffic: &[lab::schema::TrafficEntry],
    ) -> ActionRecord {
        let t = &self.target;
        let weights = lab::arm_body::traffic_weights(app, traffic);
        let split = lab::describe::traffic_text(app, traffic);
        self.timed(ev, app, async {
            t.arm.set_app_traffic(&t.scope, app, weights).await?;
            Ok::<_, ActionFailure>((None, format!("traffic {split}")))
        })
        .await
    }

    /// `deactivate`: the revision `<app>--<suffix>` deactivated.
    async fn deactivate(&self, ev: Event, app: &str, suffix: &str) -> ActionRecord {
        let t = &self.target;
        let rev = lab::arm_body::revision_name(app, suffix);
        self.timed(ev, app, async {
            t.arm.deactivate_revision(&t.scope, app, &rev).await?;
            Ok::<_, ActionFailure>((None, format!("deactivated {rev}")))
        })
        .await
    }

    /// `maintenance`: localplane's platform maintenance of the app (its admin API, a
    /// long-running operation that ends when the last replacement is ready); the detail names
    /// the form and the replicas moved.
    async fn maintenance(&self, ev: Event, app: &str) -> ActionRecord {
        let t = &self.target;
        self.timed(ev, app, async {
            if t.kind != TargetKind::Local {
                return Err(ActionFailure::from(
                    "platform maintenance is localplane's admin action: Container Apps starts \
                     its maintenance itself and offers no API for it"
                        .to_owned(),
                ));
            }
            let path = format!("/localplane/apps/{app}/maintenance");
            let url = t
                .url(&path)
                .map_err(|e| ActionFailure::from(e.to_string()))?;
            let accepted = t
                .arm
                .send_and_wait("maintenance", Method::POST, url, None)
                .await?;
            let plan: Value = serde_json::from_slice(&accepted.body).unwrap_or(Value::Null);
            Ok((None, maintenance_detail(&plan)))
        })
        .await
    }

    /// `enqueue`: `POST /queue?items=N` on the app; the record keeps the ids the queue answered
    /// (sent once: a POST that timed out may have added items, so it is not repeated).
    async fn enqueue(&self, ev: Event, app: &str, items: u64) -> ActionRecord {
        let mut ids = Vec::new();
        let mut rec = self
            .timed(ev, app, async {
                let path = format!("/queue?items={items}");
                let (status, body) = self
                    .request(Method::POST, app, &path, None, ADMIN_TIMEOUT)
                    .await?;
                if !(200..300).contains(&status) {
                    return Ok((
                        Some(status),
                        format!("POST {path}: {}", truncate(&body, 200)),
                    ));
                }
                let answer: Value = serde_json::from_str(&body).map_err(|e| {
                    ActionFailure::from(format!("POST {path}: the answer is not JSON: {e}"))
                })?;
                ids = answer["items"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|x| x.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default();
                if ids.len() as u64 != items {
                    return Err(ActionFailure::from(format!(
                        "POST {path}: the queue answered {} item id(s), not {items}: {}",
                        ids.len(),
                        truncate(&body, 200)
                    )));
                }
                Ok((
                    Some(status),
                    format!(
                        "{items} item(s) {}..{}; queue length {}",
                        ids.first().map_or("", String::as_str),
                        ids.last().map_or("", String::as_str),
                        answer["length"]
                    ),
                ))
            })
            .await;
        rec.items = ids;
        rec
    }

    /// `restart`: a revision restart of the revision with the traffic.
    async fn restart_action(&self, ev: Event, app: &str) -> ActionRecord {
        self.timed(ev, app, async {
            self.restart(app)
                .await
                .map(|rev| (None, format!("restarted {rev}")))
        })
        .await
    }

    /// `dependency`: `body` posted to the app's `/admin/dependency`, and after
    /// `restore_after` (when given) the healthy dependency posted back.
    async fn dependency(
        &self,
        ev: Event,
        app: &str,
        body: Value,
        restore_after: Option<&str>,
        cancel: &CancellationToken,
    ) -> Vec<ActionRecord> {
        let mut out = vec![
            self.timed(ev, app, async {
                self.post(app, "/admin/dependency", Some(&body), ADMIN_TIMEOUT)
                    .await
                    .map(|(s, _)| (Some(s), body.to_string()))
            })
            .await,
        ];
        if let Some(after) = restore_after {
            self.wait_restore(after, cancel).await;
            let restore = json!({"healthy": true, "delay_ms": 0, "fail_rate": 0.0});
            out.push(
                self.timed(ev.restore(), app, async {
                    self.post(app, "/admin/dependency", Some(&restore), ADMIN_TIMEOUT)
                        .await
                        .map(|(s, _)| (Some(s), restore.to_string()))
                })
                .await,
            );
        }
        out
    }

    /// `simulate`: `POST /simulate/<mode>` to the app, and after `restore_after` (when given)
    /// `POST /simulate/reset`.
    async fn simulate(
        &self,
        ev: Event,
        app: &str,
        mode: &str,
        restore_after: Option<&str>,
        cancel: &CancellationToken,
    ) -> Vec<ActionRecord> {
        let path = format!("/simulate/{mode}");
        let mut out = vec![
            self.timed(ev, app, async {
                self.post(app, &path, None, ADMIN_TIMEOUT)
                    .await
                    .map(|(s, _)| (Some(s), path.clone()))
            })
            .await,
        ];
        if let Some(after) = restore_after {
            self.wait_restore(after, cancel).await;
            out.push(
                self.timed(ev.restore(), app, async {
                    self.post(app, "/simulate/reset", None, ADMIN_TIMEOUT)
                        .await
                        .map(|(s, _)| (Some(s), "/simulate/reset".to_owned()))
                })
                .await,
            );
        }
        out
    }

    /// `saturate`: one blocking `GET <path>` to the app, waited for up to [`SATURATE_LIMIT`].
    async fn saturate(
        &self,
        ev: Event,
        app: &str,
        path: &str,
        cancel: &CancellationToken,
    ) -> ActionRecord {
        self.timed(ev, app, async {
            tokio::select! {
                r = self.request(Method::GET, app, path, None, SATURATE_LIMIT) => {
                    r.map(|(s, body)| (Some(s), format!("GET {path}: {}", truncate(&body, 200))))
                }
                _ = cancel.cancelled() => Err(ActionFailure::from(format!("GET {path}: interrupted"))),
            }
        })
        .await
    }

    async fn wait_restore(&self, after: &str, cancel: &CancellationToken) {
        let d = scaled(parse_duration(after).unwrap_or_default(), self.scale);
        tokio::select! {
            _ = tokio::time::sleep(d) => {}
            _ = cancel.cancelled() => {}
        }
    }

    /// Runs `f`, timing it; `Ok((status, detail))` is `ok` when the status (if any) is 2xx/3xx;
    /// a failure keeps its HTTP status and ARM error code.
    async fn timed<F, E>(&self, ev: Event, app: &str, f: F) -> ActionRecord
    where
        F: std::future::Future<Output = Result<(Option<u16>, String), E>>,
        E: Into<ActionFailure>,
    {
        let ts = iso(Utc::now());
        let t0 = Instant::now();
        let r = f.await;
        let dur_ms = u64::try_from(t0.elapsed().as_millis()).unwrap_or(u64::MAX);
        let (outcome, status, code, detail) = match r.map_err(Into::into) {
            Ok((Some(s), d)) if !(200..400).contains(&s) => ("failed", Some(s), None, d),
            Ok((s, d)) => ("ok", s, None, d),
            Err(f) => ("failed", f.status, f.code, f.detail),
        };
        ActionRecord {
            event: ev.n,
            kind: ev.kind.to_owned(),
            app: app.to_owned(),
            ts,
            outcome: outcome.to_owned(),
            status,
            code,
            dur_ms,
            detail,
            perturbation_id: None,
            items: Vec::new(),
            job: None,
            executions: Vec::new(),
        }
    }

    /// Sets env vars on the app's container (named like the app, else the first) with a fresh
    /// revision suffix, in one PATCH through arm's typed GET-modify-PATCH; waits for the
    /// operation; returns the new latest revision.
    pub async fn patch_env(
        &self,
        app: &str,
        env: &[(String, String)],
    ) -> Result<String, ActionFailure> {
        let t = &self.target;
        let after = t
            .arm
            .update_app_template(&t.scope, app, |template| {
                set_app_container_env(template, app, env.iter().map(|(k, v)| (k, v)))?;
                template.revision_suffix = Some(arm::fresh_revision_suffix());
                Ok(())
            })
            .await?;
        Ok(after
            .properties
            .latest_revision_name
            .unwrap_or_else(|| "?".into()))
    }

    /// Restarts the revision with the traffic (else the latest active one).
    pub async fn restart(&self, app: &str) -> Result<String, ActionFailure> {
        let t = &self.target;
        let revs = t.arm.list_revisions(&t.scope, app).await?;
        let rev = revs
            .iter()
            .filter(|r| r.properties.active)
            .max_by_key(|r| {
                (
                    r.properties.traffic_weight,
                    r.properties.created_time.clone(),
                )
            })
            .ok_or_else(|| ActionFailure::from(format!("app {app} has no active revision")))?;
        t.arm.restart_revision(&t.scope, app, &rev.name).await?;
        Ok(rev.name.clone())
    }

    async fn post(
        &self,
        app: &str,
        path: &str,
        body: Option<&Value>,
        timeout: Duration,
    ) -> Result<(u16, String), ActionFailure> {
        self.request(Method::POST, app, path, body, timeout).await
    }

    async fn request(
        &self,
        method: Method,
        app: &str,
        path: &str,
        body: Option<&Value>,
        timeout: Duration,
    ) -> Result<(u16, String), ActionFailure> {
        let base = self
            .target
            .app_host_url(app)
            .await
            .map_err(|e| ActionFailure::from(e.to_string()))?;
        let mut req = self
            .http
            .request(method, format!("{base}{path}"))
            .timeout(timeout);
        if let Some(t) = &self.token {
            req = req.header(TOKEN_HEADER, t);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        let resp = req
            .send()
            .await
            .map_err(|e| ActionFailure::from(error_chain(&e)))?;
        let status = resp.status().as_u16();
        let text = resp
            .text()
            .await
            .map_err(|e| ActionFailure::from(error_chain(&e)))?;
        Ok((status, text))
    }
}

/// Why an action failed, as `runs.json` keeps it: the HTTP status and the ARM error code when
/// ARM answered (`ArmError`'s own, not its text), and the text.
#[derive(Clone, Debug, PartialEq)]
pub struct ActionFailure {
    pub status: Option<u16>,
    pub code: Option<String>,
    pub detail: String,
}

impl From<arm::ArmError> for ActionFailure {
    fn from(e: arm::ArmError) -> Self {
        ActionFailure {
            status: e.status(),
            code: Some(e.code().to_owned()),
            detail: e.to_string(),
        }
    }
}

impl From<String> for ActionFailure {
    fn from(detail: String) -> Self {
        ActionFailure {
            status: None,
            code: None,
            detail,
        }
    }
}

/// A maintenance plan (localplane's 202 body) in words: `stopFirst: subject--a1 moved
/// subject--a1-x, subject--a1-y one at a time`.
fn maintenance_detail(plan: &Value) -> String {
    let form = plan["form"].as_str().unwrap_or("?");
    let revisions: Vec<String> = plan["revisions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            let reps: Vec<&str> = r["replicas"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            format!(
                "{} moved {}",
                r["name"].as_str().unwrap_or("?"),
                if reps.is_empty() {
                    "no replica".to_owned()
                } else {
                    reps.join(", ")
                }
            )
        })
        .collect();
    if revisions.is_empty() {
        format!("{form}: no active revision")
    } else {
        format!("{form}: {} one at a time", revisions.join("; "))
    }
}

/// The `/admin/dependency` body of a `dependency` action: the fields the lab sets, only those.
fn dependency_body(healthy: Option<bool>, delay_ms: Option<u64>, fail_rate: Option<f64>) -> Value {
    let mut body = Map::new();
    if let Some(h) = healthy {
        body.insert("healthy".into(), json!(h));
    }
    if let Some(d) = delay_ms {
        body.insert("delay_ms".into(), json!(d));
    }
    if let Some(f) = fail_rate {
        body.insert("fail_rate".into(), json!(f));
    }
    Value::Object(body)
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(x) = src {
        s.push_str(": ");
        s.push_str(&x.to_string());
        src = x.source();
    }
    s
}

fn truncate(s: &str, n: usize) -> String {
    let t: String = s.trim().chars().take(n).collect();
    t.replace('\n', " ")
}

/// Counts of outcomes by kind, for the summary line.
pub fn summary(actions: &[ActionRecord]) -> BTreeMap<String, (u32, u32)> {
    let mut m: BTreeMap<String, (u32, u32)> = BTreeMap::new();
    for a in actions {
        let e = m.entry(a.kind.clone()).or_default();
        if a.outcome == "ok" {
            e.0 += 1;
        } else {
            e.1 += 1;
        }
    }
    m
}

/// Sets each `(name, value)` on the app's container (the one named like the app, else the
/// first), as the `rollout`, `set-env` and `revision` actions do.
fn set_app_container_env<'a>(
    template: &mut arm::models::Template,
    app: &str,
    env: impl Iterator<Item = (&'a String, &'a String)>,
) -> Result<(), arm::ArmError> {
    for (k, v) in env {
        arm::set_env_in_template(template, Some(app), k, v)
            .or_else(|_| arm::set_env_in_template(template, None, k, v))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::ActionFailure;

    #[test]
    fn an_arm_failure_keeps_its_status_and_code() {
        let refused = arm::ArmError::Api {
            operation: "restart_revision".into(),
            status: 400,
            code: "ContainerAppRevisionNotActive".into(),
            message: "Revision 'a--b' is not active and cannot be restarted.".into(),
            retry_after: None,
        };
        let f = ActionFailure::from(refused);
        assert_eq!(f.status, Some(400));
        assert_eq!(f.code.as_deref(), Some("ContainerAppRevisionNotActive"));
        assert!(f.detail.contains("is not active"), "{}", f.detail);

        let failed_op = arm::ArmError::Operation {
            operation: "patch_app".into(),
            status: "Failed".into(),
            code: "ContainerAppOperationError".into(),
            message: "revision never ready".into(),
        };
        let f = ActionFailure::from(failed_op);
        assert_eq!(
            f.status, None,
            "no HTTP status: the operation failed, not the call"
        );
        assert_eq!(f.code.as_deref(), Some("ContainerAppOperationError"));

        let ours = ActionFailure::from("app x has no active revision".to_owned());
        assert_eq!((ours.status, ours.code), (None, None));
    }
}
