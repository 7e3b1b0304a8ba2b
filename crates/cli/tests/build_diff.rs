//! `ferroflux build kustomization` and `ferroflux diff kustomization` as a user runs them,
//! against a local cluster started in-process; the Kustomization objects are created with
//! kube-rs and no controller runs.

use base64::Engine as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use ferroflux_api::Kustomization;
use ferroflux_apply::applier::{Applier, ApplyOptions};
use ferroflux_apply::inventory::inventory_of;
use ferroflux_controller::kustomization::build::{Cluster, build};
use ferroflux_devcluster::{Config, DevCluster, RunningCluster};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/build");
const SOPS_FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../sops/tests/fixtures");

struct Env {
    _cluster: RunningCluster,
    client: kube::Client,
    kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
}

/// A cluster with Flux's CRDs and the `flux-system` namespace, and a kubeconfig file for it.
async fn start(name: &str) -> Env {
    let cluster = DevCluster::start(Config::memory(name)).await.unwrap();
    let client = cluster.client().await.unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in ferroflux_api::crds() {
        crds.create(&PostParams::default(), &crd).await.unwrap();
    }
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for ns in ["flux-system", "apps"] {
        let obj = serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap();
        namespaces
            .create(&PostParams::default(), &obj)
            .await
            .unwrap();
    }
    // The CRD is served once a list answers.
    let ks: Api<Kustomization> = Api::namespaced(client.clone(), "flux-system");
    let mut served = false;
    for _ in 0..500 {
        if ks.list(&ListParams::default()).await.is_ok() {
            served = true;
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(served, "the Kustomization CRD is never served");
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(&kubeconfig, cluster.kubeconfig()).unwrap();
    Env {
        _cluster: cluster,
        client,
        kubeconfig,
        _dir: dir,
    }
}

impl Env {
    /// Runs the binary with this cluster's kubeconfig; (exit code, stdout, stderr).
    async fn ferroflux(&self, args: &[&str]) -> (i32, String, String) {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ferroflux"));
        cmd.args(args)
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(["--timeout", "30s"]);
        let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
            .await
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    }

    async fn create_kustomization(&self, value: Value) -> Kustomization {
        let ks: Kustomization = serde_json::from_value(value).unwrap();
        let ns = ks.metadata.namespace.clone().unwrap();
        let api: Api<Kustomization> = Api::namespaced(self.client.clone(), &ns);
        api.create(&PostParams::default(), &ks).await.unwrap()
    }
}

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Every file under `dir` with its bytes, to check a command left the tree alone.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            } else {
                out.push((entry.path(), std::fs::read(entry.path()).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// flux's own `build kustomization` cases, compared with its goldens. The one difference is
/// deliberate: flux prints the values of Secrets that were not sops-encrypted in Git
/// (`db-user-pass`), we mask those too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn build_matches_flux_goldens() {
    let env = start("build-golden").await;
    let text = std::fs::read_to_string(format!("{FIXTURES}/podinfo-kustomization.yaml"))
        .unwrap()
        .replace("{{ .fluxns }}", "flux-system");
    let doc: Value = serde_saphyr::from_str(text.trim_start_matches("---\n")).unwrap();
    env.create_kustomization(doc).await;

    let work = tempfile::tempdir().unwrap();
    let cases: [(&str, &str, &[&str]); 4] = [
        ("podinfo", "podinfo-result.yaml", &[]),
        ("delete-service", "podinfo-without-service-result.yaml", &[]),
        (
            "var-substitution",
            "podinfo-with-var-substitution-result.yaml",
            &[],
        ),
        (
            "ignore",
            "podinfo-with-ignore-result.yaml",
            &["--ignore-paths", "!configmap.yaml,!secret.yaml"],
        ),
    ];
    for (dir, golden, extra) in cases {
        let local = work.path().join(dir);
        copy_dir(&Path::new(FIXTURES).join(dir), &local);
        let before = snapshot(&local);
        let mut args = vec![
            "build",
            "kustomization",
            "podinfo",
            "--path",
            local.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let (code, stdout, stderr) = env.ferroflux(&args).await;
        assert_eq!(code, 0, "{dir}: {stderr}");
        let expected = std::fs::read_to_string(Path::new(FIXTURES).join(golden))
            .unwrap()
            .replace("{{ .fluxns }}", "flux-system")
            .replace("password: MWYyZDFlMmU2N2Rm", "password: KipTT1BTKio=")
            .replace("username: YWRtaW4=", "username: KipTT1BTKio=");
        assert_eq!(stdout, expected, "{dir}");
        assert_eq!(
            snapshot(&local),
            before,
            "{dir}: the local tree was modified"
        );
    }
}

/// The plaintext of the sops fixture `algorithms/age.yaml`, decrypted here with its key.
fn sops_plaintext() -> String {
    let key = std::fs::read(format!("{SOPS_FIXTURES}/keys/age.txt")).unwrap();
    let ids = ferroflux_sops::AgeIdentities::from_secret_entries(
        "test",
        [("age.agekey", key.as_slice())],
    )
    .unwrap();
    let text = std::fs::read_to_string(format!("{SOPS_FIXTURES}/algorithms/age.yaml")).unwrap();
    let mut obj: Value = serde_saphyr::from_str(&text).unwrap();
    ferroflux_sops::Decryptor::new(ids)
        .verify_mac(false)
        .decrypt_object(&mut obj)
        .unwrap();
    obj["stringData"]["key"].as_str().unwrap().to_string()
}

/// A repository with a base, an overlay reading a patch from a sibling directory (Flux builds
/// without kustomize's load restrictions), variables from the spec and from a ConfigMap, a
/// sops-encrypted Secret and a plain generated one.
fn fleet_repo(root: &Path) {
    std::fs::create_dir_all(root.join(".git")).unwrap();
    write(
        root,
        "apps/base/kustomization.yaml",
        "resources:\n- deployment.yaml\n- settings.yaml\n",
    );
    write(
        root,
        "apps/base/deployment.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels:\n    region: ${region}\nspec:\n  replicas: ${replicas}\n  selector:\n    matchLabels:\n      app: web\n  template:\n    metadata:\n      labels:\n        app: web\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.27\n",
    );
    write(
        root,
        "apps/base/settings.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: base\n",
    );
    write(
        root,
        "apps/shared/mode-patch.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: production\n",
    );
    write(
        root,
        "apps/production/kustomization.yaml",
        "resources:\n- ../base\n- secret.sops.yaml\npatches:\n- path: ../shared/mode-patch.yaml\nsecretGenerator:\n- name: db\n  options:\n    disableNameSuffixHash: true\n  literals:\n  - password=hunter2\n",
    );
    std::fs::copy(
        format!("{SOPS_FIXTURES}/algorithms/age.yaml"),
        root.join("apps/production/secret.sops.yaml"),
    )
    .unwrap();
}

async fn fleet_cluster_objects(env: &Env) {
    let cms: Api<ConfigMap> = Api::namespaced(env.client.clone(), "flux-system");
    let cm = serde_json::from_value(json!({"metadata": {"name": "cluster-vars"},
        "data": {"region": "eu-west-1"}}))
    .unwrap();
    cms.create(&PostParams::default(), &cm).await.unwrap();
    let secrets: Api<Secret> = Api::namespaced(env.client.clone(), "flux-system");
    let key = std::fs::read(format!("{SOPS_FIXTURES}/keys/age.txt")).unwrap();
    let key = base64::engine::general_purpose::STANDARD.encode(key);
    let secret = serde_json::from_value(json!({"metadata": {"name": "sops-age"},
        "data": {"age.agekey": key}}))
    .unwrap();
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    env.create_kustomization(json!({
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": "apps", "namespace": "flux-system"},
        "spec": {
            "interval": "10m", "path": "./apps/production", "prune": true,
            "sourceRef": {"kind": "GitRepository", "name": "fleet"},
            "targetNamespace": "apps",
            "commonMetadata": {"labels": {"team": "web"}},
            "decryption": {"provider": "sops", "secretRef": {"name": "sops-age"}},
            "postBuild": {
                "substitute": {"replicas": "3"},
                "substituteFrom": [{"kind": "ConfigMap", "name": "cluster-vars"}]
            }
        }
    }))
    .await;
}

const FLEET_BUILD: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata:
  labels:
    kustomize.toolkit.fluxcd.io/name: apps
    kustomize.toolkit.fluxcd.io/namespace: flux-system
    region: eu-west-1
    team: web
  name: web
  namespace: apps
spec:
  replicas: 3
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - image: nginx:1.27
        name: web
---
apiVersion: v1
data:
  mode: production
kind: ConfigMap
metadata:
  labels:
    kustomize.toolkit.fluxcd.io/name: apps
    kustomize.toolkit.fluxcd.io/namespace: flux-system
    team: web
  name: settings
  namespace: apps
---
apiVersion: v1
kind: Secret
metadata:
  labels:
    kustomize.toolkit.fluxcd.io/name: apps
    kustomize.toolkit.fluxcd.io/namespace: flux-system
    team: web
  name: age
  namespace: apps
stringData:
  key: '**SOPS**'
---
apiVersion: v1
data:
  password: KipTT1BTKio=
kind: Secret
metadata:
  labels:
    kustomize.toolkit.fluxcd.io/name: apps
    kustomize.toolkit.fluxcd.io/namespace: flux-system
    team: web
  name: db
  namespace: apps
type: Opaque
---
";

/// The overlay built the way the controller builds it: sibling patch, substitution from the
/// spec and from a ConfigMap, the sops Secret decrypted with the cluster's key and masked with
/// every other Secret value; the local tree untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn build_substitutes_decrypts_and_masks() {
    let env = start("build-fleet").await;
    fleet_cluster_objects(&env).await;
    let repo = tempfile::tempdir().unwrap();
    fleet_repo(repo.path());
    let before = snapshot(repo.path());
    let path = repo.path().join("apps/production");
    let (code, stdout, stderr) = env
        .ferroflux(&["build", "ks", "apps", "--path", path.to_str().unwrap()])
        .await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, FLEET_BUILD);
    let plaintext = sops_plaintext();
    assert!(!stdout.contains(&plaintext) && !stderr.contains(&plaintext));
    assert!(!stdout.contains("hunter2") && !stdout.contains("aHVudGVyMg"));
    assert!(!stdout.contains("ENC["), "ciphertext printed: {stdout}");
    assert_eq!(snapshot(repo.path()), before, "the local tree was modified");

    // The key Secret is what lets the build decrypt: without it, the build fails as the
    // controller's would, naming the Secret.
    let secrets: Api<Secret> = Api::namespaced(env.client.clone(), "flux-system");
    secrets
        .delete("sops-age", &Default::default())
        .await
        .unwrap();
    let (code, stdout, stderr) = env
        .ferroflux(&["build", "ks", "apps", "--path", path.to_str().unwrap()])
        .await;
    assert_eq!(code, 1);
    assert!(stdout.is_empty());
    assert!(
        stderr.contains("decryption: Secret flux-system/sops-age not found"),
        "{stderr}"
    );
}

/// Bad input for build: no --path, a path that is not there, an unknown Kustomization.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn build_bad_input() {
    let env = start("build-bad").await;
    fleet_cluster_objects(&env).await;
    let repo = tempfile::tempdir().unwrap();
    fleet_repo(repo.path());
    let path = repo.path().join("apps/production");

    let (code, stdout, stderr) = env.ferroflux(&["build", "ks", "apps"]).await;
    assert_eq!(code, 1);
    assert!(stdout.is_empty());
    assert!(
        stderr.contains("invalid resource path \"\": pass the local directory with --path"),
        "{stderr}"
    );

    let missing = repo.path().join("apps/staging");
    let (code, _, stderr) = env
        .ferroflux(&["build", "ks", "apps", "--path", missing.to_str().unwrap()])
        .await;
    assert_eq!(code, 1);
    assert!(
        stderr.contains(&format!(
            "invalid resource path \"{}\": not a directory",
            missing.display()
        )),
        "{stderr}"
    );

    let (code, stdout, stderr) = env
        .ferroflux(&["build", "ks", "nope", "--path", path.to_str().unwrap()])
        .await;
    assert_eq!(code, 1);
    assert!(stdout.is_empty());
    assert!(
        stderr.contains("failed to get kustomization object: kustomizations.kustomize.toolkit.fluxcd.io \"nope\" not found in namespace \"flux-system\""),
        "{stderr}"
    );

    // A broken overlay is reported as a build failure, not half-printed.
    write(
        repo.path(),
        "apps/broken/kustomization.yaml",
        "resources:\n- missing.yaml\n",
    );
    let broken = repo.path().join("apps/broken");
    let (code, stdout, stderr) = env
        .ferroflux(&["build", "ks", "apps", "--path", broken.to_str().unwrap()])
        .await;
    assert_eq!(code, 1);
    assert!(stdout.is_empty());
    assert!(stderr.contains("kustomize build failed"), "{stderr}");
    assert!(stderr.contains("missing.yaml"), "{stderr}");
}

/// Applies what the controller would apply for `apps` (our build and applier, as the
/// controller runs them) and records the inventory in the Kustomization's status.
async fn apply_as_the_controller(env: &Env, repo: &Path) {
    let copy = tempfile::tempdir().unwrap();
    copy_dir(repo, copy.path());
    let api: Api<Kustomization> = Api::namespaced(env.client.clone(), "flux-system");
    let ks = api.get("apps").await.unwrap();
    let dir = copy.path().join("apps/production");
    let objects = build(&ks, copy.path(), &dir, Cluster::Client(&env.client))
        .await
        .unwrap();
    let applier = Applier::new(env.client.clone(), "kustomize-controller");
    applier
        .apply_staged(objects.clone(), &ApplyOptions::default())
        .await
        .unwrap();
    let inventory = inventory_of(&objects).unwrap();
    api.patch_status(
        "apps",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"inventory": inventory}})),
    )
    .await
    .unwrap();
}

/// Exit codes 0 (nothing to change) and 1 (created, drifted, deleted), with the drift shown
/// field by field and Secret values masked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diff_reports_changes_with_flux_exit_codes() {
    let env = start("diff").await;
    fleet_cluster_objects(&env).await;
    let repo = tempfile::tempdir().unwrap();
    fleet_repo(repo.path());
    let path = repo.path().join("apps/production");
    let path = path.to_str().unwrap();

    // Nothing applied yet: everything would be created.
    let (code, stdout, stderr) = env
        .ferroflux(&["diff", "kustomization", "apps", "--path", path])
        .await;
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(
        stdout,
        "► Deployment/apps/web created\n► ConfigMap/apps/settings created\n► Secret/apps/age created\n► Secret/apps/db created\n"
    );
    assert!(
        stderr.contains("identified at least one change, exiting with non-zero exit code"),
        "{stderr}"
    );

    // Applied as the controller would: no change.
    apply_as_the_controller(&env, repo.path()).await;
    let before = snapshot(repo.path());
    let (code, stdout, stderr) = env.ferroflux(&["diff", "ks", "apps", "--path", path]).await;
    assert_eq!((code, stdout.as_str()), (0, ""), "{stderr}");
    assert_eq!(snapshot(repo.path()), before, "the local tree was modified");

    // A changed field, a changed Secret value, a removed object.
    write(
        repo.path(),
        "apps/shared/mode-patch.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: maintenance\n",
    );
    write(
        repo.path(),
        "apps/production/kustomization.yaml",
        "resources:\n- ../base\npatches:\n- path: ../shared/mode-patch.yaml\nsecretGenerator:\n- name: db\n  options:\n    disableNameSuffixHash: true\n  literals:\n  - password=correct-horse\n",
    );
    let (code, stdout, stderr) = env.ferroflux(&["diff", "ks", "apps", "--path", path]).await;
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(
        stdout,
        "\
► ConfigMap/apps/settings drifted

data.mode
± value change
- production
+ maintenance

► Secret/apps/db drifted

data.password
± value change
- *** (before)
+ *** (after)

► Secret/apps/age deleted
"
    );
    for secret in [
        "hunter2",
        "aHVudGVyMg",
        "correct-horse",
        "Y29ycmVjdC1ob3JzZ",
    ] {
        assert!(!stdout.contains(secret), "{secret} leaked: {stdout}");
    }
}

/// Exit code 2 with a clear message: no such Kustomization, no such path, no --path, and an
/// object the API server refuses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diff_errors_exit_2() {
    let env = start("diff-errors").await;
    fleet_cluster_objects(&env).await;
    let repo = tempfile::tempdir().unwrap();
    fleet_repo(repo.path());
    let path = repo.path().join("apps/production");

    let (code, stdout, stderr) = env
        .ferroflux(&["diff", "ks", "nope", "--path", path.to_str().unwrap()])
        .await;
    assert_eq!(code, 2);
    assert!(stdout.is_empty());
    assert!(
        stderr.contains("✗ failed to get kustomization object: kustomizations.kustomize.toolkit.fluxcd.io \"nope\" not found"),
        "{stderr}"
    );

    let missing = repo.path().join("apps/nowhere");
    let (code, _, stderr) = env
        .ferroflux(&["diff", "ks", "apps", "--path", missing.to_str().unwrap()])
        .await;
    assert_eq!(code, 2);
    assert!(
        stderr.contains("invalid resource path") && stderr.contains("apps/nowhere"),
        "{stderr}"
    );

    let (code, _, stderr) = env.ferroflux(&["diff", "ks", "apps"]).await;
    assert_eq!(code, 2);
    assert!(stderr.contains("invalid resource path \"\""), "{stderr}");

    // An object of a kind the cluster does not serve cannot be dry-run; the rest still is.
    write(
        repo.path(),
        "apps/production/kustomization.yaml",
        "resources:\n- ../base\n- widget.yaml\n",
    );
    write(
        repo.path(),
        "apps/production/widget.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n",
    );
    let (code, stdout, stderr) = env
        .ferroflux(&["diff", "ks", "apps", "--path", path.to_str().unwrap()])
        .await;
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(stdout.contains("► Deployment/apps/web created"), "{stdout}");
    assert!(
        stderr.contains(
            "✗ Widget/apps/w dry-run failed: no matches for kind \"Widget\" in version \"example.com/v1\""
        ),
        "{stderr}"
    );
}
