//! `ferroflux create secret ...` against flux's goldens (`fixtures/goldens/create_secret/`, the
//! same command lines as flux's own tests), its bad input with flux's messages, the SSH variant
//! against a loopback sshd, and the apply path on a devcluster read back with kubectl.

use crate::run::{ferroflux, runtime, stderr, stdout};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/goldens/create_secret")
}

/// Runs the binary in the fixtures directory, as flux's tests run theirs in `testdata/..`.
fn create(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .current_dir(fixtures())
        .args(["create", "secret"])
        .args(args)
        .output()
        .unwrap()
}

fn golden(name: &str) -> String {
    std::fs::read_to_string(fixtures().join(name)).unwrap()
}

#[test]
fn exports_match_flux_goldens() {
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.crt");
    std::fs::write(&ca, "ca-data").unwrap();
    let ca = ca.to_str().unwrap();
    let notation = dir.path().join("notation");
    std::fs::create_dir(&notation).unwrap();
    std::fs::write(notation.join("ca.crt"), "ca-data-crt").unwrap();
    std::fs::write(notation.join("ca.pem"), "ca-data-pem").unwrap();
    let crt = format!("--ca-cert-file={}", notation.join("ca.crt").display());
    let pem = format!("--ca-cert-file={}", notation.join("ca.pem").display());
    let policy = "--trust-policy-file=notation/test-trust-policy.json";
    let https = "--url=https://github.com/stefanprodan/podinfo";
    let ns = "--namespace=my-namespace";
    let cases: Vec<(&str, Vec<&str>)> = vec![
        (
            "git/secret-git-basic.yaml",
            vec![
                "git",
                "podinfo-auth",
                https,
                "--username=my-username",
                "--password=my-password",
                ns,
                "--export",
            ],
        ),
        (
            "git/git-bearer-token.yaml",
            vec![
                "git",
                "bearer-token-auth",
                https,
                "--bearer-token=ghp_baR2qnFF0O41WlucePL3udt2N9vVZS4R0hAS",
                ns,
                "--export",
            ],
        ),
        (
            "git/secret-ca-crt.yaml",
            vec![
                "git",
                "ca-crt",
                https,
                "--password=my-password",
                "--username=my-username",
                "--ca-crt-file",
                ca,
                ns,
                "--export",
            ],
        ),
        (
            "githubapp/secret.yaml",
            vec![
                "githubapp",
                "appinfo",
                "--namespace",
                "my-namespace",
                "--app-id",
                "1",
                "--app-installation-owner",
                "my-org",
                "--app-private-key",
                "./githubapp/test-private-key.pem",
                "--export",
            ],
        ),
        (
            "githubapp/secret-with-baseurl.yaml",
            vec![
                "githubapp",
                "appinfo",
                "--namespace",
                "my-namespace",
                "--app-id",
                "1",
                "--app-installation-id",
                "2",
                "--app-private-key",
                "./githubapp/test-private-key.pem",
                "--app-base-url",
                "www.example.com/api/v3",
                "--export",
            ],
        ),
        (
            "helm/secret-helm.yaml",
            vec![
                "helm",
                "helm-secret",
                "--username=my-username",
                "--password=my-password",
                ns,
                "--export",
            ],
        ),
        (
            "oci/create-secret.yaml",
            vec![
                "oci",
                "ghcr",
                ns,
                "--url",
                "ghcr.io",
                "--username",
                "stefanprodan",
                "--password=password",
                "--export",
            ],
        ),
        (
            "proxy/secret-proxy.yaml",
            vec![
                "proxy",
                "proxy-secret",
                "--address=https://my-proxy.com",
                "--username=my-username",
                "--password=my-password",
                ns,
                "--export",
            ],
        ),
        (
            "receiver/secret-receiver.yaml",
            vec![
                "receiver",
                "receiver-secret",
                "--type=github",
                "--token=test-token",
                "--hostname=flux.example.com",
                ns,
                "--export",
            ],
        ),
        (
            "receiver/secret-receiver-gcr.yaml",
            vec![
                "receiver",
                "gcr-secret",
                "--type=gcr",
                "--token=test-token",
                "--hostname=flux.example.com",
                "--email-claim=sa@project.iam.gserviceaccount.com",
                ns,
                "--export",
            ],
        ),
        (
            "receiver/secret-receiver-gcr-audience.yaml",
            vec![
                "receiver",
                "gcr-secret",
                "--type=gcr",
                "--token=test-token",
                "--hostname=flux.example.com",
                "--email-claim=sa@project.iam.gserviceaccount.com",
                "--audience-claim=https://custom.audience.example.com",
                ns,
                "--export",
            ],
        ),
        (
            "tls/secret-tls.yaml",
            vec![
                "tls",
                "certs",
                ns,
                "--tls-crt-file=./tls/test-cert.pem",
                "--tls-key-file=./tls/test-key.pem",
                "--ca-crt-file=./tls/test-ca.pem",
                "--export",
            ],
        ),
        (
            "notation/secret-ca-crt.yaml",
            vec!["notation", "notation-config", &crt, policy, ns, "--export"],
        ),
        (
            "notation/secret-ca-pem.yaml",
            vec!["notation", "notation-config", &pem, policy, ns, "--export"],
        ),
        (
            "notation/secret-ca-multi.yaml",
            vec![
                "notation",
                "notation-config",
                &crt,
                &pem,
                policy,
                ns,
                "--export",
            ],
        ),
    ];
    let mut failed = Vec::new();
    for (file, args) in &cases {
        let out = create(args);
        if !out.status.success() || stdout(&out) != golden(file) {
            failed.push(format!(
                "{file}: exit {:?}\n--- got\n{}{}--- want\n{}",
                out.status.code(),
                stdout(&out),
                stderr(&out),
                golden(file)
            ));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn bad_input_gets_flux_messages() {
    let dir = tempfile::tempdir().unwrap();
    let p12 = dir.path().join("ca.p12");
    std::fs::write(&p12, "x").unwrap();
    let p12 = format!("--ca-cert-file={}", p12.display());
    let policy = "--trust-policy-file=notation/test-trust-policy.json";
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["git"], "name is required"),
        (vec!["helm"], "name is required"),
        (vec!["oci"], "name is required"),
        (vec!["tls"], "name is required"),
        (vec!["githubapp"], "name is required"),
        (vec!["notation"], "name is required"),
        (vec!["oci", "ghcr"], "--url is required"),
        (vec!["proxy", "proxy-secret"], "address is required"),
        (
            vec![
                "git",
                "podinfo-auth",
                "--url=https://github.com/stefanprodan/podinfo",
                "--username=aaa",
                "--password=zzzz",
                "--bearer-token=aaaa",
                "--export",
            ],
            "user credentials and bearer token cannot be used together",
        ),
        (
            vec![
                "git",
                "podinfo-auth",
                "--url=https://github.com/stefanprodan/podinfo",
                "--export",
            ],
            "for Git over HTTP/S the username and password, or a bearer token is required",
        ),
        (
            vec![
                "git",
                "podinfo-auth",
                "--url=ftp://example.com/x",
                "--export",
            ],
            "git URL scheme 'ftp' not supported, can be: ssh, http and https",
        ),
        (
            vec![
                "githubapp",
                "appinfo",
                "--app-id",
                "1",
                "--app-installation-id",
                "2",
                "--app-private-key",
                "pk.pem",
            ],
            "unable to read private key file: open pk.pem: no such file or directory",
        ),
        (
            vec!["receiver", "test-secret", "--token=t", "--hostname=h"],
            "--type is required",
        ),
        (
            vec![
                "receiver",
                "test-secret",
                "--type=invalid",
                "--token=t",
                "--hostname=h",
            ],
            "invalid argument \"invalid\" for \"--type\" flag: receiver type 'invalid' is not supported, must be one of: generic, generic-hmac, github, gitlab, bitbucket, harbor, dockerhub, quay, gcr, nexus, acr, cdevents",
        ),
        (
            vec!["receiver", "test-secret", "--type=github", "--token=t"],
            "--hostname is required",
        ),
        (
            vec![
                "receiver",
                "test-secret",
                "--type=gcr",
                "--token=t",
                "--hostname=h",
            ],
            "--email-claim is required for gcr receiver type",
        ),
        (
            vec![
                "tls",
                "certs",
                "--tls-crt-file=./tls/test-cert.pem",
                "--export",
            ],
            "found certificate but missing private key",
        ),
        (
            vec!["tls", "certs", "--export"],
            "no CA certificate or client certificate pair found",
        ),
        (
            vec!["notation", "notation-config", policy],
            "--ca-cert-file is required",
        ),
        (
            vec![
                "notation",
                "notation-config",
                "--ca-cert-file=notation/test-ca.crt",
            ],
            "--trust-policy-file is required",
        ),
        (
            vec!["notation", "notation-config", &p12, policy],
            "ca.p12 must end with either .crt or .pem",
        ),
        (
            vec![
                "notation",
                "notation-config",
                "--ca-cert-file=notation/test-ca.crt",
                "--trust-policy-file=notation/invalid-trust-policy.json",
            ],
            "invalid trust policy: trust policy: a trust policy statement is missing a name, every statement requires a name",
        ),
        (
            vec![
                "notation",
                "notation-config",
                "--ca-cert-file=notation/test-ca.crt",
                "--trust-policy-file=notation/invalid.json",
            ],
            "failed to unmarshal trust policy notation/invalid.json: json: cannot unmarshal string into Go value of type trustpolicy.Document",
        ),
        (
            vec![
                "git",
                "x",
                "--url=https://e.com/r",
                "-u",
                "a",
                "-p",
                "b",
                "--label",
                "nolabel",
            ],
            "invalid label format 'nolabel', must be key=value",
        ),
    ];
    let mut failed = Vec::new();
    for (args, message) in &cases {
        let out = create(args);
        let err = stderr(&out);
        if out.status.code() != Some(1) || err != format!("✗ {message}\n") || !out.stdout.is_empty()
        {
            failed.push(format!(
                "{args:?}: exit {:?}, stderr {err:?}",
                out.status.code()
            ));
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// The SSH goldens: the key files' identity and public key as flux writes them, and the host
/// key of the server in the URL (here a loopback sshd; flux's goldens scanned github.com).
#[test]
fn ssh_secrets_hold_the_key_pair_and_the_servers_host_key() {
    let sshd = ferroflux_testkit::Sshd::start(&[]);
    let url = format!(
        "--url=ssh://git@127.0.0.1:{}/stefanprodan/podinfo",
        sshd.port
    );
    let host_key: Vec<&str> = sshd.host_pub.split_whitespace().take(2).collect();
    let known_hosts = format!(
        "  known_hosts: '[127.0.0.1]:{} {}'\n",
        sshd.port,
        host_key.join(" ")
    );
    for (key, golden_file, extra) in [
        (
            "--private-key-file=./git/ecdsa.private",
            "git/git-ssh-secret.yaml",
            None,
        ),
        (
            "--private-key-file=./git/ecdsa-password.private",
            "git/git-ssh-secret-password.yaml",
            Some("--password=password"),
        ),
    ] {
        let mut args = vec![
            "git",
            "podinfo-auth",
            &url,
            key,
            "--namespace=my-namespace",
            "--export",
        ];
        args.extend(extra);
        let out = create(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        let want: String = golden(golden_file)
            .lines()
            .map(|l| {
                if l.starts_with("  known_hosts: ") {
                    known_hosts.clone()
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        assert_eq!(stdout(&out), want, "{golden_file}");
    }
    // Without a key file a new pair is made; its public half is the deploy key.
    let out = create(&[
        "git",
        "generated",
        &url,
        "--ssh-key-algorithm=ed25519",
        "--export",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("  identity: |\n    -----BEGIN OPENSSH PRIVATE KEY-----"),
        "{text}"
    );
    assert!(
        text.contains("  identity.pub: |\n    ssh-ed25519 AAAA"),
        "{text}"
    );
    // A server that does not answer: flux's message, nothing printed.
    let closed = ferroflux_testkit::closed_port();
    let out = create(&[
        "git",
        "x",
        &format!("--url=ssh://git@127.0.0.1:{closed}/r"),
        "--private-key-file=./git/ecdsa.private",
        "--export",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(
        stderr(&out).starts_with(&format!(
            "✗ SSH key scan for host 127.0.0.1:{closed} failed, error:"
        )),
        "{}",
        stderr(&out)
    );
}

/// Without `--export` the Secret is created; a second run replaces its data and merges labels,
/// as flux's upsert does, and other keys' owners (labels set by others) are kept.
#[test]
fn applies_and_updates_the_secret_in_the_cluster() {
    let rt = runtime();
    let cluster = rt.block_on(ferroflux_testkit::Cluster::start("secrets"));
    let kc = &cluster.kubeconfig;
    let out = ferroflux(
        kc,
        &[
            "create",
            "secret",
            "helm",
            "repo-auth",
            "-n",
            "default",
            "-u",
            "alice",
            "-p",
            "one",
            "--label",
            "team=a",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "► helm secret 'repo-auth' created in 'default' namespace\n"
    );
    cluster.kubectl(&["label", "secret", "repo-auth", "-n", "default", "kept=yes"]);
    let out = ferroflux(
        kc,
        &[
            "create",
            "secret",
            "helm",
            "repo-auth",
            "-n",
            "default",
            "-u",
            "alice",
            "-p",
            "two",
            "--label",
            "team=b",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let got = cluster.kubectl(&["get", "secret", "repo-auth", "-n", "default", "-o", "json"]);
    let secret: serde_json::Value = serde_json::from_slice(&got.stdout).unwrap();
    assert_eq!(secret["type"], "kubernetes.io/basic-auth");
    assert_eq!(secret["metadata"]["labels"]["team"], "b");
    assert_eq!(secret["metadata"]["labels"]["kept"], "yes");
    use base64::Engine as _;
    let password = base64::engine::general_purpose::STANDARD
        .decode(secret["data"]["password"].as_str().unwrap())
        .unwrap();
    assert_eq!(password, b"two");
}
