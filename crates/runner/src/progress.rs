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

    /// Updates the countdown; `events` is (fired, total); `errors` is the live error count, or
    /// `None` when there is none to show (a step without load, or no local log sink).
    pub fn tick(&self, elapsed: Duration, left: Duration, events: (u32, u32), errors: Option<u64>) {
        match &self.bar {
            Some(b) => {
                b.set_position(elapsed.as_secs());
                b.set_message(countdown_text(left, events, errors, "  errors "));
            }
            None if self.mode == ProgressMode::Plain => {
                eprintln!(
                    "  {}",
                    countdown_text(left, events, errors, ", errors so far ")
                );
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

/// "event 2/3  40s left" and, when there is a live count, `errors_label` and the count.
fn countdown_text(
    left: Duration,
    events: (u32, u32),
    errors: Option<u64>,
    errors_label: &str,
) -> String {
    let mut text = String::new();
    if events.1 > 0 {
        text.push_str(&format!("event {}/{}  ", events.0, events.1));
    }
    text.push_str(&format!("{}s left", left.as_secs()));
    if let Some(n) = errors {
        text.push_str(&format!("{errors_label}{n}"));
    }
    text
}

/// The error count so far, read incrementally from the console log table the local sink writes
/// (the `err` of every loadgen `bucket` line). Azure has no live logs: there is no count.
pub struct LiveErrors {
    path: PathBuf,
    offset: u64,
    partial: Vec<u8>,
    /// Whether the log has been read at all: a count of a log nobody writes is no count.
    seen: bool,
    total: u64,
}

impl LiveErrors {
    pub fn new(path: PathBuf) -> LiveErrors {
        LiveErrors {
            path,
            offset: 0,
            partial: Vec::new(),
            seen: false,
            total: 0,
        }
    }

    /// Reads what was appended since the last call (at most 64 MiB at a time) and returns the
    /// count so far; `None` while the log does not exist (no local sink, or nothing written yet).
    pub fn poll(&mut self) -> Option<u64> {
        let Ok(mut f) = std::fs::File::open(&self.path) else {
            return self.seen.then_some(self.total);
        };
        self.seen = true;
        if f.seek(SeekFrom::Start(self.offset)).is_err() {
            return Some(self.total);
        }
        let mut buf = Vec::new();
        let n = f.take(64 << 20).read_to_end(&mut buf).unwrap_or_default();
        self.offset += n as u64;
        self.partial.extend_from_slice(&buf);
        let Some(last_nl) = self.partial.iter().rposition(|b| *b == b'\n') else {
            return Some(self.total);
        };
        let rest = self.partial.split_off(last_nl + 1);
        let complete = std::mem::replace(&mut self.partial, rest);
        for line in complete.split(|b| *b == b'\n') {
            self.total += bucket_errors(line);
        }
        Some(self.total)
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
        let mut live = LiveErrors::new(p.clone());
        assert_eq!(live.poll(), None, "no log yet: no count");
        let mut f = std::fs::File::create(&p).unwrap();
        assert_eq!(live.poll(), Some(0));
        let a = format!("{}\n{}", row(2), row(3));
        let (head, tail) = a.split_at(a.len() - 5);
        f.write_all(head.as_bytes()).unwrap();
        assert_eq!(
            live.poll(),
            Some(2),
            "the partial second row is not counted yet"
        );
        f.write_all(tail.as_bytes()).unwrap();
        f.write_all(b"\n{\"Log_s\":\"{\\\"kind\\\":\\\"meta\\\"}\"}\n")
            .unwrap();
        assert_eq!(live.poll(), Some(5));
    }

    #[test]
    fn the_countdown_shows_an_error_count_only_when_there_is_one() {
        let left = Duration::from_secs(40);
        assert_eq!(
            countdown_text(left, (1, 3), Some(7), ", errors so far "),
            "event 1/3  40s left, errors so far 7"
        );
        assert_eq!(
            countdown_text(left, (0, 0), Some(0), "  errors "),
            "40s left  errors 0"
        );
        // A job lab's step (no load) or a run on Azure (no live logs): no "errors so far 0".
        assert_eq!(
            countdown_text(left, (0, 2), None, ", errors so far "),
            "event 0/2  40s left"
        );
    }
}
