//! The notification kinds through the CLI, as flux's commands handle them: `create
//! alert-provider|alert|receiver` (`--export` as flux prints it, flux's bad-input messages, the
//! apply path waiting for the real Receiver controller of the `Manager` in this process), `get
//! alert-providers|alerts|receivers` and `get all` (flux's columns; Alerts and Providers have
//! no status and show ready, so `--status-selector ready=true` keeps them, as flux's
//! `Test_GetCmdStatusSelectorSyntheticReady` checks), `suspend|resume`, `reconcile receiver`,
//! `events`, `export`, `delete` and the completion scripts.

use crate::run::*;
use ferroflux_api::notification::{EventSeverity, webhook_path};
use ferroflux_api::{Alert, Provider, Receiver};
use ferroflux_controller::manager::{Manager, ManagerConfig};
use ferroflux_testkit::{flux_cluster, kubeconfig};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, PostParams};
use std::process::{Command, Output};

fn create(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .arg("create")
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn exports_as_flux_prints_them() {
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "alert-provider",
                "slack",
                "--type",
                "slack",
                "--channel",
                "general",
                "--address",
                "https://hooks.slack.com/services/YOUR/SLACK/WEBHOOK",
                "--secret-ref",
                "webhook-url",
            ],
            "---\napiVersion: notification.toolkit.fluxcd.io/v1beta3\nkind: Provider\nmetadata:\n  \
             name: slack\n  namespace: flux-system\nspec:\n  \
             address: https://hooks.slack.com/services/YOUR/SLACK/WEBHOOK\n  channel: general\n  \
             secretRef:\n    name: webhook-url\n  type: slack\n",
        ),
        (
            vec![
                "alert",
                "flux-system",
                "--event-severity",
                "info",
                "--event-source",
                "Kustomization/flux-system",
                "--event-source",
                "GitRepository/*.apps,HelmRelease/podinfo",
                "--provider-ref",
                "slack",
                "--label",
                "team=ops",
            ],
            "---\napiVersion: notification.toolkit.fluxcd.io/v1beta3\nkind: Alert\nmetadata:\n  \
             labels:\n    team: ops\n  name: flux-system\n  namespace: flux-system\nspec:\n  \
             eventSeverity: info\n  eventSources:\n  - kind: Kustomization\n    name: flux-system\n  \
             - kind: GitRepository\n    name: '*'\n    namespace: apps\n  - kind: HelmRelease\n    \
             name: podinfo\n  providerRef:\n    name: slack\n",
        ),
        (
            vec![
                "receiver",
                "github-receiver",
                "--type",
                "github",
                "--event",
                "ping",
                "--event",
                "push",
                "--secret-ref",
                "webhook-token",
                "--resource",
                "GitRepository/webapp",
                "--resource",
                "HelmRepository/webapp",
            ],
            "---\napiVersion: notification.toolkit.fluxcd.io/v1\nkind: Receiver\nmetadata:\n  \
             name: github-receiver\n  namespace: flux-system\nspec:\n  events:\n  - ping\n  - push\n  \
             resources:\n  - kind: GitRepository\n    name: webapp\n  - kind: HelmRepository\n    \
             name: webapp\n  secretRef:\n    name: webhook-token\n  type: github\n",
        ),
    ];
    for (args, want) in cases {
        let mut args = args.clone();
        args.push("--export");
        let out = create(&args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert_eq!(stdout(&out), want, "{args:?}");
        assert!(out.stderr.is_empty(), "{}", stderr(&out));
    }
}

#[test]
fn bad_flags_get_flux_messages() {
    let kinds = "\"Bucket\", \"GitRepository\", \"Kustomization\", \"HelmRelease\", \
                 \"HelmChart\", \"HelmRepository\", \"ImageRepository\", \"ImagePolicy\", \
                 \"ImageUpdateAutomation\", \"OCIRepository\", \"ArtifactGenerator\", \
                 \"ExternalArtifact\"";
    let cases: Vec<(Vec<&str>, String)> =
        vec![
        (
            vec!["alert-provider", "--type", "slack"],
            "name is required".into(),
        ),
        (
            vec!["alert-provider", "slack"],
            "Provider type is required".into(),
        ),
        (
            vec!["alert-provider", "chat", "--type", "slak"],
            "Provider.notification.toolkit.fluxcd.io \"chat\" is invalid: spec.type: Unsupported \
             value: \"slak\": supported values: \"slack\", \"discord\", \"msteams\", \"rocket\", \
             \"generic\", \"generic-hmac\", \"github\", \"gitlab\", \"gitea\", \
             \"giteapullrequestcomment\", \"bitbucketserver\", \"bitbucket\", \"azuredevops\", \
             \"googlechat\", \"googlepubsub\", \"webex\", \"sentry\", \"azureeventhub\", \
             \"telegram\", \"lark\", \"matrix\", \"opsgenie\", \"alertmanager\", \"grafana\", \
             \"githubdispatch\", \"githubpullrequestcomment\", \"gitlabmergerequestcomment\", \
             \"pagerduty\", \"datadog\", \"nats\", \"zulip\", \"otel\", \"zoom\", \"incident.io\""
                .into(),
        ),
        (
            vec!["alert-provider", "chat", "--type", "slack", "--label", "team"],
            "invalid label format 'team', must be key=value".into(),
        ),
        (
            vec!["alert", "apps", "--event-source", "Kustomization/apps"],
            "provider ref is required".into(),
        ),
        (
            vec!["alert", "apps", "--provider-ref", "slack"],
            "at least one event source is required".into(),
        ),
        (
            vec![
                "alert",
                "apps",
                "--provider-ref",
                "slack",
                "--event-source",
                "Kustomization",
            ],
            "invalid event source 'Kustomization', must be in format <kind>/<name>".into(),
        ),
        (
            vec![
                "alert",
                "apps",
                "--provider-ref",
                "slack",
                "--event-source",
                "Kustomization/a/b",
            ],
            "invalid event source 'Kustomization/a/b', must be in format <kind>/<name>".into(),
        ),
        (
            vec![
                "alert",
                "apps",
                "--provider-ref",
                "slack",
                "--event-source",
                "Kustomization/apps,Deployment/web",
            ],
            format!(
                "Alert.notification.toolkit.fluxcd.io \"apps\" is invalid: \
                 spec.eventSources[1].kind: Unsupported value: \"Deployment\": supported values: \
                 {kinds}"
            ),
        ),
        (
            vec![
                "alert",
                "apps",
                "--provider-ref",
                "slack",
                "--event-source",
                "Kustomization/apps",
                "--event-severity",
                "warning",
            ],
            "Alert.notification.toolkit.fluxcd.io \"apps\" is invalid: spec.eventSeverity: \
             Unsupported value: \"warning\": supported values: \"info\", \"error\""
                .into(),
        ),
        (
            vec!["receiver", "hook", "--secret-ref", "t"],
            "Receiver type is required".into(),
        ),
        (
            vec!["receiver", "hook", "--type", "gitea"],
            "invalid argument \"gitea\" for \"--type\" flag: receiver type 'gitea' is not \
             supported, must be one of: generic, generic-hmac, github, gitlab, bitbucket, harbor, \
             dockerhub, quay, gcr, nexus, acr, cdevents"
                .into(),
        ),
        (
            vec!["receiver", "hook", "--type", ""],
            "invalid argument \"\" for \"--type\" flag: no receiver type given, please specify \
             the receiver type"
                .into(),
        ),
        (
            vec!["receiver", "hook", "--type", "github"],
            "secret ref is required".into(),
        ),
        (
            vec!["receiver", "hook", "--type", "github", "--secret-ref", "t"],
            "atleast one resource is required".into(),
        ),
        (
            vec![
                "receiver",
                "hook",
                "--type",
                "github",
                "--secret-ref",
                "t",
                "--resource",
                "flux-system",
            ],
            "invalid event source 'flux-system', must be in format <kind>/<name>".into(),
        ),
        (
            vec![
                "receiver",
                "hook",
                "--type",
                "github",
                "--secret-ref",
                "t",
                "--resource",
                "GitRepo/flux-system",
            ],
            format!(
                "Receiver.notification.toolkit.fluxcd.io \"hook\" is invalid: \
                 spec.resources[0].kind: Unsupported value: \"GitRepo\": supported values: {kinds}"
            ),
        ),
    ];
    let mut failed = Vec::new();
    for (args, message) in &cases {
        // The same refusal whether the object would be printed or applied.
        for export in [true, false] {
            let mut args = args.clone();
            if export {
                args.push("--export");
            } else {
                args.extend(["--kubeconfig", "/nonexistent/kubeconfig"]);
            }
            let out = create(&args);
            let err = stderr(&out);
            if out.status.code() != Some(1)
                || err != format!("✗ {message}\n")
                || !out.stdout.is_empty()
            {
                failed.push(format!(
                    "{args:?}: exit {:?}, stderr {err:?}",
                    out.status.code()
                ));
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn completions_cover_the_notification_commands() {
    let out = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args(["completions", "bash"])
        .output()
        .unwrap();
    let script = stdout(&out);
    for path in [
        "ferroflux__create__alert__provider",
        "ferroflux__create__alert",
        "ferroflux__create__receiver",
        "ferroflux__get__alert__providers",
        "ferroflux__get__alerts",
        "ferroflux__get__receivers",
        "ferroflux__reconcile__receiver",
        "ferroflux__suspend__alert",
        "ferroflux__resume__receiver",
        "ferroflux__resume__alert__provider",
        "ferroflux__export__alert__provider",
        "ferroflux__delete__receiver",
    ] {
        // clap_complete's bash function names: `__subcmd__` between the words.
        let function = path.replace("__", "__subcmd__");
        assert!(script.contains(&function), "no completion for {path}");
    }
}

#[test]
fn create_get_suspend_resume_reconcile_delete_on_a_cluster() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let storage = tempfile::tempdir().unwrap();
    let (cl, c, manager) = rt.block_on(async {
        let (cl, c) = flux_cluster("staging").await;
        let config = cl.kube_config().await.unwrap();
        let manager = Manager::start(c.clone(), config, ManagerConfig::local(storage.path()))
            .await
            .unwrap();
        (cl, c, manager)
    });
    let kc = kubeconfig(dir.path(), &[&cl]);
    let run = |args: &[&str]| {
        let out = ferroflux(&kc, args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out));
        out
    };

    // Nothing yet: flux's error for an empty listing.
    let out = ferroflux(&kc, &["get", "alerts"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "✗ no Alert objects found in \"flux-system\" namespace\n"
    );

    // A Provider and an Alert: no controller status, ready once they exist.
    let out = run(&[
        "create",
        "alert-provider",
        "slack",
        "--type",
        "slack",
        "--channel",
        "general",
        "--address",
        "https://hooks.slack.com/services/X",
    ]);
    assert_eq!(
        stderr(&out),
        "✚ generating Provider\n► applying Provider\n✔ Provider created\n\
         ◎ waiting for Provider reconciliation\n✔ Provider slack is ready\n"
    );
    let out = run(&[
        "create",
        "alert",
        "apps",
        "--provider-ref",
        "slack",
        "--event-source",
        "Kustomization/*",
        "--event-severity",
        "error",
    ]);
    assert_eq!(
        stderr(&out),
        "✚ generating Alert\n► applying Alert\n✔ Alert created\n\
         ◎ waiting for Alert reconciliation\n✔ Alert apps is ready\n"
    );
    // Again with other flags: the spec is replaced (the severity is gone), as flux's update.
    let out = run(&[
        "create",
        "alert",
        "apps",
        "--provider-ref",
        "slack",
        "--event-source",
        "Kustomization/apps",
    ]);
    assert!(
        stderr(&out).contains("✔ Alert updated\n"),
        "{}",
        stderr(&out)
    );
    let alerts: Api<Alert> = Api::namespaced(c.clone(), "flux-system");
    let apps = rt.block_on(alerts.get("apps")).unwrap();
    assert_eq!(apps.spec.event_sources[0].name, "apps");
    assert_eq!(
        apps.spec.event_severity,
        Some(EventSeverity::Info),
        "the update dropped --event-severity error; the CRD's default is left"
    );

    // A Receiver waits for the controller, then prints its webhook path.
    let secrets: Api<Secret> = Api::namespaced(c.clone(), "flux-system");
    let secret: Secret = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "webhook-token", "namespace": "flux-system"},
        "stringData": {"token": "s3cr3t-t0ken"},
    }))
    .unwrap();
    rt.block_on(secrets.create(&PostParams::default(), &secret))
        .unwrap();
    let out = run(&[
        "create",
        "receiver",
        "github",
        "--type",
        "github",
        "--event",
        "ping,push",
        "--secret-ref",
        "webhook-token",
        "--resource",
        "GitRepository/flux-system",
    ]);
    let path = webhook_path("s3cr3t-t0ken", "github", "flux-system");
    assert_eq!(
        stderr(&out),
        format!(
            "✚ generating Receiver\n► applying Receiver\n✔ Receiver created\n\
             ◎ waiting for Receiver reconciliation\n✔ Receiver github is ready\n\
             ✔ generated webhook URL {path}\n"
        )
    );
    // A Receiver whose Secret is missing: the controller's reason, exit 1, still applied.
    let out = ferroflux(
        &kc,
        &[
            "create",
            "receiver",
            "nosecret",
            "--type",
            "generic",
            "--secret-ref",
            "missing",
            "--resource",
            "Kustomization/apps",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        stderr(&out).contains("✗ Receiver reconciliation failed: '"),
        "{}",
        stderr(&out)
    );
    let receivers: Api<Receiver> = Api::namespaced(c.clone(), "flux-system");
    assert!(rt.block_on(receivers.get("nosecret")).is_ok());

    // flux's columns for each kind.
    let out = run(&["get", "alert-providers"]);
    assert_eq!(
        cells(&stdout(&out)),
        vec![
            vec!["NAME", "READY", "MESSAGE"],
            vec!["slack", "True", "Provider is Ready"]
        ]
    );
    let out = run(&["get", "alerts"]);
    assert_eq!(
        cells(&stdout(&out)),
        vec![
            vec!["NAME", "SUSPENDED", "READY", "MESSAGE"],
            vec!["apps", "False", "True", "Alert is Ready"]
        ]
    );
    let out = run(&["get", "receivers"]);
    let rows = cells(&stdout(&out));
    assert_eq!(rows[0], vec!["NAME", "SUSPENDED", "READY", "MESSAGE"]);
    assert_eq!(
        rows[1],
        vec![
            "github".to_string(),
            "False".into(),
            "True".into(),
            format!("Receiver initialized for path: {path}")
        ]
    );
    assert_eq!(rows[2][0..3], ["nosecret", "False", "False"]);
    let out = run(&["get", "receivers", "--status-selector", "ready=true"]);
    assert_eq!(cells(&stdout(&out)).len(), 2, "{}", stdout(&out));
    let out = run(&["get", "receiver", "github", "-A"]);
    assert_eq!(
        cells(&stdout(&out))[0],
        vec!["NAMESPACE", "NAME", "SUSPENDED", "READY", "MESSAGE"]
    );
    // A static kind's synthetic Ready=True is what the status selector sees, as in flux.
    for kind in ["alerts", "alert-providers"] {
        let all = stdout(&run(&["get", kind]));
        let ready = stdout(&run(&["get", kind, "--status-selector", "ready=true"]));
        assert_eq!(all, ready, "{kind}");
    }
    let out = run(&["get", "alert-providers", "-o", "json"]);
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list["items"][0]["spec"]["channel"], "general");
    // `get all` ends with the three kinds, in flux's order, names prefixed with their kind.
    let out = run(&["get", "all"]);
    let all = stdout(&out);
    let receiver_at = all.find("receiver/github").unwrap();
    let provider_at = all.find("provider/slack").unwrap();
    let alert_at = all.find("alert/apps").unwrap();
    assert!(receiver_at < provider_at && provider_at < alert_at, "{all}");
    assert!(all.ends_with("\n\n"), "{all:?}");

    // suspend and resume, with flux's words for each kind.
    let out = run(&["suspend", "alert", "apps"]);
    assert_eq!(
        stderr(&out),
        "► suspending alert apps in flux-system namespace\n✔ alert suspended\n"
    );
    assert_eq!(
        rt.block_on(alerts.get("apps")).unwrap().spec.suspend,
        Some(true)
    );
    let out = run(&["get", "alerts"]);
    assert_eq!(cells(&stdout(&out))[1][1], "True");
    let out = run(&["resume", "alert", "apps"]);
    assert_eq!(
        stderr(&out),
        "► resuming alert apps in flux-system namespace\n✔ alert resumed\n\
         ◎ waiting for Alert reconciliation\n✔ Alert apps reconciliation completed\n\
         ✔ Alert reconciliation completed\n"
    );
    assert_eq!(rt.block_on(alerts.get("apps")).unwrap().spec.suspend, None);
    let out = run(&["suspend", "alert-provider", "slack"]);
    assert_eq!(
        stderr(&out),
        "► suspending alert provider slack in flux-system namespace\n\
         ✔ alert provider suspended\n"
    );
    let providers: Api<Provider> = Api::namespaced(c.clone(), "flux-system");
    assert_eq!(
        rt.block_on(providers.get("slack")).unwrap().spec.suspend,
        Some(true)
    );
    let out = run(&["resume", "alert-provider", "slack"]);
    assert!(
        stderr(&out).ends_with("✔ Provider reconciliation completed\n"),
        "{}",
        stderr(&out)
    );
    let out = run(&["suspend", "receiver", "github"]);
    assert_eq!(
        stderr(&out),
        "► suspending receiver github in flux-system namespace\n✔ receiver suspended\n"
    );
    // A suspended Receiver is not reconciled on request.
    let out = ferroflux(&kc, &["reconcile", "receiver", "github"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out), "✗ resource is suspended\n");
    let out = run(&["resume", "receiver", "github"]);
    assert_eq!(
        stderr(&out),
        "► resuming receiver github in flux-system namespace\n✔ receiver resumed\n\
         ◎ waiting for Receiver reconciliation\n✔ Receiver github reconciliation completed\n\
         ✔ Receiver reconciliation completed\n"
    );

    // reconcile: the Receiver's controller handles the request; Alerts have no reconciler.
    let out = run(&["reconcile", "receiver", "github"]);
    assert_eq!(
        stderr(&out),
        "► annotating Receiver github in flux-system namespace\n✔ Receiver annotated\n\
         ◎ waiting for Receiver reconciliation\n✔ Receiver reconciliation completed\n"
    );
    let github = rt.block_on(receivers.get("github")).unwrap();
    assert_eq!(
        github.status.unwrap().last_handled_reconcile_at.as_deref(),
        github
            .metadata
            .annotations
            .unwrap()
            .get(ferroflux_api::RECONCILE_REQUESTED_AT)
            .map(String::as_str)
    );
    let out = run(&["reconcile", "alert", "apps"]);
    assert_eq!(
        stderr(&out),
        "✔ reconciliation not supported by the object\n"
    );
    let out = ferroflux(&kc, &["reconcile", "alert-provider", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "✗ Provider object 'nope' not found in \"flux-system\" namespace\n"
    );

    // export prints what create --export printed, with the server's defaults.
    let out = run(&["export", "alert-provider", "slack"]);
    assert_eq!(
        stdout(&out),
        "---\napiVersion: notification.toolkit.fluxcd.io/v1beta3\nkind: Provider\nmetadata:\n  \
         name: slack\n  namespace: flux-system\nspec:\n  \
         address: https://hooks.slack.com/services/X\n  channel: general\n  type: slack\n"
    );

    // delete, silently.
    for (kind, name) in [
        ("alert", "apps"),
        ("alert-provider", "slack"),
        ("receiver", "github"),
    ] {
        run(&["delete", kind, name, "--silent"]);
    }
    assert!(rt.block_on(alerts.get_opt("apps")).unwrap().is_none());
    assert!(rt.block_on(providers.get_opt("slack")).unwrap().is_none());
    assert!(rt.block_on(receivers.get_opt("github")).unwrap().is_none());

    rt.block_on(manager.shutdown()).unwrap();
    drop(cl);
}
