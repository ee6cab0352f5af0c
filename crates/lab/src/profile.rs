//! Profiles: named overlays merged over the lab file.
//!
//! `[profiles.quick]` holds a partial lab document. Merging is deep: tables merge key by key;
//! arrays of tables whose elements have a `name` merge element by element on that name (an
//! overlay element with a new name is appended); every other value is replaced. So a quick
//! profile can shorten one step or one app's startup delay without restating the rest:
//!
//! ```toml
//! [[profiles.quick.apps]]
//! name = "subject"
//! env = { STARTUP_DELAY_SECONDS = "3" }
//!
//! [[profiles.quick.steps]]
//! name = "perturbation"
//! events = 3
//! interval = "40s"
//! ```

use toml::{Table, Value};

use crate::validate::Problem;

/// The profile that means "the file as written" when the file does not define it.
pub const FULL: &str = "full";

/// A profile the lab file does not define. Its message is the list of those it does (sorted,
/// `full` included), for the caller to put after the file and the profile it names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .defined.join(", "))]
pub struct UndefinedProfile {
    pub defined: Vec<String>,
}

/// Removes `profiles` from `doc` and merges the named one over the rest.
///
/// Errors with the list of defined profiles when `name` is unknown (and is not `full`).
pub fn apply(mut doc: Table, name: &str) -> Result<Table, UndefinedProfile> {
    let profiles = match doc.remove("profiles") {
        Some(Value::Table(t)) => t,
        _ => Table::new(),
    };
    match profiles.get(name) {
        Some(Value::Table(overlay)) => {
            merge_tables(&mut doc, overlay);
            Ok(doc)
        }
        _ if name == FULL => Ok(doc),
        _ => {
            let mut defined: Vec<String> = profiles.keys().cloned().collect();
            if !defined.iter().any(|d| d == FULL) {
                defined.push(FULL.to_owned());
            }
            defined.sort_unstable();
            Err(UndefinedProfile { defined })
        }
    }
}

/// Top-level keys that state the pre-registration: a profile may not set them.
pub const PRE_REGISTERED: [&str; 5] = ["rule", "kind", "hypothesis", "question", "phases"];

/// The preconditions that are on/off switches: a profile may turn them on, never off.
const SWITCHES: [&str; 3] = ["baseline_clean", "headroom", "perturbations_observed"];

/// What `overlay` (the profile `name` of a lab whose file without profiles is `base`) may not
/// do: change the pre-registration ([`PRE_REGISTERED`]: the `[rule]`, the hypothesis, ...),
/// weaken `[preconditions]` (turn a required one off, lower `headroom_factor`), or change a
/// `[[checks]]` entry beyond its `within` (a profile shortens the schedule, not what is expected).
/// `expected_perturbations` may follow the profile's schedule: validation ties it to the events
/// the schedule fires.
pub fn invariant_problems(base: &Table, overlay: &Table, name: &str) -> Vec<Problem> {
    let mut out = Vec::new();
    let mut push = |key: String, msg: String| {
        out.push(Problem {
            key,
            item: None,
            msg,
        })
    };
    let at = |k: &str| format!("profiles.{name}.{k}");
    for key in PRE_REGISTERED {
        let Some(v) = overlay.get(key) else { continue };
        let sub: Vec<String> = match v {
            Value::Table(t) if !t.is_empty() => {
                t.keys().map(|k| at(&format!("{key}.{k}"))).collect()
            }
            _ => vec![at(key)],
        };
        for k in sub {
            push(
                k,
                format!(
                    "a profile may not change the pre-registered `{key}`: it is stated once, \
                     in the lab file, for every profile"
                ),
            );
        }
    }
    let empty = Table::new();
    let base_pre = base
        .get("preconditions")
        .and_then(Value::as_table)
        .unwrap_or(&empty);
    if let Some(Value::Table(pre)) = overlay.get("preconditions") {
        for (k, v) in pre {
            let was = base_pre.get(k);
            if SWITCHES.contains(&k.as_str()) {
                if v.as_bool() == Some(false) && was.and_then(Value::as_bool) == Some(true) {
                    push(
                        at(&format!("preconditions.{k}")),
                        format!("a profile may not turn off the required precondition {k}"),
                    );
                }
            } else if k == "headroom_factor" {
                let num = |v: &Value| v.as_float().or_else(|| v.as_integer().map(|i| i as f64));
                match (was.and_then(num), num(v)) {
                    (Some(b), Some(o)) if o < b => push(
                        at("preconditions.headroom_factor"),
                        format!(
                            "a profile may not lower headroom_factor ({b} in the lab, {o} here)"
                        ),
                    ),
                    (None, Some(_)) => push(
                        at("preconditions.headroom_factor"),
                        "set headroom_factor in the lab's [preconditions]; a profile may only \
                         raise it"
                            .to_owned(),
                    ),
                    _ => {}
                }
            }
        }
    }
    out.extend(check_overlay_problems(base, overlay, name));
    out
}

/// A profile's `[[checks]]` overlay names existing checks and sets only their `within`.
fn check_overlay_problems(base: &Table, overlay: &Table, name: &str) -> Vec<Problem> {
    let mut out = Vec::new();
    let mut push = |key: String, msg: String| {
        out.push(Problem {
            key,
            item: None,
            msg,
        })
    };
    let at = |k: &str| format!("profiles.{name}.{k}");
    if let Some(checks) = overlay.get("checks") {
        let base_names: Vec<&str> = base
            .get("checks")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(name_of).collect())
            .unwrap_or_default();
        match checks.as_array() {
            None => push(at("checks"), "must be an array of tables".to_owned()),
            Some(a) => {
                for (i, c) in a.iter().enumerate() {
                    let k = |f: &str| at(&format!("checks[{i}]{f}"));
                    match name_of(c) {
                        None => push(
                            k(""),
                            "a profile's check names the lab's check it shortens (`name`)"
                                .to_owned(),
                        ),
                        Some(n) if !base_names.contains(&n) => push(
                            k(".name"),
                            format!(
                                "{n:?} is not a check of the lab: a profile may not add checks"
                            ),
                        ),
                        Some(_) => {}
                    }
                    for key in c.as_table().into_iter().flat_map(|t| t.keys()) {
                        if key != "name" && key != "within" {
                            push(
                                k(&format!(".{key}")),
                                "a profile may change only a check's `within` (the schedule's \
                                 length), not what the check expects"
                                    .to_owned(),
                            );
                        }
                    }
                }
            }
        }
    }
    out
}

/// [`invariant_problems`] of every profile `doc` defines (the file is one pre-registration, so a
/// profile that breaks it makes the file invalid whichever profile is loaded), and every
/// `[profiles]` entry that is not a table.
pub fn all_invariant_problems(doc: &Table) -> Vec<Problem> {
    let Some(profiles) = doc.get("profiles") else {
        return Vec::new();
    };
    let Some(profiles) = profiles.as_table() else {
        return vec![Problem {
            key: "profiles".into(),
            item: None,
            msg: "must be a table of [profiles.<name>] tables".into(),
        }];
    };
    let mut base = doc.clone();
    base.remove("profiles");
    let mut out = Vec::new();
    for (name, overlay) in profiles {
        match overlay.as_table() {
            Some(o) => out.extend(invariant_problems(&base, o, name)),
            None => out.push(Problem {
                key: format!("profiles.{name}"),
                item: None,
                msg: "a profile must be a table (an overlay of the lab's keys)".into(),
            }),
        }
    }
    out
}

/// Deep-merges `overlay` into `base` (see the module docs for the rules).
pub fn merge_tables(base: &mut Table, overlay: &Table) {
    for (key, over) in overlay {
        match (base.get_mut(key), over) {
            (Some(Value::Table(b)), Value::Table(o)) => merge_tables(b, o),
            (Some(Value::Array(b)), Value::Array(o))
                if is_named_tables(b) && is_named_tables(o) =>
            {
                merge_named(b, o)
            }
            _ => {
                base.insert(key.clone(), over.clone());
            }
        }
    }
}

fn name_of(v: &Value) -> Option<&str> {
    v.as_table()
        .and_then(|t| t.get("name"))
        .and_then(Value::as_str)
}

fn is_named_tables(a: &[Value]) -> bool {
    !a.is_empty() && a.iter().all(|v| name_of(v).is_some())
}

fn merge_named(base: &mut Vec<Value>, overlay: &[Value]) {
    for over in overlay {
        let name = name_of(over);
        match base.iter_mut().find(|b| name_of(b) == name) {
            Some(Value::Table(b)) => {
                if let Value::Table(o) = over {
                    merge_tables(b, o);
                }
            }
            _ => base.push(over.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(s: &str) -> Table {
        toml::from_str(s).unwrap()
    }

    const BASE: &str = r#"
        title = "t"
        [rule]
        consecutive = 3
        threshold_pct = 0.5
        [[apps]]
        name = "subject"
        replicas = 3
        env = { STARTUP_DELAY_SECONDS = "25", STARTUP_MODE = "bind-late" }
        [[apps]]
        name = "dependency"
        replicas = 1
        [[steps]]
        name = "baseline"
        duration = "300s"
        [[steps]]
        name = "perturbation"
        events = 12
        interval = "600s"
        [profiles.quick]
        rule = { consecutive = 2 }
        [[profiles.quick.apps]]
        name = "subject"
        env = { STARTUP_DELAY_SECONDS = "3" }
        [[profiles.quick.steps]]
        name = "perturbation"
        events = 3
        [[profiles.quick.steps]]
        name = "extra"
        duration = "10s"
    "#;

    #[test]
    fn quick_overlays_named_elements_and_keeps_the_rest() {
        let merged = apply(doc(BASE), "quick").unwrap();
        assert!(merged.get("profiles").is_none());
        assert_eq!(merged["rule"]["consecutive"].as_integer(), Some(2));
        assert_eq!(merged["rule"]["threshold_pct"].as_float(), Some(0.5));
        let apps = merged["apps"].as_array().unwrap();
        assert_eq!(apps.len(), 2);
        assert_eq!(apps[0]["env"]["STARTUP_DELAY_SECONDS"].as_str(), Some("3"));
        assert_eq!(apps[0]["env"]["STARTUP_MODE"].as_str(), Some("bind-late"));
        assert_eq!(apps[0]["replicas"].as_integer(), Some(3));
        let steps = merged["steps"].as_array().unwrap();
        assert_eq!(steps.len(), 3, "new names are appended");
        assert_eq!(steps[1]["events"].as_integer(), Some(3));
        assert_eq!(steps[1]["interval"].as_str(), Some("600s"));
        assert_eq!(steps[2]["name"].as_str(), Some("extra"));
    }

    #[test]
    fn full_is_the_file_as_written() {
        let merged = apply(doc(BASE), FULL).unwrap();
        assert_eq!(merged["rule"]["consecutive"].as_integer(), Some(3));
        assert_eq!(
            merged["steps"].as_array().unwrap()[1]["events"].as_integer(),
            Some(12)
        );
    }

    #[test]
    fn unknown_profiles_list_the_defined_ones() {
        assert_eq!(
            apply(doc(BASE), "slow").unwrap_err().to_string(),
            "full, quick"
        );
    }
}
