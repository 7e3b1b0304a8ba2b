//! `ferroflux create tenant`: `--export` against flux's goldens (`fixtures/goldens/create_tenant/`,
//! flux's command lines), flux's messages for bad names, and the apply path on a devcluster read
//! back with kubectl (a changed cluster role replaces the RoleBinding).

use crate::run::{ferroflux, runtime, stderr, stdout};
use std::path::Path;
use std::process::Command;

fn golden(file: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/goldens/create_tenant")
            .join(file),
    )
    .unwrap()
}

fn create(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args(["create", "tenant"])
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn exports_match_flux_goldens() {
    let base = ["dev-team", "--with-namespace=apps"];
    for (file, extra) in [
        ("tenant-basic.yaml", vec!["--cluster-role=cluster-admin"]),
        (
            "tenant-with-service-account.yaml",
            vec![
                "--cluster-role=cluster-admin",
                "--with-service-account=flux-tenant",
            ],
        ),
        (
            "tenant-with-cluster-role.yaml",
            vec!["--cluster-role=custom-role"],
        ),
        (
            "tenant-with-skip-namespace.yaml",
            vec!["--cluster-role=cluster-admin", "--skip-namespace"],
        ),
    ] {
        let mut args: Vec<&str> = base.to_vec();
        args.extend(extra);
        args.push("--export");
        let out = create(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(stdout(&out), golden(file), "{file}");
    }
}

#[test]
fn bad_input_gets_flux_messages() {
    for (args, message) in [
        (vec![], "name is required".to_string()),
        (vec!["dev-team", "--cluster-role=cluster-admin"], "with-namespace is required".into()),
        (
            vec!["dev-team", "--with-namespace=apps_", "--export"],
            "invalid namespace 'apps_': [name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')]".into(),
        ),
        (
            vec!["dev-team", "--with-namespace=apps", "--cluster-role="],
            "cluster-role is required".into(),
        ),
    ] {
        let out = create(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(stderr(&out), format!("✗ {message}\n"), "{args:?}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn applies_the_tenant_and_replaces_a_changed_role_binding() {
    let rt = runtime();
    let cluster = rt.block_on(ferroflux_testkit::Cluster::start("tenants"));
    let kc = &cluster.kubeconfig;
    let out = ferroflux(
        kc,
        &["create", "tenant", "dev-team", "--with-namespace=apps,web"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "► applying namespace apps\n► applying service account dev-team\n\
         ► applying role binding dev-team-reconciler\n► applying namespace web\n\
         ► applying service account dev-team\n► applying role binding dev-team-reconciler\n\
         ✔ tenant setup completed\n"
    );
    let json = |args: &[&str]| -> serde_json::Value {
        let out = cluster.kubectl(args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    for ns in ["apps", "web"] {
        let n = json(&["get", "namespace", ns, "-o", "json"]);
        assert_eq!(
            n["metadata"]["labels"]["toolkit.fluxcd.io/tenant"],
            "dev-team"
        );
        let rb = json(&[
            "get",
            "rolebinding",
            "dev-team-reconciler",
            "-n",
            ns,
            "-o",
            "json",
        ]);
        assert_eq!(rb["roleRef"]["name"], "cluster-admin");
        assert_eq!(rb["subjects"][0]["name"], format!("gotk:{ns}:reconciler"));
    }
    let first = json(&[
        "get",
        "rolebinding",
        "dev-team-reconciler",
        "-n",
        "apps",
        "-o",
        "json",
    ]);
    // Another cluster role: roleRef cannot change, so the binding is made again.
    let out = ferroflux(
        kc,
        &[
            "create",
            "tenant",
            "dev-team",
            "--with-namespace=apps",
            "--cluster-role=view",
            "--skip-namespace",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let second = json(&[
        "get",
        "rolebinding",
        "dev-team-reconciler",
        "-n",
        "apps",
        "-o",
        "json",
    ]);
    assert_eq!(second["roleRef"]["name"], "view");
    assert_ne!(first["metadata"]["uid"], second["metadata"]["uid"]);
}
