//! Conformance with the real Azure clients: the pinned az CLI (2.91.0) and the Python SDK
//! (azure-mgmt-appcontainers, azure-identity), over HTTPS, logged in through the identity
//! endpoint. Each command must exit 0 and leave the state it reports, read back through
//! localplane's own ARM view. Installed by `scripts/install-pyclients.sh` (`scripts/test.sh` runs it);
//! without them the suite fails loudly unless `PROBELAB_SKIP_REAL_CLIENTS=1`.
#![allow(clippy::unwrap_used)]

#[path = "real_clients/session.rs"]
mod session;

use std::time::Duration;

use serde_json::Value;
use session::{Session, venv};
use testkit::eventually;

const RG: &str = "rg-clients";
const SUB: &str = localplane::tenancy::SUBSCRIPTION_ID;

fn app_path(app: &str) -> String {
    format!(
        "/subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.App/containerApps/{app}?api-version=2025-07-01"
    )
}

fn revisions_path(app: &str) -> String {
    format!(
        "/subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.App/containerApps/{app}/revisions?api-version=2025-07-01"
    )
}

/// The revisions of `app` as localplane reports them: (name, active, trafficWeight).
async fn revisions(s: &Session, app: &str) -> Vec<(String, bool, u64)> {
    let v = s.arm_get(&revisions_path(app)).await;
    v["value"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_owned(),
                r["properties"]["active"].as_bool().unwrap_or(false),
                r["properties"]["trafficWeight"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

/// A group and an environment made with az, as a user starts.
async fn group_and_env(s: &Session) {
    let g = s
        .ok(&["group", "create", "-n", RG, "-l", "eastus"])
        .await
        .json();
    assert_eq!(g["properties"]["provisioningState"], "Succeeded", "{g}");
    let e = s
        .ok(&[
            "containerapp",
            "env",
            "create",
            "-n",
            "env",
            "-g",
            RG,
            "--logs-destination",
            "none",
        ])
        .await
        .json();
    assert_eq!(e["properties"]["provisioningState"], "Succeeded", "{e}");
}

/// `az containerapp create` of an app with ingress; its URL answers the subject's 200.
async fn create_app(s: &Session, app: &str, extra: &[&str]) -> Value {
    let mut args = vec![
        "containerapp",
        "create",
        "-n",
        app,
        "-g",
        RG,
        "--environment",
        "env",
        "--image",
        "probelab/subject:dev",
        "--ingress",
        "external",
        "--target-port",
        "8080",
        "--min-replicas",
        "1",
        "--max-replicas",
        "1",
    ];
    args.extend_from_slice(extra);
    let created = s.ok(&args).await.json();
    let fqdn = created["properties"]["configuration"]["ingress"]["fqdn"]
        .as_str()
        .unwrap_or_else(|| panic!("no fqdn: {created}"))
        .to_owned();
    let port: u16 = fqdn.rsplit(':').next().unwrap().parse().unwrap();
    eventually(
        Duration::from_secs(60),
        "the app's URL to answer 200",
        || async move {
            let out =
                testkit::http::get(testkit::http::loopback(port), "/", Duration::from_secs(5))
                    .await;
            (out.status() == Some(200)).then(|| out.response().expect_json())
        },
    )
    .await;
    created
}

/// `az containerapp job create` of a manual job running the subject.
async fn create_job(s: &Session, name: &str) {
    let args = [
        "containerapp",
        "job",
        "create",
        "-n",
        name,
        "-g",
        RG,
        "--environment",
        "env",
        "--trigger-type",
        "Manual",
        "--replica-timeout",
        "60",
        "--replica-retry-limit",
        "0",
        "--parallelism",
        "1",
        "--replica-completion-count",
        "1",
        "--image",
        "probelab/subject:dev",
    ];
    s.ok(&args).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_original_labs_commands_run_unchanged() {
    let Some(venv) = venv() else { return };
    let s = Session::start(venv).await;
    group_and_env(&s).await;
    let app = "subject-app";
    let created = create_app(&s, app, &[]).await;
    let first = created["properties"]["latestRevisionName"]
        .as_str()
        .unwrap()
        .to_owned();

    // The rollout perturbation: a new revision that takes the traffic.
    s.ok(&[
        "containerapp",
        "update",
        "-n",
        app,
        "-g",
        RG,
        "--set-env-vars",
        "ROLLOUT_MARKER=1",
    ])
    .await;
    let second = s.arm_get(&app_path(app)).await["properties"]["latestRevisionName"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(first, second, "update --set-env-vars makes a revision");
    eventually(
        Duration::from_secs(60),
        "the new revision to take all traffic",
        || {
            let (s, second) = (&s, second.clone());
            async move {
                let revs = revisions(s, app).await;
                revs.iter()
                    .any(|(n, a, w)| *n == second && *a && *w == 100)
                    .then_some(())
            }
        },
    )
    .await;

    // The supplemental perturbation: a revision restart renews its replicas.
    let replicas_path = format!(
        "/subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.App/containerApps/{app}/revisions/{second}/replicas?api-version=2025-07-01"
    );
    let names = |v: Value| -> Vec<String> {
        v["value"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let before = names(s.arm_get(&replicas_path).await);
    let restarted = s
        .ok(&[
            "containerapp",
            "revision",
            "restart",
            "-n",
            app,
            "-g",
            RG,
            "--revision",
            &second,
        ])
        .await;
    assert!(restarted.json().is_object(), "{}", restarted.stdout);
    eventually(
        Duration::from_secs(60),
        "a replica that was not there before",
        || {
            let (s, p, before) = (&s, replicas_path.clone(), before.clone());
            async move {
                let now = names(s.arm_get(&p).await);
                now.iter().any(|n| !before.contains(n)).then_some(())
            }
        },
    )
    .await;

    // The jobs' update-then-start workaround.
    create_job(&s, "loadgen").await;
    let updated = s
        .ok(&[
            "containerapp",
            "job",
            "update",
            "-n",
            "loadgen",
            "-g",
            RG,
            "--set-env-vars",
            "TARGET_RPS=5",
        ])
        .await
        .json();
    // The CLI answers with the job (it fails without: "Could not find a container App Job"),
    // env values blanked by its own output filter; localplane's view has the value.
    assert_eq!(updated["name"], "loadgen", "{updated}");
    let job = s
        .arm_get(&format!(
            "/subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.App/jobs/loadgen?api-version=2025-07-01"
        ))
        .await;
    let env = &job["properties"]["template"]["containers"][0]["env"];
    assert!(
        env.as_array()
            .unwrap()
            .iter()
            .any(|e| e["name"] == "TARGET_RPS" && e["value"] == "5"),
        "the job has the new env: {job}"
    );
    let started = s
        .ok(&["containerapp", "job", "start", "-n", "loadgen", "-g", RG])
        .await
        .json();
    let exec = started["name"]
        .as_str()
        .unwrap_or_else(|| panic!("{started}"))
        .to_owned();
    let shown = s
        .ok(&[
            "containerapp",
            "job",
            "execution",
            "show",
            "-n",
            "loadgen",
            "-g",
            RG,
            "--job-execution-name",
            &exec,
        ])
        .await
        .json();
    assert_eq!(shown["name"], exec.as_str(), "{shown}");
    let status = shown["properties"]["status"].as_str().unwrap_or_default();
    assert!(
        ["Running", "Processing", "Succeeded", "Failed"].contains(&status),
        "{shown}"
    );
    let listed = s
        .ok(&[
            "containerapp",
            "job",
            "execution",
            "list",
            "-n",
            "loadgen",
            "-g",
            RG,
        ])
        .await
        .json();
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["name"] == exec.as_str()),
        "{listed}"
    );
    let revs = s
        .ok(&["containerapp", "revision", "list", "-n", app, "-g", RG])
        .await
        .json();
    assert!(
        revs.as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == second.as_str()),
        "{revs}"
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_users_commands_for_each_lab_action_leave_the_state_they_report() {
    let Some(venv) = venv() else { return };
    let s = Session::start(venv).await;
    group_and_env(&s).await;
    let shown = s
        .ok(&["containerapp", "env", "show", "-n", "env", "-g", RG])
        .await
        .json();
    assert_eq!(shown["name"], "env");
    for scope in [&["-g", RG][..], &[][..]] {
        let mut args = vec!["containerapp", "env", "list"];
        args.extend_from_slice(scope);
        let listed = s.ok(&args).await.json();
        assert_eq!(
            listed.as_array().map(Vec::len),
            Some(1),
            "env list {scope:?}: {listed}"
        );
    }
    let app = "canary";
    create_app(&s, app, &["--revision-suffix", "v1"]).await;
    // Single mode, then multiple as a user switches (the CLI sends `multiple`).
    s.ok(&[
        "containerapp",
        "revision",
        "set-mode",
        "-n",
        app,
        "-g",
        RG,
        "--mode",
        "multiple",
    ])
    .await;
    let mode =
        s.arm_get(&app_path(app)).await["properties"]["configuration"]["activeRevisionsMode"]
            .as_str()
            .map(str::to_ascii_lowercase);
    assert_eq!(mode.as_deref(), Some("multiple"));
    s.ok(&[
        "containerapp",
        "revision",
        "copy",
        "-n",
        app,
        "-g",
        RG,
        "--revision-suffix",
        "v2",
    ])
    .await;
    let (v1, v2) = (format!("{app}--v1"), format!("{app}--v2"));
    let revs = revisions(&s, app).await;
    assert!(
        revs.iter().all(|(_, active, _)| *active),
        "multiple mode keeps both active: {revs:?}"
    );

    // A split, as `ingress traffic set` asks for it, is the split localplane routes by.
    s.ok(&[
        "containerapp",
        "ingress",
        "traffic",
        "set",
        "-n",
        app,
        "-g",
        RG,
        "--revision-weight",
        &format!("{v1}=90"),
        &format!("{v2}=10"),
    ])
    .await;
    let weights: Vec<(String, u64)> = revisions(&s, app)
        .await
        .into_iter()
        .map(|(n, _, w)| (n, w))
        .collect();
    assert!(
        weights.contains(&(v1.clone(), 90)) && weights.contains(&(v2.clone(), 10)),
        "{weights:?}"
    );
    let shown = s
        .ok(&[
            "containerapp",
            "ingress",
            "traffic",
            "show",
            "-n",
            app,
            "-g",
            RG,
        ])
        .await
        .json();
    assert!(
        shown
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["revisionName"] == v1.as_str() && t["weight"] == 90),
        "{shown}"
    );

    // Labels on and off; the weights a client set survive the round trips.
    s.ok(&[
        "containerapp",
        "revision",
        "label",
        "add",
        "-n",
        app,
        "-g",
        RG,
        "--label",
        "blue",
        "--revision",
        &v2,
    ])
    .await;
    let cfg = s.arm_get(&app_path(app)).await;
    let traffic = &cfg["properties"]["configuration"]["ingress"]["traffic"];
    assert!(
        traffic
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["label"] == "blue"),
        "{traffic}"
    );
    s.ok(&[
        "containerapp",
        "revision",
        "label",
        "remove",
        "-n",
        app,
        "-g",
        RG,
        "--label",
        "blue",
    ])
    .await;
    let weights: Vec<(String, u64)> = revisions(&s, app)
        .await
        .into_iter()
        .map(|(n, _, w)| (n, w))
        .collect();
    assert!(weights.contains(&(v1.clone(), 90)), "{weights:?}");

    // Deactivate once it has no traffic; activate again.
    s.ok(&[
        "containerapp",
        "ingress",
        "traffic",
        "set",
        "-n",
        app,
        "-g",
        RG,
        "--revision-weight",
        &format!("{v2}=100"),
        &format!("{v1}=0"),
    ])
    .await;
    let out = s
        .ok(&[
            "containerapp",
            "revision",
            "deactivate",
            "-n",
            app,
            "-g",
            RG,
            "--revision",
            &v1,
        ])
        .await;
    assert!(out.json().is_object(), "{}", out.stdout);
    let revs = revisions(&s, app).await;
    assert!(revs.contains(&(v1.clone(), false, 0)), "{revs:?}");
    s.ok(&[
        "containerapp",
        "revision",
        "activate",
        "-n",
        app,
        "-g",
        RG,
        "--revision",
        &v1,
    ])
    .await;
    assert!(
        revisions(&s, app)
            .await
            .iter()
            .any(|(n, a, _)| *n == v1 && *a)
    );
    let replicas = s
        .ok(&[
            "containerapp",
            "replica",
            "list",
            "-n",
            app,
            "-g",
            RG,
            "--revision",
            &v2,
        ])
        .await
        .json();
    assert!(!replicas.as_array().unwrap().is_empty(), "{replicas}");

    // Jobs: list at both scopes, stop.
    create_job(&s, "worker").await;
    for scope in [&["-g", RG][..], &[][..]] {
        let mut args = vec!["containerapp", "job", "list"];
        args.extend_from_slice(scope);
        let listed = s.ok(&args).await.json();
        assert_eq!(
            listed.as_array().map(Vec::len),
            Some(1),
            "job list {scope:?}: {listed}"
        );
    }
    let exec = s
        .ok(&["containerapp", "job", "start", "-n", "worker", "-g", RG])
        .await
        .json();
    let exec = exec["name"].as_str().unwrap().to_owned();
    s.ok(&[
        "containerapp",
        "job",
        "stop",
        "-n",
        "worker",
        "-g",
        RG,
        "--job-execution-name",
        &exec,
    ])
    .await;
    let exec_path = format!(
        "/subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.App/jobs/worker/executions/{exec}?api-version=2025-07-01"
    );
    eventually(
        Duration::from_secs(60),
        "the stopped execution to end",
        || {
            let (s, p) = (&s, exec_path.clone());
            async move {
                let v = s.arm_get(&p).await;
                (v["properties"]["status"] != "Running").then_some(())
            }
        },
    )
    .await;
    // `job stop` without an execution stops every running one and lists them.
    let second = s
        .ok(&["containerapp", "job", "start", "-n", "worker", "-g", RG])
        .await
        .json();
    let second = second["name"].as_str().unwrap().to_owned();
    let stopped = s
        .ok(&["containerapp", "job", "stop", "-n", "worker", "-g", RG])
        .await
        .json();
    assert!(
        stopped["value"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["name"] == second.as_str()),
        "{stopped}"
    );

    // Deleting: the environment refuses while it holds apps; the app, then the group.
    let refused = s
        .az(&["containerapp", "env", "delete", "-n", "env", "-g", RG, "-y"])
        .await;
    assert!(
        !refused.ok
            && refused
                .stderr
                .contains("ManagedEnvironmentHasContainerApps"),
        "{refused:?}"
    );
    s.ok(&["containerapp", "delete", "-n", app, "-g", RG, "-y"])
        .await;
    let apps = s.ok(&["containerapp", "list", "-g", RG]).await.json();
    assert_eq!(apps, serde_json::json!([]), "{apps}");
    s.ok(&["group", "delete", "-n", RG, "-y"]).await;
    let exists = s.ok(&["group", "exists", "-n", RG]).await;
    assert_eq!(exists.stdout.trim(), "false");
    let jobs = s.ok(&["containerapp", "job", "list"]).await.json();
    assert_eq!(
        jobs,
        serde_json::json!([]),
        "the group's job went with it: {jobs}"
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_drives_create_update_list_restart_and_job_start() {
    let Some(venv) = venv() else { return };
    let s = Session::start(venv).await;
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/real_clients/sdk_conformance.py");
    let out = s.python(&script, &[RG]).await;
    assert!(
        out.ok,
        "the SDK script failed:\n{}\n{}",
        out.stdout, out.stderr
    );
    let report: Value = serde_json::from_str(out.stdout.lines().last().unwrap_or("{}"))
        .unwrap_or_else(|e| panic!("its last line is its JSON report ({e}): {}", out.stdout));
    // Read back apart from the SDK: what it says it did is there.
    let app = s.arm_get(&app_path("sdk-app")).await;
    assert_eq!(
        app["properties"]["latestRevisionName"], report["latest_revision"],
        "{report}"
    );
    let env = &app["properties"]["template"]["containers"][0]["env"];
    assert!(
        env.as_array()
            .unwrap()
            .iter()
            .any(|e| e["name"] == "SDK_MARKER"),
        "{app}"
    );
    assert!(
        report["execution"]
            .as_str()
            .is_some_and(|e| e.starts_with("sdk-job-")),
        "{report}"
    );
    s.stop().await;
}

/// The suite's positive control: the answer localplane gave before (200 with an empty body to
/// a revision restart) makes the CLI fail, so a wrong body cannot pass unnoticed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_body_where_the_cli_parses_json_fails_the_command() {
    let Some(venv) = venv() else { return };
    let s = Session::start(venv).await;
    group_and_env(&s).await;
    let created = create_app(&s, "control", &[]).await;
    let rev = created["properties"]["latestRevisionName"]
        .as_str()
        .unwrap()
        .to_owned();
    let fault = testkit::http::request_with_body(
        testkit::http::loopback(s.plane.localplane().addr().port()),
        "POST",
        "/localplane/faults",
        r#"{"kind":"emptyBody","count":1,"path":"/restart"}"#,
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(fault.status(), Some(200));
    let restart = [
        "containerapp",
        "revision",
        "restart",
        "-n",
        "control",
        "-g",
        RG,
        "--revision",
        &rev,
    ];
    let r = s.az(&restart).await;
    assert!(!r.ok, "the CLI accepted an empty body: {r:?}");
    let again = s.az(&restart).await;
    assert!(
        again.ok,
        "without the fault the same command passes: {again:?}"
    );
    s.stop().await;
}

/// `az containerapp job create --trigger-type Event` with a `metrics-api` rule on a subject's
/// queue: the job drains the items enqueued, one execution each, as `job execution list` shows;
/// a rule type localplane does not act on fails the command with the 400's message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_creates_an_event_job_that_drains_a_queue() {
    let Some(venv) = venv() else { return };
    let s = Session::start(venv).await;
    group_and_env(&s).await;
    let created = create_app(&s, "queue", &[]).await;
    let fqdn = created["properties"]["configuration"]["ingress"]["fqdn"]
        .as_str()
        .unwrap()
        .to_owned();
    let queue_env = format!("QUEUE_URL=http://{fqdn}");
    let url = format!("url=http://{fqdn}/queue");
    let create = |name: &'static str, rule_type: &'static str| {
        let (queue_env, url) = (queue_env.clone(), url.clone());
        let s = &s;
        async move {
            s.az(&[
                "containerapp",
                "job",
                "create",
                "-n",
                name,
                "-g",
                RG,
                "--environment",
                "env",
                "--trigger-type",
                "Event",
                "--replica-timeout",
                "60",
                "--replica-retry-limit",
                "0",
                "--parallelism",
                "1",
                "--replica-completion-count",
                "1",
                "--image",
                "probelab/subject:dev",
                "--env-vars",
                "APP_MODE=queue-worker",
                &queue_env,
                "WORK_MS=0",
                "--min-executions",
                "0",
                "--max-executions",
                "2",
                "--polling-interval",
                "1",
                "--scale-rule-name",
                "queue",
                "--scale-rule-type",
                rule_type,
                "--scale-rule-metadata",
                &url,
                "valueLocation=length",
                "targetValue=1",
            ])
            .await
        }
    };
    let refused = create("refused", "azure-servicebus").await;
    assert!(!refused.ok, "{refused:?}");
    assert!(
        refused.stderr.contains("metrics-api"),
        "the CLI shows the 400's message: {}",
        refused.stderr
    );
    let made = create("drain", "metrics-api").await;
    assert!(made.ok, "{made:?}");
    let job = s
        .arm_get(&format!(
            "/subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.App/jobs/drain?api-version=2025-07-01"
        ))
        .await;
    let scale = &job["properties"]["configuration"]["eventTriggerConfig"]["scale"];
    assert_eq!(scale["maxExecutions"], 2, "{job}");
    assert_eq!(scale["rules"][0]["type"], "metrics-api", "{job}");
    let port: u16 = fqdn.rsplit(':').next().unwrap().parse().unwrap();
    let put = testkit::http::request_with_body(
        testkit::http::loopback(port),
        "POST",
        "/queue?items=3",
        "",
        Duration::from_secs(5),
    )
    .await;
    assert_eq!(put.status(), Some(200));
    let listed = eventually(
        Duration::from_secs(60),
        "3 executions succeeded",
        || async {
            let l = s
                .ok(&[
                    "containerapp",
                    "job",
                    "execution",
                    "list",
                    "-n",
                    "drain",
                    "-g",
                    RG,
                ])
                .await
                .json();
            let ok = l
                .as_array()?
                .iter()
                .filter(|e| e["properties"]["status"] == "Succeeded")
                .count();
            (ok == 3).then_some(l)
        },
    )
    .await;
    assert_eq!(listed.as_array().unwrap().len(), 3, "{listed}");
    s.stop().await;
}
