//! Cross-check of infra/*.bicep against the code (the Bicep CLI cannot be installed on our build
//! machines; scripts/check-bicep.sh only parses the files).
//!
//! What each image reads comes from the binaries themselves: their `--help` lists every flag with
//! clap's `[env: NAME=...]` annotation, and the usage line lists the required ones. The
//! binaries are found next to this test's executable (`target/<profile>/`); `cargo test
//! --workspace` builds them, `cargo test -p labctl` alone does not.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

const ACR_PULL: &str = "7f951dda-4ed3-4680-a7ca-43fe172d538d";
const READER: &str = "acdd72a7-3385-48ef-bd42-f606fba81ae7";

/// Read by the images outside clap: arm's token source takes the user-assigned client id from
/// `MANAGED_IDENTITY_CLIENT_ID`, else `AZURE_CLIENT_ID` (crates/arm/src/token.rs; checked below).
const READ_OUTSIDE_CLAP: [&str; 1] = ["AZURE_CLIENT_ID"];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap()
}

fn help(bin: &str) -> String {
    let path = testkit::bins::dir(&[bin]).join(bin);
    let out = Command::new(&path)
        .arg("--help")
        .env_clear()
        .output()
        .unwrap();
    assert!(out.status.success(), "{bin} --help failed");
    String::from_utf8(out.stdout).unwrap()
}

/// What a binary reads: every `[env: NAME...]` annotation, and the env names of the flags its
/// usage line requires.
struct Reads {
    env: BTreeSet<String>,
    required: BTreeSet<String>,
}

fn reads(bin: &str) -> Reads {
    let text = help(bin);
    let (usage, rest) = text.split_once("\nOptions:").unwrap();
    let usage = usage.split_once("Usage:").unwrap().1;
    let required_flags: BTreeSet<&str> = usage
        .split_whitespace()
        .filter(|t| t.starts_with("--"))
        .collect();
    // One entry per option: it starts at a line whose first token is a flag.
    let mut entries: Vec<String> = Vec::new();
    for line in rest.lines() {
        let t = line.trim_start();
        let is_flag = t.starts_with("--") || (t.starts_with('-') && t.get(2..4) == Some(", "));
        if is_flag && line.len() - t.len() <= 6 {
            entries.push(t.to_owned());
        } else if let Some(last) = entries.last_mut() {
            last.push(' ');
            last.push_str(t);
        }
    }
    let mut env = BTreeSet::new();
    let mut required = BTreeSet::new();
    for e in entries {
        let e = e.split_whitespace().collect::<Vec<_>>().join(" ");
        let flag = e
            .split_whitespace()
            .find(|t| t.starts_with("--"))
            .unwrap()
            .trim_end_matches(',');
        let names: Vec<String> = e
            .match_indices("[env: ")
            .map(|(i, m)| {
                e[i + m.len()..]
                    .chars()
                    .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                    .collect()
            })
            .collect();
        if required_flags.contains(flag) {
            assert_eq!(
                names.len(),
                1,
                "{bin}: required {flag} has no env var in:\n{e}"
            );
            required.insert(names[0].clone());
        }
        env.extend(names);
    }
    assert!(!env.is_empty(), "{bin} --help lists no env vars:\n{text}");
    Reads { env, required }
}

/// The text of `module <id> 'modules/job.bicep' = if (deployJobs) { ... }` (up to the closing
/// `}` line). Every job module is guarded by `deployJobs` (labctl deploy's two passes).
fn module_block<'a>(bicep: &'a str, id: &str) -> &'a str {
    let start = bicep
        .find(&format!(
            "module {id} 'modules/job.bicep' = if (deployJobs) {{"
        ))
        .unwrap_or_else(|| panic!("no module {id} guarded by `if (deployJobs)` in main.bicep"));
    let end = bicep[start..].find("\n}\n").unwrap();
    &bicep[start..start + end]
}

/// Names of `{ name: 'X', value: ... }` entries in a text.
fn env_names(text: &str) -> Vec<String> {
    text.match_indices("{ name: '")
        .map(|(i, m)| {
            let rest = &text[i + m.len()..];
            rest[..rest.find('\'').unwrap()].to_owned()
        })
        .collect()
}

fn var_block<'a>(bicep: &'a str, var: &str) -> &'a str {
    let start = bicep.find(&format!("var {var} = [")).unwrap();
    let end = bicep[start..].find("\n]\n").unwrap();
    &bicep[start..start + end]
}

/// (job module id, job name suffix, binary, image)
const JOBS: [(&str, &str, &str, &str); 3] = [
    ("loadgenJob", "loadgen", "loadgen", "loadgen"),
    (
        "samplerJob",
        "perturbation-sampler",
        "perturbation-sampler",
        "perturbation-sampler",
    ),
    ("auditJob", "audit", "audit", "audit"),
];

#[test]
fn every_env_var_a_job_sets_is_read_by_its_image_and_required_ones_are_set() {
    let bicep = read("infra/main.bicep");
    let common = env_names(var_block(&bicep, "samplerEnvCommon"));
    let token_rs = read("crates/arm/src/token.rs");
    for name in READ_OUTSIDE_CLAP {
        assert!(
            token_rs.contains(&format!("\"{name}\"")),
            "{name} is no longer read by crates/arm/src/token.rs"
        );
    }
    let mut problems = Vec::new();
    for (module, _, bin, _) in JOBS {
        let block = module_block(&bicep, module);
        let mut set = env_names(block);
        if block.contains("samplerEnvCommon") {
            set.extend(common.iter().cloned());
        }
        let r = reads(bin);
        let set_names: BTreeSet<&str> = set.iter().map(String::as_str).collect();
        assert_eq!(
            set.len(),
            set_names.len(),
            "{module} sets a variable twice: {set:?}"
        );
        for name in &set {
            if !r.env.contains(name) && !READ_OUTSIDE_CLAP.contains(&name.as_str()) {
                problems.push(format!(
                    "{module} sets {name}, which `{bin}` does not read (it reads {:?})",
                    r.env
                ));
            }
        }
        for name in &r.required {
            if !set_names.contains(name.as_str()) {
                problems.push(format!(
                    "{module} does not set {name}, which `{bin}` requires"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn names_match_the_defaults_of_labctl_and_the_runner() {
    let bicep = read("infra/main.bicep");
    let base = runner::target::DEFAULT_BASE_NAME;
    assert!(
        bicep.contains(&format!("param baseName string = '{base}'")),
        "main.bicep's baseName default is not the runner's {base}"
    );
    let params: serde_json::Value =
        serde_json::from_str(&read("infra/main.parameters.json")).unwrap();
    assert_eq!(params["parameters"]["baseName"]["value"], base);
    // Every parameter in the file, and every one labctl deploy passes, is declared.
    let mut passed: Vec<String> = params["parameters"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    passed.extend(
        [
            "baseName",
            "imageTag",
            "zoneRedundant",
            "expiresAt",
            "registryName",
            "deployJobs",
        ]
        .map(String::from),
    );
    for p in passed {
        assert!(
            bicep.contains(&format!("\nparam {p} ")),
            "parameter {p} is passed but main.bicep does not declare it"
        );
    }

    let (env, loadgen, sampler) = runner::target::names("${baseName}");
    assert!(
        bicep.contains(&format!("name: '{env}'")),
        "environment {env}"
    );
    for (module, suffix, _, image) in JOBS {
        let block = module_block(&bicep, module);
        let name = format!("${{baseName}}-{suffix}");
        assert!(
            block.contains(&format!("name: '{name}'")),
            "{module} is not named {name}"
        );
        assert!(
            block.contains(&format!("image: '${{imagePrefix}}/{image}:${{imageTag}}'")),
            "{module} does not run probelab/{image}"
        );
    }
    assert!(module_block(&bicep, "loadgenJob").contains(&format!("name: '{loadgen}'")));
    assert!(module_block(&bicep, "samplerJob").contains(&format!("name: '{sampler}'")));
    assert!(bicep.contains("var imagePrefix = '${registry.properties.loginServer}/probelab'"));

    // labctl's own defaults (trigger's job names, deploy's base name).
    let labctl = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_labctl"))
            .args(args)
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let trigger = labctl(&["trigger", "--help"]);
    for job in [
        format!("{base}-loadgen"),
        format!("{base}-perturbation-sampler"),
    ] {
        assert!(
            trigger.contains(&format!("[default: {job}]")),
            "labctl trigger's default {job}:\n{trigger}"
        );
    }
    let deploy = labctl(&["deploy", "--help"]);
    assert!(deploy.contains(&format!("[default: {base}]")), "{deploy}");

    // Identities as infra/README.md documents them.
    let readme = read("infra/README.md");
    for (id, suffix) in [("pullIdentity", "pull"), ("samplerIdentity", "sampler")] {
        let decl = format!(
            "resource {id} 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {{\n  name: '${{baseName}}-{suffix}'"
        );
        assert!(
            bicep.contains(&decl),
            "identity {id} is not ${{baseName}}-{suffix}"
        );
        assert!(
            readme.contains(&format!("`<base>-{suffix}`")),
            "README names <base>-{suffix}"
        );
    }
    // The jobs' one container is `main`, as the runner's local job bodies name it.
    let job = read("infra/modules/job.bicep");
    assert!(job.contains("name: 'main'"));
}

#[test]
fn role_assignments_are_acr_pull_on_the_registry_and_reader_on_the_group() {
    let bicep = read("infra/main.bicep");
    assert!(bicep.contains(&format!("var acrPullRoleId = '{ACR_PULL}'")));
    assert!(bicep.contains(&format!("var readerRoleId = '{READER}'")));
    let assignments: Vec<&str> = bicep
        .match_indices("'Microsoft.Authorization/roleAssignments@")
        .map(|(i, _)| {
            let end = bicep[i..].find("\n}\n").unwrap();
            &bicep[i..i + end]
        })
        .collect();
    assert_eq!(assignments.len(), 2, "exactly two role assignments");
    let pull = assignments
        .iter()
        .find(|a| a.contains("acrPullRoleId)"))
        .unwrap();
    assert!(
        pull.contains("scope: registry\n"),
        "AcrPull is scoped to the registry"
    );
    assert!(pull.contains("principalId: pullIdentity.properties.principalId"));
    let reader = assignments
        .iter()
        .find(|a| a.contains("readerRoleId)"))
        .unwrap();
    assert!(
        !reader.contains("scope:"),
        "Reader is on the resource group (the default scope)"
    );
    assert!(reader.contains("principalId: samplerIdentity.properties.principalId"));
    for other in ["roleDefinitions', '", "Contributor", "Owner"] {
        assert!(!bicep.contains(other), "unexpected role reference {other}");
    }
    // Only the samplers run as the sampler identity; loadgen has just the pull identity.
    assert!(!module_block(&bicep, "loadgenJob").contains("runIdentityId"));
    for m in ["samplerJob", "auditJob"] {
        assert!(module_block(&bicep, m).contains("runIdentityId: samplerIdentity.id"));
    }
}

#[test]
fn no_admin_user_no_secret_outputs_and_every_resource_is_tagged() {
    for file in ["infra/main.bicep", "infra/modules/job.bicep"] {
        let text = read(file);
        let squashed: String = text.split_whitespace().collect();
        assert!(
            !squashed.contains("adminUserEnabled:true"),
            "{file}: admin user"
        );
        for line in text.lines().filter(|l| l.starts_with("output ")) {
            let l = line.to_ascii_lowercase();
            for bad in ["listkeys", "list(", "secret", "password", "key"] {
                assert!(!l.contains(bad), "{file}: output with {bad}: {line}");
            }
        }
        assert!(!text.contains("@secure()\noutput"), "{file}: secure output");
        // Every resource declaration carries the tags (role assignments cannot have tags).
        let mut resources: BTreeMap<String, bool> = BTreeMap::new();
        for (i, _) in text.match_indices("\nresource ") {
            let end = text[i + 1..].find("\n}\n").unwrap();
            let block = &text[i + 1..i + 1 + end];
            let head = block.lines().next().unwrap().to_owned();
            if head.contains("Microsoft.Authorization/roleAssignments") {
                continue;
            }
            resources.insert(head, format!("{block}\n").contains("\n  tags: tags\n"));
        }
        assert!(!resources.is_empty(), "{file}: no resources found");
        let untagged: Vec<&String> = resources
            .iter()
            .filter(|(_, t)| !**t)
            .map(|(h, _)| h)
            .collect();
        assert!(untagged.is_empty(), "{file}: untagged: {untagged:?}");
    }
    let main = read("infra/main.bicep");
    for tag in ["'expires-at': expiresAt", "managedBy:", "lab: labName"] {
        assert!(main.contains(tag), "the tags lack {tag}");
    }
    // Every job module gets the same tags.
    for (module, ..) in JOBS {
        assert!(
            module_block(&main, module).contains("tags: tags"),
            "{module}"
        );
    }
}

#[test]
fn the_audit_window_ends_before_its_replica_timeout() {
    let bicep = read("infra/main.bicep");
    let block = module_block(&bicep, "auditJob");
    assert!(block.contains("triggerType: 'Schedule'"));
    assert!(block.contains("cronExpression: '*/5 * * * *'"));
    assert!(block.contains("replicaTimeout: auditReplicaTimeout"));
    let i = block.find("name: 'AUDIT_WINDOW_SECONDS'").unwrap();
    let line = block[i..].lines().next().unwrap();
    let margin: u32 = line
        .split("auditReplicaTimeout - ")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("AUDIT_WINDOW_SECONDS is not auditReplicaTimeout - N: {line}"));
    assert!(margin >= 20, "{line}");
    for m in ["loadgenJob", "samplerJob"] {
        assert!(
            module_block(&bicep, m).contains("triggerType: 'Manual'"),
            "{m}"
        );
    }
}

#[test]
fn jobs_are_deployed_only_on_the_second_pass_and_their_outputs_are_conditional_safe() {
    let bicep = read("infra/main.bicep");
    assert!(
        bicep.contains("\nparam deployJobs bool = true\n"),
        "deployJobs defaults to true (a plain `az deployment group create` deploys everything)"
    );
    // Every module (the jobs are the only modules) is guarded.
    let modules: Vec<&str> = bicep.lines().filter(|l| l.starts_with("module ")).collect();
    assert_eq!(modules.len(), JOBS.len(), "{modules:?}");
    for m in &modules {
        assert!(m.ends_with("= if (deployJobs) {"), "unguarded: {m}");
    }
    // Nothing but the guarded outputs reads a job module: a conditional module's outputs may be
    // read only when it is deployed.
    for (module, ..) in JOBS {
        for line in bicep
            .lines()
            .filter(|l| l.contains(&format!("{module}.outputs")))
        {
            assert!(
                line.starts_with("output ")
                    && line.contains(&format!("= deployJobs ? {module}.outputs.")),
                "{module}'s outputs read without the deployJobs guard: {line}"
            );
        }
    }
    // labctl deploy passes false then true: tests/deploy.rs checks the calls and their order.
}
