//! A stand-in for the Log Analytics query API, serving the rows localplane's log sink writes
//! (`<logs>/ContainerAppConsoleLogs_CL.ndjson`, `<logs>/ContainerAppSystemLogs_CL.ndjson`) as
//! the workspace of a Container Apps environment would serve them:
//!
//! - `POST /v1/workspaces/{workspaceId}/query` with `{"query", "timespan"}` and a bearer token,
//!   answering `{"tables":[{"name":"PrimaryResult","columns":[{"name","type"}],"rows":[[..]]}]}`
//!   (azure-rest-api-specs, specification/operationalinsights/data-plane/
//!   Microsoft.OperationalInsights/stable/v1/OperationalInsights.json: `Query_Execute`,
//!   `queryResults`, `errorResponse`; host `api.loganalytics.io`, base path `/v1`);
//! - **ingestion delay**: a row becomes visible [`Config::ingestion_delay`] after the sink wrote
//!   it (the stand-in reads the files every 100 ms; Microsoft documents 20 s to 3 min, "Log data
//!   ingestion time in Azure Monitor");
//! - **a record limit**: an answer holds at most [`Config::row_limit`] rows; past it the answer
//!   is 200 OK with the rows it got to and an `error` of code `PartialError` (the service's
//!   behaviour at its 500,000-record limit, "Query limits" in "Azure Monitor service limits");
//! - **the columns Azure adds**: `TenantId` (the workspace's id), `_ResourceId` (the app's or
//!   job's resource id, with the subscription in it, lower-cased as the service stores it);
//!   and a client address inside each JSON console line (`"peer": "203.0.113.N:PORT"`, as an
//!   app's access log carries one), so that scrubbing has something to scrub;
//! - errors in the spec's `errorResponse` shape: 401 without a token, 403 with another token,
//!   404 for another workspace id, 400 `SemanticError` for a table with no row yet ("Failed to
//!   resolve table or column expression named ..."), 400 `BadArgumentError` for a query
//!   outside the subset below.
//!
//! The KQL it understands is the subset `labctl logs pull` sends, nothing more:
//! `<Table> | where TimeGenerated >= datetime(A) and TimeGenerated <(=) datetime(B)` followed by
//! `| count` or `| order by TimeGenerated asc`.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Map, Value, json};

pub const TABLES: [&str; 2] = ["ContainerAppConsoleLogs_CL", "ContainerAppSystemLogs_CL"];

/// What the workspace serves.
#[derive(Clone, Debug)]
pub struct Config {
    /// The workspace's customer id (`LOG_ANALYTICS_WORKSPACE_ID`).
    pub workspace: String,
    /// The bearer token a query must carry (`None`: any request is answered, for tests of the
    /// query logic alone).
    pub token: Option<String>,
    /// Where the sink's `*.ndjson` files are.
    pub logs_dir: PathBuf,
    pub ingestion_delay: Duration,
    pub row_limit: usize,
    /// The `TenantId` column's value.
    pub tenant_id: String,
    /// For `_ResourceId`.
    pub subscription_id: String,
    pub resource_group: String,
}

/// One query the stand-in answered.
#[derive(Clone, Debug)]
pub struct Answered {
    pub query: String,
    pub status: u16,
    /// Rows in the answer (the count, for a `| count`).
    pub rows: usize,
    /// The answer was cut at the row limit (`PartialError`).
    pub partial: bool,
    pub at: Instant,
}

struct Ingested {
    /// When the row becomes visible.
    visible_at: Instant,
    time_generated: String,
    row: Map<String, Value>,
}

#[derive(Default)]
struct Table {
    read: usize,
    rows: Vec<Ingested>,
}

struct StandIn {
    cfg: Config,
    tables: Mutex<[Table; 2]>,
    answered: Mutex<Vec<Answered>>,
}

/// The running stand-in; stops when dropped.
pub struct LogAnalytics {
    addr: SocketAddr,
    state: Arc<StandIn>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for LogAnalytics {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl LogAnalytics {
    /// Starts on 127.0.0.1 (a free port).
    pub async fn start(cfg: Config) -> std::io::Result<LogAnalytics> {
        let state = Arc::new(StandIn {
            cfg,
            tables: Mutex::new(Default::default()),
            answered: Mutex::default(),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let app = Router::new()
            .route("/v1/workspaces/{workspace}/query", post(query))
            .with_state(state.clone());
        let serve = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        let s = state.clone();
        let ingest = tokio::spawn(async move {
            loop {
                s.ingest();
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        Ok(LogAnalytics {
            addr,
            state,
            tasks: vec![serve, ingest],
        })
    }

    /// `http://127.0.0.1:PORT` (for `LOG_ANALYTICS_ENDPOINT`; put an [`crate::https_front`]
    /// before it for HTTPS).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every query answered so far, in order.
    pub fn answered(&self) -> Vec<Answered> {
        lock(&self.state.answered).clone()
    }

    /// Rows written at or before `until` (RFC 3339, as `TimeGenerated`) that were not visible
    /// yet when the first query of a window ending at `until` arrived: what a pull of that
    /// window that did not wait for ingestion would have missed. 0 without such a query.
    pub fn late_for_first_query(&self, until: &str) -> usize {
        let needle = format!("<= datetime({until})");
        let Some(first) = lock(&self.state.answered)
            .iter()
            .find(|a| a.query.contains(&needle))
            .map(|a| a.at)
        else {
            return 0;
        };
        self.state.ingest();
        let until = norm_ts(until);
        lock(&self.state.tables)
            .iter()
            .flat_map(|t| &t.rows)
            .filter(|r| r.visible_at > first && norm_ts(&r.time_generated) <= until)
            .count()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl StandIn {
    /// Reads the whole lines the sink appended since the last call.
    fn ingest(&self) {
        let now = Instant::now();
        let mut tables = lock(&self.tables);
        for (t, name) in tables.iter_mut().zip(TABLES) {
            let Ok(text) =
                std::fs::read_to_string(self.cfg.logs_dir.join(format!("{name}.ndjson")))
            else {
                continue;
            };
            let Some(end) = text.rfind('\n').map(|i| i + 1) else {
                continue;
            };
            if end <= t.read {
                continue;
            }
            for line in text[t.read..end].lines() {
                let Ok(Value::Object(row)) = serde_json::from_str::<Value>(line) else {
                    continue;
                };
                let time_generated = row
                    .get("TimeGenerated")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                t.rows.push(Ingested {
                    visible_at: now + self.cfg.ingestion_delay,
                    time_generated,
                    row: self.with_azure_columns(row, t.rows.len()),
                });
            }
            t.read = end;
        }
    }

    /// The row as the workspace stores it: `TenantId`, `_ResourceId`, a client address inside
    /// a JSON console line.
    fn with_azure_columns(&self, mut row: Map<String, Value>, n: usize) -> Map<String, Value> {
        let c = &self.cfg;
        let (kind, name) = match row.get("JobName_s").and_then(Value::as_str) {
            Some(job) if !job.is_empty() => ("jobs", job.to_owned()),
            _ => (
                "containerapps",
                row.get("ContainerAppName_s")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            ),
        };
        let resource = format!(
            "/subscriptions/{}/resourceGroups/{}/providers/Microsoft.App/{kind}/{name}",
            c.subscription_id, c.resource_group
        )
        .to_ascii_lowercase();
        row.insert("TenantId".into(), json!(c.tenant_id));
        row.insert("_ResourceId".into(), json!(resource));
        if row.get("Type").and_then(Value::as_str) == Some(TABLES[0])
            && let Some(Value::String(log)) = row.get_mut("Log_s")
            && let Ok(Value::Object(mut line)) = serde_json::from_str::<Value>(log)
        {
            line.insert(
                "peer".into(),
                json!(format!("203.0.113.{}:{}", n % 250 + 1, 40000 + n % 20000)),
            );
            *log = Value::Object(line).to_string();
        }
        row
    }
}

fn error(status: StatusCode, code: &str, message: &str, inner: Option<Value>) -> Response {
    let mut e = json!({"code": code, "message": message});
    if let Some(i) = inner {
        e["innererror"] = i;
    }
    (status, axum::Json(json!({ "error": e }))).into_response()
}

/// The parsed subset: table, from, to, whether `to` is included, count or rows.
struct Parsed {
    table: String,
    from: String,
    to: String,
    closed: bool,
    count: bool,
}

fn parse(q: &str) -> Option<Parsed> {
    let parts: Vec<&str> = q.split('|').map(str::trim).collect();
    let [table, filter, last] = parts.as_slice() else {
        return None;
    };
    let count = match *last {
        "count" => true,
        "order by TimeGenerated asc" => false,
        _ => return None,
    };
    let f = filter.strip_prefix("where TimeGenerated >= datetime(")?;
    let (from, rest) = f.split_once(')')?;
    let rest = rest.strip_prefix(" and TimeGenerated ")?;
    let (closed, rest) = match rest.strip_prefix("<= datetime(") {
        Some(r) => (true, r),
        None => (false, rest.strip_prefix("< datetime(")?),
    };
    let to = rest.strip_suffix(')')?;
    let norm = |s: &str| -> Option<String> {
        let t = chrono::DateTime::parse_from_rfc3339(s).ok()?;
        Some(
            t.with_timezone(&chrono::Utc)
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        )
    };
    Some(Parsed {
        table: (*table).to_owned(),
        from: norm(from)?,
        to: norm(to)?,
        closed,
        count,
    })
}

/// `TimeGenerated` normalised to milliseconds, for comparing with the window's literals.
fn norm_ts(s: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(s)
        .map(|t| {
            t.with_timezone(&chrono::Utc)
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
        })
        .unwrap_or_default()
}

async fn query(
    State(s): State<Arc<StandIn>>,
    Path(workspace): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let at = Instant::now();
    let q = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v.get("query").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_default();
    let (resp, rows, partial) = answer(&s, &workspace, &headers, &q, at);
    lock(&s.answered).push(Answered {
        query: q,
        status: resp.status().as_u16(),
        rows,
        partial,
        at,
    });
    resp
}

/// The answer to query `q` on `workspace` at `now`: the response, its row count, and whether
/// it was cut at the row limit.
fn answer(
    s: &StandIn,
    workspace: &str,
    headers: &HeaderMap,
    q: &str,
    now: Instant,
) -> (Response, usize, bool) {
    if let Some(refused) = refusal(s, workspace, headers) {
        return (refused, 0, false);
    }
    let Some(p) = parse(q) else {
        return (
            error(
                StatusCode::BAD_REQUEST,
                "BadArgumentError",
                "The request had some invalid properties",
                Some(json!({"code": "SyntaxError",
                    "message": "the stand-in answers only the queries `labctl logs pull` sends"})),
            ),
            0,
            false,
        );
    };
    s.ingest();
    let tables = lock(&s.tables);
    let Some(t) = TABLES
        .iter()
        .position(|n| *n == p.table)
        .map(|i| &tables[i])
        .filter(|t| t.rows.iter().any(|r| r.visible_at <= now))
    else {
        return (unknown_table(&p.table), 0, false);
    };
    let selected = visible_in_window(t, &p, now);
    if p.count {
        let n = selected.len();
        let body = json!({"tables": [{"name": "PrimaryResult",
            "columns": [{"name": "Count", "type": "long"}], "rows": [[n]]}]});
        return ((StatusCode::OK, axum::Json(body)).into_response(), n, false);
    }
    rows_answer(selected, s.cfg.row_limit)
}

/// The refusal the service would answer for the query's token or workspace id, if any.
fn refusal(s: &StandIn, workspace: &str, headers: &HeaderMap) -> Option<Response> {
    let auth = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    match (auth, &s.cfg.token) {
        (_, None) => {}
        (None, Some(_)) => {
            return Some(error(
                StatusCode::UNAUTHORIZED,
                "AuthorizationRequiredError",
                "Valid authentication was not provided",
                None,
            ));
        }
        (Some(a), Some(t)) if a != format!("Bearer {t}") => {
            return Some(error(
                StatusCode::FORBIDDEN,
                "InsufficientAccessError",
                "The provided credentials have insufficient access to perform the requested operation",
                None,
            ));
        }
        (Some(_), Some(_)) => {}
    }
    if workspace != s.cfg.workspace {
        return Some(error(
            StatusCode::NOT_FOUND,
            "WorkspaceNotFoundError",
            &format!("Workspace {workspace} could not be found"),
            None,
        ));
    }
    None
}

/// The service's `SemanticError` for a table it has no row of yet.
fn unknown_table(table: &str) -> Response {
    let msg =
        format!("'where' operator: Failed to resolve table or column expression named '{table}'");
    error(
        StatusCode::BAD_REQUEST,
        "BadArgumentError",
        "The request had some invalid properties",
        Some(
            json!({"code": "SemanticError", "message": "A semantic error occurred.",
            "innererror": {"code": "SEM0100", "message": msg}}),
        ),
    )
}

/// The rows of `t` visible at `now` whose `TimeGenerated` is in the query's window.
fn visible_in_window<'t>(t: &'t Table, p: &Parsed, now: Instant) -> Vec<&'t Ingested> {
    t.rows
        .iter()
        .filter(|r| r.visible_at <= now)
        .filter(|r| {
            let ts = norm_ts(&r.time_generated);
            ts >= p.from && (ts < p.to || (p.closed && ts == p.to))
        })
        .collect()
}

/// The rows in `TimeGenerated` order as a `PrimaryResult` table (`TimeGenerated` first, then
/// every other column any row has, typed by its first value), cut at `row_limit` with a
/// `PartialError`; with the row count and whether it was cut.
fn rows_answer(mut selected: Vec<&Ingested>, row_limit: usize) -> (Response, usize, bool) {
    selected.sort_by_cached_key(|r| norm_ts(&r.time_generated));
    let partial = selected.len() > row_limit;
    selected.truncate(row_limit);
    let mut names: BTreeSet<&str> = selected
        .iter()
        .flat_map(|r| r.row.keys().map(String::as_str))
        .collect();
    names.remove("TimeGenerated");
    let columns: Vec<&str> = std::iter::once("TimeGenerated").chain(names).collect();
    let kind = |name: &str| -> &str {
        if name == "TimeGenerated" {
            return "datetime";
        }
        let v = selected.iter().find_map(|r| r.row.get(name));
        match v {
            Some(Value::Number(n)) if n.is_f64() => "real",
            Some(Value::Number(_)) => "long",
            Some(Value::Bool(_)) => "bool",
            _ => "string",
        }
    };
    let rows: Vec<Value> = selected
        .iter()
        .map(|r| {
            Value::Array(
                columns
                    .iter()
                    .map(|c| r.row.get(*c).cloned().unwrap_or(Value::Null))
                    .collect(),
            )
        })
        .collect();
    let n = rows.len();
    let mut body = json!({"tables": [{"name": "PrimaryResult",
        "columns": columns.iter().map(|c| json!({"name": c, "type": kind(c)})).collect::<Vec<_>>(),
        "rows": rows}]});
    if partial {
        body["error"] = json!({"code": "PartialError",
            "message": "There were some errors when processing your query.",
            "details": [{"code": "EngineError",
                "message": "Something went wrong processing your query on the server.",
                "innererror": {"code": "-2133196797", "message": format!(
                    "Query result set has exceeded the internal record count limit {} records",
                    row_limit)}}]});
    }
    (
        (StatusCode::OK, axum::Json(body)).into_response(),
        n,
        partial,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_subset_parses_and_anything_else_does_not() {
        let p = parse("ContainerAppConsoleLogs_CL | where TimeGenerated >= datetime(2026-11-30T14:00:00.000Z) and TimeGenerated <= datetime(2026-11-30T15:00:00.000Z) | count").unwrap();
        assert!(p.count && p.closed);
        assert_eq!(p.from, "2026-11-30T14:00:00.000Z");
        let p = parse("T | where TimeGenerated >= datetime(2026-11-30T14:00:00Z) and TimeGenerated < datetime(2026-11-30T15:00:00.5Z) | order by TimeGenerated asc").unwrap();
        assert!(!p.count && !p.closed);
        assert_eq!(p.to, "2026-11-30T15:00:00.500Z");
        assert!(parse("T | take 10").is_none());
        assert!(parse("T | where TimeGenerated > ago(1h) | count").is_none());
    }
}
