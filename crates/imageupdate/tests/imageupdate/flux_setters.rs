//! Flux's `internal/update/testdata` (image-automation-controller d36e2ea07a39), run through
//! `update_with_setters` with the policies of Flux's `TestUpdateWithSetters`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ferroflux_imageupdate::{
    Change, ImagePolicy, ImageRef, ObjectChanges, ObjectId, update_with_setters,
};

fn testdata(dir: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/flux-testdata")
        .join(dir)
}

/// The regular files under `dir`, by path relative to it.
fn read_tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                let rel = path
                    .strip_prefix(dir)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                out.insert(rel, bytes);
            }
        }
    }
    out
}

/// Flux's `testutil.ImageToRef`: `name[:tag][@digest]`.
fn policy(namespace: &str, name: &str, image: &str) -> ImagePolicy {
    let (rest, digest) = match image.rsplit_once('@') {
        Some((r, d)) => (r, Some(d.to_string())),
        None => (image, None),
    };
    let (image_name, tag) = rest.rsplit_once(':').unwrap_or((rest, ""));
    ImagePolicy {
        namespace: namespace.into(),
        name: name.into(),
        latest: ImageRef {
            name: image_name.into(),
            tag: tag.into(),
            digest,
        },
    }
}

fn flux_policies() -> Vec<ImagePolicy> {
    vec![
        policy("automation-ns", "policy", "index.repo.fake/updated:v1.0.1"),
        policy("automation-ns", "unchanged", "image:v1.0.0"),
        policy(
            "automation-ns",
            "policy-with-digest",
            "image:v1.0.0@sha256:6745aaad46d795c9836632e1fb62f24b7e7f4c843144da8e47a5465c411a14be",
        ),
    ]
}

fn change(old: &str, new: &str, setter: &str) -> Change {
    Change {
        old_value: old.into(),
        new_value: new.into(),
        setter: setter.into(),
    }
}

/// `testdata/setters`: the changed files are byte for byte Flux's expected ones (Flux's
/// expected files keep the originals' indentation, as our in-place edit does), the unchanged
/// files are not written, and the result is Flux's `expectedResult`.
#[test]
fn setters_testdata_matches_flux() {
    let original = read_tree(&testdata("setters/original"));
    let expected = read_tree(&testdata("setters/expected"));
    let out = update_with_setters(&original, &flux_policies()).unwrap();
    assert_eq!(
        out.files.keys().collect::<Vec<_>>(),
        expected.keys().collect::<Vec<_>>()
    );
    for (path, want) in &expected {
        assert_eq!(
            String::from_utf8_lossy(&out.files[path]),
            String::from_utf8_lossy(want),
            "{path}"
        );
    }
    assert!(out.problem_files.is_empty());

    let kustomize = ObjectId {
        api_version: "kustomize.config.k8s.io/v1beta1".into(),
        kind: "Kustomization".into(),
        ..ObjectId::default()
    };
    let marked = ObjectId {
        api_version: "batch/v1beta1".into(),
        kind: "CronJob".into(),
        name: "foo".into(),
        namespace: "bar".into(),
    };
    let digest = "sha256:6745aaad46d795c9836632e1fb62f24b7e7f4c843144da8e47a5465c411a14be";
    let name_tag = [
        change(
            "replaced",
            "index.repo.fake/updated",
            "automation-ns:policy:name",
        ),
        change("v1", "v1.0.1", "automation-ns:policy:tag"),
    ];
    let mut want: BTreeMap<String, ObjectChanges> = BTreeMap::new();
    want.insert(
        "kustomization.yml".into(),
        ObjectChanges::from([(
            kustomize.clone(),
            [
                name_tag.to_vec(),
                vec![
                    change(
                        "sha256:1234567890abcdef",
                        digest,
                        "automation-ns:policy-with-digest:digest",
                    ),
                    change(
                        "image",
                        &format!("image:v1.0.0@{digest}"),
                        "automation-ns:policy-with-digest",
                    ),
                ],
            ]
            .concat(),
        )]),
    );
    want.insert(
        "Kustomization".into(),
        ObjectChanges::from([(kustomize, name_tag.to_vec())]),
    );
    want.insert(
        "marked.yaml".into(),
        ObjectChanges::from([(
            marked,
            vec![change(
                "image:v1.0.0",
                "index.repo.fake/updated:v1.0.1",
                "automation-ns:policy",
            )],
        )]),
    );
    assert_eq!(out.changes.file_changes, want);
}

/// `testdata/leave` and `testdata/replace` belong to Flux's removed update-by-reference
/// strategy (no Go test reads them any more): their files carry no markers, so the Setters
/// strategy changes nothing. Their `expected` files differ from the originals only by kyaml's
/// re-indentation of sequences (`leave`) or by replacements made without markers
/// (`replace`), neither of which the Setters strategy does; we check that, rather than
/// imitate it.
#[test]
fn unmarked_testdata_is_left_alone() {
    for dir in ["leave/original", "replace/original", "replace/commented"] {
        let tree = read_tree(&testdata(dir));
        let out = update_with_setters(&tree, &flux_policies()).unwrap();
        assert!(out.files.is_empty() && out.changes.is_empty(), "{dir}");
    }
    // `leave`: the same documents, only sequence indentation differs.
    for file in ["cronjob.yaml", "deployment.yaml"] {
        let squeeze = |dir: &str| -> Vec<String> {
            std::fs::read_to_string(testdata(dir).join(file))
                .unwrap()
                .lines()
                .map(|l| l.trim_start().to_string())
                .collect()
        };
        assert_eq!(
            squeeze("leave/original"),
            squeeze("leave/expected"),
            "{file}"
        );
    }
}

/// Flux's `internal/source/testdata/appconfig/deploy.yaml` with its `SETTER_SITE` replaced by
/// a marker (Flux's `testutil.ReplaceMarker`), as its commit tests do.
pub fn appconfig_update(latest: &str) -> ferroflux_imageupdate::SetterUpdate {
    let text = std::fs::read_to_string(testdata("source-appconfig/deploy.yaml")).unwrap();
    let text = text.replace("SETTER_SITE", r#"{"$imagepolicy": "test-ns:policy1"}"#);
    update_with_setters(
        [("deploy.yaml", text)],
        &[policy("test-ns", "policy1", latest)],
    )
    .unwrap()
}

#[test]
fn appconfig_marker_is_rewritten() {
    let out = appconfig_update("helloworld:1.0.1");
    let text = String::from_utf8(out.files["deploy.yaml"].clone()).unwrap();
    assert!(text.contains(r#"image: helloworld:1.0.1 # {"$imagepolicy": "test-ns:policy1"}"#));
    // The same image: nothing to commit.
    assert!(appconfig_update("helloworld:1.0.0").changes.is_empty());
}
