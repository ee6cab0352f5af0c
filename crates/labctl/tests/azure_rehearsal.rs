//! The Azure path end to end, rehearsed against stand-ins that follow the published APIs.
//!
//! `labctl lab run --target azure` runs a lab (tests/fixtures/azure-rehearsal.toml: one rollout
//! under load, the smallest lab that exercises every Azure-facing part) with:
//!
//! - ARM served by localplane (Docker runtime, the real images) behind an HTTPS front whose
//!   certificate a throw-away CA signed; labctl trusts the CA through `SSL_CERT_FILE`, as a user
//!   behind a TLS-inspecting proxy would. localplane requires a bearer token on every request
//!   (`LOCALPLANE_TOKEN`, issue 19);
//! - the token from a stand-in managed-identity endpoint (`IDENTITY_ENDPOINT` +
//!   `IDENTITY_HEADER`, App Service protocol `api-version=2019-08-01`, as Container Apps
//!   provides it: `testkit::fake_arm::FakeIdentity`), fetched by azure_identity's
//!   ManagedIdentityCredential exactly as on Azure; it issues localplane's token for
//!   `https://management.azure.com` and another one for `https://api.loganalytics.io`;
//! - the Log Analytics query API stand-in (`testkit::log_analytics`, also behind HTTPS) over
//!   localplane's log files, with an ingestion delay of [`INGESTION_DELAY`] (Azure: 20 s to
//!   3 min; a few seconds is the shortest that still leaves rows of the run unarrived when the
//!   pull begins, which the test asserts), a record limit of [`ROW_LIMIT`] (below the run's
//!   row count, so the pull must slice and halve), and the columns Azure adds;
//! - `.probelab/azure.json` written by `labctl deploy` itself, run against stand-in `az` and
//!   `docker` that answer with the rehearsal's subscription, workspace and registry; the
//!   environment and the jobs that deploy's Bicep would create are created in localplane
//!   through ARM beforehand (`runner::deploy::local_infrastructure`).
//!
//! Then: the verdict and the Q1, Q2 and Q5 tables equal those of the same run analysed as
//! `--target local` analyses it (the pack with localplane's own log files instead of the pulled
//! ones: the same localplane timings, by construction); the pack holds no subscription or
//! tenant id and no client address; every ARM request carried the token; nothing was sent to
//! another origin (every proxy variable points at a recorder that must see nothing); rows of
//! the run were still unarrived when the pull began and are in the pack all the same.
//!
//! The negative sides: without a token localplane refuses and labctl stops before deploying
//! (`a_run_without_a_token_or_settings_stops_before_anything_is_deployed`); a pull that does not
//! wait misses rows and scrubbing is checked on what the stand-in served (this test), and
//! `runner::logs`'s unit tests show both at the pull's level.

#![allow(clippy::unwrap_used)] // test code

use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use testkit::https_front::HttpsFront;
use testkit::log_analytics::{self, LogAnalytics};
use testkit::test_ca::TestCa;

const SUB: &str = "5a1c0d2e-7b3f-4e61-9a8d-2c4b6e8f0a13";
const TENANT: &str = "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b";
const RG: &str = "rg-probelab-rehearsal";
const WORKSPACE: &str = "3c2b1a09-8f7e-4d6c-b5a4-93827160f5e4";
const ARM_TOKEN: &str = "rehearsal-arm-token-0123456789abcdef";
const LA_TOKEN: &str = "rehearsal-loganalytics-token-0123456789";
const IDENTITY_SECRET: &str = "rehearsal-identity-header";
const INGESTION_DELAY: Duration = Duration::from_secs(4);
const ROW_LIMIT: usize = 20;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/azure-rehearsal.toml")
}

/// Stand-in `az` and `docker` for `labctl deploy`: canned answers with the rehearsal's ids.
const DEPLOY_STANDIN: &str = r#"#!/bin/sh
tool="${0##*/}"
case "$tool $*" in
  "az account show"*)
    echo '{"id": "@SUB@", "name": "Rehearsal", "tenantId": "@TENANT@", "user": {"name": "op@example.com", "type": "user"}}' ;;
  "az deployment group show"*)
    echo '{"environmentId": {"type": "String", "value": "/subscriptions/@SUB@/resourceGroups/@RG@/providers/Microsoft.App/managedEnvironments/probelab-env"},
           "registryLoginServer": {"type": "String", "value": "probelabrehearsal.azurecr.io"},
           "registryName": {"type": "String", "value": "probelabrehearsal"},
           "workspaceCustomerId": {"type": "String", "value": "@WS@"},
           "pullIdentityId": {"type": "String", "value": "/subscriptions/@SUB@/resourceGroups/@RG@/providers/Microsoft.ManagedIdentity/userAssignedIdentities/probelab-pull"},
           "loadgenJobName": {"type": "String", "value": "probelab-loadgen"},
           "samplerJobName": {"type": "String", "value": "probelab-perturbation-sampler"},
           "auditJobName": {"type": "String", "value": "probelab-audit"}}' ;;
  "docker info"*) echo 27.0.0 ;;
  "docker image inspect"*) echo sha256:rehearsal ;;
  *) echo '{}' ;;
esac
"#;

/// `labctl deploy --skip-build` against the stand-ins; returns the state file it wrote.
fn deploy_state(dir: &Path) -> PathBuf {
    let bin = dir.join("standin-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = DEPLOY_STANDIN
        .replace("@SUB@", SUB)
        .replace("@TENANT@", TENANT)
        .replace("@RG@", RG)
        .replace("@WS@", WORKSPACE);
    for tool in ["az", "docker"] {
        let p = bin.join(tool);
        std::fs::write(&p, &script).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let state = dir.join(".probelab/azure.json");
    let infra = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../infra");
    let out = Command::new(env!("CARGO_BIN_EXE_labctl"))
        .args([
            "deploy",
            "--resource-group",
            RG,
            "--location",
            "swedencentral",
        ])
        .args(["--skip-build", "--image-tag", "dev", "--infra"])
        .arg(&infra)
        .arg("--state")
        .arg(&state)
        .env_clear()
        .env("PATH", &bin)
        .env("HOME", dir)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "labctl deploy against the stand-ins: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    state
}

/// A proxy that only records where it was asked to go and refuses: every `*_PROXY` variable
/// points here, so any request to an origin other than the stand-ins shows up.
async fn recorder() -> (String, Arc<Mutex<Vec<String>>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let s = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut c, _)) = l.accept().await {
            let mut buf = vec![0u8; 1024];
            let n = c.read(&mut buf).await.unwrap_or(0);
            let first = String::from_utf8_lossy(&buf[..n])
                .lines()
                .next()
                .unwrap_or_default()
                .to_owned();
            s.lock().unwrap().push(first);
            let _ = c
                .write_all(b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n")
                .await;
        }
    });
    (url, seen)
}

/// Everything the Azure side of the rehearsal needs, running in this process.
struct Stage {
    dir: PathBuf,
    lp: Option<localplane::Localplane>,
    lp_logs: PathBuf,
    _ca: TestCa,
    ca_file: PathBuf,
    arm: HttpsFront,
    identity: testkit::fake_arm::FakeIdentity,
    la: LogAnalytics,
    la_front: HttpsFront,
    proxy: String,
    proxied: Arc<Mutex<Vec<String>>>,
}

impl Stage {
    async fn start(dir: &Path, runtime: localplane::RuntimeKind) -> Stage {
        let lp_dir = dir.join("localplane");
        let lp = localplane::start_with_access(
            localplane::LocalplaneConfig {
                max_replicas: localplane::quota::DEFAULT_MAX_REPLICAS,
                tls: false,
                listen: SocketAddr::from(([127, 0, 0, 1], 0)),
                state_dir: lp_dir.join("state"),
                evidence_dir: lp_dir.clone(),
                runtime,
            },
            localplane::Access {
                allow_remote: false,
                token: Some(ARM_TOKEN.into()),
            },
        )
        .await
        .unwrap();
        let ca = TestCa::new().unwrap();
        let ca_file = dir.join("rehearsal-ca.pem");
        ca.write_pem(&ca_file).unwrap();
        let arm = HttpsFront::start(&ca, lp.addr()).await.unwrap();
        let identity =
            testkit::fake_arm::FakeIdentity::start(IDENTITY_SECRET, None, "unused", 3600)
                .await
                .unwrap();
        identity.issue_for("https://management.azure.com", ARM_TOKEN);
        identity.issue_for("https://api.loganalytics.io", LA_TOKEN);
        let la = LogAnalytics::start(log_analytics::Config {
            workspace: WORKSPACE.into(),
            token: Some(LA_TOKEN.into()),
            logs_dir: lp_dir.join("logs"),
            ingestion_delay: INGESTION_DELAY,
            row_limit: ROW_LIMIT,
            tenant_id: TENANT.into(),
            subscription_id: SUB.into(),
            resource_group: RG.into(),
        })
        .await
        .unwrap();
        let la_front = HttpsFront::start(&ca, la.addr()).await.unwrap();
        let (proxy, proxied) = recorder().await;
        Stage {
            dir: dir.to_path_buf(),
            lp: Some(lp),
            lp_logs: lp_dir.join("logs"),
            _ca: ca,
            ca_file,
            arm,
            identity,
            la,
            la_front,
            proxy,
            proxied,
        }
    }

    /// What `labctl deploy`'s Bicep creates: the environment and the two jobs, through ARM
    /// (plain HTTP to localplane, with its token).
    async fn create_environment(&self) {
        let lp = self.lp.as_ref().unwrap();
        let vars = [
            ("SUBSCRIPTION_ID", SUB.to_owned()),
            ("RESOURCE_GROUP", RG.to_owned()),
            ("ARM_ENDPOINT", lp.base_url()),
            ("ARM_TOKEN_SOURCE", "static".to_owned()),
            ("LOCALPLANE_TOKEN", ARM_TOKEN.to_owned()),
        ];
        let t = runner::target::Target::azure(&|k| {
            vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone())
        })
        .unwrap();
        runner::deploy::local_infrastructure(&t, Duration::from_secs(600))
            .await
            .unwrap();
    }

    /// `labctl lab run` with `args`, the rehearsal's environment plus `env` (a value of `None`
    /// removes the variable).
    fn labctl(&self, args: &[&str], env: &[(&str, Option<&str>)]) -> (i32, String, String) {
        let mut c = Command::new(env!("CARGO_BIN_EXE_labctl"));
        c.args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.dir)
            .current_dir(&self.dir)
            .env("ARM_ENDPOINT", self.arm.url())
            .env("SSL_CERT_FILE", &self.ca_file)
            .env("IDENTITY_ENDPOINT", self.identity.endpoint())
            .env("IDENTITY_HEADER", IDENTITY_SECRET)
            .env("LOG_ANALYTICS_ENDPOINT", self.la_front.url())
            .env("PROBELAB_APP_SCHEME", "http")
            .env("PROBELAB_IMAGE_PREFIX", "probelab/")
            .env("TMPDIR", &self.dir)
            .stdin(Stdio::null());
        for k in [
            "HTTPS_PROXY",
            "HTTP_PROXY",
            "ALL_PROXY",
            "https_proxy",
            "http_proxy",
        ] {
            c.env(k, &self.proxy);
        }
        c.env("NO_PROXY", "127.0.0.1").env("no_proxy", "127.0.0.1");
        if let Ok(h) = std::env::var("DOCKER_HOST") {
            c.env("DOCKER_HOST", h);
        }
        for (k, v) in env {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        let out = c.output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    async fn stop(&mut self) {
        if let Some(lp) = self.lp.take() {
            lp.shutdown().await.unwrap();
        }
    }
}

/// The one pack under `root`.
fn only_pack(root: &Path) -> PathBuf {
    let packs: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(packs.len(), 1, "{packs:?}");
    packs[0].clone()
}

/// Every file under `dir`, recursively.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// The rows of a sink file printed at or before `until` (what the pull's window selects).
fn rows_until(file: &Path, until: &str) -> Vec<serde_json::Value> {
    let norm = |s: &str| {
        chrono::DateTime::parse_from_rfc3339(s)
            .unwrap()
            .with_timezone(&chrono::Utc)
    };
    let until = norm(until);
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|r| norm(r["TimeGenerated"].as_str().unwrap()) <= until)
        .collect()
}

/// The end of the pull's window, from its last count query (`... <= datetime(X) | count`; the
/// first ones are the run's check that the workspace answers).
fn pull_until(la: &LogAnalytics) -> String {
    let q = la
        .answered()
        .into_iter()
        .rev()
        .find(|a| a.query.ends_with("| count") && a.status == 200)
        .unwrap()
        .query;
    q.split("<= datetime(")
        .nth(1)
        .unwrap()
        .split(')')
        .next()
        .unwrap()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lab_runs_through_the_azure_path_and_judges_as_the_local_one() {
    let Some(docker) = testkit::require_docker().await else {
        return;
    };
    for img in ["subject", "loadgen", "perturbation-sampler"] {
        docker.require_image(img).await;
    }
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let mut stage = Stage::start(dir.path(), localplane::RuntimeKind::Docker).await;
    stage.create_environment().await;
    let state = deploy_state(dir.path());
    let evidence = dir.path().join("evidence");
    let lab = fixture().display().to_string();
    let (code, stdout, stderr) = stage.labctl(
        &[
            "lab",
            "run",
            &lab,
            "--target",
            "azure",
            "--progress",
            "plain",
            "--out",
            evidence.to_str().unwrap(),
            // Longer than the stand-in's ingestion delay: a settle shorter than the delay can
            // end in a lull before the run's last rows arrive.
            "--logs-settle",
            "6s",
            "--logs-settle-timeout",
            "90s",
        ],
        &[("PROBELAB_AZURE_STATE", Some(state.to_str().unwrap()))],
    );
    let wall = started.elapsed();
    stage.stop().await;
    eprintln!("{stderr}");
    // The pack goes with the temp dir: a verdict other than held prints its gates.
    let gates = std::fs::read_dir(&evidence)
        .into_iter()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("gates.json")).ok())
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(
        code, 0,
        "labctl lab run --target azure (held):\n{stdout}\n{stderr}\ngates.json:\n{gates}"
    );
    eprintln!("azure rehearsal: {:.0} s", wall.as_secs_f64());
    let pack = only_pack(&evidence);

    // Every ARM request went through the HTTPS front with the identity's token.
    let seen = stage.arm.seen();
    assert!(seen.len() > 10, "{seen:?}");
    let bearer = format!("Bearer {ARM_TOKEN}");
    for s in &seen {
        assert_eq!(s.authorization.as_deref(), Some(bearer.as_str()), "{s:?}");
        assert_ne!(s.status, 401, "{s:?}");
    }
    assert!(
        seen.iter()
            .any(|s| s.method == "POST" && s.path.contains("/start")),
        "a job start through ARM: {seen:?}"
    );
    // The token came from the managed-identity endpoint, over its protocol.
    let reqs = stage.identity.requests();
    assert!(
        reqs.iter().any(|r| r
            .resource
            .as_deref()
            .is_some_and(|x| x.starts_with("https://management.azure.com"))),
        "{reqs:?}"
    );
    assert!(
        reqs.iter().any(|r| r
            .resource
            .as_deref()
            .is_some_and(|x| x.starts_with("https://api.loganalytics.io"))),
        "{reqs:?}"
    );
    assert!(reqs.iter().all(|r| r.status == 200), "{reqs:?}");
    // Nothing left for another origin.
    assert!(
        stage.proxied.lock().unwrap().is_empty(),
        "{:?}",
        stage.proxied.lock().unwrap()
    );
    // Every Log Analytics query carried its own token, over HTTPS.
    let la_seen = stage.la_front.seen();
    assert!(!la_seen.is_empty());
    let la_bearer = format!("Bearer {LA_TOKEN}");
    assert!(
        la_seen
            .iter()
            .all(|s| s.authorization.as_deref() == Some(la_bearer.as_str()))
    );

    // The pull waited for ingestion: rows of the window had not arrived at its first query.
    let until = pull_until(&stage.la);
    let late = stage.la.late_for_first_query(&until);
    assert!(
        late > 0,
        "the ingestion delay left no row for the pull to wait for"
    );
    // The record limit cut answers, and the pull sliced around them.
    let answered = stage.la.answered();
    assert!(
        answered.iter().any(|a| a.partial),
        "no answer reached the record limit of {ROW_LIMIT}"
    );

    // The pack holds every row of the window, scrubbed.
    let mut twin_rows = 0;
    for table in log_analytics::TABLES {
        let local = rows_until(&stage.lp_logs.join(format!("{table}.ndjson")), &until);
        let pulled = std::fs::read_to_string(pack.join(format!("logs/{table}.ndjson"))).unwrap();
        assert_eq!(
            pulled.lines().count(),
            local.len(),
            "{table}: {late} rows were late"
        );
        twin_rows += local.len();
    }
    assert!(twin_rows > ROW_LIMIT);
    let console =
        std::fs::read_to_string(pack.join("logs/ContainerAppConsoleLogs_CL.ndjson")).unwrap();
    assert!(
        console.contains(r#"\"peer\":\"<ip>:"#),
        "client addresses were served and scrubbed"
    );
    assert!(console.contains(runner::scrub::TENANT));
    for f in files(&pack) {
        let text = String::from_utf8_lossy(&std::fs::read(&f).unwrap()).to_lowercase();
        for secret in [SUB, TENANT, WORKSPACE, "203.0.113."] {
            assert!(!text.contains(secret), "{} holds {secret}", f.display());
        }
    }

    // The same run judged as `--target local` judges it: localplane's own files as the logs.
    let twin = dir.path().join("twin");
    std::fs::create_dir_all(twin.join("logs")).unwrap();
    for f in ["lab.toml", "runs.json"] {
        std::fs::copy(pack.join(f), twin.join(f)).unwrap();
    }
    for table in log_analytics::TABLES {
        let rows = rows_until(&stage.lp_logs.join(format!("{table}.ndjson")), &until);
        let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
        std::fs::write(twin.join(format!("logs/{table}.ndjson")), text).unwrap();
    }
    let a = runner::run::analyze(&twin).await.unwrap();
    assert_eq!(
        a.verdict.verdict,
        analysis::Outcome::Held,
        "{:?}",
        a.verdict.reasons
    );
    let read = |p: &Path, f: &str| std::fs::read_to_string(p.join(f)).unwrap();
    let verdict = |p: &Path| {
        let v: serde_json::Value = serde_json::from_str(&read(p, "verdict.json")).unwrap();
        (v["verdict"].clone(), v["reasons"].clone())
    };
    assert_eq!(verdict(&pack), verdict(&twin));
    for prefix in ["q1-", "q2-", "q5-"] {
        let name = std::fs::read_dir(twin.join("tables"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .find(|n| n.starts_with(prefix) && n.ends_with(".tsv"))
            .unwrap();
        assert_eq!(
            read(&pack, &format!("tables/{name}")),
            read(&twin, &format!("tables/{name}")),
            "{name}"
        );
    }
    let v = runner::verify::verify(&pack).unwrap();
    assert!(v.ok(), "{v:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_without_a_token_or_settings_stops_before_anything_is_deployed() {
    // No container is started: localplane's process runtime, and the run must stop at its
    // checks.
    let dir = tempfile::tempdir().unwrap();
    let mut stage = Stage::start(
        dir.path(),
        localplane::RuntimeKind::Process {
            bin_dir: dir.path().join("no-binaries"),
        },
    )
    .await;
    stage.create_environment().await;
    let state = deploy_state(dir.path());
    let st = state.to_str().unwrap();
    let evidence = dir.path().join("evidence");
    let lab = fixture().display().to_string();
    let run = |env: &[(&str, Option<&str>)]| {
        stage.labctl(
            &[
                "lab",
                "run",
                &lab,
                "--target",
                "azure",
                "--progress",
                "plain",
                "--out",
                evidence.to_str().unwrap(),
            ],
            env,
        )
    };
    /// What is wrong, the variables that make it so, what stderr must say.
    type Case<'a> = (&'a str, Vec<(&'a str, Option<&'a str>)>, &'a [&'a str]);
    let cases: [Case; 4] = [
        (
            "no azure.json",
            vec![("PROBELAB_AZURE_STATE", Some("/nonexistent/azure.json"))],
            &["labctl deploy", "/nonexistent/azure.json"],
        ),
        (
            "no token sent",
            vec![
                ("PROBELAB_AZURE_STATE", Some(st)),
                ("ARM_TOKEN_SOURCE", Some("none")),
            ],
            &["environment probelab-env", "401", "labctl deploy"],
        ),
        (
            "no identity",
            vec![
                ("PROBELAB_AZURE_STATE", Some(st)),
                ("ARM_TOKEN_SOURCE", Some("managed-identity")),
                ("IDENTITY_HEADER", Some("not-the-secret")),
            ],
            &[
                "no ARM token from the managed-identity identity",
                "az login",
            ],
        ),
        (
            "a workspace that does not answer",
            vec![
                ("PROBELAB_AZURE_STATE", Some(st)),
                (
                    "LOG_ANALYTICS_WORKSPACE_ID",
                    Some("00000000-1111-2222-3333-444444444444"),
                ),
            ],
            &[
                "workspace 00000000-1111-2222-3333-444444444444 does not answer",
                "WorkspaceNotFoundError",
            ],
        ),
    ];
    for (what, env, needles) in &cases {
        let (code, stdout, stderr) = run(env);
        assert_eq!(code, 1, "{what}: {stdout}\n{stderr}");
        for n in *needles {
            assert!(stderr.contains(n), "{what}: {n:?} in:\n{stderr}");
        }
        assert!(!evidence.exists(), "{what}: no pack before the checks pass");
    }
    // Nothing was created: only the environment and the jobs are there.
    let created: Vec<_> = stage
        .arm
        .seen()
        .into_iter()
        .filter(|s| s.method != "GET")
        .collect();
    assert!(created.is_empty(), "{created:?}");
    // Without a token the front saw the request and localplane refused it.
    assert!(
        stage
            .arm
            .seen()
            .iter()
            .any(|s| s.authorization.is_none() && s.status == 401)
    );
    stage.stop().await;
}
