//! Test support: run the real `subject` binary (or the library in-process) on 127.0.0.1 and
//! talk HTTP/1.1 to it over connections the test controls (testkit's `http::Conn` and `fetch`,
//! keep-alive included).
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use testkit::http::{Response, fetch, loopback};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

/// A running `subject` process; killed (SIGKILL) when dropped.
pub struct Subject {
    pub child: Child,
    pub spawned: Instant,
    out: Arc<Mutex<Vec<String>>>,
    err: Arc<Mutex<Vec<String>>>,
    /// The threads copying stdout and stderr; joined once the process has exited, so that what
    /// it printed before exiting is all there when a test looks (taken on the first join).
    readers: Vec<std::thread::JoinHandle<()>>,
}

fn reader(
    stream: impl std::io::Read + Send + 'static,
) -> (Arc<Mutex<Vec<String>>>, std::thread::JoinHandle<()>) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let l = lines.clone();
    let handle = std::thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            match line {
                Ok(line) => l.lock().unwrap().push(line),
                Err(_) => break,
            }
        }
    });
    (lines, handle)
}

impl Subject {
    /// Spawns the binary with a clean environment plus `env` (PORT defaults to 0, BIND_ADDRESS
    /// to 127.0.0.1).
    pub fn spawn(env: &[(&str, &str)]) -> Subject {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_subject"));
        cmd.env_clear()
            .env("PORT", "0")
            .env("BIND_ADDRESS", "127.0.0.1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let spawned = Instant::now();
        let mut child = cmd.spawn().expect("spawn subject");
        let (out, out_reader) = reader(child.stdout.take().unwrap());
        let (err, err_reader) = reader(child.stderr.take().unwrap());
        Subject {
            child,
            spawned,
            out,
            err,
            readers: vec![out_reader, err_reader],
        }
    }

    /// Every stdout line so far.
    pub fn stdout(&self) -> Vec<String> {
        self.out.lock().unwrap().clone()
    }

    /// Every stderr line so far.
    pub fn stderr(&self) -> Vec<String> {
        self.err.lock().unwrap().clone()
    }

    /// stdout lines parsed as JSON (each must be a JSON object).
    pub fn json_lines(&self) -> Vec<serde_json::Value> {
        self.stdout()
            .iter()
            .map(|l| {
                let v: serde_json::Value =
                    serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l:?}: {e}"));
                assert!(v.is_object(), "{l}");
                v
            })
            .collect()
    }

    /// Subject lines with `event == name`.
    pub fn events(&self, name: &str) -> Vec<serde_json::Value> {
        self.json_lines()
            .into_iter()
            .filter(|v| v["kind"] == "subject" && v["event"] == name)
            .collect()
    }

    /// Waits (bounded) for a stdout line matching `pred`.
    pub fn wait_line(
        &self,
        timeout: Duration,
        pred: impl Fn(&serde_json::Value) -> bool,
    ) -> serde_json::Value {
        let deadline = Instant::now() + timeout;
        loop {
            for l in self.stdout() {
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(&l)
                    && pred(&v)
                {
                    return v;
                }
            }
            assert!(
                Instant::now() < deadline,
                "no matching line within {timeout:?}; stdout: {:#?}; stderr: {:#?}",
                self.stdout(),
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The port from the `listening` log line (waits for it, 10 s at most).
    pub fn port(&self) -> u16 {
        let v = self.wait_line(Duration::from_secs(10), |v| {
            v["kind"] == "log" && v["msg"] == "listening"
        });
        v["fields"]["port"].as_u64().unwrap() as u16
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGTERM (via kill(1): the workspace denies unsafe code, so no libc::kill here).
    pub fn sigterm(&self) {
        let st = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .unwrap();
        assert!(st.success());
    }

    /// Waits (bounded) for the process to exit, then for its last stdout and stderr lines (the
    /// pipes reach end of file when it exits: the subject starts no other process).
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                for r in self.readers.drain(..) {
                    r.join().unwrap();
                }
                return Some(st);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Subject {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `GET path` on a fresh connection to 127.0.0.1:`port`, 5 s timeout.
pub async fn get(port: u16, path: &str) -> Response {
    fetch(loopback(port), "GET", path, &[], "", Duration::from_secs(5))
        .await
        .unwrap_or_else(|e| panic!("GET {path}: {e}"))
}

/// `POST path` with a JSON body on a fresh connection to 127.0.0.1:`port`, 5 s timeout.
pub async fn post(port: u16, path: &str, headers: &[(&str, &str)], body: &str) -> Response {
    fetch(
        loopback(port),
        "POST",
        path,
        headers,
        body,
        Duration::from_secs(5),
    )
    .await
    .unwrap_or_else(|e| panic!("POST {path}: {e}"))
}

/// Whether a TCP connect to the port is refused right now.
pub async fn refused(port: u16) -> bool {
    matches!(
        TcpStream::connect(("127.0.0.1", port)).await,
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused
    )
}

/// A subject running in this process (library `run_with`) on a free port; `stop()` sends the
/// termination signal.
pub struct InProcess {
    pub addr: SocketAddr,
    pub term: Option<tokio::sync::oneshot::Sender<()>>,
    pub task: JoinHandle<Result<subject::Exit, subject::RunError>>,
    pub exits: Arc<Mutex<Vec<i32>>>,
}

impl InProcess {
    pub async fn start(mut cfg: subject::Config) -> InProcess {
        cfg.port = 0;
        cfg.bind_address = "127.0.0.1".parse().unwrap();
        let (term_tx, term_rx) = tokio::sync::oneshot::channel::<()>();
        let (addr_tx, addr_rx) = tokio::sync::oneshot::channel();
        let exits = Arc::new(Mutex::new(Vec::new()));
        let e = exits.clone();
        let hooks = subject::Hooks {
            on_listening: Some(addr_tx),
            exit: Arc::new(move |code| e.lock().unwrap().push(code)),
        };
        let task = tokio::spawn(subject::run_with(
            cfg,
            async move {
                let _ = term_rx.await;
                "SIGTERM"
            },
            hooks,
        ));
        let addr = tokio::time::timeout(Duration::from_secs(10), addr_rx)
            .await
            .expect("listening in time")
            .expect("address sent");
        InProcess {
            addr,
            term: Some(term_tx),
            task,
            exits,
        }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    pub fn stop(&mut self) {
        if let Some(t) = self.term.take() {
            let _ = t.send(());
        }
    }
}
