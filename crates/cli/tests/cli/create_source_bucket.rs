//! `ferroflux create source bucket` and the day-2 commands on Buckets against the real
//! controllers (the `Manager` in this process) and a real S3 server (s3s-fs, checking SigV4):
//! the keys become Secret `bucket-NAME`, the command waits for the revision, a Kustomization
//! from the Bucket applies, a changed object moves the revision; `get`, `export`,
//! `suspend`/`resume`, `reconcile`, `delete`; wrong keys and an unknown bucket as the user sees
//! them; flux's messages for bad flags.

use crate::run::{cells, ferroflux, runtime, stderr, stdout};
use ferroflux_api::Bucket;
use ferroflux_controller::manager::{Manager, ManagerConfig};
use ferroflux_testkit::{S3Server, eventually, flux_cluster, kubeconfig};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::Api;

fn config_map(version: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-bucket\n  namespace: default\ndata:\n  version: \"{version}\"\n"
    )
}

#[test]
fn bad_flags_give_flux_messages() {
    let dir = tempfile::tempdir().unwrap();
    let kc = dir.path().join("none");
    for (args, message) in [
        (
            vec!["create", "source", "bucket", "b", "--endpoint", "e"],
            "bucket-name is required",
        ),
        (
            vec!["create", "source", "bucket", "b", "--bucket-name", "b"],
            "endpoint is required",
        ),
        (
            vec![
                "create",
                "source",
                "bucket",
                "b",
                "--bucket-name",
                "b",
                "--endpoint",
                "e",
                "--provider",
                "minio",
            ],
            "source bucket provider 'minio' is not supported, must be one of: generic, aws, azure, gcp",
        ),
    ] {
        let out = ferroflux(&kc, &args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(stderr(&out), format!("✗ {message}\n"), "{args:?}");
    }
}

#[test]
fn creates_follows_and_manages_a_bucket() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let storage = tempfile::tempdir().unwrap();
    let s3 = S3Server::start();
    s3.create_bucket("fleet");
    s3.put("fleet", "apps/configmap.yaml", config_map("1"));
    let (cl, c, _manager) = rt.block_on(async {
        let (cl, c) = flux_cluster("buckets").await;
        let config = cl.kube_config().await.unwrap();
        let manager = Manager::start(c.clone(), config, ManagerConfig::local(storage.path()))
            .await
            .unwrap();
        (cl, c, manager)
    });
    let kc = kubeconfig(dir.path(), &[&cl]);
    let endpoint = s3.endpoint();

    let out = ferroflux(
        &kc,
        &[
            "create",
            "source",
            "bucket",
            "fleet",
            "--bucket-name",
            "fleet",
            "--endpoint",
            &endpoint,
            "--insecure",
            "--access-key",
            &s3.access_key,
            "--secret-key",
            &s3.secret_key,
            "--interval",
            "10m",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let buckets: Api<Bucket> = Api::namespaced(c.clone(), "flux-system");
    let fleet = rt.block_on(buckets.get("fleet")).unwrap();
    let first = fleet.status.unwrap().artifact.unwrap().revision;
    assert_eq!(
        stderr(&out),
        format!(
            "✚ generating Bucket source\n► applying secret with the bucket credentials\n\
             ✔ authentication configured\n► applying Bucket source\n✔ Bucket source created\n\
             ◎ waiting for Bucket source reconciliation\n\
             ✔ Bucket source reconciliation completed\n✔ fetched revision: {first}\n"
        )
    );
    assert_eq!(fleet.spec.secret_ref.unwrap().name, "bucket-fleet");
    let secrets: Api<Secret> = Api::namespaced(c.clone(), "flux-system");
    let secret = rt.block_on(secrets.get("bucket-fleet")).unwrap();
    assert_eq!(
        secret.data.unwrap()["accesskey"].0,
        s3.access_key.as_bytes()
    );

    // A Kustomization from the Bucket applies what it holds.
    let out = ferroflux(
        &kc,
        &[
            "create",
            "kustomization",
            "fleet",
            "--source",
            "Bucket/fleet",
            "--path",
            "./apps",
            "--prune",
            "--interval",
            "10m",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("applied revision {first}")),
        "{}",
        stderr(&out)
    );
    let cms: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
    let version = |cms: &Api<ConfigMap>| {
        rt.block_on(cms.get("from-bucket")).unwrap().data.unwrap()["version"].clone()
    };
    assert_eq!(version(&cms), "1");

    // `get sources bucket` and `get sources all` show it.
    let out = ferroflux(&kc, &["get", "sources", "bucket"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rows = cells(&stdout(&out));
    assert_eq!(
        rows[0],
        ["NAME", "REVISION", "SUSPENDED", "READY", "MESSAGE"]
    );
    assert_eq!(rows[1][0], "fleet");
    assert!(rows[1][1].starts_with("sha256:"), "{rows:?}");
    assert_eq!(rows[1][2..4], ["False", "True"]);
    assert!(
        rows[1][4].starts_with("stored artifact: revision 'sha256:"),
        "{rows:?}"
    );
    let all = cells(&stdout(&ferroflux(&kc, &["get", "sources", "all"])));
    assert!(all.iter().any(|r| r[0] == "bucket/fleet"), "{all:?}");

    // An object changes; `reconcile source bucket` fetches it at once.
    s3.put("fleet", "apps/configmap.yaml", config_map("2"));
    let out = ferroflux(&kc, &["reconcile", "source", "bucket", "fleet"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let second = rt
        .block_on(buckets.get("fleet"))
        .unwrap()
        .status
        .unwrap()
        .artifact
        .unwrap()
        .revision;
    assert_ne!(second, first);
    assert!(
        stderr(&out).contains(&format!("fetched revision {second}")),
        "{}",
        stderr(&out)
    );
    rt.block_on(eventually("the change applied", || async {
        let cm = cms.get("from-bucket").await.ok()?;
        (cm.data?["version"] == "2").then_some(())
    }));

    // Suspend and resume.
    let out = ferroflux(&kc, &["suspend", "source", "bucket", "fleet"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(rt.block_on(buckets.get("fleet")).unwrap().spec.suspend == Some(true));
    let out = ferroflux(&kc, &["resume", "source", "bucket", "fleet"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(rt.block_on(buckets.get("fleet")).unwrap().spec.suspend != Some(true));

    // Export: the object as committed back to Git.
    let out = ferroflux(&kc, &["export", "source", "bucket", "fleet"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let requested = rt
        .block_on(buckets.get("fleet"))
        .unwrap()
        .metadata
        .annotations
        .unwrap()["reconcile.fluxcd.io/requestedAt"]
        .clone();
    assert_eq!(
        stdout(&out),
        format!(
            "---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: Bucket\nmetadata:\n  annotations:\n    reconcile.fluxcd.io/requestedAt: \"{requested}\"\n  name: fleet\n  namespace: flux-system\nspec:\n  bucketName: fleet\n  endpoint: {endpoint}\n  insecure: true\n  interval: 10m0s\n  provider: generic\n  secretRef:\n    name: bucket-fleet\n  timeout: 1m0s\n"
        )
    );

    // Wrong keys (a new source; its Secret `bucket-bad`): the command fails with the
    // controller's message, and the Kustomization from `fleet` keeps what it applied.
    let out = ferroflux(
        &kc,
        &[
            "create",
            "source",
            "bucket",
            "bad",
            "--bucket-name",
            "fleet",
            "--endpoint",
            &endpoint,
            "--insecure",
            "--access-key",
            &s3.access_key,
            "--secret-key",
            "wrong-secret",
            "--interval",
            "10m",
            "--timeout",
            "20s",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("failed to confirm existence of 'fleet' bucket: Access Denied."),
        "{}",
        stderr(&out)
    );
    let bad = rt.block_on(buckets.get("bad")).unwrap();
    assert!(bad.status.unwrap().artifact.is_none());
    assert_eq!(version(&cms), "2");
    let kept = rt.block_on(buckets.get("fleet")).unwrap();
    assert_eq!(kept.status.unwrap().artifact.unwrap().revision, second);

    // An unknown bucket.
    let out = ferroflux(
        &kc,
        &[
            "create",
            "source",
            "bucket",
            "other",
            "--bucket-name",
            "nope",
            "--endpoint",
            &endpoint,
            "--insecure",
            "--secret-ref",
            "bucket-fleet",
            "--timeout",
            "20s",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("bucket 'nope' not found"),
        "{}",
        stderr(&out)
    );

    // Delete: refused without an answer, done with --silent.
    let out = ferroflux(&kc, &["delete", "source", "bucket", "other", "--silent"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "► deleting source bucket other in flux-system namespace\n✔ source bucket deleted\n"
    );
    rt.block_on(eventually("bucket other gone", || async {
        buckets.get_opt("other").await.ok()?.is_none().then_some(())
    }));
}
