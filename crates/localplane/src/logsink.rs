//! The log sink: container output and platform events as Log Analytics rows.
//!
//! Every container stdout/stderr line becomes a `ContainerAppConsoleLogs_CL` row and every
//! platform event a `ContainerAppSystemLogs_CL` row, appended as NDJSON to
//! `<evidence>/logs/ContainerAppConsoleLogs_CL.ndjson` and
//! `<evidence>/logs/ContainerAppSystemLogs_CL.ndjson`. One writer task owns both files; rows
//! arriving together are sorted by `TimeGenerated` before they are written, and a row is never
//! stamped earlier than the last one written to its file, so each file is in time order.
//!
//! A failed write (a full disk, a lost file) is never only a warning: the file is cut back to
//! its last whole line and the loss is kept in [`Failures`] (file, first error, when, rows lost),
//! which `lab run` records in `runs.json` as `log_write_failures` (the analysis then judges the
//! pack `invalid`) and `labctl local up` reports with a non-zero exit.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use logline::Timestamp;
use serde_json::{Value, json};
use tokio::sync::mpsc;

pub const CONSOLE_TABLE: &str = "ContainerAppConsoleLogs_CL";
pub const SYSTEM_TABLE: &str = "ContainerAppSystemLogs_CL";

/// Who a row is about: an app's replica or a job execution's replica.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    App { app: String, revision: String },
    Job { job: String, execution: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Normal,
    Warning,
}

#[derive(Debug)]
pub enum Row {
    Console {
        ts: Timestamp,
        owner: Owner,
        replica: String,
        container: String,
        stream: &'static str,
        log: String,
    },
    System {
        ts: Timestamp,
        owner: Owner,
        replica: String,
        reason: String,
        log: String,
        level: Level,
    },
}

impl Row {
    fn ts(&self) -> Timestamp {
        match self {
            Row::Console { ts, .. } | Row::System { ts, .. } => *ts,
        }
    }

    pub fn to_json(&self) -> Value {
        fn owner_cols(o: &Owner, m: &mut serde_json::Map<String, Value>) {
            match o {
                Owner::App { app, revision } => {
                    m.insert("ContainerAppName_s".into(), json!(app));
                    m.insert("RevisionName_s".into(), json!(revision));
                }
                Owner::Job { job, execution } => {
                    m.insert("JobName_s".into(), json!(job));
                    m.insert("ContainerAppName_s".into(), json!(job));
                    m.insert("ExecutionName_s".into(), json!(execution));
                    m.insert("RevisionName_s".into(), json!(""));
                }
            }
        }
        let mut m = serde_json::Map::new();
        match self {
            Row::Console {
                ts,
                owner,
                replica,
                container,
                stream,
                log,
            } => {
                m.insert("TimeGenerated".into(), json!(ts.to_rfc3339_ms()));
                owner_cols(owner, &mut m);
                m.insert("ContainerGroupName_s".into(), json!(replica));
                m.insert("ContainerName_s".into(), json!(container));
                m.insert("Stream_s".into(), json!(stream));
                m.insert("Log_s".into(), json!(log));
                m.insert("Type".into(), json!(CONSOLE_TABLE));
            }
            Row::System {
                ts,
                owner,
                replica,
                reason,
                log,
                level,
            } => {
                m.insert("TimeGenerated".into(), json!(ts.to_rfc3339_ms()));
                owner_cols(owner, &mut m);
                m.insert("ReplicaName_s".into(), json!(replica));
                m.insert("Reason_s".into(), json!(reason));
                m.insert("Log_s".into(), json!(log));
                m.insert(
                    "Type_s".into(),
                    json!(match level {
                        Level::Normal => "Normal",
                        Level::Warning => "Warning",
                    }),
                );
                m.insert("EventSource_s".into(), json!("ContainerAppController"));
                m.insert("Type".into(), json!(SYSTEM_TABLE));
            }
        }
        Value::Object(m)
    }
}

/// A log file write that failed: which file, the first error, when, and how many rows were lost
/// (every row of every batch whose write failed; the sink keeps trying with the next batch, so
/// rows after a transient failure, e.g. a disk that was full for a while, are still written).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteFailure {
    pub file: PathBuf,
    pub error: String,
    pub first_failed: Timestamp,
    pub rows_lost: u64,
}

/// The sink's write failures, one entry per file (shared: readable after the sink ended).
#[derive(Clone, Debug, Default)]
pub struct Failures(Arc<Mutex<Vec<WriteFailure>>>);

impl Failures {
    /// What failed so far, in the order files first failed.
    pub fn snapshot(&self) -> Vec<WriteFailure> {
        match self.0.lock() {
            Ok(v) => v.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    fn record(&self, file: &Path, error: &std::io::Error, rows: u64) {
        let mut v = match self.0.lock() {
            Ok(v) => v,
            Err(p) => p.into_inner(),
        };
        match v.iter_mut().find(|f| f.file == file) {
            Some(f) => f.rows_lost += rows,
            None => {
                tracing::error!(file = %file.display(), error = %error, rows, "log sink write failed: rows lost");
                v.push(WriteFailure {
                    file: file.to_path_buf(),
                    error: error.to_string(),
                    first_failed: Timestamp::now(),
                    rows_lost: rows,
                });
            }
        }
    }
}

/// A cheap handle to the sink; clone it into every task that logs.
#[derive(Clone, Debug)]
pub struct Sink {
    tx: mpsc::UnboundedSender<Row>,
    failures: Failures,
}

impl Sink {
    pub fn console(
        &self,
        owner: &Owner,
        replica: &str,
        container: &str,
        stream: &'static str,
        log: String,
    ) {
        let _ = self.tx.send(Row::Console {
            ts: Timestamp::now(),
            owner: owner.clone(),
            replica: replica.to_string(),
            container: container.to_string(),
            stream,
            log,
        });
    }

    pub fn system(&self, owner: &Owner, replica: &str, reason: &str, level: Level, log: String) {
        tracing::debug!(reason, replica, %log, "system event");
        let _ = self.tx.send(Row::System {
            ts: Timestamp::now(),
            owner: owner.clone(),
            replica: replica.to_string(),
            reason: reason.to_string(),
            log,
            level,
        });
    }

    /// The write failures of this sink's files (empty while every write succeeds).
    pub fn failures(&self) -> Failures {
        self.failures.clone()
    }

    /// A sink whose rows go to the returned receiver (for unit tests).
    pub fn channel() -> (Sink, mpsc::UnboundedReceiver<Row>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            Sink {
                tx,
                failures: Failures::default(),
            },
            rx,
        )
    }
}

/// Starts the writer (a blocking-pool thread, so a write error is seen by the write that caused
/// it); it ends when every [`Sink`] clone is dropped, after the last batch.
pub async fn start(
    evidence_dir: &Path,
) -> Result<(Sink, tokio::task::JoinHandle<()>), crate::Error> {
    let dir = evidence_dir.join("logs");
    tokio::fs::create_dir_all(&dir)
        .await
        .map_err(|source| crate::Error::Io {
            path: dir.clone(),
            error: source,
        })?;
    let open = |name: &str| {
        let path = dir.join(format!("{name}.ndjson"));
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map(|f| (f, path.clone()))
            .map_err(|source| crate::Error::Io {
                path,
                error: source,
            })
    };
    let console = open(CONSOLE_TABLE)?;
    let system = open(SYSTEM_TABLE)?;
    let (sink, rx) = Sink::channel();
    let failures = sink.failures();
    let task = tokio::task::spawn_blocking(move || writer(rx, console, system, &failures));
    Ok((sink, task))
}

/// Appends `buf` (`rows` whole lines) to `file`; on error, cuts the file back to its length
/// before the write, so a partial write never leaves a torn line, and records the loss.
fn append(file: &mut (std::fs::File, PathBuf), buf: &[u8], rows: u64, failures: &Failures) {
    let (f, path) = file;
    let before = f.metadata().map(|m| m.len()).ok();
    if let Err(e) = f.write_all(buf) {
        if let Some(len) = before {
            let _ = f.set_len(len);
        }
        failures.record(path, &e, rows);
    }
}

fn writer(
    mut rx: mpsc::UnboundedReceiver<Row>,
    mut console: (std::fs::File, PathBuf),
    mut system: (std::fs::File, PathBuf),
    failures: &Failures,
) {
    let mut batch = Vec::with_capacity(256);
    let mut last_console: Option<Timestamp> = None;
    let mut last_system: Option<Timestamp> = None;
    loop {
        batch.clear();
        let Some(first) = rx.blocking_recv() else {
            break;
        };
        batch.push(first);
        while batch.len() < 1024 {
            match rx.try_recv() {
                Ok(r) => batch.push(r),
                Err(_) => break,
            }
        }
        batch.sort_by_key(Row::ts);
        let mut cbuf = (Vec::new(), 0u64);
        let mut sbuf = (Vec::new(), 0u64);
        for row in batch.drain(..) {
            let (buf, last) = match row {
                Row::Console { .. } => (&mut cbuf, &mut last_console),
                Row::System { .. } => (&mut sbuf, &mut last_system),
            };
            let mut row = row;
            if let Some(l) = *last
                && row.ts() < l
            {
                match &mut row {
                    Row::Console { ts, .. } | Row::System { ts, .. } => *ts = l,
                }
            }
            *last = Some(row.ts());
            // Serialising a `Value` into a Vec cannot fail (no I/O, string keys only).
            if serde_json::to_writer(&mut buf.0, &row.to_json()).is_ok() {
                buf.0.push(b'\n');
                buf.1 += 1;
            }
        }
        for (file, (buf, rows)) in [(&mut console, cbuf), (&mut system, sbuf)] {
            if !buf.is_empty() {
                append(file, &buf, rows, failures);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_row_columns() {
        let row = Row::System {
            ts: Timestamp::from_epoch_ms(0),
            owner: Owner::App {
                app: "a".into(),
                revision: "a--r1".into(),
            },
            replica: "a--r1-x".into(),
            reason: "ProbeFailed".into(),
            log: "Probe of Readiness failed with status code: 503".into(),
            level: Level::Warning,
        };
        let v = row.to_json();
        assert_eq!(v["TimeGenerated"], "1970-01-01T00:00:00.000Z");
        assert_eq!(v["ContainerAppName_s"], "a");
        assert_eq!(v["RevisionName_s"], "a--r1");
        assert_eq!(v["ReplicaName_s"], "a--r1-x");
        assert_eq!(v["Reason_s"], "ProbeFailed");
        assert_eq!(v["Type_s"], "Warning");
        assert!(v["EventSource_s"].is_string());
    }

    #[tokio::test]
    async fn writer_appends_in_time_order() {
        let dir = tempfile::tempdir().unwrap();
        let (sink, task) = start(dir.path()).await.unwrap();
        let owner = Owner::Job {
            job: "j".into(),
            execution: "j-1".into(),
        };
        for i in 0..50 {
            sink.console(&owner, "r", "c", "stdout", format!("line {i}"));
        }
        drop(sink);
        task.await.unwrap();
        let text =
            std::fs::read_to_string(dir.path().join("logs/ContainerAppConsoleLogs_CL.ndjson"))
                .unwrap();
        let rows: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(rows.len(), 50);
        let ts: Vec<&str> = rows
            .iter()
            .map(|r| r["TimeGenerated"].as_str().unwrap())
            .collect();
        let mut sorted = ts.clone();
        sorted.sort();
        assert_eq!(ts, sorted);
        assert_eq!(rows[0]["JobName_s"], "j");
    }

    /// `/dev/full` fails every write with ENOSPC, as a full disk does: the loss is recorded (file,
    /// error, rows), not only logged.
    #[test]
    fn a_failed_write_is_recorded_with_the_rows_it_lost() {
        let failures = Failures::default();
        let path = PathBuf::from("/dev/full");
        let mut file = (
            std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .unwrap(),
            path.clone(),
        );
        append(&mut file, b"{}\n{}\n", 2, &failures);
        append(&mut file, b"{}\n", 1, &failures);
        let f = failures.snapshot();
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].file, path);
        assert_eq!(f[0].rows_lost, 3);
        assert!(f[0].error.contains("No space left"), "{}", f[0].error);
    }
}
