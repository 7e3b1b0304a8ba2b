//! Unit tests of the kustomization.yaml generation (Flux's spec fields into a build).

use super::*;
use ferroflux_api::Selector;
use ferroflux_api::kustomization::{Image, Patch};

fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn read(file: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap()
}

const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n";

#[test]
fn generates_a_kustomization_listing_manifests_and_nested_kustomizations() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "b.yaml", CM);
    write(dir.path(), "a.yml", CM);
    write(dir.path(), "notes.txt", "not yaml");
    write(dir.path(), "sub/deep/c.yaml", CM);
    write(dir.path(), "overlay/kustomization.yaml", "resources: []\n");
    write(dir.path(), "overlay/ignored.yaml", CM);
    let file = prepare(dir.path(), &KustomizationSpec::default()).unwrap();
    assert_eq!(file, dir.path().join("kustomization.yaml"));
    assert_eq!(
        read(&file),
        json!({
            "resources": ["./a.yml", "./b.yaml", "./overlay", "./sub/deep/c.yaml"],
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization"
        })
    );
}

#[test]
fn an_empty_path_gets_a_placeholder_namespace() {
    let dir = tempfile::tempdir().unwrap();
    let file = prepare(dir.path(), &KustomizationSpec::default()).unwrap();
    assert_eq!(read(&file)["namespace"], "_placeholder");
}

#[test]
fn spec_overrides_are_merged_into_an_existing_kustomization() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "kustomization.yaml",
        "resources:\n- cm.yaml\nimages:\n- name: nginx\n  newTag: \"1\"\npatches:\n- path: p.yaml\n",
    );
    write(
        dir.path(),
        "components/extra/kustomization.yaml",
        "kind: Component\n",
    );
    let spec = KustomizationSpec {
        target_namespace: Some("apps".into()),
        name_prefix: Some("staging-".into()),
        name_suffix: Some("-v1".into()),
        patches: Some(vec![Patch {
            patch: "- op: add\n  path: /x\n  value: 1".into(),
            target: Some(Selector {
                kind: Some("Deployment".into()),
                ..Default::default()
            }),
        }]),
        components: Some(vec!["components/extra".into(), "components/missing".into()]),
        ignore_missing_components: Some(true),
        images: Some(vec![
            Image {
                name: "nginx".into(),
                new_tag: Some("2".into()),
                ..Default::default()
            },
            Image {
                name: "redis".into(),
                new_name: Some("valkey".into()),
                ..Default::default()
            },
        ]),
        ..Default::default()
    };
    let file = prepare(dir.path(), &spec).unwrap();
    let k = read(&file);
    assert_eq!(k["namespace"], "apps");
    assert_eq!(k["namePrefix"], "staging-");
    assert_eq!(k["nameSuffix"], "-v1");
    assert_eq!(k["patches"][0], json!({"path": "p.yaml"}));
    assert_eq!(k["patches"][1]["target"], json!({"kind": "Deployment"}));
    assert_eq!(k["components"], json!(["components/extra"]));
    assert_eq!(
        k["images"],
        json!([{"name": "nginx", "newTag": "2"}, {"name": "redis", "newName": "valkey"}])
    );
}

#[test]
fn bad_input_is_reported_with_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let err = prepare(&missing, &KustomizationSpec::default()).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("kustomization path not found: "),
        "{err}"
    );

    write(dir.path(), "bad/x.yaml", "just: a map\n");
    let err = prepare(&dir.path().join("bad"), &KustomizationSpec::default()).unwrap_err();
    assert!(
        err.to_string()
            .contains("failed to decode Kubernetes YAML from")
            && err.to_string().contains("x.yaml")
            && err.to_string().contains("missing apiVersion or kind"),
        "{err}"
    );

    write(dir.path(), "ok/kustomization.yaml", "resources: []\n");
    let spec = KustomizationSpec {
        components: Some(vec!["https://example.com/c".into()]),
        ..Default::default()
    };
    let err = prepare(&dir.path().join("ok"), &spec).unwrap_err();
    assert_eq!(
        err.to_string(),
        "component path 'https://example.com/c' must be local and relative"
    );
    write(
        dir.path(),
        "broken/kustomization.yaml",
        "resources: [unclosed\n",
    );
    let err = prepare(&dir.path().join("broken"), &KustomizationSpec::default()).unwrap_err();
    assert!(err.to_string().contains("kustomization.yaml: "), "{err}");
}
