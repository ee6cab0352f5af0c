//! The `probelab/loadgen:dev` image against subject containers on a user-defined network.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;
use testkit::docker::{published, require_docker, wait_exit};
use testkit::testcontainers::ImageExt;

fn of_kind<'a>(lines: &'a [Value], kind: &str, scenario: &str) -> Vec<&'a Value> {
    lines
        .iter()
        .filter(|l| l["kind"] == kind && l["scenario"] == scenario)
        .collect()
}

fn sum(values: &[&Value], field: &str) -> u64 {
    values.iter().map(|v| v[field].as_u64().unwrap_or(0)).sum()
}

fn served_by(values: &[&Value]) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for v in values {
        for (rev, n) in v["served_by"].as_object().into_iter().flatten() {
            *out.entry(rev.clone()).or_default() += n.as_u64().unwrap_or(0);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loadgen_reaches_subject_by_name_buckets_add_up_and_attribute_by_revision() {
    let Some(docker) = require_docker().await else {
        return;
    };
    docker.require_image("subject").await;
    docker.require_image("loadgen").await;
    // Declared first, dropped last: removed after the containers on it.
    let net = docker.network("lg").await;

    // Two revisions behind one DNS name, as two revisions of one app behind its ingress.
    let mut subjects = Vec::new();
    for rev in ["rev-a", "rev-b"] {
        let c = start(subject(&[
            ("CONTAINER_APP_REVISION", rev),
            ("LOG_REQUESTS", "all"),
        ]))
        .await;
        wait_status(
            published(&c, SUBJECT_PORT).await,
            "/healthz",
            200,
            Duration::from_secs(10),
        )
        .await;
        net.connect(&docker, c.id(), &["subject"]).await;
        subjects.push(c);
    }

    let rate: u64 = 50;
    let seconds: u64 = 3;
    let lg = start(
        testkit::docker::container("loadgen", &[])
            .with_network(net.name())
            .with_cmd([
                "--url",
                "http://subject:8080/",
                "--rate",
                &rate.to_string(),
                "--duration",
                &format!("{seconds}s"),
                "--bucket",
                "1s",
                "--connection",
                "close",
                "--run-id",
                "imagetests",
            ]),
    )
    .await;
    let code = wait_exit(&lg, Duration::from_secs(30)).await;
    let lines = stdout_json(&lg).await;
    assert_eq!(code, 0, "loadgen exit code; stdout: {lines:?}");

    assert_eq!(
        lines.first().map(|l| &l["kind"]),
        Some(&Value::from("meta"))
    );
    assert_eq!(lines.last().map(|l| &l["kind"]), Some(&Value::from("meta")));
    let summaries = of_kind(&lines, "summary", "main");
    assert_eq!(summaries.len(), 1, "{lines:?}");
    let s = summaries[0];
    let buckets = of_kind(&lines, "bucket", "main");
    let expected = rate * seconds;

    assert_eq!(s["count"].as_u64(), Some(expected), "{s}");
    assert_eq!(
        s["ok"].as_u64(),
        Some(expected),
        "every request answered 200: {s}"
    );
    assert_eq!(
        (s["err"].as_u64(), s["dropped"].as_u64()),
        (Some(0), Some(0)),
        "{s}"
    );
    assert_eq!(sum(&buckets, "count"), expected, "bucket counts add up");
    assert_eq!(sum(&buckets, "ok"), expected);
    assert_eq!(sum(&buckets, "err"), 0);
    assert!(
        buckets
            .iter()
            .all(|b| b["window_s"] == 1 && b["run_id"] == "imagetests"),
        "{buckets:?}"
    );

    let per_bucket = served_by(&buckets);
    let total = served_by(&[s]);
    assert_eq!(per_bucket, total, "buckets and summary attribute alike");
    assert_eq!(total.values().sum::<u64>(), expected, "{total:?}");
    assert!(
        total.keys().all(|k| k == "rev-a" || k == "rev-b"),
        "attributed to unknown revisions: {total:?}"
    );
    // Docker's DNS answers the shared alias in rotating order and `--connection close` resolves
    // per request, so both revisions serve (about half each; 20 of 150 is far out in the tail).
    assert!(
        total.values().all(|n| *n >= 20) && total.len() == 2,
        "{total:?}"
    );
    // What loadgen attributed to a revision is exactly what that container logged serving.
    for (c, rev) in subjects.iter().zip(["rev-a", "rev-b"]) {
        let served = stdout_json(c).await;
        let roots = served
            .iter()
            .filter(|l| l["event"] == "REQUEST_END" && l["path"] == "/" && l["revision"] == rev)
            .count() as u64;
        assert_eq!(Some(&roots), total.get(rev), "{rev}");
    }
    drop(lg);
    drop(subjects);
    drop(net);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loadgen_flushes_its_open_buckets_and_summary_on_docker_stop() {
    let Some(docker) = require_docker().await else {
        return;
    };
    docker.require_image("subject").await;
    docker.require_image("loadgen").await;
    let net = docker.network("lgstop").await;
    let subject = start(subject(&[("CONTAINER_APP_REVISION", "rev-s")])).await;
    wait_status(
        published(&subject, SUBJECT_PORT).await,
        "/healthz",
        200,
        Duration::from_secs(10),
    )
    .await;
    net.connect(&docker, subject.id(), &["subject"]).await;

    let lg = start(
        testkit::docker::container("loadgen", &[])
            .with_network(net.name())
            .with_cmd([
                "--url",
                "http://subject:8080/",
                "--rate",
                "40",
                "--duration",
                "60s",
                "--bucket",
                "1s",
            ]),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let started = Instant::now();
    lg.stop_with_timeout(Some(10))
        .await
        .unwrap_or_else(|e| panic!("docker stop: {e}"));
    let took = started.elapsed();
    let code = wait_exit(&lg, Duration::from_secs(5)).await;
    let lines = stdout_json(&lg).await;
    assert_ne!(
        code, 137,
        "SIGKILLed: SIGTERM did not reach loadgen as PID 1"
    );
    assert!(took < Duration::from_secs(8), "stop took {took:?}");

    let s = of_kind(&lines, "summary", "main");
    assert_eq!(s.len(), 1, "the summary survives docker stop: {lines:?}");
    let s = s[0];
    assert_eq!(s["interrupted"], true, "{s}");
    let count = s["count"].as_u64().expect("count");
    assert!(
        count >= 60,
        "about 2.5 s at 40/s before the stop, got {count}"
    );
    let buckets = of_kind(&lines, "bucket", "main");
    assert_eq!(
        sum(&buckets, "count"),
        count,
        "the last open bucket was flushed"
    );
    assert_eq!(
        served_by(&[s]).get("rev-s").copied(),
        Some(s["ok"].as_u64().unwrap_or(0))
    );
    drop(lg);
    drop(subject);
    drop(net);
}
