//! suspend, resume, reconcile, events, stats, get all, get --watch and completions against an
//! in-process cluster. Where a controller would answer, the test writes the status the
//! controller would (through the status subresource) once it sees the request.

use crate::objects::*;
use crate::run::*;
use ferroflux_api::{GitRepository, Kustomization, RECONCILE_REQUESTED_AT};
use ferroflux_testkit::{eventually, flux_cluster, kubeconfig};
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

fn ks_api(c: &kube::Client) -> Api<Kustomization> {
    Api::namespaced(c.clone(), "flux-system")
}

#[test]
fn suspend_and_resume_without_waiting() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (cl, c) = rt.block_on(flux_cluster("staging"));
    rt.block_on(async {
        git(&c, "repo", Some(SHA_A)).await;
        git(&c, "other", None).await;
        ks(&c, "apps", "repo", false).await;
        ks(&c, "infra", "repo", false).await;
    });
    let kc = kubeconfig(dir.path(), &[&cl]);

    let out = ferroflux(&kc, &["suspend", "kustomization", "apps"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "► suspending kustomization apps in flux-system namespace\n✔ kustomization suspended\n"
    );
    assert!(out.stdout.is_empty());
    let apps = rt.block_on(ks_api(&c).get("apps")).unwrap();
    assert_eq!(apps.spec.suspend, Some(true));

    // Unknown names: flux's line for each in the order given, the known ones still done,
    // exit 1.
    let out = ferroflux(&kc, &["suspend", "ks", "infra", "foo", "bar"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.starts_with(
            "► suspending kustomization infra in flux-system namespace\n\
             ✔ kustomization suspended\n\
             ✗ Kustomization foo not found in flux-system namespace\n\
             ✗ Kustomization bar not found in flux-system namespace\n"
        ),
        "{err}"
    );
    assert!(
        err.contains("2 of the named Kustomization objects were not found"),
        "{err}"
    );
    assert_eq!(
        rt.block_on(ks_api(&c).get("infra")).unwrap().spec.suspend,
        Some(true)
    );

    let out = ferroflux(&kc, &["suspend", "source", "git", "--all"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "► suspending source git other in flux-system namespace\n✔ source git suspended\n\
         ► suspending source git repo in flux-system namespace\n✔ source git suspended\n"
    );
    let git_api: Api<GitRepository> = Api::namespaced(c.clone(), "flux-system");
    for n in ["repo", "other"] {
        assert_eq!(
            rt.block_on(git_api.get(n)).unwrap().spec.suspend,
            Some(true)
        );
    }

    // Two names: flux does not wait unless asked.
    let out = ferroflux(&kc, &["resume", "ks", "apps", "infra"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "► resuming kustomization apps in flux-system namespace\n✔ kustomization resumed\n\
         ► resuming kustomization infra in flux-system namespace\n✔ kustomization resumed\n"
    );
    for n in ["apps", "infra"] {
        assert_eq!(rt.block_on(ks_api(&c).get(n)).unwrap().spec.suspend, None);
    }

    let out = ferroflux(&kc, &["resume", "ks", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out)
            .starts_with("✗ Kustomization object 'nope' not found in flux-system namespace\n"),
        "{}",
        stderr(&out)
    );
    let out = ferroflux(&kc, &["suspend", "ks"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("kustomization name is required"));
    rt.block_on(cl.shutdown());
}

/// Spawns the binary and, while it waits, plays the controller once `seen` says the request
/// arrived. Returns the binary's output.
fn while_waiting<F, Fut>(
    rt: &tokio::runtime::Runtime,
    kc: &std::path::Path,
    args: &[&str],
    controller: F,
) -> std::process::Output
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let child = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args(args)
        .arg("--kubeconfig")
        .arg(kc)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    rt.block_on(controller());
    child.wait_with_output().unwrap()
}

#[test]
fn resume_waits_for_the_controller_to_report_ready() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (cl, c) = rt.block_on(flux_cluster("staging"));
    let suspended_generation = rt.block_on(async {
        git(&c, "repo", Some(SHA_A)).await;
        let k = ks(&c, "apps", "repo", true).await;
        ks_status(
            &c,
            "apps",
            ("True", "Applied revision: old"),
            Some("main@sha1:old"),
            json!({}),
        )
        .await;
        k.metadata.generation.unwrap()
    });
    let kc = kubeconfig(dir.path(), &[&cl]);
    let out = while_waiting(&rt, &kc, &["resume", "ks", "apps"], || async {
        // The resume is seen as a new generation; the controller then applies it.
        let api = ks_api(&c);
        eventually("apps resumed", || async {
            let k = api.get("apps").await.ok()?;
            (k.metadata.generation > Some(suspended_generation)).then_some(())
        })
        .await;
        let msg = format!("Applied revision: {}", revision(SHA_A));
        ks_status(
            &c,
            "apps",
            ("True", &msg),
            Some(&revision(SHA_A)),
            json!({}),
        )
        .await;
    });
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        format!(
            "► resuming kustomization apps in flux-system namespace\n\
             ✔ kustomization resumed\n\
             ◎ waiting for Kustomization reconciliation\n\
             ✔ Kustomization apps reconciliation completed\n\
             ✔ applied revision {}\n",
            revision(SHA_A)
        )
    );

    // Nobody answers: bounded by --timeout, with the last status in the message.
    let out = ferroflux(&kc, &["suspend", "ks", "apps"]);
    assert_eq!(out.status.code(), Some(0));
    let out = ferroflux(&kc, &["resume", "ks", "apps", "--timeout", "2s"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("✗ Kustomization apps reconciliation failed: timed out after 2s waiting for Kustomization flux-system/apps to be reconciled"),
        "{err}"
    );
    rt.block_on(cl.shutdown());
}

#[test]
fn reconcile_sets_requested_at_and_waits_for_it_to_be_handled() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (cl, c) = rt.block_on(flux_cluster("staging"));
    rt.block_on(async {
        git(&c, "repo", Some(SHA_A)).await;
        ks(&c, "apps", "repo", false).await;
        let msg = format!("Applied revision: {}", revision(SHA_A));
        ks_status(
            &c,
            "apps",
            ("True", &msg),
            Some(&revision(SHA_A)),
            json!({}),
        )
        .await;
        ks(&c, "paused", "repo", true).await;
    });
    let kc = kubeconfig(dir.path(), &[&cl]);

    // The controller: once each object carries a request, report it handled at the new commit.
    let play = |kind: &'static str, name: &'static str| {
        let c = c.clone();
        async move {
            let requested = eventually(&format!("{kind} {name} annotated"), || async {
                let v: serde_json::Value = match kind {
                    "GitRepository" => {
                        let api: Api<GitRepository> = Api::namespaced(c.clone(), "flux-system");
                        serde_json::to_value(api.get(name).await.ok()?).ok()?
                    }
                    _ => serde_json::to_value(ks_api(&c).get(name).await.ok()?).ok()?,
                };
                v["metadata"]["annotations"]["reconcile.fluxcd.io/requestedAt"]
                    .as_str()
                    .map(String::from)
            })
            .await;
            let rev = revision(SHA_B);
            if kind == "GitRepository" {
                write_status(&c, kind, name, json!({
                    "lastHandledReconcileAt": requested,
                    "artifact": {"digest": "sha256:01", "lastUpdateTime": "2026-01-01T00:01:00Z",
                        "path": "x", "revision": rev, "url": "http://127.0.0.1/x", "size": 1},
                })).await;
            } else {
                let msg = format!("Applied revision: {rev}");
                ks_status(
                    &c,
                    name,
                    ("True", &msg),
                    Some(&rev),
                    json!({"lastHandledReconcileAt": requested}),
                )
                .await;
            }
        }
    };
    let out = while_waiting(
        &rt,
        &kc,
        &["reconcile", "ks", "apps", "--with-source"],
        || async {
            play("GitRepository", "repo").await;
            play("Kustomization", "apps").await;
        },
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rev = revision(SHA_B);
    assert_eq!(
        stderr(&out),
        format!(
            "► annotating GitRepository repo in flux-system namespace\n\
             ✔ GitRepository annotated\n\
             ◎ waiting for GitRepository reconciliation\n\
             ✔ fetched revision {rev}\n\
             ► annotating Kustomization apps in flux-system namespace\n\
             ✔ Kustomization annotated\n\
             ◎ waiting for Kustomization reconciliation\n\
             ✔ applied revision {rev}\n"
        )
    );
    // The request is an RFC 3339 time, as flux writes it.
    let k = rt.block_on(ks_api(&c).get("apps")).unwrap();
    let requested = &k.metadata.annotations.as_ref().unwrap()["reconcile.fluxcd.io/requestedAt"];
    assert!(
        requested.parse::<k8s_openapi::jiff::Timestamp>().is_ok(),
        "{requested}"
    );

    // A failed reconciliation is an error with the controller's message.
    let out = while_waiting(
        &rt,
        &kc,
        &["reconcile", "source", "git", "repo"],
        || async {
            let api: Api<GitRepository> = Api::namespaced(c.clone(), "flux-system");
            let requested = eventually("repo annotated again", || async {
                let g = api.get("repo").await.ok()?;
                let r = g
                    .metadata
                    .annotations?
                    .get("reconcile.fluxcd.io/requestedAt")?
                    .clone();
                (g.status?.last_handled_reconcile_at.as_ref() != Some(&r)).then_some(r)
            })
            .await;
            let generation = api.get("repo").await.unwrap().metadata.generation.unwrap();
            write_status(&c, "GitRepository", "repo", json!({
            "lastHandledReconcileAt": requested,
            "conditions": [cond("Ready", "False", "GitOperationFailed", "authentication required", generation)],
        })).await;
        },
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("GitRepository reconciliation failed: 'authentication required'"),
        "{}",
        stderr(&out)
    );

    let out = ferroflux(&kc, &["reconcile", "ks", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("Kustomization object 'nope' not found in \"flux-system\" namespace"),
        "{}",
        stderr(&out)
    );
    let out = ferroflux(&kc, &["reconcile", "source", "git", "nope"]);
    assert!(
        stderr(&out).contains("GitRepository object 'nope' not found in \"flux-system\" namespace"),
        "{}",
        stderr(&out)
    );
    let out = ferroflux(&kc, &["reconcile", "ks", "paused"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("resource is suspended"),
        "{}",
        stderr(&out)
    );
    rt.block_on(cl.shutdown());
}

/// Flux's rule for "handled" (`reconciliationHandled` in its reconcile.go): the status's
/// `lastHandledReconcileAt` changed from its value before the request, not "equals the value
/// this command wrote". Another client asks again before the controller gets to ours; the
/// controller handles only the newest value, and the wait must still end.
#[test]
fn reconcile_waits_for_lasthandledreconcileat_to_change() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (cl, c) = rt.block_on(flux_cluster("staging"));
    rt.block_on(async {
        git(&c, "repo", Some(SHA_A)).await;
        ks(&c, "apps", "repo", false).await;
        let msg = format!("Applied revision: {}", revision(SHA_A));
        ks_status(
            &c,
            "apps",
            ("True", &msg),
            Some(&revision(SHA_A)),
            json!({"lastHandledReconcileAt": "an earlier request"}),
        )
        .await;
    });
    let kc = kubeconfig(dir.path(), &[&cl]);
    let out = while_waiting(
        &rt,
        &kc,
        &["reconcile", "ks", "apps", "--timeout", "60s"],
        || async {
            let api = ks_api(&c);
            eventually("apps annotated", || async {
                let k = api.get("apps").await.ok()?;
                k.metadata
                    .annotations?
                    .get(RECONCILE_REQUESTED_AT)
                    .map(|_| ())
            })
            .await;
            // Another client's request replaces ours before the controller reads it.
            api.patch(
                "apps",
                &PatchParams::default(),
                &Patch::Merge(
                    json!({"metadata": {"annotations": {RECONCILE_REQUESTED_AT: "a newer request"}}}),
                ),
            )
            .await
            .unwrap();
            let msg = format!("Applied revision: {}", revision(SHA_B));
            ks_status(
                &c,
                "apps",
                ("True", &msg),
                Some(&revision(SHA_B)),
                json!({"lastHandledReconcileAt": "a newer request"}),
            )
            .await;
        },
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        format!(
            "► annotating Kustomization apps in flux-system namespace\n\
             ✔ Kustomization annotated\n\
             ◎ waiting for Kustomization reconciliation\n\
             ✔ applied revision {}\n",
            revision(SHA_B)
        )
    );

    // Ready, but nobody handles the new request: the wait goes on until --timeout.
    let out = ferroflux(&kc, &["reconcile", "ks", "apps", "--timeout", "2s"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(
            "timed out after 2s waiting for Kustomization flux-system/apps to be reconciled; \
             last status: the controller has not handled the reconcile request yet"
        ),
        "{}",
        stderr(&out)
    );
    rt.block_on(cl.shutdown());
}

/// Ctrl-C while reconcile or resume waits (no controller answers here): flux's `✗` line saying
/// what stays done, exit 130, no panic; the request written before the wait is whole.
#[test]
fn ctrl_c_during_a_wait_exits_cleanly() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (cl, c) = rt.block_on(flux_cluster("staging"));
    rt.block_on(async {
        git(&c, "repo", Some(SHA_A)).await;
        ks(&c, "apps", "repo", false).await;
        ks(&c, "paused", "repo", true).await;
    });
    let kc = kubeconfig(dir.path(), &[&cl]);
    let interrupt = |args: &[&str]| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
            .args(args)
            .args(["--timeout", "5m", "--kubeconfig"])
            .arg(&kc)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut err = String::new();
        let mut reader = BufReader::new(child.stderr.take().unwrap());
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap() == 0 {
                break;
            }
            // The readiness signal: the command is in its wait.
            if line.starts_with("◎ waiting for") {
                let sent = Command::new("kill")
                    .args(["-INT", &child.id().to_string()])
                    .status()
                    .unwrap();
                assert!(sent.success());
            }
            err.push_str(&line);
        }
        (child.wait().unwrap(), err)
    };

    let (status, err) = interrupt(&["reconcile", "ks", "apps"]);
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(
        err.ends_with(
            "◎ waiting for Kustomization reconciliation\n\
             ✗ interrupted: the reconcile request stays on the object and the controller still \
             handles it\n"
        ),
        "{err}"
    );
    let apps = rt.block_on(ks_api(&c).get("apps")).unwrap();
    assert!(
        apps.metadata.annotations.unwrap()[RECONCILE_REQUESTED_AT]
            .parse::<k8s_openapi::jiff::Timestamp>()
            .is_ok()
    );

    let (status, err) = interrupt(&["resume", "ks", "paused"]);
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(
        err.ends_with("✗ interrupted: the objects stay resumed\n"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    let paused = rt.block_on(ks_api(&c).get("paused")).unwrap();
    assert_eq!(paused.spec.suspend, None);
    rt.block_on(cl.shutdown());
}

#[test]
fn events_stats_and_get_all() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (cl, c) = rt.block_on(flux_cluster("staging"));
    rt.block_on(async {
        git(&c, "repo", Some(SHA_A)).await;
        git(&c, "other", Some(SHA_B)).await;
        ks(&c, "apps", "repo", false).await;
        let msg = format!("Applied revision: {}", revision(SHA_A));
        ks_status(
            &c,
            "apps",
            ("True", &msg),
            Some(&revision(SHA_A)),
            json!({}),
        )
        .await;
        ks(&c, "infra", "repo", true).await;
        ks_status(
            &c,
            "infra",
            ("False", "health check failed"),
            None,
            json!({}),
        )
        .await;
        // A core/v1 event for the Kustomization, one through events.k8s.io (what kube-rs's
        // recorder writes) for its source, and one for a Pod that flux does not show.
        let core: Api<k8s_openapi::api::core::v1::Event> =
            Api::namespaced(c.clone(), "flux-system");
        let now = k8s_openapi::jiff::Timestamp::now();
        for (name, kind, obj, reason, message) in [
            (
                "e1",
                "Kustomization",
                "apps",
                "ReconciliationSucceeded",
                "Reconciliation finished in 1s",
            ),
            ("e3", "Pod", "web", "Pulled", "image pulled"),
        ] {
            let e = serde_json::from_value(json!({
                "metadata": {"name": name, "namespace": "flux-system"},
                "involvedObject": {"kind": kind, "name": obj, "namespace": "flux-system"},
                "type": "Normal", "reason": reason, "message": message, "count": 1,
                "firstTimestamp": now.to_string(), "lastTimestamp": now.to_string(),
            }))
            .unwrap();
            core.create(&Default::default(), &e).await.unwrap();
        }
        let recorder = kube::runtime::events::Recorder::new(
            c.clone(),
            kube::runtime::events::Reporter {
                controller: "source-controller".into(),
                instance: None,
            },
        );
        let git_api: Api<GitRepository> = Api::namespaced(c.clone(), "flux-system");
        let repo = git_api.get("repo").await.unwrap();
        use kube::Resource;
        recorder
            .publish(
                &kube::runtime::events::Event {
                    type_: kube::runtime::events::EventType::Warning,
                    reason: "GitOperationFailed".into(),
                    note: Some("authentication required".into()),
                    action: "Reconcile".into(),
                    secondary: None,
                },
                &repo.object_ref(&()),
            )
            .await
            .unwrap();
    });
    let kc = kubeconfig(dir.path(), &[&cl]);

    let out = ferroflux(&kc, &["events"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rows = cells(&stdout(&out));
    assert_eq!(
        rows[0],
        ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    );
    assert_eq!(rows.len(), 3, "{rows:?}");
    let mut found: Vec<&[String]> = rows[1..].iter().map(|r| &r[1..]).collect();
    found.sort();
    assert_eq!(
        found[0],
        [
            "Normal",
            "ReconciliationSucceeded",
            "Kustomization/apps",
            "Reconciliation finished in 1s"
        ]
    );
    assert_eq!(
        found[1],
        [
            "Warning",
            "GitOperationFailed",
            "GitRepository/repo",
            "authentication required"
        ]
    );
    assert!(rows[1][0].ends_with('s'), "{:?}", rows[1]);

    // --for a Kustomization includes its source's events, as flux does.
    let out = ferroflux(&kc, &["events", "--for", "Kustomization/apps"]);
    assert_eq!(cells(&stdout(&out)).len(), 3);
    let out = ferroflux(
        &kc,
        &["events", "--for", "GitRepository/repo", "--types", "Normal"],
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    assert_eq!(
        stderr(&out),
        "✗ No events found in flux-system namespace.\n"
    );
    let out = ferroflux(&kc, &["events", "-A", "--for", "kustomization"]);
    let rows = cells(&stdout(&out));
    assert_eq!(rows[0][0], "NAMESPACE");
    assert_eq!(rows.len(), 2);
    let out = ferroflux(&kc, &["events", "--for", "Pod/web"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("'Pod' is not a recognized Flux kind"),
        "{}",
        stderr(&out)
    );
    let out = ferroflux(&kc, &["events", "--types", "Error"]);
    assert!(
        stderr(&out).contains("type 'Error' not supported. Supported types are Normal, Warning")
    );

    let out = ferroflux(&kc, &["stats"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rows = cells(&stdout(&out));
    assert_eq!(
        rows[0],
        ["RECONCILERS", "RUNNING", "FAILING", "SUSPENDED", "STORAGE"]
    );
    assert_eq!(rows[1], ["GitRepository", "2", "0", "0", "4.0 KiB"]);
    assert_eq!(rows[2], ["OCIRepository", "0", "0", "0", "-"]);
    assert_eq!(rows[6], ["Kustomization", "1", "1", "1", "-"]);
    assert_eq!(rows.len(), 14);

    let out = ferroflux(&kc, &["get", "all"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Laid out by flux's table rules (see the table module's golden tests), hashes in the
    // messages cut to 8 digits as flux's TruncateHex does.
    let want = "NAME               \tREVISION          \tSUSPENDED\tREADY\tMESSAGE                                           \n\
gitrepository/other\tmain@sha1:bbbbbbbb\tFalse    \tTrue \tstored artifact for revision 'main@sha1:bbbbbbbb'\t\n\
gitrepository/repo \tmain@sha1:aaaaaaaa\tFalse    \tTrue \tstored artifact for revision 'main@sha1:aaaaaaaa'\t\n\
\n\
NAME               \tREVISION          \tSUSPENDED\tREADY\tMESSAGE                              \n\
kustomization/apps \tmain@sha1:aaaaaaaa\tFalse    \tTrue \tApplied revision: main@sha1:aaaaaaaa\t\n\
kustomization/infra\t                  \tTrue     \tFalse\thealth check failed                 \t\n\
\n";
    assert_eq!(stdout(&out), want);
    let out = ferroflux(&kc, &["get", "all", "--status-selector", "ready=false"]);
    assert_eq!(
        stdout(&out),
        "NAME               \tREVISION\tSUSPENDED\tREADY\tMESSAGE             \n\
kustomization/infra\t        \tTrue     \tFalse\thealth check failed\t\n\n"
    );
    let out = ferroflux(&kc, &["get", "all", "--watch"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("expected a single resource type, but found all"));
    rt.block_on(cl.shutdown());
}

/// `events --watch` (`-w`): the events there are, then each new one as it arrives, filtered by
/// `--for` (the Kustomization and its source), the header with the first row only.
#[test]
fn events_watch_streams_new_events_of_the_object() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (cl, c) = rt.block_on(flux_cluster("staging"));
    rt.block_on(async {
        git(&c, "repo", Some(SHA_A)).await;
        git(&c, "other", None).await;
        ks(&c, "apps", "repo", false).await;
        ks(&c, "infra", "other", false).await;
    });
    let core: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(c.clone(), "flux-system");
    let event = |name: &str, kind: &str, obj: &str, type_: &str, reason: &str, message: &str| {
        let now = k8s_openapi::jiff::Timestamp::now().to_string();
        let e = serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "flux-system"},
            "involvedObject": {"kind": kind, "name": obj, "namespace": "flux-system"},
            "type": type_, "reason": reason, "message": message, "count": 1,
            "firstTimestamp": now, "lastTimestamp": now,
        }))
        .unwrap();
        rt.block_on(core.create(&Default::default(), &e)).unwrap();
    };
    event(
        "e1",
        "Kustomization",
        "apps",
        "Normal",
        "ReconciliationSucceeded",
        "first",
    );
    let kc = kubeconfig(dir.path(), &[&cl]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args([
            "events",
            "-w",
            "--for",
            "Kustomization/apps",
            "--timeout",
            "60s",
        ])
        .arg("--kubeconfig")
        .arg(&kc)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = || lines.next().unwrap().unwrap();
    let header = next();
    assert_eq!(
        cells(&header)[0],
        ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
        "{header:?}"
    );
    let row = next();
    assert_eq!(
        cells(&row)[0][1..],
        [
            "Normal",
            "ReconciliationSucceeded",
            "Kustomization/apps",
            "first"
        ],
        "{row:?}"
    );
    // The existing events are printed once the list is read; the watch starts from that
    // list's version, so everything created from now on reaches it, in order. Another
    // Kustomization's and a Pod's are filtered out; the source's and the object's come
    // through, each padded on its own.
    event(
        "e2",
        "Kustomization",
        "infra",
        "Normal",
        "Progressing",
        "not apps",
    );
    event("e3", "Pod", "web", "Normal", "Pulled", "image pulled");
    event(
        "e4",
        "GitRepository",
        "repo",
        "Warning",
        "GitOperationFailed",
        "authentication required",
    );
    event(
        "e5",
        "Kustomization",
        "apps",
        "Normal",
        "Progressing",
        "second",
    );
    let row = next();
    assert!(
        row.ends_with(
            "\tWarning\tGitOperationFailed\tGitRepository/repo\tauthentication required\t"
        ),
        "{row:?}"
    );
    let row = next();
    assert!(
        row.ends_with("\tNormal\tProgressing\tKustomization/apps\tsecond\t"),
        "{row:?}"
    );
    // Ctrl-C ends the watch cleanly.
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));

    // The watch ends by itself at --timeout, exit 0, as flux's does.
    let out = ferroflux(
        &kc,
        &[
            "events",
            "--watch",
            "--for",
            "Kustomization/infra",
            "--timeout",
            "3s",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rows = cells(&stdout(&out));
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(
        rows[1][1..],
        ["Normal", "Progressing", "Kustomization/infra", "not apps"]
    );
    rt.block_on(cl.shutdown());
}

#[test]
fn get_watch_prints_a_row_per_change() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (cl, c) = rt.block_on(flux_cluster("staging"));
    rt.block_on(async {
        ks(&c, "apps", "repo", false).await;
    });
    let kc = kubeconfig(dir.path(), &[&cl]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args(["get", "ks", "--watch", "--timeout", "60s", "--kubeconfig"])
        .arg(&kc)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = || lines.next().unwrap().unwrap();
    assert_eq!(
        next(),
        "NAME\tREVISION\tSUSPENDED\tREADY\tMESSAGE                  "
    );
    assert_eq!(
        next(),
        "apps\t        \tFalse    \tFalse\twaiting to be reconciled\t"
    );
    // The watch is established once the list is printed; each change is one more row.
    let msg = format!("Applied revision: {}", revision(SHA_A));
    rt.block_on(ks_status(
        &c,
        "apps",
        ("True", &msg),
        Some(&revision(SHA_A)),
        json!({}),
    ));
    assert_eq!(
        next(),
        "apps\tmain@sha1:aaaaaaaa\tFalse\tTrue\tApplied revision: main@sha1:aaaaaaaa\t"
    );
    child.kill().unwrap();
    child.wait().unwrap();

    // Nothing changes: the watch ends by itself at --timeout, exit 0 (a quiet connection is
    // not an error).
    let out = ferroflux(&kc, &["get", "ks", "--watch", "--timeout", "3s"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(cells(&stdout(&out)).len(), 2, "{}", stdout(&out));
    rt.block_on(cl.shutdown());
}

/// A running `ferroflux` whose stdout lines arrive on a channel, so a missing line fails the
/// test instead of hanging it.
pub(crate) struct Streaming {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Streaming {
    pub(crate) fn start(kc: &std::path::Path, args: &[&str]) -> Streaming {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
            .args(args)
            .arg("--kubeconfig")
            .arg(kc)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                if tx.send(line.unwrap()).is_err() {
                    break;
                }
            }
        });
        Streaming { child, lines }
    }

    pub(crate) fn next(&self, what: &str) -> String {
        self.lines
            .recv_timeout(std::time::Duration::from_secs(90))
            .unwrap_or_else(|_| panic!("no line for {what}"))
    }

    /// Ctrl-C: exit 0, nothing more on stdout (every line it printed was whole), nothing on
    /// stderr.
    pub(crate) fn interrupt(mut self) {
        let sent = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let status = self.child.wait().unwrap();
        let mut err = String::new();
        use std::io::Read;
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        assert_eq!(status.code(), Some(0), "{err}");
        let rest: Vec<String> = self.lines.iter().collect();
        assert!(rest.is_empty(), "printed after the last change: {rest:?}");
        assert_eq!(err, "");
    }
}

/// `get --watch` and `events --watch` outlive what API servers do to watches: a restart of
/// the server (its connections dropped, its watch cache empty), watches broken while the
/// history they would resume from is compacted away (410 Gone, so they list again). Each
/// change is printed once; what did not change is never printed again; Ctrl-C ends both with
/// exit 0 and whole lines; nothing is said on stderr meanwhile (as client-go's informers say
/// nothing at the default log level).
#[test]
fn watches_survive_restarts_broken_connections_and_410() {
    use ferroflux_devcluster::{FaultAction, FaultRule};
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (mut cl, c) = rt.block_on(flux_cluster("staging"));
    rt.block_on(async {
        ks(&c, "apps", "repo", false).await;
        ks(&c, "infra", "repo", false).await;
    });
    let core: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(c.clone(), "flux-system");
    let event = |name: &str, obj: &str, message: &str| {
        let now = k8s_openapi::jiff::Timestamp::now().to_string();
        let e = serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "flux-system"},
            "involvedObject": {"kind": "Kustomization", "name": obj, "namespace": "flux-system"},
            "type": "Normal", "reason": "Progressing", "message": message, "count": 1,
            "firstTimestamp": now, "lastTimestamp": now,
        }))
        .unwrap();
        rt.block_on(core.create(&Default::default(), &e)).unwrap();
    };
    let event_row = |line: &str, obj: &str, message: &str| {
        let object = format!("Kustomization/{obj}");
        assert_eq!(
            cells(line)[0][1..],
            ["Normal", "Progressing", object.as_str(), message],
            "{line:?}"
        );
    };
    event("e1", "apps", "first");
    let kc = kubeconfig(dir.path(), &[&cl]);
    let get = Streaming::start(&kc, &["get", "ks", "--watch", "--timeout", "10m"]);
    let events = Streaming::start(&kc, &["events", "--watch", "--timeout", "10m"]);
    // As flux prints a watch: the header padded to the first row, each later row on its own.
    assert_eq!(
        get.next("header"),
        "NAME\tREVISION\tSUSPENDED\tREADY\tMESSAGE                  "
    );
    assert_eq!(
        get.next("apps"),
        "apps\t        \tFalse    \tFalse\twaiting to be reconciled\t"
    );
    assert_eq!(
        get.next("infra"),
        "infra\t\tFalse\tFalse\twaiting to be reconciled\t"
    );
    assert_eq!(
        cells(&events.next("header"))[0][1..],
        ["TYPE", "REASON", "OBJECT", "MESSAGE"]
    );
    event_row(&events.next("e1"), "apps", "first");

    // 1. The server restarts with its state: the watches come back, and the next change is
    // the next row.
    rt.block_on(async {
        cl.stop().await;
        cl.restart().await.unwrap();
    });
    let applied_a = format!("Applied revision: {}", revision(SHA_A));
    rt.block_on(ks_status(
        &c,
        "apps",
        ("True", &applied_a),
        Some(&revision(SHA_A)),
        json!({}),
    ));
    assert_eq!(
        get.next("apps applied"),
        "apps\tmain@sha1:aaaaaaaa\tFalse\tTrue\tApplied revision: main@sha1:aaaaaaaa\t"
    );
    event("e2", "apps", "second");
    event_row(&events.next("e2"), "apps", "second");

    // 2. The watches break and cannot come back while infra changes, an event is recorded and
    // the history is compacted past them: their return is a 410, they list again, and only
    // what changed meanwhile is printed.
    cl.set_fault_rules(vec![FaultRule::new(FaultAction::Drop).watches()])
        .unwrap();
    rt.block_on(async {
        cl.stop().await;
        cl.restart().await.unwrap();
    });
    rt.block_on(ks_status(
        &c,
        "infra",
        ("False", "health check failed"),
        None,
        json!({}),
    ));
    event("e3", "infra", "third");
    cl.compact_history();
    // The watches tried to come back and were turned away.
    rt.block_on(eventually("both watches refused", || async {
        (cl.faults_injected() >= 2).then_some(())
    }));
    cl.set_fault_rules(vec![]).unwrap();
    assert_eq!(
        get.next("infra failed"),
        "infra\t\tFalse\tFalse\thealth check failed\t"
    );
    event_row(&events.next("e3"), "infra", "third");

    // 3. The next change is the next row: nothing was printed twice in between.
    let applied_b = format!("Applied revision: {}", revision(SHA_B));
    rt.block_on(ks_status(
        &c,
        "apps",
        ("True", &applied_b),
        Some(&revision(SHA_B)),
        json!({}),
    ));
    assert_eq!(
        get.next("apps applied again"),
        "apps\tmain@sha1:bbbbbbbb\tFalse\tTrue\tApplied revision: main@sha1:bbbbbbbb\t"
    );
    event("e4", "apps", "fourth");
    event_row(&events.next("e4"), "apps", "fourth");

    get.interrupt();
    events.interrupt();
    rt.block_on(cl.shutdown());
}

#[test]
fn completions_for_four_shells() {
    for (shell, marker) in [
        ("bash", "_ferroflux()"),
        ("zsh", "#compdef ferroflux"),
        ("fish", "complete -c ferroflux"),
        (
            "powershell",
            "Register-ArgumentCompleter -Native -CommandName 'ferroflux'",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(out.status.success(), "{shell}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains(marker), "{shell}: {text}");
        for word in ["fleet", "reconcile", "suspend", "with-source"] {
            assert!(text.contains(word), "{shell} lacks {word}");
        }
    }
    let out = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args(["completions", "nushell"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid value 'nushell'"));
}
