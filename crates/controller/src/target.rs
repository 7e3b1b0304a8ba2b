//! The cluster and identity a Flux object's objects are applied to: the controller's own
//! cluster as itself, or the cluster of a `kubeConfig.secretRef` Secret, in either case
//! impersonating `serviceAccountName` when set. Kustomizations and HelmReleases use it.
//! `kubeConfig.configMapRef` (a cloud provider's workload identity) is refused.

use ferroflux_api::kustomization::KubeConfigReference;
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;

/// The connection settings for an object in `ns` with these `kubeConfig` and
/// `serviceAccountName` fields; `None` when it has neither, which means the controller's own
/// cluster as itself (the caller's shared client). `base` is the controller's own
/// configuration, `client` reads the kubeconfig Secret.
pub async fn config(
    client: &kube::Client,
    base: &kube::Config,
    ns: &str,
    kube_config: Option<&KubeConfigReference>,
    service_account: Option<&str>,
) -> Result<Option<kube::Config>, String> {
    let secret_ref = kube_config.and_then(|k| k.secret_ref.as_ref());
    // A remote cluster reached through a cloud provider's identity: without this refusal the
    // object would fall through to the controller's own cluster and be applied (or pruned)
    // there.
    if let Some(cm) = kube_config.and_then(|k| k.config_map_ref.as_ref())
        && secret_ref.is_none()
    {
        return Err(format!(
            "spec.kubeConfig.configMapRef (ConfigMap '{ns}/{}': a cloud provider's identity for the remote cluster) is not supported yet by ferroflux; nothing was applied: give the remote cluster's kubeconfig in spec.kubeConfig.secretRef",
            cm.name
        ));
    }
    if secret_ref.is_none() && service_account.is_none() {
        return Ok(None);
    }
    let mut config = match secret_ref {
        None => base.clone(),
        Some(secret_ref) => {
            let api: Api<Secret> = Api::namespaced(client.clone(), ns);
            let what = format!("KubeConfig secret '{ns}/{}'", secret_ref.name);
            let secret = api
                .get_opt(&secret_ref.name)
                .await
                .map_err(|e| format!("unable to read {what}: {e}"))?
                .ok_or_else(|| format!("unable to read {what}: not found"))?;
            let data = secret.data.unwrap_or_default();
            let keys: Vec<&str> = match &secret_ref.key {
                Some(k) => vec![k.as_str()],
                None => vec!["value", "value.yaml"],
            };
            let bytes = keys
                .iter()
                .find_map(|k| data.get(*k))
                .ok_or_else(|| format!("{what} has no key {}", keys.join(" or ")))?;
            let text = String::from_utf8(bytes.0.clone())
                .map_err(|_| format!("{what}: kubeconfig is not UTF-8"))?;
            let kubeconfig = kube::config::Kubeconfig::from_yaml(&text)
                .map_err(|e| format!("{what}: invalid kubeconfig: {e}"))?;
            kube::Config::from_custom_kubeconfig(
                kubeconfig,
                &kube::config::KubeConfigOptions::default(),
            )
            .await
            .map_err(|e| format!("{what}: unusable kubeconfig: {e}"))?
        }
    };
    if let Some(sa) = service_account {
        config.auth_info.impersonate = Some(format!("system:serviceaccount:{ns}:{sa}"));
    }
    Ok(Some(config))
}
