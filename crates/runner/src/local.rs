//! `labctl local up|down|status`: localplane in the foreground, findable through a state file
//! (`<state dir>/labctl-local.json`: pid, ARM URL, evidence dir) that `status` and `down` read.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::RunError;

pub const STATE_FILE: &str = "labctl-local.json";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LocalState {
    pub pid: u32,
    /// `http://127.0.0.1:PORT` (our own clients).
    pub base_url: String,
    pub evidence: PathBuf,
    pub started: String,
    /// With TLS: `https://127.0.0.1:PORT` (the same port; the real Azure clients).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub https_url: Option<String>,
    /// With TLS: the CA certificate clients trust (absolute).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca: Option<PathBuf>,
    /// Whether every request needs `Authorization: Bearer <LOCALPLANE_TOKEN>`.
    #[serde(default)]
    pub token: bool,
}

pub fn state_file(state_dir: &Path) -> PathBuf {
    state_dir.join(STATE_FILE)
}

/// Whether process `pid` exists (Linux `/proc`).
pub fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Starts localplane (reachable as `access` allows), records it, runs until `stop` (Ctrl-C /
/// SIGTERM / SIGHUP), shuts it down. Containers and networks left by any localplane whose
/// process is gone (a SIGKILLed `labctl`, whatever its state dir) are removed first.
pub async fn up(
    cfg: localplane::LocalplaneConfig,
    access: localplane::Access,
    stop: impl std::future::Future<Output = ()>,
    on_ready: impl FnOnce(&LocalState),
) -> Result<(), RunError> {
    let sf = state_file(&cfg.state_dir);
    if let Some(s) = read(&cfg.state_dir)?
        && alive(s.pid)
        && s.pid != std::process::id()
    {
        return Err(RunError::Config(format!(
            "localplane already runs (pid {}, {}); `labctl local down` first",
            s.pid, s.base_url
        )));
    }
    let evidence = cfg.evidence_dir.clone();
    let token = access.token.is_some();
    access.check_listen(cfg.listen)?;
    if matches!(cfg.runtime, localplane::RuntimeKind::Docker) {
        localplane::runtime::docker::sweep_dead_owners().await;
    }
    let lp = localplane::start_with_access(cfg, access).await?;
    let failures = lp.log_write_failures();
    let state = LocalState {
        pid: std::process::id(),
        base_url: lp.base_url(),
        evidence,
        started: crate::pack::iso(chrono::Utc::now()),
        https_url: lp.https_url(),
        ca: lp
            .ca_path()
            .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())),
        token,
    };
    let json = serde_json::to_vec_pretty(&state).unwrap_or_default();
    crate::pack::write_atomic(&sf, &json)?;
    on_ready(&state);
    stop.await;
    let r = lp.shutdown().await;
    let _ = std::fs::remove_file(&sf);
    r.map_err(RunError::from)?;
    let lost = failures.snapshot();
    if lost.is_empty() {
        return Ok(());
    }
    Err(RunError::Config(format!(
        "log rows were lost: {}",
        lost.iter()
            .map(|f| format!(
                "{}: {} (from {}; {} rows lost)",
                f.file.display(),
                f.error,
                f.first_failed.to_rfc3339_ms(),
                f.rows_lost
            ))
            .collect::<Vec<_>>()
            .join("; ")
    )))
}

/// The recorded localplane, if any.
pub fn read(state_dir: &Path) -> Result<Option<LocalState>, RunError> {
    let sf = state_file(state_dir);
    match std::fs::read(&sf) {
        Ok(b) => serde_json::from_slice(&b).map(Some).map_err(|e| {
            RunError::io(
                &sf,
                std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()),
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(RunError::io(&sf, e)),
    }
}

/// `status`: the recorded localplane and whether its API answers.
pub async fn status(state_dir: &Path) -> Result<Option<(LocalState, bool)>, RunError> {
    let Some(s) = read(state_dir)? else {
        return Ok(None);
    };
    arm::tls::install_provider();
    // A localplane that requires a token answers 401 without it: it is up all the same.
    let healthy = alive(s.pid)
        && reqwest::Client::new()
            .get(format!("{}/localplane/healthz", s.base_url))
            .timeout(Duration::from_secs(3))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success() || r.status().as_u16() == 401);
    Ok(Some((s, healthy)))
}

/// `down`: SIGTERM to the recorded pid, then waits (up to `wait`) for it to exit.
pub async fn down(state_dir: &Path, wait: Duration) -> Result<Option<LocalState>, RunError> {
    let Some(s) = read(state_dir)? else {
        return Ok(None);
    };
    if alive(s.pid) {
        let st = tokio::process::Command::new("kill")
            .args(["-TERM", &s.pid.to_string()])
            .status()
            .await
            .map_err(|e| RunError::Config(format!("cannot run kill: {e}")))?;
        if !st.success() {
            return Err(RunError::Config(format!("kill -TERM {} failed", s.pid)));
        }
        let deadline = Instant::now() + wait;
        while alive(s.pid) {
            if Instant::now() >= deadline {
                return Err(RunError::Timeout(format!(
                    "localplane (pid {}) still runs after {}s",
                    s.pid,
                    wait.as_secs()
                )));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    let _ = std::fs::remove_file(state_file(state_dir));
    Ok(Some(s))
}
