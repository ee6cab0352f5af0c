//! `labctl deploy` / `labctl destroy` / `labctl azure-env`: create probelab's Azure environment
//! from infra/main.bicep, build and push the images, and remember where it is.
//!
//! Everything goes through the operator's own tools, found on PATH: the Azure CLI (`az`, logged
//! in) and Docker. The steps, in order:
//!
//! 1. `az account show` (the subscription; fails clearly when not logged in),
//! 2. `docker info` (a clear error when Docker is missing or its engine is down), then
//!    `<workspace>/scripts/build-images.sh` (skipped with `--skip-build`) and `docker image
//!    inspect probelab/<img>:<tag>` for each of the four Azure images,
//! 3. `az group create`,
//! 4. pass 1: `az deployment group create -n probelab -g RG -f infra/main.bicep -p
//!    infra/main.parameters.json -p baseName=.. imageTag=.. zoneRedundant=.. expiresAt=..
//!    [registryName=..] deployJobs=false`: registry, identities, workspace, environment, no jobs,
//! 5. `az deployment group show -n probelab -g RG --query properties.outputs`,
//! 6. `az acr login -n <registry>`, then `docker tag` + `docker push` of each image,
//! 7. pass 2: the same deployment with `deployJobs=true` (the jobs, whose images are now in the
//!    registry, so the first audit execution can pull), and its outputs again,
//! 8. the state file (`.probelab/azure.json`).
//!
//! The two passes exist because a job created before its image is in the registry fails to pull
//! (the audit cron job starts within five minutes of being created).
//!
//! The state file's top-level keys are the environment variables `labctl lab run --target
//! azure` reads (`SUBSCRIPTION_ID`, `RESOURCE_GROUP`, `LOG_ANALYTICS_WORKSPACE_ID`,
//! `PROBELAB_BASE_NAME`, `PROBELAB_IMAGE_PREFIX`, `PROBELAB_REGISTRY_SERVER`,
//! `PROBELAB_PULL_IDENTITY_ID`), plus the deployment's outputs under
//! `outputs`. `lab run --target azure` reads it (`runner::target::read_azure_state`) for every
//! variable the environment does not set; `labctl azure-env` prints it as `export` lines
//! (`eval "$(labctl azure-env)"`) for the other commands. No value in
//! it is a secret (the template has no secret output; the workspace key never leaves Azure).

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, anyhow, bail};
use serde_json::Value;

use crate::exit;

/// The images `labctl deploy` pushes (as scripts/build-images.sh names them).
pub const IMAGES: [&str; 4] = ["subject", "loadgen", "perturbation-sampler", "audit"];
/// Where `labctl deploy` writes the outputs and `labctl azure-env` reads them.
pub const DEFAULT_STATE: &str = runner::target::AZURE_STATE_FILE;
/// The ARM deployment's name (`az deployment group show -n`).
pub const DEPLOYMENT_NAME: &str = "probelab";

const AZ_INSTALL: &str = "the Azure CLI (`az`) is not on PATH; install it \
    (https://learn.microsoft.com/cli/azure/install-azure-cli; Debian/Ubuntu: \
    `curl -sL https://aka.ms/InstallAzureCLIDeb | sudo bash`), then `az login`";

#[derive(clap::Args, Debug)]
#[command(
    about = "Build the images, create probelab's Azure environment from infra/main.bicep, push",
    long_about = "Build the images, create probelab's Azure environment from infra/main.bicep and \
        push the images to its registry.\n\n\
        1. Builds probelab/{subject,loadgen,perturbation-sampler,audit} with \
        scripts/build-images.sh (static binaries, FROM scratch; --skip-build when you built \
        already).\n\
        2. Creates (or updates) the resource group and deploys, without the jobs: a Log Analytics \
        workspace, a VNet, a Container Apps environment (Consumption), a container registry \
        (admin user disabled), a pull identity (AcrPull) and a sampler identity (Reader on the \
        group).\n\
        3. Pushes the four images to the registry (az acr login, docker tag, docker push).\n\
        4. Deploys again with the jobs <base>-loadgen, <base>-perturbation-sampler and \
        <base>-audit (cron */5): their images are in the registry by now, so the first \
        executions can pull.\n\
        5. Writes the outputs to .probelab/azure.json; `eval \"$(labctl azure-env)\"` exports \
        them for `labctl lab run --target azure`.\n\n\
        The subject apps are not deployed here: `labctl lab run --target azure` creates each \
        lab's apps, pulling from the registry with the pull identity.\n\n\
        Needs: the Azure CLI logged in (`az login`), Docker with a running engine, and the \
        repository (--workspace-dir, default the working directory).\n\n\
        Costs (list prices, late 2026; see infra/README.md): the registry (Basic) is about $5 a \
        month while it exists; Log Analytics a few dollars per GB ingested (a lab ingests well \
        under 1 GB); Container Apps Consumption bills per vCPU- and GiB-second while something \
        runs (a full rollout lab is about $0.50), plus the audit job every 5 minutes. Delete it \
        all with `labctl destroy --resource-group RG`.",
    after_help = "Example:\n  \
        labctl deploy --resource-group probelab-rg --location swedencentral --expires-at 2026-12-31\n  \
        eval \"$(labctl azure-env)\"\n  \
        labctl lab run labs/startup-degraded.toml --target azure --profile quick\n  \
        labctl destroy --resource-group probelab-rg\n\n\
        Images built already (scripts/build-images.sh tags :dev and :<git short sha>):\n  \
        labctl deploy -g probelab-rg -l swedencentral --skip-build --image-tag 1a2b3c4"
)]
pub struct Args {
    /// The resource group to create (or reuse).
    #[arg(long, short = 'g', value_name = "RG")]
    pub resource_group: String,
    /// Azure region, e.g. swedencentral.
    #[arg(long, short = 'l', value_name = "LOCATION")]
    pub location: String,
    /// Registry name (globally unique, 5-50 alphanumerics) [default: the template's
    /// <base> plus a suffix derived from the resource group].
    #[arg(long, value_name = "NAME")]
    pub registry: Option<String>,
    /// Prefix of every resource name (3-12 lower-case letters and digits).
    #[arg(
        long,
        env = "PROBELAB_BASE_NAME",
        default_value = "probelab",
        value_name = "NAME"
    )]
    pub base_name: String,
    /// Tag of the local images to push (scripts/build-images.sh tags `dev` and the git short sha).
    #[arg(
        long,
        env = "PROBELAB_IMAGE_TAG",
        default_value = "dev",
        value_name = "TAG"
    )]
    pub image_tag: String,
    /// Turn zone redundancy off (regions without availability zones).
    #[arg(long)]
    pub no_zone_redundancy: bool,
    /// The `expires-at` tag on every resource (YYYY-MM-DD) [default: 7 days from today].
    #[arg(long, value_name = "DATE")]
    pub expires_at: Option<String>,
    /// Where to write the outputs.
    #[arg(long, env = "PROBELAB_AZURE_STATE", default_value = DEFAULT_STATE, value_name = "FILE")]
    pub state: PathBuf,
    /// The probelab repository: scripts/build-images.sh and infra/ are found under it.
    #[arg(long, env = "PROBELAB_ROOT", default_value = ".", value_name = "DIR")]
    pub workspace_dir: PathBuf,
    /// Do not run scripts/build-images.sh: push the images already tagged --image-tag.
    #[arg(long, env = "PROBELAB_SKIP_BUILD")]
    pub skip_build: bool,
    /// The directory holding main.bicep and main.parameters.json [default: <workspace-dir>/infra].
    #[arg(long, value_name = "DIR")]
    pub infra: Option<PathBuf>,
    /// Do not ask (deploy never asks today; accepted for scripts).
    #[arg(long)]
    pub yes: bool,
}

#[derive(clap::Args, Debug)]
#[command(
    about = "Delete the resource group labctl deploy created (asks first)",
    long_about = "Delete the resource group labctl deploy created, with everything in it \
        (`az group delete`). Asks for confirmation on a terminal; without a terminal it refuses \
        unless --yes is given.",
    after_help = "Example:\n  labctl destroy --resource-group probelab-rg\n  \
        labctl destroy --resource-group probelab-rg --yes   # scripts"
)]
pub struct DestroyArgs {
    /// The resource group to delete.
    #[arg(long, short = 'g', value_name = "RG")]
    pub resource_group: String,
    /// Delete without asking.
    #[arg(long)]
    pub yes: bool,
}

#[derive(clap::Args, Debug)]
#[command(
    about = "Print the deployed environment as shell `export` lines",
    long_about = "Print the state file written by `labctl deploy` as shell `export` lines: \
        SUBSCRIPTION_ID, RESOURCE_GROUP, LOG_ANALYTICS_WORKSPACE_ID, PROBELAB_BASE_NAME, \
        PROBELAB_IMAGE_PREFIX, PROBELAB_REGISTRY_SERVER, PROBELAB_PULL_IDENTITY_ID (what `labctl lab run --target azure` reads).",
    after_help = "Example:\n  eval \"$(labctl azure-env)\"\n  \
        labctl lab run labs/startup-degraded.toml --target azure"
)]
pub struct EnvArgs {
    /// The state file written by `labctl deploy`.
    #[arg(long, default_value = DEFAULT_STATE, value_name = "FILE")]
    pub state: PathBuf,
}

fn progress(msg: &str) {
    eprintln!("labctl deploy: {msg}");
}

/// Runs a command with captured output; `Ok(stdout)` on success.
fn run_tool(tool: &str, args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new(tool)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                match tool {
                    "az" => anyhow!("{AZ_INSTALL}"),
                    _ => anyhow!(
                        "`{tool}` is not on PATH; install Docker (https://docs.docker.com/engine/install/)"
                    ),
                }
            } else {
                anyhow!("cannot run `{tool}`: {e}")
            }
        })?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        let shown: Vec<&str> = args.iter().take(3).copied().collect();
        bail!(
            "`{tool} {}` failed ({}): {}",
            shown.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )
    }
}

fn json(text: &str, what: &str) -> anyhow::Result<Value> {
    serde_json::from_str(text).with_context(|| format!("{what} did not answer JSON"))
}

/// `az account show`: the subscription id and name, or a clear "not logged in".
fn account() -> anyhow::Result<(String, String)> {
    let out = match run_tool("az", &["account", "show", "-o", "json"]) {
        Ok(o) => o,
        Err(e) if e.to_string().contains(AZ_INSTALL) => return Err(e),
        Err(e) => {
            bail!("not logged in to Azure: run `az login` (and `az account set -s SUB`); {e}")
        }
    };
    let v = json(&out, "`az account show`")?;
    let id = v["id"]
        .as_str()
        .context("`az account show` has no subscription id")?
        .to_owned();
    let name = v["name"].as_str().unwrap_or("").to_owned();
    Ok((id, name))
}

/// The deployment outputs (`{name: {type, value}}`) flattened to `{name: value}`.
pub fn flatten_outputs(v: &Value) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    if let Some(obj) = v.as_object() {
        for (k, o) in obj {
            let val = o.get("value").unwrap_or(o);
            let s = match val {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            m.insert(k.clone(), s);
        }
    }
    m
}

fn default_expiry() -> String {
    (chrono::Utc::now() + chrono::Duration::days(7))
        .format("%Y-%m-%d")
        .to_string()
}

/// `docker info`: Docker is installed and its engine answers, or a clear error saying which.
fn check_docker() -> anyhow::Result<()> {
    match run_tool("docker", &["info", "--format", "{{.ServerVersion}}"]) {
        Ok(_) => Ok(()),
        Err(e) if e.to_string().contains("is not on PATH") => Err(e),
        Err(e) => Err(e.context(
            "the Docker engine is unreachable (is the daemon running, and may this user use it?)",
        )),
    }
}

/// Runs scripts/build-images.sh with its output shown on our stderr (stdout stays clean).
fn build_images(workspace: &Path) -> anyhow::Result<()> {
    let script = workspace.join("scripts").join("build-images.sh");
    if !script.is_file() {
        bail!(
            "{} not found: run labctl deploy from the probelab repository, pass --workspace-dir \
             (PROBELAB_ROOT), or build the images yourself and pass --skip-build",
            script.display()
        );
    }
    let stderr = std::io::stderr()
        .as_fd()
        .try_clone_to_owned()
        .context("cannot pass stderr to scripts/build-images.sh")?;
    let status = Command::new(&script)
        .current_dir(workspace)
        .stdin(Stdio::null())
        .stdout(Stdio::from(stderr))
        .status()
        .with_context(|| format!("cannot run {}", script.display()))?;
    if !status.success() {
        bail!(
            "{} failed ({status}); its output is above. Fix it, or build the images another way \
             and pass --skip-build",
            script.display()
        );
    }
    Ok(())
}

/// One `az deployment group create` pass (`deployJobs` true or false), then its outputs.
fn deploy_pass(a: &Args, fixed: &[String], jobs: bool) -> anyhow::Result<BTreeMap<String, String>> {
    let p_jobs = format!("deployJobs={jobs}");
    let mut args: Vec<&str> = vec![
        "deployment",
        "group",
        "create",
        "-n",
        DEPLOYMENT_NAME,
        "-g",
        &a.resource_group,
    ];
    args.extend(fixed.iter().map(String::as_str));
    args.extend([p_jobs.as_str(), "-o", "none"]);
    run_tool("az", &args)?;
    let out = run_tool(
        "az",
        &[
            "deployment",
            "group",
            "show",
            "-n",
            DEPLOYMENT_NAME,
            "-g",
            &a.resource_group,
            "--query",
            "properties.outputs",
            "-o",
            "json",
        ],
    )?;
    Ok(flatten_outputs(&json(&out, "`az deployment group show`")?))
}

fn output(outputs: &BTreeMap<String, String>, name: &str) -> anyhow::Result<String> {
    outputs
        .get(name)
        .filter(|s| !s.is_empty())
        .cloned()
        .with_context(|| format!("the deployment has no {name} output"))
}

pub fn run(a: Args) -> anyhow::Result<u8> {
    let (template, params) = infra_files(&a)?;
    let expires = a.expires_at.clone().unwrap_or_else(default_expiry);
    if chrono::NaiveDate::parse_from_str(&expires, "%Y-%m-%d").is_err() {
        bail!("--expires-at {expires}: expected a date as YYYY-MM-DD");
    }

    progress("checking the Azure CLI login (az account show)");
    let (sub, sub_name) = account()?;
    progress(&format!("subscription {sub_name} ({sub})"));

    let local_images = local_images(&a)?;
    create_resource_group(&a, &expires)?;

    let fixed = deployment_parameters(&a, &template, &params, &expires);
    progress(
        "deployment pass 1 of 2: registry, identities, workspace, environment; no jobs yet \
         (a few minutes the first time)",
    );
    let outputs = deploy_pass(&a, &fixed, false)?;
    let login_server = output(&outputs, "registryLoginServer")?;
    push_images(&a, &outputs, &login_server, &local_images)?;

    progress("deployment pass 2 of 2: the jobs (their images are in the registry now)");
    let outputs = deploy_pass(&a, &fixed, true)?;
    let workspace = output(&outputs, "workspaceCustomerId")?;
    let pull_identity = output(&outputs, "pullIdentityId")?;
    for job in ["loadgenJobName", "samplerJobName", "auditJobName"] {
        let name = output(&outputs, job)?;
        progress(&format!("job {name}"));
    }

    let deployed = Deployed {
        subscription: sub,
        login_server,
        workspace,
        pull_identity,
        outputs,
    };
    write_state(&a.state, &state_file(&a, expires, deployed))?;
    progress(&format!(
        "done: outputs in {}; next: eval \"$(labctl azure-env)\" && labctl lab run LAB --target azure",
        a.state.display()
    ));
    Ok(exit::HELD)
}

/// infra/main.bicep and infra/main.parameters.json, or an error saying how to point at them.
fn infra_files(a: &Args) -> anyhow::Result<(PathBuf, PathBuf)> {
    let infra = a
        .infra
        .clone()
        .unwrap_or_else(|| a.workspace_dir.join("infra"));
    let template = infra.join("main.bicep");
    let params = infra.join("main.parameters.json");
    for f in [&template, &params] {
        if !f.is_file() {
            bail!(
                "{} not found: run labctl deploy from the repository root, or pass \
                 --workspace-dir DIR (PROBELAB_ROOT) or --infra DIR",
                f.display()
            );
        }
    }
    Ok((template, params))
}

/// Checks Docker, builds the images (unless --skip-build), and returns the local names of the
/// images to push (`probelab/<img>:<tag>`), every one of which exists.
fn local_images(a: &Args) -> anyhow::Result<Vec<String>> {
    progress("checking Docker (docker info)");
    check_docker()?;
    if a.skip_build {
        progress("--skip-build: using the images already built");
    } else {
        progress("building the images with scripts/build-images.sh (minutes on a cold cache)");
        build_images(&a.workspace_dir)?;
    }
    let local_images: Vec<String> = IMAGES
        .iter()
        .map(|i| format!("probelab/{i}:{}", a.image_tag))
        .collect();
    let mut missing = Vec::new();
    for img in &local_images {
        if run_tool("docker", &["image", "inspect", "--format", "{{.Id}}", img]).is_err() {
            missing.push(img.as_str());
        }
    }
    if !missing.is_empty() {
        bail!(
            "image(s) missing locally: {}; scripts/build-images.sh tags :dev and :<git short \
             sha>: pick one with --image-tag, or drop --skip-build so labctl builds them",
            missing.join(", ")
        );
    }
    Ok(local_images)
}

/// `az group create`, tagged with the expiry and labctl as its manager.
fn create_resource_group(a: &Args, expires: &str) -> anyhow::Result<()> {
    progress(&format!(
        "resource group {} in {}",
        a.resource_group, a.location
    ));
    run_tool(
        "az",
        &[
            "group",
            "create",
            "-n",
            &a.resource_group,
            "-l",
            &a.location,
            "--tags",
            &format!("expires-at={expires}"),
            "managedBy=probelab-labctl",
            "-o",
            "none",
        ],
    )?;
    Ok(())
}

/// The arguments both deployment passes share: the template, its parameters file, and the
/// parameters labctl sets.
fn deployment_parameters(a: &Args, template: &Path, params: &Path, expires: &str) -> Vec<String> {
    let mut fixed = vec![
        "-f".to_owned(),
        template.display().to_string(),
        "-p".to_owned(),
        format!("@{}", params.display()),
        "-p".to_owned(),
        format!("baseName={}", a.base_name),
        format!("imageTag={}", a.image_tag),
        format!("zoneRedundant={}", !a.no_zone_redundancy),
        format!("expiresAt={expires}"),
    ];
    if let Some(r) = &a.registry {
        fixed.push(format!("registryName={r}"));
    }
    fixed
}

/// `az acr login` to pass 1's registry, then `docker tag` and `docker push` of each image.
fn push_images(
    a: &Args,
    outputs: &BTreeMap<String, String>,
    login_server: &str,
    local_images: &[String],
) -> anyhow::Result<()> {
    let registry = outputs
        .get("registryName")
        .cloned()
        .or_else(|| login_server.split('.').next().map(str::to_owned))
        .unwrap_or_default();
    progress(&format!("az acr login -n {registry}"));
    run_tool("az", &["acr", "login", "-n", &registry])?;
    for (name, local) in IMAGES.iter().zip(local_images) {
        let remote = format!("{login_server}/probelab/{name}:{}", a.image_tag);
        progress(&format!("pushing {remote}"));
        run_tool("docker", &["tag", local, &remote])?;
        run_tool("docker", &["push", &remote])?;
    }
    Ok(())
}

/// Where the deployment put things: the subscription, the registry's login server, the Log
/// Analytics workspace, the pull identity, and every output of pass 2.
struct Deployed {
    subscription: String,
    login_server: String,
    workspace: String,
    pull_identity: String,
    outputs: BTreeMap<String, String>,
}

/// The state file: the variables `lab run --target azure` reads, then the deployment's
/// location, image tag, expiry and outputs.
fn state_file(a: &Args, expires: String, d: Deployed) -> Value {
    let mut state = serde_json::Map::new();
    for (k, v) in [
        ("SUBSCRIPTION_ID", d.subscription),
        ("RESOURCE_GROUP", a.resource_group.clone()),
        ("LOG_ANALYTICS_WORKSPACE_ID", d.workspace),
        ("PROBELAB_BASE_NAME", a.base_name.clone()),
        (
            "PROBELAB_IMAGE_PREFIX",
            format!("{}/probelab/", d.login_server),
        ),
        ("PROBELAB_REGISTRY_SERVER", d.login_server),
        ("PROBELAB_PULL_IDENTITY_ID", d.pull_identity),
    ] {
        state.insert(k.into(), Value::String(v));
    }
    state.insert("location".into(), Value::String(a.location.clone()));
    state.insert("imageTag".into(), Value::String(a.image_tag.clone()));
    state.insert("expiresAt".into(), Value::String(expires));
    state.insert(
        "outputs".into(),
        Value::Object(
            d.outputs
                .into_iter()
                .map(|(k, v)| (k, Value::String(v)))
                .collect(),
        ),
    );
    Value::Object(state)
}

fn write_state(path: &Path, v: &Value) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_string_pretty(v)? + "\n";
    std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// The environment variables a state file written by `labctl deploy` sets (its top-level string
/// values whose keys are upper case: `SUBSCRIPTION_ID`, `RESOURCE_GROUP`,
/// `LOG_ANALYTICS_WORKSPACE_ID`, `PROBELAB_BASE_NAME`, `PROBELAB_IMAGE_PREFIX`,
/// `PROBELAB_REGISTRY_SERVER`, `PROBELAB_PULL_IDENTITY_ID`).
pub fn read_state(path: &Path) -> anyhow::Result<BTreeMap<String, String>> {
    let env = runner::target::read_azure_state(path)?;
    for k in ["SUBSCRIPTION_ID", "RESOURCE_GROUP"] {
        if !env.contains_key(k) {
            bail!("{} has no {k}", path.display());
        }
    }
    Ok(env)
}

/// `labctl azure-env`: `export K='v'` lines for a shell.
pub fn run_env(a: EnvArgs) -> anyhow::Result<u8> {
    for (k, v) in read_state(&a.state)? {
        println!("export {k}='{}'", v.replace('\'', r"'\''"));
    }
    Ok(exit::HELD)
}

pub fn run_destroy(a: DestroyArgs) -> anyhow::Result<u8> {
    if !a.yes {
        if !std::io::stdin().is_terminal() {
            bail!(
                "refusing to delete resource group {} without confirmation: stdin is not a \
                 terminal; pass --yes",
                a.resource_group
            );
        }
        eprint!(
            "Delete resource group {} and everything in it? Type its name to confirm: ",
            a.resource_group
        );
        std::io::stderr().flush().ok();
        let mut line = String::new();
        std::io::stdin().read_line(&mut line)?;
        if line.trim() != a.resource_group {
            eprintln!("labctl destroy: not confirmed; nothing deleted");
            return Ok(exit::ERROR);
        }
    }
    let (sub, sub_name) = account()?;
    eprintln!(
        "labctl destroy: deleting resource group {} in subscription {sub_name} ({sub})",
        a.resource_group
    );
    run_tool(
        "az",
        &[
            "group",
            "delete",
            "-n",
            &a.resource_group,
            "--yes",
            "-o",
            "none",
        ],
    )?;
    eprintln!("labctl destroy: deleted {}", a.resource_group);
    Ok(exit::HELD)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_are_flattened_to_their_values() {
        let v: Value = serde_json::json!({
            "registryLoginServer": {"type": "String", "value": "acr.azurecr.io"},
            "n": {"type": "Int", "value": 3},
        });
        let m = flatten_outputs(&v);
        assert_eq!(m["registryLoginServer"], "acr.azurecr.io");
        assert_eq!(m["n"], "3");
    }
}
