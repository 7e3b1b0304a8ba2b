//! What the actions ask of the cluster besides applying (crates/apply does that): the kinds it
//! serves (discovery, cached), objects given their namespace as Helm's client gives it,
//! Capabilities for rendering, `lookup`, reading and deleting single objects, and waiting for
//! hooks and deletions.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube::api::{
    Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PropagationPolicy,
};
use kube::core::{ApiResource, GroupVersionKind};
use kube::discovery::Scope;
use serde_json::{Value, json};

/// How often waits poll the cluster.
const POLL: Duration = Duration::from_millis(250);

fn message_of(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => s.message.clone(),
        other => {
            let mut m = other.to_string();
            let mut src = std::error::Error::source(other);
            while let Some(c) = src {
                let t = c.to_string();
                if !m.contains(&t) {
                    m = format!("{m}: {t}");
                }
                src = c.source();
            }
            m
        }
    }
}

fn gvk_of(obj: &Value) -> GroupVersionKind {
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    GroupVersionKind::gvk(group, version, kind)
}

fn meta<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj.pointer(&format!("/metadata/{key}"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// How long discovered Capabilities are reused (Helm's client caches discovery as well; a
/// release's CRDs installed by an action refresh them at once).
const CAPABILITIES_TTL: Duration = Duration::from_secs(30);

/// One cluster, as the actions use it.
pub struct Cluster {
    pub client: kube::Client,
    kinds: Mutex<HashMap<GroupVersionKind, (ApiResource, bool)>>,
    capabilities: Mutex<Option<(Instant, ferroflux_helm::Capabilities)>>,
    /// Held while discovering, so that releases rendering at once (a fleet created together,
    /// `--concurrent` of them) share one discovery instead of each making its own ~30
    /// requests.
    discovering: tokio::sync::Mutex<()>,
    field_manager: String,
}

impl Cluster {
    pub fn new(client: kube::Client, field_manager: &str) -> Cluster {
        Cluster {
            client,
            kinds: Mutex::new(HashMap::new()),
            capabilities: Mutex::new(None),
            discovering: tokio::sync::Mutex::new(()),
            field_manager: field_manager.to_string(),
        }
    }

    /// Forgets the discovered kinds and Capabilities (after CRDs were installed).
    pub fn forget_kinds(&self) {
        if let Ok(mut k) = self.kinds.lock() {
            k.clear();
        }
        if let Ok(mut c) = self.capabilities.lock() {
            *c = None;
        }
    }

    /// The API resource of a kind and whether it is namespaced; Helm's message when the
    /// cluster does not serve it.
    pub async fn kind(&self, gvk: &GroupVersionKind) -> Result<(ApiResource, bool), String> {
        let known = || self.kinds.lock().ok().and_then(|k| k.get(gvk).cloned());
        if let Some(found) = known() {
            return Ok(found);
        }
        let _one_at_a_time = self.discovering.lock().await;
        if let Some(found) = known() {
            return Ok(found);
        }
        let (ar, caps) = kube::discovery::pinned_kind(&self.client, gvk)
            .await
            .map_err(|_| {
                let api_version = if gvk.group.is_empty() {
                    gvk.version.clone()
                } else {
                    format!("{}/{}", gvk.group, gvk.version)
                };
                format!(
                    "no matches for kind {:?} in version {:?}",
                    gvk.kind, api_version
                )
            })?;
        let found = (ar, caps.scope == Scope::Namespaced);
        if let Ok(mut k) = self.kinds.lock() {
            k.insert(gvk.clone(), found.clone());
        }
        Ok(found)
    }

    /// Gives namespaced objects without a namespace the release's (as Helm's client builds
    /// them) and drops a namespace from cluster-scoped ones. Fails as Helm does on a kind the
    /// cluster does not serve.
    pub async fn namespaced(&self, objects: &mut [Value], namespace: &str) -> Result<(), String> {
        for obj in objects.iter_mut() {
            let gvk = gvk_of(obj);
            let (_, namespaced) = self.kind(&gvk).await.map_err(|e| {
                format!(
                    "resource mapping not found for name: {:?} namespace: {:?} from \"\": {e}\nensure CRDs are installed first",
                    meta(obj, "name"),
                    meta(obj, "namespace")
                )
            })?;
            let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
                continue;
            };
            if namespaced {
                let empty = m
                    .get("namespace")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty);
                if empty {
                    m.insert("namespace".into(), Value::String(namespace.into()));
                }
            } else {
                m.remove("namespace");
            }
        }
        Ok(())
    }

    async fn api(&self, obj: &Value) -> Result<Api<DynamicObject>, String> {
        let (ar, namespaced) = self.kind(&gvk_of(obj)).await?;
        let ns = meta(obj, "namespace");
        Ok(if namespaced && !ns.is_empty() {
            Api::namespaced_with(self.client.clone(), ns, &ar)
        } else {
            Api::all_with(self.client.clone(), &ar)
        })
    }

    /// The live object, `None` when absent.
    pub async fn get(&self, obj: &Value) -> Result<Option<Value>, String> {
        let api = self.api(obj).await?;
        let live = api.get_opt(meta(obj, "name")).await.map_err(|e| {
            format!(
                "could not get information about the resource {}: {}",
                crate::manifest::resource_string(obj),
                message_of(&e)
            )
        })?;
        Ok(live.map(|l| serde_json::to_value(l).unwrap_or(Value::Null)))
    }

    /// Server-side applies one object as the field manager, taking over conflicting fields
    /// (how hooks and CRDs are created).
    pub async fn apply(&self, obj: &Value) -> Result<(), String> {
        let api = self.api(obj).await?;
        let params = PatchParams::apply(&self.field_manager).force();
        api.patch(meta(obj, "name"), &params, &Patch::Apply(obj))
            .await
            .map(|_| ())
            .map_err(|e| message_of(&e))
    }

    /// Creates one object; `Ok(false)` when it exists already.
    pub async fn create(&self, obj: &Value) -> Result<bool, String> {
        let api = self.api(obj).await?;
        let dynamic: DynamicObject =
            serde_json::from_value(obj.clone()).map_err(|e| e.to_string())?;
        let pp = kube::api::PostParams {
            field_manager: Some(self.field_manager.clone()),
            ..Default::default()
        };
        match api.create(&pp, &dynamic).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(message_of(&e)),
        }
    }

    /// Deletes one object in the background; absent is fine.
    pub async fn delete(&self, obj: &Value) -> Result<(), String> {
        self.delete_with(obj, PropagationPolicy::Background).await
    }

    /// Deletes one object, its dependents as `propagation` says; absent is fine.
    pub async fn delete_with(
        &self,
        obj: &Value,
        propagation: PropagationPolicy,
    ) -> Result<(), String> {
        let api = match self.api(obj).await {
            Ok(api) => api,
            // A kind no longer served has nothing left to delete.
            Err(_) => return Ok(()),
        };
        let dp = DeleteParams {
            propagation_policy: Some(propagation),
            ..Default::default()
        };
        match api.delete(meta(obj, "name"), &dp).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(e) => Err(format!(
                "{}: {}",
                crate::manifest::resource_string(obj),
                message_of(&e)
            )),
        }
    }

    /// Waits until none of `objects` exists.
    pub async fn wait_deleted(&self, objects: &[Value], timeout: Duration) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        loop {
            let mut left = Vec::new();
            for o in objects {
                if let Ok(Some(_)) = self.get(o).await {
                    left.push(crate::manifest::resource_string(o));
                }
            }
            if left.is_empty() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "timed out waiting for the deletion of: {}",
                    left.join(", ")
                ));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Helm's `WatchUntilReady` for a hook: a Job until it completes (fails when it failed),
    /// a Pod until it succeeded (fails when it failed); other kinds at once.
    pub async fn wait_hook(&self, obj: &Value, timeout: Duration) -> Result<(), String> {
        let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
        if kind != "Job" && kind != "Pod" {
            return Ok(());
        }
        let name = meta(obj, "name");
        let deadline = Instant::now() + timeout;
        loop {
            let live = self.get(obj).await?;
            if let Some(live) = &live {
                if kind == "Job" {
                    let conds = live
                        .pointer("/status/conditions")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default();
                    let is = |t: &str| {
                        conds.iter().find(|c| {
                            c.get("type").and_then(Value::as_str) == Some(t)
                                && c.get("status").and_then(Value::as_str) == Some("True")
                        })
                    };
                    if is("Complete").is_some() {
                        return Ok(());
                    }
                    if let Some(c) = is("Failed") {
                        let reason = c.get("reason").and_then(Value::as_str).unwrap_or("");
                        return Err(format!("job {name} failed: {reason}"));
                    }
                } else {
                    match live.pointer("/status/phase").and_then(Value::as_str) {
                        Some("Succeeded") => return Ok(()),
                        Some("Failed") => return Err(format!("pod {name} failed")),
                        _ => {}
                    }
                }
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "timed out waiting for the condition: {kind} {name} did not {} within {}s",
                    if kind == "Job" { "complete" } else { "succeed" },
                    timeout.as_secs()
                ));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// `.Capabilities` of the live cluster, as Helm's `getCapabilities` builds them: the
    /// server's version, and every group/version and group/version/Kind discovery lists.
    pub async fn capabilities(&self) -> Result<ferroflux_helm::Capabilities, String> {
        let cached = || {
            self.capabilities.lock().ok().and_then(|c| {
                c.as_ref()
                    .filter(|(at, _)| at.elapsed() < CAPABILITIES_TTL)
                    .map(|(_, caps)| caps.clone())
            })
        };
        if let Some(caps) = cached() {
            return Ok(caps);
        }
        // Whoever waited here while another release discovered takes its answer.
        let _one_at_a_time = self.discovering.lock().await;
        if let Some(caps) = cached() {
            return Ok(caps);
        }
        let caps = self.discover_capabilities().await?;
        if let Ok(mut c) = self.capabilities.lock() {
            *c = Some((Instant::now(), caps.clone()));
        }
        Ok(caps)
    }

    async fn discover_capabilities(&self) -> Result<ferroflux_helm::Capabilities, String> {
        let version = self.client.apiserver_version().await.map_err(|e| {
            format!(
                "could not get server version from Kubernetes: {}",
                message_of(&e)
            )
        })?;
        let kube_version = ferroflux_helm::KubeVersion::parse(&version.git_version)?;
        let discovery_err = |e: kube::Error| {
            format!(
                "could not get apiVersions from Kubernetes: {}",
                message_of(&e)
            )
        };
        let mut set = BTreeSet::new();
        let core = self
            .client
            .list_core_api_versions()
            .await
            .map_err(discovery_err)?;
        let mut group_versions: Vec<String> = core.versions.clone();
        let groups = self.client.list_api_groups().await.map_err(discovery_err)?;
        for g in &groups.groups {
            for v in &g.versions {
                group_versions.push(v.group_version.clone());
            }
        }
        for gv in group_versions {
            let resources = if gv.contains('/') {
                self.client.list_api_group_resources(&gv).await
            } else {
                self.client.list_core_api_resources(&gv).await
            };
            let resources = resources.map_err(discovery_err)?;
            for r in &resources.resources {
                set.insert(format!("{gv}/{}", r.kind));
            }
            set.insert(gv);
        }
        Ok(ferroflux_helm::Capabilities {
            kube_version,
            api_versions: set.into_iter().collect(),
        })
    }

    /// Helm's `lookup`, answered from the cluster: one object by name, every object of the
    /// kind (in the namespace) when the name is empty, an empty map when nothing is found.
    /// Runs on a blocking thread (rendering is synchronous), driving the request on `handle`.
    pub fn lookup_fn(
        self: &Arc<Self>,
        handle: tokio::runtime::Handle,
    ) -> Arc<ferroflux_helm::LookupFn> {
        let cluster = self.clone();
        Arc::new(
            move |api_version: &str, kind: &str, namespace: &str, name: &str| {
                let probe = json!({"apiVersion": api_version, "kind": kind, "metadata": {"namespace": namespace, "name": name}});
                let cluster = cluster.clone();
                handle.block_on(async move { cluster.lookup(&probe).await })
            },
        )
    }

    async fn lookup(&self, probe: &Value) -> Result<Value, String> {
        let name = meta(probe, "name");
        let (ar, namespaced) = self
            .kind(&gvk_of(probe))
            .await
            .map_err(|e| format!("unable to get apiresource from unstructured: {e}"))?;
        let ns = meta(probe, "namespace");
        let api: Api<DynamicObject> = if namespaced && !ns.is_empty() {
            Api::namespaced_with(self.client.clone(), ns, &ar)
        } else {
            Api::all_with(self.client.clone(), &ar)
        };
        if name.is_empty() {
            let list = match api.list(&ListParams::default()).await {
                Ok(l) => l,
                Err(kube::Error::Api(s)) if s.code == 404 => return Ok(json!({})),
                Err(e) => return Err(message_of(&e)),
            };
            let items: Vec<Value> = list
                .items
                .iter()
                .map(|o| {
                    let mut v = serde_json::to_value(o).unwrap_or(Value::Null);
                    // List items come without their type; Helm's (client-go's) carry it.
                    if let Some(m) = v.as_object_mut() {
                        m.entry("apiVersion")
                            .or_insert_with(|| probe["apiVersion"].clone());
                        m.entry("kind")
                            .or_insert_with(|| Value::String(ar.kind.clone()));
                    }
                    v
                })
                .collect();
            let mut out = json!({
                "apiVersion": probe["apiVersion"],
                "kind": format!("{}List", ar.kind),
                "items": items,
                "metadata": {},
            });
            if let Some(rv) = list.metadata.resource_version {
                out["metadata"]["resourceVersion"] = Value::String(rv);
            }
            return Ok(out);
        }
        match api.get_opt(name).await {
            Ok(Some(o)) => Ok(serde_json::to_value(o).unwrap_or(Value::Null)),
            Ok(None) => Ok(json!({})),
            Err(e) => Err(message_of(&e)),
        }
    }
}
