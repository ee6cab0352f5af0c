//! The pinned Azure CLI and Python SDK (installed by `scripts/install-pyclients.sh`) pointed at a
//! localplane over HTTPS, exactly as README's "Run your own az scripts against localplane" says:
//! a cloud registered from `/metadata/endpoints`, `az login --identity` through the identity
//! endpoint, the CA trusted through `REQUESTS_CA_BUNDLE`. Every az config is the test's own
//! (`AZURE_CONFIG_DIR`), so nothing touches the user's.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use testkit::localplane::Harness;

/// The folder holding the pinned clients' venvs, `cli/` and `sdk/` (`PROBELAB_PYCLIENTS`, else
/// where `scripts/install-pyclients.sh` puts them).
pub fn venv() -> Option<PathBuf> {
    if std::env::var("PROBELAB_SKIP_REAL_CLIENTS").as_deref() == Ok("1") {
        eprintln!("PROBELAB_SKIP_REAL_CLIENTS=1: the real-clients conformance suite is skipped");
        return None;
    }
    let dir = std::env::var_os("PROBELAB_PYCLIENTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/tmp/probelab-pyclients"));
    assert!(
        dir.join("cli/bin/az").is_file() && dir.join("sdk/bin/python").is_file(),
        "the pinned Azure CLI and SDK are not installed in {} (run scripts/install-pyclients.sh, \
         or set PROBELAB_PYCLIENTS to its venv; PROBELAB_SKIP_REAL_CLIENTS=1 skips this suite)",
        dir.display()
    );
    Some(dir)
}

/// A localplane with TLS and an az CLI logged in to it.
pub struct Session {
    pub plane: Harness,
    pub venv: PathBuf,
    /// `https://127.0.0.1:PORT`.
    pub arm: String,
    config_dir: tempfile::TempDir,
}

/// What an az command printed and how it ended.
#[derive(Debug)]
pub struct Ran {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    /// The output as JSON (`-o json`, the default), `Null` when empty.
    pub fn json(&self) -> Value {
        if self.stdout.trim().is_empty() {
            return Value::Null;
        }
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.stdout))
    }
}

impl Session {
    /// localplane (process runtime, TLS), the cloud registered and `az login --identity` done.
    pub async fn start(venv: PathBuf) -> Session {
        let plane = Harness::process_tls().await;
        let arm = plane.https_url().unwrap();
        let s = Session {
            plane,
            venv,
            arm,
            config_dir: tempfile::tempdir().unwrap(),
        };
        let register = format!("{}/", s.arm);
        s.ok(&[
            "cloud",
            "register",
            "--name",
            "localplane",
            "--endpoint-resource-manager",
            &register,
        ])
        .await;
        s.ok(&["cloud", "set", "--name", "localplane"]).await;
        let login = s.ok(&["login", "--identity"]).await.json();
        assert_eq!(
            login[0]["id"],
            localplane::tenancy::SUBSCRIPTION_ID,
            "{login}"
        );
        s
    }

    /// What `labctl local az` exports, for this localplane.
    pub fn env(&self) -> Vec<(String, String)> {
        let ca = self.plane.ca_path().unwrap();
        let ca = ca.to_string_lossy().into_owned();
        vec![
            (
                "AZURE_CONFIG_DIR".into(),
                self.config_dir.path().to_string_lossy().into_owned(),
            ),
            ("REQUESTS_CA_BUNDLE".into(), ca.clone()),
            ("SSL_CERT_FILE".into(), ca),
            (
                "IDENTITY_ENDPOINT".into(),
                format!("{}{}", self.arm, localplane::tenancy::IDENTITY_PATH),
            ),
            ("IDENTITY_HEADER".into(), "localplane".into()),
            (
                "AZURE_SUBSCRIPTION_ID".into(),
                localplane::tenancy::SUBSCRIPTION_ID.into(),
            ),
            ("ARM_ENDPOINT".into(), self.arm.clone()),
            ("AZURE_CORE_COLLECT_TELEMETRY".into(), "false".into()),
            ("AZURE_CORE_NO_COLOR".into(), "true".into()),
            ("AZURE_CORE_ONLY_SHOW_ERRORS".into(), "true".into()),
        ]
    }

    /// Runs `az <args>`.
    pub async fn az(&self, args: &[&str]) -> Ran {
        self.run(&self.venv.join("cli/bin/az"), args).await
    }

    /// Runs `az <args>` and panics, naming the command and its stderr, unless it exits 0.
    pub async fn ok(&self, args: &[&str]) -> Ran {
        let r = self.az(args).await;
        assert!(r.ok, "az {} failed:\n{}", args.join(" "), r.stderr);
        r
    }

    /// Runs the SDK venv's python on `script` with `args`.
    pub async fn python(&self, script: &Path, args: &[&str]) -> Ran {
        let mut all = vec![script.to_str().unwrap()];
        all.extend_from_slice(args);
        self.run(&self.venv.join("sdk/bin/python"), &all).await
    }

    async fn run(&self, program: &Path, args: &[&str]) -> Ran {
        let out = tokio::time::timeout(
            Duration::from_secs(180),
            tokio::process::Command::new(program)
                .args(args)
                .envs(self.env())
                .env_remove("AZURE_POD_IDENTITY_AUTHORITY_HOST")
                .kill_on_drop(true)
                .output(),
        )
        .await
        .unwrap_or_else(|_| panic!("{} {} took over 180 s", program.display(), args.join(" ")))
        .unwrap_or_else(|e| panic!("{}: {e}", program.display()));
        Ran {
            ok: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// A GET on localplane's own (plain HTTP) ARM endpoint: the state a command left, read
    /// apart from the client that made it.
    pub async fn arm_get(&self, path: &str) -> Value {
        let url = format!("{}{path}", self.plane.base_url());
        let url: url::Url = url.parse().unwrap();
        let addr = testkit::http::loopback(url.port().unwrap());
        let pq = match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_owned(),
        };
        let out = testkit::http::get(addr, &pq, Duration::from_secs(10)).await;
        assert_eq!(out.status(), Some(200), "GET {path}");
        out.response().expect_json()
    }

    pub async fn stop(self) {
        self.plane.stop().await;
    }
}
