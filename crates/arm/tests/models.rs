//! arm's template helpers against an example payload of the Microsoft.App REST specification
//! (the model itself is pinned against the spec's examples in `appmodel`'s tests).

#![allow(clippy::unwrap_used)] // test helpers: a failure is the test failing

use arm::models::*;
use serde_json::Value;

fn body(name: &str) -> Value {
    let path = format!(
        "{}/../appmodel/tests/fixtures/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let example: Value = serde_json::from_str(&text).unwrap();
    example["responses"]["200"]["body"].clone()
}

#[test]
fn setting_one_env_var_keeps_the_whole_template() {
    let app: ContainerApp = serde_json::from_value(body("ContainerApps_Get")).unwrap();
    let mut t = app.properties.template.clone().unwrap();
    let before = serde_json::to_value(&t).unwrap();
    assert!(arm::set_env_in_template(&mut t, None, "SIMULATION", "zombie").unwrap());
    assert!(!arm::set_env_in_template(&mut t, None, "SIMULATION", "zombie").unwrap());
    assert_eq!(t.containers[0].env_value("SIMULATION"), Some("zombie"));
    let mut after = serde_json::to_value(&t).unwrap();
    after["containers"][0]
        .as_object_mut()
        .unwrap()
        .remove("env");
    assert_eq!(after, before, "only env changed");
    assert!(arm::set_env_in_template(&mut t, Some("nope"), "A", "b").is_err());
}
