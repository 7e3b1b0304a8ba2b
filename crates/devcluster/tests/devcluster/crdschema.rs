//! Custom resources as their CRD's structural schema shapes them, driven by the real `kubectl`
//! with Flux's own CRDs (the copies crates/api keeps as fixtures): `default:` values filled on
//! create, update, server-side apply and status writes, unknown fields pruned.

use std::path::PathBuf;

use ferroflux_devcluster::{Config, DevCluster};
use ferroflux_testkit::Kubectl;

fn flux_crd(file: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../api/tests/fixtures")
        .join(file);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

const KUSTOMIZATION: &str = "apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: default
spec:
  interval: 10m
  path: ./apps
  prune: true
  sourceRef:
    kind: GitRepository
    name: repo
  postBuild:
    substituteFrom:
    - kind: ConfigMap
      name: vars
    - kind: Secret
      name: secret-vars
      optional: true
  notAField: dropped
notAFieldEither: dropped
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flux_crds_default_and_prune() {
    let c = DevCluster::start(Config::memory("crd-defaults"))
        .await
        .unwrap();
    let k = Kubectl::new(&[&c]);
    for f in [
        "kustomize.toolkit.fluxcd.io_kustomizations.yaml",
        "source.toolkit.fluxcd.io_gitrepositories.yaml",
    ] {
        k.ok(&["apply", "--server-side", "-f", "-"], &flux_crd(f));
    }

    // Create: the spec's defaults (`force`, `optional` inside the array items), the status default
    // the CRD declares (kept although the status subresource drops the body's status), and no
    // unknown field. kubectl's client-side validation would refuse the unknown fields first.
    k.ok(&["create", "--validate=false", "-f", "-"], KUSTOMIZATION);
    let ks = k.json(&["get", "kustomization", "apps"]);
    assert_eq!(ks["spec"]["force"], false, "{ks:#}");
    assert_eq!(
        ks["spec"]["postBuild"]["substituteFrom"][0]["optional"], false,
        "{ks:#}"
    );
    assert_eq!(
        ks["spec"]["postBuild"]["substituteFrom"][1]["optional"], true,
        "{ks:#}"
    );
    assert_eq!(ks["status"]["observedGeneration"], -1, "{ks:#}");
    assert!(ks["spec"].get("notAField").is_none(), "{ks:#}");
    assert!(ks.get("notAFieldEither").is_none(), "{ks:#}");
    // No defaults inside objects the body leaves out (`spec.kubeConfig`, `spec.commonMetadata`).
    assert!(ks["spec"].get("kubeConfig").is_none(), "{ks:#}");

    // Update: a field set to null that has a default gets it back; the generation counts the
    // change of `path` only.
    let mut edited = ks.clone();
    edited["spec"]["force"] = serde_json::Value::Null;
    edited["spec"]["path"] = "./other".into();
    let edited = serde_json::to_string(&edited).unwrap();
    k.ok(&["replace", "-f", "-"], &edited);
    let ks = k.json(&["get", "kustomization", "apps"]);
    assert_eq!(ks["spec"]["force"], false, "{ks:#}");
    assert_eq!(ks["metadata"]["generation"], 2, "{ks:#}");

    // A status write through the subresource is pruned and keeps the declared fields.
    k.ok(
        &[
            "patch", "kustomization", "apps", "--subresource=status", "--type=merge", "-p",
            r#"{"status":{"observedGeneration":2,"lastAppliedRevision":"main@sha1:abc","bogus":1}}"#,
        ],
        "",
    );
    let ks = k.json(&["get", "kustomization", "apps"]);
    assert_eq!(ks["status"]["observedGeneration"], 2, "{ks:#}");
    assert_eq!(
        ks["status"]["lastAppliedRevision"], "main@sha1:abc",
        "{ks:#}"
    );
    assert!(ks["status"].get("bogus").is_none(), "{ks:#}");

    // Server-side apply of a GitRepository: `timeout` defaulted; `verify.mode` only once
    // `verify` exists.
    let repo = "apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: repo
  namespace: default
spec:
  interval: 1m
  url: https://example.com/repo.git
";
    k.ok(&["apply", "--server-side", "-f", "-"], repo);
    let gr = k.json(&["get", "gitrepository", "repo"]);
    assert_eq!(gr["spec"]["timeout"], "60s", "{gr:#}");
    assert!(gr["spec"].get("verify").is_none(), "{gr:#}");
    let with_verify = format!("{repo}  verify:\n    provider: cosign\n");
    k.ok(&["apply", "--server-side", "-f", "-"], &with_verify);
    let gr = k.json(&["get", "gitrepository", "repo"]);
    assert_eq!(gr["spec"]["verify"]["mode"], "HEAD", "{gr:#}");
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preserve_unknown_fields_keeps_them() {
    let c = DevCluster::start(Config::memory("crd-preserve"))
        .await
        .unwrap();
    let k = Kubectl::new(&[&c]);
    // A HelmRelease's `values` keep whatever they hold; fields beside them are pruned.
    k.ok(
        &["apply", "--server-side", "-f", "-"],
        &flux_crd("helm.toolkit.fluxcd.io_helmreleases.yaml"),
    );
    let hr = "apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: web
  namespace: default
spec:
  interval: 5m
  chart:
    spec:
      chart: podinfo
      sourceRef:
        kind: HelmRepository
        name: charts
  values:
    replicaCount: 2
    nested:
      anything: [1, two, {three: 3}]
  unknownSpecField: x
";
    k.ok(&["create", "--validate=false", "-f", "-"], hr);
    let got = k.json(&["get", "helmrelease", "web"]);
    assert_eq!(
        got["spec"]["values"],
        serde_json::json!({ "replicaCount": 2, "nested": { "anything": [1, "two", { "three": 3 }] } }),
        "{got:#}"
    );
    assert!(got["spec"].get("unknownSpecField").is_none(), "{got:#}");
    // Defaults of the chart template: `version: '*'`, `reconcileStrategy: ChartVersion`.
    assert_eq!(got["spec"]["chart"]["spec"]["version"], "*", "{got:#}");
    assert_eq!(
        got["spec"]["chart"]["spec"]["reconcileStrategy"], "ChartVersion",
        "{got:#}"
    );
    c.shutdown().await;
}

fn crd(plural: &str, kind: &str, scale: &str) -> String {
    format!(
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: {plural}.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {{plural: {plural}, singular: {singular}, kind: {kind}}}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {{}}
{scale}    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              replicas: {{type: integer}}
              selector: {{type: string}}
          status:
            type: object
            properties:
              replicas: {{type: integer}}
              selector: {{type: string}}
",
        singular = kind.to_ascii_lowercase()
    )
}

const SCALE: &str = "      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
        labelSelectorPath: .status.selector
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_scales_custom_resources_with_the_subresource() {
    let c = DevCluster::start(Config::memory("crd-scale"))
        .await
        .unwrap();
    let k = Kubectl::new(&[&c]);
    k.ok(&["apply", "-f", "-"], &crd("widgets", "Widget", SCALE));
    k.ok(&["apply", "-f", "-"], &crd("gadgets", "Gadget", ""));
    let cr = |kind: &str| {
        format!(
            "apiVersion: example.com/v1\nkind: {kind}\nmetadata: {{name: one, namespace: default}}\nspec: {{replicas: 1}}\n"
        )
    };
    k.ok(&["create", "-f", "-"], &cr("Widget"));
    k.ok(&["create", "-f", "-"], &cr("Gadget"));
    k.ok(
        &[
            "patch",
            "widget",
            "one",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"replicas":1,"selector":"app=one"}}"#,
        ],
        "",
    );

    assert_eq!(
        k.ok(&["scale", "widget", "one", "--replicas=3"], "").trim(),
        "widget.example.com/one scaled"
    );
    let w = k.json(&["get", "widget", "one"]);
    assert_eq!(w["spec"]["replicas"], 3, "{w:#}");
    assert_eq!(w["metadata"]["generation"], 2, "{w:#}");
    // `--current-replicas` reads the Scale first, as autoscalers do.
    let o = k.run(
        &[
            "scale",
            "widget",
            "one",
            "--current-replicas=2",
            "--replicas=4",
        ],
        "",
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("Expected replicas to be 2, was 3"),
        "{err}"
    );

    let s: serde_json::Value = serde_json::from_str(&k.ok(
        &[
            "get",
            "--raw",
            "/apis/example.com/v1/namespaces/default/widgets/one/scale",
        ],
        "",
    ))
    .unwrap();
    assert_eq!(s["kind"], "Scale", "{s:#}");
    assert_eq!(s["apiVersion"], "autoscaling/v1", "{s:#}");
    assert_eq!(s["spec"]["replicas"], 3, "{s:#}");
    assert_eq!(
        s["status"],
        serde_json::json!({ "replicas": 1, "selector": "app=one" }),
        "{s:#}"
    );
    assert_eq!(s["metadata"]["name"], "one", "{s:#}");

    // A kind whose CRD has no scale subresource: the path is 404 as the API server answers it.
    let err = k.fails(&["scale", "gadget", "one", "--replicas=3"], "");
    assert!(
        err.contains(
            "Error from server (NotFound): the server could not find the requested resource"
        ),
        "{err}"
    );
    let err = k.fails(
        &[
            "get",
            "--raw",
            "/apis/example.com/v1/namespaces/default/gadgets/one/scale",
        ],
        "",
    );
    assert!(
        err.contains("(NotFound)")
            && err.contains("the server could not find the requested resource"),
        "{err}"
    );

    // A scale path outside .spec is refused as the API server's CRD validation refuses it.
    let bad = crd(
        "things",
        "Thing",
        "      scale:\n        specReplicasPath: .replicas\n        statusReplicasPath: .status.replicas\n",
    );
    let err = k.fails(&["apply", "-f", "-"], &bad);
    assert!(
        err.contains("spec.versions[0].subresources.scale.specReplicasPath")
            && err.contains("should be a json path under .spec"),
        "{err}"
    );
    c.shutdown().await;
}
