//! A Kustomization's status while its pass is under way, as `get kustomizations` shows it: the
//! real controllers (the `Manager`, in this process) on a devcluster follow a `file://` Git
//! repository; a commit whose Deployment is not ready yet keeps the health check waiting, and
//! meanwhile the row says what kustomize-controller says (`Unknown`, "Reconciliation in
//! progress"), not the previous pass's "Applied revision". The devcluster's `ready-after`
//! annotation holds the Deployment back for an hour; the test makes it ready by a new
//! generation, so nothing here depends on timing.

use crate::following::{controllers_following, kustomization};
use crate::repo::Repo;
use crate::run::{cells, ferroflux, runtime, stderr, stdout};
use ferroflux_api::Kustomization;
use ferroflux_testkit::kubeconfig;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use std::time::Duration;

const NAME: &str = "apps";

/// A Deployment of `replicas` the devcluster makes ready at once, or (`held`) an hour after
/// each new generation; its annotation alone is no new generation, hence the replicas.
fn deployment(replicas: u32, held: bool) -> String {
    let annotations = if held {
        "  annotations:\n    devcluster.ferroflux.io/ready-after: 1h\n"
    } else {
        ""
    };
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: default\n\
         {annotations}spec:\n  replicas: {replicas}\n  selector:\n    matchLabels:\n      app: web\n  \
         template:\n    metadata:\n      labels:\n        app: web\n    spec:\n      \
         containers:\n      - name: web\n        image: nginx:1.27\n"
    )
}

fn revision(sha: &str) -> String {
    format!("main@sha1:{sha}")
}

/// A revision as `get` prints it: flux cuts hashes to 8 digits.
fn short(revision: &str) -> String {
    let (name, sha) = revision.split_once("@sha1:").unwrap();
    format!("{name}@sha1:{}", &sha[..8])
}

/// The Kustomization, once `done` accepts it; the bound only stops a broken controller from
/// hanging the test.
async fn until(
    client: &kube::Client,
    what: &str,
    done: impl Fn(&Kustomization) -> bool,
) -> Kustomization {
    let kss: Api<Kustomization> = Api::namespaced(client.clone(), "flux-system");
    for _ in 0..1200 {
        let ks = kss.get(NAME).await.unwrap();
        if done(&ks) {
            return ks;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let status = kss.get(NAME).await.unwrap().status;
    panic!("{NAME}: {what} never came: {status:#?}");
}

fn condition(ks: &Kustomization, type_: &str) -> Option<(String, String, String)> {
    let conditions = ks.status.as_ref()?.conditions.as_ref()?;
    let c = conditions.iter().find(|c| c.type_ == type_)?;
    Some((c.status.clone(), c.reason.clone(), c.message.clone()))
}

fn last_applied(ks: &Kustomization) -> Option<&str> {
    ks.status.as_ref()?.last_applied_revision.as_deref()
}

/// `get kustomizations`' row for `NAME`: name, revision, suspended, ready, message.
fn row(kc: &std::path::Path) -> Vec<String> {
    let out = ferroflux(kc, &["get", "kustomizations"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rows = cells(&stdout(&out));
    assert_eq!(
        rows[0],
        ["NAME", "REVISION", "SUSPENDED", "READY", "MESSAGE"],
        "{rows:?}"
    );
    rows.into_iter()
        .find(|r| r[0] == NAME)
        .unwrap_or_else(|| panic!("no row for {NAME}: {}", stdout(&out)))
}

#[test]
fn get_shows_the_pass_in_progress_while_health_checks_wait() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let storage = tempfile::tempdir().unwrap();
    let repo = Repo::with_files(&[("apps/web.yaml", &deployment(1, false))]);
    let first = revision(&repo.head().unwrap());
    let (cl, c, manager) = rt.block_on(async {
        let (cl, c, manager) = controllers_following("progress", NAME, &repo, storage.path()).await;
        let extra = json!({"timeout": "1h", "wait": true});
        kustomization(&c, NAME, NAME, "./apps", extra).await;
        (cl, c, manager)
    });
    let kc = kubeconfig(dir.path(), &[&cl]);
    let ks = rt.block_on(until(&c, "the first apply", |ks| {
        last_applied(ks) == Some(first.as_str())
            && condition(ks, "Ready").is_some_and(|r| r.0 == "True")
    }));
    assert_eq!(condition(&ks, "Reconciling"), None);
    assert_eq!(
        row(&kc),
        [
            NAME,
            &short(&first),
            "False",
            "True",
            &format!("Applied revision: {}", short(&first))
        ]
    );

    // A commit whose Deployment stays unready: the pass applies it and waits.
    repo.write("apps/web.yaml", &deployment(2, true));
    let second = revision(&repo.commit_and_push("held back"));
    let out = ferroflux(
        &kc,
        &["reconcile", "source", "git", NAME, "--timeout", "2m"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let waiting = format!("Running health checks for revision {second} with a timeout of 1h0m0s");
    let ks = rt.block_on(until(&c, "the health check of the second commit", |ks| {
        condition(ks, "Reconciling").is_some_and(|r| r.2 == waiting)
    }));
    assert_eq!(
        condition(&ks, "Ready"),
        Some((
            "Unknown".into(),
            "Progressing".into(),
            "Reconciliation in progress".into()
        ))
    );
    assert_eq!(
        condition(&ks, "Reconciling"),
        Some(("True".into(), "Progressing".into(), waiting.clone()))
    );
    assert_eq!(
        condition(&ks, "Healthy"),
        Some(("Unknown".into(), "Progressing".into(), waiting.clone()))
    );
    let status = ks.status.as_ref().unwrap();
    assert_eq!(status.last_attempted_revision.as_deref(), Some(&*second));
    assert_eq!(status.last_applied_revision.as_deref(), Some(&*first));
    // The row keeps the last applied revision and says the pass is under way.
    assert_eq!(
        row(&kc),
        [
            NAME,
            &short(&first),
            "False",
            "Unknown",
            "Reconciliation in progress"
        ]
    );

    // A new generation without the annotation is ready at once: the pass ends, Ready again.
    rt.block_on(async {
        let deployments: Api<Deployment> = Api::namespaced(c.clone(), "default");
        let patch = json!({
            "metadata": {"annotations": {"devcluster.ferroflux.io/ready-after": null}},
            "spec": {"replicas": 3},
        });
        deployments
            .patch("web", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
    });
    let ks = rt.block_on(until(&c, "the second apply", |ks| {
        last_applied(ks) == Some(second.as_str())
    }));
    assert_eq!(
        condition(&ks, "Ready"),
        Some((
            "True".into(),
            "ReconciliationSucceeded".into(),
            format!("Applied revision: {second}")
        ))
    );
    assert_eq!(condition(&ks, "Reconciling"), None);
    let healthy = condition(&ks, "Healthy").unwrap();
    assert_eq!(
        (healthy.0.as_str(), healthy.1.as_str()),
        ("True", "Succeeded")
    );
    assert!(
        healthy.2.starts_with("Health check passed in "),
        "{healthy:?}"
    );
    assert_eq!(
        row(&kc),
        [
            NAME,
            &short(&second),
            "False",
            "True",
            &format!("Applied revision: {}", short(&second))
        ]
    );
    rt.block_on(async {
        manager.shutdown().await.unwrap();
        cl.shutdown().await;
    });
}
