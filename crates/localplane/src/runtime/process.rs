//! The process runtime: each container is a child process on 127.0.0.1.
//!
//! Image `probelab/<name>:<tag>` runs `<bin_dir>/<binary>` (table in [`super::binary_for_image`]).
//! The primary container of a replica gets its own free port as `PORT`; probes and ingress
//! reach it there whatever port the template names.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;
use tokio::sync::watch;

use super::{LaunchError, LaunchSpec, Launched};
use crate::logsink::Sink;

#[derive(Clone)]
pub struct ProcessRuntime {
    bin_dir: PathBuf,
    pids: Arc<Mutex<HashMap<String, u32>>>,
}

impl ProcessRuntime {
    pub fn new(bin_dir: PathBuf) -> Self {
        ProcessRuntime {
            bin_dir,
            pids: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    pub async fn launch(&self, spec: &LaunchSpec, sink: &Sink) -> Result<Launched, LaunchError> {
        let bin = super::binary_for_image(&spec.image)
            .ok_or_else(|| LaunchError::NoBinary(spec.image.clone()))?;
        let path = self.bin_dir.join(bin);
        if !path.is_file() {
            return Err(LaunchError::MissingBinary {
                path,
                image: spec.image.clone(),
                bin,
            });
        }
        let port = if spec.primary {
            Some(free_port()?)
        } else {
            None
        };
        let mut cmd = Command::new(&path);
        cmd.args(&spec.command).args(&spec.args);
        cmd.env_clear();
        if let Ok(p) = std::env::var("PATH") {
            cmd.env("PATH", p);
        }
        // Child processes stay on loopback unless the template says otherwise.
        cmd.env("BIND_ADDRESS", "127.0.0.1");
        for (k, v) in &spec.env {
            cmd.env(k, v);
        }
        if let Some(p) = port {
            cmd.env("PORT", p.to_string());
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|e| LaunchError::Spawn {
            path: path.clone(),
            message: e.to_string(),
        })?;
        let pid = child.id().unwrap_or(0);
        let id = format!("process://{pid}");
        if let Ok(mut pids) = self.pids.lock() {
            pids.insert(id.clone(), pid);
        }
        let mut readers = Vec::new();
        if let Some(out) = child.stdout.take() {
            readers.push(tokio::spawn(pump(
                BufReader::new(out),
                "stdout",
                spec.clone(),
                sink.clone(),
            )));
        }
        if let Some(err) = child.stderr.take() {
            readers.push(tokio::spawn(pump(
                BufReader::new(err),
                "stderr",
                spec.clone(),
                sink.clone(),
            )));
        }
        let (tx, rx) = watch::channel(None);
        let pids = self.pids.clone();
        let idc = id.clone();
        tokio::spawn(async move {
            let code = match child.wait().await {
                Ok(st) => exit_code(st),
                Err(_) => -1,
            };
            for r in readers {
                let _ = tokio::time::timeout(std::time::Duration::from_secs(2), r).await;
            }
            if let Ok(mut p) = pids.lock() {
                p.remove(&idc);
            }
            let _ = tx.send(Some(code));
        });
        Ok(Launched {
            id,
            host: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port_override: port,
            exit: rx,
        })
    }

    /// Sends a signal with `kill(1)` (the workspace forbids `unsafe`, so no direct `kill(2)`).
    pub async fn signal(&self, id: &str, sig: &str) {
        let pid = self.pids.lock().ok().and_then(|p| p.get(id).copied());
        if let Some(pid) = pid.filter(|p| *p > 0) {
            let _ = Command::new("kill")
                .arg(format!("-{sig}"))
                .arg(pid.to_string())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .await;
        }
    }

    pub fn remove(&self, _id: &str) {}
}

#[cfg(unix)]
fn exit_code(st: std::process::ExitStatus) -> i64 {
    use std::os::unix::process::ExitStatusExt;
    match (st.code(), st.signal()) {
        (Some(c), _) => i64::from(c),
        (None, Some(s)) => 128 + i64::from(s),
        _ => -1,
    }
}

#[cfg(not(unix))]
fn exit_code(st: std::process::ExitStatus) -> i64 {
    st.code().map(i64::from).unwrap_or(-1)
}

fn free_port() -> Result<u16, LaunchError> {
    std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| LaunchError::NoFreePort(e.to_string()))
}

async fn pump<R: tokio::io::AsyncRead + Unpin>(
    r: BufReader<R>,
    stream: &'static str,
    spec: LaunchSpec,
    sink: Sink,
) {
    let mut lines = r.lines();
    while let Ok(Some(line)) = lines.next_line().await {
        sink.console(&spec.owner, &spec.replica, &spec.container, stream, line);
    }
}
