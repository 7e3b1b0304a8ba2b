//! flux's image scanning flow (cmd/flux/image_test.go) against ferroflux's image reflector (the
//! ImageRepository and ImagePolicy controllers, in this process) and a real registry (Debian's
//! docker-registry): `create image repository`, `create image policy` (semver with digest
//! reflection; semver with a tag filter), `get image policy`, `suspend`, `resume` and
//! `reconcile image policy`, each compared with flux's golden (`fixtures/goldens/image/`).
//!
//! flux's test scans ghcr.io/stefanprodan/podinfo; this one pushes small artifacts tagged 4.0.6,
//! 5.0.0, 5.0.1, 5.0.2, 5.0.3 and 6.0.0 (and a cosign-style `.sig` tag, which the default
//! exclusion list drops) to `<registry>/stefanprodan/podinfo`. So in the goldens the registry's
//! `host:port` stands for `ghcr.io`, and the digest of the pushed 5.0.3 manifest for flux's
//! digest; nothing else differs. Where the longer host widens a table column, the golden's
//! table is laid out again with flux's rule (each column as wide as its widest cell), which
//! [`relayout`] is checked to reproduce on the golden itself.
//!
//! Bad input, each with the message a user reads in the object's Ready condition: a registry
//! that is unreachable, one that refuses the credentials (and accepts the right ones), a policy
//! naming a missing ImageRepository, an invalid semver range (`create image policy` fails at
//! once with it), and a tag filter that does not compile (at the end of the flow, where the
//! repository has tags: as in Flux, a policy over no tags says so before reading its filter).

use crate::run::{ferroflux, runtime, stderr, stdout};
use ferroflux_api::{ImagePolicy, ImageRepository};
use ferroflux_testkit::{
    Kubectl, Registry, RegistryOptions, closed_port, eventually, flux_cluster, kubeconfig,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::Api;
use std::process::Command;

/// flux's test namespace (`allocateNamespace("tis")`), kept so the goldens need no change.
const NS: &str = "tis-2";
const FLUX_DIGEST: &str = "sha256:8704da90172710d422af855049175c1a8295731cbe2ad3b9a1c1074feecf8c10";

fn golden(file: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/goldens/image/{file}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// A tab-separated table as flux's tabwriter lays it out: every cell padded with spaces to the
/// width of its column's widest cell (the header's last cell one wider, as it ends the line
/// where the rows end in a tab), `f` applied to each cell first.
fn relayout(table: &str, f: impl Fn(&str) -> String) -> String {
    let rows: Vec<Vec<String>> = table
        .lines()
        .map(|l| l.split('\t').map(|c| f(c.trim_end())).collect())
        .collect();
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for (n, row) in rows.iter().enumerate() {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let last = i == row.len() - 1;
                // The empty piece after a row's trailing tab stays empty.
                if c.is_empty() && last {
                    String::new()
                } else {
                    let w = widths[i] + usize::from(n == 0 && last);
                    format!("{c:<w$}")
                }
            })
            .collect();
        out.push_str(&cells.join("\t"));
        out.push('\n');
    }
    out
}

/// Pushes a small artifact as `<host>/stefanprodan/podinfo:<tag>`; returns its digest.
pub(crate) fn push(host: &str, tag: &str) -> String {
    let src = tempfile::tempdir().unwrap();
    std::fs::write(
        src.path().join("deployment.yaml"),
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: podinfo\ndata:\n  v: {tag}\n"),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args([
            "push",
            "artifact",
            &format!("oci://{host}/stefanprodan/podinfo:{tag}"),
            "--path",
        ])
        .arg(src.path())
        .args(["--source", "https://github.com/stefanprodan/podinfo"])
        .args([
            "--revision",
            &format!("{tag}@sha1:67e2c98a60dc92283531412a9e604dd4bae005a9"),
        ])
        .env("DOCKER_CONFIG", "/nonexistent")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // `✔ artifact successfully pushed to HOST/REPO@sha256:<digest>`
    let pushed = stderr(&out);
    let digest = pushed
        .rsplit_once("@sha256:")
        .map(|(_, d)| format!("sha256:{}", d.trim()))
        .unwrap();
    assert_eq!(digest.len(), 71, "{pushed}");
    digest
}

/// Starts the image reflector's two controllers on `client`.
fn start_image_reflector(rt: &tokio::runtime::Runtime, client: &kube::Client) {
    let images = ferroflux_controller::imagerepository::Options::default();
    let metrics = std::sync::Arc::new(ferroflux_controller::Metrics::new());
    let (_, repos) = ferroflux_controller::imagerepository::controller(
        client.clone(),
        images.clone(),
        2,
        metrics.clone(),
        Box::pin(std::future::pending()),
    );
    let (_, policies) = ferroflux_controller::imagepolicy::controller(
        client.clone(),
        images,
        2,
        metrics,
        Box::pin(std::future::pending()),
    );
    rt.spawn(repos);
    rt.spawn(policies);
}

#[test]
fn flux_image_flow_matches_its_goldens() {
    let reg = Registry::start(RegistryOptions::default());
    let host = reg.host();
    let mut digest_503 = String::new();
    for tag in ["4.0.6", "5.0.0", "5.0.1", "5.0.2", "5.0.3", "6.0.0"] {
        let d = push(&host, tag);
        if tag == "5.0.3" {
            digest_503 = d;
        }
    }
    push(
        &host,
        "sha256-8704da90172710d422af855049175c1a8295731cbe2ad3b9a1c1074feecf8c10.sig",
    );

    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (cl, c) = rt.block_on(flux_cluster("image-goldens"));
    let kc = kubeconfig(dir.path(), &[&cl]);
    Kubectl::at(&kc).ok(&["create", "namespace", NS], "");
    start_image_reflector(&rt, &c);

    let run = |args: &[&str]| {
        let mut all = args.to_vec();
        let ns = format!("-n={NS}");
        all.push(&ns);
        ferroflux(&kc, &all)
    };
    let image = format!("--image={host}/stefanprodan/podinfo");
    let ours = |text: &str| {
        text.replace("ghcr.io/stefanprodan", &format!("{host}/stefanprodan"))
            .replace(FLUX_DIGEST, &digest_503)
    };
    // The layout helper reproduces flux's own tables unchanged.
    for file in [
        "get_image_policy_semver.golden",
        "get_image_policy_regex.golden",
    ] {
        assert_eq!(
            relayout(&golden(file), str::to_string),
            golden(file),
            "{file}"
        );
    }
    let cases: [(&[&str], &str); 8] = [
        (
            &[
                "create",
                "image",
                "repository",
                "podinfo",
                &image,
                "--interval=10m",
            ],
            "create_image_repository.golden",
        ),
        (
            &[
                "create",
                "image",
                "policy",
                "podinfo-semver",
                "--image-ref=podinfo",
                "--interval=10m",
                "--reflect-digest=Always",
                "--select-semver=5.0.x",
            ],
            "create_image_policy.golden",
        ),
        (
            &["get", "image", "policy", "podinfo-semver"],
            "get_image_policy_semver.golden",
        ),
        (
            &[
                "create",
                "image",
                "policy",
                "podinfo-regex",
                "--image-ref=podinfo",
                "--select-semver=>4.0.0",
                r"--filter-regex=5\.0\.0",
            ],
            "create_image_policy.golden",
        ),
        (
            &["get", "image", "policy", "podinfo-regex"],
            "get_image_policy_regex.golden",
        ),
        (
            &["suspend", "image", "policy", "podinfo-semver"],
            "suspend_image_policy.golden",
        ),
        (
            &["resume", "image", "policy", "podinfo-semver"],
            "resume_image_policy.golden",
        ),
        (
            &["reconcile", "image", "policy", "podinfo-semver"],
            "reconcile_image_policy.golden",
        ),
    ];
    for (args, file) in cases {
        let out = run(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        let want = if file.starts_with("get_") {
            relayout(&golden(file), ours)
        } else {
            ours(&golden(file))
        };
        // flux's harness compares stdout and stderr together.
        assert_eq!(
            format!("{}{}", stdout(&out), stderr(&out)),
            want,
            "{args:?}"
        );
    }

    // What the scan recorded: the `.sig` tag excluded, the latest tags in descending order.
    let repo: ImageRepository = rt
        .block_on(Api::namespaced(c.clone(), NS).get("podinfo"))
        .unwrap();
    let status = repo.status.unwrap();
    let scan = status.last_scan_result.unwrap();
    assert_eq!(scan.tag_count, 6);
    assert_eq!(
        scan.latest_tags.unwrap(),
        vec!["6.0.0", "5.0.3", "5.0.2", "5.0.1", "5.0.0", "4.0.6"]
    );
    assert_eq!(
        status.canonical_image_name.unwrap(),
        format!("{host}/stefanprodan/podinfo")
    );
    let ready = ready_of(status.conditions.as_deref().unwrap_or_default());
    assert_eq!(
        ready.message,
        format!(
            "successful scan: found 6 tags with checksum {}",
            scan.revision.unwrap()
        )
    );

    // The table of repositories, and re-creating a policy with another range updates it in
    // place and selects again.
    let out = run(&["get", "image", "repository", "podinfo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let table = stdout(&out);
    assert!(table.starts_with("NAME   \tLAST SCAN"), "{table}");
    assert!(
        table.contains("\tFalse    \tTrue \tsuccessful scan: found 6 tags"),
        "{table}"
    );
    let out = run(&[
        "create",
        "image",
        "policy",
        "podinfo-regex",
        "--image-ref=podinfo",
        "--select-semver=<5.0.0",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("✔ ImagePolicy updated\n"),
        "{}",
        stderr(&out)
    );
    let policy: ImagePolicy = rt
        .block_on(Api::namespaced(c.clone(), NS).get("podinfo-regex"))
        .unwrap();
    let status = policy.status.unwrap();
    assert_eq!(status.latest_ref.unwrap().tag, "4.0.6");
    assert_eq!(status.observed_previous_ref.unwrap().tag, "5.0.0");

    // A tag filter that does not compile (the CLI refuses one; an object written otherwise
    // gets the controller's message).
    Kubectl::at(&kc).ok(
        &["apply", "-n", NS, "-f", "-"],
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n  name: badregex\n\
         spec:\n  imageRepositoryRef:\n    name: podinfo\n  policy:\n    semver:\n      range: 5.0.x\n\
         \x20 filterTags:\n    pattern: '5.0.(x'\n",
    );
    let ready = settled::<ImagePolicy>(&rt, &c, "badregex");
    assert_eq!(ready.status, "False");
    assert_eq!(ready.reason, "InvalidPolicy");
    assert_eq!(
        ready.message,
        "invalid policy: failed to filter tags: invalid regular expression pattern '5.0.(x': \
         error parsing regexp: missing closing ): `5.0.(x`"
    );
}

fn ready_of(conditions: &[Condition]) -> Condition {
    conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .cloned()
        .unwrap_or_else(|| panic!("no Ready condition in {conditions:?}"))
}

/// The Ready condition of `name` once the controller has written one for its generation.
fn settled<K>(rt: &tokio::runtime::Runtime, client: &kube::Client, name: &str) -> Condition
where
    K: ferroflux_api::FluxObject,
{
    let api: Api<K> = Api::namespaced(client.clone(), NS);
    rt.block_on(eventually(&format!("{name} reconciled"), || {
        let api = api.clone();
        async move {
            let obj = api.get(name).await.ok()?;
            let generation = obj.meta().generation;
            let ready = obj
                .conditions()
                .iter()
                .find(|c| c.type_ == "Ready")
                .cloned()?;
            (ready.observed_generation == generation).then_some(ready)
        }
    }))
}

#[test]
fn bad_image_input_gets_fluxs_messages() {
    let reg = Registry::start(RegistryOptions {
        basic_auth: Some(("flux".into(), "s3cret".into())),
        ..Default::default()
    });
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (cl, c) = rt.block_on(flux_cluster("image-bad-input"));
    let kc = kubeconfig(dir.path(), &[&cl]);
    let kubectl = Kubectl::at(&kc);
    kubectl.ok(&["create", "namespace", NS], "");
    start_image_reflector(&rt, &c);
    let apply = |yaml: &str| kubectl.ok(&["apply", "-n", NS, "-f", "-"], yaml);
    let repository = |name: &str, image: &str, extra: &str| {
        format!(
            "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n  name: {name}\nspec:\n  image: {image}\n  interval: 10m\n{extra}"
        )
    };

    // Unreachable registry.
    let port = closed_port();
    apply(&repository("down", &format!("127.0.0.1:{port}/app"), ""));
    let ready = settled::<ImageRepository>(&rt, &c, "down");
    assert_eq!(ready.status, "False");
    assert_eq!(ready.reason, "ReadOperationFailed");
    assert!(
        ready.message.starts_with(&format!(
            "scan failed: cannot reach registry 127.0.0.1:{port}"
        )),
        "{}",
        ready.message
    );
    // The Warning event names the image reflector, as Flux's does.
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(c.clone(), NS);
    let event = rt.block_on(eventually("the scan failure's event", || {
        let events = events.clone();
        async move {
            let list = events.list(&Default::default()).await.ok()?;
            list.items.into_iter().find(|e| {
                e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("down")
                    && e.reason.as_deref() == Some("ReadOperationFailed")
            })
        }
    }));
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert_eq!(
        event.reporting_controller.as_deref(),
        Some("image-reflector-controller")
    );

    // Credentials refused, then accepted.
    let docker_secret = |name: &str, password: &str| {
        kubectl.ok(
            &[
                "create",
                "secret",
                "docker-registry",
                name,
                "-n",
                NS,
                &format!("--docker-server={}", reg.host()),
                "--docker-username=flux",
                &format!("--docker-password={password}"),
            ],
            "",
        );
    };
    docker_secret("wrong", "nope");
    docker_secret("right", "s3cret");
    let image = format!("{}/team/app", reg.host());
    apply(&repository(
        "denied",
        &image,
        "  secretRef:\n    name: wrong\n",
    ));
    let ready = settled::<ImageRepository>(&rt, &c, "denied");
    assert_eq!(ready.status, "False");
    assert_eq!(ready.reason, "ReadOperationFailed");
    assert!(
        ready.message.starts_with(&format!(
            "scan failed: 401 Unauthorized: registry {} refused the credentials for team/app",
            reg.host()
        )),
        "{}",
        ready.message
    );
    apply(&repository(
        "allowed",
        &image,
        "  secretRef:\n    name: right\n",
    ));
    let ready = settled::<ImageRepository>(&rt, &c, "allowed");
    assert_eq!(ready.status, "True", "{}", ready.message);
    assert!(
        ready.message.starts_with("successful scan: found 0 tags"),
        "{}",
        ready.message
    );
    // A Secret that does not exist.
    apply(&repository(
        "nosecret",
        &image,
        "  secretRef:\n    name: absent\n",
    ));
    let ready = settled::<ImageRepository>(&rt, &c, "nosecret");
    assert_eq!(ready.reason, "AuthenticationFailed");
    assert!(
        ready.message.starts_with(
            "failed to configure authentication options: failed to get secret 'tis-2/absent'"
        ),
        "{}",
        ready.message
    );

    let policy = |name: &str, repo: &str, spec: &str| {
        format!(
            "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n  name: {name}\nspec:\n  imageRepositoryRef:\n    name: {repo}\n{spec}"
        )
    };
    // A policy naming an ImageRepository that does not exist.
    apply(&policy(
        "orphan",
        "missing",
        "  policy:\n    semver:\n      range: 5.0.x\n",
    ));
    let ready = settled::<ImagePolicy>(&rt, &c, "orphan");
    assert_eq!(ready.status, "False");
    assert_eq!(ready.reason, "DependencyNotReady");
    assert_eq!(
        ready.message,
        "failed to get the referred ImageRepository: referenced ImageRepository does not exist: \
         imagerepositories.image.toolkit.fluxcd.io \"missing\" not found"
    );

    // An invalid semver range: Stalled, and `create image policy` stops at once with it.
    let out = ferroflux(
        &kc,
        &[
            "create",
            "image",
            "policy",
            "badrange",
            "--image-ref=allowed",
            "--select-semver=five",
            "-n",
            NS,
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).ends_with(
            "✗ ImagePolicy reconciliation failed: 'invalid policy: improper constraint: \"five\"'\n"
        ),
        "{}",
        stderr(&out)
    );
    let ready = settled::<ImagePolicy>(&rt, &c, "badrange");
    assert_eq!(ready.reason, "InvalidPolicy");
}
