//! Our generated CRDs must accept every field Flux's CRDs accept, with the same names, types,
//! enums, defaults and required lists, and carry the same names and printer columns.
//! The fixtures are Flux v2.9's CRDs, copied from the project's shared reference data, and the
//! image kinds' CRDs, copied unchanged from `config/crd/bases/` of fluxcd/image-reflector-controller
//! (commit debe2aaa3a98, 2026-06-23: imagerepositories, imagepolicies) and
//! fluxcd/image-automation-controller (commit d36e2ea07a39, 2026-07-01: imageupdateautomations).

use serde_json::Value;
use std::collections::BTreeSet;

fn flux_crd(file: &str) -> Value {
    let path = format!("{}/tests/fixtures/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    serde_saphyr::from_str(&text).unwrap()
}

fn ours(kind: &str) -> Value {
    let crd = ferroflux_api::crds()
        .into_iter()
        .find(|c| c.spec.names.kind == kind)
        .unwrap();
    serde_json::to_value(crd).unwrap()
}

fn schema_of(crd: &Value) -> &Value {
    &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
}

/// Walks Flux's schema and records every difference in what ours accepts.
fn compare(path: &str, flux: &Value, ours: &Value, diffs: &mut Vec<String>) {
    let ty = |v: &Value| v.get("type").cloned();
    if ty(flux) != ty(ours)
        && !(ours.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)))
    {
        diffs.push(format!(
            "{path}: type {:?} vs ours {:?}",
            ty(flux),
            ty(ours)
        ));
    }
    for key in ["enum", "default"] {
        let f = flux.get(key);
        let o = ours.get(key);
        let same = match (f, o) {
            (Some(Value::Array(a)), Some(Value::Array(b))) if key == "enum" => {
                a.len() == b.len() && a.iter().all(|x| b.contains(x))
            }
            _ => f == o,
        };
        if !same {
            diffs.push(format!("{path}: {key} {f:?} vs ours {o:?}"));
        }
    }
    // Constraints are where a schema can refuse what Flux accepts: any we set must be Flux's.
    for key in [
        "pattern",
        "format",
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
    ] {
        let same = |f: &Value, o: &Value| match (f.as_f64(), o.as_f64()) {
            (Some(a), Some(b)) => a == b,
            _ => f == o,
        };
        if let Some(o) = ours.get(key)
            && !flux.get(key).is_some_and(|f| same(f, o))
        {
            diffs.push(format!("{path}: {key} {:?} vs ours {o:?}", flux.get(key)));
        }
    }
    let req = |v: &Value| -> BTreeSet<String> {
        v.get("required")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    if req(flux) != req(ours) {
        diffs.push(format!(
            "{path}: required {:?} vs ours {:?}",
            req(flux),
            req(ours)
        ));
    }
    let props = |v: &Value| -> BTreeSet<String> {
        v.get("properties")
            .and_then(Value::as_object)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    };
    let (fp, op) = (props(flux), props(ours));
    for missing in fp.difference(&op) {
        diffs.push(format!("{path}.{missing}: missing in ours"));
    }
    for extra in op.difference(&fp) {
        diffs.push(format!("{path}.{extra}: not in Flux's CRD"));
    }
    for name in fp.intersection(&op) {
        compare(
            &format!("{path}.{name}"),
            &flux["properties"][name],
            &ours["properties"][name],
            diffs,
        );
    }
    if let (Some(f), Some(o)) = (flux.get("items"), ours.get("items")) {
        compare(&format!("{path}[]"), f, o, diffs);
    } else if flux.get("items").is_some() {
        diffs.push(format!("{path}: items missing in ours"));
    }
    match (
        flux.get("additionalProperties"),
        ours.get("additionalProperties"),
    ) {
        (Some(f), Some(o)) if f.is_object() && o.is_object() => {
            compare(&format!("{path}{{}}"), f, o, diffs)
        }
        (Some(f), o) if f.is_object() && o.is_none() => {
            diffs.push(format!("{path}: additionalProperties missing in ours"))
        }
        _ => {}
    }
}

fn assert_compatible(kind: &str, file: &str) {
    let flux = flux_crd(file);
    let ours = ours(kind);
    for key in ["group", "scope"] {
        assert_eq!(flux["spec"][key], ours["spec"][key], "{kind} spec.{key}");
    }
    for key in [
        "kind",
        "listKind",
        "plural",
        "singular",
        "shortNames",
        "categories",
    ] {
        assert_eq!(
            flux["spec"]["names"][key], ours["spec"]["names"][key],
            "{kind} names.{key}"
        );
    }
    let version = |v: &Value| {
        let v = &v["spec"]["versions"][0];
        (
            v["name"].clone(),
            v["served"].clone(),
            v["storage"].clone(),
            v["subresources"].clone(),
            v["additionalPrinterColumns"].clone(),
        )
    };
    assert_eq!(
        version(&flux),
        version(&ours),
        "{kind} version, subresources, printer columns"
    );
    let mut diffs = Vec::new();
    compare("", schema_of(&flux), schema_of(&ours), &mut diffs);
    assert!(
        diffs.is_empty(),
        "{kind} schema differs from Flux's:\n{}",
        diffs.join("\n")
    );
}

#[test]
fn git_repository_crd_matches_flux() {
    assert_compatible(
        "GitRepository",
        "source.toolkit.fluxcd.io_gitrepositories.yaml",
    );
}

#[test]
fn kustomization_crd_matches_flux() {
    assert_compatible(
        "Kustomization",
        "kustomize.toolkit.fluxcd.io_kustomizations.yaml",
    );
}

#[test]
fn helm_repository_crd_matches_flux() {
    assert_compatible(
        "HelmRepository",
        "source.toolkit.fluxcd.io_helmrepositories.yaml",
    );
}

#[test]
fn helm_chart_crd_matches_flux() {
    assert_compatible("HelmChart", "source.toolkit.fluxcd.io_helmcharts.yaml");
}

#[test]
fn helm_sources_round_trip_flux_manifests() {
    let chart: ferroflux_api::HelmChart = serde_saphyr::from_str(
        r#"
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmChart
metadata:
  name: podinfo
  namespace: flux-system
spec:
  interval: 5m
  chart: podinfo
  sourceRef:
    kind: HelmRepository
    name: podinfo
  valuesFiles: [values.yaml, values-prod.yaml]
"#,
    )
    .unwrap();
    assert_eq!(chart.version_range(), "*");
    assert_eq!(
        chart.reconcile_strategy(),
        ferroflux_api::helmchart::ReconcileStrategy::ChartVersion
    );
    let back = serde_json::to_value(&chart).unwrap();
    assert_eq!(back["spec"]["sourceRef"]["kind"], "HelmRepository");
    assert_eq!(back["spec"]["version"], "*");
    let repo: ferroflux_api::HelmRepository = serde_saphyr::from_str(
        r#"
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: podinfo
spec:
  type: oci
  url: oci://ghcr.io/stefanprodan/charts
"#,
    )
    .unwrap();
    assert_eq!(
        repo.repository_type(),
        ferroflux_api::helmrepository::HelmRepositoryType::Oci
    );
    assert!(repo.spec.interval.is_none());
}

/// The comparison itself must notice a difference, or the two tests above prove nothing.
#[test]
fn comparison_detects_a_renamed_field_and_a_changed_enum() {
    let flux = flux_crd("kustomize.toolkit.fluxcd.io_kustomizations.yaml");
    let mut changed = schema_of(&flux).clone();
    let spec = changed["properties"]["spec"]["properties"]
        .as_object_mut()
        .unwrap();
    let prune = spec.remove("prune").unwrap();
    spec.insert("prunes".into(), prune);
    changed["properties"]["spec"]["properties"]["deletionPolicy"]["enum"] =
        serde_json::json!(["MirrorPrune", "Delete"]);
    let mut diffs = Vec::new();
    compare("", schema_of(&flux), &changed, &mut diffs);
    let text = diffs.join("\n");
    assert!(text.contains(".spec.prune: missing in ours"), "{text}");
    assert!(text.contains(".spec.prunes: not in Flux's CRD"), "{text}");
    assert!(text.contains(".spec.deletionPolicy: enum"), "{text}");
}

#[test]
fn typed_objects_round_trip_flux_manifests() {
    let ks: ferroflux_api::Kustomization = serde_saphyr::from_str(
        r#"
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
spec:
  interval: 10m
  dependsOn:
    - name: infrastructure
  sourceRef:
    kind: GitRepository
    name: flux-system
  path: ./apps/production
  prune: true
  wait: true
  postBuild:
    substituteFrom:
      - kind: ConfigMap
        name: cluster-vars
"#,
    )
    .unwrap();
    assert_eq!(
        ks.spec.depends_on.as_ref().unwrap()[0].name,
        "infrastructure"
    );
    assert_eq!(
        ks.spec.force,
        Some(false),
        "force defaults to false as in Flux"
    );
    let back = serde_json::to_value(&ks).unwrap();
    assert_eq!(back["spec"]["sourceRef"]["kind"], "GitRepository");
    assert_eq!(
        back["spec"]["postBuild"]["substituteFrom"][0]["optional"],
        false
    );

    let repo: ferroflux_api::GitRepository = serde_saphyr::from_str(
        r#"
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 1m
  url: ssh://git@example.com/fleet-infra
  ref:
    semver: ">=1.0.0 <2.0.0"
  secretRef:
    name: flux-system
"#,
    )
    .unwrap();
    assert_eq!(repo.spec.timeout.as_deref(), Some("60s"));
    assert_eq!(
        repo.spec.r#ref.unwrap().semver.as_deref(),
        Some(">=1.0.0 <2.0.0")
    );
}

#[test]
fn crd_yaml_stream_holds_both_crds() {
    let yaml = ferroflux_api::crds_yaml().unwrap();
    assert_eq!(yaml.matches("---\n").count(), ferroflux_api::crds().len());
    assert!(yaml.contains("name: gitrepositories.source.toolkit.fluxcd.io"));
    assert!(yaml.contains("name: helmreleases.helm.toolkit.fluxcd.io"));
    assert!(yaml.contains("name: kustomizations.kustomize.toolkit.fluxcd.io"));
    assert!(yaml.contains("listKind: KustomizationList"));
    assert!(yaml.contains("name: helmrepositories.source.toolkit.fluxcd.io"));
    assert!(yaml.contains("name: helmcharts.source.toolkit.fluxcd.io"));
    assert!(yaml.contains("name: ocirepositories.source.toolkit.fluxcd.io"));
}

#[test]
fn oci_repository_crd_matches_flux() {
    assert_compatible(
        "OCIRepository",
        "source.toolkit.fluxcd.io_ocirepositories.yaml",
    );
}

#[test]
fn helm_release_crd_matches_flux() {
    assert_compatible("HelmRelease", "helm.toolkit.fluxcd.io_helmreleases.yaml");
}

#[test]
fn external_artifact_crd_matches_flux() {
    assert_compatible(
        "ExternalArtifact",
        "source.toolkit.fluxcd.io_externalartifacts.yaml",
    );
}

#[test]
fn artifact_generator_crd_matches_flux() {
    assert_compatible(
        "ArtifactGenerator",
        "source.extensions.fluxcd.io_artifactgenerators.yaml",
    );
    // The CEL rule on artifact names travels with the schema, as in Flux's CRD.
    let flux = flux_crd("source.extensions.fluxcd.io_artifactgenerators.yaml");
    let ours = ours("ArtifactGenerator");
    assert_eq!(
        schema_of(&flux)["properties"]["spec"]["x-kubernetes-validations"],
        schema_of(&ours)["properties"]["spec"]["x-kubernetes-validations"]
    );
}

#[test]
fn artifact_generator_reads_fluxs_example() {
    let ag: ferroflux_api::ArtifactGenerator = serde_saphyr::from_str(
        r#"
apiVersion: source.extensions.fluxcd.io/v1beta1
kind: ArtifactGenerator
metadata:
  name: flux-system
  namespace: flux-system
  annotations:
    source.extensions.fluxcd.io/reconcile: Disabled
spec:
  sources:
    - alias: monorepo
      kind: GitRepository
      name: flux-system
  artifacts:
    - name: apps
      originRevision: "@monorepo"
      copy:
        - from: "@monorepo/apps/base/**"
          to: "@artifact/base/"
        - from: "@monorepo/apps/staging/values.yaml"
          to: "@artifact/staging/values.yaml"
          strategy: Merge
          exclude: ["*.md"]
"#,
    )
    .unwrap();
    assert!(ag.is_disabled());
    let apps = &ag.spec.output_artifacts[0];
    assert_eq!(apps.origin_revision.as_deref(), Some("@monorepo"));
    assert_eq!(
        apps.copy[1].strategy,
        Some(ferroflux_api::artifactgenerator::CopyStrategy::Merge)
    );
    let back = serde_json::to_value(&ag).unwrap();
    assert_eq!(
        back["spec"]["artifacts"][0]["copy"][0]["to"],
        "@artifact/base/"
    );
    assert_eq!(back["spec"]["sources"][0]["kind"], "GitRepository");
}

#[test]
fn provider_crd_matches_flux() {
    assert_compatible("Provider", "notification.toolkit.fluxcd.io_providers.yaml");
}

#[test]
fn alert_crd_matches_flux() {
    assert_compatible("Alert", "notification.toolkit.fluxcd.io_alerts.yaml");
}

#[test]
fn receiver_crd_matches_flux() {
    assert_compatible("Receiver", "notification.toolkit.fluxcd.io_receivers.yaml");
}

#[test]
fn receiver_webhook_path_is_sha256_of_token_name_namespace() {
    // printf 'tokenappsflux-system' | sha256sum
    let path = ferroflux_api::notification::webhook_path("token", "apps", "flux-system");
    assert_eq!(
        path,
        "/hook/0e2a325623ee27998ac472aeda9841a55e15e120d33c36efd5fa128e4a48cbf4"
    );
}

#[test]
fn bucket_crd_matches_flux() {
    assert_compatible("Bucket", "source.toolkit.fluxcd.io_buckets.yaml");
}

#[test]
fn bucket_reads_fluxs_manifest() {
    let bucket: ferroflux_api::Bucket = serde_saphyr::from_str(
        r#"
apiVersion: source.toolkit.fluxcd.io/v1
kind: Bucket
metadata:
  name: podinfo
  namespace: flux-system
spec:
  interval: 5m0s
  provider: aws
  bucketName: podinfo
  endpoint: s3.amazonaws.com
  region: us-east-1
  prefix: manifests/
  timeout: 30s
  secretRef:
    name: podinfo-creds
"#,
    )
    .unwrap();
    assert_eq!(
        bucket.spec.provider,
        Some(ferroflux_api::BucketProvider::Aws)
    );
    assert_eq!(bucket.spec.prefix.as_deref(), Some("manifests/"));
    let back = serde_json::to_value(&bucket).unwrap();
    assert_eq!(back["spec"]["secretRef"]["name"], "podinfo-creds");
    assert_eq!(back["spec"]["bucketName"], "podinfo");
    // A manifest without a provider gets Flux's default.
    let plain: ferroflux_api::Bucket = serde_json::from_value(serde_json::json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "Bucket",
        "metadata": {"name": "b"},
        "spec": {"bucketName": "b", "endpoint": "minio:9000", "interval": "1m"}
    }))
    .unwrap();
    assert_eq!(
        plain.spec.provider,
        Some(ferroflux_api::BucketProvider::Generic)
    );
}

fn assert_image_compatible(kind: &str, file: &str) {
    let flux = flux_crd(file);
    let ours = ours(kind);
    for key in ["group", "scope"] {
        assert_eq!(flux["spec"][key], ours["spec"][key], "{kind} spec.{key}");
    }
    for key in [
        "kind",
        "listKind",
        "plural",
        "singular",
        "shortNames",
        "categories",
    ] {
        assert_eq!(
            flux["spec"]["names"][key], ours["spec"]["names"][key],
            "{kind} names.{key}"
        );
    }
    let version = |v: &Value| {
        let v = &v["spec"]["versions"][0];
        (
            v["name"].clone(),
            v["served"].clone(),
            v["storage"].clone(),
            v["subresources"].clone(),
            v["additionalPrinterColumns"].clone(),
        )
    };
    assert_eq!(version(&flux), version(&ours), "{kind} version");
    let mut diffs = Vec::new();
    compare("", schema_of(&flux), schema_of(&ours), &mut diffs);
    assert!(
        diffs.is_empty(),
        "{kind} schema differs from Flux's:\n{}",
        diffs.join("\n")
    );
    assert_eq!(
        schema_of(&flux)["properties"]["spec"]["x-kubernetes-validations"],
        schema_of(&ours)["properties"]["spec"]["x-kubernetes-validations"],
        "{kind} CEL rules"
    );
}

#[test]
fn image_crds_match_flux() {
    assert_image_compatible(
        "ImageRepository",
        "image.toolkit.fluxcd.io_imagerepositories.yaml",
    );
    assert_image_compatible("ImagePolicy", "image.toolkit.fluxcd.io_imagepolicies.yaml");
    assert_image_compatible(
        "ImageUpdateAutomation",
        "image.toolkit.fluxcd.io_imageupdateautomations.yaml",
    );
}

#[test]
fn image_objects_take_fluxs_defaults() {
    let repo: ferroflux_api::ImageRepository = serde_saphyr::from_str(
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n  name: podinfo\n\
         spec:\n  image: ghcr.io/stefanprodan/podinfo\n  interval: 1m\n",
    )
    .unwrap();
    assert_eq!(repo.exclusion_list(), vec![r"^.*\.sig$".to_string()]);
    assert_eq!(repo.provider().as_str(), "generic");
    let policy: ferroflux_api::ImagePolicy = serde_saphyr::from_str(
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n  name: p\n  namespace: apps\n\
         spec:\n  imageRepositoryRef:\n    name: podinfo\n  policy:\n    semver:\n      range: 5.0.x\n",
    )
    .unwrap();
    assert_eq!(
        policy.reflection(),
        ferroflux_api::image::ReflectionPolicy::Never
    );
    assert_eq!(policy.repository_namespace().as_deref(), Some("apps"));
    let latest = ferroflux_api::image::ImageRef {
        name: "ghcr.io/stefanprodan/podinfo".into(),
        tag: "5.0.3".into(),
        digest: Some("sha256:abc".into()),
    };
    assert_eq!(
        latest.to_string(),
        "ghcr.io/stefanprodan/podinfo:5.0.3@sha256:abc"
    );
}
