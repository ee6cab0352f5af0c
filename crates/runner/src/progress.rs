//! Progress on stderr: an indicatif bar per step (phase, event n/N, countdown, live error count)
//! when stderr is a terminal; plain lines otherwise. stdout stays free for the verdict.

use std::io::{IsTerminal, Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How progress is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ProgressMode {
    /// Bars on a terminal, plain lines otherwise.
    #[default]
    Auto,
    Plain,
    Quiet,
}

pub struct Progress {
    mode: ProgressMode,
    bar: Option<ProgressBar>,
}

impl Progress {
    pub fn new(mode: ProgressMode) -> Progress {
        let mode = match mode {
            ProgressMode::Auto if std::io::stderr().is_terminal() => ProgressMode::Auto,
            ProgressMode::Auto => ProgressMode::Plain,
            m => m,
        };
        Progress { mode, bar: None }
    }

    /// A line (above the bar on a terminal).
    pub fn line(&self, msg: &str) {
        match (&self.bar, self.mode) {
            (_, ProgressMode::Quiet) => {}
            (Some(b), _) => b.println(msg),
            (None, _) => eprintln!("{msg}"),
        }
    }

    pub fn step_begin(&mut self, idx: usize, total: usize, name: &str, phase: &str, d: Duration) {
        self.line(&format!(
            "[step {idx}/{total}] {name} (phase {phase}), {}s",
            d.as_secs()
        ));
        if self.mode == ProgressMode::Auto {
            let bar = ProgressBar::with_draw_target(
                Some(d.as_secs().max(1)),
                ProgressDrawTarget::stderr(),
            );
            let style =
                ProgressStyle::with_template("{prefix:.bold} [{bar:30}] {pos}/{len}s  {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> ");
            bar.set_style(style);
            bar.set_prefix(format!("{idx}/{total} {name}"));
            self.bar = Some(bar);
        }
    }

    /// Updates the countdown; `events` is (fired, total).
    pub fn tick(&self, elapsed: Duration, left: Duration, events: (u32, u32), errors: u64) {
        let ev = if events.1 > 0 {
            format!("event {}/{}  ", events.0, events.1)
        } else {
            String::new()
        };
        match &self.bar {
            Some(b) => {
                b.set_position(elapsed.as_secs());
                b.set_message(format!("{ev}{}s left  errors {errors}", left.as_secs()));
            }
            None if self.mode == ProgressMode::Plain => {
                eprintln!("  {ev}{}s left, errors so far {errors}", left.as_secs());
            }
            None => {}
        }
    }

    /// True when a bar is shown (updated every second; plain lines are rarer).
    pub fn is_bar(&self) -> bool {
        self.bar.is_some()
    }

    pub fn step_end(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}

/// The error count so far, read incrementally from the console log table the local sink writes
/// (the `err` of every loadgen `bucket` line). Azure has no live logs: it stays at zero there.
pub struct LiveErrors {
    path: PathBuf,
    offset: u64,
    partial: Vec<u8>,
    pub total: u64,
}

impl LiveErrors {
    pub fn new(path: PathBuf) -> LiveErrors {
        LiveErrors {
            path,
            offset: 0,
            partial: Vec::new(),
            total: 0,
        }
    }

    /// Reads what was appended since the last call (at most 64 MiB at a time).
    pub fn poll(&mut self) -> u64 {
        let Ok(mut f) = std::fs::File::open(&self.path) else {
            return self.total;
        };
        if f.seek(SeekFrom::Start(self.offset)).is_err() {
            return self.total;
        }
        let mut buf = Vec::new();
        let n = f.take(64 << 20).read_to_end(&mut buf).unwrap_or_default();
        self.offset += n as u64;
        self.partial.extend_from_slice(&buf);
        let Some(last_nl) = self.partial.iter().rposition(|b| *b == b'\n') else {
            return self.total;
        };
        let rest = self.partial.split_off(last_nl + 1);
        let complete = std::mem::replace(&mut self.partial, rest);
        for line in complete.split(|b| *b == b'\n') {
            self.total += bucket_errors(line);
        }
        self.total
    }
}

/// `err` of a console row whose `Log_s` is a loadgen bucket line, else 0.
pub fn bucket_errors(row: &[u8]) -> u64 {
    const NEEDLE: &[u8] = b"bucket";
    if !row.windows(NEEDLE.len()).any(|w| w == NEEDLE) {
        return 0;
    }
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(row) else {
        return 0;
    };
    let Some(log) = v.get("Log_s").and_then(|l| l.as_str()) else {
        return 0;
    };
    let Ok(line) = serde_json::from_str::<serde_json::Value>(log) else {
        return 0;
    };
    if line.get("kind").and_then(|k| k.as_str()) != Some("bucket") {
        return 0;
    }
    line.get("err").and_then(|e| e.as_u64()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn live_errors_sum_bucket_lines_across_partial_writes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.ndjson");
        let row = |err: u64| {
            let log = serde_json::json!({"kind": "bucket", "err": err, "ok": 5}).to_string();
            serde_json::json!({"Log_s": log, "ContainerAppName_s": "probelab-loadgen"}).to_string()
        };
        let mut f = std::fs::File::create(&p).unwrap();
        let mut live = LiveErrors::new(p.clone());
        assert_eq!(live.poll(), 0);
        let a = format!("{}\n{}", row(2), row(3));
        let (head, tail) = a.split_at(a.len() - 5);
        f.write_all(head.as_bytes()).unwrap();
        assert_eq!(live.poll(), 2, "the partial second row is not counted yet");
        f.write_all(tail.as_bytes()).unwrap();
        f.write_all(b"\n{\"Log_s\":\"{\\\"kind\\\":\\\"meta\\\"}\"}\n")
            .unwrap();
        assert_eq!(live.poll(), 5);
    }
}
