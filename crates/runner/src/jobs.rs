//! Starting Container Apps jobs with per-run settings.
//!
//! `az containerapp job start --env-vars` is ignored by the platform, so the default mode is
//! **update-then-start**: PATCH the job template's env, then start with no override. Two starts
//! that mutate the same job must never interleave (B's PATCH between A's PATCH and A's start
//! would run A with B's settings), so the PATCH and the start happen under a lock file per job
//! (`<lock dir>/<endpoint>-<rg>-<job>.lock`, created with `O_EXCL`, holding the owner's pid; a
//! lock whose owner is gone is taken over). **override** starts with a full
//! `JobExecutionTemplate` (every container copied from the job, env changed) and leaves the
//! template untouched.

use std::path::{Path, PathBuf};
use std::time::Duration;

use arm::models::{Container, EnvVar, JobConfiguration, JobExecutionTemplate, Template};
use reqwest::Method;
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::RunError;
use crate::target::Target;

/// How long a start waits for another start's lock before giving up.
pub const LOCK_WAIT: Duration = Duration::from_secs(180);

/// How a job is started.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum StartMode {
    /// PATCH the job template's env, then start with no override (serialised per job).
    #[default]
    UpdateThenStart,
    /// Start with a full execution template override; the job template is not touched.
    Override,
}

/// A start mode that is neither `update-then-start` nor `override`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?}: use update-then-start or override")]
pub struct UnknownStartMode(pub String);

impl std::str::FromStr for StartMode {
    type Err = UnknownStartMode;
    fn from_str(s: &str) -> Result<Self, UnknownStartMode> {
        match s {
            "update-then-start" => Ok(StartMode::UpdateThenStart),
            "override" => Ok(StartMode::Override),
            o => Err(UnknownStartMode(o.to_owned())),
        }
    }
}

/// One env change: set `name` to `value`, or remove it when `value` is `None`.
pub type EnvChange = (String, Option<String>);

/// The default lock directory: `$TMPDIR/probelab-locks`.
pub fn default_lock_dir() -> PathBuf {
    std::env::temp_dir().join("probelab-locks")
}

/// Applies env changes to the first container (the job's only one in probelab).
pub fn apply_env(container: &mut Container, changes: &[EnvChange]) {
    for (name, value) in changes {
        container.env.retain(|e| &e.name != name);
        if let Some(v) = value {
            container.env.push(EnvVar {
                name: name.clone(),
                value: Some(v.clone()),
                secret_ref: None,
                extra: Default::default(),
            });
        }
    }
}

fn first_container<'a>(t: &'a mut Template, job: &str) -> Result<&'a mut Container, RunError> {
    t.containers.first_mut().ok_or_else(|| RunError::Job {
        job: job.to_owned(),
        msg: "the job template has no container".into(),
    })
}

/// Starts `job` with `changes` applied; returns the execution name.
pub async fn start(
    t: &Target,
    job: &str,
    changes: &[EnvChange],
    mode: StartMode,
    lock_dir: &Path,
) -> Result<String, RunError> {
    start_replicas(t, job, changes, None, mode, lock_dir).await
}

/// The job's replicas per execution: `manualTriggerConfig.parallelism` (1 when unset).
fn parallelism(c: Option<&JobConfiguration>) -> u32 {
    c.and_then(|c| c.manual_trigger_config.as_ref())
        .and_then(|m| m.get("parallelism"))
        .and_then(Value::as_u64)
        .and_then(|p| u32::try_from(p).ok())
        .unwrap_or(1)
}

/// `configuration` with `manualTriggerConfig` asking for `n` replicas, all of which must
/// succeed (`parallelism` = `replicaCompletionCount` = `n`; its other keys kept), for a PATCH.
/// `secrets` is left out: a GET does not return their values, and a merge patch without the
/// key leaves them as they are.
pub fn with_replicas(mut c: JobConfiguration, n: u32) -> JobConfiguration {
    c.extra.remove("secrets");
    let mut m = match c.manual_trigger_config.take() {
        Some(Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    };
    m.insert("parallelism".into(), json!(n));
    m.insert("replicaCompletionCount".into(), json!(n));
    c.manual_trigger_config = Some(Value::Object(m));
    c
}

/// Starts `job` with `changes` applied and, when `replicas` is given, that many replicas per
/// execution; returns the execution name. update-then-start PATCHes the job's configuration
/// (`manualTriggerConfig`) with its env under the same lock, so every start states its own
/// count; an execution template override cannot carry a parallelism, so override refuses a
/// count the job does not already have.
pub async fn start_replicas(
    t: &Target,
    job: &str,
    changes: &[EnvChange],
    replicas: Option<u32>,
    mode: StartMode,
    lock_dir: &Path,
) -> Result<String, RunError> {
    match mode {
        StartMode::UpdateThenStart => {
            let _lock = JobLock::acquire(lock_dir, &lock_name(t, job), LOCK_WAIT).await?;
            let current = t.arm.get_job(&t.scope, job).await?;
            let mut template = current.properties.template.ok_or_else(|| RunError::Job {
                job: job.to_owned(),
                msg: "the job has no template".into(),
            })?;
            apply_env(first_container(&mut template, job)?, changes);
            let mut body = json!({ "properties": { "template": template } });
            if let Some(n) = replicas {
                let c = current.properties.configuration.unwrap_or_default();
                body["properties"]["configuration"] = json!(with_replicas(c, n));
            }
            t.send(
                "patch_job",
                Method::PATCH,
                &t.resource_path("jobs", job),
                Some(&body),
            )
            .await?;
            let exec = t.arm.start_job(&t.scope, job, None).await?;
            Ok(exec.name)
        }
        StartMode::Override => {
            let current = t.arm.get_job(&t.scope, job).await?;
            let has = parallelism(current.properties.configuration.as_ref());
            if let Some(n) = replicas.filter(|n| *n != has) {
                return Err(RunError::Job {
                    job: job.to_owned(),
                    msg: format!(
                        "the load needs {n} replicas per execution and the job runs {has}; an \
                         override start cannot change that: use update-then-start"
                    ),
                });
            }
            let mut template = current.properties.template.ok_or_else(|| RunError::Job {
                job: job.to_owned(),
                msg: "the job has no template".into(),
            })?;
            apply_env(first_container(&mut template, job)?, changes);
            let over = JobExecutionTemplate {
                containers: template.containers,
                ..Default::default()
            };
            let exec = t.arm.start_job(&t.scope, job, Some(&over)).await?;
            Ok(exec.name)
        }
    }
}

/// A terminal execution status (`Succeeded`, `Failed`, `Stopped`, `Degraded`...), or `None`.
fn terminal(status: &str) -> bool {
    !matches!(status, "Running" | "Processing" | "Unknown" | "")
}

/// Polls an execution (every `t.execution_poll`) until it ends or `timeout` passes; returns its
/// status.
pub async fn wait(
    t: &Target,
    job: &str,
    execution: &str,
    timeout: Duration,
) -> Result<String, RunError> {
    let deadline = Instant::now() + timeout;
    let mut last_err = None;
    for _ in 0..100_000 {
        match t.arm.get_execution(&t.scope, job, execution).await {
            Ok(e) => {
                let st = e
                    .properties
                    .status
                    .map(|s| s.as_str().to_owned())
                    .unwrap_or_default();
                if terminal(&st) {
                    return Ok(st);
                }
            }
            Err(e) => last_err = Some(e.to_string()),
        }
        if Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(t.execution_poll).await;
    }
    Err(RunError::Timeout(format!(
        "job {job} execution {execution} did not end within {}s{}",
        timeout.as_secs(),
        last_err
            .map(|e| format!(" (last error: {e})"))
            .unwrap_or_default()
    )))
}

/// The lock file's name for `job` on this target (endpoint, resource group, job).
pub fn lock_name(t: &Target, job: &str) -> String {
    let e = &t.arm.config().endpoint;
    let raw = format!(
        "{}-{}-{}-{}",
        e.host_str().unwrap_or("arm"),
        e.port_or_known_default().unwrap_or(0),
        t.scope.resource_group,
        job
    );
    raw.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A lock file held for the lifetime of the value.
#[derive(Debug)]
pub struct JobLock {
    path: PathBuf,
}

impl JobLock {
    /// Takes `<dir>/<name>.lock`, waiting up to `wait` for another holder.
    pub async fn acquire(dir: &Path, name: &str, wait: Duration) -> Result<JobLock, RunError> {
        std::fs::create_dir_all(dir).map_err(|e| RunError::io(dir, e))?;
        let path = dir.join(format!("{name}.lock"));
        let deadline = Instant::now() + wait;
        loop {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(mut f) => {
                    use std::io::Write;
                    let _ = writeln!(f, "{}", std::process::id());
                    return Ok(JobLock { path });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    if owner_gone(&path) {
                        let _ = std::fs::remove_file(&path);
                        continue;
                    }
                }
                Err(e) => return Err(RunError::io(&path, e)),
            }
            if Instant::now() >= deadline {
                return Err(RunError::Job {
                    job: name.to_owned(),
                    msg: format!(
                        "lock {} is held by another start for more than {}s; remove it if no labctl is running",
                        path.display(),
                        wait.as_secs()
                    ),
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// True when the lock names a pid that no longer runs (Linux: no `/proc/<pid>`). A lock being
/// written (empty) is not stale.
fn owner_gone(path: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else {
        return false;
    };
    match text.trim().parse::<u32>() {
        Ok(pid) => Path::new("/proc").is_dir() && !Path::new(&format!("/proc/{pid}")).exists(),
        Err(_) => false,
    }
}

impl Drop for JobLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_lock_excludes_and_stale_locks_are_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let a = JobLock::acquire(dir.path(), "j", Duration::from_secs(1))
            .await
            .unwrap();
        let err = JobLock::acquire(dir.path(), "j", Duration::from_millis(200))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("held by another start"), "{err}");
        drop(a);
        let b = JobLock::acquire(dir.path(), "j", Duration::from_secs(1))
            .await
            .unwrap();
        drop(b);
        // A lock left by a process that is gone.
        std::fs::write(dir.path().join("j.lock"), "4294967\n").unwrap();
        let _c = JobLock::acquire(dir.path(), "j", Duration::from_secs(1))
            .await
            .unwrap();
    }

    #[test]
    fn env_changes_set_replace_and_remove() {
        let mut c = Container::default();
        apply_env(
            &mut c,
            &[
                ("A".into(), Some("1".into())),
                ("B".into(), Some("2".into())),
            ],
        );
        apply_env(
            &mut c,
            &[("A".into(), Some("3".into())), ("B".into(), None)],
        );
        assert_eq!(c.env.len(), 1);
        assert_eq!(c.env_value("A"), Some("3"));
        assert_eq!("override".parse::<StartMode>(), Ok(StartMode::Override));
        assert!("x".parse::<StartMode>().is_err());
    }
}
