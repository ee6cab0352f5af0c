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
//! One query answers at most 500,000 records (and a bounded number of bytes); past a limit the
//! API still answers 200 OK, with the rows it got to and an `error` of code `PartialError`. So
//! the rows are queried in time slices of the window, as many as the settled counts call for
//! at [`ROWS_PER_QUERY`] each, and a slice whose answer carries an error is queried again as two
//! halves, down to one millisecond; a millisecond still truncated fails the pull. Nothing is
//! written from a truncated answer: a long run's logs arrive whole or not at all.
//!
//! Every row is scrubbed ([`crate::scrub`]) before it is written: the files go into evidence
//! packs, which must not carry subscription ids, tenant ids, e-mail addresses or client IPs.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use arm::{IdentityEnv, TokenSource, TokenSourceKind};
use chrono::{DateTime, SubsecRound, Utc};
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
/// Rows per query a pull aims for: well under the query API's 500,000-record limit, so that
/// rows spread unevenly over a window's slices still fit (a slice that does not is halved).
pub const ROWS_PER_QUERY: u64 = 200_000;

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
    window: Slice,
}

/// A span of `TimeGenerated` on whole milliseconds (the precision of the query's literals):
/// `[from, to)`, or `[from, to]` for the window's last slice, so that slices never overlap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slice {
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    closed: bool,
}

impl Slice {
    /// The KQL condition selecting the slice's rows.
    fn condition(&self) -> String {
        format!(
            "TimeGenerated >= datetime({}) and TimeGenerated {} datetime({})",
            iso(self.from),
            if self.closed { "<=" } else { "<" },
            iso(self.to)
        )
    }

    /// `n` consecutive slices covering this one (fewer when it is too short to give `n`).
    fn split(self, n: u64) -> Vec<Slice> {
        let ms = (self.to - self.from).num_milliseconds().max(0);
        let n = i64::try_from(n).unwrap_or(i64::MAX).clamp(1, ms.max(1));
        let at = |k: i64| self.from + chrono::Duration::milliseconds(ms * k / n);
        (0..n)
            .map(|k| Slice {
                from: at(k),
                to: at(k + 1),
                closed: self.closed && k == n - 1,
            })
            .collect()
    }
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
        let q = format!("{table} | where {} | count", self.window.condition());
        let Some(body) = self.run(table, &q).await? else {
            return Ok(0);
        };
        if let Some(e) = partial_error(&body) {
            return Err(RunError::Config(format!(
                "Log Analytics count for {table}: {e}"
            )));
        }
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

    /// Every row of `table` in the window, oldest first, scrubbed: in slices of about
    /// [`ROWS_PER_QUERY`] rows for the `expected` count, halving any slice whose answer was
    /// truncated (see the module docs).
    async fn rows(
        &self,
        table: &str,
        expected: u64,
        scrubber: &Scrubber,
    ) -> Result<Vec<String>, RunError> {
        let mut todo: VecDeque<Slice> = self.window.split(expected.div_ceil(ROWS_PER_QUERY)).into();
        let slices = todo.len();
        let mut lines = Vec::new();
        let mut queried = 0;
        while let Some(slice) = todo.pop_front() {
            let query = format!(
                "{table} | where {} | order by TimeGenerated asc",
                slice.condition()
            );
            let Some(body) = self.run(table, &query).await? else {
                continue;
            };
            if let Some(e) = partial_error(&body) {
                let halves = slice.split(2);
                if halves.len() < 2 {
                    return Err(RunError::Config(format!(
                        "Log Analytics truncated the rows of {table} even for the millisecond \
                         at {}: {e}",
                        iso(slice.from)
                    )));
                }
                progress(&format!(
                    "{table}: the answer for {} .. {} was truncated ({e}): querying it as two \
                     halves",
                    iso(slice.from),
                    iso(slice.to)
                ));
                todo.push_front(halves[1]);
                todo.push_front(halves[0]);
                continue;
            }
            lines.extend(rows_to_ndjson(&body, scrubber));
            queried += 1;
            if slices > 1 {
                progress(&format!(
                    "{table}: {} rows, {queried} slices queried, {} to go",
                    lines.len(),
                    todo.len()
                ));
            }
        }
        Ok(lines)
    }
}

/// The message of an answer that came with an error (a `PartialError`: some rows are missing).
fn partial_error(body: &Value) -> Option<String> {
    let e = body.get("error").filter(|e| !e.is_null())?;
    let code = e["code"].as_str().unwrap_or("error");
    let mut msg = e["message"].as_str().unwrap_or_default().to_owned();
    // The cause (a record count or size limit) is in the details' inner errors.
    for d in e["details"].as_array().into_iter().flatten() {
        if let Some(m) = d["innererror"]["message"]
            .as_str()
            .or(d["message"].as_str())
        {
            msg.push_str(": ");
            msg.push_str(m);
        }
    }
    Some(format!("{code}: {msg}"))
}

fn describe(counts: &[u64]) -> String {
    TABLES
        .iter()
        .zip(counts)
        .map(|(t, n)| format!("{t} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Waits until the row counts have not grown for `o.settle` (see the module docs); returns the
/// last counts.
async fn settle(q: &Query, o: &PullOptions) -> Result<Vec<u64>, RunError> {
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
            last = Some(counts.clone());
            changed = now;
        } else if any && now - changed >= o.settle {
            progress(&format!(
                "counts unchanged for {:.0} s: {}",
                (now - changed).as_secs_f64(),
                describe(&counts)
            ));
            return Ok(counts);
        }
        if now >= deadline {
            progress(&format!(
                "still {} after {:.0} s (--settle-timeout): pulling what has arrived; later rows \
                 are missing, pull again to complete the pack",
                if any { "growing" } else { "empty" },
                (now - started).as_secs_f64()
            ));
            return Ok(counts);
        }
        tokio::time::sleep(poll.min(deadline - now)).await;
    }
}

/// Whether the workspace answers a query (with its token): the count of the console table over
/// the last second. A table that does not exist yet is an answer; an unknown workspace, a
/// refused token or an unreachable endpoint is the error.
pub async fn check_workspace(o: &PullOptions) -> Result<(), RunError> {
    let until = Utc::now().trunc_subsecs(3);
    let q = query(o, until - chrono::Duration::seconds(1), until)?;
    q.count(TABLES[0]).await.map(|_| ())
}

/// The query endpoint of `o`'s workspace for the window `[since, until]`.
fn query(o: &PullOptions, since: DateTime<Utc>, until: DateTime<Utc>) -> Result<Query, RunError> {
    let endpoint = url::Url::parse(&o.endpoint)
        .map_err(|e| RunError::Config(format!("Log Analytics endpoint {}: {e}", o.endpoint)))?;
    let token = TokenSource::build(o.token, &IdentityEnv::from_process(), &endpoint, SCOPE)?;
    let http = arm::tls::client_builder()
        .timeout(Duration::from_secs(300))
        .build()
        .map_err(|e| RunError::Config(format!("cannot build the HTTP client: {e}")))?;
    let url = endpoint
        .join(&format!("v1/workspaces/{}/query", o.workspace))
        .map_err(|e| RunError::Config(format!("workspace id {}: {e}", o.workspace)))?;
    Ok(Query {
        http,
        url,
        token,
        timespan: format!("{}/{}", iso(since), iso(until)),
        window: Slice {
            from: since,
            to: until,
            closed: true,
        },
    })
}

/// Pulls both tables, scrubbed; returns the number of rows written.
pub async fn pull(o: &PullOptions) -> Result<usize, RunError> {
    // Fixed now: late rows are selected by when they were printed, not when they arrived.
    let since = o.since.trunc_subsecs(3);
    let until = o.until.unwrap_or_else(Utc::now).trunc_subsecs(3);
    let q = query(o, since, until)?;
    // Without settling the counts are unknown: one slice, halved if the answer is truncated.
    let counts = if o.settle.is_zero() {
        vec![0; TABLES.len()]
    } else {
        settle(&q, o).await?
    };
    let scrubber = Scrubber::new(o.subscription_id.as_deref(), o.tenant_id.as_deref());
    let mut total = 0;
    for (table, expected) in TABLES.into_iter().zip(counts) {
        let lines = q.rows(table, expected, &scrubber).await?;
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
        use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
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
            /// Row `i` was printed at 14:00:00 plus `i` times this [100 ms].
            pub ms_per_row: AtomicU64,
            /// Rows one answer holds at most, as the query API's record limit [none]; past it
            /// the answer is cut and carries a `PartialError`.
            pub row_limit: AtomicUsize,
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

        fn printed(ms_per_row: u64, i: usize) -> chrono::DateTime<chrono::Utc> {
            let t0: chrono::DateTime<chrono::Utc> = "2026-11-30T14:00:00Z".parse().unwrap();
            t0 + chrono::Duration::milliseconds((ms_per_row * i as u64) as i64)
        }

        /// The `TimeGenerated` span a query selects: (from, to, to included), from its first
        /// two `datetime(...)` literals.
        fn span(
            q: &str,
        ) -> (
            chrono::DateTime<chrono::Utc>,
            chrono::DateTime<chrono::Utc>,
            bool,
        ) {
            let lits: Vec<chrono::DateTime<chrono::Utc>> = q
                .split("datetime(")
                .skip(1)
                .map(|p| p.split(')').next().unwrap().parse().unwrap())
                .collect();
            let closed = q.contains("<= datetime(");
            (lits[0], lits[1], closed)
        }

        fn row(table: &str, i: usize, ms_per_row: u64) -> Value {
            json!([
                crate::pack::iso(printed(ms_per_row, i)),
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
            let ms = f.ms_per_row.load(Ordering::SeqCst);
            let (from, to, closed) = span(&q);
            let selected: Vec<usize> = (0..f.visible(&table))
                .filter(|i| {
                    let t = printed(ms, *i);
                    t >= from && (t < to || (closed && t == to))
                })
                .collect();
            if q.ends_with("| count") {
                return Json(json!({"tables": [{"name": "PrimaryResult",
                    "columns": [{"name": "Count", "type": "long"}], "rows": [[selected.len()]]}]}));
            }
            let limit = f.row_limit.load(Ordering::SeqCst);
            let rows: Vec<Value> = selected
                .iter()
                .take(limit)
                .map(|i| row(&table, *i, ms))
                .collect();
            let error = (selected.len() > limit).then(|| {
                json!({"code": "PartialError",
                    "message": "There were some errors when processing your query.",
                    "details": [{"code": "EngineError", "message": "Something went wrong processing your query on the server.",
                        "innererror": {"code": "-2133196797", "message": format!("Query result set has exceeded the internal record count limit {limit} records")}}]})
            });
            let mut body = json!({"tables": [{"name": "PrimaryResult", "columns": [
                {"name": "TimeGenerated", "type": "datetime"},
                {"name": "ContainerAppName_s", "type": "string"},
                {"name": "RevisionName_s", "type": "string"},
                {"name": "Log_s", "type": "string"},
                {"name": "_ResourceId", "type": "string"},
                {"name": "TenantId", "type": "string"}], "rows": rows}]});
            if let Some(e) = error {
                body["error"] = e;
            }
            Json(body)
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
                ms_per_row: AtomicU64::new(100),
                row_limit: AtomicUsize::new(usize::MAX),
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

    #[test]
    fn slices_cover_the_window_once_on_whole_milliseconds() {
        let from: DateTime<Utc> = "2026-11-30T14:00:00Z".parse().unwrap();
        let window = Slice {
            from,
            to: from + chrono::Duration::milliseconds(1001),
            closed: true,
        };
        let parts = window.split(3);
        assert_eq!(parts.len(), 3);
        assert_eq!((parts[0].from, parts[2].to), (window.from, window.to));
        for w in parts.windows(2) {
            assert_eq!(w[0].to, w[1].from, "contiguous");
            assert!(!w[0].closed, "only the last slice holds its end");
        }
        assert!(parts[2].closed);
        assert!(
            parts
                .iter()
                .all(|p| p.from.timestamp_subsec_nanos() % 1_000_000 == 0)
        );
        assert!(
            parts[1]
                .condition()
                .contains("< datetime(2026-11-30T14:00:00.667Z)")
        );
        // A millisecond cannot be halved; asking for no slice still gives one.
        let ms = Slice {
            from,
            to: from + chrono::Duration::milliseconds(1),
            closed: false,
        };
        assert_eq!(ms.split(2), vec![ms]);
        assert_eq!(window.split(0).len(), 1);
    }

    #[tokio::test]
    async fn a_window_past_the_record_limit_is_pulled_in_halves_with_no_row_lost_or_repeated() {
        // 2,500 console rows, one every second; the API answers at most 1,000 rows a query.
        let (url, f) = fake::start(&[0; 2500], &[0], None).await;
        f.ms_per_row
            .store(1000, std::sync::atomic::Ordering::SeqCst);
        f.row_limit.store(1000, std::sync::atomic::Ordering::SeqCst);
        let dir = tempfile::tempdir().unwrap();
        let n = pull(&options(url, dir.path(), 200, 20_000)).await.unwrap();
        assert_eq!(n, 2501);
        let console = read_lines(dir.path(), TABLES[0]);
        let seqs: Vec<u64> = console
            .iter()
            .map(|l| {
                let row: Value = serde_json::from_str(l).unwrap();
                let log: Value = serde_json::from_str(row["Log_s"].as_str().unwrap()).unwrap();
                log["seq"].as_u64().unwrap()
            })
            .collect();
        assert_eq!(
            seqs,
            (0..2500).collect::<Vec<u64>>(),
            "every row once, in order"
        );
        let queries = f.queries.lock().unwrap().clone();
        let rows_queries = queries.iter().filter(|q| !q.ends_with("| count")).count();
        assert!(
            rows_queries > 4,
            "truncated slices were halved: {rows_queries} queries"
        );
    }

    #[tokio::test]
    async fn rows_truncated_within_one_millisecond_fail_the_pull_instead_of_going_missing() {
        let (url, f) = fake::start(&[0; 50], &[0], None).await;
        f.ms_per_row.store(0, std::sync::atomic::Ordering::SeqCst);
        f.row_limit.store(10, std::sync::atomic::Ordering::SeqCst);
        let dir = tempfile::tempdir().unwrap();
        let err = pull(&options(url, dir.path(), 0, 20_000))
            .await
            .unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("truncated") && msg.contains("record count limit 10"),
            "{msg}"
        );
        assert!(
            !dir.path().join(format!("{}.ndjson", TABLES[0])).exists(),
            "no partial file"
        );
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
