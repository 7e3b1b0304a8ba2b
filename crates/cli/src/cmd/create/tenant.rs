//! `ferroflux create tenant NAME --with-namespace NS[,NS] [--cluster-role R]
//! [--with-service-account SA] [--skip-namespace] [--export]`: what flux's multi-tenancy
//! lock-down expects of a tenant, per namespace: the Namespace (unless skipped), a ServiceAccount
//! and a RoleBinding of the cluster role to that account and to the `gotk:<ns>:reconciler` user
//! the controllers impersonate; each labelled `toolkit.fluxcd.io/tenant: NAME`. `--export`
//! prints them as flux does; otherwise each is created, or updated where it differs (a
//! RoleBinding, whose roleRef cannot change, is replaced).

use super::secret::parse_labels;
use crate::cluster::{Cluster, KubeArgs};
use crate::output::document::{document, sorted};
use crate::output::progress;
use anyhow::{Context as _, anyhow, bail};
use clap::Args;
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::{Map, Value, json};
use std::process::ExitCode;

/// The label flux puts on every object of a tenant.
const TENANT_LABEL: &str = "toolkit.fluxcd.io/tenant";

/// `create tenant`'s flags.
#[derive(Args, Debug)]
pub struct TenantArgs {
    /// The tenant's name.
    name: Option<String>,
    /// Namespaces belonging to the tenant (repeatable, or comma-separated).
    #[arg(long = "with-namespace", value_delimiter = ',')]
    namespaces: Vec<String>,
    /// The cluster role bound in each namespace.
    #[arg(long, default_value = "cluster-admin")]
    cluster_role: String,
    /// The tenant's service account (default: the tenant's name).
    #[arg(long = "with-service-account")]
    account: Option<String>,
    /// Do not create the namespaces (they must exist already).
    #[arg(long)]
    skip_namespace: bool,
    /// Labels of the objects, as key=value (repeatable, or comma-separated).
    #[arg(long = "label", value_delimiter = ',')]
    labels: Vec<String>,
    /// Print the objects as YAML instead of applying them.
    #[arg(long)]
    export: bool,
}

/// Kubernetes' qualified-name check (label keys, names of many kinds), with its messages.
fn qualified_name_errors(value: &str) -> Vec<String> {
    const NAME_FMT: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                return vec!["prefix part must be non-empty".into()];
            }
            let dns = prefix.len() <= 253
                && prefix.split('.').all(|label| {
                    !label.is_empty()
                        && label
                            .bytes()
                            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                        && !label.starts_with('-')
                        && !label.ends_with('-')
                });
            if !dns {
                return vec!["prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".into()];
            }
            name
        }
        _ => {
            return vec!["a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')".into()];
        }
    };
    let mut errors = Vec::new();
    if name.is_empty() {
        errors.push("name part must be non-empty".into());
    } else if name.len() > 63 {
        errors.push("name part must be no more than 63 characters".into());
    }
    let bytes = name.as_bytes();
    let ok = !name.is_empty()
        && bytes[0].is_ascii_alphanumeric()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if !ok {
        errors.push(NAME_FMT.into());
    }
    errors
}

fn check_name(what: &str, value: &str) -> anyhow::Result<()> {
    let errors = qualified_name_errors(value);
    if !errors.is_empty() {
        bail!("{what} '{value}': [{}]", errors.join(" "));
    }
    Ok(())
}

/// One namespace's objects: the Namespace, the ServiceAccount and the RoleBinding.
struct TenantObjects {
    namespace: Value,
    account: Value,
    role_binding: Value,
}

fn objects(a: &TenantArgs) -> anyhow::Result<Vec<TenantObjects>> {
    let tenant = a
        .name
        .as_deref()
        .filter(|n| !n.is_empty())
        .ok_or_else(|| anyhow!("name is required"))?;
    check_name("invalid tenant name", tenant)?;
    if a.cluster_role.is_empty() {
        bail!("cluster-role is required");
    }
    if a.namespaces.is_empty() {
        bail!("with-namespace is required");
    }
    let mut out = Vec::new();
    for ns in &a.namespaces {
        check_name("invalid namespace", ns)?;
        let mut labels: Map<String, Value> = parse_labels(&a.labels)?;
        labels.insert(TENANT_LABEL.into(), json!(tenant));
        let account = a
            .account
            .as_deref()
            .filter(|s| !s.is_empty())
            .unwrap_or(tenant);
        check_name("invalid service-account name", account)?;
        out.push(TenantObjects {
            namespace: sorted(json!({
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"labels": labels, "name": ns},
            })),
            account: sorted(json!({
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"labels": labels, "name": account, "namespace": ns},
            })),
            role_binding: sorted(json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"labels": labels, "name": format!("{tenant}-reconciler"), "namespace": ns},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": a.cluster_role,
                },
                "subjects": [
                    {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": format!("gotk:{ns}:reconciler")},
                    {"kind": "ServiceAccount", "name": account, "namespace": ns},
                ],
            })),
        });
    }
    Ok(out)
}

/// Runs `create tenant`.
pub async fn run(kube: &KubeArgs, a: &TenantArgs) -> anyhow::Result<ExitCode> {
    let tenant = objects(a)?;
    if a.export {
        let mut text = String::new();
        for t in &tenant {
            let mut docs = vec![&t.account, &t.role_binding];
            if !a.skip_namespace {
                docs.insert(0, &t.namespace);
            }
            for doc in docs {
                text.push_str(&document(doc));
            }
        }
        print!("{text}");
        return Ok(ExitCode::SUCCESS);
    }
    let cluster = Cluster::connect(kube).await?;
    for t in tenant {
        if !a.skip_namespace {
            let ns: Namespace = serde_json::from_value(t.namespace)?;
            let name = ns.metadata.name.clone().unwrap_or_default();
            progress::action(format!("applying namespace {name}"));
            let api: Api<Namespace> = Api::all(cluster.client.clone());
            upsert_labels(&cluster, &api, &name, ns).await?;
        }
        let account: ServiceAccount = serde_json::from_value(t.account)?;
        let (name, ns) = (
            account.metadata.name.clone().unwrap_or_default(),
            account.metadata.namespace.clone().unwrap_or_default(),
        );
        progress::action(format!("applying service account {name}"));
        let api: Api<ServiceAccount> = Api::namespaced(cluster.client.clone(), &ns);
        upsert_labels(&cluster, &api, &name, account).await?;
        let binding: RoleBinding = serde_json::from_value(t.role_binding)?;
        let name = binding.metadata.name.clone().unwrap_or_default();
        progress::action(format!("applying role binding {name}"));
        let api: Api<RoleBinding> = Api::namespaced(cluster.client.clone(), &ns);
        let existing = cluster
            .call(
                &format!("reading RoleBinding {ns}/{name}"),
                api.get_opt(&name),
            )
            .await?;
        let same = existing.as_ref().is_some_and(|e| {
            e.role_ref == binding.role_ref
                && e.subjects == binding.subjects
                && contains_labels(&e.metadata.labels, &binding.metadata.labels)
        });
        if !same {
            if existing.is_some() {
                // roleRef is immutable: a changed binding is deleted and made again, as flux does.
                cluster
                    .call(
                        &format!("deleting RoleBinding {ns}/{name}"),
                        api.delete(&name, &DeleteParams::default()),
                    )
                    .await?;
            }
            cluster
                .call(
                    &format!("creating RoleBinding {ns}/{name}"),
                    api.create(&PostParams::default(), &binding),
                )
                .await?;
        }
    }
    progress::success("tenant setup completed");
    Ok(ExitCode::SUCCESS)
}

fn contains_labels(
    have: &Option<std::collections::BTreeMap<String, String>>,
    want: &Option<std::collections::BTreeMap<String, String>>,
) -> bool {
    let empty = Default::default();
    let have = have.as_ref().unwrap_or(&empty);
    want.as_ref()
        .is_none_or(|w| w.iter().all(|(k, v)| have.get(k) == Some(v)))
}

/// Creates `object`, or sets its labels on the existing one when they differ.
async fn upsert_labels<K>(
    cluster: &Cluster,
    api: &Api<K>,
    name: &str,
    object: K,
) -> anyhow::Result<()>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
{
    let existing = cluster
        .call(&format!("reading {name}"), api.get_opt(name))
        .await?;
    match existing {
        None => {
            cluster
                .call(
                    &format!("creating {name}"),
                    api.create(&PostParams::default(), &object),
                )
                .await?;
        }
        Some(mut current) => {
            let want = object.meta().labels.clone();
            if !contains_labels(&current.meta().labels, &want) {
                current.meta_mut().labels = want;
                cluster
                    .call(
                        &format!("updating {name}"),
                        api.replace(name, &PostParams::default(), &current),
                    )
                    .await
                    .with_context(|| format!("updating the labels of {name}"))?;
            }
        }
    }
    Ok(())
}
