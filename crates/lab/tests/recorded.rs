//! A finished run's lab file is read into the same `Lab` as before the run
//! (`lab::parse_recorded` beside `lab::parse`): the same value for every catalogue lab and
//! profile, a written `Lab` reads back as itself, unknown keys are skipped and named.

use std::path::{Path, PathBuf};

fn catalogue() -> Vec<(PathBuf, String)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../labs");
    let mut out: Vec<(PathBuf, String)> = std::fs::read_dir(&dir)
        .expect("labs/ is readable")
        .map(|e| e.expect("a labs/ entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("a lab file is readable");
            (p, text)
        })
        .collect();
    out.sort();
    assert!(out.len() > 30, "the catalogue is in {}", dir.display());
    out
}

#[test]
fn every_catalogue_lab_reads_after_a_run_as_it_was_run() {
    for (path, text) in catalogue() {
        for profile in ["full", "quick"] {
            let strict = lab::parse(&text, &path, profile).unwrap();
            let recorded = lab::parse_recorded(&text, &path, Some(profile)).unwrap();
            assert!(recorded.skipped.is_empty(), "{}", path.display());
            assert_eq!(recorded.lab, strict, "{} ({profile})", path.display());
        }
    }
}

#[test]
fn a_written_lab_reads_back_as_itself() {
    for (path, text) in catalogue() {
        let lab = lab::parse(&text, &path, "quick").unwrap();
        let written = toml::to_string(&lab).unwrap();
        let back = lab::parse_recorded(&written, &path, None).unwrap();
        assert_eq!(back.lab, lab, "{}", path.display());
        assert!(back.skipped.is_empty());
    }
}

#[test]
fn keys_a_version_does_not_know_are_skipped_and_named_the_rest_is_read() {
    let (path, text) = catalogue()
        .into_iter()
        .find(|(p, _)| p.ends_with("startup-degraded.toml"))
        .unwrap();
    let mut doc: toml::Table = text.parse().unwrap();
    doc.insert("owner".into(), "someone".into());
    let rule = doc["rule"].as_table_mut().unwrap();
    rule.insert("flavour".into(), "strict".into());
    let steps = doc["steps"].as_array_mut().unwrap();
    let last = steps.len() - 1;
    steps[last]
        .as_table_mut()
        .unwrap()
        .insert("note".into(), "from a later version".into());
    let with_extra = toml::to_string(&doc).unwrap();

    let recorded = lab::parse_recorded(&with_extra, &path, Some("full")).unwrap();
    let mut skipped = recorded.skipped.clone();
    skipped.sort();
    assert_eq!(
        skipped,
        ["owner", "rule.flavour", &format!("steps[{last}].note")]
    );
    assert_eq!(recorded.lab, lab::parse(&text, &path, "full").unwrap());
    assert!(
        lab::parse(&with_extra, &path, "full").is_err(),
        "before a run, an unknown key is still refused"
    );
}

#[test]
fn a_recorded_lab_of_the_wrong_type_or_missing_a_key_is_an_error_naming_it() {
    let e = lab::parse_recorded(
        "title = \"t\"\nquestion = \"q\"\nsteps = []\n[hypothesis]\ntext = \"h\"\n[rule]\nwindow = \"10s\"\nconsecutive = \"three\"\nthreshold_pct = 0.5\n",
        Path::new("lab.toml"),
        None,
    )
    .unwrap_err();
    assert_eq!(e.keys(), ["rule.consecutive"], "{e}");
    let e = lab::parse_recorded("title = \"t\"\n", Path::new("lab.toml"), None).unwrap_err();
    assert!(e.to_string().contains("missing field"), "{e}");
    let e =
        lab::parse_recorded("title = \"t\"\n", Path::new("lab.toml"), Some("quick")).unwrap_err();
    assert!(e.to_string().contains("quick"), "{e}");
}
