//! `labctl logs pull`: the two Container Apps log tables from Log Analytics (query API, token for
//! `https://api.loganalytics.io/.default`), written as the same NDJSON files the local sink
//! writes: `<out>/ContainerAppConsoleLogs_CL.ndjson` and `<out>/ContainerAppSystemLogs_CL.ndjson`.
//!
//! Log Analytics ingests a row minutes after the container printed it (typically 20 s to 3 min;
//! docs/FIDELITY.md cites Microsoft), so a pull right after a run would miss the end of it. The
//! window `[since, until]` is fixed when the pull starts (rows are selected by `TimeGenerated`,
//! the time the line was printed, so late rows fall inside it); then, unless `settle` is zero,
//! each table's row count in the window is queried (`| count`) every `settle / 4` (at most 30 s)
//! until no count has grown for `settle`, bounded by `settle_timeout`, and only then are the rows
//! queried, once per table, so nothing is duplicated across re-queries. A window with no row at
//! all is not "settled": the pull waits for the first rows up to `settle_timeout`.
//!
//! Every row is scrubbed ([`crate::scrub`]) before it is written: the files go into evidence
//! packs, which must not carry subscription ids, tenant ids, e-mail addresses or client IPs.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use arm::{IdentityEnv, TokenSource, TokenSourceKind};
use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};
use tokio::time::Instant;

use crate::RunError;
use crate::pack::{iso, write_atomic};
use crate::scrub::Scrubber;

pub const DEFAULT_ENDPOINT: &str = "https://api.loganalytics.io";
pub const SCOPE: &str = "https://api.loganalytics.io/.default";
pub const TABLES: [&str; 2] = ["ContainerAppConsoleLogs_CL", "ContainerAppSystemLogs_CL"];
/// How long the row counts must stay unchanged before the rows are pulled.
pub const DEFAULT_SETTLE: Duration = Duration::from_secs(120);
/// The longest a pull waits for the counts to settle.
pub const DEFAULT_SETTLE_TIMEOUT: Duration = Duration::from_secs(15 * 60);
/// The longest pause between two count queries.
const MAX_POLL: Duration = Duration::from_secs(30);

#[derive(Clone, Debug)]
pub struct PullOptions {
    /// The workspace's customer id (`LOG_ANALYTICS_WORKSPACE_ID`).
    pub workspace: String,
    pub since: DateTime<Utc>,
    /// End of the window [the pull's start].
    pub until: Option<DateTime<Utc>>,
    pub out: PathBuf,
    /// `LOG_ANALYTICS_ENDPOINT` [https://api.loganalytics.io].
    pub endpoint: String,
    /// `ARM_TOKEN_SOURCE` [auto].
    pub token: TokenSourceKind,
    /// Wait until the row counts have not grown for this long [120 s]; zero pulls at once.
    pub settle: Duration,
    /// Give up waiting for the counts to settle after this long [15 min] and pull what is there.
    pub settle_timeout: Duration,
    /// A subscription id to scrub wherever it appears (`SUBSCRIPTION_ID`); ids in resource paths
    /// are scrubbed anyway.
    pub subscription_id: Option<String>,
    /// A tenant id to scrub wherever it appears (`AZURE_TENANT_ID`).
    pub tenant_id: Option<String>,
}

impl PullOptions {
    pub fn new(workspace: String, since: DateTime<Utc>, out: PathBuf) -> PullOptions {
        let env = |k: &str| std::env::var(k).ok().filter(|s| !s.is_empty());
        PullOptions {
            workspace,
            since,
            until: None,
            out,
            endpoint: env("LOG_ANALYTICS_ENDPOINT").unwrap_or_else(|| DEFAULT_ENDPOINT.into()),
            token: TokenSourceKind::from_str(&env("ARM_TOKEN_SOURCE").unwrap_or_default())
                .unwrap_or(TokenSourceKind::Auto),
            settle: DEFAULT_SETTLE,
            settle_timeout: DEFAULT_SETTLE_TIMEOUT,
            subscription_id: env("SUBSCRIPTION_ID"),
            tenant_id: env("AZURE_TENANT_ID"),
        }
    }
}

fn progress(msg: &str) {
    eprintln!("logs pull: {msg}");
}

/// One workspace's query endpoint with its token.
struct Query {
    http: reqwest::Client,
    url: url::Url,
    token: TokenSource,
    timespan: String,
    window: String,
}

impl Query {
    /// The answer to `query`, or `None` when the table does not exist yet (no row ever).
    async fn run(&self, table: &str, query: &str) -> Result<Option<Value>, RunError> {
        let mut req = self.http.post(self.url.clone()).json(&json!({
            "query": query,
            "timespan": self.timespan,
        }));
        if let Some(t) = self.token.token().await? {
            req = req.bearer_auth(t.secret());
        }
        let resp = req
            .send()
            .await
            .map_err(|e| RunError::Config(format!("Log Analytics query for {table}: {e}")))?;
        let status = resp.status();
        let body: Value = resp
            .json()
            .await
            .map_err(|e| RunError::Config(format!("Log Analytics answer for {table}: {e}")))?;
        if status.is_success() {
            return Ok(Some(body));
        }
        if body.to_string().contains("Failed to resolve table") {
            return Ok(None);
        }
        let code = body["error"]["code"].as_str().unwrap_or_default();
        let msg = body["error"]["message"].as_str().unwrap_or_default();
        Err(RunError::Config(format!(
            "Log Analytics query for {table}: HTTP {status} {code}: {msg}"
        )))
    }

    async fn count(&self, table: &str) -> Result<u64, RunError> {
        let q = format!("{table} | where {} | count", self.window);
        let Some(body) = self.run(table, &q).await? else {
            return Ok(0);
        };
        body["tables"][0]["rows"][0][0]
            .as_u64()
            .or_else(|| body["tables"][0]["rows"][0][0].as_str()?.parse().ok())
            .ok_or_else(|| {
                RunError::Config(format!(
                    "Log Analytics count for {table}: no number in {body}"
                ))
            })
    }

    async fn counts(&self) -> Result<Vec<u64>, RunError> {
        let mut v = Vec::with_capacity(TABLES.len());
        for t in TABLES {
            v.push(self.count(t).await?);
        }
        Ok(v)
    }
}

fn describe(counts: &[u64]) -> String {
    TABLES
        .iter()
        .zip(counts)
        .map(|(t, n)| format!("{t} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Waits until the row counts have not grown for `o.settle` (see the module docs).
async fn settle(q: &Query, o: &PullOptions) -> Result<(), RunError> {
    let poll = (o.settle / 4).clamp(Duration::from_millis(100), MAX_POLL);
    let started = Instant::now();
    let deadline = started + o.settle_timeout;
    progress(&format!(
        "waiting for ingestion: rows are pulled once no table has grown for {} s (at most {} s)",
        o.settle.as_secs_f64(),
        o.settle_timeout.as_secs_f64()
    ));
    let mut last: Option<Vec<u64>> = None;
    let mut changed = started;
    loop {
        let counts = q.counts().await?;
        let now = Instant::now();
        let any = counts.iter().any(|n| *n > 0);
        if last.as_ref() != Some(&counts) {
            progress(&format!(
                "{:.0} s: {}{}",
                (now - started).as_secs_f64(),
                describe(&counts),
                if any { "" } else { " (no rows yet)" }
            ));
            last = Some(counts);
            changed = now;
        } else if any && now - changed >= o.settle {
            progress(&format!(
                "counts unchanged for {:.0} s: {}",
                (now - changed).as_secs_f64(),
                describe(&counts)
            ));
            return Ok(());
        }
        if now >= deadline {
            progress(&format!(
                "still {} after {:.0} s (--settle-timeout): pulling what has arrived; later rows \
                 are missing, pull again to complete the pack",
                if any { "growing" } else { "empty" },
                (now - started).as_secs_f64()
            ));
            return Ok(());
        }
        tokio::time::sleep(poll.min(deadline - now)).await;
    }
}

/// Pulls both tables, scrubbed; returns the number of rows written.
pub async fn pull(o: &PullOptions) -> Result<usize, RunError> {
    let endpoint = url::Url::parse(&o.endpoint)
        .map_err(|e| RunError::Config(format!("Log Analytics endpoint {}: {e}", o.endpoint)))?;
    let token = TokenSource::build(o.token, &IdentityEnv::from_process(), &endpoint, SCOPE)?;
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(300))
        .build()
        .map_err(|e| RunError::Config(format!("cannot build the HTTP client: {e}")))?;
    let url = endpoint
        .join(&format!("v1/workspaces/{}/query", o.workspace))
        .map_err(|e| RunError::Config(format!("workspace id {}: {e}", o.workspace)))?;
    // Fixed now: late rows are selected by when they were printed, not when they arrived.
    let until = o.until.unwrap_or_else(Utc::now);
    let q = Query {
        http,
        url,
        token,
        timespan: format!("{}/{}", iso(o.since), iso(until)),
        window: format!(
            "TimeGenerated between (datetime({}) .. datetime({}))",
            iso(o.since),
            iso(until)
        ),
    };
    if !o.settle.is_zero() {
        settle(&q, o).await?;
    }
    let scrubber = Scrubber::new(o.subscription_id.as_deref(), o.tenant_id.as_deref());
    let mut total = 0;
    for table in TABLES {
        let query = format!("{table} | where {} | order by TimeGenerated asc", q.window);
        let lines = match q.run(table, &query).await? {
            Some(body) => rows_to_ndjson(&body, &scrubber),
            None => Vec::new(),
        };
        total += lines.len();
        let mut text = lines.join("\n");
        if !text.is_empty() {
            text.push('\n');
        }
        write_atomic(&o.out.join(format!("{table}.ndjson")), text.as_bytes())?;
    }
    Ok(total)
}

/// The query API's `{"tables":[{"columns":[{"name"}],"rows":[[...]]}]}` as one JSON object per
/// row (the first table; empty values dropped, as Log Analytics exports do), scrubbed.
pub fn rows_to_ndjson(body: &Value, scrubber: &Scrubber) -> Vec<String> {
    let Some(t) = body["tables"].as_array().and_then(|t| t.first()) else {
        return Vec::new();
    };
    let cols: Vec<&str> = t["columns"]
        .as_array()
        .map(|c| c.iter().map(|c| c["name"].as_str().unwrap_or("")).collect())
        .unwrap_or_default();
    t["rows"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .filter_map(|r| r.as_array())
                .map(|r| {
                    let mut m = Map::new();
                    for (c, v) in cols.iter().zip(r) {
                        if !c.is_empty() && !v.is_null() && v != "" {
                            m.insert((*c).to_owned(), v.clone());
                        }
                    }
                    let mut v = Value::Object(m);
                    scrubber.value(&mut v);
                    v.to_string()
                })
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_api_tables_become_row_objects() {
        let body = json!({"tables": [{"name": "PrimaryResult",
            "columns": [{"name": "TimeGenerated", "type": "datetime"}, {"name": "Log_s", "type": "string"}, {"name": "Stream_s", "type": "string"}],
            "rows": [["2026-01-01T00:00:00Z", "{\"kind\":\"bucket\"}", ""], ["2026-01-01T00:00:01Z", "x", "stdout"]]}]});
        let lines = rows_to_ndjson(&body, &Scrubber::default());
        assert_eq!(lines.len(), 2);
        let first: Value = serde_json::from_str(&lines[0]).unwrap();
        assert_eq!(first["Log_s"], "{\"kind\":\"bucket\"}");
        assert!(first.get("Stream_s").is_none());
        assert!(rows_to_ndjson(&json!({}), &Scrubber::default()).is_empty());
    }

    /// A fake Log Analytics query endpoint on 127.0.0.1 whose rows become visible over time,
    /// as ingestion makes them: each row has the instant (after the fake starts) it "arrives".
    mod fake {
        use std::sync::{Arc, Mutex};
        use std::time::{Duration, Instant};

        use axum::extract::State;
        use axum::routing::post;
        use axum::{Json, Router};
        use serde_json::{Value, json};

        pub const SUB: &str = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";

        pub struct Fake {
            start: Instant,
            /// Arrival offsets of the console and system rows.
            console: Vec<Duration>,
            system: Vec<Duration>,
            /// When set, one more console row arrives every this often, forever.
            growing: Option<Duration>,
            pub queries: Mutex<Vec<String>>,
        }

        impl Fake {
            fn visible(&self, table: &str) -> usize {
                let now = self.start.elapsed();
                if let Some(every) = self.growing.filter(|_| table.contains("Console")) {
                    return (now.as_millis() / every.as_millis()) as usize + 1;
                }
                let rows = if table.contains("Console") {
                    &self.console
                } else {
                    &self.system
                };
                rows.iter().filter(|at| **at <= now).count()
            }
        }

        fn row(table: &str, i: usize) -> Value {
            json!([
                format!("2026-11-30T14:00:{:02}.000Z", i % 60),
                "subject",
                "subject--0000001",
                format!(
                    r#"{{"kind":"req","seq":{i},"client":"203.0.113.{}","table":"{table}"}}"#,
                    i % 250
                ),
                format!(
                    "/subscriptions/{SUB}/resourceGroups/rg/providers/Microsoft.App/containerApps/subject"
                ),
                "0b5f1a2e-1111-2222-3333-444455556666",
            ])
        }

        async fn query(State(f): State<Arc<Fake>>, Json(body): Json<Value>) -> Json<Value> {
            let q = body["query"].as_str().unwrap_or_default().to_owned();
            f.queries.lock().unwrap().push(q.clone());
            let table = q.split_whitespace().next().unwrap_or_default().to_owned();
            let n = f.visible(&table);
            if q.ends_with("| count") {
                return Json(json!({"tables": [{"name": "PrimaryResult",
                    "columns": [{"name": "Count", "type": "long"}], "rows": [[n]]}]}));
            }
            let rows: Vec<Value> = (0..n).map(|i| row(&table, i)).collect();
            Json(json!({"tables": [{"name": "PrimaryResult", "columns": [
                {"name": "TimeGenerated", "type": "datetime"},
                {"name": "ContainerAppName_s", "type": "string"},
                {"name": "RevisionName_s", "type": "string"},
                {"name": "Log_s", "type": "string"},
                {"name": "_ResourceId", "type": "string"},
                {"name": "TenantId", "type": "string"}], "rows": rows}]}))
        }

        /// Starts the fake; returns its base URL and state.
        pub async fn start(
            console: &[u64],
            system: &[u64],
            growing: Option<Duration>,
        ) -> (String, Arc<Fake>) {
            let f = Arc::new(Fake {
                start: Instant::now(),
                console: console
                    .iter()
                    .map(|ms| Duration::from_millis(*ms))
                    .collect(),
                system: system.iter().map(|ms| Duration::from_millis(*ms)).collect(),
                growing,
                queries: Mutex::new(Vec::new()),
            });
            let app = Router::new()
                .route("/v1/workspaces/{ws}/query", post(query))
                .with_state(f.clone());
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = l.local_addr().unwrap();
            tokio::spawn(async move { axum::serve(l, app).await });
            (format!("http://{addr}"), f)
        }
    }

    fn options(
        endpoint: String,
        out: &std::path::Path,
        settle_ms: u64,
        timeout_ms: u64,
    ) -> PullOptions {
        PullOptions {
            workspace: "ws-customer-id".into(),
            since: "2026-11-30T14:00:00Z".parse().unwrap(),
            until: Some("2026-11-30T15:00:00Z".parse().unwrap()),
            out: out.to_path_buf(),
            endpoint,
            token: TokenSourceKind::None,
            settle: Duration::from_millis(settle_ms),
            settle_timeout: Duration::from_millis(timeout_ms),
            subscription_id: None,
            tenant_id: None,
        }
    }

    fn read_lines(out: &std::path::Path, table: &str) -> Vec<String> {
        std::fs::read_to_string(out.join(format!("{table}.ndjson")))
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    #[tokio::test]
    async fn a_pull_waits_for_late_rows_and_writes_each_row_once_scrubbed() {
        // Console rows arrive over 1.2 s, system rows over 0.6 s; 1 s of quiet settles.
        let (url, f) = fake::start(&[0, 400, 800, 1200], &[0, 600], None).await;
        let dir = tempfile::tempdir().unwrap();
        let n = pull(&options(url, dir.path(), 1000, 20_000)).await.unwrap();
        assert_eq!(n, 6, "every late row is in");
        let console = read_lines(dir.path(), TABLES[0]);
        assert_eq!(console.len(), 4);
        let unique: std::collections::BTreeSet<&String> = console.iter().collect();
        assert_eq!(unique.len(), 4, "no row twice");
        assert_eq!(read_lines(dir.path(), TABLES[1]).len(), 2);
        // The rows were queried once per table, after the counts settled.
        let queries = f.queries.lock().unwrap().clone();
        let full: Vec<&String> = queries.iter().filter(|q| !q.ends_with("| count")).collect();
        assert_eq!(full.len(), 2, "{queries:#?}");
        assert!(queries.len() > 4, "counted more than once: {queries:#?}");
        assert!(
            queries[queries.len() - 2..]
                .iter()
                .all(|q| !q.ends_with("| count"))
        );
        // Scrubbed; the analysis's join keys intact.
        let text = console.join("\n");
        assert!(!text.contains(fake::SUB), "{text}");
        assert!(!text.contains("203.0.113."), "{text}");
        assert!(!text.contains("0b5f1a2e-1111"), "{text}");
        let row: Value = serde_json::from_str(&console[3]).unwrap();
        assert_eq!(row["RevisionName_s"], "subject--0000001");
        assert_eq!(row["ContainerAppName_s"], "subject");
        let log: Value = serde_json::from_str(row["Log_s"].as_str().unwrap()).unwrap();
        assert_eq!(log["kind"], "req");
        assert_eq!(log["client"], crate::scrub::IP);
    }

    #[tokio::test]
    async fn without_settling_a_pull_right_after_a_run_misses_late_rows() {
        // What `--settle 0` does (and what the settle loop exists for).
        let (url, f) = fake::start(&[0, 1500, 3000], &[0], None).await;
        let dir = tempfile::tempdir().unwrap();
        let n = pull(&options(url, dir.path(), 0, 20_000)).await.unwrap();
        assert!(n < 4, "{n} rows: the late ones cannot be in yet");
        assert!(
            f.queries
                .lock()
                .unwrap()
                .iter()
                .all(|q| !q.ends_with("| count")),
            "no settle: no count query"
        );
    }

    #[tokio::test]
    async fn an_empty_window_is_not_settled_until_rows_arrive() {
        // Nothing for 1 s (ingestion has not started), then rows: a 0.4 s settle must not
        // stop at the zeros.
        let (url, _f) = fake::start(&[1000, 1100], &[1000], None).await;
        let dir = tempfile::tempdir().unwrap();
        let n = pull(&options(url, dir.path(), 400, 20_000)).await.unwrap();
        assert_eq!(n, 3);
    }

    #[tokio::test]
    async fn rows_that_never_stop_growing_are_pulled_at_the_settle_timeout() {
        let (url, _f) = fake::start(&[], &[0], Some(Duration::from_millis(100))).await;
        let dir = tempfile::tempdir().unwrap();
        let started = std::time::Instant::now();
        let n = pull(&options(url, dir.path(), 1000, 1500)).await.unwrap();
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(1500), "{took:?}");
        assert!(
            took < Duration::from_secs(10),
            "bounded by the timeout: {took:?}"
        );
        assert!(n > 10, "{n}: what had arrived is written");
    }
}
