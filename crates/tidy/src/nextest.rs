//! [`Rule::NextestAlone`]: the tests that need the machine to themselves are named once.
//! `.config/nextest.toml` gives them every test thread (`threads-required =
//! "num-test-threads"`) in one override, and `scripts/test.sh` runs exactly that override's
//! filter as its `alone` phase (its `ALONE='…'` line) and everything else as `shared`, beside
//! which CI runs clippy. A test added to one list and not the other would run beside clippy, or
//! twice. A tree without `.config/nextest.toml` has nothing to check.

use std::path::PathBuf;

use crate::{Rule, Violation, Workspace};

/// The nextest configuration, from the workspace root.
pub const CONFIG: &str = ".config/nextest.toml";
/// The test script, from the workspace root.
pub const SCRIPT: &str = "scripts/test.sh";

/// A violation unless the config's one ALONE override and the script's `ALONE` agree.
pub fn check(ws: &Workspace) -> Vec<Violation> {
    let Some(config) = ws.nextest_config.as_deref() else {
        return Vec::new();
    };
    let at = |path: &str, message: String| Violation {
        rule: Rule::NextestAlone,
        path: PathBuf::from(path),
        line: 0,
        message,
    };
    let table: toml::Table = match config.parse() {
        Ok(t) => t,
        Err(e) => return vec![at(CONFIG, format!("does not parse: {e}"))],
    };
    let alone = alone_filters(&table);
    let filter = match alone.as_slice() {
        [one] => one.as_str(),
        [] => {
            return match script_alone(ws) {
                Some(_) => vec![at(
                    CONFIG,
                    format!(
                        "no override gives every test thread, but {SCRIPT} has an ALONE filter"
                    ),
                )],
                None => Vec::new(),
            };
        }
        many => {
            return vec![at(
                CONFIG,
                format!(
                    "{} overrides give every test thread; merge them into one filter, which \
                     {SCRIPT}'s ALONE repeats",
                    many.len()
                ),
            )];
        }
    };
    match script_alone(ws) {
        None => vec![at(
            SCRIPT,
            format!("has no ALONE='…' line; {CONFIG}'s ALONE override is {filter:?}"),
        )],
        Some(s) if squeeze(&s) != squeeze(filter) => vec![at(
            SCRIPT,
            format!(
                "ALONE is {s:?}, but {CONFIG}'s override that takes every test thread filters {filter:?}"
            ),
        )],
        Some(_) => Vec::new(),
    }
}

/// The filters of the default profile's overrides that require every test thread.
fn alone_filters(table: &toml::Table) -> Vec<String> {
    let overrides = table
        .get("profile")
        .and_then(|p| p.get("default"))
        .and_then(|d| d.get("overrides"))
        .and_then(|o| o.as_array());
    overrides
        .into_iter()
        .flatten()
        .filter(|o| o.get("threads-required").and_then(|t| t.as_str()) == Some("num-test-threads"))
        .map(|o| {
            o.get("filter")
                .and_then(|f| f.as_str())
                .unwrap_or("")
                .to_owned()
        })
        .collect()
}

/// The script's `ALONE='…'` value, if it has one.
fn script_alone(ws: &Workspace) -> Option<String> {
    ws.test_script.as_deref()?.lines().find_map(|l| {
        let v = l.trim().strip_prefix("ALONE='")?;
        Some(v.strip_suffix('\'').unwrap_or(v).to_owned())
    })
}

/// `f` with runs of whitespace made one space: the two may wrap differently.
fn squeeze(f: &str) -> String {
    f.split_whitespace().collect::<Vec<_>>().join(" ")
}
