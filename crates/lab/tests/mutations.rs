//! Mutated lab files (a key deleted, a value of the wrong type, a number out of range, an
//! unknown key added) never panic `lab::parse`, and when they are rejected the error names the
//! key that was changed (or the table holding it).
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use proptest::prelude::*;
use toml::{Table, Value};

const LABS: [&str; 4] = [
    "startup-degraded",
    "dependency-coupled-probes",
    "rolling-drain",
    "worker-saturation",
];

fn doc(name: &str) -> Table {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../../labs/{name}.toml"));
    toml::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// One step of a key path: a table key or an array index.
#[derive(Clone, Debug)]
enum Seg {
    Key(String),
    Index(usize),
}

/// Every path to a value in `v` (tables, arrays and leaves alike), depth first.
fn paths(v: &Value, prefix: &mut Vec<Seg>, out: &mut Vec<Vec<Seg>>) {
    match v {
        Value::Table(t) => {
            for (k, x) in t {
                prefix.push(Seg::Key(k.clone()));
                out.push(prefix.clone());
                paths(x, prefix, out);
                prefix.pop();
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                prefix.push(Seg::Index(i));
                out.push(prefix.clone());
                paths(x, prefix, out);
                prefix.pop();
            }
        }
        _ => {}
    }
}

fn get_mut<'a>(v: &'a mut Value, path: &[Seg]) -> Option<&'a mut Value> {
    path.iter().try_fold(v, |v, s| match (s, v) {
        (Seg::Key(k), Value::Table(t)) => t.get_mut(k),
        (Seg::Index(i), Value::Array(a)) => a.get_mut(*i),
        _ => None,
    })
}

#[derive(Clone, Debug)]
enum Mutation {
    Delete,
    WrongType(u8),
    OutOfRange(u8),
    UnknownKey,
}

fn wrong_type(v: &Value, pick: u8) -> Value {
    let options = [
        Value::String("not-a-number".into()),
        Value::Integer(7),
        Value::Boolean(true),
        Value::Array(vec![Value::Integer(1)]),
        Value::Table(Table::new()),
        Value::Float(0.25),
    ];
    let same = |x: &Value| std::mem::discriminant(x) == std::mem::discriminant(v);
    let others: Vec<&Value> = options.iter().filter(|x| !same(x)).collect();
    others[pick as usize % others.len()].clone()
}

fn out_of_range(pick: u8) -> Value {
    [
        Value::Integer(-1),
        Value::Integer(0),
        Value::Integer(i64::MAX),
        Value::Float(-0.5),
        Value::Float(1e12),
        Value::String("-5s".into()),
        Value::String(String::new()),
    ][pick as usize % 7]
        .clone()
}

const UNKNOWN: &str = "zz_unknown_key";

/// Applies `m` at `path`; returns the names the error may cite: the changed key and the keys
/// above it (a tagged table such as `action` reports the table, not the field inside it).
fn mutate(root: &mut Value, path: &[Seg], m: &Mutation) -> Option<Vec<String>> {
    let mut names: Vec<String> = path
        .iter()
        .filter_map(|s| match s {
            Seg::Key(k) => Some(k.clone()),
            Seg::Index(_) => None,
        })
        .collect();
    let (last, parent) = path.split_last()?;
    match m {
        Mutation::Delete => match (get_mut(root, parent)?, last) {
            (Value::Table(t), Seg::Key(k)) => {
                t.remove(k);
            }
            (Value::Array(a), Seg::Index(i)) => {
                a.remove(*i);
            }
            _ => return None,
        },
        Mutation::WrongType(p) => {
            let v = get_mut(root, path)?;
            *v = wrong_type(v, *p);
        }
        Mutation::OutOfRange(p) => {
            let v = get_mut(root, path)?;
            if !matches!(v, Value::Integer(_) | Value::Float(_) | Value::String(_)) {
                return None;
            }
            *v = out_of_range(*p);
        }
        Mutation::UnknownKey => {
            let Value::Table(t) = get_mut(root, path)? else {
                return None;
            };
            t.insert(UNKNOWN.into(), Value::Integer(1));
            names.push(UNKNOWN.into());
        }
    }
    if matches!((m, last), (Mutation::Delete, Seg::Index(_))) {
        // An array element has no key: its absence shows only through what referred to it (a
        // step's `loads` entry, a staircase rate), which the error then names instead.
        return Some(Vec::new());
    }
    Some(names)
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        Just(Mutation::Delete),
        any::<u8>().prop_map(Mutation::WrongType),
        any::<u8>().prop_map(Mutation::OutOfRange),
        Just(Mutation::UnknownKey),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_mutated_lab_is_loaded_or_rejected_naming_the_key(
        lab in 0..LABS.len(),
        at in any::<prop::sample::Index>(),
        m in mutation(),
    ) {
        let mut root = Value::Table(doc(LABS[lab]));
        let mut all = Vec::new();
        paths(&root, &mut Vec::new(), &mut all);
        let path = at.get(&all).clone();
        let Some(names) = mutate(&mut root, &path, &m) else {
            return Ok(());
        };
        let Value::Table(t) = root else { unreachable!() };
        let text = toml::to_string(&t).unwrap();
        for profile in ["full", "quick"] {
            // A panic here fails the property.
            if let Err(e) = lab::parse(&text, "m.toml".as_ref(), profile) {
                let msg = e.to_string();
                prop_assert!(msg.starts_with("m.toml"), "{msg}");
                prop_assert!(
                    names.is_empty() || names.iter().any(|n| msg.contains(n.as_str())),
                    "{m:?} at {path:?} in {}: the error names none of {names:?}:\n{msg}",
                    LABS[lab]
                );
            }
        }
    }
}
