//! `runner::logs::pull` against `testkit::log_analytics`, the query API stand-in the Azure
//! rehearsal uses, over sink files written here (no Docker): late rows are waited for, an answer
//! cut at the record limit is re-queried in halves, Azure's columns and the client addresses
//! inside lines are scrubbed, and a pull that does not wait misses rows (the negative side of the
//! rehearsal's "rows read before ingestion settles").

#![allow(clippy::unwrap_used)] // test code

use std::path::Path;
use std::time::Duration;

use testkit::log_analytics::{self, LogAnalytics, TABLES};

const SUB: &str = "5a1c0d2e-7b3f-4e61-9a8d-2c4b6e8f0a13";
const TENANT: &str = "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b";

/// `n` console rows (one every 10 ms from 14:00:00) and one system row, as localplane's sink
/// writes them.
fn write_sink(dir: &Path, n: usize) {
    let t0: chrono::DateTime<chrono::Utc> = "2026-11-30T14:00:00Z".parse().unwrap();
    let mut console = String::new();
    for i in 0..n {
        let ts = t0 + chrono::Duration::milliseconds(10 * i as i64);
        let row = serde_json::json!({
            "TimeGenerated": ts.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            "ContainerAppName_s": "subject", "RevisionName_s": "subject--0000001",
            "ContainerGroupName_s": "subject--0000001-abc", "ContainerName_s": "subject",
            "Stream_s": "stdout", "Log_s": format!(r#"{{"kind":"req","seq":{i}}}"#),
            "Type": TABLES[0],
        });
        console.push_str(&format!("{row}\n"));
    }
    std::fs::write(dir.join(format!("{}.ndjson", TABLES[0])), console).unwrap();
    let sys = serde_json::json!({"TimeGenerated": "2026-11-30T14:00:00.500Z",
        "ContainerAppName_s": "subject", "RevisionName_s": "subject--0000001",
        "ReplicaName_s": "subject--0000001-abc", "Reason_s": "ContainerStarted",
        "Log_s": "Started container 'subject'", "Type": TABLES[1]});
    std::fs::write(
        dir.join(format!("{}.ndjson", TABLES[1])),
        format!("{sys}\n"),
    )
    .unwrap();
}

async fn stand_in(dir: &Path, delay_ms: u64) -> LogAnalytics {
    LogAnalytics::start(log_analytics::Config {
        workspace: "ws".into(),
        token: None,
        logs_dir: dir.to_path_buf(),
        ingestion_delay: Duration::from_millis(delay_ms),
        row_limit: 100,
        tenant_id: TENANT.into(),
        subscription_id: SUB.into(),
        resource_group: "rg".into(),
    })
    .await
    .unwrap()
}

fn options(url: String, out: &Path, settle_ms: u64) -> runner::logs::PullOptions {
    let mut o = runner::logs::PullOptions::new(
        "ws".into(),
        "2026-11-30T14:00:00Z".parse().unwrap(),
        out.to_path_buf(),
    );
    o.until = Some("2026-11-30T15:00:00Z".parse().unwrap());
    o.endpoint = url;
    o.token = arm::TokenSourceKind::None;
    o.settle = Duration::from_millis(settle_ms);
    o.settle_timeout = Duration::from_secs(20);
    o
}

#[tokio::test]
async fn a_settled_pull_gets_every_row_sliced_and_scrubbed() {
    let sink = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    write_sink(sink.path(), 450);
    let la = stand_in(sink.path(), 800).await;
    let n = runner::logs::pull(&options(la.url(), out.path(), 500))
        .await
        .unwrap();
    assert_eq!(
        n, 451,
        "every row, although none was visible at the first query"
    );
    assert!(la.late_for_first_query("2026-11-30T15:00:00.000Z") > 0);
    assert!(
        la.answered().iter().any(|a| a.partial),
        "the record limit cut an answer"
    );
    let console =
        std::fs::read_to_string(out.path().join(format!("{}.ndjson", TABLES[0]))).unwrap();
    let seqs: Vec<u64> = console
        .lines()
        .map(|l| {
            let row: serde_json::Value = serde_json::from_str(l).unwrap();
            let log: serde_json::Value =
                serde_json::from_str(row["Log_s"].as_str().unwrap()).unwrap();
            assert_eq!(
                log["peer"].as_str().unwrap().split(':').next(),
                Some(runner::scrub::IP)
            );
            assert_eq!(row["TenantId"], runner::scrub::TENANT);
            log["seq"].as_u64().unwrap()
        })
        .collect();
    assert_eq!(
        seqs,
        (0..450).collect::<Vec<u64>>(),
        "each row once, in order"
    );
    let text = console.to_lowercase();
    for secret in [SUB, TENANT, "203.0.113."] {
        assert!(!text.contains(secret), "{secret} left in the pull");
    }
}

#[tokio::test]
async fn a_pull_that_does_not_wait_for_ingestion_misses_rows() {
    let sink = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    write_sink(sink.path(), 50);
    let la = stand_in(sink.path(), 1500).await;
    // `--logs-settle 0`: the rows are queried at once, before they arrived.
    let n = runner::logs::pull(&options(la.url(), out.path(), 0))
        .await
        .unwrap();
    assert_eq!(
        n, 0,
        "no row had arrived: a pull that does not wait gets none of them"
    );
}
