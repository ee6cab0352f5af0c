//! What ARM and its clients send that a strict reading would refuse: `null` for an absent list, enum values in any case.

use appmodel::ContainerApp;

#[test]
fn a_null_list_reads_as_an_empty_one() {
    let body = serde_json::json!({
        "location": "eastus",
        "properties": {
            "configuration": {"ingress": {"targetPort": 8080, "traffic": null}},
            "template": {
                "containers": [{"name": "a", "image": "i", "env": null, "probes": null}],
                "scale": {"minReplicas": 1, "rules": null}
            }
        }
    });
    let app: ContainerApp = serde_json::from_value(body).expect("nulls are absent lists");
    let template = app.properties.template.expect("template");
    assert!(template.containers[0].env.is_empty());
    assert!(template.containers[0].probes.is_empty());
    let ingress = app.properties.configuration.and_then(|c| c.ingress);
    assert!(ingress.expect("ingress").traffic.is_empty());
}

#[test]
fn enum_values_are_read_case_insensitively() {
    use appmodel::ActiveRevisionsMode;
    for s in ["Multiple", "multiple", "MULTIPLE"] {
        let m: ActiveRevisionsMode = serde_json::from_value(serde_json::json!(s)).unwrap();
        assert_eq!(m, ActiveRevisionsMode::Multiple, "{s}");
    }
    let other: ActiveRevisionsMode = serde_json::from_value(serde_json::json!("Labels")).unwrap();
    assert_eq!(
        other.as_str(),
        "Labels",
        "an unknown value is kept verbatim"
    );
}
