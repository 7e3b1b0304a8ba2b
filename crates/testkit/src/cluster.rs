//! Local clusters for tests: a devcluster serving Flux's CRDs with the `flux-system` namespace,
//! kubeconfig files naming clusters, and the real `kubectl` pointed at them.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use ferroflux_api::Kustomization;
use ferroflux_devcluster::{Config, DevCluster, RunningCluster};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, GroupVersionKind, ListParams, PostParams};
use kube::discovery::Scope;
use serde_json::{Value, json};

use crate::eventually;

/// An in-memory cluster serving Flux's CRDs, with the `flux-system` namespace; returns once the
/// Kustomization kind is served.
pub async fn flux_cluster(name: &str) -> (RunningCluster, kube::Client) {
    let cluster = DevCluster::start(Config::memory(name)).await.unwrap();
    let client = cluster.client().await.unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in ferroflux_api::crds() {
        crds.create(&PostParams::default(), &crd).await.unwrap();
    }
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns = serde_json::from_value(json!({"metadata": {"name": "flux-system"}})).unwrap();
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    let ks: Api<Kustomization> = Api::namespaced(client.clone(), "flux-system");
    eventually("Kustomization CRD served", || async {
        ks.list(&ListParams::default()).await.ok()
    })
    .await;
    (cluster, client)
}

/// Creates the object `object` describes (any kind the cluster serves, found by discovery; in its
/// `metadata.namespace` when the kind is namespaced) and returns it as the API server stored it:
/// the set-up step most cluster tests repeat. Panics with the API's answer.
pub async fn create(client: &kube::Client, object: Value) -> DynamicObject {
    let api_version = object["apiVersion"].as_str().unwrap_or("v1").to_string();
    let (group, version) = api_version.split_once('/').unwrap_or(("", &api_version));
    let kind = object["kind"]
        .as_str()
        .unwrap_or_else(|| panic!("no kind in {object}"))
        .to_string();
    let gvk = GroupVersionKind::gvk(group, version, &kind);
    let (resource, capabilities) = kube::discovery::pinned_kind(client, &gvk)
        .await
        .unwrap_or_else(|e| panic!("the cluster does not serve {api_version} {kind}: {e}"));
    let api: Api<DynamicObject> = match capabilities.scope {
        Scope::Namespaced => {
            let namespace = object["metadata"]["namespace"]
                .as_str()
                .unwrap_or_else(|| panic!("no metadata.namespace in {object}"));
            Api::namespaced_with(client.clone(), namespace, &resource)
        }
        Scope::Cluster => Api::all_with(client.clone(), &resource),
    };
    let typed: DynamicObject = serde_json::from_value(object).unwrap();
    api.create(&PostParams::default(), &typed)
        .await
        .unwrap_or_else(|e| panic!("creating {kind}: {e}"))
}

/// Writes `<dir>/kubeconfig` naming `clusters` (one context each, named after the cluster) and
/// returns its path.
pub fn kubeconfig(dir: &Path, clusters: &[&RunningCluster]) -> PathBuf {
    let path = dir.join("kubeconfig");
    ferroflux_devcluster::write_kubeconfig(&path, clusters, None).unwrap();
    path
}

/// A local cluster and a kubeconfig file naming it, its current context.
pub struct Cluster {
    /// The running devcluster.
    pub cluster: RunningCluster,
    /// A kubeconfig file whose current context is this cluster (kept until `Cluster` drops).
    pub kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
}

impl Cluster {
    /// An in-memory cluster named `name` (no CRDs; see [`flux_cluster`] for those).
    pub async fn start(name: &str) -> Self {
        let cluster = DevCluster::start(Config::memory(name)).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        ferroflux_devcluster::write_kubeconfig(&kubeconfig, &[&cluster], Some(name)).unwrap();
        Cluster {
            cluster,
            kubeconfig,
            _dir: dir,
        }
    }

    /// A kube client of this cluster's admin.
    pub async fn client(&self) -> kube::Client {
        self.cluster.client().await.unwrap()
    }

    /// Runs `kubectl args` against this cluster.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        Kubectl::at(&self.kubeconfig).run(args, "")
    }
}

/// The real `kubectl` with a kubeconfig and a discovery cache of its own (so tests running side
/// by side never share a cache).
pub struct Kubectl {
    kubeconfig: PathBuf,
    cache: PathBuf,
    _dir: Option<tempfile::TempDir>,
}

impl Kubectl {
    /// kubectl for `clusters`, through a kubeconfig naming them (the first is the current
    /// context).
    pub fn new(clusters: &[&RunningCluster]) -> Kubectl {
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = kubeconfig(dir.path(), clusters);
        Kubectl {
            kubeconfig,
            cache: dir.path().join("cache"),
            _dir: Some(dir),
        }
    }

    /// kubectl for an existing kubeconfig file; its cache sits beside it.
    pub fn at(kubeconfig: &Path) -> Kubectl {
        Kubectl {
            kubeconfig: kubeconfig.to_path_buf(),
            cache: kubeconfig.with_file_name("kubectl-cache"),
            _dir: None,
        }
    }

    /// The kubeconfig file it uses.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// The command, for tests that stream its output or send it signals.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new("kubectl");
        c.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(&self.cache)
            .args(args);
        c
    }

    /// Runs with `stdin` as its input (the file `-`; empty when not read).
    pub fn run(&self, args: &[&str], stdin: &str) -> Output {
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kubectl runs");
        let mut input = child.stdin.take().unwrap();
        // kubectl may exit without reading its input; that is its answer, not a test failure.
        input.write_all(stdin.as_bytes()).ok();
        drop(input);
        child.wait_with_output().unwrap()
    }

    /// Runs expecting success; returns stdout.
    pub fn ok(&self, args: &[&str], stdin: &str) -> String {
        let o = self.run(args, stdin);
        assert!(
            o.status.success(),
            "kubectl {args:?} failed: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stdout).unwrap()
    }

    /// Runs expecting failure; returns stderr.
    pub fn fails(&self, args: &[&str], stdin: &str) -> String {
        let o = self.run(args, stdin);
        assert!(
            !o.status.success(),
            "kubectl {args:?} should fail: {}",
            String::from_utf8_lossy(&o.stdout)
        );
        String::from_utf8(o.stderr).unwrap()
    }

    /// `kubectl args -o json`, parsed.
    pub fn json(&self, args: &[&str]) -> Value {
        let mut a = args.to_vec();
        a.extend(["-o", "json"]);
        serde_json::from_str(&self.ok(&a, "")).unwrap()
    }
}
