//! `labctl deploy` / `destroy` / `azure-env` against stand-in `az` and `docker` on PATH: a shell
//! script that appends its argv to a log (one line per call) and answers canned JSON.
#![allow(clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const STANDIN: &str = r#"#!/bin/sh
# Stand-in for az and docker: log the call, answer canned JSON.
tool="${0##*/}"
printf '%s %s\n' "$tool" "$*" >> "$STANDIN_LOG"
case "$tool $*" in
  "az account show"*)
    if [ -n "$STANDIN_NOT_LOGGED_IN" ]; then
      echo "ERROR: Please run 'az login' to setup account." >&2; exit 1
    fi
    echo '{"id": "11111111-2222-3333-4444-555555555555", "name": "Lab subscription", "tenantId": "t", "user": {"name": "op@example.com", "type": "user"}}' ;;
  "az deployment group show"*)
    echo '{"environmentId": {"type": "String", "value": "/subscriptions/s/resourceGroups/rg-test/providers/Microsoft.App/managedEnvironments/probelab-env"},
           "registryLoginServer": {"type": "String", "value": "probelabacr1.azurecr.io"},
           "registryName": {"type": "String", "value": "probelabacr1"},
           "workspaceCustomerId": {"type": "String", "value": "ws-customer-id"},
           "loadgenJobName": {"type": "String", "value": "probelab-loadgen"}}' ;;
  "docker image inspect"*)
    case "$*" in *"$STANDIN_MISSING_IMAGE"*) [ -n "$STANDIN_MISSING_IMAGE" ] && { echo "Error: No such image" >&2; exit 1; } ;; esac
    echo sha256:abc ;;
  *) echo '{}' ;;
esac
"#;

struct Stand {
    dir: tempfile::TempDir,
    bin: PathBuf,
    log: PathBuf,
}

fn stand_in(tools: &[&str]) -> Stand {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    for t in tools {
        let p = bin.join(t);
        std::fs::write(&p, STANDIN).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let log = dir.path().join("calls.log");
    Stand { dir, bin, log }
}

fn infra() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../infra")
}

impl Stand {
    fn labctl(&self, args: &[&str], envs: &[(&str, &str)]) -> (i32, String, String) {
        let mut c = Command::new(env!("CARGO_BIN_EXE_labctl"));
        c.args(args)
            .env_clear()
            .env("PATH", &self.bin)
            .env("STANDIN_LOG", &self.log)
            .env("HOME", self.dir.path())
            .current_dir(self.dir.path())
            .stdin(Stdio::null());
        for (k, v) in envs {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        (
            out.status.code().unwrap(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn state(&self) -> PathBuf {
        self.dir.path().join("state/azure.json")
    }
}

fn deploy_args<'a>(infra: &'a str, state: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec![
        "deploy",
        "--resource-group",
        "rg-test",
        "--location",
        "swedencentral",
        "--infra",
        infra,
        "--state",
        state,
    ];
    v.extend_from_slice(extra);
    v
}

#[test]
fn deploy_runs_the_steps_in_order_and_writes_the_state_file() {
    let s = stand_in(&["az", "docker"]);
    let infra = infra().display().to_string();
    let state = s.state().display().to_string();
    let (code, stdout, stderr) = s.labctl(
        &deploy_args(
            &infra,
            &state,
            &[
                "--image-tag",
                "1a2b3c4",
                "--no-zone-redundancy",
                "--expires-at",
                "2026-12-31",
                "--registry",
                "probelabacr1",
                "--base-name",
                "plab",
            ],
        ),
        &[],
    );
    assert_eq!(code, 0, "stdout: {stdout}\nstderr: {stderr}");
    let calls = s.calls();
    let bicep = format!("{infra}/main.bicep");
    let params = format!("@{infra}/main.parameters.json");
    let mut expected = vec!["az account show -o json".to_owned()];
    for img in ["subject", "loadgen", "perturbation-sampler", "audit"] {
        expected.push(format!(
            "docker image inspect --format {{{{.Id}}}} probelab/{img}:1a2b3c4"
        ));
    }
    expected.push(
        "az group create -n rg-test -l swedencentral --tags expires-at=2026-12-31 \
         managedBy=probelab-labctl -o none"
            .into(),
    );
    expected.push(format!(
        "az deployment group create -n probelab -g rg-test -f {bicep} -p {params} \
         -p baseName=plab imageTag=1a2b3c4 zoneRedundant=false expiresAt=2026-12-31 \
         registryName=probelabacr1 -o none"
    ));
    expected.push(
        "az deployment group show -n probelab -g rg-test --query properties.outputs -o json".into(),
    );
    expected.push("az acr login -n probelabacr1".into());
    for img in ["subject", "loadgen", "perturbation-sampler", "audit"] {
        let remote = format!("probelabacr1.azurecr.io/probelab/{img}:1a2b3c4");
        expected.push(format!("docker tag probelab/{img}:1a2b3c4 {remote}"));
        expected.push(format!("docker push {remote}"));
    }
    assert_eq!(calls, expected, "stderr: {stderr}");

    // Progress on stderr, nothing on stdout.
    assert!(stdout.is_empty(), "{stdout}");
    assert!(stderr.contains("pushing probelabacr1.azurecr.io/probelab/audit:1a2b3c4"));

    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(s.state()).unwrap()).unwrap();
    assert_eq!(v["SUBSCRIPTION_ID"], "11111111-2222-3333-4444-555555555555");
    assert_eq!(v["RESOURCE_GROUP"], "rg-test");
    assert_eq!(v["LOG_ANALYTICS_WORKSPACE_ID"], "ws-customer-id");
    assert_eq!(v["PROBELAB_BASE_NAME"], "plab");
    assert_eq!(
        v["PROBELAB_IMAGE_PREFIX"],
        "probelabacr1.azurecr.io/probelab/"
    );
    assert_eq!(v["outputs"]["loadgenJobName"], "probelab-loadgen");

    // azure-env turns the file into what `lab run --target azure` reads.
    let (code, stdout, stderr) = s.labctl(&["azure-env", "--state", &state], &[]);
    assert_eq!(code, 0, "{stderr}");
    for line in [
        "export SUBSCRIPTION_ID='11111111-2222-3333-4444-555555555555'",
        "export RESOURCE_GROUP='rg-test'",
        "export LOG_ANALYTICS_WORKSPACE_ID='ws-customer-id'",
        "export PROBELAB_BASE_NAME='plab'",
        "export PROBELAB_IMAGE_PREFIX='probelabacr1.azurecr.io/probelab/'",
    ] {
        assert!(stdout.lines().any(|l| l == line), "{line} in:\n{stdout}");
    }
    assert!(!stdout.contains("outputs"), "{stdout}");
}

#[test]
fn deploy_defaults_zone_redundancy_on_and_registry_from_the_template() {
    let s = stand_in(&["az", "docker"]);
    let infra = infra().display().to_string();
    let state = s.state().display().to_string();
    let (code, _, stderr) = s.labctl(&deploy_args(&infra, &state, &[]), &[]);
    assert_eq!(code, 0, "{stderr}");
    let calls = s.calls();
    let create = calls
        .iter()
        .find(|c| c.starts_with("az deployment group create"))
        .unwrap();
    assert!(
        create.contains("baseName=probelab imageTag=dev zoneRedundant=true expiresAt="),
        "{create}"
    );
    assert!(!create.contains("registryName="), "{create}");
    assert!(
        calls
            .iter()
            .any(|c| c == "docker push probelabacr1.azurecr.io/probelab/subject:dev")
    );
}

#[test]
fn deploy_without_az_on_path_says_how_to_install_it() {
    let s = stand_in(&["docker"]);
    let infra = infra().display().to_string();
    let state = s.state().display().to_string();
    let (code, _, stderr) = s.labctl(&deploy_args(&infra, &state, &[]), &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("Azure CLI (`az`) is not on PATH"),
        "{stderr}"
    );
    assert!(stderr.contains("install-azure-cli"), "{stderr}");
    assert!(!s.state().exists());
}

#[test]
fn deploy_when_not_logged_in_stops_before_creating_anything() {
    let s = stand_in(&["az", "docker"]);
    let infra = infra().display().to_string();
    let state = s.state().display().to_string();
    let (code, _, stderr) = s.labctl(
        &deploy_args(&infra, &state, &[]),
        &[("STANDIN_NOT_LOGGED_IN", "1")],
    );
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("not logged in to Azure: run `az login`"),
        "{stderr}"
    );
    assert_eq!(s.calls(), ["az account show -o json"]);
}

#[test]
fn deploy_with_a_missing_image_names_the_build_script() {
    let s = stand_in(&["az", "docker"]);
    let infra = infra().display().to_string();
    let state = s.state().display().to_string();
    let (code, _, stderr) = s.labctl(
        &deploy_args(&infra, &state, &[]),
        &[("STANDIN_MISSING_IMAGE", "probelab/audit:dev")],
    );
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("probelab/audit:dev"), "{stderr}");
    assert!(stderr.contains("scripts/build-images.sh"), "{stderr}");
    assert!(
        !s.calls().iter().any(|c| c.starts_with("az group create")),
        "{:?}",
        s.calls()
    );
}

#[test]
fn destroy_refuses_without_yes_when_stdin_is_not_a_terminal() {
    let s = stand_in(&["az"]);
    let (code, _, stderr) = s.labctl(&["destroy", "--resource-group", "rg-test"], &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("pass --yes"), "{stderr}");
    assert!(s.calls().is_empty(), "{:?}", s.calls());

    let (code, _, stderr) = s.labctl(&["destroy", "--resource-group", "rg-test", "--yes"], &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        s.calls(),
        [
            "az account show -o json",
            "az group delete -n rg-test --yes -o none"
        ]
    );
}

#[test]
fn help_teaches_what_deploy_creates_and_costs() {
    let s = stand_in(&[]);
    let (code, stdout, _) = s.labctl(&["deploy", "--help"], &[]);
    assert_eq!(code, 0);
    for w in [
        "Example",
        "labctl deploy --resource-group",
        "Costs",
        "Container Apps environment",
        "scripts/build-images.sh",
        "labctl destroy",
    ] {
        assert!(stdout.contains(w), "{w} in deploy --help:\n{stdout}");
    }
}
