//! A disk that fills up during a lab (issue 19, point 2): the evidence directory is a 4 MiB
//! tmpfs; early in the first step a filler file takes every free page and keeps them until the
//! console table has stopped growing for 12 s (at most 90 s), then goes. Not a fixed time:
//! tmpfs hands out whole pages, so the sink's last, partly written page still takes rows after
//! the disk is "full", and in the preflight step a row comes only every few seconds (loadgen's
//! 10 s buckets, no per-request lines): fixed fills of 1.5 s and 12 s have both passed without a
//! single write failing in CI. The step is 110 s long, so runs.json (written after each step)
//! and the lock files always find room again. The log rows written meanwhile are lost:
//! `runs.json` must say which file, the error and from when, the run stays `incomplete`, and the
//! manifest still verifies for what was written.
//!
//! Needs root (mount) and the workspace binaries next to the test binary (process runtime);
//! runs a lab, so it is heavy: run it under the machine lock.
#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use runner::progress::ProgressMode;
use runner::run::{LocalRuntime, RunOptions, TargetChoice};

struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
        let st = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .status()
            .ok()?;
        st.success().then(|| Tmpfs(dir.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

fn lines(p: &Path) -> usize {
    std::fs::read_to_string(p)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_during_a_lab_is_recorded_and_the_manifest_verifies() {
    let base = tempfile::tempdir().unwrap();
    let Some(_fs) = Tmpfs::mount(base.path(), "4m") else {
        panic!(
            "cannot mount a tmpfs on {} (needs root)",
            base.path().display()
        );
    };
    let out = base.path().join("evidence");
    let labs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../labs");
    let mut opts = RunOptions::new(
        labs.join("startup-degraded.toml"),
        "quick",
        TargetChoice::Local(LocalRuntime::Process {
            bin_dir: testkit::bins::dir(&["subject", "loadgen", "perturbation-sampler"]),
        }),
        out.clone(),
    );
    opts.time_scale = 1.0;
    opts.progress = ProgressMode::Plain;
    // The job locks live off the small disk: only the evidence directory is meant to fill.
    let locks = tempfile::tempdir().unwrap();
    opts.lock_dir = locks.path().to_path_buf();
    let filler = base.path().join("filler");
    let watcher_out = out.clone();
    let fill = std::thread::spawn(move || {
        // Once the run logs (the console table grows), fill the disk until writes fail, then free it.
        let t0 = Instant::now();
        let console = loop {
            let found = std::fs::read_dir(&watcher_out)
                .ok()
                .and_then(|mut d| d.next())
                .and_then(|e| e.ok())
                .map(|e| e.path().join("logs/ContainerAppConsoleLogs_CL.ndjson"));
            if let Some(c) = found
                && lines(&c) > 5
            {
                break c;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(240),
                "the lab never logged"
            );
            std::thread::sleep(Duration::from_millis(200));
        };
        let mut f = std::fs::File::create(&filler).unwrap();
        let block = vec![0u8; 64 * 1024];
        while f.write_all(&block).is_ok() {}
        let _ = f.write_all(&[0u8; 512]);
        let _ = f.flush();
        let before = lines(&console);
        // tmpfs hands out whole pages: the sink's last, partly written page still takes rows
        // after the filler took every free page, so a fixed wait may see no failed write at
        // all. Keep the disk full until the console table has not grown for 12 s (longer than
        // loadgen's 10 s bucket interval, so at least one write was tried and failed), at most
        // 90 s.
        let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        let full_since = Instant::now();
        let (mut last, mut unchanged_since) = (size(&console), Instant::now());
        while unchanged_since.elapsed() < Duration::from_secs(12)
            && full_since.elapsed() < Duration::from_secs(90)
        {
            std::thread::sleep(Duration::from_millis(200));
            let now = size(&console);
            if now != last {
                (last, unchanged_since) = (now, Instant::now());
            }
        }
        drop(f);
        std::fs::remove_file(&filler).unwrap();
        before
    });
    let o = runner::run_lab(opts).await.unwrap();
    let lines_when_full = fill.join().unwrap();
    assert!(o.error.is_none(), "the run went on: {:?}", o.error);
    assert!(o.record.incomplete, "lost rows keep the run incomplete");
    let f = &o.record.log_write_failures;
    assert!(!f.is_empty(), "no failure recorded: {:?}", o.record);
    for x in f {
        assert!(
            x.file.starts_with("logs/") && x.file.ends_with(".ndjson"),
            "{x:?}"
        );
        assert!(x.error.contains("No space left on device"), "{x:?}");
        assert!(x.rows_lost > 0, "{x:?}");
        assert!(x.first_failed_ts.ends_with('Z'), "{x:?}");
    }
    let runs = runner::pack::RunsRecord::read(&o.pack.join(runner::pack::RUNS_FILE)).unwrap();
    assert_eq!(
        runs.log_write_failures, *f,
        "runs.json records the failures"
    );
    // Writes resumed once the disk had room: the file kept growing, and every line is whole.
    let console = o.pack.join("logs/ContainerAppConsoleLogs_CL.ndjson");
    assert!(
        lines(&console) > lines_when_full,
        "rows after the disk was freed are kept"
    );
    for (i, l) in std::fs::read_to_string(&console)
        .unwrap()
        .lines()
        .enumerate()
    {
        assert!(
            serde_json::from_str::<serde_json::Value>(l).is_ok(),
            "line {} is torn: {l:?}",
            i + 1
        );
    }
    let v = runner::verify::verify(&o.pack).unwrap();
    assert!(v.ok(), "the manifest verifies for what was written: {v:?}");
}
