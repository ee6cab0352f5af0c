//! Stopping `labctl` from outside (issue 19, point 3), on the Docker runtime:
//! - SIGTERM during a step stops the run as Ctrl-C does: pack kept with `incomplete: true` and
//!   `stopped_by` naming the signal, and nothing labelled with labctl's pid is left in
//!   `docker ps -a` or `docker network ls`;
//! - after a SIGKILL (nothing can be handled) the containers and network stay, labelled with the
//!   dead pid; the next `labctl local up` removes them, though it uses another state dir.
//!
//! Heavy (runs a lab): run under the machine lock. `PROBELAB_SKIP_DOCKER=1` skips.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// testkit's gate (these tests are synchronous: it runs on a runtime of its own): true only
/// when `PROBELAB_SKIP_DOCKER=1`; a missing engine fails the test.
fn skip() -> bool {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async { testkit::docker::require_docker().await.is_none() })
}

fn labs() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../labs")
}

fn docker_ids(what: &[&str], pid: u32) -> Vec<String> {
    let out = Command::new("docker")
        .args(what)
        .args(["-q", "--filter", &format!("label=probelab.pid={pid}")])
        .output()
        .expect("the docker CLI");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(String::from)
        .collect()
}

fn containers(pid: u32) -> Vec<String> {
    docker_ids(&["ps", "-a"], pid)
}

fn networks(pid: u32) -> Vec<String> {
    docker_ids(&["network", "ls"], pid)
}

fn wait_for(limit: Duration, what: &str, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < limit, "{what} within {limit:?}");
        std::thread::sleep(Duration::from_millis(300));
    }
}

fn lab_run(out: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_labctl"))
        .args([
            "lab",
            "run",
            "startup-degraded",
            "--profile",
            "quick",
            "--progress",
            "plain",
        ])
        .arg("--labs-dir")
        .arg(labs())
        .arg("--out")
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// Waits until the run is inside a step: a loadgen job container of this labctl runs.
fn wait_in_step(pid: u32) {
    wait_for(
        Duration::from_secs(240),
        "a loadgen container of the run",
        || {
            let out = Command::new("docker")
                .args(["ps", "--format", "{{.Image}}", "--filter"])
                .arg(format!("label=probelab.pid={pid}"))
                .output()
                .unwrap();
            String::from_utf8_lossy(&out.stdout).contains("probelab/loadgen")
        },
    );
}

fn wait_exit(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let t0 = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        assert!(t0.elapsed() < limit, "labctl still runs after {limit:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn signal(pid: u32, sig: &str) {
    let st = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .unwrap();
    assert!(st.success(), "kill {sig} {pid}");
}

#[test]
fn sigterm_during_a_step_stops_everything_and_keeps_the_pack() {
    if skip() {
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let mut child = lab_run(out.path());
    let pid = child.id();
    wait_in_step(pid);
    signal(pid, "-TERM");
    let status = wait_exit(&mut child, Duration::from_secs(300));
    assert_eq!(status.code(), Some(1), "an interrupted run exits 1");
    let pack = std::fs::read_dir(out.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.join("runs.json").is_file())
        .expect("the pack is kept");
    let runs: serde_json::Value =
        serde_json::from_slice(&std::fs::read(pack.join("runs.json")).unwrap()).unwrap();
    assert_eq!(runs["incomplete"], true, "{runs}");
    assert_eq!(runs["stopped_by"], "interrupted (SIGTERM)", "{runs}");
    assert_eq!(containers(pid), Vec::<String>::new(), "containers left");
    assert_eq!(networks(pid), Vec::<String>::new(), "networks left");
}

#[test]
fn after_a_sigkill_the_next_local_up_removes_what_was_left() {
    if skip() {
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let mut child = lab_run(out.path());
    let pid = child.id();
    wait_in_step(pid);
    signal(pid, "-KILL");
    wait_exit(&mut child, Duration::from_secs(30));
    // Nothing could stop them: the dead labctl's containers and network are still there.
    assert!(!containers(pid).is_empty(), "a SIGKILL leaves containers");
    assert!(!networks(pid).is_empty(), "a SIGKILL leaves the network");
    let state = tempfile::tempdir().unwrap();
    let mut up = Command::new(env!("CARGO_BIN_EXE_labctl"))
        .args(["local", "up", "--listen", "127.0.0.1:0", "--state-dir"])
        .arg(state.path())
        .arg("--evidence")
        .arg(state.path().join("evidence"))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    {
        use std::io::BufRead;
        let mut line = String::new();
        std::io::BufReader::new(up.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.starts_with("ARM_ENDPOINT="), "{line}");
    }
    assert_eq!(
        containers(pid),
        Vec::<String>::new(),
        "the dead run's containers"
    );
    assert_eq!(
        networks(pid),
        Vec::<String>::new(),
        "the dead run's network"
    );
    let up_pid = up.id();
    signal(up_pid, "-TERM");
    let st = wait_exit(&mut up, Duration::from_secs(60));
    assert!(st.success(), "{st:?}");
    assert_eq!(containers(up_pid), Vec::<String>::new());
    assert_eq!(networks(up_pid), Vec::<String>::new());
}
