//! Revision mode and `configuration.ingress.traffic`: the rules an app PUT/PATCH sets, checked
//! as the service documents them (weights are whole percentages summing to 100, a label is
//! unique and DNS-label shaped, a named revision exists), and resolved to per-revision weights
//! and labels for the controller ([`crate::plane`]) and the ingress ([`crate::ingress`]).
//!
//! In `Single` mode the rules are checked and stored, but the controller routes as it always
//! did (everything to the latest ready revision); in `Multiple` mode they are what routes.

use appmodel as wire;
use serde_json::Value;

use crate::error::ArmError;

/// The error code of a traffic rule the service refuses (our guess: see docs/FIDELITY.md).
pub const INVALID_TRAFFIC: &str = "ContainerAppInvalidTrafficWeight";

/// What one traffic entry points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `latestRevision: true`: the latest ready revision (the latest one before any is ready).
    Latest,
    /// `revisionName`.
    Revision(String),
}

/// One checked `ingress.traffic` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub target: Target,
    pub weight: u32,
    pub label: Option<String>,
}

/// Whether `configuration.activeRevisionsMode` is `Multiple` (anything else is `Single`).
pub fn is_multiple(configuration: Option<&wire::Configuration>) -> bool {
    matches!(
        configuration.and_then(|c| c.active_revisions_mode.as_ref()),
        Some(wire::ActiveRevisionsMode::Multiple)
    )
}

fn invalid(message: String) -> ArmError {
    ArmError::bad_request(INVALID_TRAFFIC, message)
}

/// Checks the raw `properties.configuration.ingress.traffic[].weight` values before the body
/// is read as the wire model, so a fraction, a negative or a non-numeric weight is this 400
/// rather than a type error. A weight written as a string of digits (`"0"`) is read as that
/// number, as ARM's JSON reader does: the az CLI sends `"weight": "0"` for the entry it keeps
/// after `revision label remove`, and it works against Azure.
pub fn normalize_raw_weights(props: &mut Value) -> Result<(), ArmError> {
    let Some(entries) = props
        .pointer_mut("/configuration/ingress/traffic")
        .and_then(Value::as_array_mut)
    else {
        return Ok(());
    };
    for (i, e) in entries.iter_mut().enumerate() {
        let Some(w) = e.get_mut("weight") else {
            continue;
        };
        let number = match &*w {
            Value::Null => continue,
            Value::Number(n) => n.as_u64(),
            Value::String(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
                s.parse::<u64>().ok()
            }
            _ => None,
        };
        match number {
            Some(n) if n <= 100 => *w = Value::from(n),
            _ => {
                return Err(invalid(format!(
                    "Traffic weight '{w}' of ingress.traffic[{i}] is invalid: a weight must be an integer between 0 and 100."
                )));
            }
        }
    }
    Ok(())
}

/// A label as Container Apps takes it into a host name: a DNS label (lower-case letters,
/// digits and '-', starting with a letter, not ending with '-', at most 63 characters) without
/// the `---` that separates it from the app name.
pub fn valid_label(label: &str) -> bool {
    let b = label.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && !label.ends_with('-')
        && !label.contains("---")
}

/// Checks the typed `ingress.traffic` entries (weights 0..=100 summing to 100, each entry
/// naming a revision or `latestRevision: true`, labels unique and DNS-label shaped) and
/// returns them as rules; `revision_exists` answers whether a `revisionName` names one of the
/// app's revisions (case-insensitively). No entries: no rules.
pub fn rules(
    configuration: Option<&wire::Configuration>,
    revision_exists: impl Fn(&str) -> bool,
) -> Result<Vec<Rule>, ArmError> {
    let entries = configuration
        .and_then(|c| c.ingress.as_ref())
        .map(|i| i.traffic.as_slice())
        .unwrap_or_default();
    let mut out = Vec::with_capacity(entries.len());
    for (i, e) in entries.iter().enumerate() {
        let weight = e.weight.unwrap_or(0);
        if weight > 100 {
            return Err(invalid(format!(
                "Traffic weight '{weight}' of ingress.traffic[{i}] is invalid: a weight must be an integer between 0 and 100."
            )));
        }
        let target = match (&e.latest_revision, &e.revision_name) {
            (Some(true), _) => Target::Latest,
            (_, Some(name)) if !name.is_empty() => {
                if !revision_exists(name) {
                    return Err(ArmError::bad_request(
                        "ContainerAppRevisionNotFound",
                        format!("Revision '{name}' named in ingress.traffic[{i}] does not exist."),
                    ));
                }
                Target::Revision(name.clone())
            }
            _ => {
                return Err(invalid(format!(
                    "ingress.traffic[{i}] must set either 'revisionName' or 'latestRevision: true'."
                )));
            }
        };
        let label = e.label.clone().filter(|l| !l.is_empty());
        if let Some(l) = &label {
            if !valid_label(l) {
                return Err(ArmError::bad_request(
                    "ContainerAppInvalidTrafficLabel",
                    format!(
                        "Label '{l}' of ingress.traffic[{i}] is invalid: a label must consist of lower case alphanumeric characters or '-', start with a letter, not end with '-', not contain '---', and be at most 63 characters."
                    ),
                ));
            }
            if out.iter().any(|r: &Rule| r.label.as_deref() == Some(l)) {
                return Err(ArmError::bad_request(
                    "ContainerAppInvalidTrafficLabel",
                    format!("Label '{l}' is used by more than one ingress.traffic entry."),
                ));
            }
        }
        out.push(Rule {
            target,
            weight,
            label,
        });
    }
    let sum: u32 = out.iter().map(|r| r.weight).sum();
    if !out.is_empty() && sum != 100 {
        return Err(invalid(format!(
            "The sum of the traffic weights in ingress.traffic is {sum}; it must be 100."
        )));
    }
    Ok(out)
}

/// Splits a request's host name (`Host` without the port) into the app name and the label of
/// a label host name `<app>---<label>.<anything>` (Container Apps' label URLs).
pub fn split_host(host: &str) -> (&str, Option<&str>) {
    let first = host
        .split(':')
        .next()
        .unwrap_or("")
        .split('.')
        .next()
        .unwrap_or("");
    match first.split_once("---") {
        Some((app, label)) if !label.is_empty() => (app, Some(label)),
        _ => (first, None),
    }
}

/// The per-revision weights and labels `rules` give the app's revisions `names` (oldest
/// first); `latest` is the index `Target::Latest` resolves to. A revision named by several
/// rules gets the sum of their weights.
pub fn resolve(
    rules: &[Rule],
    names: &[&str],
    latest: Option<usize>,
) -> (Vec<u32>, Vec<(String, usize)>) {
    let mut weights = vec![0u32; names.len()];
    let mut labels = Vec::new();
    for r in rules {
        let idx = match &r.target {
            Target::Latest => latest,
            Target::Revision(n) => names.iter().position(|x| x.eq_ignore_ascii_case(n)),
        };
        let Some(i) = idx else { continue };
        weights[i] += r.weight;
        if let Some(l) = &r.label {
            labels.push((l.clone(), i));
        }
    }
    (weights, labels)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cfg(traffic: Value) -> wire::Configuration {
        serde_json::from_value(
            json!({"activeRevisionsMode": "Multiple", "ingress": {"targetPort": 8080, "traffic": traffic}}),
        )
        .unwrap()
    }

    fn check(traffic: Value) -> Result<Vec<Rule>, ArmError> {
        rules(Some(&cfg(traffic)), |n| n == "a--1" || n == "a--2")
    }

    #[test]
    fn weights_must_sum_to_100() {
        let e = check(
            json!([{"revisionName": "a--1", "weight": 80}, {"latestRevision": true, "weight": 10}]),
        )
        .unwrap_err();
        assert_eq!(e.code, INVALID_TRAFFIC);
        assert!(e.message.contains("90"), "{}", e.message);
        let e = check(json!([{"revisionName": "a--1", "weight": 101}])).unwrap_err();
        assert_eq!(e.code, INVALID_TRAFFIC);
        let ok = check(json!([{"revisionName": "a--1", "weight": 90}, {"latestRevision": true, "weight": 10, "label": "canary"}]))
            .unwrap();
        assert_eq!(ok.len(), 2);
        assert_eq!(ok[1].label.as_deref(), Some("canary"));
        assert!(check(json!([])).unwrap().is_empty());
        assert!(is_multiple(Some(&cfg(json!([])))));
        assert!(!is_multiple(None));
    }

    #[test]
    fn raw_weights_must_be_integers_0_to_100() {
        for bad in [
            json!(50.5),
            json!(-1),
            json!("50.5"),
            json!("-1"),
            json!(101),
            json!("101"),
        ] {
            let mut props = json!({"configuration": {"ingress": {"traffic": [{"weight": bad}]}}});
            assert_eq!(
                normalize_raw_weights(&mut props).unwrap_err().code,
                INVALID_TRAFFIC
            );
        }
        for (given, read) in [(json!(100), 100), (json!("0"), 0), (json!("50"), 50)] {
            let mut props = json!({"configuration": {"ingress": {"traffic": [{"weight": given}]}}});
            normalize_raw_weights(&mut props).unwrap();
            assert_eq!(
                props["configuration"]["ingress"]["traffic"][0]["weight"],
                read
            );
        }
    }

    #[test]
    fn unknown_revisions_and_bad_labels_are_400() {
        let e = check(json!([{"revisionName": "a--9", "weight": 100}])).unwrap_err();
        assert_eq!(e.code, "ContainerAppRevisionNotFound");
        let e = check(json!([{"weight": 100}])).unwrap_err();
        assert_eq!(e.code, INVALID_TRAFFIC);
        for bad in ["Blue", "-x", "x-", "a---b", "1a", &"x".repeat(64)] {
            let e =
                check(json!([{"latestRevision": true, "weight": 100, "label": bad}])).unwrap_err();
            assert_eq!(e.code, "ContainerAppInvalidTrafficLabel", "{bad}");
        }
        let e = check(json!([
            {"revisionName": "a--1", "weight": 50, "label": "x"},
            {"revisionName": "a--2", "weight": 50, "label": "x"}
        ]))
        .unwrap_err();
        assert_eq!(e.code, "ContainerAppInvalidTrafficLabel");
    }

    #[test]
    fn hosts_and_resolution() {
        assert_eq!(split_host("web---blue.local:80"), ("web", Some("blue")));
        assert_eq!(split_host("web.local"), ("web", None));
        assert_eq!(split_host("web---"), ("web---", None));
        let rules = check(json!([
            {"revisionName": "a--1", "weight": 90, "label": "stable"},
            {"latestRevision": true, "weight": 10, "label": "canary"}
        ]))
        .unwrap();
        let (w, l) = resolve(&rules, &["a--1", "a--2"], Some(1));
        assert_eq!(w, vec![90, 10]);
        assert_eq!(l, vec![("stable".into(), 0), ("canary".into(), 1)]);
    }
}
