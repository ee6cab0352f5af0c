//! The scale decision of one revision: the HTTP rule as Microsoft Learn's "Set scaling rules in
//! Azure Container Apps" documents it, over the requests its app's ingress counts.
//!
//! Pure logic (no I/O, no clock of its own): the plane feeds it what the ingress saw since the
//! previous evaluation ([`Observation`]) whenever [`Scaler::due`], and [`Scaler::activate`] when
//! a request reaches an app at zero. docs/FIDELITY.md ("Scaling") quotes the page and lists what
//! localplane infers. In short, by default:
//! - every 15 s (not `pollingInterval`: "This value doesn't apply to HTTP and TCP scale rules"),
//!   the metric is the requests arrived in the past 15 s divided by 15, and desired =
//!   ceil(metric / `concurrentRequests`), clamped to [`minReplicas`, `maxReplicas`];
//! - scale-out at once (scale-up stabilization 0 s) in Learn's steps: 0 → 1, then at most
//!   `max(4, 2 × current)` per evaluation (1, 4, 8, 16, 32, ...);
//! - scale-in of all the excess at once, to the highest count desired over the last 300 s (the
//!   scale-down stabilization window);
//! - to zero (`minReplicas` 0) only after `cooldownPeriod` without a request, from any count.
//!
//! The app's `localplane.*` tags ([`Behavior`]) select what localplane did before instead: the
//! peak of requests in flight at each `pollingInterval`, the desired count at once, and
//! `cooldownPeriod` (or any number of seconds) as the scale-down window.

use std::collections::VecDeque;
use std::time::Duration;

use appmodel as wire;
use tokio::time::Instant;

use crate::error::ArmError;

/// Container Apps' defaults and limits (Microsoft Learn "Set scaling rules in Azure Container
/// Apps"; the `Scale` definition of the Microsoft.App spec for the two KEDA periods).
pub const DEFAULT_MIN_REPLICAS: u32 = 0;
pub const DEFAULT_MAX_REPLICAS: u32 = 10;
pub const MAX_REPLICAS_LIMIT: u32 = 1000;
pub const DEFAULT_POLLING_INTERVAL: Duration = Duration::from_secs(30);
pub const DEFAULT_COOLDOWN_PERIOD: Duration = Duration::from_secs(300);
pub const DEFAULT_CONCURRENT_REQUESTS: u32 = 10;

/// Learn, "Scale behavior": the HTTP rule's clock and window ("Every 15 seconds, the number of
/// concurrent requests is calculated as the number of requests in the past 15 seconds divided
/// by 15").
pub const HTTP_INTERVAL: Duration = Duration::from_secs(15);
/// Learn, "Scale behavior": "Scale down stabilization window | 300 seconds".
pub const DEFAULT_SCALE_DOWN_STABILIZATION: Duration = Duration::from_secs(300);

/// The tags that select a scaling behaviour other than Learn's (see [`Behavior`]).
pub const TAG_HTTP_METRIC: &str = "localplane.httpMetric";
pub const TAG_SCALE_UP: &str = "localplane.scaleUp";
pub const TAG_SCALE_DOWN_STABILIZATION: &str = "localplane.scaleDownStabilization";

/// What the HTTP rule measures, and when.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum HttpMetric {
    /// Learn: every 15 s, the requests arrived in the past 15 s divided by 15.
    #[default]
    RequestRate,
    /// KEDA's HTTP add-on's concurrency (what localplane did before): the most requests in
    /// flight at once since the previous evaluation, evaluated at `pollingInterval`.
    PeakInFlight,
}

/// How scale-out moves toward the desired count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ScaleUp {
    /// Learn: 0 → 1, then to at most `max(4, 2 × current)` per evaluation.
    #[default]
    Steps,
    /// To the desired count at once (what localplane did before).
    AtOnce,
}

/// The scale-down stabilization window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stabilization {
    /// A fixed window (Learn: 300 s).
    Window(Duration),
    /// The revision's `cooldownPeriod` (what localplane did before).
    CooldownPeriod,
}

impl Default for Stabilization {
    fn default() -> Self {
        Stabilization::Window(DEFAULT_SCALE_DOWN_STABILIZATION)
    }
}

/// How an app's scaler behaves where localplane offers more than Learn's documented behaviour
/// (the default): read from the app's tags [`TAG_HTTP_METRIC`] (`requestRate`, `peakInFlight`),
/// [`TAG_SCALE_UP`] (`steps`, `atOnce`) and [`TAG_SCALE_DOWN_STABILIZATION`] (seconds, or
/// `cooldownPeriod`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Behavior {
    pub http_metric: HttpMetric,
    pub scale_up: ScaleUp,
    pub scale_down_stabilization: Stabilization,
}

impl Behavior {
    /// Reads the three tags through `get` (tag name → value); an unknown value is a 400
    /// `InvalidRequestContent` naming the tag.
    pub fn from_tags<'a>(get: impl Fn(&str) -> Option<&'a str>) -> Result<Behavior, ArmError> {
        let bad = |tag: &str, want: &str, got: &str| {
            ArmError::bad_request(
                "InvalidRequestContent",
                format!("tag '{tag}' must be {want}, got '{got}'"),
            )
        };
        let trimmed = |k: &str| get(k).map(str::trim);
        let http_metric = crate::tags::choice(
            trimmed,
            TAG_HTTP_METRIC,
            &[
                ("requestRate", HttpMetric::RequestRate),
                ("peakInFlight", HttpMetric::PeakInFlight),
            ],
        )?;
        let scale_up = crate::tags::choice(
            trimmed,
            TAG_SCALE_UP,
            &[("steps", ScaleUp::Steps), ("atOnce", ScaleUp::AtOnce)],
        )?;
        let scale_down_stabilization = match get(TAG_SCALE_DOWN_STABILIZATION).map(str::trim) {
            None => Stabilization::default(),
            Some("cooldownPeriod") => Stabilization::CooldownPeriod,
            Some(o) => match o.parse::<u64>() {
                Ok(s) => Stabilization::Window(Duration::from_secs(s)),
                Err(_) => {
                    return Err(bad(
                        TAG_SCALE_DOWN_STABILIZATION,
                        "a number of seconds or cooldownPeriod",
                        o,
                    ));
                }
            },
        };
        Ok(Behavior {
            http_metric,
            scale_up,
            scale_down_stabilization,
        })
    }
}

/// `properties.template.scale`, as localplane acts on it.
#[derive(Debug, Clone, PartialEq)]
pub struct ScaleSpec {
    pub min_replicas: u32,
    pub max_replicas: u32,
    pub polling_interval: Duration,
    pub cooldown_period: Duration,
    /// The HTTP rule that drives the count: the template's `http` rule, or Container Apps'
    /// default HTTP rule when the template has no rule at all.
    pub http: Option<HttpRule>,
    /// Rules of other kinds (`tcp`, `custom`, `azureQueue`), by name: stored and returned by the
    /// ARM API, not acted on (FIDELITY.md).
    pub not_emulated: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct HttpRule {
    /// `""` for Container Apps' default rule.
    pub name: String,
    pub concurrent_requests: u32,
}

impl Default for ScaleSpec {
    fn default() -> Self {
        ScaleSpec {
            min_replicas: DEFAULT_MIN_REPLICAS,
            max_replicas: DEFAULT_MAX_REPLICAS,
            polling_interval: DEFAULT_POLLING_INTERVAL,
            cooldown_period: DEFAULT_COOLDOWN_PERIOD,
            http: Some(HttpRule {
                name: String::new(),
                concurrent_requests: DEFAULT_CONCURRENT_REQUESTS,
            }),
            not_emulated: Vec::new(),
        }
    }
}

fn invalid(msg: String) -> ArmError {
    ArmError::bad_request("ContainerAppInvalidScaleSettings", msg)
}

impl ScaleSpec {
    /// The replicas a revision starts with: `minReplicas`, at least one (a revision is
    /// provisioned when one replica is ready, so even a `minReplicas = 0` revision starts one).
    pub fn initial_replicas(&self) -> u32 {
        self.min_replicas.max(1)
    }

    /// Reads the typed `template.scale` (absent: every default), checking what the wire model
    /// cannot: the limits, the periods and the rules. The one place localplane reads it.
    pub fn parse(scale: Option<&wire::Scale>) -> Result<ScaleSpec, ArmError> {
        let Some(scale) = scale else {
            return Ok(ScaleSpec::default());
        };
        let min = scale.min_replicas.unwrap_or(DEFAULT_MIN_REPLICAS);
        let max = scale.max_replicas.unwrap_or(DEFAULT_MAX_REPLICAS);
        let limit = MAX_REPLICAS_LIMIT;
        if min > limit || max > limit || max < 1 || min > max {
            return Err(invalid(format!(
                "invalid scale: minReplicas {min}, maxReplicas {max} (minReplicas 0..{limit}, maxReplicas 1..{limit}, minReplicas <= maxReplicas)"
            )));
        }
        let secs = |v: Option<u32>, default: Duration| {
            v.map_or(default, |s| Duration::from_secs(u64::from(s)))
        };
        let polling_interval = secs(scale.polling_interval, DEFAULT_POLLING_INTERVAL);
        if polling_interval.is_zero() {
            return Err(invalid(
                "scale 'pollingInterval' must be at least 1 second".into(),
            ));
        }
        let cooldown_period = secs(scale.cooldown_period, DEFAULT_COOLDOWN_PERIOD);
        let mut http = None;
        let mut not_emulated = Vec::new();
        for rule in &scale.rules {
            let name = rule.name.clone().unwrap_or_default();
            if name.is_empty() {
                return Err(invalid("every scale rule needs a 'name'".into()));
            }
            match &rule.http {
                Some(h) => {
                    if http.is_some() {
                        return Err(invalid(format!(
                            "scale rule '{name}': localplane emulates one http rule per revision"
                        )));
                    }
                    http = Some(HttpRule {
                        concurrent_requests: concurrent_requests(h, &name)?,
                        name,
                    });
                }
                None => not_emulated.push(name),
            }
        }
        if scale.rules.is_empty() {
            http = ScaleSpec::default().http;
        }
        Ok(ScaleSpec {
            min_replicas: min,
            max_replicas: max,
            polling_interval,
            cooldown_period,
            http,
            not_emulated,
        })
    }
}

/// `http.metadata.concurrentRequests` (metadata is a string map in the spec). Default 10, at
/// least 1.
fn concurrent_requests(http: &wire::HttpScaleRule, rule: &str) -> Result<u32, ArmError> {
    let Some(v) = http
        .metadata
        .as_ref()
        .and_then(|m| m.get("concurrentRequests"))
    else {
        return Ok(DEFAULT_CONCURRENT_REQUESTS);
    };
    v.trim()
        .parse::<u32>()
        .ok()
        .filter(|n| *n >= 1)
        .ok_or_else(|| {
            invalid(format!(
                "scale rule '{rule}': 'concurrentRequests' must be an integer of at least 1, got \"{v}\""
            ))
        })
}

/// What the ingress saw since the previous evaluation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Observation {
    /// The most requests in flight at once (held ones included).
    pub peak_in_flight: u32,
    /// Requests that arrived.
    pub arrived: u64,
}

/// The metric an evaluation acted on, for the system rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Requests arrived in the past 15 s (Learn's metric is this divided by 15).
    Arrived15s(u64),
    /// The most requests in flight at once since the previous evaluation.
    PeakInFlight(u32),
}

impl std::fmt::Display for Metric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Metric::Arrived15s(n) => {
                let per_s = *n as f64 / HTTP_INTERVAL.as_secs_f64();
                write!(
                    f,
                    "{per_s:.1} concurrent requests ({n} in the past 15 s / 15)"
                )
            }
            Metric::PeakInFlight(n) => write!(f, "{n} concurrent requests (peak in flight)"),
        }
    }
}

/// Why the count changed, for the system rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// 0 → n on a request held at the ingress.
    Activated { to: u32 },
    /// n → 0 after a cooldown without requests.
    Deactivated { from: u32, idle: Duration },
    /// More replicas for the requests (one step of at most `max(4, 2 × from)` by default).
    Out { from: u32, to: u32, metric: Metric },
    /// Fewer, after the scale-down stabilization window below the current count.
    In {
        from: u32,
        to: u32,
        metric: Metric,
        window: Duration,
    },
}

/// The outcome of one evaluation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The replica count the revision should run now.
    pub replicas: u32,
    pub change: Option<Change>,
    /// The rule asks for more than `maxReplicas` (what it asks), at the first evaluation of a
    /// streak that does (one `RunningAtMaxScale` row per streak).
    pub capped: Option<u32>,
}

/// One revision's scaler state.
#[derive(Debug, Clone)]
pub struct Scaler {
    spec: ScaleSpec,
    behavior: Behavior,
    current: u32,
    /// When a request was last seen (creation counts as one: a new revision is not idle yet).
    last_active: Instant,
    next_poll: Instant,
    /// (when, desired) of the evaluations within the last scale-down stabilization window.
    window: VecDeque<(Instant, u32)>,
    /// The previous evaluation asked for more than `maxReplicas`.
    at_max: bool,
}

impl Scaler {
    /// A scaler for a revision running `current` replicas at `now`.
    pub fn new(spec: ScaleSpec, behavior: Behavior, current: u32, now: Instant) -> Scaler {
        let mut window = VecDeque::new();
        window.push_back((now, current));
        let mut s = Scaler {
            next_poll: now,
            spec,
            behavior,
            current,
            last_active: now,
            window,
            at_max: false,
        };
        s.next_poll = now + s.interval();
        s
    }

    pub fn spec(&self) -> &ScaleSpec {
        &self.spec
    }

    pub fn behavior(&self) -> Behavior {
        self.behavior
    }

    /// Follows the app's tags when they change (the next evaluation uses them).
    pub fn set_behavior(&mut self, behavior: Behavior) {
        self.behavior = behavior;
    }

    pub fn replicas(&self) -> u32 {
        self.current
    }

    /// The time between evaluations: 15 s for Learn's HTTP metric, else `pollingInterval`.
    pub fn interval(&self) -> Duration {
        match (&self.spec.http, self.behavior.http_metric) {
            (Some(_), HttpMetric::RequestRate) => HTTP_INTERVAL,
            _ => self.spec.polling_interval,
        }
    }

    /// The scale-down stabilization window in effect.
    pub fn stabilization(&self) -> Duration {
        match self.behavior.scale_down_stabilization {
            Stabilization::Window(d) => d,
            Stabilization::CooldownPeriod => self.spec.cooldown_period,
        }
    }

    /// Whether an evaluation is due at `now`.
    pub fn due(&self, now: Instant) -> bool {
        now >= self.next_poll
    }

    /// When the next evaluation is due.
    pub fn next_poll(&self) -> Instant {
        self.next_poll
    }

    /// A request reached the app while it runs no replica: activate it now (the ingress holds
    /// the request meanwhile), to `max(minReplicas, 1)`.
    pub fn activate(&mut self, now: Instant) -> Option<Change> {
        self.last_active = now;
        if self.current > 0 {
            return None;
        }
        self.current = self.spec.initial_replicas();
        self.window.push_back((now, self.current));
        Some(Change::Activated { to: self.current })
    }

    /// The count the rule asks for, unclamped, and the metric it read.
    fn wanted(&self, obs: Observation) -> (u32, Metric) {
        let Some(rule) = &self.spec.http else {
            // No rule localplane acts on: the count stays where the limits put it.
            let (min, max) = (self.spec.min_replicas, self.spec.max_replicas);
            let keep = self.current.clamp(min.max(1), max);
            return (keep, Metric::PeakInFlight(obs.peak_in_flight));
        };
        let target = rule.concurrent_requests;
        match self.behavior.http_metric {
            // ceil((arrived / 15) / target), in integers.
            HttpMetric::RequestRate => {
                let per_window = HTTP_INTERVAL.as_secs() * u64::from(target);
                let wanted = obs.arrived.div_ceil(per_window);
                (
                    u32::try_from(wanted).unwrap_or(u32::MAX),
                    Metric::Arrived15s(obs.arrived),
                )
            }
            HttpMetric::PeakInFlight => (
                obs.peak_in_flight.div_ceil(target),
                Metric::PeakInFlight(obs.peak_in_flight),
            ),
        }
    }

    /// The evaluation due at [`Scaler::next_poll`].
    pub fn evaluate(&mut self, now: Instant, obs: Observation) -> Decision {
        let interval = self.interval();
        // On the clock ("every 15 seconds"), not drifting by the controller's lateness.
        self.next_poll += interval;
        if self.next_poll <= now {
            self.next_poll = now + interval;
        }
        if obs.peak_in_flight > 0 || obs.arrived > 0 {
            self.last_active = now;
        }
        let (min, max) = (self.spec.min_replicas, self.spec.max_replicas);
        let (wanted, metric) = self.wanted(obs);
        let idle = now.saturating_duration_since(self.last_active);
        // Below one replica only after a cooldown without requests (KEDA's deactivation).
        let floor = if idle >= self.spec.cooldown_period {
            min
        } else {
            min.max(1)
        };
        let desired = wanted.clamp(floor, max);
        let capped = (wanted > max && !self.at_max).then_some(wanted);
        self.at_max = wanted > max;
        self.window.push_back((now, desired));
        let window = self.stabilization();
        let horizon = now.checked_sub(window);
        while let Some(&(t, _)) = self.window.front() {
            if horizon.is_some_and(|h| t <= h) && self.window.len() > 1 {
                self.window.pop_front();
            } else {
                break;
            }
        }
        let from = self.current;
        let change = if desired > from {
            // Scale-up stabilization 0 s: at once, by a step at most.
            let to = match (self.behavior.scale_up, from) {
                (ScaleUp::AtOnce, _) => desired,
                (ScaleUp::Steps, 0) => desired.min(min.max(1)),
                (ScaleUp::Steps, n) => desired.min(n.saturating_mul(2).max(4)),
            };
            self.current = to;
            Some(if from == 0 {
                Change::Activated { to }
            } else {
                Change::Out { from, to, metric }
            })
        } else if desired < from {
            // The highest count desired within the window; all the excess over it goes at once.
            // To zero, the cooldown without requests has passed already (desired is 0 only
            // then), from any count: the cooldown, not the window, decides.
            let hold = if desired == 0 {
                0
            } else {
                self.window.iter().map(|&(_, d)| d).max().unwrap_or(desired)
            };
            let to = hold.min(from);
            if to < from {
                self.current = to;
                Some(if to == 0 {
                    Change::Deactivated { from, idle }
                } else {
                    Change::In {
                        from,
                        to,
                        metric,
                        window,
                    }
                })
            } else {
                None
            }
        } else {
            None
        };
        Decision {
            replicas: self.current,
            change,
            capped,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn spec(min: u32, max: u32, target: u32) -> ScaleSpec {
        ScaleSpec {
            min_replicas: min,
            max_replicas: max,
            polling_interval: Duration::from_secs(30),
            cooldown_period: Duration::from_secs(300),
            http: Some(HttpRule {
                name: "http".into(),
                concurrent_requests: target,
            }),
            not_emulated: vec![],
        }
    }

    fn busy(peak: u32) -> Observation {
        Observation {
            peak_in_flight: peak,
            arrived: u64::from(peak),
        }
    }

    /// `n` requests arrived in the past 15 s (a few in flight).
    fn arrived(n: u64) -> Observation {
        Observation {
            peak_in_flight: 1,
            arrived: n,
        }
    }

    /// What localplane did before (the tags `peakInFlight`, `atOnce`, `cooldownPeriod`).
    const OLD: Behavior = Behavior {
        http_metric: HttpMetric::PeakInFlight,
        scale_up: ScaleUp::AtOnce,
        scale_down_stabilization: Stabilization::CooldownPeriod,
    };

    /// Learn's behaviour but scale-out to the desired count at once (`atOnce`), for tests of
    /// other boundaries.
    const AT_ONCE: Behavior = Behavior {
        http_metric: HttpMetric::RequestRate,
        scale_up: ScaleUp::AtOnce,
        scale_down_stabilization: Stabilization::Window(DEFAULT_SCALE_DOWN_STABILIZATION),
    };

    fn sec(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    /// `template.scale` as the API reads it: through the wire model first (a body that does not
    /// fit it is a 400 before the scaler sees it), then [`ScaleSpec::parse`].
    fn parse_json(v: Value) -> Result<ScaleSpec, String> {
        let typed: wire::Scale = serde_json::from_value(v).map_err(|e| e.to_string())?;
        ScaleSpec::parse(Some(&typed)).map_err(|e| e.message)
    }

    const IDLE: Observation = Observation {
        peak_in_flight: 0,
        arrived: 0,
    };

    #[test]
    fn defaults_when_the_template_has_no_scale_block() {
        let s = ScaleSpec::parse(None).unwrap();
        assert_eq!((s.min_replicas, s.max_replicas), (0, 10));
        assert_eq!(s.polling_interval, Duration::from_secs(30));
        assert_eq!(s.cooldown_period, Duration::from_secs(300));
        assert_eq!(s.http.unwrap().concurrent_requests, 10);
        assert_eq!(parse_json(json!({})).unwrap(), ScaleSpec::default());
    }

    #[test]
    fn the_http_rule_and_other_rules_are_read() {
        let s = parse_json(json!({
            "minReplicas": 0, "maxReplicas": 5, "pollingInterval": 2, "cooldownPeriod": 7,
            "rules": [
                {"name": "http-rule", "http": {"metadata": {"concurrentRequests": "3"}}},
                {"name": "q", "azureQueue": {"queueName": "x", "queueLength": 5}},
                {"name": "t", "tcp": {"metadata": {"concurrentConnections": "5"}}}
            ]
        }))
        .unwrap();
        assert_eq!(
            s.http,
            Some(HttpRule {
                name: "http-rule".into(),
                concurrent_requests: 3
            })
        );
        assert_eq!(s.not_emulated, vec!["q".to_string(), "t".to_string()]);
        assert_eq!(s.polling_interval, Duration::from_secs(2));
        assert_eq!(s.cooldown_period, Duration::from_secs(7));
        // Only non-HTTP rules: no default HTTP rule (the template's rules replace it).
        let only_queue = parse_json(json!({"rules": [{"name": "q", "azureQueue": {}}]})).unwrap();
        assert_eq!(only_queue.http, None);
        // An http rule without metadata: the default threshold.
        let bare = parse_json(json!({"rules": [{"name": "h", "http": {}}]})).unwrap();
        assert_eq!(bare.http.unwrap().concurrent_requests, 10);
    }

    #[test]
    fn limits_are_checked_on_both_sides() {
        let ok = |v: Value| parse_json(v).is_ok();
        assert!(ok(json!({"minReplicas": 0, "maxReplicas": 1})));
        assert!(!ok(json!({"minReplicas": 0, "maxReplicas": 0})));
        assert!(ok(json!({"minReplicas": 1000, "maxReplicas": 1000})));
        assert!(!ok(json!({"minReplicas": 1001, "maxReplicas": 1000})));
        assert!(!ok(json!({"maxReplicas": 1001})));
        assert!(ok(json!({"minReplicas": 3, "maxReplicas": 3})));
        assert!(!ok(json!({"minReplicas": 4, "maxReplicas": 3})));
        assert!(!ok(json!({"minReplicas": -1})));
        assert!(ok(json!({"pollingInterval": 1})));
        assert!(!ok(json!({"pollingInterval": 0})));
        assert!(ok(json!({"cooldownPeriod": 0})));
        let rule = |c: Value| json!({"rules": [{"name": "h", "http": {"metadata": {"concurrentRequests": c}}}]});
        assert!(ok(rule(json!("1"))));
        // The spec's metadata is a string map: a bare number does not fit the wire model.
        assert!(!ok(rule(json!(1))));
        assert!(!ok(rule(json!("0"))));
        assert!(!ok(rule(json!("ten"))));
        assert!(!ok(json!({"rules": [{"http": {}}]})), "a rule needs a name");
        assert!(!ok(json!({"rules": {}})));
        let typed: wire::Scale =
            serde_json::from_value(json!({"minReplicas": 4, "maxReplicas": 3})).unwrap();
        let e = ScaleSpec::parse(Some(&typed)).unwrap_err();
        assert_eq!(e.status, 400);
        assert_eq!(e.code, "ContainerAppInvalidScaleSettings");
    }

    #[test]
    fn behavior_tags_default_to_learn_and_reject_unknown_values() {
        let none = |_: &str| None;
        assert_eq!(Behavior::from_tags(none).unwrap(), Behavior::default());
        let old = Behavior::from_tags(|k| match k {
            TAG_HTTP_METRIC => Some("peakInFlight"),
            TAG_SCALE_UP => Some("atOnce"),
            TAG_SCALE_DOWN_STABILIZATION => Some("cooldownPeriod"),
            _ => None,
        })
        .unwrap();
        assert_eq!(old, OLD);
        let w =
            Behavior::from_tags(|k| (k == TAG_SCALE_DOWN_STABILIZATION).then_some("0")).unwrap();
        assert_eq!(w.scale_down_stabilization, Stabilization::Window(sec(0)));
        assert!(Behavior::from_tags(|k| (k == TAG_HTTP_METRIC).then_some("rps")).is_err());
        assert!(Behavior::from_tags(|k| (k == TAG_SCALE_UP).then_some("")).is_err());
    }

    #[test]
    fn the_http_rule_is_evaluated_every_15_s_whatever_the_polling_interval() {
        let t0 = Instant::now();
        for polling in [1, 30] {
            let mut sp = spec(1, 10, 10);
            sp.polling_interval = sec(polling);
            let s = Scaler::new(sp.clone(), Behavior::default(), 1, t0);
            assert!(!s.due(t0 + sec(14)), "polling {polling} s: due at 14 s");
            assert!(s.due(t0 + sec(15)), "polling {polling} s: not due at 15 s");
            // The old metric keeps the polling interval.
            let s = Scaler::new(sp, OLD, 1, t0);
            assert!(!s.due(t0 + sec(polling) - Duration::from_millis(1)));
            assert!(s.due(t0 + sec(polling)));
        }
        // Without an HTTP rule, the polling interval (nothing else is acted on).
        let mut sp = spec(1, 10, 10);
        sp.http = None;
        assert_eq!(
            Scaler::new(sp, Behavior::default(), 1, t0).interval(),
            sec(30)
        );
    }

    #[test]
    fn the_clock_does_not_drift_with_a_late_evaluation() {
        let t0 = Instant::now();
        let mut s = Scaler::new(spec(1, 10, 10), Behavior::default(), 1, t0);
        s.evaluate(t0 + Duration::from_millis(15_400), IDLE);
        assert_eq!(
            s.next_poll(),
            t0 + sec(30),
            "every 15 s, not 15 s after a late one"
        );
        // Far behind (a stalled controller): the next one 15 s from now.
        s.evaluate(t0 + sec(100), IDLE);
        assert_eq!(s.next_poll(), t0 + sec(115));
    }

    #[test]
    fn the_metric_is_arrivals_in_15_s_over_15_on_both_sides_of_each_multiple() {
        // Target 10 per replica: 150 requests in 15 s are 10 concurrent (1 replica), 151 are
        // 10.07 (2 replicas). In flight does not count.
        for (n, want) in [
            (0, 1),
            (1, 1),
            (150, 1),
            (151, 2),
            (300, 2),
            (301, 3),
            (450, 3),
        ] {
            let t0 = Instant::now();
            let mut s = Scaler::new(spec(1, 10, 10), AT_ONCE, 1, t0);
            let obs = Observation {
                peak_in_flight: 500,
                arrived: n,
            };
            assert_eq!(s.evaluate(t0 + sec(15), obs).replicas, want, "{n} arrived");
        }
        // The old metric: the peak in flight, whatever arrived.
        for (peak, want) in [(1, 1), (10, 1), (11, 2), (20, 2), (21, 3), (30, 3), (31, 4)] {
            let t0 = Instant::now();
            let mut s = Scaler::new(spec(1, 10, 10), OLD, 1, t0);
            let obs = Observation {
                peak_in_flight: peak,
                arrived: 10_000,
            };
            assert_eq!(s.evaluate(t0 + sec(30), obs).replicas, want, "peak {peak}");
        }
    }

    #[test]
    fn a_burst_is_averaged_over_the_15_s_window() {
        // 20 requests a second against a target of 10: a 7 s burst is 140 requests, 9.3 per
        // second over the window (no scale-out); an 8 s burst is 160, 10.7 (2 replicas). The
        // old metric saw 20 in flight in both (2 replicas) if they were 1 s requests.
        let t0 = Instant::now();
        let burst = |secs: u64| arrived(20 * secs);
        let mut s = Scaler::new(spec(1, 10, 10), Behavior::default(), 1, t0);
        assert_eq!(s.evaluate(t0 + sec(15), burst(7)).replicas, 1);
        let mut s = Scaler::new(spec(1, 10, 10), Behavior::default(), 1, t0);
        assert_eq!(s.evaluate(t0 + sec(15), burst(8)).replicas, 2);
        // A burst of 14 s at 11 a second (154 requests) scales out; the same rate for 13 s
        // (143) does not: the window is 15 s whatever the burst's length.
        let mut s = Scaler::new(spec(1, 10, 10), Behavior::default(), 1, t0);
        assert_eq!(s.evaluate(t0 + sec(15), arrived(11 * 14)).replicas, 2);
        let mut s = Scaler::new(spec(1, 10, 10), Behavior::default(), 1, t0);
        assert_eq!(s.evaluate(t0 + sec(15), arrived(11 * 13)).replicas, 1);
        // A burst that starts at an evaluation: 14 s fit in its window, 16 s spill 1 s into the
        // next, which then still sees a request, so the cooldown to zero starts 15 s later.
        for (burst, zero_at) in [(14, 15 + 300), (16, 30 + 300)] {
            let mut s = Scaler::new(spec(0, 10, 10), Behavior::default(), 1, t0);
            // One request a second, each over before the next.
            let window = |n: u64| Observation {
                peak_in_flight: u32::from(n > 0),
                arrived: n,
            };
            s.evaluate(t0 + sec(15), window(burst.min(15)));
            s.evaluate(t0 + sec(30), window(burst.saturating_sub(15)));
            let d = s.evaluate(t0 + sec(zero_at - 1), IDLE);
            assert_eq!(d.replicas, 1, "{burst} s burst, 1 s before");
            let d = s.evaluate(t0 + sec(zero_at), IDLE);
            assert_eq!(d.replicas, 0, "{burst} s burst");
        }
    }

    #[test]
    fn the_count_is_clamped_to_the_limits_and_capped_is_reported() {
        let t0 = Instant::now();
        let mut s = Scaler::new(spec(2, 4, 10), Behavior::default(), 2, t0);
        let d = s.evaluate(t0 + sec(15), arrived(600));
        assert_eq!(
            (d.replicas, d.capped),
            (4, None),
            "exactly at max is not capped"
        );
        let d = s.evaluate(t0 + sec(30), arrived(601));
        assert_eq!((d.replicas, d.capped), (4, Some(5)));
        let d = s.evaluate(t0 + sec(45), arrived(900));
        assert_eq!((d.replicas, d.capped), (4, None), "once per streak");
        s.evaluate(t0 + sec(60), arrived(600));
        let d = s.evaluate(t0 + sec(75), arrived(601));
        assert_eq!(d.capped, Some(5), "a new streak");
        // Below min: min (after the cooldown, too).
        let mut s = Scaler::new(spec(2, 4, 10), Behavior::default(), 2, t0);
        let d = s.evaluate(t0 + sec(600), IDLE);
        assert_eq!((d.replicas, d.change), (2, None));
    }

    #[test]
    fn scale_out_goes_in_learns_steps_1_4_8_16_up_to_max() {
        // 3000 requests in 15 s at a target of 10: 20 replicas wanted, max 30.
        let t0 = Instant::now();
        let mut s = Scaler::new(spec(0, 30, 10), Behavior::default(), 0, t0);
        let mut counts = Vec::new();
        for i in 1..=6 {
            counts.push(s.evaluate(t0 + sec(15 * i), arrived(3000)).replicas);
        }
        assert_eq!(counts, vec![1, 4, 8, 16, 20, 20]);
        // Each step is min(max, desired, max(4, 2 × current)): from 3, 6; from 2, 4.
        for (from, want) in [(2, 4), (3, 6), (4, 8), (5, 10), (12, 20)] {
            let mut s = Scaler::new(spec(1, 30, 10), Behavior::default(), from, t0);
            assert_eq!(
                s.evaluate(t0 + sec(15), arrived(3000)).replicas,
                want,
                "from {from}"
            );
        }
        // Below a step: the desired count itself.
        let mut s = Scaler::new(spec(1, 30, 10), Behavior::default(), 1, t0);
        let d = s.evaluate(t0 + sec(15), arrived(450));
        assert_eq!(
            d.change,
            Some(Change::Out {
                from: 1,
                to: 3,
                metric: Metric::Arrived15s(450)
            })
        );
        // Capped at max inside a step: 16 → 18 (not 32) with max 18.
        let mut s = Scaler::new(spec(1, 18, 10), Behavior::default(), 16, t0);
        assert_eq!(s.evaluate(t0 + sec(15), arrived(3000)).replicas, 18);
        // `atOnce`: to the desired count at the first evaluation.
        let mut s = Scaler::new(spec(1, 30, 10), AT_ONCE, 1, t0);
        assert_eq!(s.evaluate(t0 + sec(15), arrived(3000)).replicas, 20);
    }

    #[test]
    fn scale_in_waits_the_300_s_stabilization_window_then_removes_all_the_excess() {
        let t0 = Instant::now();
        let mut s = Scaler::new(spec(1, 10, 10), AT_ONCE, 1, t0);
        // Peak at +15 s: 8 replicas. Load drops to 1 replica's worth at once.
        assert_eq!(s.evaluate(t0 + sec(15), arrived(1200)).replicas, 8);
        let mut t = 15;
        while t < 300 {
            t += 15;
            assert_eq!(s.evaluate(t0 + sec(t), arrived(15)).replicas, 8, "+{t} s");
        }
        // 299 s after the last evaluation that wanted 8: still 8; 301 s: 1, in one step.
        assert_eq!(s.evaluate(t0 + sec(15 + 299), arrived(15)).replicas, 8);
        let d = s.evaluate(t0 + sec(15 + 301), arrived(15));
        assert_eq!(
            d.change,
            Some(Change::In {
                from: 8,
                to: 1,
                metric: Metric::Arrived15s(15),
                window: sec(300)
            })
        );
        // The highest count desired over the window: 8 at +0, 5 at +100 s, then 1: 5 from
        // 300 s after the 8, 1 from 300 s after the 5.
        let mut s = Scaler::new(spec(1, 10, 10), AT_ONCE, 1, t0);
        s.evaluate(t0, arrived(1200));
        s.evaluate(t0 + sec(100), arrived(750));
        assert_eq!(s.evaluate(t0 + sec(299), arrived(15)).replicas, 8);
        assert_eq!(s.evaluate(t0 + sec(301), arrived(15)).replicas, 5);
        assert_eq!(s.evaluate(t0 + sec(399), arrived(15)).replicas, 5);
        assert_eq!(s.evaluate(t0 + sec(401), arrived(15)).replicas, 1);
    }

    #[test]
    fn a_short_cooldown_does_not_shorten_the_scale_in_window() {
        // cooldownPeriod 10 s, minReplicas 1: the window is still 300 s.
        let t0 = Instant::now();
        let mut sp = spec(1, 10, 10);
        sp.cooldown_period = sec(10);
        let mut s = Scaler::new(sp.clone(), AT_ONCE, 1, t0);
        s.evaluate(t0 + sec(15), arrived(450));
        assert_eq!(s.evaluate(t0 + sec(45), IDLE).replicas, 3);
        assert_eq!(s.evaluate(t0 + sec(15 + 299), IDLE).replicas, 3);
        assert_eq!(s.evaluate(t0 + sec(15 + 301), IDLE).replicas, 1);
        // The old behaviour (`cooldownPeriod` as the window): 1 after 10 s.
        let mut s = Scaler::new(sp.clone(), OLD, 1, t0);
        s.evaluate(t0 + sec(30), busy(30));
        assert_eq!(s.evaluate(t0 + sec(39), busy(5)).replicas, 3);
        assert_eq!(s.evaluate(t0 + sec(41), busy(5)).replicas, 1);
        // A window in seconds.
        let b = Behavior {
            scale_down_stabilization: Stabilization::Window(sec(60)),
            ..OLD
        };
        let mut s = Scaler::new(sp, b, 1, t0);
        s.evaluate(t0 + sec(30), busy(30));
        assert_eq!(s.evaluate(t0 + sec(89), busy(5)).replicas, 3);
        assert_eq!(s.evaluate(t0 + sec(91), busy(5)).replicas, 1);
    }

    #[test]
    fn scale_to_zero_only_after_a_cooldown_without_requests() {
        let t0 = Instant::now();
        let mut s = Scaler::new(spec(0, 10, 10), Behavior::default(), 1, t0);
        // One request seen at +15 s: the idle clock starts again.
        assert_eq!(s.evaluate(t0 + sec(15), arrived(1)).replicas, 1);
        let d = s.evaluate(t0 + sec(314), IDLE);
        assert_eq!((d.replicas, d.change), (1, None), "299 s idle");
        let d = s.evaluate(t0 + sec(315), IDLE);
        assert_eq!(d.replicas, 0, "300 s idle");
        assert_eq!(
            d.change,
            Some(Change::Deactivated {
                from: 1,
                idle: sec(300)
            })
        );
        // A fresh scaler is not idle at creation: no deactivation before a cooldown.
        let mut s = Scaler::new(spec(0, 10, 10), Behavior::default(), 1, t0);
        assert_eq!(s.evaluate(t0 + sec(299), IDLE).replicas, 1);
        assert_eq!(s.evaluate(t0 + sec(300), IDLE).replicas, 0);
        // minReplicas 1 never goes to zero.
        let mut s = Scaler::new(spec(1, 10, 10), Behavior::default(), 1, t0);
        assert_eq!(s.evaluate(t0 + sec(3000), IDLE).replicas, 1);
    }

    #[test]
    fn the_cooldown_takes_the_last_replicas_to_zero_not_the_window() {
        // cooldownPeriod 10 s, minReplicas 0, 3 replicas: 10 s without a request take the app
        // to zero from 3 (Learn: "how long after the last event was observed before the
        // application scales down to its minimum replica count"); the 300 s window does not
        // hold it, and while requests come it holds N → M.
        let t0 = Instant::now();
        let mut sp = spec(0, 10, 10);
        sp.cooldown_period = sec(10);
        let mut s = Scaler::new(sp, AT_ONCE, 1, t0);
        assert_eq!(s.evaluate(t0 + sec(15), arrived(450)).replicas, 3);
        assert_eq!(s.evaluate(t0 + sec(24), IDLE).replicas, 3, "9 s idle");
        let d = s.evaluate(t0 + sec(25), IDLE);
        assert_eq!(
            d.change,
            Some(Change::Deactivated {
                from: 3,
                idle: sec(10)
            })
        );
    }

    #[test]
    fn a_request_at_zero_activates_at_once_and_restarts_the_idle_clock() {
        let t0 = Instant::now();
        let mut s = Scaler::new(spec(0, 10, 10), Behavior::default(), 1, t0);
        s.evaluate(t0 + sec(300), IDLE);
        assert_eq!(s.replicas(), 0);
        assert_eq!(s.activate(t0 + sec(301)), Some(Change::Activated { to: 1 }));
        assert_eq!(s.activate(t0 + sec(302)), None, "already active");
        // The held requests completed before the next evaluation: idle again, deactivated a
        // whole cooldown after the last request seen (the second held one, at +302 s).
        assert_eq!(s.evaluate(t0 + sec(315), IDLE).replicas, 1);
        assert_eq!(s.evaluate(t0 + sec(601), IDLE).replicas, 1);
        assert_eq!(s.evaluate(t0 + sec(602), IDLE).replicas, 0);
    }

    #[test]
    fn an_evaluation_that_sees_load_at_zero_activates_to_one_then_steps() {
        let t0 = Instant::now();
        let mut s = Scaler::new(spec(0, 10, 10), Behavior::default(), 0, t0);
        let d = s.evaluate(t0 + sec(15), arrived(450));
        assert_eq!(d.change, Some(Change::Activated { to: 1 }));
        let d = s.evaluate(t0 + sec(30), arrived(450));
        assert_eq!(d.replicas, 3);
        // The old behaviour: to the desired count at once.
        let mut s = Scaler::new(spec(0, 10, 10), OLD, 0, t0);
        let d = s.evaluate(t0 + sec(30), busy(15));
        assert_eq!(d.change, Some(Change::Activated { to: 2 }));
    }

    #[test]
    fn without_an_http_rule_the_count_stays_within_the_limits() {
        let t0 = Instant::now();
        let mut sp = spec(0, 10, 10);
        sp.http = None;
        let mut s = Scaler::new(sp, Behavior::default(), 1, t0);
        let d = s.evaluate(t0 + sec(30), busy(500));
        assert_eq!((d.replicas, d.change), (1, None));
        let d = s.evaluate(t0 + sec(10_000), IDLE);
        assert_eq!(d.replicas, 1);
    }

    #[test]
    fn the_metric_reads_as_learn_words_it() {
        assert_eq!(
            Metric::Arrived15s(160).to_string(),
            "10.7 concurrent requests (160 in the past 15 s / 15)"
        );
        assert_eq!(
            Metric::PeakInFlight(7).to_string(),
            "7 concurrent requests (peak in flight)"
        );
    }
}
