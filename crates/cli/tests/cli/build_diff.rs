//! `ferroflux build kustomization` and `ferroflux diff kustomization` as a user runs them,
//! against a local cluster started in-process; the Kustomization objects are created with
//! kube-rs, and only the recursive fleet test runs the real controllers.

use base64::Engine as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use ferroflux_api::Kustomization;
use ferroflux_apply::applier::{Applier, ApplyOptions};
use ferroflux_apply::inventory::inventory_of;
use ferroflux_controller::kustomization::build::{Cluster, build};
use ferroflux_controller::manager::{Manager, ManagerConfig};
use ferroflux_devcluster::RunningCluster;
use ferroflux_testkit::flux_cluster;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/build");
const GOLDENS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/goldens");
const SOPS_FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../sops/tests/fixtures");

pub(crate) struct Env {
    _cluster: RunningCluster,
    pub(crate) client: kube::Client,
    pub(crate) kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
}

/// A cluster with Flux's CRDs and the `flux-system` namespace, and a kubeconfig file for it.
pub(crate) async fn start(name: &str) -> Env {
    let (cluster, client) = flux_cluster(name).await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let apps = serde_json::from_value(json!({"metadata": {"name": "apps"}})).unwrap();
    namespaces
        .create(&PostParams::default(), &apps)
        .await
        .unwrap();
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
    pub(crate) async fn ferroflux(&self, args: &[&str]) -> (i32, String, String) {
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

    pub(crate) async fn create_kustomization(&self, value: Value) -> Kustomization {
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

pub(crate) fn copy_dir(from: &Path, to: &Path) {
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

    // flux's recursive case: the nested `my-app` (not in the cluster) is built from the local
    // source `GitRepository/default/podinfo`, its objects after the parent's.
    for dir in ["podinfo-with-my-app", "my-app"] {
        copy_dir(&Path::new(FIXTURES).join(dir), &work.path().join(dir));
    }
    let local = work.path().join("podinfo-with-my-app");
    let sources = format!("GitRepository/default/podinfo={}", work.path().display());
    let args = [
        "build",
        "kustomization",
        "podinfo",
        "--path",
        local.to_str().unwrap(),
        "--recursive",
        "--local-sources",
        &sources,
    ];
    let (code, stdout, stderr) = env.ferroflux(&args).await;
    assert_eq!(code, 0, "{stderr}");
    let expected = std::fs::read_to_string(format!("{FIXTURES}/podinfo-with-my-app-result.yaml"))
        .unwrap()
        .replace("{{ .fluxns }}", "flux-system");
    assert_eq!(stdout, expected);

    // flux's `diff-with-recursive.golden`: `my-app` as the cluster holds it is unchanged, the
    // ConfigMap it builds would be created.
    let my_app = std::fs::read_to_string(format!("{GOLDENS}/diff-kustomization/my-app.yaml"))
        .unwrap()
        .replace("{{ .fluxns }}", "flux-system");
    let my_app: Value = serde_saphyr::from_str(my_app.trim_start_matches("---\n")).unwrap();
    let applier = Applier::new(env.client.clone(), "kustomize-controller");
    applier
        .apply_staged(vec![my_app], &ApplyOptions::default())
        .await
        .unwrap();
    let mut args = args.to_vec();
    args[0] = "diff";
    let (code, stdout, stderr) = env.ferroflux(&args).await;
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert_eq!(
        stdout,
        std::fs::read_to_string(format!(
            "{GOLDENS}/diff-kustomization/diff-with-recursive.golden"
        ))
        .unwrap()
    );
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
        stderr.contains("failed to get kustomization object: kustomizations.kustomize.toolkit.fluxcd.io \"nope\" not found"),
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

// --- --recursive and --local-sources ---

/// Every object of the cluster a command could touch, with its resourceVersion: equal before
/// and after means nothing was written.
async fn cluster_state(client: &kube::Client) -> Vec<String> {
    let mut out = Vec::new();
    let kss: Api<Kustomization> = Api::all(client.clone());
    for k in kss.list(&ListParams::default()).await.unwrap() {
        out.push(format!(
            "ks {:?} {:?}",
            k.metadata.name, k.metadata.resource_version
        ));
    }
    let cms: Api<ConfigMap> = Api::all(client.clone());
    for c in cms.list(&ListParams::default()).await.unwrap() {
        out.push(format!(
            "cm {:?}/{:?} {:?}",
            c.metadata.namespace, c.metadata.name, c.metadata.resource_version
        ));
    }
    out.sort();
    out
}

fn kustomization_yaml(name: &str, path: &str, source: &str) -> String {
    format!(
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: {name}\n  namespace: flux-system\nspec:\n  interval: 10m\n  prune: true\n  path: {path}\n  sourceRef:\n    kind: GitRepository\n    name: {source}\n"
    )
}

/// Bad input for --recursive: a malformed --local-sources entry, a local source that is not
/// there, a nested source neither local nor in the cluster, and two kinds of cycles. Each is
/// a clear error (exit 1 for build, 2 for diff) and leaves the cluster and the tree alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recursive_bad_input() {
    let env = start("recursive-bad").await;
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    write(
        root,
        "clusters/dev/nested.yaml",
        &kustomization_yaml("nested", "./apps", "fleet"),
    );
    write(
        root,
        "apps/settings.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: apps\ndata:\n  mode: dev\n",
    );
    // root's output holds `loop`, which builds root's own directory again.
    write(
        root,
        "clusters/loop/loop.yaml",
        &kustomization_yaml("loop", "./clusters/loop", "fleet"),
    );
    // a → b → a: b's directory holds a Kustomization named like the top one.
    write(
        root,
        "clusters/a/b.yaml",
        &kustomization_yaml("b", "./clusters/b", "fleet"),
    );
    write(
        root,
        "clusters/b/root.yaml",
        &kustomization_yaml("root", "./clusters/a", "fleet"),
    );
    // The nested ones exist too: diff recurses only into Kustomizations the cluster has.
    for name in ["root", "nested", "loop", "b"] {
        let doc: Value = serde_saphyr::from_str(&kustomization_yaml(name, "./", "fleet")).unwrap();
        env.create_kustomization(doc).await;
    }
    let before_cluster = cluster_state(&env.client).await;
    let before_tree = snapshot(root);
    let dir = |d: &str| root.join(d).to_str().unwrap().to_string();
    let source = |p: &str| format!("GitRepository/flux-system/fleet={p}");
    let repo_root = root.to_str().unwrap().to_string();

    let cases: Vec<(Vec<String>, String)> = vec![
        (
            vec![dir("clusters/dev"), "--local-sources".into(), "GitRepository/flux-system/fleet".into()],
            "invalid --local-sources entry \"GitRepository/flux-system/fleet\": no '='; expected Kind/namespace/name=path, e.g. GitRepository/flux-system/flux-system=./".into(),
        ),
        (
            vec![dir("clusters/dev"), "--local-sources".into(), format!("fleet={repo_root}")],
            format!("invalid --local-sources entry \"fleet={repo_root}\": the source must be Kind/namespace/name"),
        ),
        (
            vec![dir("clusters/dev"), "--local-sources".into(), source(&dir("nowhere"))],
            format!("invalid --local-sources entry \"{}\": \"{}\" is not a directory", source(&dir("nowhere")), dir("nowhere")),
        ),
        (
            vec![dir("clusters/dev")],
            "cannot get local path for GitRepository/flux-system/fleet of kustomization nested: it is not in --local-sources and GitRepository flux-system/fleet is not in the cluster; pass its local directory with --local-sources GitRepository/flux-system/fleet=DIR".into(),
        ),
        (
            vec![dir("clusters/loop"), "--local-sources".into(), source(&repo_root)],
            "Kustomization cycle, not built again: Kustomization/flux-system/root → Kustomization/flux-system/loop (Kustomization/flux-system/loop builds the same directory as Kustomization/flux-system/root)".into(),
        ),
        (
            vec![dir("clusters/a"), "--local-sources".into(), source(&repo_root)],
            "Kustomization cycle, not built again: Kustomization/flux-system/root → Kustomization/flux-system/b → Kustomization/flux-system/root".into(),
        ),
    ];
    for (extra, message) in &cases {
        for (command, exit) in [("build", 1), ("diff", 2)] {
            let mut args = vec![command, "ks", "root", "--recursive", "--path"];
            args.extend(extra.iter().map(String::as_str));
            let (code, stdout, stderr) = env.ferroflux(&args).await;
            assert_eq!(code, exit, "{args:?}: {stdout}{stderr}");
            assert!(stderr.contains(message), "{args:?}: {stderr}");
            assert!(stderr.starts_with("✗ "), "{args:?}: {stderr}");
            if command == "build" {
                assert!(stdout.is_empty(), "{args:?}: {stdout}");
            }
        }
    }
    // The source is in the cluster but its artifact cannot be read: not fetched yet, then
    // served at an address nothing answers (as an in-cluster address is, seen from here).
    let repos: Api<ferroflux_api::GitRepository> =
        Api::namespaced(env.client.clone(), "flux-system");
    let repo_obj = serde_json::from_value(json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
        "metadata": {"name": "fleet", "namespace": "flux-system"},
        "spec": {"interval": "1h", "url": "https://example.invalid/fleet.git"},
    }))
    .unwrap();
    repos
        .create(&PostParams::default(), &repo_obj)
        .await
        .unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/fleet.tar.gz", closed.local_addr().unwrap());
    drop(closed);
    let unreadable = [
        (
            None,
            "GitRepository flux-system/fleet has no artifact yet".to_string(),
        ),
        (
            Some(
                json!({"artifact": {"digest": "sha256:00", "lastUpdateTime": "2026-01-01T00:00:00Z",
                "path": "gitrepository/flux-system/fleet/x.tar.gz", "revision": "main@sha1:x",
                "url": url}}),
            ),
            format!("its artifact cannot be read: failed to download artifact from {url}"),
        ),
    ];
    for (status, why) in unreadable {
        if let Some(status) = status {
            repos
                .patch_status(
                    "fleet",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"status": status})),
                )
                .await
                .unwrap();
        }
        for (command, exit) in [("build", 1), ("diff", 2)] {
            let args = [
                command,
                "ks",
                "root",
                "--recursive",
                "--path",
                &dir("clusters/dev"),
            ];
            let (code, stdout, stderr) = env.ferroflux(&args).await;
            assert_eq!(code, exit, "{args:?}: {stdout}{stderr}");
            assert!(
                stderr.contains("cannot get local path for GitRepository/flux-system/fleet of kustomization nested: it is not in --local-sources and ")
                    && stderr.contains(&why)
                    && stderr.contains("; pass its local directory with --local-sources GitRepository/flux-system/fleet=DIR"),
                "{args:?}: {stderr}"
            );
        }
    }

    // A --dry-run build has no cluster to read an artifact from.
    write(
        root,
        "root.yaml",
        &kustomization_yaml("root", "./clusters/dev", "fleet"),
    );
    let (code, stdout, stderr) = env
        .ferroflux(&[
            "build",
            "ks",
            "root",
            "--dry-run",
            "--recursive",
            "--kustomization-file",
            &dir("root.yaml"),
            "--path",
            &dir("clusters/dev"),
        ])
        .await;
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(
        stderr.contains("cannot get local path for GitRepository/flux-system/fleet of kustomization nested: it is not in --local-sources, and a --dry-run build does not read the cluster's artifacts"),
        "{stderr}"
    );
    std::fs::remove_file(root.join("root.yaml")).unwrap();

    assert_eq!(
        cluster_state(&env.client).await,
        before_cluster,
        "the cluster changed"
    );
    assert_eq!(snapshot(root), before_tree, "the local tree was modified");
}

const FLEET_INFRA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/fleet-infra");

/// What `bootstrap` writes in `clusters/staging/flux-system` (less the controllers' own
/// manifests, which run in this process here), following the repository at `url`.
fn gotk_sync(url: &str) -> String {
    format!(
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 1h\n  ref:\n    branch: main\n  url: {url}\n---\n{}",
        kustomization_yaml("flux-system", "./clusters/staging", "flux-system")
    )
}

/// The documents of a build's output as `(owner Kustomization, Kind/namespace/name)`.
fn owned_ids(docs: &[Value]) -> Vec<(String, String)> {
    docs.iter()
        .map(|d| {
            let meta = &d["metadata"];
            let owner = meta["labels"]["kustomize.toolkit.fluxcd.io/name"]
                .as_str()
                .unwrap_or("")
                .to_string();
            let id = format!(
                "{}/{}/{}",
                d["kind"].as_str().unwrap(),
                meta["namespace"].as_str().unwrap_or(""),
                meta["name"].as_str().unwrap()
            );
            (owner, id)
        })
        .collect()
}

/// The fleet-infra layout on a cluster the real controllers reconciled: `flux-system` applies
/// `clusters/staging`, which holds the `infrastructure` and `apps` Kustomizations. A recursive
/// build prints the objects of all three levels; a recursive diff finds nothing to change
/// until `apps/` is edited locally, then shows the change under `apps`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recursive_build_and_diff_of_a_fleet_repository() {
    let env = start("recursive-fleet").await;
    let repo = crate::repo::Repo::empty();
    ferroflux_testkit::git(repo.root.path(), &["clone", "-q", "fleet.git", "work"]);
    let work = repo.work();
    copy_dir(Path::new(FLEET_INFRA), &work);
    write(
        &work,
        "clusters/staging/flux-system/gotk-sync.yaml",
        &gotk_sync(&repo.url()),
    );
    write(
        &work,
        "clusters/staging/flux-system/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- gotk-sync.yaml\n",
    );
    // A Secret in the nested level, to see it masked there too.
    // The chart version each environment pins (examples/fleet-infra's overlays do the same).
    let apps_staging = |tag: &str, password: &str| {
        format!(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../base\npatches:\n  - target:\n      kind: HelmRelease\n      name: podinfo\n    patch: |\n      - op: replace\n        path: /spec/chart/spec/chart\n        value: ./charts/podinfo/{tag}\nsecretGenerator:\n  - name: db\n    namespace: podinfo\n    options:\n      disableNameSuffixHash: true\n    literals:\n      - password={password}\n"
        )
    };
    write(
        &work,
        "apps/staging/kustomization.yaml",
        &apps_staging("6.7.1", "hunter2"),
    );
    let head = repo.commit_and_push("fleet");
    let revision = format!("main@sha1:{head}");

    // The controllers reconcile what bootstrap would have applied.
    let storage = tempfile::tempdir().unwrap();
    let config = env._cluster.kube_config().await.unwrap();
    let manager = Manager::start(
        env.client.clone(),
        config,
        ManagerConfig::local(storage.path()),
    )
    .await
    .unwrap();
    let sync: Vec<Value> = serde_saphyr::from_multiple(&gotk_sync(&repo.url())).unwrap();
    let applier = Applier::new(env.client.clone(), "kustomize-controller");
    applier
        .apply_staged(sync, &ApplyOptions::default())
        .await
        .unwrap();
    let kss: Api<Kustomization> = Api::namespaced(env.client.clone(), "flux-system");
    for name in ["flux-system", "infrastructure", "apps"] {
        let applied = |k: Option<&Kustomization>| {
            k.and_then(|k| k.status.as_ref())
                .and_then(|s| s.last_applied_revision.as_deref())
                == Some(revision.as_str())
        };
        kube::runtime::wait::await_condition(kss.clone(), name, applied)
            .await
            .unwrap();
    }

    let path = work.join("clusters/staging");
    let path = path.to_str().unwrap();
    let sources = format!("GitRepository/flux-system/flux-system={}", work.display());
    let before_tree = snapshot(&work);
    let (code, stdout, stderr) = env
        .ferroflux(&[
            "build",
            "ks",
            "flux-system",
            "--path",
            path,
            "--recursive",
            "--local-sources",
            &sources,
        ])
        .await;
    assert_eq!(code, 0, "{stderr}");
    let docs: Vec<Value> = serde_saphyr::from_multiple(&stdout).unwrap();
    let ids = owned_ids(&docs);
    // The parent's objects, then each nested Kustomization's, in the order the parent lists them.
    let nested_order: Vec<String> = ids
        .iter()
        .filter(|(owner, id)| {
            owner == "flux-system"
                && id.starts_with("Kustomization/")
                && id != "Kustomization/flux-system/flux-system"
        })
        .map(|(_, id)| id.rsplit('/').next().unwrap().to_string())
        .collect();
    let mut owners: Vec<String> = ids.iter().map(|(o, _)| o.clone()).collect();
    owners.dedup();
    let mut expected_owners = vec!["flux-system".to_string()];
    expected_owners.extend(nested_order.iter().cloned());
    assert_eq!(owners, expected_owners, "{stdout}");
    let of = |owner: &str| -> Vec<String> {
        let mut v: Vec<String> = ids
            .iter()
            .filter(|(o, _)| o == owner)
            .map(|(_, id)| id.clone())
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        of("flux-system"),
        [
            "Alert/flux-system/fleet",
            "GitRepository/flux-system/flux-system",
            "Kustomization/flux-system/apps",
            "Kustomization/flux-system/flux-system",
            "Kustomization/flux-system/infrastructure",
            "Provider/flux-system/chat",
        ]
    );
    assert_eq!(
        of("infrastructure"),
        [
            "CustomResourceDefinition//certificates.certs.example.com",
            "Deployment/ingress-nginx/ingress-nginx-controller",
            "Namespace//ingress-nginx",
            "Service/ingress-nginx/ingress-nginx-controller",
        ]
    );
    assert_eq!(
        of("apps"),
        [
            "Certificate/podinfo/podinfo-tls",
            "HelmRelease/podinfo/podinfo",
            "Namespace//podinfo",
            "Secret/podinfo/db",
        ]
    );
    let db = docs.iter().find(|d| d["kind"] == "Secret").unwrap();
    assert_eq!(db["data"]["password"], "KipTT1BTKio=");
    assert!(!stdout.contains("hunter2") && !stdout.contains("aHVudGVyMg"));
    // Built with the nested Kustomization's own spec: its chart pin and substitutions.
    let podinfo = docs
        .iter()
        .find(|d| d["kind"] == "HelmRelease" && d["metadata"]["name"] == "podinfo")
        .unwrap();
    assert_eq!(
        podinfo["spec"]["chart"]["spec"]["chart"],
        "./charts/podinfo/6.7.1"
    );
    assert_eq!(podinfo["spec"]["values"]["message"], "Hello from staging");
    assert_eq!(snapshot(&work), before_tree, "the local tree was modified");

    // Without --local-sources the nested Kustomizations are built from the artifact the
    // cluster's source controller serves: the same objects.
    let (code, from_artifact, stderr) = env
        .ferroflux(&["build", "ks", "flux-system", "--path", path, "--recursive"])
        .await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(from_artifact, stdout);
    assert!(
        stderr.contains(&format!("► building Kustomizations of GitRepository/flux-system/flux-system from the cluster's artifact {revision} (not in --local-sources)")),
        "{stderr}"
    );

    // The cluster holds what Git says: nothing to change, at any level.
    let diff = [
        "diff",
        "ks",
        "flux-system",
        "--path",
        path,
        "--recursive",
        "--local-sources",
        &sources,
    ];
    let (code, stdout, stderr) = env.ferroflux(&diff).await;
    assert_eq!((code, stdout.as_str()), (0, ""), "{stderr}");

    // A local edit in apps/: a new chart version, a new password and the Certificate gone.
    write(
        &work,
        "apps/staging/kustomization.yaml",
        &apps_staging("6.8.0", "correct-horse"),
    );
    let base = std::fs::read_to_string(work.join("apps/base/kustomization.yaml")).unwrap();
    write(
        &work,
        "apps/base/kustomization.yaml",
        &base.replace("  - certificate.yaml\n", ""),
    );
    let (code, stdout, stderr) = env.ferroflux(&diff).await;
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert_eq!(
        stdout,
        "\
📁 Kustomization/flux-system/apps changed
► HelmRelease/podinfo/podinfo drifted

spec.chart.spec.chart
± value change
- ./charts/podinfo/6.7.1
+ ./charts/podinfo/6.8.0

► Secret/podinfo/db drifted

data.password
± value change
- *** (before)
+ *** (after)

► Certificate/podinfo/podinfo-tls deleted
"
    );
    for secret in [
        "hunter2",
        "aHVudGVyMg",
        "correct-horse",
        "Y29ycmVjdC1ob3JzZ",
    ] {
        assert!(
            !stdout.contains(secret) && !stderr.contains(secret),
            "{secret} leaked"
        );
    }
    assert!(
        stderr.contains("identified at least one change, exiting with non-zero exit code"),
        "{stderr}"
    );
    // Nothing was applied or deleted.
    let releases: Api<ferroflux_api::HelmRelease> = Api::namespaced(env.client.clone(), "podinfo");
    let live = releases.get("podinfo").await.unwrap();
    assert_eq!(
        live.spec.chart.unwrap().spec.chart,
        "./charts/podinfo/6.7.1"
    );
    let certificate = kube::api::ApiResource {
        group: "certs.example.com".into(),
        version: "v1".into(),
        api_version: "certs.example.com/v1".into(),
        kind: "Certificate".into(),
        plural: "certificates".into(),
    };
    let certificates: Api<kube::api::DynamicObject> =
        Api::namespaced_with(env.client.clone(), "podinfo", &certificate);
    assert!(certificates.get_opt("podinfo-tls").await.unwrap().is_some());

    // Read from the cluster's artifact instead, apps/ is what Git holds: nothing changes.
    let (code, stdout, stderr) = env
        .ferroflux(&["diff", "ks", "flux-system", "--path", path, "--recursive"])
        .await;
    assert_eq!((code, stdout.as_str()), (0, ""), "{stderr}");

    manager.shutdown().await.unwrap();
}
