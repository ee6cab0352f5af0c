//! Typed views of the parts of a Microsoft.App template localplane acts on.
//!
//! The ARM resources themselves are stored as the JSON the client sent (so unknown fields
//! round-trip); these types are parsed from that JSON whenever localplane needs to act on it.

use std::time::Duration;

use serde_json::Value;

use crate::error::ArmError;

/// Kubelet defaults for a probe field the template leaves out.
pub const DEFAULT_PERIOD_S: u64 = 10;
pub const DEFAULT_TIMEOUT_S: u64 = 1;
pub const DEFAULT_FAILURE_THRESHOLD: u32 = 3;
pub const DEFAULT_SUCCESS_THRESHOLD: u32 = 1;
/// Kubernetes' and Container Apps' default termination grace period.
pub const DEFAULT_GRACE_S: u64 = 30;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProbeKind {
    Startup,
    Readiness,
    Liveness,
}

impl ProbeKind {
    /// The word Container Apps uses in `Probe of <word> failed ...`.
    pub fn word(self) -> &'static str {
        match self {
            ProbeKind::Startup => "Startup",
            ProbeKind::Readiness => "Readiness",
            ProbeKind::Liveness => "Liveness",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum ProbeAction {
    Http {
        path: String,
        port: u16,
        headers: Vec<(String, String)>,
    },
    Tcp {
        port: u16,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    pub kind: ProbeKind,
    pub action: ProbeAction,
    pub initial_delay: Duration,
    pub period: Duration,
    pub timeout: Duration,
    pub failure_threshold: u32,
    pub success_threshold: u32,
    /// Probe-level `terminationGracePeriodSeconds` (overrides the template's for kills this
    /// probe causes, as in Kubernetes).
    pub grace: Option<Duration>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ContainerSpec {
    pub name: String,
    pub image: String,
    pub command: Vec<String>,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub probes: Vec<Probe>,
}

impl ContainerSpec {
    pub fn probe(&self, kind: ProbeKind) -> Option<&Probe> {
        self.probes.iter().find(|p| p.kind == kind)
    }
}

/// What a revision (or a job execution) runs.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateSpec {
    pub containers: Vec<ContainerSpec>,
    /// `template.scale` ([`crate::scaler`] parses it).
    pub scale: crate::scaler::ScaleSpec,
    pub grace: Duration,
    pub revision_suffix: Option<String>,
}

impl TemplateSpec {
    /// Replicas a new revision starts with: `minReplicas`, at least 1 (the scaler takes over
    /// once the revision serves traffic).
    pub fn replica_count(&self) -> u32 {
        self.scale.initial_replicas()
    }
}

/// `properties.configuration.ingress`.
#[derive(Debug, Clone, PartialEq)]
pub struct IngressSpec {
    pub external: bool,
    pub target_port: u16,
}

fn u64_field(v: &Value, key: &str) -> Result<Option<u64>, ArmError> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(x) => x.as_u64().map(Some).ok_or_else(|| {
            ArmError::bad_request(
                "InvalidRequestContent",
                format!("'{key}' must be a non-negative integer, got {x}"),
            )
        }),
    }
}

fn str_field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn port_of(v: &Value, ctx: &str) -> Result<u16, ArmError> {
    let p = v
        .get("port")
        .and_then(Value::as_u64)
        .and_then(|p| u16::try_from(p).ok())
        .filter(|p| *p > 0);
    p.ok_or_else(|| {
        ArmError::bad_request(
            "ContainerAppInvalidProbe",
            format!("{ctx}: 'port' must be an integer 1..65535"),
        )
    })
}

fn parse_probe(v: &Value, container: &str) -> Result<Probe, ArmError> {
    let kind = match str_field(v, "type").map(str::to_ascii_lowercase).as_deref() {
        Some("liveness") => ProbeKind::Liveness,
        Some("readiness") => ProbeKind::Readiness,
        Some("startup") => ProbeKind::Startup,
        other => {
            return Err(ArmError::bad_request(
                "ContainerAppInvalidProbe",
                format!(
                    "container '{container}': probe type must be Liveness, Readiness or Startup, got {other:?}"
                ),
            ));
        }
    };
    let action = if let Some(h) = v.get("httpGet").filter(|h| !h.is_null()) {
        let mut headers = Vec::new();
        if let Some(list) = h.get("httpHeaders").and_then(Value::as_array) {
            for item in list {
                if let (Some(n), Some(val)) = (str_field(item, "name"), str_field(item, "value")) {
                    headers.push((n.to_string(), val.to_string()));
                }
            }
        }
        ProbeAction::Http {
            path: str_field(h, "path").unwrap_or("/").to_string(),
            port: port_of(h, container)?,
            headers,
        }
    } else if let Some(t) = v.get("tcpSocket").filter(|t| !t.is_null()) {
        ProbeAction::Tcp {
            port: port_of(t, container)?,
        }
    } else {
        return Err(ArmError::bad_request(
            "ContainerAppInvalidProbe",
            format!("container '{container}': a probe needs httpGet or tcpSocket"),
        ));
    };
    // Ranges as the service checks them (see `PROBE_LIMITS`); a value out of range is a 400.
    let ranged = |k: &str, d: u64| -> Result<u64, ArmError> {
        let v = u64_field(v, k)?.unwrap_or(d);
        let (lo, hi) = probe_limit(kind, k);
        if v < lo || v > hi {
            return Err(ArmError::bad_request(
                "ContainerAppInvalidProbe",
                format!(
                    "container '{container}': {} probe '{k}' must be between {lo} and {hi}, got {v}",
                    kind.word()
                ),
            ));
        }
        Ok(v)
    };
    let success_threshold = ranged("successThreshold", u64::from(DEFAULT_SUCCESS_THRESHOLD))?;
    if kind != ProbeKind::Readiness && success_threshold != 1 {
        return Err(ArmError::bad_request(
            "ContainerAppInvalidProbe",
            format!(
                "container '{container}': 'successThreshold' must be 1 for a {} probe, got {success_threshold}",
                kind.word()
            ),
        ));
    }
    let grace = match u64_field(v, "terminationGracePeriodSeconds")? {
        Some(g) if g > MAX_PROBE_GRACE_S => {
            return Err(ArmError::bad_request(
                "ContainerAppInvalidProbe",
                format!(
                    "container '{container}': probe 'terminationGracePeriodSeconds' must be at most {MAX_PROBE_GRACE_S}, got {g}"
                ),
            ));
        }
        g => g.map(Duration::from_secs),
    };
    Ok(Probe {
        kind,
        action,
        initial_delay: Duration::from_secs(ranged("initialDelaySeconds", 0)?),
        period: Duration::from_secs(ranged("periodSeconds", DEFAULT_PERIOD_S)?),
        timeout: Duration::from_secs(ranged("timeoutSeconds", DEFAULT_TIMEOUT_S)?),
        failure_threshold: ranged("failureThreshold", u64::from(DEFAULT_FAILURE_THRESHOLD))? as u32,
        success_threshold: success_threshold as u32,
        grace,
    })
}

/// Probe-level `terminationGracePeriodSeconds` at most one hour (documented in the spec).
pub const MAX_PROBE_GRACE_S: u64 = 3600;

/// The accepted range of each numeric probe field, with where it comes from:
///
/// | field | range | source |
/// |---|---|---|
/// | `periodSeconds`, `timeoutSeconds` | 1–240 | `ContainerAppProbe` in the Microsoft.App spec (`CommonDefinitions.json`, 2025-07-01): "Minimum value is 1. Maximum value is 240." |
/// | `initialDelaySeconds` | 0–60 | spec says 1–60; 0 accepted because the Terraform azurerm provider sends 0 as its default and the service takes it (inferred) |
/// | `successThreshold` | 1–10, 1 for liveness and startup | spec: "Must be 1 for liveness and startup. Minimum value is 1. Maximum value is 10." |
/// | `failureThreshold` readiness | 1–48 | the spec says 1–10, but the service's own default readiness probe uses 48; the azurerm provider (4.80.0) allows 1–48: inferred |
/// | `failureThreshold` startup | 1–240 | the service's default startup probe uses 240 and labs run with 60 on Azure: inferred |
/// | `failureThreshold` liveness | 1–30 | azurerm provider limit for liveness: inferred |
pub fn probe_limit(kind: ProbeKind, field: &str) -> (u64, u64) {
    match (field, kind) {
        ("periodSeconds" | "timeoutSeconds", _) => (1, 240),
        ("initialDelaySeconds", _) => (0, 60),
        ("successThreshold", _) => (1, 10),
        ("failureThreshold", ProbeKind::Readiness) => (1, 48),
        ("failureThreshold", ProbeKind::Startup) => (1, 240),
        ("failureThreshold", ProbeKind::Liveness) => (1, 30),
        _ => (0, u64::MAX),
    }
}

/// Secrets from `properties.configuration.secrets` (`[{name, value}]`), for `secretRef` env.
pub fn secrets_of(configuration: Option<&Value>) -> Vec<(String, String)> {
    configuration
        .and_then(|c| c.get("secrets"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| {
                    Some((
                        str_field(s, "name")?.to_string(),
                        str_field(s, "value").unwrap_or("").to_string(),
                    ))
                })
                .collect()
        })
        .unwrap_or_default()
}

pub fn parse_container(v: &Value, secrets: &[(String, String)]) -> Result<ContainerSpec, ArmError> {
    let name = str_field(v, "name").unwrap_or("").to_string();
    let image = str_field(v, "image").unwrap_or("").to_string();
    if name.is_empty() || image.is_empty() {
        return Err(ArmError::bad_request(
            "InvalidRequestContent",
            "every container needs 'name' and 'image'",
        ));
    }
    let strings = |k: &str| -> Vec<String> {
        v.get(k)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut env = Vec::new();
    if let Some(list) = v.get("env").and_then(Value::as_array) {
        for item in list {
            let Some(n) = str_field(item, "name") else {
                return Err(ArmError::bad_request(
                    "InvalidRequestContent",
                    format!("container '{name}': every env entry needs 'name'"),
                ));
            };
            let value = if let Some(val) = str_field(item, "value") {
                val.to_string()
            } else if let Some(r) = str_field(item, "secretRef") {
                match secrets.iter().find(|(s, _)| s == r) {
                    Some((_, val)) => val.clone(),
                    None => {
                        return Err(ArmError::bad_request(
                            "ContainerAppSecretRefNotFound",
                            format!("container '{name}': secret '{r}' is not defined"),
                        ));
                    }
                }
            } else {
                String::new()
            };
            env.push((n.to_string(), value));
        }
    }
    let mut probes = Vec::new();
    if let Some(list) = v.get("probes").and_then(Value::as_array) {
        for p in list {
            let probe = parse_probe(p, &name)?;
            if probes.iter().any(|q: &Probe| q.kind == probe.kind) {
                return Err(ArmError::bad_request(
                    "ContainerAppInvalidProbe",
                    format!(
                        "container '{name}': more than one {} probe",
                        probe.kind.word()
                    ),
                ));
            }
            probes.push(probe);
        }
    }
    Ok(ContainerSpec {
        name,
        image,
        command: strings("command"),
        args: strings("args"),
        env,
        probes,
    })
}

/// Parses `properties.template` (an app's or a job's).
pub fn parse_template(
    template: &Value,
    configuration: Option<&Value>,
) -> Result<TemplateSpec, ArmError> {
    let secrets = secrets_of(configuration);
    let containers = template
        .get("containers")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
        .ok_or_else(|| {
            ArmError::bad_request(
                "InvalidRequestContent",
                "properties.template.containers must list at least one container",
            )
        })?
        .iter()
        .map(|c| parse_container(c, &secrets))
        .collect::<Result<Vec<_>, _>>()?;
    let scale = crate::scaler::ScaleSpec::parse(template.get("scale"))?;
    Ok(TemplateSpec {
        containers,
        scale,
        grace: Duration::from_secs(
            u64_field(template, "terminationGracePeriodSeconds")?.unwrap_or(DEFAULT_GRACE_S),
        ),
        revision_suffix: str_field(template, "revisionSuffix")
            .filter(|s| !s.is_empty())
            .map(String::from),
    })
}

pub fn parse_ingress(configuration: Option<&Value>) -> Result<Option<IngressSpec>, ArmError> {
    let Some(ing) = configuration
        .and_then(|c| c.get("ingress"))
        .filter(|i| !i.is_null())
    else {
        return Ok(None);
    };
    let target_port = ing
        .get("targetPort")
        .and_then(Value::as_u64)
        .and_then(|p| u16::try_from(p).ok())
        .filter(|p| *p > 0)
        .ok_or_else(|| {
            ArmError::bad_request(
                "ContainerAppInvalidIngress",
                "ingress.targetPort must be an integer 1..65535",
            )
        })?;
    Ok(Some(IngressSpec {
        external: ing
            .get("external")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        target_port,
    }))
}

/// When a new revision counts as ready for the traffic switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadyPolicy {
    /// Container Apps' documented rule: one replica started and ready.
    FirstReplica,
    /// All replicas ready (Kubernetes-like stricter option).
    AllReplicas,
}

/// Per-app emulator knobs, read from resource tags (`localplane.*`) so they pass through any
/// ARM client unchanged.
#[derive(Debug, Clone, PartialEq)]
pub struct Knobs {
    pub drain_delay: Duration,
    pub routing_removal_lag: Duration,
    pub ready_policy: ReadyPolicy,
    /// Platform step durations (tag `localplane.timings`, else `LOCALPLANE_TIMINGS`, else fast).
    pub timings: crate::timings::Timings,
}

pub const TAG_DRAIN_DELAY: &str = "localplane.drainDelaySeconds";
pub const TAG_ROUTING_LAG: &str = "localplane.routingRemovalLagMs";
pub const TAG_READY_POLICY: &str = "localplane.revisionReady";

impl Knobs {
    pub fn from_tags(tags: Option<&Value>) -> Result<Knobs, ArmError> {
        let get = |k: &str| tags.and_then(|t| t.get(k)).and_then(Value::as_str);
        let num = |k: &str| -> Result<u64, ArmError> {
            match get(k) {
                None => Ok(0),
                Some(s) => s.trim().parse::<u64>().map_err(|_| {
                    ArmError::bad_request(
                        "InvalidRequestContent",
                        format!("tag '{k}' must be a non-negative integer, got '{s}'"),
                    )
                }),
            }
        };
        let ready_policy = match get(TAG_READY_POLICY) {
            None | Some("firstReplica") => ReadyPolicy::FirstReplica,
            Some("allReplicas") => ReadyPolicy::AllReplicas,
            Some(other) => {
                return Err(ArmError::bad_request(
                    "InvalidRequestContent",
                    format!(
                        "tag '{TAG_READY_POLICY}' must be firstReplica or allReplicas, got '{other}'"
                    ),
                ));
            }
        };
        let timings = match get(crate::timings::TAG_TIMINGS) {
            Some(v) => crate::timings::Timings::parse(v).map_err(|e| {
                ArmError::bad_request(
                    "InvalidRequestContent",
                    format!("tag '{}': {e}", crate::timings::TAG_TIMINGS),
                )
            })?,
            None => crate::timings::Timings::from_env()
                .map_err(|e| ArmError::bad_request("InvalidRequestContent", e))?,
        };
        Ok(Knobs {
            timings,
            drain_delay: Duration::from_secs(num(TAG_DRAIN_DELAY)?),
            routing_removal_lag: Duration::from_millis(num(TAG_ROUTING_LAG)?),
            ready_policy,
        })
    }
}

/// RFC 7386 JSON merge-patch.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    match patch {
        Value::Object(p) => {
            if !target.is_object() {
                *target = Value::Object(serde_json::Map::new());
            }
            if let Value::Object(t) = target {
                for (k, v) in p {
                    if v.is_null() {
                        t.remove(k);
                    } else {
                        merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
                    }
                }
            }
        }
        other => *target = other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn probe_defaults_follow_kubelet() {
        let t = json!({"containers":[{"name":"subject","image":"probelab/subject:dev",
            "probes":[{"type":"Liveness","httpGet":{"path":"/livez","port":8080}}]}]});
        let spec = parse_template(&t, None).unwrap();
        let p = spec.containers[0].probe(ProbeKind::Liveness).unwrap();
        assert_eq!(p.period, Duration::from_secs(10));
        assert_eq!(p.timeout, Duration::from_secs(1));
        assert_eq!(p.failure_threshold, 3);
        assert_eq!(p.success_threshold, 1);
        assert_eq!(spec.grace, Duration::from_secs(30));
        assert_eq!(spec.replica_count(), 1);
    }

    #[test]
    fn bad_probe_is_a_400() {
        let t = json!({"containers":[{"name":"s","image":"i","probes":[{"type":"Sometimes","tcpSocket":{"port":1}}]}]});
        assert_eq!(parse_template(&t, None).unwrap_err().status, 400);
        let t = json!({"containers":[{"name":"s","image":"i","probes":[{"type":"Liveness"}]}]});
        assert_eq!(parse_template(&t, None).unwrap_err().status, 400);
        assert_eq!(parse_template(&json!({}), None).unwrap_err().status, 400);
    }

    fn probe_with(kind: &str, field: &str, value: u64) -> Value {
        json!({"containers":[{"name":"s","image":"i","probes":[
            {"type": kind, "tcpSocket": {"port": 8080}, field: value}]}]})
    }

    #[test]
    fn probe_ranges_are_checked_on_both_sides_of_each_boundary() {
        for (kind, field, lo, hi) in [
            ("Readiness", "failureThreshold", 1, 48),
            ("Startup", "failureThreshold", 1, 240),
            ("Liveness", "failureThreshold", 1, 30),
            ("Liveness", "periodSeconds", 1, 240),
            ("Readiness", "timeoutSeconds", 1, 240),
            ("Startup", "initialDelaySeconds", 0, 60),
            ("Readiness", "successThreshold", 1, 10),
        ] {
            for ok in [lo, hi] {
                let spec = parse_template(&probe_with(kind, field, ok), None)
                    .unwrap_or_else(|e| panic!("{kind} {field}={ok}: {e:?}"));
                assert_eq!(spec.containers[0].probes.len(), 1);
            }
            let mut bad = vec![hi + 1];
            if lo > 0 {
                bad.push(lo - 1);
            }
            for b in bad {
                let e = parse_template(&probe_with(kind, field, b), None).unwrap_err();
                assert_eq!(e.status, 400, "{kind} {field}={b}");
                assert_eq!(e.code, "ContainerAppInvalidProbe", "{kind} {field}={b}");
            }
        }
        // successThreshold must be 1 for liveness and startup.
        for kind in ["Liveness", "Startup"] {
            assert!(parse_template(&probe_with(kind, "successThreshold", 2), None).is_err());
            assert!(parse_template(&probe_with(kind, "successThreshold", 1), None).is_ok());
        }
        assert!(
            parse_template(
                &probe_with("Liveness", "terminationGracePeriodSeconds", 3600),
                None
            )
            .is_ok()
        );
        assert!(
            parse_template(
                &probe_with("Liveness", "terminationGracePeriodSeconds", 3601),
                None
            )
            .is_err()
        );
    }

    #[test]
    fn secret_refs_resolve() {
        let cfg = json!({"secrets":[{"name":"tok","value":"s3"}]});
        let t = json!({"containers":[{"name":"s","image":"i","env":[{"name":"A","secretRef":"tok"},{"name":"B","value":"b"}]}]});
        let spec = parse_template(&t, Some(&cfg)).unwrap();
        assert_eq!(
            spec.containers[0].env,
            vec![("A".into(), "s3".into()), ("B".into(), "b".into())]
        );
    }

    #[test]
    fn merge_patch_rfc7386() {
        let mut a = json!({"a":1,"b":{"c":2,"d":3},"e":[1]});
        merge_patch(&mut a, &json!({"b":{"c":null,"x":4},"e":[2],"a":null}));
        assert_eq!(a, json!({"b":{"d":3,"x":4},"e":[2]}));
    }

    #[test]
    fn knobs_from_tags() {
        let k = Knobs::from_tags(Some(
            &json!({"localplane.drainDelaySeconds":"5","localplane.revisionReady":"allReplicas"}),
        ))
        .unwrap();
        assert_eq!(k.drain_delay, Duration::from_secs(5));
        assert_eq!(k.ready_policy, ReadyPolicy::AllReplicas);
        assert!(Knobs::from_tags(Some(&json!({"localplane.routingRemovalLagMs":"x"}))).is_err());
    }
}
