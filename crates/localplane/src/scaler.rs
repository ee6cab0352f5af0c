//! The scale decision of one revision: KEDA's HTTP scaler semantics over the in-flight requests
//! its app's ingress counts.
//!
//! Pure logic (no I/O, no clock of its own): the plane feeds it what the ingress saw since the
//! previous evaluation ([`Observation`]) at each polling interval, and [`Scaler::activate`] when
//! a request reaches an app at zero. What is documented and what localplane decides is listed in
//! docs/FIDELITY.md ("Scaling"). In short:
//! - desired = ceil(peak in-flight since the last evaluation / `concurrentRequests`), clamped to
//!   [`minReplicas`, `maxReplicas`];
//! - scale-out at an evaluation as soon as desired exceeds the current count;
//! - scale-in only to the highest count desired over the last `cooldownPeriod` (so only after a
//!   whole cooldown below the current count), and to zero only after `cooldownPeriod` without a
//!   request (KEDA's cooldown before deactivation).

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

/// Why the count changed, for the system rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// 0 → n on a request held at the ingress.
    Activated { to: u32 },
    /// n → 0 after a cooldown without requests.
    Deactivated { from: u32, idle: Duration },
    /// More replicas for the in-flight requests.
    Out { from: u32, to: u32, peak: u32 },
    /// Fewer, after a whole cooldown below the current count.
    In { from: u32, to: u32, peak: u32 },
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
    current: u32,
    /// When a request was last seen (creation counts as one: a new revision is not idle yet).
    last_active: Instant,
    next_poll: Instant,
    /// (when, desired) of the evaluations within the last cooldown period.
    window: VecDeque<(Instant, u32)>,
    /// The previous evaluation asked for more than `maxReplicas`.
    at_max: bool,
}

impl Scaler {
    /// A scaler for a revision running `current` replicas at `now`.
    pub fn new(spec: ScaleSpec, current: u32, now: Instant) -> Scaler {
        let mut window = VecDeque::new();
        window.push_back((now, current));
        Scaler {
            next_poll: now + spec.polling_interval,
            spec,
            current,
            last_active: now,
            window,
            at_max: false,
        }
    }

    pub fn spec(&self) -> &ScaleSpec {
        &self.spec
    }

    pub fn replicas(&self) -> u32 {
        self.current
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

    /// The evaluation at a polling interval.
    pub fn evaluate(&mut self, now: Instant, obs: Observation) -> Decision {
        self.next_poll = now + self.spec.polling_interval;
        if obs.peak_in_flight > 0 || obs.arrived > 0 {
            self.last_active = now;
        }
        let (min, max) = (self.spec.min_replicas, self.spec.max_replicas);
        let wanted = match &self.spec.http {
            Some(rule) => obs.peak_in_flight.div_ceil(rule.concurrent_requests),
            // No rule localplane acts on: the count stays where the limits put it.
            None => self.current.clamp(min.max(1), max),
        };
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
        let horizon = now.checked_sub(self.spec.cooldown_period);
        while let Some(&(t, _)) = self.window.front() {
            if horizon.is_some_and(|h| t <= h) && self.window.len() > 1 {
                self.window.pop_front();
            } else {
                break;
            }
        }
        let from = self.current;
        let peak = obs.peak_in_flight;
        let change = if desired > from {
            self.current = desired;
            Some(if from == 0 {
                Change::Activated { to: desired }
            } else {
                Change::Out {
                    from,
                    to: desired,
                    peak,
                }
            })
        } else if desired < from {
            // The highest count desired within the cooldown: scale-in waits a whole cooldown.
            // To zero, the cooldown is the idle time already (desired is 0 only after it).
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
                    Change::In { from, to, peak }
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
    fn desired_is_ceil_of_in_flight_over_the_target_on_both_sides_of_each_multiple() {
        for (peak, want) in [(1, 1), (10, 1), (11, 2), (20, 2), (21, 3), (30, 3), (31, 4)] {
            let t0 = Instant::now();
            let mut s = Scaler::new(spec(1, 10, 10), 1, t0);
            let d = s.evaluate(t0 + Duration::from_secs(30), busy(peak));
            assert_eq!(d.replicas, want, "peak {peak}");
        }
    }

    #[test]
    fn the_count_is_clamped_to_the_limits_and_capped_is_reported() {
        let t0 = Instant::now();
        let mut s = Scaler::new(spec(2, 4, 10), 2, t0);
        let d = s.evaluate(t0 + Duration::from_secs(30), busy(40));
        assert_eq!(
            (d.replicas, d.capped),
            (4, None),
            "exactly at max is not capped"
        );
        let d = s.evaluate(t0 + Duration::from_secs(60), busy(41));
        assert_eq!((d.replicas, d.capped), (4, Some(5)));
        let d = s.evaluate(t0 + Duration::from_secs(90), busy(60));
        assert_eq!((d.replicas, d.capped), (4, None), "once per streak");
        s.evaluate(t0 + Duration::from_secs(120), busy(40));
        let d = s.evaluate(t0 + Duration::from_secs(150), busy(41));
        assert_eq!(d.capped, Some(5), "a new streak");
        // Below min: min (after the cooldown, too).
        let mut s = Scaler::new(spec(2, 4, 10), 2, t0);
        let d = s.evaluate(t0 + Duration::from_secs(600), IDLE);
        assert_eq!((d.replicas, d.change), (2, None));
    }

    #[test]
    fn scale_out_happens_at_the_first_evaluation_that_sees_the_load() {
        let t0 = Instant::now();
        let mut s = Scaler::new(spec(1, 10, 10), 1, t0);
        assert!(!s.due(t0 + Duration::from_secs(29)));
        assert!(s.due(t0 + Duration::from_secs(30)));
        let d = s.evaluate(t0 + Duration::from_secs(30), busy(25));
        assert_eq!(
            d.change,
            Some(Change::Out {
                from: 1,
                to: 3,
                peak: 25
            })
        );
        assert_eq!(s.next_poll(), t0 + Duration::from_secs(60));
    }

    #[test]
    fn scale_in_waits_a_whole_cooldown_below_the_current_count() {
        let t0 = Instant::now();
        let sec = Duration::from_secs;
        let mut s = Scaler::new(spec(1, 10, 10), 1, t0);
        assert_eq!(s.evaluate(t0 + sec(30), busy(30)).replicas, 3);
        // Load drops at once; the count holds for the cooldown after the last evaluation that
        // wanted 3 (t0 + 30 s): still 3 at +329 s, 1 from +330 s on... evaluations every 30 s.
        let mut t = 30;
        let mut last = 3;
        while t < 330 {
            t += 30;
            let d = s.evaluate(t0 + sec(t), busy(5));
            if t < 330 {
                assert_eq!(d.replicas, 3, "at +{t} s");
            }
            last = d.replicas;
        }
        assert_eq!(t, 330);
        assert_eq!(last, 1, "scale-in at exactly one cooldown after the peak");
        // A second step: load 15 (2 wanted) after a peak of 3: 2 only after the cooldown.
        let mut s = Scaler::new(spec(1, 10, 10), 1, t0);
        s.evaluate(t0 + sec(30), busy(30));
        let d = s.evaluate(t0 + sec(329), busy(15));
        assert_eq!(d.replicas, 3, "one second short of the cooldown");
        let d = s.evaluate(t0 + sec(331), busy(15));
        assert_eq!(
            d.change,
            Some(Change::In {
                from: 3,
                to: 2,
                peak: 15
            })
        );
    }

    #[test]
    fn scale_to_zero_only_after_a_cooldown_without_requests() {
        let t0 = Instant::now();
        let sec = Duration::from_secs;
        let mut s = Scaler::new(spec(0, 10, 10), 1, t0);
        // One request at +30 s: the idle clock starts again.
        assert_eq!(s.evaluate(t0 + sec(30), busy(1)).replicas, 1);
        let d = s.evaluate(t0 + sec(329), IDLE);
        assert_eq!((d.replicas, d.change), (1, None), "299 s idle");
        let d = s.evaluate(t0 + sec(330), IDLE);
        assert_eq!(d.replicas, 0, "300 s idle");
        assert_eq!(
            d.change,
            Some(Change::Deactivated {
                from: 1,
                idle: sec(300)
            })
        );
        // A fresh scaler is not idle at creation: no deactivation before a cooldown.
        let mut s = Scaler::new(spec(0, 10, 10), 1, t0);
        assert_eq!(s.evaluate(t0 + sec(299), IDLE).replicas, 1);
        assert_eq!(s.evaluate(t0 + sec(300), IDLE).replicas, 0);
        // minReplicas 1 never goes to zero.
        let mut s = Scaler::new(spec(1, 10, 10), 1, t0);
        assert_eq!(s.evaluate(t0 + sec(3000), IDLE).replicas, 1);
    }

    #[test]
    fn a_request_at_zero_activates_at_once_and_restarts_the_idle_clock() {
        let t0 = Instant::now();
        let sec = Duration::from_secs;
        let mut s = Scaler::new(spec(0, 10, 10), 1, t0);
        s.evaluate(t0 + sec(300), IDLE);
        assert_eq!(s.replicas(), 0);
        assert_eq!(s.activate(t0 + sec(301)), Some(Change::Activated { to: 1 }));
        assert_eq!(s.activate(t0 + sec(302)), None, "already active");
        // The held requests completed before the next evaluation: idle again, deactivated a
        // whole
        assert_eq!(s.evaluate(t0 + sec(330), IDLE).replicas, 1);
        // cooldown after the last request seen (the second held one, at +302 s).
        assert_eq!(s.evaluate(t0 + sec(601), IDLE).replicas, 1);
        assert_eq!(s.evaluate(t0 + sec(602), IDLE).replicas, 0);
    }

    #[test]
    fn an_evaluation_that_sees_load_at_zero_activates() {
        let t0 = Instant::now();
        let mut s = Scaler::new(spec(0, 10, 10), 0, t0);
        let d = s.evaluate(t0 + Duration::from_secs(30), busy(15));
        assert_eq!(d.change, Some(Change::Activated { to: 2 }));
    }

    #[test]
    fn without_an_http_rule_the_count_stays_within_the_limits() {
        let t0 = Instant::now();
        let mut sp = spec(0, 10, 10);
        sp.http = None;
        let mut s = Scaler::new(sp, 1, t0);
        let d = s.evaluate(t0 + Duration::from_secs(30), busy(500));
        assert_eq!((d.replicas, d.change), (1, None));
        let d = s.evaluate(t0 + Duration::from_secs(10_000), IDLE);
        assert_eq!(d.replicas, 1);
    }
}
