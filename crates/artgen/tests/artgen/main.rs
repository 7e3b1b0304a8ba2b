//! The copy rules against source-watcher's documented `cp` semantics, on real trees.

use ferroflux_api::artifactgenerator::{CopyOperation, CopyStrategy};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn write(root: &Path, rel: &str, data: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, data).unwrap();
}

fn op(from: &str, to: &str) -> CopyOperation {
    CopyOperation {
        from: from.into(),
        to: to.into(),
        ..Default::default()
    }
}

/// All files of a tree as `path => content`.
fn tree(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(rel, std::fs::read_to_string(&p).unwrap());
            }
        }
    }
    walk(root, root, &mut out);
    out
}

struct Fixture {
    _dir: tempfile::TempDir,
    sources: BTreeMap<String, PathBuf>,
    staging: PathBuf,
}

/// A monorepo laid out like Flux's kustomize-helm example, and an OCI chart source.
fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    write(
        &repo,
        "apps/base/podinfo/kustomization.yaml",
        "resources: [release.yaml]\n",
    );
    write(
        &repo,
        "apps/base/podinfo/release.yaml",
        "kind: HelmRelease\n",
    );
    write(&repo, "apps/base/README.md", "docs\n");
    write(
        &repo,
        "apps/staging/kustomization.yaml",
        "resources: [../base/podinfo]\n",
    );
    write(
        &repo,
        "apps/staging/values.yaml",
        "image:\n  tag: '2.0'\nports: [8080]\n",
    );
    write(&repo, "apps/staging/testdata/t.yaml", "test\n");
    write(
        &repo,
        "infrastructure/configs/issuer.yaml",
        "kind: ClusterIssuer\n",
    );
    write(&repo, "config.yaml", "a: 1\n");
    let chart = dir.path().join("chart");
    write(&chart, "podinfo/Chart.yaml", "name: podinfo\n");
    write(
        &chart,
        "podinfo/values.yaml",
        "image:\n  tag: '1.0'\n  repo: podinfo\nports: [80]\n",
    );
    let staging = dir.path().join("staging");
    std::fs::create_dir(&staging).unwrap();
    let sources = BTreeMap::from([("repo".to_string(), repo), ("chart".to_string(), chart)]);
    Fixture {
        _dir: dir,
        sources,
        staging,
    }
}

fn run(f: &Fixture, ops: &[CopyOperation]) -> Result<BTreeMap<String, String>, String> {
    ferroflux_artgen::apply_all(ops, &f.sources, &f.staging).map_err(|e| e.to_string())?;
    Ok(tree(&f.staging))
}

#[test]
fn the_examples_decomposition_strips_the_selected_directory() {
    let f = fixture();
    let got = run(
        &f,
        &[
            op("@repo/apps/base/**", "@artifact/base/"),
            op("@repo/apps/staging/**", "@artifact/staging/"),
        ],
    )
    .unwrap();
    let names: Vec<&str> = got.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "base/README.md",
            "base/podinfo/kustomization.yaml",
            "base/podinfo/release.yaml",
            "staging/kustomization.yaml",
            "staging/testdata/t.yaml",
            "staging/values.yaml"
        ]
    );
}

#[test]
fn paths_copy_like_cp() {
    let f = fixture();
    let got = run(
        &f,
        &[
            // A directory without a glob is copied as a subdirectory.
            op("@repo/infrastructure/configs", "@artifact/infra"),
            // A file to a directory keeps its name; to a path takes that name.
            op("@repo/config.yaml", "@artifact/cfg/"),
            op("@repo/config.yaml", "@artifact/renamed.yaml"),
            // A file to an existing directory goes inside it.
            op("@repo/config.yaml", "@artifact/infra"),
            // A single-level glob keeps each match's path.
            op("@repo/apps/staging/*.yaml", "@artifact/flat/"),
        ],
    )
    .unwrap();
    let names: Vec<&str> = got.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "cfg/config.yaml",
            "flat/apps/staging/kustomization.yaml",
            "flat/apps/staging/values.yaml",
            "infra/config.yaml",
            "infra/configs/issuer.yaml",
            "renamed.yaml"
        ]
    );
}

#[test]
fn the_whole_source_and_later_operations_overwrite() {
    let f = fixture();
    let got = run(
        &f,
        &[
            op("@chart/", "@artifact/"),
            op("@repo/config.yaml", "@artifact/podinfo/values.yaml"),
        ],
    )
    .unwrap();
    assert_eq!(got["podinfo/Chart.yaml"], "name: podinfo\n");
    assert_eq!(got["podinfo/values.yaml"], "a: 1\n");
}

#[test]
fn merge_deep_merges_values_as_helm_does() {
    let f = fixture();
    let mut merge = op(
        "@repo/apps/staging/values.yaml",
        "@artifact/podinfo/values.yaml",
    );
    merge.strategy = Some(CopyStrategy::Merge);
    let got = run(&f, &[op("@chart/**", "@artifact/"), merge]).unwrap();
    let v: serde_json::Value = serde_saphyr::from_str(&got["podinfo/values.yaml"]).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"image": {"repo": "podinfo", "tag": "2.0"}, "ports": [8080]})
    );
}

#[test]
fn excludes_match_names_at_any_depth_and_paths_from_the_selection() {
    let f = fixture();
    let mut o = op("@repo/apps/**", "@artifact/");
    o.exclude = Some(vec!["*.md".into(), "staging/testdata/**".into()]);
    let got = run(&f, &[o]).unwrap();
    assert!(!got.contains_key("base/README.md"), "{got:?}");
    assert!(!got.keys().any(|k| k.contains("testdata")), "{got:?}");
    assert!(got.contains_key("staging/values.yaml"));
}

#[test]
fn extract_unpacks_tarballs_found_by_a_recursive_glob() {
    let f = fixture();
    // A chart packaged as `helm package` would, inside the Git source.
    let mut tgz = Vec::new();
    {
        let gz = flate2::write::GzEncoder::new(&mut tgz, flate2::Compression::fast());
        let mut b = tar::Builder::new(gz);
        let data = b"name: packed\n";
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, "packed/Chart.yaml", &data[..])
            .unwrap();
        b.into_inner().unwrap().finish().unwrap();
    }
    std::fs::create_dir_all(f.sources["repo"].join("releases/v1")).unwrap();
    std::fs::write(f.sources["repo"].join("releases/v1/packed-1.0.0.tgz"), &tgz).unwrap();
    let mut o = op("@repo/releases/**/*.tgz", "@artifact/charts/");
    o.strategy = Some(CopyStrategy::Extract);
    let got = run(&f, &[o]).unwrap();
    assert_eq!(got["charts/packed/Chart.yaml"], "name: packed\n");
    let mut not_tar = op("@repo/config.yaml", "@artifact/");
    not_tar.strategy = Some(CopyStrategy::Extract);
    let err = run(&f, &[not_tar]).unwrap_err();
    assert!(
        err.contains("extract strategy requires tarball file (.tar.gz or .tgz), got 'config.yaml'"),
        "{err}"
    );
}

#[test]
fn bad_rules_name_the_operation_and_the_cause() {
    let f = fixture();
    let cases = [
        (
            op("@repo/nothing/*.yaml", "@artifact/"),
            "failed to apply copy operation from '@repo/nothing/*.yaml' to '@artifact/': no files match pattern 'nothing/*.yaml' in source 'repo'",
        ),
        (
            op("@missing/config.yaml", "@artifact/"),
            "failed to apply copy operation from '@missing/config.yaml' to '@artifact/': source alias 'missing' not found",
        ),
        (
            op("@repo/absent.yaml", "@artifact/"),
            "source 'absent.yaml' does not exist",
        ),
        (
            op("@repo/[", "@artifact/"),
            "invalid glob pattern '[': syntax error in pattern",
        ),
        (
            op("@repo/config.yaml", "@artifact/../../escape.yaml"),
            "destination '../../escape.yaml' leaves its root",
        ),
        (
            op("@repo/../chart/podinfo/Chart.yaml", "@artifact/"),
            "source '../chart/podinfo/Chart.yaml' leaves its root",
        ),
    ];
    for (o, want) in cases {
        let err = run(&f, &[o]).unwrap_err();
        assert!(err.contains(want), "{err}\nwanted: {want}");
    }
    let mut all_out = op("@repo/apps/base/*", "@artifact/");
    all_out.exclude = Some(vec!["**".into()]);
    let err = run(&f, &[all_out]).unwrap_err();
    assert!(err.contains("were excluded"), "{err}");
    assert!(!f.staging.parent().unwrap().join("escape.yaml").exists());
}

#[test]
fn the_content_hash_follows_content_not_time() {
    let f = fixture();
    run(&f, &[op("@repo/apps/**", "@artifact/")]).unwrap();
    let a = ferroflux_artgen::content_hash(&f.staging, "apps").unwrap();
    assert_eq!(
        a,
        ferroflux_artgen::content_hash(&f.staging, "apps").unwrap()
    );
    std::fs::write(f.staging.join("staging/values.yaml"), "changed\n").unwrap();
    assert_ne!(
        a,
        ferroflux_artgen::content_hash(&f.staging, "apps").unwrap()
    );
    let mut one = Vec::new();
    let mut two = Vec::new();
    ferroflux_artgen::pack(&f.staging, &mut one).unwrap();
    ferroflux_artgen::pack(&f.staging, &mut two).unwrap();
    assert_eq!(one, two, "packing is reproducible");
}

fn output(name: &str, ops: &[(&str, &str)]) -> ferroflux_api::artifactgenerator::OutputArtifact {
    ferroflux_api::artifactgenerator::OutputArtifact {
        name: name.into(),
        copy: ops.iter().map(|(f, t)| op(f, t)).collect(),
        ..Default::default()
    }
}

/// source-watcher's pathPattern: one artifact per matching directory, the name rendered with
/// lowercased captures, `from`/`to` with the captures as the tree spells them, labels per
/// capture; directories that do not match the whole pattern are left out.
#[test]
fn path_pattern_makes_one_artifact_per_matching_directory() {
    use ferroflux_artgen::pattern::expand;
    let f = fixture();
    let repo = &f.sources["repo"];
    write(repo, "tenants/Team-A/envs/prod/app.yaml", "a-prod\n");
    write(repo, "tenants/Team-A/envs/dev/app.yaml", "a-dev\n");
    write(repo, "tenants/team-b/envs/prod/app.yaml", "b-prod\n");
    write(repo, "tenants/team-b/envs/prod/deep/x.yaml", "deeper\n");
    write(repo, "tenants/team-b/README.md", "docs\n");
    let outs = [output(
        "{tenant}-{env}",
        &[("@repo/tenants/{tenant}/envs/{env}/**", "@artifact/")],
    )];
    let got = expand(Some("@repo/tenants/{tenant}/envs/{env}"), &outs, &f.sources).unwrap();
    let summary: Vec<_> = got
        .iter()
        .map(|e| {
            (
                e.artifact.name.as_str(),
                e.artifact.copy[0].from.as_str(),
                e.labels["tenant"].as_str(),
                e.labels["env"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                "team-a-dev",
                "@repo/tenants/Team-A/envs/dev/**",
                "team-a",
                "dev"
            ),
            (
                "team-a-prod",
                "@repo/tenants/Team-A/envs/prod/**",
                "team-a",
                "prod"
            ),
            (
                "team-b-prod",
                "@repo/tenants/team-b/envs/prod/**",
                "team-b",
                "prod"
            ),
        ]
    );
    // The rendered rules compose each artifact from its own directory.
    let staging = f.staging.join("team-b-prod");
    std::fs::create_dir_all(&staging).unwrap();
    ferroflux_artgen::apply_all(&got[2].artifact.copy, &f.sources, &staging).unwrap();
    assert_eq!(
        tree(&staging),
        BTreeMap::from([
            ("app.yaml".to_string(), "b-prod\n".to_string()),
            ("deep/x.yaml".to_string(), "deeper\n".to_string()),
        ])
    );
    // Without a pattern the outputs are returned as written, without labels.
    let plain = expand(None, &outs, &f.sources).unwrap();
    assert_eq!(plain.len(), 1);
    assert_eq!(plain[0].artifact, outs[0]);
    assert!(plain[0].labels.is_empty());
    // A pattern no directory matches makes no artifact.
    assert!(
        expand(Some("@repo/none/{x}"), &outs, &f.sources)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn bad_path_patterns_name_the_pattern_and_the_cause() {
    use ferroflux_artgen::pattern::expand;
    let f = fixture();
    let repo = &f.sources["repo"];
    write(repo, "other/a_b/app.yaml", "x\n");
    write(repo, "teams/A/app.yaml", "x\n");
    write(repo, "teams/a/app.yaml", "x\n");
    let one = |name: &str| [output(name, &[("@repo/teams/{team}/**", "@artifact/")])];
    let cases = [
        (
            "repo/teams/{team}",
            one("{team}"),
            "invalid pathPattern format: repo/teams/{team}",
        ),
        (
            "@nope/teams/{team}",
            one("{team}"),
            "pathPattern \"@nope/teams/{team}\": source alias nope not found in local sources",
        ),
        (
            "@repo/teams/{team",
            one("{team}"),
            "pathPattern \"@repo/teams/{team\": capture starting at offset 6 is missing its closing brace",
        ),
        (
            "@repo/{team}/{team}",
            one("{team}"),
            "pathPattern \"@repo/{team}/{team}\": duplicate capture variable \"team\"",
        ),
        (
            "@repo/teams/{team}",
            one("{tenant}"),
            "pathPattern \"@repo/teams/{team}\": failed to render artifact {tenant} for match teams/A: invalid template \"{tenant}\": capture variable \"tenant\" is not defined by pathPattern",
        ),
        (
            "@repo/teams/{team}",
            one("app-{team}"),
            "pathPattern \"@repo/teams/{team}\": directories \"teams/A\" and \"teams/a\" both resolve to artifact name \"app-a\"",
        ),
        (
            "@repo/other/{team}",
            one("{team}.x"),
            "pathPattern \"@repo/other/{team}\": rendered artifact name \"a_b.x\" is not a valid Kubernetes object name",
        ),
    ];
    for (pattern, outs, want) in cases {
        let err = expand(Some(pattern), &outs, &f.sources).unwrap_err();
        assert_eq!(err, want, "{pattern}");
    }
}
