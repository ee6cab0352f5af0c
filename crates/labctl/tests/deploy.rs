//! `labctl deploy` / `destroy` / `azure-env` against stand-in `az` and `docker` on PATH: a shell
//! script that appends its argv to a log (one line per call) and answers canned JSON. The
//! workspace (`--workspace-dir`) is a temporary directory whose scripts/build-images.sh is a
//! stand-in that logs its call too, so the build step is seen in order with the others.
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
  "az deployment group create"*)
    # Remember the pass: the outputs name the jobs only once they are deployed.
    # (builtins only: PATH holds nothing but the stand-ins)
    case "$*" in *deployJobs=true*) echo yes > "$STANDIN_LOG.jobs" ;; *) echo no > "$STANDIN_LOG.jobs" ;; esac
    echo '{}' ;;
  "az deployment group show"*)
    jobs=""; deployed=no; [ -f "$STANDIN_LOG.jobs" ] && read -r deployed < "$STANDIN_LOG.jobs"
    [ "$deployed" = yes ] && jobs="probelab-"
    echo '{"environmentId": {"type": "String", "value": "/subscriptions/s/resourceGroups/rg-test/providers/Microsoft.App/managedEnvironments/probelab-env"},
           "registryLoginServer": {"type": "String", "value": "probelabacr1.azurecr.io"},
           "registryName": {"type": "String", "value": "probelabacr1"},
           "workspaceCustomerId": {"type": "String", "value": "ws-customer-id"},
           "pullIdentityId": {"type": "String", "value": "/subscriptions/s/resourceGroups/rg-test/providers/Microsoft.ManagedIdentity/userAssignedIdentities/probelab-pull"},
           "loadgenJobName": {"type": "String", "value": "'"${jobs:+${jobs}loadgen}"'"},
           "samplerJobName": {"type": "String", "value": "'"${jobs:+${jobs}perturbation-sampler}"'"},
           "auditJobName": {"type": "String", "value": "'"${jobs:+${jobs}audit}"'"}}' ;;
  "docker info"*)
    if [ -n "$STANDIN_NO_ENGINE" ]; then
      echo "Cannot connect to the Docker daemon at unix:///var/run/docker.sock." >&2; exit 1
    fi
    echo 20.10.24 ;;
  "docker image inspect"*)
    case "$*" in *"$STANDIN_MISSING_IMAGE"*) [ -n "$STANDIN_MISSING_IMAGE" ] && { echo "Error: No such image" >&2; exit 1; } ;; esac
    echo sha256:abc ;;
  *) echo '{}' ;;
esac
"#;

/// Stand-in for scripts/build-images.sh: logs its call, prints progress, fails on request.
const BUILD_STANDIN: &str = r#"#!/bin/sh
printf 'build-images.sh %s\n' "$*" >> "$STANDIN_LOG"
echo "==> [build-images 0s] stand-in build"
if [ -n "$STANDIN_BUILD_FAIL" ]; then echo "build-images: cargo failed" >&2; exit 1; fi
"#;

struct Stand {
    dir: tempfile::TempDir,
    bin: PathBuf,
    log: PathBuf,
    workspace: PathBuf,
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
    let workspace = dir.path().join("ws");
    std::fs::create_dir_all(workspace.join("scripts")).unwrap();
    let script = workspace.join("scripts/build-images.sh");
    std::fs::write(&script, BUILD_STANDIN).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    Stand {
        dir,
        bin,
        log,
        workspace,
    }
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

fn deploy_args<'a>(
    s: &'a Stand,
    infra: &'a str,
    state: &'a str,
    extra: &[&'a str],
) -> Vec<&'a str> {
    let mut v = vec![
        "deploy",
        "--resource-group",
        "rg-test",
        "--location",
        "swedencentral",
        "--workspace-dir",
        s.workspace.to_str().unwrap(),
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
            &s,
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
    let mut expected = vec![
        "az account show -o json".to_owned(),
        "docker info --format {{.ServerVersion}}".to_owned(),
        "build-images.sh ".to_owned(),
    ];
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
    let create = |jobs: bool| {
        format!(
            "az deployment group create -n probelab -g rg-test -f {bicep} -p {params} \
             -p baseName=plab imageTag=1a2b3c4 zoneRedundant=false expiresAt=2026-12-31 \
             registryName=probelabacr1 deployJobs={jobs} -o none"
        )
    };
    let show = "az deployment group show -n probelab -g rg-test --query properties.outputs -o json";
    // Pass 1 without the jobs, then the images into the registry, then pass 2 with the jobs:
    // no job exists before its image is in the registry.
    expected.push(create(false));
    expected.push(show.into());
    expected.push("az acr login -n probelabacr1".into());
    for img in ["subject", "loadgen", "perturbation-sampler", "audit"] {
        let remote = format!("probelabacr1.azurecr.io/probelab/{img}:1a2b3c4");
        expected.push(format!("docker tag probelab/{img}:1a2b3c4 {remote}"));
        expected.push(format!("docker push {remote}"));
    }
    expected.push(create(true));
    expected.push(show.into());
    assert_eq!(calls, expected, "stderr: {stderr}");

    // Progress on stderr, nothing on stdout.
    assert!(stdout.is_empty(), "{stdout}");
    assert!(stderr.contains("pushing probelabacr1.azurecr.io/probelab/audit:1a2b3c4"));
    // The build script's own output is shown, on stderr.
    assert!(
        stderr.contains("==> [build-images 0s] stand-in build"),
        "{stderr}"
    );
    assert!(
        stderr.contains("pass 1 of 2") && stderr.contains("pass 2 of 2"),
        "{stderr}"
    );
    assert!(stderr.contains("job probelab-audit"), "{stderr}");

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
    // What `lab run --target azure` needs for the apps to pull from the registry.
    assert_eq!(v["PROBELAB_REGISTRY_SERVER"], "probelabacr1.azurecr.io");
    assert_eq!(
        v["PROBELAB_PULL_IDENTITY_ID"],
        "/subscriptions/s/resourceGroups/rg-test/providers/Microsoft.ManagedIdentity/userAssignedIdentities/probelab-pull"
    );

    // azure-env turns the file into what `lab run --target azure` reads.
    let (code, stdout, stderr) = s.labctl(&["azure-env", "--state", &state], &[]);
    assert_eq!(code, 0, "{stderr}");
    for line in [
        "export SUBSCRIPTION_ID='11111111-2222-3333-4444-555555555555'",
        "export RESOURCE_GROUP='rg-test'",
        "export LOG_ANALYTICS_WORKSPACE_ID='ws-customer-id'",
        "export PROBELAB_BASE_NAME='plab'",
        "export PROBELAB_IMAGE_PREFIX='probelabacr1.azurecr.io/probelab/'",
        "export PROBELAB_REGISTRY_SERVER='probelabacr1.azurecr.io'",
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
    let (code, _, stderr) = s.labctl(&deploy_args(&s, &infra, &state, &[]), &[]);
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
    let (code, _, stderr) = s.labctl(&deploy_args(&s, &infra, &state, &[]), &[]);
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
        &deploy_args(&s, &infra, &state, &[]),
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
fn deploy_with_skip_build_does_not_build_and_a_missing_image_says_what_to_do() {
    let s = stand_in(&["az", "docker"]);
    let infra = infra().display().to_string();
    let state = s.state().display().to_string();
    let (code, _, stderr) = s.labctl(
        &deploy_args(&s, &infra, &state, &["--skip-build"]),
        &[("STANDIN_MISSING_IMAGE", "probelab/audit:dev")],
    );
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("probelab/audit:dev"), "{stderr}");
    assert!(stderr.contains("scripts/build-images.sh"), "{stderr}");
    assert!(stderr.contains("--skip-build"), "{stderr}");
    let calls = s.calls();
    assert!(
        !calls.iter().any(|c| c.starts_with("build-images.sh")),
        "{calls:?}"
    );
    assert!(
        !calls.iter().any(|c| c.starts_with("az group create")),
        "{calls:?}"
    );

    // With the images there, --skip-build goes straight on to Azure.
    let s = stand_in(&["az", "docker"]);
    let (code, _, stderr) = s.labctl(&deploy_args(&s, &infra, &state, &["--skip-build"]), &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!s.calls().iter().any(|c| c.starts_with("build-images.sh")));
    assert!(s.calls().iter().any(|c| c.contains("deployJobs=true")));
}

#[test]
fn deploy_stops_before_azure_when_the_build_fails() {
    let s = stand_in(&["az", "docker"]);
    let infra = infra().display().to_string();
    let state = s.state().display().to_string();
    let (code, _, stderr) = s.labctl(
        &deploy_args(&s, &infra, &state, &[]),
        &[("STANDIN_BUILD_FAIL", "1")],
    );
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("build-images.sh failed"), "{stderr}");
    assert!(stderr.contains("build-images: cargo failed"), "{stderr}");
    let calls = s.calls();
    assert_eq!(
        calls.last().map(String::as_str),
        Some("build-images.sh "),
        "{calls:?}"
    );
    assert!(!s.state().exists());
}

#[test]
fn deploy_without_docker_or_its_engine_says_so_before_building() {
    let s = stand_in(&["az"]);
    let infra = infra().display().to_string();
    let state = s.state().display().to_string();
    let (code, _, stderr) = s.labctl(&deploy_args(&s, &infra, &state, &[]), &[]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("`docker` is not on PATH"), "{stderr}");
    assert!(stderr.contains("install Docker"), "{stderr}");
    assert_eq!(s.calls(), ["az account show -o json"]);

    let s = stand_in(&["az", "docker"]);
    let (code, _, stderr) = s.labctl(
        &deploy_args(&s, &infra, &state, &[]),
        &[("STANDIN_NO_ENGINE", "1")],
    );
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("Docker engine is unreachable"), "{stderr}");
    assert!(
        stderr.contains("Cannot connect to the Docker daemon"),
        "{stderr}"
    );
    assert!(!s.calls().iter().any(|c| c.starts_with("build-images.sh")));
}

#[test]
fn deploy_finds_infra_and_the_build_script_under_the_workspace_dir() {
    let s = stand_in(&["az", "docker"]);
    let state = s.state().display().to_string();
    // No --infra: <workspace-dir>/infra, which this stand-in workspace lacks.
    let ws = s.workspace.display().to_string();
    let (code, _, stderr) = s.labctl(
        &[
            "deploy",
            "-g",
            "rg-test",
            "-l",
            "swedencentral",
            "--workspace-dir",
            &ws,
            "--state",
            &state,
        ],
        &[],
    );
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains(&format!("{ws}/infra/main.bicep not found")),
        "{stderr}"
    );
    assert!(stderr.contains("--workspace-dir"), "{stderr}");
    assert!(s.calls().is_empty(), "{:?}", s.calls());

    // PROBELAB_ROOT is the same setting; the build script is looked up under it.
    std::fs::remove_file(s.workspace.join("scripts/build-images.sh")).unwrap();
    let infra = infra().display().to_string();
    let (code, _, stderr) = s.labctl(
        &[
            "deploy", "-g", "rg-test", "-l", "x", "--infra", &infra, "--state", &state,
        ],
        &[("PROBELAB_ROOT", &ws)],
    );
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains(&format!("{ws}/scripts/build-images.sh not found")),
        "{stderr}"
    );
    assert!(stderr.contains("--skip-build"), "{stderr}");
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
