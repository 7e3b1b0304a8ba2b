//! Impersonation with RBAC (driven by the real kubectl `--as` and by kube-rs `impersonate`) and
//! faults that break connections or answer errors for chosen requests.

use ferroflux_testkit::Kubectl;

use crate::api_err;
use ferroflux_devcluster::{Config, DevCluster, FaultAction, FaultRule};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

const SA: &str = "system:serviceaccount:flux-system:deployer";

const RBAC: &str = "
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-b}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: config-editor, namespace: team-a}
rules:
- apiGroups: ['']
  resources: [configmaps]
  verbs: [get, list, watch, create, patch]
- apiGroups: [apps]
  resources: [deployments/status]
  verbs: ['*']
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: deployer, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: config-editor}
subjects:
- {kind: ServiceAccount, name: deployer, namespace: flux-system}
";

fn cluster_role(name: &str, resource: &str, verbs: &str) -> String {
    format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {{name: {name}}}\nrules:\n- {{apiGroups: [''], resources: [{resource}], verbs: [{verbs}]}}\n"
    )
}

fn role(ns: &str, name: &str, verbs: &str, names: &str) -> String {
    format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {{name: {name}, namespace: {ns}}}\nrules:\n- {{apiGroups: [''], resources: [configmaps], verbs: [{verbs}], resourceNames: [{names}]}}\n"
    )
}

/// A RoleBinding (`ns` set) or ClusterRoleBinding to `role_kind/role` for one subject.
fn binding(ns: Option<&str>, name: &str, role_kind: &str, role: &str, subject: &str) -> String {
    let (kind, meta) = match ns {
        Some(ns) => ("RoleBinding", format!("{{name: {name}, namespace: {ns}}}")),
        None => ("ClusterRoleBinding", format!("{{name: {name}}}")),
    };
    format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: {kind}\nmetadata: {meta}\nroleRef: {{apiGroup: rbac.authorization.k8s.io, kind: {role_kind}, name: {role}}}\nsubjects:\n- {subject}\n"
    )
}

const SA_SUBJECT: &str = "{kind: ServiceAccount, name: deployer, namespace: flux-system}";

fn cm(ns: &str, name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: {ns}}}\ndata: {{color: blue}}\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn impersonated_requests_follow_rbac() {
    let c = DevCluster::start(Config::memory("rbac")).await.unwrap();
    let k = Kubectl::new(&[&c]);
    k.ok(&["apply", "-f", "-"], RBAC);
    let as_sa = format!("--as={SA}");

    // Allowed by the Role in team-a, through kubectl's Impersonate-User header; server-side
    // apply of a new object needs both patch and create, both granted there.
    let out = k.ok(
        &["apply", "--server-side", &as_sa, "-f", "-"],
        &cm("team-a", "settings"),
    );
    assert!(
        out.contains("configmap/settings serverside-applied"),
        "{out}"
    );
    let out = k.ok(&["get", "cm", "-n", "team-a", &as_sa], "");
    assert!(out.contains("settings"), "{out}");

    // `kubectl auth can-i` asks the same authorizer (a SelfSubjectAccessReview).
    let can_i = |args: &[&str]| -> String {
        let o = k.run(&[&["auth", "can-i"], args].concat(), "");
        let answer = String::from_utf8(o.stdout).unwrap().trim().to_string();
        assert_eq!(o.status.success(), answer == "yes", "{args:?}: {answer}");
        answer
    };
    assert_eq!(
        can_i(&["create", "configmaps", "-n", "team-a", &as_sa]),
        "yes"
    );
    assert_eq!(
        can_i(&["create", "configmaps", "-n", "team-b", &as_sa]),
        "no"
    );
    assert_eq!(
        can_i(&["delete", "configmaps", "-n", "team-a", &as_sa]),
        "no"
    );
    assert_eq!(
        can_i(&[
            "patch",
            "deployments",
            "--subresource=status",
            "-n",
            "team-a",
            &as_sa
        ]),
        "yes"
    );
    assert_eq!(
        can_i(&["patch", "deployments", "-n", "team-a", &as_sa]),
        "no"
    );
    assert_eq!(can_i(&["delete", "namespaces"]), "yes");

    // Denied elsewhere, with the API server's message.
    let err = k.fails(
        &["apply", "--server-side", &as_sa, "-f", "-"],
        &cm("team-b", "settings"),
    );
    assert!(
        err.contains(&format!(
            "configmaps \"settings\" is forbidden: User \"{SA}\" cannot patch resource \"configmaps\" in API group \"\" in the namespace \"team-b\""
        )),
        "{err}"
    );
    let err = k.fails(&["get", "cm", "-n", "team-b", &as_sa], "");
    assert!(
        err.contains(&format!(
            "configmaps is forbidden: User \"{SA}\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"team-b\""
        )),
        "{err}"
    );
    // Verbs outside the rule, other kinds and the cluster scope are denied too.
    let err = k.fails(&["delete", "cm", "settings", "-n", "team-a", &as_sa], "");
    assert!(
        err.contains("cannot delete resource \"configmaps\""),
        "{err}"
    );
    let err = k.fails(&["get", "secrets", "-n", "team-a", &as_sa], "");
    assert!(err.contains("cannot list resource \"secrets\""), "{err}");
    let err = k.fails(&["get", "cm", "-A", &as_sa], "");
    assert!(
        err.contains("cannot list resource \"configmaps\" in API group \"\" at the cluster scope"),
        "{err}"
    );
    // Nothing was written by the denied requests; the cluster's own user sees everything.
    let out = k.ok(&["get", "cm", "-A", "-o", "name"], "");
    assert_eq!(out.trim(), "configmap/settings", "{out}");

    // A ClusterRole bound by a RoleBinding grants only in that namespace; with a
    // ClusterRoleBinding it grants everywhere.
    k.ok(
        &["apply", "-f", "-"],
        &cluster_role("cm-reader", "configmaps", "get, list"),
    );
    k.ok(
        &["apply", "-f", "-"],
        &binding(
            Some("team-b"),
            "read-b",
            "ClusterRole",
            "cm-reader",
            SA_SUBJECT,
        ),
    );
    k.ok(&["get", "cm", "-n", "team-b", &as_sa], "");
    k.fails(&["get", "cm", "-n", "default", &as_sa], "");
    k.ok(
        &["apply", "-f", "-"],
        &binding(None, "read-all", "ClusterRole", "cm-reader", SA_SUBJECT),
    );
    k.ok(&["get", "cm", "-A", &as_sa], "");
    // Groups: a binding to the service accounts' group covers every service account.
    k.ok(
        &["apply", "-f", "-"],
        &cluster_role("ns-reader", "namespaces", "get"),
    );
    k.fails(
        &[
            "get",
            "ns",
            "team-b",
            "--as=system:serviceaccount:other:bot",
        ],
        "",
    );
    k.ok(
        &["apply", "-f", "-"],
        &binding(
            None,
            "sa-ns",
            "ClusterRole",
            "ns-reader",
            "{kind: Group, name: system:serviceaccounts}",
        ),
    );
    k.ok(
        &[
            "get",
            "ns",
            "team-b",
            "--as=system:serviceaccount:other:bot",
        ],
        "",
    );
    // Explicit groups replace the implicit ones; system:masters is cluster-admin.
    k.fails(
        &[
            "get",
            "ns",
            "team-b",
            "--as=system:serviceaccount:other:bot",
            "--as-group=devs",
        ],
        "",
    );
    k.ok(
        &[
            "get",
            "secrets",
            "-A",
            "--as=jane",
            "--as-group=system:masters",
        ],
        "",
    );

    // cluster-admin exists as in every cluster: bound in a namespace (as `flux create
    // tenant` does), it grants everything there and nothing elsewhere.
    let tenant = "--as=system:serviceaccount:tenant:reconciler";
    k.ok(
        &["apply", "-f", "-"],
        &binding(
            Some("team-b"),
            "tenant",
            "ClusterRole",
            "cluster-admin",
            "{kind: ServiceAccount, name: reconciler, namespace: tenant}",
        ),
    );
    k.ok(&["get", "secrets,configmaps", "-n", "team-b", tenant], "");
    k.fails(&["get", "secrets", "-n", "team-a", tenant], "");

    // A binding to a missing role denies, naming the role.
    k.ok(
        &["apply", "-f", "-"],
        &binding(
            Some("default"),
            "ghost",
            "Role",
            "nowhere",
            "{kind: User, name: jane}",
        ),
    );
    let err = k.fails(&["get", "cm", "-n", "default", "--as=jane"], "");
    assert!(
        err.contains("RBAC: role.rbac.authorization.k8s.io \"nowhere\" not found"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_impersonation_subresources_and_resource_names() {
    let c = DevCluster::start(Config::memory("rbac-rs")).await.unwrap();
    let admin = c.client().await.unwrap();
    let k = Kubectl::new(&[&c]);
    k.ok(&["apply", "-f", "-"], RBAC);
    k.ok(
        &["apply", "-f", "-"],
        &role("team-b", "one", "get, patch", "only-this"),
    );
    k.ok(
        &["apply", "-f", "-"],
        &binding(Some("team-b"), "one", "Role", "one", SA_SUBJECT),
    );
    let admin_b: Api<ConfigMap> = Api::namespaced(admin.clone(), "team-b");
    for name in ["only-this", "another"] {
        let obj: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": name}, "data": {"a": "1"}}))
                .unwrap();
        admin_b.create(&PostParams::default(), &obj).await.unwrap();
    }

    let mut config = c.kube_config().await.unwrap();
    config.auth_info.impersonate = Some(SA.into());
    let sa = kube::Client::try_from(config).unwrap();
    let b: Api<ConfigMap> = Api::namespaced(sa.clone(), "team-b");
    let patch = Patch::Merge(json!({"data": {"a": "2"}}));
    b.patch("only-this", &PatchParams::default(), &patch)
        .await
        .unwrap();
    let denied = match b.patch("another", &PatchParams::default(), &patch).await {
        Err(kube::Error::Api(s)) => s,
        other => panic!("expected Forbidden, got {other:?}"),
    };
    assert_eq!((denied.code, denied.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        admin_b.get("another").await.unwrap().data.unwrap()["a"],
        "1",
        "a denied patch changes nothing"
    );
    // A server-side apply that creates needs create as well as patch.
    k.ok(
        &["apply", "-f", "-"],
        &role("default", "patcher", "get, patch", "").replace(", resourceNames: []", ""),
    );
    k.ok(
        &["apply", "-f", "-"],
        &binding(Some("default"), "patcher", "Role", "patcher", SA_SUBJECT),
    );
    let admin_default: Api<ConfigMap> = Api::namespaced(admin.clone(), "default");
    let existing: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "there"}, "data": {"a": "1"}})).unwrap();
    admin_default
        .create(&PostParams::default(), &existing)
        .await
        .unwrap();
    let d: Api<ConfigMap> = Api::namespaced(sa.clone(), "default");
    let apply = |name: &str| {
        Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name}, "data": {"a": "2"}}))
    };
    d.patch("there", &PatchParams::apply("t").force(), &apply("there"))
        .await
        .unwrap();
    for params in [PatchParams::apply("t").dry_run(), PatchParams::apply("t")] {
        let denied = match d.patch("new", &params, &apply("new")).await {
            Err(kube::Error::Api(s)) => s,
            other => panic!("expected Forbidden, got {other:?}"),
        };
        assert_eq!(
            denied.message,
            format!(
                "configmaps \"new\" is forbidden: User \"{SA}\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"default\""
            )
        );
    }
    assert!(admin_default.get_opt("new").await.unwrap().is_none());

    // Deployments' status subresource is granted in team-a, not the deployments themselves.
    let a = Api::<k8s_openapi::api::apps::v1::Deployment>::namespaced(sa.clone(), "team-a");
    let denied = match a.get("web").await {
        Err(kube::Error::Api(s)) => s,
        other => panic!("expected Forbidden, got {other:?}"),
    };
    assert_eq!(denied.code, 403, "{}", denied.message);
    let not_found = match a.get_status("web").await {
        Err(kube::Error::Api(s)) => s,
        other => panic!("expected NotFound, got {other:?}"),
    };
    assert_eq!(not_found.code, 404, "{}", not_found.message);

    // The same client without impersonation is unrestricted.
    Api::<ConfigMap>::namespaced(admin, "team-b")
        .patch("another", &PatchParams::default(), &patch)
        .await
        .unwrap();
}

fn is_broken_connection(e: &kube::Error) -> bool {
    !matches!(e, kube::Error::Api(_))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_break_connections_of_chosen_requests() {
    let c = DevCluster::start(Config::memory("drops")).await.unwrap();
    let client = c.client().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let obj = |v: &str| -> ConfigMap {
        serde_json::from_value(json!({"metadata": {"name": "x"}, "data": {"v": v}})).unwrap()
    };
    api.create(&PostParams::default(), &obj("1")).await.unwrap();

    // The next two writes of ConfigMaps are dropped unanswered and not served; reads pass.
    // (Strategic merge patches: the clients never send one twice, so each drop is seen.)
    c.set_fault_rules(vec![
        FaultRule::new(FaultAction::Drop)
            .writes()
            .resource("configmaps")
            .times(2),
    ])
    .unwrap();
    let patch = Patch::Strategic(json!({"data": {"v": "2"}}));
    for _ in 0..2 {
        let e = api
            .patch("x", &PatchParams::default(), &patch)
            .await
            .unwrap_err();
        assert!(is_broken_connection(&e), "a broken connection, not {e:?}");
    }
    assert_eq!(c.faults_injected(), 2);
    assert_eq!(api.get("x").await.unwrap().data.unwrap()["v"], "1");
    api.patch("x", &PatchParams::default(), &patch)
        .await
        .unwrap();
    assert_eq!(api.get("x").await.unwrap().data.unwrap()["v"], "2");

    // Dropped after serving: the write happens, the client never hears of it.
    c.set_fault_rules(vec![
        FaultRule::new(FaultAction::DropAfterServing)
            .methods(&["PATCH"])
            .name("x")
            .dry_run(false),
    ])
    .unwrap();
    // A dry-run is not matched.
    let dry = PatchParams::default().dry_run();
    api.patch("x", &dry, &Patch::Merge(json!({"data": {"v": "dry"}})))
        .await
        .unwrap();
    let e = api
        .patch(
            "x",
            &PatchParams::default(),
            &Patch::Strategic(json!({"data": {"v": "3"}})),
        )
        .await
        .unwrap_err();
    assert!(is_broken_connection(&e), "a broken connection, not {e:?}");
    assert_eq!(api.get("x").await.unwrap().data.unwrap()["v"], "3");
    assert_eq!(c.faults_injected(), 3);

    // Error answers for one resource at a rate; other resources are not touched. (Strategic
    // merge patches again: a retried read would hide the errors.)
    c.set_fault_rules(vec![
        FaultRule::new(FaultAction::Error(500))
            .resource("configmaps")
            .rate(0.5),
    ])
    .unwrap();
    let mut failed = 0;
    for _ in 0..6 {
        match api.patch("x", &PatchParams::default(), &patch).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) => {
                assert_eq!((s.code, s.reason.as_str()), (500, "InternalError"));
                failed += 1;
            }
            Err(e) => panic!("{e:?}"),
        }
    }
    assert_eq!(failed, 3);
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client, "default");
    for _ in 0..4 {
        secrets.list(&Default::default()).await.unwrap();
    }

    // Bad rules are refused; an empty list clears them.
    assert!(
        c.set_fault_rules(vec![FaultRule::new(FaultAction::Error(404))])
            .is_err()
    );
    assert!(
        c.set_fault_rules(vec![FaultRule::new(FaultAction::Drop).rate(2.0)])
            .is_err()
    );
    c.set_fault_rules(vec![]).unwrap();
    for _ in 0..4 {
        api.get("x").await.unwrap();
    }
}

/// The clients the project builds (here the cluster's own, `ferroflux_kubeclient::client`)
/// retry an answer carrying `Retry-After` (a 429 or a 5xx) as client-go does, waiting what it
/// says, at most ten times, writes included. Idempotent requests (reads, server-side applies,
/// dry-runs) are also retried after a transient 5xx without `Retry-After` or a broken
/// connection, with a short jittered backoff, at most five times; other writes are not (their
/// first attempt may have been served). The real kubectl (client-go) reads the fault rules'
/// `Retry-After` the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_retry_only_what_the_server_asks_to_retry() {
    let c = DevCluster::start(Config::memory("retries")).await.unwrap();
    let client = c.client().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let obj: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "x"}, "data": {"v": "1"}})).unwrap();
    api.create(&PostParams::default(), &obj).await.unwrap();
    let rule = |code| FaultRule::new(FaultAction::Error(code)).resource("configmaps");
    let merge = |v: &str| Patch::Merge(json!({"data": {"v": v}}));

    // 503 without Retry-After on a strategic merge patch (not idempotent): one attempt, the
    // server's answer.
    c.set_fault_rules(vec![rule(503)]).unwrap();
    let e = api_err(
        api.patch(
            "x",
            &PatchParams::default(),
            &Patch::Strategic(json!({"data": {"v": "0"}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!((e.code, e.reason.as_str()), (503, "ServiceUnavailable"));
    assert_eq!(c.faults_injected(), 1);

    // On a read, a server-side apply, a merge patch and a dry-run: tried again, five times at
    // most.
    let injected = c.faults_injected();
    let e = api_err(api.get("x").await.unwrap_err());
    assert_eq!((e.code, e.reason.as_str()), (503, "ServiceUnavailable"));
    let attempts = 1 + u64::from(ferroflux_kubeclient::MAX_TRANSIENT_RETRIES);
    assert_eq!(c.faults_injected(), injected + attempts);
    c.set_fault_rules(vec![rule(503).times(2), rule(500).times(1)])
        .unwrap();
    assert_eq!(api.get("x").await.unwrap().data.unwrap()["v"], "1");
    let apply = json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "x"}, "data": {"v": "1"}});
    c.set_fault_rules(vec![rule(503).times(3)]).unwrap();
    api.patch("x", &PatchParams::apply("test"), &Patch::Apply(&apply))
        .await
        .unwrap();
    c.set_fault_rules(vec![rule(500).times(2)]).unwrap();
    api.patch(
        "x",
        &PatchParams::default().dry_run(),
        &Patch::Strategic(json!({"data": {"v": "dry"}})),
    )
    .await
    .unwrap();
    assert_eq!(api.get("x").await.unwrap().data.unwrap()["v"], "1");
    c.set_fault_rules(vec![rule(503).times(1)]).unwrap();
    api.patch("x", &PatchParams::default(), &merge("1"))
        .await
        .unwrap();
    assert_eq!(c.faults_injected(), injected + attempts + 3 + 3 + 2 + 1);
    let retried = ferroflux_kubeclient::retries()
        .get_or_create(&ferroflux_kubeclient::RetryLabels {
            verb: "PATCH".into(),
            code: "503".into(),
        })
        .get();
    assert!(retried >= 3, "the apply's retries are counted: {retried}");
    c.set_fault_rules(vec![]).unwrap();
    let base = c.faults_injected();

    // 429 with Retry-After: 1, twice: retried after the pause asked for, then served.
    c.set_fault_rules(vec![rule(429).retry_after(1).times(2)])
        .unwrap();
    let started = std::time::Instant::now();
    assert_eq!(api.get("x").await.unwrap().data.unwrap()["v"], "1");
    assert!(started.elapsed() >= std::time::Duration::from_secs(2));
    assert_eq!(c.faults_injected(), base + 2);

    // A write is sent again too, body and all; any 5xx with Retry-After counts.
    c.set_fault_rules(vec![rule(500).retry_after(0).writes().times(1)])
        .unwrap();
    api.patch(
        "x",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"v": "2"}})),
    )
    .await
    .unwrap();
    assert_eq!(c.faults_injected(), base + 3);
    assert_eq!(api.get("x").await.unwrap().data.unwrap()["v"], "2");

    // Ten retries at most: the eleventh answer is the caller's.
    c.set_fault_rules(vec![rule(503).retry_after(0)]).unwrap();
    let e = api_err(api.get("x").await.unwrap_err());
    assert_eq!(e.code, 503);
    assert_eq!(c.faults_injected(), base + 3 + 11);

    // A GET whose connection is closed unanswered is tried again (a dropped write is not:
    // faults_break_connections_of_chosen_requests).
    c.set_fault_rules(vec![
        FaultRule::new(FaultAction::Drop)
            .methods(&["GET"])
            .resource("configmaps")
            .times(1),
    ])
    .unwrap();
    assert_eq!(api.get("x").await.unwrap().data.unwrap()["v"], "2");
    assert_eq!(c.faults_injected(), base + 15);

    // kubectl: with Retry-After it retries and succeeds; without, it reports the 429.
    let k = Kubectl::new(&[&c]);
    c.set_fault_rules(vec![rule(429).retry_after(0).times(2)])
        .unwrap();
    let out = k.ok(&["get", "configmap", "x", "-o", "name"], "");
    assert_eq!(out, "configmap/x\n");
    assert_eq!(c.faults_injected(), base + 17);
    c.set_fault_rules(vec![rule(429).times(1)]).unwrap();
    let err = k.fails(&["get", "configmap", "x"], "");
    assert!(
        err.contains("TooManyRequests") || err.contains("too many requests"),
        "{err}"
    );
    assert_eq!(c.faults_injected(), base + 18);

    // A Retry-After on a broken connection is a mistake, refused.
    assert!(
        c.set_fault_rules(vec![FaultRule::new(FaultAction::Drop).retry_after(1)])
            .is_err()
    );
    c.shutdown().await;
}
