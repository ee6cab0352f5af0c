//! report.html in a real browser: headless Chromium renders the report of a real quick rollout
//! lab pack (`fixtures/quick-rollout-pack`: lab.toml, runs.json and the logs of one
//! `labctl lab run labs/startup-degraded.toml --profile quick`), and the test checks what a
//! reader would see: the timeline is drawn with one vertical marker per fired event (counted
//! in the screenshot's pixels), every perturbation marker and every gate row is in the DOM, and
//! the page makes no request (Chromium's own net log, with a leaky page as positive control).
//!
//! Needs Chromium (`chromium`, `chromium-browser` or `google-chrome` on PATH, or
//! `PROBELAB_CHROMIUM`); `.ci/run` installs Debian's `chromium`. Without it the tests fail
//! loudly, unless `PROBELAB_SKIP_BROWSER=1` skips them on purpose.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use analysis::render::pack;
use analysis::{Options, analyze, find_lab};
use serde_json::Value;

fn chromium() -> Option<PathBuf> {
    if std::env::var("PROBELAB_SKIP_BROWSER").as_deref() == Ok("1") {
        eprintln!("PROBELAB_SKIP_BROWSER=1: browser test skipped on purpose");
        return None;
    }
    if let Ok(p) = std::env::var("PROBELAB_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        for dir in std::env::split_paths(&path) {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    panic!(
        "Chromium not found (chromium, chromium-browser or google-chrome on PATH, or PROBELAB_CHROMIUM): \
         install it (apt-get install -y chromium) or set PROBELAB_SKIP_BROWSER=1 to skip the browser tests on purpose"
    );
}

/// Runs headless Chromium on `page` with `extra` arguments; returns stdout. Background
/// networking is off and every host name resolves to nothing, so no test ever reaches a network.
fn run_chromium(bin: &Path, profile: &Path, page: &Path, extra: &[String]) -> String {
    let mut child = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-default-apps",
            "--disable-extensions",
            "--no-first-run",
            "--host-resolver-rules=MAP * ~NOTFOUND",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut s).unwrap();
        s
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            assert!(st.success(), "chromium exited with {st}");
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    reader.join().unwrap()
}

/// The URLs of requests a page made (its requests have an origin; Chromium's own do not).
fn page_requests(net_log: &Path) -> Vec<String> {
    let log: Value = serde_json::from_str(&std::fs::read_to_string(net_log).unwrap()).unwrap();
    let start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
        .as_u64()
        .unwrap();
    log["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"].as_u64() == Some(start_job))
        .filter_map(|e| {
            let p = &e["params"];
            let url = p["url"].as_str()?;
            (p["initiator"].as_str() != Some("not an origin")).then(|| url.to_owned())
        })
        .collect()
}

fn quick_pack() -> (tempfile::TempDir, PathBuf) {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/quick-rollout-pack");
    let (dir, dst) = testkit::pack::copy_fixture(&src, &["lab.toml", "runs.json", "profile"]);
    let opts = Options {
        lab: find_lab(None, Some(&dst)),
        ..Options::default()
    };
    let a = analyze(std::slice::from_ref(&dst), &opts).unwrap();
    pack::write(&a, &dst, pack::Parts::All).unwrap();
    (dir, dst)
}

/// Columns holding a vertical run of at least `min_run` marker-red pixels, merged into
/// clusters (an anti-aliased line covers two or three columns): the x of each cluster.
fn red_vertical_lines(png_path: &Path, min_run: u32) -> (Vec<u32>, u64) {
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(png_path).unwrap(),
    ));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let (w, h) = (info.width, info.height);
    let bpp = info.line_size / w as usize;
    let px = |x: u32, y: u32| {
        let i = y as usize * info.line_size + x as usize * bpp;
        (buf[i], buf[i + 1], buf[i + 2])
    };
    let mut cols = Vec::new();
    for x in 0..w {
        let (mut run, mut best) = (0u32, 0u32);
        for y in 0..h {
            let (r, g, b) = px(x, y);
            if r > 170 && g < 120 && b < 120 {
                run += 1;
                best = best.max(run);
            } else {
                run = 0;
            }
        }
        if best >= min_run {
            cols.push(x);
        }
    }
    let mut clusters: Vec<u32> = Vec::new();
    for x in cols {
        if clusters.last().is_none_or(|&l| x > l + 3) {
            clusters.push(x);
        }
    }
    // Non-white pixels of the whole page (the timeline is most of them).
    let mut ink = 0u64;
    for y in 0..h {
        for x in 0..w {
            let (r, g, b) = px(x, y);
            if (r as u32 + g as u32 + b as u32) < 600 {
                ink += 1;
            }
        }
    }
    (clusters, ink)
}

#[test]
fn report_html_renders_in_chromium_with_markers_gates_and_no_requests() {
    let Some(bin) = chromium() else { return };
    let (tmp, dir) = quick_pack();
    let page = dir.join("report.html");
    let runs: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("runs.json")).unwrap()).unwrap();
    let mut events: Vec<(String, u64)> = Vec::new();
    for s in runs["steps"].as_array().unwrap() {
        for a in s["actions"].as_array().unwrap() {
            let key = (
                s["name"].as_str().unwrap().to_owned(),
                a["event"].as_u64().unwrap(),
            );
            if !events.contains(&key) {
                events.push(key);
            }
        }
    }
    assert_eq!(
        events.len(),
        5,
        "the quick lab fires 3 rollouts and 2 restarts"
    );
    let gates: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("gates.json")).unwrap()).unwrap();
    let gate_names: Vec<&str> = gates["gates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert!(!gate_names.is_empty());

    // The DOM as Chromium built it.
    let profile = tmp.path().join("chromium-profile");
    let net_log = tmp.path().join("net-log.json");
    let dom = run_chromium(
        &bin,
        &profile,
        &page,
        &[
            "--dump-dom".into(),
            format!("--log-net-log={}", net_log.display()),
        ],
    );
    assert!(
        dom.contains("Verdict: HELD"),
        "{}",
        &dom[..dom.len().min(2000)]
    );
    for (step, n) in &events {
        let m = format!(r#"class="perturbation-marker" data-step="{step}" data-event="{n}""#);
        assert!(
            dom.contains(&m),
            "no marker for {step} event {n} in the DOM"
        );
    }
    for g in &gate_names {
        assert!(
            dom.contains(&format!(r#"data-gate="{g}""#)),
            "no row for gate {g} in the DOM"
        );
    }
    let rows = dom.matches(r#"<tr class="gate "#).count();
    assert_eq!(rows, gate_names.len(), "one row per gate");
    // Self-contained: a policy that forbids any request, and nothing that would make one.
    assert!(
        dom.contains(r#"http-equiv="Content-Security-Policy" content="default-src 'none';"#),
        "no CSP meta"
    );
    for needle in [
        "<script", "<link", "<img", "<iframe", "<object", "<embed", " src=", " href=", "url(",
        "@import",
    ] {
        assert!(!dom.contains(needle), "{needle} in report.html's DOM");
    }
    let stray: Vec<&str> = dom
        .match_indices("://")
        .map(|(i, _)| &dom[i.saturating_sub(30)..(i + 30).min(dom.len())])
        .filter(|ctx| !ctx.contains("http://www.w3.org/2000/svg"))
        .collect();
    assert!(stray.is_empty(), "URLs in the DOM: {stray:?}");
    let reqs = page_requests(&net_log);
    assert!(reqs.is_empty(), "report.html made requests: {reqs:?}");

    // The screenshot: the timeline is drawn, with one full-height marker per event.
    let shot = tmp.path().join("report.png");
    run_chromium(
        &bin,
        &profile,
        &page,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1200,3200".into(),
        ],
    );
    let (lines, ink) = red_vertical_lines(&shot, 300);
    assert_eq!(
        lines.len(),
        events.len(),
        "vertical marker lines at x = {lines:?}, events {events:?}"
    );
    assert!(
        ink > 150_000,
        "only {ink} non-white pixels: the page looks blank"
    );
}

/// The positive control of the request check: a page that loads an image and a stylesheet
/// from elsewhere is caught by the same net-log reading.
#[test]
fn the_request_check_catches_a_page_that_fetches() {
    let Some(bin) = chromium() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let page = tmp.path().join("leaky.html");
    std::fs::write(
        &page,
        r#"<!DOCTYPE html><html><body><img src="http://probelab.invalid/x.png"><link rel="stylesheet" href="https://fonts.probelab.invalid/a.css"></body></html>"#,
    )
    .unwrap();
    let net_log = tmp.path().join("net-log.json");
    run_chromium(
        &bin,
        &tmp.path().join("profile"),
        &page,
        &[
            "--dump-dom".into(),
            format!("--log-net-log={}", net_log.display()),
        ],
    );
    let reqs = page_requests(&net_log);
    assert!(
        reqs.iter().any(|u| u.contains("probelab.invalid/x.png"))
            && reqs.iter().any(|u| u.contains("fonts.probelab.invalid")),
        "{reqs:?}"
    );
}
