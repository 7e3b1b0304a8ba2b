//! `ferroflux fleet status` against three in-process clusters, one of them stopped: the table,
//! the per-cluster summary, JSON, the exit code, and the bad input the issue names.

use crate::objects::*;
use crate::run::*;
use ferroflux_testkit::{flux_cluster, kubeconfig};
use std::time::{Duration, Instant};

/// staging: all applied and ready, one suspended. production: fetched a newer commit than it
/// applied, and one Kustomization failing. qa: stopped.
#[test]
fn fleet_status_with_one_cluster_down() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (staging, production, mut qa) = rt.block_on(async {
        let (staging, s) = flux_cluster("staging").await;
        git(&s, "flux-system", Some(SHA_A)).await;
        for name in ["flux-system", "apps"] {
            ks(&s, name, "flux-system", false).await;
            let msg = format!("Applied revision: {}", revision(SHA_A));
            ks_status(
                &s,
                name,
                ("True", &msg),
                Some(&revision(SHA_A)),
                serde_json::json!({}),
            )
            .await;
        }
        ks(&s, "infra", "flux-system", true).await;

        let (production, p) = flux_cluster("production").await;
        git(&p, "flux-system", Some(SHA_B)).await;
        ks(&p, "flux-system", "flux-system", false).await;
        let msg = format!("Applied revision: {}", revision(SHA_A));
        ks_status(
            &p,
            "flux-system",
            ("True", &msg),
            Some(&revision(SHA_A)),
            serde_json::json!({}),
        )
        .await;
        ks(&p, "apps", "flux-system", false).await;
        ks_status(
            &p,
            "apps",
            ("False", "kustomize build failed: missing resource"),
            None,
            serde_json::json!({}),
        )
        .await;

        let (qa, _) = flux_cluster("qa").await;
        (staging, production, qa)
    });
    let kc = kubeconfig(dir.path(), &[&staging, &production, &qa]);
    rt.block_on(qa.stop());

    let out = ferroflux(&kc, &["fleet", "status", "--timeout", "20s"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    let (main, summary) = text.split_once("\n\n").expect("two tables");
    let rows = cells(main);
    let a = "main@sha1:aaaaaaaa";
    let applied_a = format!("Applied revision: {}", revision(SHA_A));
    let row = |c: &[&str]| c.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        rows[0],
        row(&[
            "CLUSTER",
            "NAMESPACE",
            "NAME",
            "REVISION",
            "READY",
            "MESSAGE"
        ])
    );
    assert_eq!(
        rows[1],
        row(&["staging", "flux-system", "apps", a, "True", &applied_a])
    );
    assert_eq!(
        rows[2],
        row(&[
            "staging",
            "flux-system",
            "flux-system",
            a,
            "True",
            &applied_a
        ])
    );
    assert_eq!(
        rows[3],
        row(&[
            "staging",
            "flux-system",
            "infra",
            "",
            "False",
            "waiting to be reconciled"
        ])
    );
    assert_eq!(
        rows[4],
        row(&[
            "production",
            "flux-system",
            "apps",
            "",
            "False",
            "kustomize build failed: missing resource"
        ])
    );
    assert_eq!(
        rows[5],
        row(&[
            "production",
            "flux-system",
            "flux-system",
            a,
            "True",
            &applied_a
        ])
    );
    assert_eq!(&rows[6][..5], &row(&["qa", "", "", "", "Unknown"])[..]);
    let qa_message = &rows[6][5];
    assert!(
        qa_message.starts_with("unreachable: ") && qa_message.contains(qa.url()),
        "{qa_message}"
    );
    assert_eq!(rows.len(), 7);

    let summary = cells(summary);
    assert_eq!(
        summary[0],
        row(&[
            "CLUSTER",
            "STATUS",
            "READY",
            "FAILING",
            "SUSPENDED",
            "FETCHED",
            "APPLIED",
            "SYNC"
        ])
    );
    assert_eq!(
        summary[1],
        row(&["staging", "ready", "2/3", "0", "1", a, a, "in sync"])
    );
    assert_eq!(
        summary[2],
        row(&[
            "production",
            "failing",
            "1/2",
            "1",
            "0",
            "main@sha1:bbbbbbbb",
            a,
            "behind (2)"
        ])
    );
    assert_eq!(
        summary[3],
        row(&["qa", "unreachable", "-", "-", "-", "-", "-", "-"])
    );
    let err = stderr(&out);
    assert!(
        err.contains("the fleet is not healthy: production failing, qa unreachable"),
        "{err}"
    );
    assert!(!err.contains(qa.token()), "the token leaked: {err}");

    // The single-cluster commands name the cluster they could not reach.
    for args in [
        &[
            "reconcile",
            "ks",
            "apps",
            "--context",
            "qa",
            "--timeout",
            "5s",
        ][..],
        &["resume", "ks", "apps", "--context", "qa", "--timeout", "5s"],
        &[
            "suspend",
            "source",
            "git",
            "--all",
            "--context",
            "qa",
            "--timeout",
            "5s",
        ],
    ] {
        let out = ferroflux(&kc, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = stderr(&out);
        assert!(
            err.contains(&format!(
                "cannot reach the cluster of context \"qa\" ({})",
                qa.url()
            )),
            "{args:?}: {err}"
        );
        assert!(!err.contains(qa.token()), "the token leaked: {err}");
    }

    // JSON carries the same facts, per Kustomization.
    let out = ferroflux(
        &kc,
        &[
            "fleet",
            "status",
            "-o",
            "json",
            "--contexts",
            "production,qa",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["healthy"], false);
    let clusters = doc["clusters"].as_array().unwrap();
    assert_eq!(clusters.len(), 2);
    assert_eq!(clusters[0]["context"], "production");
    assert_eq!(clusters[0]["failing"], 1);
    assert_eq!(clusters[0]["behind"], 2);
    assert_eq!(clusters[0]["sourceRevisions"][0], revision(SHA_B));
    let fs = &clusters[0]["kustomizations"][1];
    assert_eq!(fs["name"], "flux-system");
    assert_eq!(fs["appliedRevision"], revision(SHA_A));
    assert_eq!(fs["sourceRevision"], revision(SHA_B));
    assert_eq!(fs["source"], "GitRepository/flux-system/flux-system");
    assert_eq!(fs["behind"], true);
    assert_eq!(clusters[1]["status"], "unreachable");

    // A healthy selection exits 0 and prints its tables only.
    let out = ferroflux(&kc, &["fleet", "status", "--contexts", "staging"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("CLUSTER"));
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));

    rt.block_on(async {
        staging.shutdown().await;
        production.shutdown().await;
    });
}

#[test]
fn unknown_context_lists_the_available_ones() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (a, _) = rt.block_on(flux_cluster("staging"));
    let (b, _) = rt.block_on(flux_cluster("production"));
    let kc = kubeconfig(dir.path(), &[&a, &b]);
    let out = ferroflux(&kc, &["fleet", "status", "--contexts", "staging,prod"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "nothing printed before the check");
    assert!(
        stderr(&out).contains(
            "context \"prod\" not found in the kubeconfig; available contexts: staging, production"
        ),
        "{}",
        stderr(&out)
    );
    for args in [
        &["stats", "--context", "prod"][..],
        &["suspend", "ks", "apps", "--context", "prod"],
        &["reconcile", "ks", "apps", "--context", "prod"],
        &["events", "--context", "prod"],
    ] {
        let out = ferroflux(&kc, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(
            stderr(&out).contains("context \"prod\" not found in the kubeconfig; available contexts: staging, production"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
}

/// A server that accepts connections and never answers: the wait is bounded by --timeout, the
/// message says so, and the reachable cluster still prints.
#[test]
fn silent_cluster_is_reported_within_the_timeout() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (staging, s) = rt.block_on(flux_cluster("staging"));
    rt.block_on(async {
        git(&s, "flux-system", Some(SHA_A)).await;
        ks(&s, "flux-system", "flux-system", false).await;
        let msg = format!("Applied revision: {}", revision(SHA_A));
        ks_status(
            &s,
            "flux-system",
            ("True", &msg),
            Some(&revision(SHA_A)),
            serde_json::json!({}),
        )
        .await;
    });
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    // Held open, never read from or written to.
    let held = std::thread::spawn(move || {
        let mut conns = Vec::new();
        for c in listener.incoming().take(64) {
            match c {
                Ok(c) => conns.push(c),
                Err(_) => break,
            }
        }
    });
    let mut config: serde_json::Value =
        serde_saphyr::from_str(&ferroflux_devcluster::kubeconfig(&[&staging], None)).unwrap();
    config["clusters"].as_array_mut().unwrap().push(serde_json::json!({
        "name": "silent", "cluster": {"server": format!("https://{addr}"), "insecure-skip-tls-verify": true}}));
    config["contexts"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({
        "name": "silent", "context": {"cluster": "silent", "user": "staging"}}));
    let kc = dir.path().join("kubeconfig");
    std::fs::write(&kc, serde_json::to_string(&config).unwrap()).unwrap();

    let started = Instant::now();
    let out = ferroflux(&kc, &["fleet", "status", "--timeout", "2s"]);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "not bounded by --timeout"
    );
    assert_eq!(out.status.code(), Some(1));
    let rows = cells(stdout(&out).split_once("\n\n").unwrap().0);
    assert_eq!(rows[1][0], "staging");
    assert_eq!(rows[1][4], "True");
    assert_eq!(rows[2][0], "silent");
    assert!(
        rows[2][5].starts_with("unreachable: ")
            && rows[2][5].contains("did not answer within 2s")
            && rows[2][5].contains(&addr.to_string()),
        "{:?}",
        rows[2]
    );

    let out = ferroflux(
        &kc,
        &[
            "suspend",
            "ks",
            "apps",
            "--context",
            "silent",
            "--timeout",
            "2s",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("did not answer within 2s"),
        "{}",
        stderr(&out)
    );
    let out = ferroflux(&kc, &["stats", "--context", "silent", "--timeout", "2s"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(
        stderr(&out).contains(&format!(
            "the cluster of context \"silent\" (https://{addr}) did not answer within 2s"
        )),
        "{}",
        stderr(&out)
    );
    drop(held);
    rt.block_on(staging.shutdown());
}
