//! `labctl logs pull`: the two Container Apps log tables from Log Analytics (query API, token for
//! `https://api.loganalytics.io/.default`), written as the same NDJSON files the local sink
//! writes: `<out>/ContainerAppConsoleLogs_CL.ndjson` and `<out>/ContainerAppSystemLogs_CL.ndjson`.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use arm::{IdentityEnv, TokenSource, TokenSourceKind};
use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};

use crate::RunError;
use crate::pack::{iso, write_atomic};

pub const DEFAULT_ENDPOINT: &str = "https://api.loganalytics.io";
pub const SCOPE: &str = "https://api.loganalytics.io/.default";
pub const TABLES: [&str; 2] = ["ContainerAppConsoleLogs_CL", "ContainerAppSystemLogs_CL"];

#[derive(Clone, Debug)]
pub struct PullOptions {
    /// The workspace's customer id (`LOG_ANALYTICS_WORKSPACE_ID`).
    pub workspace: String,
    pub since: DateTime<Utc>,
    pub until: Option<DateTime<Utc>>,
    pub out: PathBuf,
    /// `LOG_ANALYTICS_ENDPOINT` [https://api.loganalytics.io].
    pub endpoint: String,
    /// `ARM_TOKEN_SOURCE` [auto].
    pub token: TokenSourceKind,
}

impl PullOptions {
    pub fn new(workspace: String, since: DateTime<Utc>, out: PathBuf) -> PullOptions {
        PullOptions {
            workspace,
            since,
            until: None,
            out,
            endpoint: std::env::var("LOG_ANALYTICS_ENDPOINT")
                .ok()
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| DEFAULT_ENDPOINT.into()),
            token: TokenSourceKind::from_str(
                &std::env::var("ARM_TOKEN_SOURCE").unwrap_or_default(),
            )
            .unwrap_or(TokenSourceKind::Auto),
        }
    }
}

/// Pulls both tables; returns the number of rows written.
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
    let until = o.until.unwrap_or_else(Utc::now);
    let mut total = 0;
    for table in TABLES {
        let query = format!(
            "{table} | where TimeGenerated between (datetime({}) .. datetime({})) | order by TimeGenerated asc",
            iso(o.since),
            iso(until)
        );
        let mut req = http.post(url.clone()).json(&json!({
            "query": query,
            "timespan": format!("{}/{}", iso(o.since), iso(until)),
        }));
        if let Some(t) = token.token().await? {
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
        if !status.is_success() {
            // A table that does not exist yet (no rows ever) is not an error.
            let code = body["error"]["code"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let msg = body["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let inner = body.to_string();
            if inner.contains("Failed to resolve table") {
                write_atomic(&o.out.join(format!("{table}.ndjson")), b"")?;
                continue;
            }
            return Err(RunError::Config(format!(
                "Log Analytics query for {table}: HTTP {status} {code}: {msg}"
            )));
        }
        let lines = rows_to_ndjson(&body);
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
/// row (the first table; empty values dropped, as Log Analytics exports do).
pub fn rows_to_ndjson(body: &Value) -> Vec<String> {
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
                    Value::Object(m).to_string()
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
        let lines = rows_to_ndjson(&body);
        assert_eq!(lines.len(), 2);
        let first: Value = serde_json::from_str(&lines[0]).unwrap();
        assert_eq!(first["Log_s"], "{\"kind\":\"bucket\"}");
        assert!(first.get("Stream_s").is_none());
        assert!(rows_to_ndjson(&json!({})).is_empty());
    }
}
