//! docs/LAB-FILE.md documents the lab file exactly: every key of every table, every action and
//! every check kind with its parameters, and nothing that does not exist.
//!
//! The keys are read from the types themselves: serde's derived `Deserialize` for a struct
//! hands its field names to the deserializer (`deserialize_struct`'s `fields`), which
//! [`fields_of`] captures. Actions (an internally tagged enum) are read from a sample of each
//! variant, serialized; [`action_samples`]'s exhaustive match makes a new variant a compile error
//! here until it has a sample. Check kinds come from `lab::checks::ALL` and `CheckKind::params`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use lab::Action;
use lab::checks::{ALL, CheckKind};
use lab::schema::{AppScale, Ingress, Probe, Rule, TrafficEntry};
use serde::de::{self, Deserialize, Deserializer, Visitor};

/// The field names of struct `T`, from its `Deserialize` impl.
fn fields_of<'de, T: Deserialize<'de>>() -> BTreeSet<String> {
    let mut seen = Vec::new();
    let _ = T::deserialize(FieldCatcher(&mut seen));
    assert!(
        !seen.is_empty(),
        "{} is not a struct",
        std::any::type_name::<T>()
    );
    seen.into_iter().map(str::to_owned).collect()
}

struct FieldCatcher<'a>(&'a mut Vec<&'static str>);

#[derive(Debug)]
struct Caught;

impl std::fmt::Display for Caught {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("caught")
    }
}
impl std::error::Error for Caught {}
impl de::Error for Caught {
    fn custom<M: std::fmt::Display>(_: M) -> Self {
        Caught
    }
}

impl<'de> Deserializer<'de> for FieldCatcher<'_> {
    type Error = Caught;
    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Caught> {
        Err(Caught)
    }
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Caught> {
        self.0.extend_from_slice(fields);
        Err(Caught)
    }
    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

/// One sample per action kind.
fn action_samples() -> Vec<Action> {
    let app = || "a".to_owned();
    let samples = vec![
        Action::Rollout { app: app() },
        Action::Restart { app: app() },
        Action::Dependency {
            app: app(),
            healthy: None,
            delay_ms: None,
            fail_rate: None,
            restore_after: None,
        },
        Action::Simulate {
            app: app(),
            mode: "zombie".into(),
            restore_after: None,
        },
        Action::Saturate {
            app: app(),
            path: "/".into(),
        },
        Action::SetEnv {
            app: app(),
            env: BTreeMap::new(),
        },
        Action::Revision {
            app: app(),
            suffix: "s".into(),
            env: BTreeMap::new(),
            traffic: Vec::new(),
        },
        Action::Traffic {
            app: app(),
            traffic: Vec::<TrafficEntry>::new(),
        },
        Action::Deactivate {
            app: app(),
            revision: "s".into(),
        },
        Action::Maintenance { app: app() },
        Action::Enqueue {
            app: app(),
            items: 1,
        },
        Action::JobStart { job: "j".into() },
        Action::JobStop { job: "j".into() },
    ];
    for s in &samples {
        // A new variant must get a sample above before this compiles.
        match s {
            Action::Rollout { .. }
            | Action::Restart { .. }
            | Action::Dependency { .. }
            | Action::Simulate { .. }
            | Action::Saturate { .. }
            | Action::SetEnv { .. }
            | Action::Revision { .. }
            | Action::Traffic { .. }
            | Action::Deactivate { .. }
            | Action::Maintenance { .. }
            | Action::Enqueue { .. }
            | Action::JobStart { .. }
            | Action::JobStop { .. } => {}
        }
    }
    samples
}

/// (kind, keys besides `kind`) of an action sample.
fn action_keys(a: &Action) -> (String, BTreeSet<String>) {
    let v = serde_json::to_value(a).expect("an action serializes");
    let obj = v.as_object().expect("an object");
    let kind = obj["kind"].as_str().expect("a kind").to_owned();
    assert_eq!(kind, a.kind(), "Action::kind() is the tag the file writes");
    let keys: BTreeSet<String> = obj.keys().filter(|k| *k != "kind").cloned().collect();
    // An action the run undoes (it takes `restore_after`) records its undoing under a kind of
    // its own; no other action has one.
    assert_eq!(
        a.restore_kind().is_some(),
        keys.contains("restore_after"),
        "{kind}: restore_kind {:?}",
        a.restore_kind()
    );
    if let Some(r) = a.restore_kind() {
        assert!(r.starts_with(&format!("{kind}-")), "{r} names {kind}");
    }
    (kind, keys)
}

/// The document's sections (heading text → the keys its `- \`key\`` bullets name).
fn sections() -> BTreeMap<String, BTreeSet<String>> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/LAB-FILE.md");
    let text = std::fs::read_to_string(&path).expect("docs/LAB-FILE.md exists");
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(h) = line
            .strip_prefix("## ")
            .or_else(|| line.strip_prefix("### "))
        {
            let h = h.trim().to_owned();
            assert!(
                !out.contains_key(&h),
                "LAB-FILE.md has the heading {h:?} twice"
            );
            out.insert(h.clone(), BTreeSet::new());
            current = Some(h);
        } else if let (Some(h), Some(rest)) = (&current, line.strip_prefix("- `")) {
            let key = rest.split('`').next().unwrap_or_default().to_owned();
            let keys = out.get_mut(h).expect("the section");
            assert!(keys.insert(key.clone()), "{h}: `{key}` documented twice");
        }
    }
    out
}

fn assert_documents(
    docs: &BTreeMap<String, BTreeSet<String>>,
    heading: &str,
    want: BTreeSet<String>,
) {
    let got = docs
        .get(heading)
        .unwrap_or_else(|| panic!("docs/LAB-FILE.md has no section `{heading}`"));
    let missing: Vec<_> = want.difference(got).collect();
    let extra: Vec<_> = got.difference(&want).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "docs/LAB-FILE.md, `{heading}`: undocumented {missing:?}; documented but not in the code {extra:?}"
    );
}

fn plus(mut set: BTreeSet<String>, more: &[&str]) -> BTreeSet<String> {
    set.extend(more.iter().map(|s| (*s).to_owned()));
    set
}

#[test]
fn every_table_of_the_lab_file_is_documented_key_by_key() {
    let docs = sections();
    // `profiles` is not a field of `Lab`: lab::profile removes it and merges the chosen one.
    assert_documents(
        &docs,
        "Top level",
        plus(fields_of::<lab::Lab>(), &["profiles"]),
    );
    assert_documents(&docs, "[hypothesis]", fields_of::<lab::Hypothesis>());
    assert_documents(&docs, "[rule]", fields_of::<Rule>());
    assert_documents(&docs, "[preconditions]", fields_of::<lab::Preconditions>());
    assert_documents(&docs, "[campaign]", fields_of::<lab::Campaign>());
    assert_documents(&docs, "[[apps]]", fields_of::<lab::App>());
    assert_documents(&docs, "apps.scale", fields_of::<AppScale>());
    assert_documents(&docs, "apps.ingress", fields_of::<Ingress>());
    assert_documents(&docs, "apps.probes", fields_of::<Probe>());
    assert_documents(&docs, "Traffic entries", fields_of::<TrafficEntry>());
    assert_documents(&docs, "[[jobs]]", fields_of::<lab::Job>());
    assert_documents(&docs, "jobs.event", fields_of::<lab::EventTrigger>());
    assert_documents(&docs, "jobs.schedule", fields_of::<lab::ScheduleTrigger>());
    assert_documents(&docs, "[[load]]", fields_of::<lab::Load>());
    assert_documents(&docs, "[[steps]]", fields_of::<lab::Step>());
    assert_documents(&docs, "[[checks]]", fields_of::<lab::Check>());
}

#[test]
fn every_action_is_documented_with_its_keys_and_no_other() {
    let docs = sections();
    let mut kinds = BTreeSet::new();
    for a in action_samples() {
        let (kind, keys) = action_keys(&a);
        assert_documents(&docs, &format!("action: {kind}"), keys);
        kinds.insert(kind);
    }
    let documented: BTreeSet<String> = docs
        .keys()
        .filter_map(|h| h.strip_prefix("action: ").map(str::to_owned))
        .collect();
    assert_eq!(
        documented, kinds,
        "actions documented vs actions the schema has"
    );
}

#[test]
fn every_check_kind_is_documented_with_its_parameters_and_no_other() {
    let docs = sections();
    for kind in ALL.iter() {
        let params: BTreeSet<String> = kind.params().iter().map(|p| p.key.to_owned()).collect();
        assert_documents(&docs, &format!("check: {}", kind.as_str()), params);
    }
    let documented: BTreeSet<String> = docs
        .keys()
        .filter_map(|h| h.strip_prefix("check: ").map(str::to_owned))
        .collect();
    let known: BTreeSet<String> = ALL.iter().map(|k| k.as_str().to_owned()).collect();
    assert_eq!(
        documented, known,
        "check kinds documented vs lab::checks::ALL"
    );
    assert!(matches!(
        CheckKind::from("x".to_owned()),
        CheckKind::Unknown(_)
    ));
}
