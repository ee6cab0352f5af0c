//! Event-driven jobs (`triggerType: Event`): `eventTriggerConfig.scale` as the plane keeps it
//! ([`parse_scale`]: `pollingInterval`, `minExecutions`, `maxExecutions`, and the rules
//! localplane acts on, KEDA's [`METRICS_API`] scaler), the metric read over HTTP
//! ([`read_metric`]) and the number of executions to start at each polling interval
//! ([`executions_to_start`], KEDA's ScaledJob `default` scaling strategy). Below `job`, which
//! holds the parsed [`EventScale`] in its trigger; the poller that starts executions lives in
//! `jobs`. docs/FIDELITY.md, "Event-driven jobs", quotes the sources.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use serde_json::Value;

use crate::error::ArmError;

/// The spec's `JobScale` defaults: "Interval to check each event source in seconds. Defaults to
/// 30s", "Minimum number of job executions that are created for a trigger, default 0",
/// "Maximum number of job executions that are created for a trigger, default 100".
pub const DEFAULT_POLLING_INTERVAL: Duration = Duration::from_secs(30);
pub const DEFAULT_MIN_EXECUTIONS: u32 = 0;
pub const DEFAULT_MAX_EXECUTIONS: u32 = 100;

/// The one scale rule type localplane acts on.
pub const METRICS_API: &str = "metrics-api";

/// How long one read of a rule's `url` may take (KEDA's default HTTP timeout, 3 s).
pub const METRIC_TIMEOUT: Duration = Duration::from_secs(3);

/// `capped` (default) or `keda`: see [`MinCount`].
pub const TAG_MIN_EXECUTIONS: &str = "localplane.minExecutions";

/// How `minExecutions` enters the count against `maxExecutions`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MinCount {
    /// Every unfinished execution counts against `maxExecutions`, the minimum ones included:
    /// never more than `maxExecutions` at once (the spec's and Learn's "maximum").
    #[default]
    Capped,
    /// KEDA's `getScalingDecision`: once `minExecutions` run, the running count is reduced by
    /// `minExecutions` before the strategy subtracts it, so up to `maxExecutions +
    /// minExecutions` may run.
    Keda,
}

impl MinCount {
    /// Reads the tag [`TAG_MIN_EXECUTIONS`] from a job's `tags`.
    pub fn from_tags(tags: Option<&Value>) -> Result<MinCount, ArmError> {
        crate::tags::choice(
            |k| tags.and_then(|t| t.get(k)).and_then(Value::as_str),
            TAG_MIN_EXECUTIONS,
            &[("capped", MinCount::Capped), ("keda", MinCount::Keda)],
        )
    }
}

/// One `metrics-api` rule: KEDA reads `url`, takes the number at `valueLocation` and scales on
/// it against `targetValue`; the rule is active above `activationTargetValue`.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricsApiRule {
    pub name: String,
    pub url: String,
    pub value_location: String,
    pub target_value: f64,
    pub activation_target_value: f64,
}

/// An event trigger's scale settings.
#[derive(Debug, Clone, PartialEq)]
pub struct EventScale {
    pub polling_interval: Duration,
    /// Already at most `max_executions` (KEDA: "If minReplicaCount is greater than
    /// maxReplicaCount, minReplicaCount will be set to maxReplicaCount").
    pub min_executions: u32,
    pub max_executions: u32,
    pub rules: Vec<MetricsApiRule>,
    pub min_count: MinCount,
}

fn invalid(msg: impl Into<String>) -> ArmError {
    ArmError::bad_request("InvalidRequestContent", msg)
}

/// A non-negative whole number at `scale.<k>`, `default` when absent.
fn count(scale: &Value, k: &str, default: u32, min: u64) -> Result<u32, ArmError> {
    match scale.get(k) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => v
            .as_u64()
            .filter(|n| *n >= min)
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| {
                invalid(format!(
                    "'configuration.eventTriggerConfig.scale.{k}' must be a whole number of at \
                     least {min}, got {v}"
                ))
            }),
    }
}

/// `eventTriggerConfig.scale` (required for `triggerType: Event`) and the job's tags.
pub fn parse_scale(scale: Option<&Value>, tags: Option<&Value>) -> Result<EventScale, ArmError> {
    let min_count = MinCount::from_tags(tags)?;
    let scale = scale.filter(|s| s.is_object()).ok_or_else(|| {
        invalid("'configuration.eventTriggerConfig.scale' is required for triggerType Event")
    })?;
    let polling = count(
        scale,
        "pollingInterval",
        u32::try_from(DEFAULT_POLLING_INTERVAL.as_secs()).unwrap_or(30),
        1,
    )?;
    let max_executions = count(scale, "maxExecutions", DEFAULT_MAX_EXECUTIONS, 0)?;
    let min_executions =
        count(scale, "minExecutions", DEFAULT_MIN_EXECUTIONS, 0)?.min(max_executions);
    let rules = scale
        .get("rules")
        .and_then(Value::as_array)
        .filter(|r| !r.is_empty())
        .ok_or_else(|| {
            invalid(format!(
                "'configuration.eventTriggerConfig.scale.rules' must hold at least one rule; \
                 localplane acts on type '{METRICS_API}'"
            ))
        })?
        .iter()
        .map(parse_rule)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(EventScale {
        polling_interval: Duration::from_secs(u64::from(polling)),
        min_executions,
        max_executions,
        rules,
        min_count,
    })
}

/// A metadata value as KEDA takes it: a string (numbers are accepted too).
fn meta<'a>(metadata: &'a Value, k: &str) -> Option<std::borrow::Cow<'a, str>> {
    match metadata.get(k)? {
        Value::String(s) => Some(std::borrow::Cow::Borrowed(s.as_str())),
        Value::Number(n) => Some(std::borrow::Cow::Owned(n.to_string())),
        _ => None,
    }
}

fn parse_rule(rule: &Value) -> Result<MetricsApiRule, ArmError> {
    let name = rule
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| invalid("every scale rule needs a 'name'"))?
        .to_string();
    let kind = rule.get("type").and_then(Value::as_str).unwrap_or("");
    if kind != METRICS_API {
        return Err(ArmError::bad_request(
            "JobScaleRuleTypeNotSupported",
            format!(
                "scale rule '{name}' has type '{kind}': localplane runs event-driven jobs only on \
                 scale rules of type '{METRICS_API}' (KEDA's Metrics API scaler, metadata url, \
                 valueLocation, targetValue)"
            ),
        ));
    }
    let has = |k: &str| {
        rule.get(k)
            .is_some_and(|v| !v.is_null() && v.as_array().is_none_or(|a| !a.is_empty()))
    };
    if has("auth") || has("identity") {
        return Err(ArmError::bad_request(
            "JobScaleRuleTypeNotSupported",
            format!(
                "scale rule '{name}': localplane's '{METRICS_API}' rules take no 'auth' or \
                 'identity' (the endpoint is read without credentials)"
            ),
        ));
    }
    let metadata = rule.get("metadata").cloned().unwrap_or(Value::Null);
    let required = |k: &str| {
        meta(&metadata, k)
            .filter(|v| !v.trim().is_empty())
            .map(|v| v.trim().to_string())
            .ok_or_else(|| invalid(format!("scale rule '{name}': metadata '{k}' is required")))
    };
    let url = required("url")?;
    if !url.starts_with("http://") {
        return Err(invalid(format!(
            "scale rule '{name}': metadata 'url' must be a plain http:// URL, got '{url}'"
        )));
    }
    let value_location = required("valueLocation")?;
    let number = |k: &str, v: &str, positive: bool| {
        v.parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && (if positive { *x > 0.0 } else { *x >= 0.0 }))
            .ok_or_else(|| {
                invalid(format!(
                    "scale rule '{name}': metadata '{k}' must be a {} number, got '{v}'",
                    if positive { "positive" } else { "non-negative" }
                ))
            })
    };
    let target_value = number("targetValue", &required("targetValue")?, true)?;
    let activation_target_value = match meta(&metadata, "activationTargetValue") {
        Some(v) => number("activationTargetValue", v.trim(), false)?,
        None => 0.0,
    };
    if let Some(f) = meta(&metadata, "format")
        && f != "json"
    {
        return Err(invalid(format!(
            "scale rule '{name}': localplane reads metadata 'format' json only, got '{f}'"
        )));
    }
    if let Some(m) = meta(&metadata, "authMode") {
        return Err(invalid(format!(
            "scale rule '{name}': localplane reads the url without authentication, got \
             authMode '{m}'"
        )));
    }
    Ok(MetricsApiRule {
        name,
        url,
        value_location,
        target_value,
        activation_target_value,
    })
}

/// One rule's reading at a polling interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    /// The number at `valueLocation` (KEDA's `queueLength`).
    pub value: f64,
    pub target_value: f64,
    /// `value > activationTargetValue`.
    pub active: bool,
}

impl Reading {
    pub fn of(rule: &MetricsApiRule, value: f64) -> Reading {
        Reading {
            value,
            target_value: rule.target_value,
            active: value > rule.activation_target_value,
        }
    }
}

/// The executions to start at one polling interval, with `running` executions of the job not
/// finished (started ones whose replicas have not started yet included: KEDA's
/// `runningJobCount` counts every Job not `Complete` or `Failed`) and the rules' `readings`
/// (a rule whose read failed is absent).
///
/// KEDA's ScaledJob with the `default` strategy and `multipleScalersCalculation: max`: the
/// active reading with the largest value is the metric; `maxScale = min(ceil(value /
/// targetValue), maxExecutions)`; below `minExecutions` running, `minExecutions - running` are
/// started whatever the metric; otherwise, when a rule is active (or `minExecutions` > 0),
/// `min(ceil(value), maxScale - running)` (not below 0). Under [`MinCount::Keda`] the running
/// count of that last step is `running - minExecutions`.
pub fn executions_to_start(scale: &EventScale, running: u32, readings: &[Reading]) -> u32 {
    let min = scale.min_executions;
    if running < min {
        return min - running;
    }
    let metric = readings
        .iter()
        .filter(|r| r.active)
        .fold(None::<Reading>, |best, r| match best {
            Some(b) if b.value >= r.value => Some(b),
            _ => Some(*r),
        });
    let active = metric.is_some() || min > 0;
    if !active {
        return 0;
    }
    let (value, target) = metric.map_or((0.0, 1.0), |m| (m.value, m.target_value));
    let ceil = |x: f64| -> u64 {
        if x.is_finite() && x > 0.0 {
            x.ceil().min(f64::from(u32::MAX)) as u64
        } else {
            0
        }
    };
    let max_scale = ceil(value / target).min(u64::from(scale.max_executions));
    let counted = match scale.min_count {
        MinCount::Capped => running,
        MinCount::Keda => running - min,
    };
    let room = max_scale.saturating_sub(u64::from(counted));
    u32::try_from(room.min(ceil(value))).unwrap_or(u32::MAX)
}

/// Why a rule's metric could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetricError {
    #[error("GET {url}: {cause}")]
    Http { url: String, cause: String },
    #[error("GET {url}: status {status}")]
    Status { url: String, status: u16 },
    #[error("GET {url}: the body is not JSON: {cause}")]
    NotJson { url: String, cause: String },
    #[error("GET {url}: no number at valueLocation '{location}' in {body}")]
    NoValue {
        url: String,
        location: String,
        body: String,
    },
}

/// The value at a GJSON-style dotted path (`a.b`, `items.0.n`), a number or a numeric string.
pub fn value_at(body: &Value, location: &str) -> Option<f64> {
    let mut v = body;
    for part in location.split('.') {
        v = match v {
            Value::Object(m) => m.get(part)?,
            Value::Array(a) => a.get(part.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok().filter(|x| x.is_finite()),
        _ => None,
    }
}

/// `url` as localplane's host reaches it: a host that names an app of the environment (as a
/// job's container reaches it, `http://<app>/...` on port 80) becomes the app's ingress
/// (`fqdn`, `127.0.0.1:<port>`); any other URL is kept.
pub fn resolve_url(url: &str, app_fqdn: impl Fn(&str) -> Option<String>) -> String {
    let Some(rest) = url.strip_prefix("http://") else {
        return url.to_string();
    };
    let (authority, path) = rest.find('/').map_or((rest, ""), |i| rest.split_at(i));
    let host = authority.strip_suffix(":80").unwrap_or(authority);
    if host.contains(':') {
        return url.to_string();
    }
    match app_fqdn(host) {
        Some(fqdn) => format!("http://{fqdn}{path}"),
        None => url.to_string(),
    }
}

/// Reads `rule`'s metric at `url` (the rule's, resolved by [`resolve_url`]): `GET` within
/// [`METRIC_TIMEOUT`], the number at `valueLocation`.
pub async fn read_metric(rule: &MetricsApiRule, url: &str) -> Result<f64, MetricError> {
    let url = url.to_string();
    let http = |cause: String| MetricError::Http {
        url: url.clone(),
        cause,
    };
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Empty<Bytes>>();
    let req = http::Request::get(&url)
        .header(http::header::USER_AGENT, "localplane-keda-metrics-api")
        .body(Empty::<Bytes>::new())
        .map_err(|e| http(e.to_string()))?;
    let fut = async {
        let resp = client.request(req).await.map_err(|e| http(e.to_string()))?;
        let status = resp.status().as_u16();
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| http(e.to_string()))?
            .to_bytes();
        Ok::<_, MetricError>((status, body))
    };
    let (status, body) = tokio::time::timeout(METRIC_TIMEOUT, fut)
        .await
        .map_err(|_| http(format!("timeout after {} s", METRIC_TIMEOUT.as_secs())))??;
    if !(200..300).contains(&status) {
        return Err(MetricError::Status { url, status });
    }
    let v: Value = serde_json::from_slice(&body).map_err(|e| MetricError::NotJson {
        url: url.clone(),
        cause: e.to_string(),
    })?;
    value_at(&v, &rule.value_location).ok_or_else(|| MetricError::NoValue {
        url,
        location: rule.value_location.clone(),
        body: v.to_string().chars().take(200).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn scale(min: u32, max: u32) -> EventScale {
        EventScale {
            polling_interval: Duration::from_secs(1),
            min_executions: min,
            max_executions: max,
            rules: Vec::new(),
            min_count: MinCount::Capped,
        }
    }

    /// A reading of `value` against a target of `target`, active above 0.
    fn r(value: f64, target: f64) -> Reading {
        Reading {
            value,
            target_value: target,
            active: value > 0.0,
        }
    }

    #[test]
    fn keda_docs_table_of_max_replica_count() {
        // keda-docs, ScaledJob specification, maxReplicaCount: (queue length, max replica
        // count, target average value, running job count) -> number of the scale.
        for (q, max, target, running, want) in [
            (10.0, 3, 1.0, 0, 3),
            (10.0, 3, 2.0, 0, 3),
            (10.0, 3, 1.0, 1, 2),
            (10.0, 100, 1.0, 0, 10),
            (4.0, 3, 5.0, 0, 1),
        ] {
            assert_eq!(
                executions_to_start(&scale(0, max), running, &[r(q, target)]),
                want,
                "queue {q}, max {max}, target {target}, running {running}"
            );
        }
    }

    #[test]
    fn max_executions_caps_on_both_sides() {
        let s = scale(0, 5);
        // Below the cap the metric decides; at and above it the cap does.
        assert_eq!(executions_to_start(&s, 0, &[r(4.0, 1.0)]), 4);
        assert_eq!(executions_to_start(&s, 0, &[r(5.0, 1.0)]), 5);
        assert_eq!(executions_to_start(&s, 0, &[r(6.0, 1.0)]), 5);
        // Running executions fill the cap: 4 running leave 1, 5 leave none, never negative.
        assert_eq!(executions_to_start(&s, 4, &[r(50.0, 1.0)]), 1);
        assert_eq!(executions_to_start(&s, 5, &[r(50.0, 1.0)]), 0);
        assert_eq!(executions_to_start(&s, 7, &[r(50.0, 1.0)]), 0);
        // maxExecutions 0 starts nothing.
        assert_eq!(executions_to_start(&scale(0, 0), 0, &[r(50.0, 1.0)]), 0);
    }

    #[test]
    fn running_and_pending_executions_count_against_the_metric() {
        let s = scale(0, 100);
        // 3 items, 2 executions not finished (running or still starting): 1 more; 3: none.
        assert_eq!(executions_to_start(&s, 2, &[r(3.0, 1.0)]), 1);
        assert_eq!(executions_to_start(&s, 3, &[r(3.0, 1.0)]), 0);
        assert_eq!(executions_to_start(&s, 4, &[r(3.0, 1.0)]), 0);
        // ceil(value / target): 5 items at 2 per execution want 3, one side and the other.
        assert_eq!(executions_to_start(&s, 0, &[r(4.0, 2.0)]), 2);
        assert_eq!(executions_to_start(&s, 0, &[r(5.0, 2.0)]), 3);
        assert_eq!(executions_to_start(&s, 2, &[r(5.0, 2.0)]), 1);
        // A target below 1 is held to ceil(value) (KEDA's scaleTo is the queue length).
        assert_eq!(executions_to_start(&s, 0, &[r(3.0, 0.5)]), 3);
    }

    #[test]
    fn an_inactive_or_unread_metric_starts_nothing_without_min_executions() {
        let s = scale(0, 10);
        assert_eq!(executions_to_start(&s, 0, &[]), 0);
        assert_eq!(executions_to_start(&s, 0, &[r(0.0, 1.0)]), 0);
        let below_activation = Reading {
            value: 2.0,
            target_value: 1.0,
            active: false,
        };
        assert_eq!(executions_to_start(&s, 0, &[below_activation]), 0);
        assert!(!Reading::of(&rule(2.0), 2.0).active);
        assert!(Reading::of(&rule(2.0), 2.5).active);
    }

    fn rule(activation: f64) -> MetricsApiRule {
        MetricsApiRule {
            name: "q".into(),
            url: "http://127.0.0.1:1/queue".into(),
            value_location: "length".into(),
            target_value: 1.0,
            activation_target_value: activation,
        }
    }

    #[test]
    fn the_largest_active_reading_is_the_metric() {
        let s = scale(0, 10);
        assert_eq!(executions_to_start(&s, 0, &[r(2.0, 1.0), r(6.0, 1.0)]), 6);
        assert_eq!(executions_to_start(&s, 0, &[r(6.0, 3.0), r(2.0, 1.0)]), 2);
    }

    #[test]
    fn min_executions_on_both_sides() {
        let s = scale(2, 5);
        // Below the minimum: the missing ones start whatever the metric says.
        assert_eq!(executions_to_start(&s, 0, &[]), 2);
        assert_eq!(executions_to_start(&s, 1, &[]), 1);
        assert_eq!(executions_to_start(&s, 0, &[r(9.0, 1.0)]), 2);
        // At the minimum, an empty queue starts none; items start more, up to the cap.
        assert_eq!(executions_to_start(&s, 2, &[]), 0);
        assert_eq!(executions_to_start(&s, 2, &[r(3.0, 1.0)]), 1);
        assert_eq!(executions_to_start(&s, 2, &[r(9.0, 1.0)]), 3);
        assert_eq!(executions_to_start(&s, 5, &[r(9.0, 1.0)]), 0);
        // KEDA's count (tag): the minimum ones do not count, so the cap is max + min.
        let keda = EventScale {
            min_count: MinCount::Keda,
            ..scale(2, 5)
        };
        assert_eq!(executions_to_start(&keda, 1, &[r(9.0, 1.0)]), 1);
        assert_eq!(executions_to_start(&keda, 2, &[r(3.0, 1.0)]), 3);
        assert_eq!(executions_to_start(&keda, 5, &[r(9.0, 1.0)]), 2);
        assert_eq!(executions_to_start(&keda, 7, &[r(9.0, 1.0)]), 0);
    }

    fn spec_scale(rules: Value) -> Value {
        json!({"pollingInterval": 40, "minExecutions": 1, "maxExecutions": 5, "rules": rules})
    }

    fn metrics_rule(metadata: Value) -> Value {
        json!([{"name": "queue", "type": "metrics-api", "metadata": metadata}])
    }

    #[test]
    fn the_spec_example_shape_parses_with_a_metrics_api_rule() {
        let s = parse_scale(
            Some(&spec_scale(metrics_rule(
                json!({"url": "http://127.0.0.1:9/queue",
                "valueLocation": "length", "targetValue": "1"}),
            ))),
            None,
        )
        .unwrap();
        assert_eq!(s.polling_interval, Duration::from_secs(40));
        assert_eq!((s.min_executions, s.max_executions), (1, 5));
        assert_eq!(s.rules[0].target_value, 1.0);
        assert_eq!(s.rules[0].activation_target_value, 0.0);
        let d = parse_scale(
            Some(&json!({"rules": metrics_rule(json!({"url": "http://q/x",
                "valueLocation": "a.b", "targetValue": 2.5, "activationTargetValue": "1"}))})),
            None,
        )
        .unwrap();
        assert_eq!(d.polling_interval, DEFAULT_POLLING_INTERVAL);
        assert_eq!((d.min_executions, d.max_executions), (0, 100));
        assert_eq!(d.rules[0].activation_target_value, 1.0);
        let clamped = parse_scale(
            Some(
                &json!({"minExecutions": 9, "maxExecutions": 3, "rules": metrics_rule(
                json!({"url": "http://q/x", "valueLocation": "n", "targetValue": "1"}))}),
            ),
            None,
        )
        .unwrap();
        assert_eq!(
            clamped.min_executions, 3,
            "min is held to max, as KEDA does"
        );
    }

    #[test]
    fn rule_types_localplane_does_not_act_on_are_refused_naming_metrics_api() {
        // The spec example's own rule.
        let e = parse_scale(
            Some(&spec_scale(json!([{"name": "servicebuscalingrule",
                "type": "azure-servicebus", "metadata": {"topicName": "my-topic"}}]))),
            None,
        )
        .unwrap_err();
        assert_eq!(e.status.as_u16(), 400);
        assert_eq!(e.code, "JobScaleRuleTypeNotSupported");
        assert!(e.message.contains("'azure-servicebus'"), "{}", e.message);
        assert!(e.message.contains("'metrics-api'"), "{}", e.message);
        let with_auth = json!([{"name": "q", "type": "metrics-api", "auth": [{"secretRef": "s",
            "triggerParameter": "apiKey"}], "metadata": {"url": "http://q/x",
            "valueLocation": "n", "targetValue": "1"}}]);
        assert!(parse_scale(Some(&spec_scale(with_auth)), None).is_err());
    }

    #[test]
    fn bad_scale_settings_are_refused() {
        let ok_meta = json!({"url": "http://q/x", "valueLocation": "n", "targetValue": "1"});
        let bad = |s: Value| parse_scale(Some(&s), None).unwrap_err().message;
        assert!(bad(json!({"rules": []})).contains("at least one rule"));
        assert!(
            bad(json!({"pollingInterval": 0, "rules": metrics_rule(ok_meta.clone())}))
                .contains("pollingInterval")
        );
        assert!(
            bad(json!({"maxExecutions": -1, "rules": metrics_rule(ok_meta.clone())}))
                .contains("maxExecutions")
        );
        for (k, v) in [
            ("url", json!("https://q/x")),
            ("targetValue", json!("0")),
            ("targetValue", json!("many")),
            ("activationTargetValue", json!("-1")),
            ("format", json!("xml")),
            ("authMode", json!("apiKey")),
        ] {
            let mut m = ok_meta.clone();
            m[k] = v.clone();
            let msg = bad(json!({"rules": metrics_rule(m)}));
            assert!(msg.contains(k), "{k}={v}: {msg}");
        }
        let mut m = ok_meta.clone();
        m.as_object_mut().unwrap().remove("valueLocation");
        assert!(bad(json!({"rules": metrics_rule(m)})).contains("valueLocation"));
        assert!(parse_scale(None, None).is_err());
        let tag = parse_scale(
            Some(&json!({"rules": metrics_rule(ok_meta)})),
            Some(&json!({"localplane.minExecutions": "keda"})),
        )
        .unwrap();
        assert_eq!(tag.min_count, MinCount::Keda);
    }

    #[test]
    fn an_app_name_in_the_url_is_read_at_the_apps_ingress() {
        let apps = |name: &str| (name == "queue").then(|| "127.0.0.1:4100".to_string());
        assert_eq!(
            resolve_url("http://queue/queue", apps),
            "http://127.0.0.1:4100/queue"
        );
        assert_eq!(
            resolve_url("http://queue:80/queue?x=1", apps),
            "http://127.0.0.1:4100/queue?x=1"
        );
        assert_eq!(resolve_url("http://queue", apps), "http://127.0.0.1:4100");
        for kept in [
            "http://queue:8080/queue",
            "http://other/queue",
            "http://127.0.0.1:9/queue",
        ] {
            assert_eq!(resolve_url(kept, apps), kept);
        }
    }

    #[test]
    fn values_are_found_by_dotted_path() {
        let body = json!({"length": 3, "s": "2.5", "a": {"b": [{"n": 7}]}, "x": true});
        assert_eq!(value_at(&body, "length"), Some(3.0));
        assert_eq!(value_at(&body, "s"), Some(2.5));
        assert_eq!(value_at(&body, "a.b.0.n"), Some(7.0));
        assert_eq!(value_at(&body, "a.b.1.n"), None);
        assert_eq!(value_at(&body, "x"), None);
        assert_eq!(value_at(&body, "missing"), None);
    }
}
