//! The log sink: container output and platform events as Log Analytics rows.
//!
//! Every container stdout/stderr line becomes a `ContainerAppConsoleLogs_CL` row and every
//! platform event a `ContainerAppSystemLogs_CL` row, appended as NDJSON to
//! `<evidence>/logs/ContainerAppConsoleLogs_CL.ndjson` and
//! `<evidence>/logs/ContainerAppSystemLogs_CL.ndjson`. One writer task owns both files; rows
//! arriving together are sorted by `TimeGenerated` before they are written, and a row is never
//! stamped earlier than the last one written to its file, so each file is in time order.

use std::path::{Path, PathBuf};

use labkit::Timestamp;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
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

/// A cheap handle to the sink; clone it into every task that logs.
#[derive(Clone, Debug)]
pub struct Sink {
    tx: mpsc::UnboundedSender<Row>,
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

    /// A sink whose rows go to the returned receiver (for unit tests).
    pub fn channel() -> (Sink, mpsc::UnboundedReceiver<Row>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Sink { tx }, rx)
    }
}

/// Starts the writer task; it ends when every [`Sink`] clone is dropped, after flushing.
pub async fn start(
    evidence_dir: &Path,
) -> Result<(Sink, tokio::task::JoinHandle<()>), crate::Error> {
    let dir = evidence_dir.join("logs");
    tokio::fs::create_dir_all(&dir)
        .await
        .map_err(|source| crate::Error::Io {
            path: dir.clone(),
            source,
        })?;
    let open = |name: &str| {
        let path = dir.join(format!("{name}.ndjson"));
        async move {
            tokio::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .await
                .map_err(|source| crate::Error::Io { path, source })
        }
    };
    let console = open(CONSOLE_TABLE).await?;
    let system = open(SYSTEM_TABLE).await?;
    let (sink, rx) = Sink::channel();
    let task = tokio::spawn(writer(rx, console, system, dir));
    Ok((sink, task))
}

async fn writer(
    mut rx: mpsc::UnboundedReceiver<Row>,
    mut console: tokio::fs::File,
    mut system: tokio::fs::File,
    dir: PathBuf,
) {
    let mut batch = Vec::with_capacity(256);
    let mut last_console: Option<Timestamp> = None;
    let mut last_system: Option<Timestamp> = None;
    loop {
        batch.clear();
        if rx.recv_many(&mut batch, 1024).await == 0 {
            break;
        }
        batch.sort_by_key(Row::ts);
        let mut cbuf = Vec::new();
        let mut sbuf = Vec::new();
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
            if serde_json::to_writer(&mut *buf, &row.to_json()).is_ok() {
                buf.push(b'\n');
            }
        }
        for (file, buf) in [(&mut console, cbuf), (&mut system, sbuf)] {
            if !buf.is_empty()
                && let Err(e) = file.write_all(&buf).await
            {
                tracing::warn!(dir = %dir.display(), error = %e, "log sink write failed");
            }
        }
    }
    let _ = console.flush().await;
    let _ = system.flush().await;
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
}
