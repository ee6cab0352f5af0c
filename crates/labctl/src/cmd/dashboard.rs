//! `labctl lab run --dashboard [127.0.0.1:PORT]`: a live view of a running lab.
//!
//! Serves report.html rendered from the pack so far (the same page the pack gets at the end:
//! [`analysis::render::html`]), re-analysed every rule window and reloaded by the browser as often
//! (`<meta http-equiv="refresh">`, no script). It listens on 127.0.0.1 only (any other address is
//! refused when the flag is parsed), answers `GET /` (and `/report.html`) and nothing else, and
//! stops with the run: the listener closes when [`Dashboard::stop`] is called or the handle
//! dropped. The page says that its verdict is provisional while the run goes on.

use std::collections::HashSet;
use std::ffi::OsString;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use analysis::render::html::{self, HtmlOptions};
use anyhow::Context;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// Where the dashboard listens when `--dashboard` is given without an address.
pub const DEFAULT_ADDR: &str = "127.0.0.1:8088";

/// `--dashboard`'s value: `127.0.0.1:PORT` (port 0: any free port), nothing else.
pub fn parse_addr(s: &str) -> Result<SocketAddr, String> {
    let addr: SocketAddr = s
        .parse()
        .map_err(|_| format!("'{s}': expected 127.0.0.1:PORT, e.g. {DEFAULT_ADDR}"))?;
    if addr.ip() != std::net::IpAddr::V4(Ipv4Addr::LOCALHOST) {
        return Err(format!(
            "'{s}': the dashboard listens on 127.0.0.1 only (it serves the lab's evidence to \
             whoever connects); use 127.0.0.1:{}",
            addr.port()
        ));
    }
    Ok(addr)
}

/// A running dashboard.
pub struct Dashboard {
    addr: SocketAddr,
    tasks: Vec<JoinHandle<()>>,
}

impl Dashboard {
    /// Binds `addr` and starts serving the pack the run creates under `out` (the first
    /// directory with a `lab.toml` that is not in `before`), re-rendered every `every`.
    pub async fn start(
        addr: SocketAddr,
        out: PathBuf,
        before: HashSet<OsString>,
        every: Option<Duration>,
    ) -> anyhow::Result<Dashboard> {
        let listener = TcpListener::bind(addr)
            .await
            .with_context(|| format!("--dashboard: cannot listen on {addr}"))?;
        let addr = listener
            .local_addr()
            .context("--dashboard: no local address")?;
        let page = Arc::new(Mutex::new(waiting_page(&out, 2)));
        let render = tokio::spawn(render_loop(out, before, every, page.clone()));
        let serve = tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                let page = page.clone();
                tokio::spawn(async move {
                    let _ = answer(&mut conn, &page).await;
                });
            }
        });
        Ok(Dashboard {
            addr,
            tasks: vec![render, serve],
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Closes the listener and stops re-rendering.
    pub fn stop(self) {
        drop(self);
    }
}

impl Drop for Dashboard {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

fn waiting_page(out: &Path, refresh_s: u64) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\
         <meta http-equiv=\"refresh\" content=\"{refresh_s}\"><title>probelab: waiting for the pack</title></head>\
         <body><p id=\"live\">The run has not written its evidence pack under {} yet; this page reloads every {refresh_s} s.</p></body></html>\n",
        html::CSP,
        analysis::render::timeline_svg::esc(&out.display().to_string())
    )
}

/// The pack this run created: a new directory of `out` holding `lab.toml`.
fn find_pack(out: &Path, before: &HashSet<OsString>) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(out)
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| !before.contains(&e.file_name()))
        .map(|e| e.path())
        .filter(|p| p.join("lab.toml").is_file())
        .collect();
    found.sort();
    found.pop()
}

async fn render_loop(
    out: PathBuf,
    before: HashSet<OsString>,
    every: Option<Duration>,
    page: Arc<Mutex<String>>,
) {
    let mut pack = None;
    loop {
        if pack.is_none() {
            pack = find_pack(&out, &before);
        }
        let mut wait = Duration::from_secs(2);
        if let Some(p) = pack.clone() {
            let started = Instant::now();
            let rendered = tokio::task::spawn_blocking(move || render_pack(&p, every)).await;
            let (text, window) = match rendered {
                Ok(r) => r,
                Err(e) => (format!("render task failed: {e}"), Duration::from_secs(10)),
            };
            *page.lock().unwrap_or_else(|p| p.into_inner()) = text;
            // Every window; never more often than twice the time a render takes.
            wait = window.max(started.elapsed() * 2);
        }
        tokio::time::sleep(wait).await;
    }
}

/// report.html of the pack so far, and the interval until the next render (the rule window,
/// unless `every` overrides it).
fn render_pack(pack: &Path, every: Option<Duration>) -> (String, Duration) {
    let opts = analysis::Options {
        lab: analysis::find_lab(None, Some(pack)),
        ..analysis::Options::default()
    };
    let now = chrono::Utc::now().format("%H:%M:%S UTC");
    match analysis::analyze(&[pack.to_path_buf()], &opts) {
        Ok(a) => {
            let window = every.unwrap_or(Duration::from_secs(a.rule.window_s.max(1)));
            let steps = match &a.runs_file {
                Ok(rf) => format!("{} step(s) recorded in runs.json", rf.steps.len()),
                Err(_) => "no runs.json yet".into(),
            };
            let banner = format!(
                "Live view of {}, rendered at {now} from the pack so far ({steps}); the run is still going, so the verdict below is provisional. Reloads every {} s.",
                pack.display(),
                window.as_secs().max(1)
            );
            let opts = HtmlOptions {
                refresh_s: Some(window.as_secs().max(1)),
                banner: Some(banner),
            };
            (html::render(&a, &a.events, &opts), window)
        }
        Err(e) => {
            let window = every.unwrap_or(Duration::from_secs(10));
            let text = format!(
                "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
                 <meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\
                 <meta http-equiv=\"refresh\" content=\"{}\"><title>probelab: live view</title></head>\
                 <body><p id=\"live\">{} at {now}: nothing to show yet ({}).</p></body></html>\n",
                html::CSP,
                window.as_secs().max(1),
                analysis::render::timeline_svg::esc(&pack.display().to_string()),
                analysis::render::timeline_svg::esc(&e.to_string())
            );
            (text, window)
        }
    }
}

async fn answer(conn: &mut tokio::net::TcpStream, page: &Mutex<String>) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 * 1024 {
        let n = tokio::time::timeout(Duration::from_secs(10), conn.read(&mut chunk))
            .await
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "slow request"))??;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let head = String::from_utf8_lossy(&buf);
    let mut parts = head.lines().next().unwrap_or("").split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let (status, ctype, body) = match (method, path) {
        ("GET", "/" | "/report.html") => (
            "200 OK",
            "text/html; charset=utf-8",
            page.lock().unwrap_or_else(|p| p.into_inner()).clone(),
        ),
        ("GET", _) => ("404 Not Found", "text/plain", "not found: try /\n".into()),
        _ => (
            "405 Method Not Allowed",
            "text/plain",
            "only GET\n".to_owned(),
        ),
    };
    let resp = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\ncache-control: no-store\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    conn.write_all(resp.as_bytes()).await?;
    conn.shutdown().await
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn only_127_0_0_1_is_accepted() {
        assert_eq!(
            parse_addr("127.0.0.1:8088").unwrap(),
            "127.0.0.1:8088".parse().unwrap()
        );
        assert_eq!(parse_addr("127.0.0.1:0").unwrap().port(), 0);
        for bad in ["0.0.0.0:8088", "192.168.1.2:80", "[::1]:8088", "[::]:80"] {
            let e = parse_addr(bad).unwrap_err();
            assert!(e.contains("127.0.0.1 only"), "{bad}: {e}");
        }
        assert!(
            parse_addr("localhost:8088")
                .unwrap_err()
                .contains("expected")
        );
        assert!(parse_addr("8088").is_err());
    }

    async fn get(addr: SocketAddr, path: &str) -> std::io::Result<String> {
        let mut c = tokio::net::TcpStream::connect(addr).await?;
        c.write_all(format!("GET {path} HTTP/1.1\r\nhost: x\r\n\r\n").as_bytes())
            .await?;
        let mut s = String::new();
        c.read_to_string(&mut s).await?;
        Ok(s)
    }

    fn fixture() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../analysis/tests/fixtures/quick-rollout-pack")
    }

    /// The console log of the fixture up to (excluding) the first line at or after `until`.
    fn console_until(until: &str) -> (String, String) {
        let text =
            std::fs::read_to_string(fixture().join("logs/ContainerAppConsoleLogs_CL.ndjson"))
                .unwrap();
        let mut before = String::new();
        let mut after = String::new();
        for l in text.lines() {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let ts = v["TimeGenerated"].as_str().unwrap();
            let dst = if ts < until { &mut before } else { &mut after };
            dst.push_str(l);
            dst.push('\n');
        }
        (before, after)
    }

    /// Start, fetch the page, it changes once the pack grows by a window, it stops.
    #[tokio::test]
    async fn serves_the_pack_so_far_rerenders_it_and_stops() {
        let out = tempfile::tempdir().unwrap();
        let old = out.path().join("older-pack");
        std::fs::create_dir_all(&old).unwrap();
        std::fs::copy(fixture().join("lab.toml"), old.join("lab.toml")).unwrap();
        let before: HashSet<OsString> = std::fs::read_dir(out.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        let d = Dashboard::start(
            "127.0.0.1:0".parse().unwrap(),
            out.path().to_path_buf(),
            before,
            Some(Duration::from_millis(300)),
        )
        .await
        .unwrap();
        let addr = d.addr();
        assert_eq!(addr.ip(), std::net::IpAddr::V4(Ipv4Addr::LOCALHOST));

        // No pack yet (the older one is not this run's): the waiting page.
        let first = get(addr, "/").await.unwrap();
        assert!(first.starts_with("HTTP/1.1 200 OK"), "{first}");
        assert!(
            first.contains("has not written its evidence pack"),
            "{first}"
        );
        assert!(
            get(addr, "/elsewhere")
                .await
                .unwrap()
                .starts_with("HTTP/1.1 404")
        );

        // The run creates its pack with the logs up to the first rollout.
        let pack = out.path().join("startup-degraded-20261201T120144Z");
        std::fs::create_dir_all(pack.join("logs")).unwrap();
        for f in ["lab.toml", "runs.json", "profile"] {
            std::fs::copy(fixture().join(f), pack.join(f)).unwrap();
        }
        let (early, late) = console_until("2026-12-01T12:03:00");
        std::fs::write(pack.join("logs/ContainerAppConsoleLogs_CL.ndjson"), &early).unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let page1 = loop {
            let p = get(addr, "/").await.unwrap();
            if p.contains("Live view of") {
                break p;
            }
            assert!(Instant::now() < deadline, "never rendered the pack: {p}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert!(page1.contains(r#"<meta http-equiv="refresh" content="1">"#));
        assert!(page1.contains(r#"class="timeline" id="timeline""#));
        assert!(page1.contains("verdict below is provisional"));

        // A window later the pack holds more requests: the page shows them.
        std::fs::write(
            pack.join("logs/ContainerAppConsoleLogs_CL.ndjson"),
            format!("{early}{late}"),
        )
        .unwrap();
        let count = |p: &str| {
            let i = p.find("<dt>judged</dt><dd>").unwrap();
            p[i..i + 80].to_owned()
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let p = get(addr, "/").await.unwrap();
            if count(&p) != count(&page1) {
                assert!(count(&p).contains("34000 requests"), "{}", count(&p));
                break;
            }
            assert!(Instant::now() < deadline, "the page never changed");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }

        // It stops with the run.
        d.stop();
        let deadline = Instant::now() + Duration::from_secs(10);
        while get(addr, "/").await.is_ok() {
            assert!(Instant::now() < deadline, "still answering after stop");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
