//! What localplane acts on in a Microsoft.App body, validated.
//!
//! A PUT or PATCH body is read as the wire model both sides share (`appmodel`, the types `arm`
//! sends: unknown fields kept), then checked the way the service checks it (probe ranges, scale
//! limits, secret references, ports) into the specs below, each 400 with the service's error
//! code. The resources themselves are stored as the JSON the client sent, so what a GET returns
//! is what was sent (unknown fields, `scale.rules`, `stickySessions`, `maxInactiveRevisions`
//! included).

use std::time::Duration;

use appmodel as wire;
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
    /// `resources`, with Container Apps' defaults for what is left out ([`crate::resources`]).
    pub resources: crate::resources::Resources,
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

    /// The CPU and memory of one replica: every container's, sidecars included (what Learn's
    /// combinations constrain and what the environment's cores quota counts).
    pub fn resources(&self) -> crate::resources::Resources {
        crate::resources::total(self.containers.iter().map(|c| c.resources))
    }
}

/// `properties.configuration.ingress`.
#[derive(Debug, Clone, PartialEq)]
pub struct IngressSpec {
    pub external: bool,
    pub target_port: u16,
    /// `stickySessions.affinity` is `sticky` (any case) and the transport is not TCP: session
    /// affinity asked for. Acted on in single revision mode only, as Learn documents it
    /// ("Session affinity in Azure Container Apps"); see [`crate::ingress`].
    pub sticky: bool,
}

/// Reads `v` as the wire type `T` (the `appmodel` types `arm` sends), or ARM's 400
/// `InvalidRequestContent` naming the key path that did not fit (`properties.template...`).
pub fn from_json<T: serde::de::DeserializeOwned>(v: &Value, at: &str) -> Result<T, ArmError> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        let key = match (at.is_empty(), path.as_str()) {
            (true, p) => p.to_owned(),
            (false, ".") => at.to_owned(),
            (false, p) => format!("{at}.{p}"),
        };
        ArmError::bad_request(
            "InvalidRequestContent",
            format!("'{key}': {}", e.into_inner()),
        )
    })
}

fn port_of(port: i32, ctx: &str) -> Result<u16, ArmError> {
    u16::try_from(port).ok().filter(|p| *p > 0).ok_or_else(|| {
        ArmError::bad_request(
            "ContainerAppInvalidProbe",
            format!("{ctx}: 'port' must be an integer 1..65535"),
        )
    })
}

fn parse_probe(v: &wire::Probe, container: &str) -> Result<Probe, ArmError> {
    let kind = probe_kind(v, container)?;
    let action = probe_action(v, container)?;
    // Ranges as the service checks them (see `PROBE_LIMITS`); a value out of range is a 400.
    let ranged = |k: &str, given: Option<u32>, d: u64| -> Result<u64, ArmError> {
        let v = given.map_or(d, u64::from);
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
    let success_threshold = ranged(
        "successThreshold",
        v.success_threshold,
        u64::from(DEFAULT_SUCCESS_THRESHOLD),
    )?;
    if kind != ProbeKind::Readiness && success_threshold != 1 {
        return Err(ArmError::bad_request(
            "ContainerAppInvalidProbe",
            format!(
                "container '{container}': 'successThreshold' must be 1 for a {} probe, got {success_threshold}",
                kind.word()
            ),
        ));
    }
    let grace = match v.termination_grace_period_seconds {
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
        initial_delay: Duration::from_secs(ranged(
            "initialDelaySeconds",
            v.initial_delay_seconds,
            0,
        )?),
        period: Duration::from_secs(ranged("periodSeconds", v.period_seconds, DEFAULT_PERIOD_S)?),
        timeout: Duration::from_secs(ranged(
            "timeoutSeconds",
            v.timeout_seconds,
            DEFAULT_TIMEOUT_S,
        )?),
        failure_threshold: ranged(
            "failureThreshold",
            v.failure_threshold,
            u64::from(DEFAULT_FAILURE_THRESHOLD),
        )? as u32,
        success_threshold: success_threshold as u32,
        grace,
    })
}

/// The probe's `type`: Liveness, Readiness or Startup (any case); anything else is a 400.
fn probe_kind(v: &wire::Probe, container: &str) -> Result<ProbeKind, ArmError> {
    match v
        .probe_type
        .as_ref()
        .map(|t| t.as_str().to_ascii_lowercase())
        .as_deref()
    {
        Some("liveness") => Ok(ProbeKind::Liveness),
        Some("readiness") => Ok(ProbeKind::Readiness),
        Some("startup") => Ok(ProbeKind::Startup),
        other => Err(ArmError::bad_request(
            "ContainerAppInvalidProbe",
            format!(
                "container '{container}': probe type must be Liveness, Readiness or Startup, got {other:?}"
            ),
        )),
    }
}

/// What the probe does: `httpGet` (path `/` by default, with its headers) or `tcpSocket`, on a
/// port 1..65535; a probe with neither is a 400.
fn probe_action(v: &wire::Probe, container: &str) -> Result<ProbeAction, ArmError> {
    if let Some(h) = &v.http_get {
        let headers = h
            .http_headers
            .iter()
            .flatten()
            .map(|x| (x.name.clone(), x.value.clone()))
            .collect();
        Ok(ProbeAction::Http {
            path: h.path.clone().unwrap_or_else(|| "/".to_owned()),
            port: port_of(h.port, container)?,
            headers,
        })
    } else if let Some(t) = &v.tcp_socket {
        Ok(ProbeAction::Tcp {
            port: port_of(t.port, container)?,
        })
    } else {
        Err(ArmError::bad_request(
            "ContainerAppInvalidProbe",
            format!("container '{container}': a probe needs httpGet or tcpSocket"),
        ))
    }
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

/// Secrets of `properties.configuration.secrets` (`[{name, value}]`) as (name, value), for
/// `secretRef` env; an entry without a name cannot be referred to and is left out.
pub fn secrets_of(secrets: Option<&[wire::Secret]>) -> Vec<(String, String)> {
    secrets
        .unwrap_or_default()
        .iter()
        .filter_map(|s| Some((s.name.clone()?, s.value.clone().unwrap_or_default())))
        .collect()
}

pub fn parse_container(
    v: &wire::Container,
    secrets: &[(String, String)],
) -> Result<ContainerSpec, ArmError> {
    let name = v.name.clone().unwrap_or_default();
    let image = v.image.clone().unwrap_or_default();
    if name.is_empty() || image.is_empty() {
        return Err(ArmError::bad_request(
            "InvalidRequestContent",
            "every container needs 'name' and 'image'",
        ));
    }
    let mut env = Vec::new();
    for item in &v.env {
        let value = if let Some(val) = &item.value {
            val.clone()
        } else if let Some(r) = &item.secret_ref {
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
        env.push((item.name.clone(), value));
    }
    let mut probes = Vec::new();
    for p in &v.probes {
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
    let resources = crate::resources::container_resources(v.resources.as_ref(), &name)?;
    Ok(ContainerSpec {
        name,
        image,
        command: v.command.clone().unwrap_or_default(),
        args: v.args.clone().unwrap_or_default(),
        env,
        probes,
        resources,
    })
}

/// Validates a typed `properties.template` (an app's or a job's), with the secrets its
/// `secretRef`s may name.
pub fn template_spec(
    template: &wire::Template,
    secrets: &[(String, String)],
) -> Result<TemplateSpec, ArmError> {
    if template.containers.is_empty() {
        return Err(ArmError::bad_request(
            "InvalidRequestContent",
            "properties.template.containers must list at least one container",
        ));
    }
    let containers = template
        .containers
        .iter()
        .map(|c| parse_container(c, secrets))
        .collect::<Result<Vec<_>, _>>()?;
    let scale = crate::scaler::ScaleSpec::parse(template.scale.as_ref())?;
    Ok(TemplateSpec {
        containers,
        scale,
        grace: Duration::from_secs(
            template
                .termination_grace_period_seconds
                .unwrap_or(DEFAULT_GRACE_S),
        ),
        revision_suffix: template.revision_suffix.clone().filter(|s| !s.is_empty()),
    })
}

/// Parses and validates `properties.template` (an app's or a job's) given as JSON, with the
/// `configuration` whose `secrets` its `secretRef`s may name.
pub fn parse_template(
    template: &Value,
    configuration: Option<&Value>,
) -> Result<TemplateSpec, ArmError> {
    let typed: wire::Template = from_json(template, "properties.template")?;
    let secrets: Option<Vec<wire::Secret>> = match configuration.and_then(|c| c.get("secrets")) {
        None | Some(Value::Null) => None,
        Some(s) => Some(from_json(s, "properties.configuration.secrets")?),
    };
    template_spec(&typed, &secrets_of(secrets.as_deref()))
}

/// Validates a typed `properties.configuration.ingress`.
pub fn ingress_spec(
    configuration: Option<&wire::Configuration>,
) -> Result<Option<IngressSpec>, ArmError> {
    let Some(ing) = configuration.and_then(|c| c.ingress.as_ref()) else {
        return Ok(None);
    };
    let target_port = ing
        .target_port
        .and_then(|p| u16::try_from(p).ok())
        .filter(|p| *p > 0)
        .ok_or_else(|| {
            ArmError::bad_request(
                "ContainerAppInvalidIngress",
                "ingress.targetPort must be an integer 1..65535",
            )
        })?;
    let sticky = ing
        .sticky_sessions
        .as_ref()
        .and_then(|s| s.affinity.as_ref())
        .is_some_and(|a| a.as_str().eq_ignore_ascii_case("sticky"))
        && !ing
            .transport
            .as_deref()
            .is_some_and(|t| t.eq_ignore_ascii_case("tcp"));
    Ok(Some(IngressSpec {
        external: ing.external.unwrap_or(false),
        target_port,
        sticky,
    }))
}

/// Parses and validates `properties.configuration.ingress` given as JSON.
pub fn parse_ingress(configuration: Option<&Value>) -> Result<Option<IngressSpec>, ArmError> {
    let typed: Option<wire::Configuration> = match configuration {
        None | Some(Value::Null) => None,
        Some(c) => Some(from_json(c, "properties.configuration")?),
    };
    ingress_spec(typed.as_ref())
}

/// When a new revision counts as ready for the traffic switch (tag `localplane.revisionReady`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadyPolicy {
    /// Every replica it scaled to has passed its startup and readiness probes (default: Learn,
    /// "Update and deploy changes in Azure Container Apps", *Zero downtime deployment*).
    AllReplicas,
    /// One replica started and ready (Learn's application-lifecycle page, the older wording).
    FirstReplica,
}

/// How many replicas a new revision starts before it takes the traffic (single mode; tag
/// `localplane.newRevisionReplicas`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NewRevisionReplicas {
    /// The serving revision's replica count, within the new revision's `maxReplicas` and its
    /// `minReplicas` (at least one); the default, Learn's *Zero downtime deployment*: "scaled
    /// up to match the previous revisions replica count (respecting the new revision's min and
    /// max replica count)".
    Previous,
    /// `minReplicas` (at least 1): what microsoft/azure-container-apps#638 reports.
    MinReplicas,
}

impl NewRevisionReplicas {
    /// The count a new revision scales to before it serves: `previous` is what the serving
    /// revision runs (none: the first revision), `min`/`max` the new revision's limits.
    pub fn target(self, previous: Option<u32>, min: u32, max: u32) -> u32 {
        let floor = min.max(1);
        match (self, previous) {
            (NewRevisionReplicas::Previous, Some(p)) => p.clamp(floor, max.max(floor)),
            _ => floor,
        }
    }
}

/// How platform maintenance (a node upgrade) moves an app's replicas (tag
/// `localplane.maintenance`; [`crate::maintenance`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaintenanceForm {
    /// The default, Learn ("Reliability in Azure Container Apps", *Resilience to service
    /// maintenance*: "rolling updates ... in stages", "containers continue running without
    /// interruption"): one replica at a time, its replacement started and ready before it is
    /// stopped, as a revision restart moves them.
    Rolling,
    /// What microsoft/azure-container-apps#1436 and #1144 report: one replica at a time, shut
    /// down first, its replacement started only once it is gone.
    StopFirst,
}

/// Per-app emulator knobs, read from resource tags (`localplane.*`) so they pass through any
/// ARM client unchanged.
#[derive(Debug, Clone, PartialEq)]
pub struct Knobs {
    pub drain_delay: Duration,
    pub routing_removal_lag: Duration,
    pub ready_policy: ReadyPolicy,
    pub new_revision_replicas: NewRevisionReplicas,
    /// Platform step durations (tag `localplane.timings`, else `LOCALPLANE_TIMINGS`, else fast).
    pub timings: crate::timings::Timings,
    /// The scaler's behaviour (tags `localplane.httpMetric`, `localplane.scaleUp`,
    /// `localplane.scaleDownStabilization`; default: Microsoft Learn's).
    pub scaling: crate::scaler::Behavior,
    /// The ingress's timeout kind and connect retries (tags `localplane.ingressTimeout`,
    /// `localplane.connectRetries`; docs/FIDELITY.md, "Ingress").
    pub ingress: crate::ingress::Policy,
    /// How platform maintenance moves the app's replicas (tag `localplane.maintenance`).
    pub maintenance: MaintenanceForm,
    /// How long a new revision may take to become ready before its operation fails and it
    /// reports `Failed` (tag `localplane.progressDeadlineSeconds`; default 600 s).
    pub progress_deadline: Duration,
}

pub const TAG_DRAIN_DELAY: &str = "localplane.drainDelaySeconds";
pub const TAG_ROUTING_LAG: &str = "localplane.routingRemovalLagMs";
pub const TAG_READY_POLICY: &str = "localplane.revisionReady";
/// `previous` (default: Learn's zero-downtime rule) or `minReplicas` (#638's report).
pub const TAG_NEW_REVISION_REPLICAS: &str = "localplane.newRevisionReplicas";
/// `idle` (default: Envoy's stream idle timeout, as users of Container Apps observe it) or
/// `request` (Envoy's route timeout to the response headers, as Learn's wording reads).
pub const TAG_INGRESS_TIMEOUT: &str = "localplane.ingressTimeout";
/// Retries of a refused upstream connect (default 1, Envoy's `num_retries`; 0: none).
pub const TAG_CONNECT_RETRIES: &str = "localplane.connectRetries";
/// `rolling` (default: Learn's rolling maintenance) or `stopFirst` (#1436's report).
pub const TAG_MAINTENANCE: &str = "localplane.maintenance";
/// Seconds a new revision may take to become ready (default 600, Kubernetes'
/// `progressDeadlineSeconds`; 1 to 3600): a lab's quick profile shortens it.
pub const TAG_PROGRESS_DEADLINE: &str = "localplane.progressDeadlineSeconds";
/// A new revision's progress deadline without the tag: Kubernetes' `progressDeadlineSeconds`
/// (no Microsoft source gives one; users report updates hanging about 10 minutes).
pub const DEFAULT_PROGRESS_DEADLINE: Duration = Duration::from_secs(600);
/// The most [`TAG_PROGRESS_DEADLINE`] takes, in seconds.
pub const MAX_PROGRESS_DEADLINE_SECONDS: u64 = 3600;

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
        let ready_policy = crate::tags::choice(
            get,
            TAG_READY_POLICY,
            &[
                ("allReplicas", ReadyPolicy::AllReplicas),
                ("firstReplica", ReadyPolicy::FirstReplica),
            ],
        )?;
        let new_revision_replicas = crate::tags::choice(
            get,
            TAG_NEW_REVISION_REPLICAS,
            &[
                ("previous", NewRevisionReplicas::Previous),
                ("minReplicas", NewRevisionReplicas::MinReplicas),
            ],
        )?;
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
        let scaling = crate::scaler::Behavior::from_tags(get)?;
        let timeout_kind = crate::tags::choice(
            get,
            TAG_INGRESS_TIMEOUT,
            &[
                ("idle", crate::ingress::TimeoutKind::Idle),
                ("request", crate::ingress::TimeoutKind::Request),
            ],
        )?;
        let maintenance = crate::tags::choice(
            get,
            TAG_MAINTENANCE,
            &[
                ("rolling", MaintenanceForm::Rolling),
                ("stopFirst", MaintenanceForm::StopFirst),
            ],
        )?;
        let progress_deadline = match get(TAG_PROGRESS_DEADLINE) {
            None => DEFAULT_PROGRESS_DEADLINE,
            Some(_) => match num(TAG_PROGRESS_DEADLINE)? {
                s @ 1..=MAX_PROGRESS_DEADLINE_SECONDS => Duration::from_secs(s),
                s => {
                    return Err(ArmError::bad_request(
                        "InvalidRequestContent",
                        format!(
                            "tag '{TAG_PROGRESS_DEADLINE}' must be 1 to \
                             {MAX_PROGRESS_DEADLINE_SECONDS} seconds, got {s}"
                        ),
                    ));
                }
            },
        };
        let defaults = crate::ingress::Policy::default();
        let connect_retries = match get(TAG_CONNECT_RETRIES) {
            None => defaults.connect_retries,
            Some(_) => u32::try_from(num(TAG_CONNECT_RETRIES)?).map_err(|_| {
                ArmError::bad_request(
                    "InvalidRequestContent",
                    format!("tag '{TAG_CONNECT_RETRIES}' is too large"),
                )
            })?,
        };
        Ok(Knobs {
            ingress: crate::ingress::Policy {
                timeout_kind,
                connect_retries,
                ..defaults
            },
            timings,
            scaling,
            drain_delay: Duration::from_secs(num(TAG_DRAIN_DELAY)?),
            routing_removal_lag: Duration::from_millis(num(TAG_ROUTING_LAG)?),
            ready_policy,
            new_revision_replicas,
            maintenance,
            progress_deadline,
        })
    }
}

/// Removes every `null` member of every object in `v`: in a PUT body (and in the arrays a PATCH
/// replaces whole) ARM reads `null` as absent, and a GET then returns the member absent or as
/// its default, never as `null` (the az CLI sends back the GET it read with `"env": null` and
/// iterates `container["env"]` in the answer).
pub fn strip_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, x| !x.is_null());
            m.values_mut().for_each(strip_nulls);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_nulls),
        _ => {}
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
    fn nulls_are_absent_members_at_any_depth() {
        let mut v = json!({"a": null, "b": {"c": null, "d": 1}, "e": [{"f": null, "g": [null]}]});
        strip_nulls(&mut v);
        assert_eq!(v, json!({"b": {"d": 1}, "e": [{"g": [null]}]}));
    }

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

    #[test]
    fn readiness_follows_learn_unless_a_tag_selects_the_reported_rule() {
        let k = Knobs::from_tags(None).unwrap();
        assert_eq!(k.ready_policy, ReadyPolicy::AllReplicas);
        assert_eq!(k.new_revision_replicas, NewRevisionReplicas::Previous);
        let k = Knobs::from_tags(Some(&json!({
            "localplane.revisionReady": "firstReplica",
            "localplane.newRevisionReplicas": "minReplicas"
        })))
        .unwrap();
        assert_eq!(k.ready_policy, ReadyPolicy::FirstReplica);
        assert_eq!(k.new_revision_replicas, NewRevisionReplicas::MinReplicas);
        for bad in [
            json!({"localplane.revisionReady": "some"}),
            json!({"localplane.newRevisionReplicas": "max"}),
        ] {
            assert!(Knobs::from_tags(Some(&bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_new_revision_scales_to_the_previous_count_within_its_own_limits() {
        use NewRevisionReplicas::{MinReplicas, Previous};
        // Within min..=max: the previous count.
        assert_eq!(Previous.target(Some(3), 1, 3), 3);
        assert_eq!(Previous.target(Some(5), 1, 10), 5);
        // Above max: max; below min: min; never 0.
        assert_eq!(Previous.target(Some(7), 1, 5), 5);
        assert_eq!(Previous.target(Some(1), 2, 5), 2);
        assert_eq!(Previous.target(Some(0), 0, 5), 1);
        // The first revision, or the #638 rule: minReplicas (at least 1).
        assert_eq!(Previous.target(None, 2, 5), 2);
        assert_eq!(MinReplicas.target(Some(5), 1, 5), 1);
        assert_eq!(MinReplicas.target(Some(5), 0, 5), 1);
    }

    #[test]
    fn scaling_knobs_from_tags() {
        use crate::scaler::{Behavior, HttpMetric, ScaleUp, Stabilization};
        let k = Knobs::from_tags(None).unwrap();
        assert_eq!(k.scaling, Behavior::default());
        assert_eq!(k.scaling.http_metric, HttpMetric::RequestRate);
        assert_eq!(k.scaling.scale_up, ScaleUp::Steps);
        assert_eq!(
            k.scaling.scale_down_stabilization,
            Stabilization::Window(Duration::from_secs(300))
        );
        let k = Knobs::from_tags(Some(&json!({
            "localplane.httpMetric": "peakInFlight",
            "localplane.scaleUp": "atOnce",
            "localplane.scaleDownStabilization": "cooldownPeriod"
        })))
        .unwrap();
        assert_eq!(
            k.scaling,
            Behavior {
                http_metric: HttpMetric::PeakInFlight,
                scale_up: ScaleUp::AtOnce,
                scale_down_stabilization: Stabilization::CooldownPeriod,
            }
        );
        let k =
            Knobs::from_tags(Some(&json!({"localplane.scaleDownStabilization": "10"}))).unwrap();
        assert_eq!(
            k.scaling.scale_down_stabilization,
            Stabilization::Window(Duration::from_secs(10))
        );
        for (tag, v) in [
            ("localplane.httpMetric", "inFlight"),
            ("localplane.scaleUp", "fast"),
            ("localplane.scaleDownStabilization", "-1"),
            ("localplane.scaleDownStabilization", "5m"),
        ] {
            let e = Knobs::from_tags(Some(&json!({ tag: v }))).unwrap_err();
            assert_eq!(e.status, 400, "{tag}={v}");
            assert!(e.message.contains(tag), "{}", e.message);
        }
    }

    /// The ingress defaults to Envoy's idle timeout and one connect retry; the tags select the
    /// route timeout and another retry count.
    #[test]
    fn ingress_knobs_from_tags() {
        use crate::ingress::{Policy, TimeoutKind};
        assert_eq!(Knobs::from_tags(None).unwrap().ingress, Policy::default());
        let k = Knobs::from_tags(Some(
            &json!({"localplane.ingressTimeout":"request","localplane.connectRetries":"0"}),
        ))
        .unwrap();
        assert_eq!(k.ingress.timeout_kind, TimeoutKind::Request);
        assert_eq!(k.ingress.connect_retries, 0);
        let k = Knobs::from_tags(Some(&json!({"localplane.ingressTimeout":"idle"}))).unwrap();
        assert_eq!(k.ingress.timeout_kind, TimeoutKind::Idle);
        assert_eq!(k.ingress.connect_retries, 1);
        assert!(Knobs::from_tags(Some(&json!({"localplane.ingressTimeout":"route"}))).is_err());
        assert!(Knobs::from_tags(Some(&json!({"localplane.connectRetries":"-1"}))).is_err());
    }

    /// A new revision's progress deadline is 600 s unless the tag sets 1 to 3600 seconds.
    #[test]
    fn progress_deadline_from_tags() {
        let deadline = |v: Value| Knobs::from_tags(Some(&v)).map(|k| k.progress_deadline);
        assert_eq!(deadline(json!({})).unwrap(), Duration::from_secs(600));
        for (v, secs) in [("1", 1), ("30", 30), ("3600", 3600)] {
            assert_eq!(
                deadline(json!({"localplane.progressDeadlineSeconds": v})).unwrap(),
                Duration::from_secs(secs)
            );
        }
        for v in ["0", "3601", "-5", "10s"] {
            let e = deadline(json!({"localplane.progressDeadlineSeconds": v})).unwrap_err();
            assert_eq!(e.status, 400, "{v}");
            assert!(
                e.message.contains("progressDeadlineSeconds"),
                "{}",
                e.message
            );
        }
    }

    /// Maintenance is rolling unless the tag selects the reported stop-first form; any other
    /// value is a 400 that names the tag.
    #[test]
    fn maintenance_knob_from_tags() {
        let form = |v: Value| Knobs::from_tags(Some(&v)).map(|k| k.maintenance);
        assert_eq!(form(json!({})).unwrap(), MaintenanceForm::Rolling);
        assert_eq!(
            form(json!({"localplane.maintenance":"rolling"})).unwrap(),
            MaintenanceForm::Rolling
        );
        assert_eq!(
            form(json!({"localplane.maintenance":"stopFirst"})).unwrap(),
            MaintenanceForm::StopFirst
        );
        let e = form(json!({"localplane.maintenance":"stopfirst"})).unwrap_err();
        assert_eq!(e.status, 400);
        assert!(
            e.message.contains("localplane.maintenance"),
            "{}",
            e.message
        );
    }
}
