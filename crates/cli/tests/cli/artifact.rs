//! `push|pull|tag artifact`, `list artifacts`, `build artifact` and `diff artifact` run as a user
//! runs them, against the real registry (Debian's docker-registry) with skopeo reading the
//! result; and their bad input: wrong credentials (401 named, the password never printed), an
//! unknown tag, a URL without `oci://`, the registry down.

use std::process::{Command, Output};

use ferroflux_testkit::{Registry, RegistryOptions};

use crate::run::{cells, stderr, stdout};

fn ff(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args(args)
        // No user's docker config.
        .env("DOCKER_CONFIG", "/nonexistent")
        .output()
        .unwrap()
}

fn tree(dir: &std::path::Path, version: &str) {
    std::fs::create_dir_all(dir.join("apps")).unwrap();
    std::fs::write(
        dir.join("apps/app.yaml"),
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  v: \"{version}\"\n"
        ),
    )
    .unwrap();
    std::fs::write(dir.join("README.md"), "docs\n").unwrap();
}

#[test]
fn push_pull_tag_list_diff_build() {
    let reg = Registry::start(RegistryOptions::default());
    let src = tempfile::tempdir().unwrap();
    tree(src.path(), "1");
    let url = format!("oci://{}/fleet/apps", reg.host());
    let path = src.path().to_str().unwrap();

    let out = ff(&[
        "push",
        "artifact",
        &format!("{url}:v1.0.0"),
        "--path",
        path,
        "--source",
        "https://github.com/example/fleet",
        "--revision",
        "main@sha1:1111",
        "--annotations",
        "team=platform",
        "--ignore-paths",
        "*.md",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.starts_with(&format!(
            "► pushing artifact to {}/fleet/apps:v1.0.0\n",
            reg.host()
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "✔ artifact successfully pushed to {}/fleet/apps@sha256:",
            reg.host()
        )),
        "{err}"
    );

    // skopeo reads what we pushed: Flux's media types and annotations.
    let (ok, raw, e) = reg.skopeo(&[
        "inspect",
        "--tls-verify=false",
        "--raw",
        &format!("docker://{}/fleet/apps:v1.0.0", reg.host()),
    ]);
    assert!(ok, "{e}");
    let m: serde_json::Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(
        m["config"]["mediaType"],
        "application/vnd.cncf.flux.config.v1+json"
    );
    assert_eq!(
        m["layers"][0]["mediaType"],
        "application/vnd.cncf.flux.content.v1.tar+gzip"
    );
    assert_eq!(
        m["annotations"]["org.opencontainers.image.source"],
        "https://github.com/example/fleet"
    );
    assert_eq!(
        m["annotations"]["org.opencontainers.image.revision"],
        "main@sha1:1111"
    );
    assert_eq!(m["annotations"]["team"], "platform");

    // Pull: the tree without what --ignore-paths left out.
    let out_dir = tempfile::tempdir().unwrap();
    let dest = out_dir.path().join("out");
    let out = ff(&[
        "pull",
        "artifact",
        &format!("{url}:v1.0.0"),
        "--output",
        dest.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("✔ source https://github.com/example/fleet\n"),
        "{err}"
    );
    assert!(err.contains("✔ revision main@sha1:1111\n"), "{err}");
    assert!(dest.join("apps/app.yaml").is_file());
    assert!(!dest.join("README.md").exists());

    // Tag, then list (all tags, then a semver filter).
    let out = ff(&[
        "tag",
        "artifact",
        &format!("{url}:v1.0.0"),
        "--tag",
        "production",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains(&format!(
        "✔ artifact tagged as {}/fleet/apps:production",
        reg.host()
    )));
    tree(src.path(), "2");
    let out = ff(&[
        "push",
        "artifact",
        &format!("{url}:v1.1.0"),
        "--path",
        path,
        "--source",
        "https://github.com/example/fleet",
        "--revision",
        "main@sha1:2222",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = ff(&["list", "artifacts", &url]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows = cells(&stdout(&out));
    assert_eq!(rows[0], ["ARTIFACT", "DIGEST", "SOURCE", "REVISION"]);
    let names: Vec<&str> = rows[1..].iter().map(|r| r[0].as_str()).collect();
    let h = reg.host();
    assert_eq!(
        names,
        [
            format!("{h}/fleet/apps:production"),
            format!("{h}/fleet/apps:v1.0.0"),
            format!("{h}/fleet/apps:v1.1.0")
        ]
    );
    assert_eq!(
        rows[1][1], rows[2][1],
        "production and v1.0.0 are one manifest"
    );
    assert_eq!(rows[3][3], "main@sha1:2222");
    let out = ff(&["list", "artifacts", &url, "--filter-semver", ">=1.0.0"]);
    let rows = cells(&stdout(&out));
    let names: Vec<&str> = rows[1..].iter().map(|r| r[0].as_str()).collect();
    assert_eq!(
        names,
        [
            format!("{h}/fleet/apps:v1.1.0"),
            format!("{h}/fleet/apps:v1.0.0")
        ]
    );

    // diff: equal, then a local change (exit 1 with the path); --ignore-paths applies as on push.
    let out = ff(&["diff", "artifact", &format!("{url}:v1.1.0"), "--path", path]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("✔ no changes detected"));
    tree(src.path(), "3");
    let out = ff(&[
        "diff",
        "artifact",
        &format!("{url}:v1.1.0"),
        "--path",
        path,
        "--ignore-paths",
        "*.md",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(stdout(&out), "- README.md\n~ apps/app.yaml\n");

    // build: the same tar.gz push would upload.
    let tgz = out_dir.path().join("a.tgz");
    let out = ff(&[
        "build",
        "artifact",
        "--path",
        path,
        "--output",
        tgz.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let listing = Command::new("tar").arg("-tzf").arg(&tgz).output().unwrap();
    let listing = String::from_utf8_lossy(&listing.stdout).into_owned();
    assert!(
        listing.contains("apps/app.yaml") && listing.contains("README.md"),
        "{listing}"
    );
}

#[test]
fn bad_input() {
    let reg = Registry::start(RegistryOptions {
        basic_auth: Some(("flux".into(), "right-pass".into())),
        ..Default::default()
    });
    let src = tempfile::tempdir().unwrap();
    tree(src.path(), "1");
    let url = format!("oci://{}/private/apps", reg.host());
    let path = src.path().to_str().unwrap();
    let push = |creds: &str, tag: &str| {
        ff(&[
            "push",
            "artifact",
            &format!("{url}:{tag}"),
            "--path",
            path,
            "--source",
            "s",
            "--revision",
            "r",
            "--creds",
            creds,
        ])
    };
    assert!(push("flux:right-pass", "1.0.0").status.success());

    // Wrong credentials: 401 named, the password never printed.
    let out = push("flux:Wr0ng-Pa55", "1.0.1");
    assert_eq!(out.status.code(), Some(1));
    let all = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        all.contains(&format!(
            "✗ 401 Unauthorized: registry {} refused the credentials for private/apps",
            reg.host()
        )),
        "{all}"
    );
    assert!(!all.contains("Wr0ng-Pa55"));

    // An unknown tag names the closest ones.
    let dest = tempfile::tempdir().unwrap();
    let out = ff(&[
        "pull",
        "artifact",
        &format!("{url}:1.0.2"),
        "--output",
        dest.path().to_str().unwrap(),
        "--creds",
        "flux:right-pass",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(&format!(
            "✗ private/apps:1.0.2: not found in {}, closest tags: 1.0.0\n",
            reg.host()
        )),
        "{}",
        stderr(&out)
    );

    // Not an oci:// URL.
    let out = ff(&[
        "pull",
        "artifact",
        "https://example.com/x:1",
        "--output",
        "/tmp/x",
    ]);
    assert!(
        stderr(&out)
            .contains("✗ invalid URL \"https://example.com/x:1\": it must start with oci://"),
        "{}",
        stderr(&out)
    );

    // The registry down: diff's error exit is 2.
    drop(reg);
    let out = ff(&["diff", "artifact", &format!("{url}:1.0.0"), "--path", path]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("✗ cannot reach registry 127.0.0.1:"),
        "{}",
        stderr(&out)
    );
}

/// `get sources oci`, `suspend|resume source oci` and `reconcile source oci` against a
/// devcluster whose OCIRepository controller runs in-process over a real registry.
#[test]
fn source_oci_day2() {
    use ferroflux_api::OCIRepository;
    use kube::api::{Api, PostParams};

    let reg = Registry::start(RegistryOptions::default());
    let src = tempfile::tempdir().unwrap();
    tree(src.path(), "1");
    let url = format!("oci://{}/fleet/apps", reg.host());
    let out = ff(&[
        "push",
        "artifact",
        &format!("{url}:1.0.0"),
        "--path",
        src.path().to_str().unwrap(),
        "--source",
        "s",
        "--revision",
        "main@sha1:1",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));

    let rt = crate::run::runtime();
    let dir = tempfile::tempdir().unwrap();
    let (cl, c) = rt.block_on(ferroflux_testkit::flux_cluster("ocid2"));
    let kc = ferroflux_testkit::kubeconfig(dir.path(), &[&cl]);
    let store = tempfile::tempdir().unwrap();
    let storage = ferroflux_source::Storage::new(store.path(), "http://127.0.0.1:1").unwrap();
    let (_, task) = ferroflux_controller::ocirepository::controller(
        c.clone(),
        ferroflux_controller::ocirepository::Options { storage },
        1,
        std::sync::Arc::new(ferroflux_controller::Metrics::new()),
        Box::pin(std::future::pending()),
    );
    rt.spawn(task);
    let api: Api<OCIRepository> = Api::namespaced(c.clone(), "flux-system");
    let obj: OCIRepository = serde_json::from_value(serde_json::json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "OCIRepository",
        "metadata": {"name": "apps", "namespace": "flux-system"},
        "spec": {"url": url, "interval": "10m", "ref": {"semver": ">=1.0.0"}}
    }))
    .unwrap();
    rt.block_on(api.create(&PostParams::default(), &obj))
        .unwrap();
    let revision = rt.block_on(ferroflux_testkit::eventually("apps ready", || async {
        let o = api.get("apps").await.ok()?;
        o.status?.artifact.map(|a| a.revision)
    }));
    assert!(revision.starts_with("1.0.0@sha256:"), "{revision}");

    let run = |args: &[&str]| crate::run::ferroflux(&kc, args);
    let out = run(&["get", "sources", "oci"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rows = cells(&stdout(&out));
    assert_eq!(
        rows[0],
        ["NAME", "REVISION", "SUSPENDED", "READY", "MESSAGE"]
    );
    assert_eq!(rows[1][0], "apps");
    assert_eq!(rows[1][2..4], ["False", "True"]);
    // The digest cut to 8 digits, as flux shows it.
    let short = &revision[..revision.find("sha256:").unwrap() + "sha256:".len() + 8];
    assert_eq!(rows[1][4], format!("stored artifact for digest '{short}'"));
    let out = run(&["get", "all"]);
    assert!(
        stdout(&out).contains("ocirepository/apps"),
        "{}",
        stdout(&out)
    );

    let out = run(&["suspend", "source", "oci", "apps"]);
    assert_eq!(
        stderr(&out),
        "► suspending source oci apps in flux-system namespace\n✔ source oci suspended\n"
    );
    assert_eq!(
        rt.block_on(api.get("apps")).unwrap().spec.suspend,
        Some(true)
    );
    let out = run(&["reconcile", "source", "oci", "apps"]);
    assert!(
        stderr(&out).contains("resource is suspended"),
        "{}",
        stderr(&out)
    );
    let out = run(&["resume", "source", "oci", "apps"]);
    assert!(out.status.success(), "{}", stderr(&out));

    // A new version: reconcile pulls it now and prints the revision.
    tree(src.path(), "2");
    let out = ff(&[
        "push",
        "artifact",
        &format!("{url}:1.1.0"),
        "--path",
        src.path().to_str().unwrap(),
        "--source",
        "s",
        "--revision",
        "main@sha1:2",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run(&["reconcile", "source", "oci", "apps"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("✔ fetched revision 1.1.0@sha256:"),
        "{}",
        stderr(&out)
    );
}
