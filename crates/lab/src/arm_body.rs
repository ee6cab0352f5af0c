//! A lab app rendered as a Microsoft.App `containerApps` PUT body.
//!
//! The same body goes to Azure and to localplane; emulator-only knobs travel as resource tags
//! (`localplane.*`), which Azure stores and ignores.

use serde_json::{Map, Value, json};

use crate::schema::{App, Probe};

/// The secret name `SIMULATE_TOKEN` is stored under in each subject app.
pub const SIMULATE_TOKEN_SECRET: &str = "simulate-token";

/// Where the app goes and what it carries besides the lab's own spec.
#[derive(Clone, Debug)]
pub struct Placement<'a> {
    pub location: &'a str,
    /// The managed environment's resource id.
    pub environment_id: &'a str,
    /// When set, stored as a Container Apps secret and passed as `SIMULATE_TOKEN` by secretRef,
    /// so the value never appears in the template's env.
    pub simulate_token: Option<&'a str>,
    /// Extra tags (e.g. `lab`, `run`).
    pub tags: &'a [(&'a str, &'a str)],
    /// The private registry the image is pulled from, with the user-assigned identity that has
    /// `AcrPull` on it (Azure). `None` for images the platform can pull without credentials
    /// (localplane, which never pulls).
    pub registry: Option<Registry<'a>>,
}

/// A registry the app pulls from with a user-assigned managed identity (never a password).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Registry<'a> {
    /// The login server, e.g. `myacr.azurecr.io`.
    pub server: &'a str,
    /// The resource id of the user-assigned identity with `AcrPull` on the registry.
    pub identity: &'a str,
}

/// The PUT body for `app`.
pub fn container_app(app: &App, at: &Placement<'_>) -> Value {
    let mut env: Vec<Value> = app
        .env
        .iter()
        .map(|(k, v)| json!({ "name": k, "value": v }))
        .collect();
    let mut configuration = Map::new();
    configuration.insert("activeRevisionsMode".into(), "Single".into());
    if let Some(ing) = &app.ingress {
        configuration.insert(
            "ingress".into(),
            json!({ "external": ing.external, "targetPort": ing.target_port, "transport": "auto" }),
        );
    }
    if let Some(token) = at.simulate_token {
        configuration.insert(
            "secrets".into(),
            json!([{ "name": SIMULATE_TOKEN_SECRET, "value": token }]),
        );
        env.retain(|e| e["name"] != "SIMULATE_TOKEN");
        env.push(json!({ "name": "SIMULATE_TOKEN", "secretRef": SIMULATE_TOKEN_SECRET }));
    }
    if let Some(r) = at.registry {
        configuration.insert(
            "registries".into(),
            json!([{ "server": r.server, "identity": r.identity }]),
        );
    }
    let mut template = json!({
        "containers": [{
            "name": app.name,
            "image": app.image,
            "env": env,
            "probes": app.probes.iter().map(probe).collect::<Vec<_>>(),
            "resources": { "cpu": 0.5, "memory": "1Gi" },
        }],
        "scale": { "minReplicas": app.replicas, "maxReplicas": app.replicas },
    });
    if let Some(grace) = app.termination_grace_seconds {
        template["terminationGracePeriodSeconds"] = grace.into();
    }
    let mut tags = Map::new();
    for (k, v) in at.tags {
        tags.insert((*k).to_owned(), (*v).into());
    }
    if let Some(r) = &app.revision_ready {
        tags.insert("localplane.revisionReady".into(), r.clone().into());
    }
    if let Some(d) = app.drain_delay_seconds {
        tags.insert("localplane.drainDelaySeconds".into(), d.to_string().into());
    }
    if let Some(l) = app.routing_removal_lag_ms {
        tags.insert(
            "localplane.routingRemovalLagMs".into(),
            l.to_string().into(),
        );
    }
    let mut body = json!({
        "location": at.location,
        "tags": tags,
        "properties": {
            "environmentId": at.environment_id,
            "configuration": configuration,
            "template": template,
        }
    });
    if let Some(r) = at.registry {
        // The registry entry names the identity; the app must also be assigned it.
        body["identity"] = json!({
            "type": "UserAssigned",
            "userAssignedIdentities": { r.identity: {} },
        });
    }
    body
}

fn probe(p: &Probe) -> Value {
    let mut v = Map::new();
    v.insert("type".into(), p.kind.clone().into());
    match &p.path {
        Some(path) => v.insert("httpGet".into(), json!({ "path": path, "port": p.port })),
        None => v.insert("tcpSocket".into(), json!({ "port": p.port })),
    };
    for (k, x) in [
        ("initialDelaySeconds", p.initial_delay_seconds),
        ("periodSeconds", p.period_seconds),
        ("timeoutSeconds", p.timeout_seconds),
        ("failureThreshold", p.failure_threshold),
        ("successThreshold", p.success_threshold),
    ] {
        if let Some(x) = x {
            v.insert(k.into(), x.into());
        }
    }
    Value::Object(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Ingress;

    fn app() -> App {
        App {
            name: "subject".into(),
            image: "probelab/subject:dev".into(),
            replicas: 3,
            termination_grace_seconds: Some(30),
            ingress: Some(Ingress {
                external: true,
                target_port: 8080,
            }),
            env: [("STARTUP_DELAY_SECONDS".to_owned(), "25".to_owned())].into(),
            probes: vec![
                Probe {
                    kind: "Readiness".into(),
                    path: Some("/healthz".into()),
                    port: 8080,
                    initial_delay_seconds: None,
                    period_seconds: Some(5),
                    timeout_seconds: Some(3),
                    failure_threshold: Some(3),
                    success_threshold: None,
                },
                Probe {
                    kind: "Liveness".into(),
                    path: None,
                    port: 8080,
                    initial_delay_seconds: None,
                    period_seconds: None,
                    timeout_seconds: None,
                    failure_threshold: None,
                    success_threshold: None,
                },
            ],
            revision_ready: Some("allReplicas".into()),
            drain_delay_seconds: Some(15),
            routing_removal_lag_ms: None,
        }
    }

    #[test]
    fn renders_the_container_apps_template_shape() {
        let at = Placement {
            location: "swedencentral",
            environment_id: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.App/managedEnvironments/env",
            simulate_token: None,
            tags: &[("lab", "startup-degraded")],
            registry: None,
        };
        let body = container_app(&app(), &at);
        let t = &body["properties"]["template"];
        assert_eq!(t["scale"]["minReplicas"], 3);
        assert_eq!(t["scale"]["maxReplicas"], 3);
        assert_eq!(t["terminationGracePeriodSeconds"], 30);
        let c = &t["containers"][0];
        assert_eq!(c["image"], "probelab/subject:dev");
        assert_eq!(
            c["env"][0],
            json!({"name": "STARTUP_DELAY_SECONDS", "value": "25"})
        );
        assert_eq!(c["probes"][0]["httpGet"]["path"], "/healthz");
        assert_eq!(c["probes"][0]["periodSeconds"], 5);
        assert_eq!(c["probes"][1]["tcpSocket"]["port"], 8080);
        assert!(
            c["probes"][1].get("periodSeconds").is_none(),
            "defaults are the platform's"
        );
        let cfg = &body["properties"]["configuration"];
        assert_eq!(cfg["ingress"]["targetPort"], 8080);
        assert_eq!(cfg["activeRevisionsMode"], "Single");
        assert_eq!(body["tags"]["localplane.revisionReady"], "allReplicas");
        assert_eq!(body["tags"]["localplane.drainDelaySeconds"], "15");
        assert_eq!(body["tags"]["lab"], "startup-degraded");
        // No registry: nothing about pulling, no identity (what localplane gets).
        assert!(cfg.get("registries").is_none());
        assert!(body.get("identity").is_none());
    }

    #[test]
    fn an_app_on_azure_pulls_from_the_registry_with_the_pull_identity() {
        let pull = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/probelab-pull";
        let mut a = app();
        a.image = "probelabacr1.azurecr.io/probelab/subject:dev".into();
        let at = Placement {
            location: "swedencentral",
            environment_id: "e",
            simulate_token: None,
            tags: &[],
            registry: Some(Registry {
                server: "probelabacr1.azurecr.io",
                identity: pull,
            }),
        };
        let body = container_app(&a, &at);
        assert_eq!(
            body["properties"]["configuration"]["registries"],
            json!([{ "server": "probelabacr1.azurecr.io", "identity": pull }])
        );
        assert_eq!(body["identity"]["type"], "UserAssigned");
        assert_eq!(
            body["identity"]["userAssignedIdentities"],
            json!({ pull: {} }),
            "the app is assigned exactly the pull identity"
        );
        // Never a password: the registry entry has no username or passwordSecretRef.
        let reg = &body["properties"]["configuration"]["registries"][0];
        assert!(reg.get("username").is_none() && reg.get("passwordSecretRef").is_none());
        // The rest of the body is unchanged by the registry.
        assert_eq!(
            body["properties"]["configuration"]["ingress"]["targetPort"],
            8080
        );
    }

    #[test]
    fn simulate_token_travels_as_a_secret_ref_never_as_a_value() {
        let mut a = app();
        a.env.insert("SIMULATE_TOKEN".into(), "leaky".into());
        let at = Placement {
            location: "l",
            environment_id: "e",
            simulate_token: Some("s3cret"),
            tags: &[],
            registry: None,
        };
        let body = container_app(&a, &at);
        let env = body["properties"]["template"]["containers"][0]["env"]
            .as_array()
            .unwrap();
        let token: Vec<_> = env
            .iter()
            .filter(|e| e["name"] == "SIMULATE_TOKEN")
            .collect();
        assert_eq!(token.len(), 1);
        assert_eq!(token[0]["secretRef"], SIMULATE_TOKEN_SECRET);
        assert!(token[0].get("value").is_none());
        assert!(
            !body["properties"]["template"]
                .to_string()
                .contains("s3cret")
        );
        assert!(!body.to_string().contains("leaky"));
        assert_eq!(
            body["properties"]["configuration"]["secrets"][0]["value"],
            "s3cret"
        );
    }
}
