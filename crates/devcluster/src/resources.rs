//! The kinds this server serves: a fixed table of built-in kinds plus those that
//! CustomResourceDefinitions add at run time. Discovery, routing and OpenAPI all read from here.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::util::NameRule;

/// One printer column of a CRD (`additionalPrinterColumns`).
#[derive(Clone, Debug)]
pub struct PrinterColumn {
    pub name: String,
    pub type_: String,
    pub format: String,
    pub description: String,
    pub priority: i64,
    pub json_path: String,
}

/// Where a CRD's `scale` subresource reads and writes (`subresources.scale`), as field paths.
#[derive(Clone, Debug)]
pub struct ScalePaths {
    pub spec_replicas: Vec<String>,
    pub status_replicas: Vec<String>,
    pub label_selector: Option<Vec<String>>,
}

/// A served resource: one group, one kind, one or more versions.
#[derive(Clone, Debug)]
pub struct Resource {
    pub group: String,
    /// Served versions, preferred (storage) first.
    pub versions: Vec<String>,
    pub kind: String,
    pub list_kind: String,
    pub plural: String,
    pub singular: String,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub namespaced: bool,
    pub status_subresource: bool,
    /// Printer columns per version (CRDs only).
    pub printer_columns: BTreeMap<String, Vec<PrinterColumn>>,
    /// The CRD that defines this resource, if any.
    pub crd: Option<String>,
    /// A CRD's `openAPIV3Schema` per served version (structural: pruning and defaults read it).
    pub schemas: BTreeMap<String, Arc<Value>>,
    /// Whether fields the schema does not declare are pruned (false only with the CRD's
    /// `spec.preserveUnknownFields: true`).
    pub prune_unknown: bool,
    /// A CRD's `scale` subresource.
    pub scale: Option<ScalePaths>,
}

impl Resource {
    /// The storage key: version-independent, like etcd's `/registry/<group>/<plural>`.
    pub fn key(&self) -> String {
        if crate::events::is_events_api(self) {
            return crate::events::KEY.to_string();
        }
        format!("{}/{}", self.group, self.plural)
    }
    pub fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() {
            version.to_string()
        } else {
            format!("{}/{}", self.group, version)
        }
    }

    pub fn name_rule(&self) -> NameRule {
        match (self.group.as_str(), self.plural.as_str()) {
            ("", "namespaces") | ("", "services") => NameRule::Label,
            ("rbac.authorization.k8s.io", _) => NameRule::PathSegment,
            _ => NameRule::Subdomain,
        }
    }
    /// Whether the kind has the `scale` subresource (autoscaling/v1 Scale).
    pub fn has_scale(&self) -> bool {
        self.scale.is_some()
            || self.crd.is_none()
                && matches!(
                    (self.group.as_str(), self.plural.as_str()),
                    ("apps", "deployments" | "statefulsets" | "replicasets")
                        | ("", "replicationcontrollers")
                )
    }
    /// Whether the kind has the `log` subresource (Pods).
    pub fn has_log(&self) -> bool {
        self.crd.is_none() && self.group.is_empty() && self.plural == "pods"
    }
    /// Whether a DELETE that removes the object at once answers with the object rather than a
    /// `Status` (`ReturnDeletedObject` of the kind's registry in kube-apiserver).
    pub fn returns_deleted_object(&self) -> bool {
        self.crd.is_none()
            && matches!(
                (self.group.as_str(), self.plural.as_str()),
                ("", "pods" | "services" | "serviceaccounts" | "namespaces")
                    | ("storage.k8s.io", "storageclasses")
            )
    }
    /// Reviews that are answered, not stored: create is their only verb.
    pub fn is_review(&self) -> bool {
        self.group == "authorization.k8s.io" && self.crd.is_none()
    }
    /// The Pod subresources `server::pods` answers (attach, binding, eviction, exec,
    /// portforward).
    pub fn has_pod_actions(&self) -> bool {
        self.has_log()
    }
    /// Bindings: create is their only verb.
    pub fn is_binding(&self) -> bool {
        self.crd.is_none() && self.group.is_empty() && self.plural == "bindings"
    }
    /// ComponentStatuses: read-only and computed.
    pub fn is_component_status(&self) -> bool {
        self.crd.is_none() && self.group.is_empty() && self.plural == "componentstatuses"
    }
    pub fn verbs(&self) -> Vec<&'static str> {
        if self.is_review() || self.is_binding() {
            return vec!["create"];
        }
        if self.is_component_status() {
            return vec!["get", "list"];
        }
        vec![
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ]
    }
}

struct Builtin {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    short: &'static [&'static str],
    namespaced: bool,
    status: bool,
    categories: &'static [&'static str],
}

#[allow(clippy::too_many_arguments)] // a table row, read positionally
const fn b(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    short: &'static [&'static str],
    namespaced: bool,
    status: bool,
    categories: &'static [&'static str],
) -> Builtin {
    Builtin {
        group,
        version,
        kind,
        plural,
        short,
        namespaced,
        status,
        categories,
    }
}

const ALL: &[&str] = &["all"];
const NONE: &[&str] = &[];

/// The built-in kinds, with the scope, short names and categories of Kubernetes 1.33.
const BUILTINS: &[Builtin] = &[
    b(
        "",
        "v1",
        "Namespace",
        "namespaces",
        &["ns"],
        false,
        true,
        NONE,
    ),
    b(
        "",
        "v1",
        "ConfigMap",
        "configmaps",
        &["cm"],
        true,
        false,
        NONE,
    ),
    b("", "v1", "Secret", "secrets", NONE, true, false, NONE),
    b("", "v1", "Service", "services", &["svc"], true, true, ALL),
    b(
        "",
        "v1",
        "ServiceAccount",
        "serviceaccounts",
        &["sa"],
        true,
        false,
        NONE,
    ),
    b(
        "",
        "v1",
        "Endpoints",
        "endpoints",
        &["ep"],
        true,
        false,
        NONE,
    ),
    b("", "v1", "Pod", "pods", &["po"], true, true, ALL),
    b(
        "",
        "v1",
        "PersistentVolume",
        "persistentvolumes",
        &["pv"],
        false,
        true,
        NONE,
    ),
    b(
        "",
        "v1",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        &["pvc"],
        true,
        true,
        NONE,
    ),
    b(
        "",
        "v1",
        "ResourceQuota",
        "resourcequotas",
        &["quota"],
        true,
        true,
        NONE,
    ),
    b(
        "",
        "v1",
        "LimitRange",
        "limitranges",
        &["limits"],
        true,
        false,
        NONE,
    ),
    b("", "v1", "Event", "events", &["ev"], true, false, NONE),
    b(
        "apps",
        "v1",
        "Deployment",
        "deployments",
        &["deploy"],
        true,
        true,
        ALL,
    ),
    b(
        "apps",
        "v1",
        "StatefulSet",
        "statefulsets",
        &["sts"],
        true,
        true,
        ALL,
    ),
    b(
        "apps",
        "v1",
        "DaemonSet",
        "daemonsets",
        &["ds"],
        true,
        true,
        ALL,
    ),
    b(
        "apps",
        "v1",
        "ReplicaSet",
        "replicasets",
        &["rs"],
        true,
        true,
        ALL,
    ),
    b("batch", "v1", "Job", "jobs", NONE, true, true, ALL),
    b(
        "batch",
        "v1",
        "CronJob",
        "cronjobs",
        &["cj"],
        true,
        true,
        ALL,
    ),
    b(
        "networking.k8s.io",
        "v1",
        "Ingress",
        "ingresses",
        &["ing"],
        true,
        true,
        NONE,
    ),
    b(
        "networking.k8s.io",
        "v1",
        "IngressClass",
        "ingressclasses",
        NONE,
        false,
        false,
        NONE,
    ),
    b(
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
        "networkpolicies",
        &["netpol"],
        true,
        false,
        NONE,
    ),
    b(
        "storage.k8s.io",
        "v1",
        "StorageClass",
        "storageclasses",
        &["sc"],
        false,
        false,
        NONE,
    ),
    b(
        "rbac.authorization.k8s.io",
        "v1",
        "Role",
        "roles",
        NONE,
        true,
        false,
        NONE,
    ),
    b(
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        "rolebindings",
        NONE,
        true,
        false,
        NONE,
    ),
    b(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        "clusterroles",
        NONE,
        false,
        false,
        NONE,
    ),
    b(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        NONE,
        false,
        false,
        NONE,
    ),
    b(
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        &["hpa"],
        true,
        true,
        ALL,
    ),
    b(
        "policy",
        "v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        &["pdb"],
        true,
        true,
        NONE,
    ),
    b(
        "scheduling.k8s.io",
        "v1",
        "PriorityClass",
        "priorityclasses",
        &["pc"],
        false,
        false,
        NONE,
    ),
    b(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        &["crd", "crds"],
        false,
        true,
        NONE,
    ),
    b(
        "coordination.k8s.io",
        "v1",
        "Lease",
        "leases",
        NONE,
        true,
        false,
        NONE,
    ),
    b(
        "events.k8s.io",
        "v1",
        "Event",
        "events",
        NONE,
        true,
        false,
        NONE,
    ),
    b(
        "admissionregistration.k8s.io",
        "v1",
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
        NONE,
        false,
        false,
        NONE,
    ),
    b(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        NONE,
        false,
        false,
        NONE,
    ),
    b(
        "apiregistration.k8s.io",
        "v1",
        "APIService",
        "apiservices",
        NONE,
        false,
        true,
        NONE,
    ),
    // The rest of what Kubernetes 1.33 serves by default (beta and alpha groups are off by
    // default there, so MutatingAdmissionPolicy, VolumeAttributesClass and resource.k8s.io are
    // not served: a later version's kinds are 404 here as there).
    b("", "v1", "Node", "nodes", &["no"], false, true, NONE),
    // Served at v1 too, converted from the stored v2 form (`hpa`).
    b(
        "autoscaling",
        "v1",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        &["hpa"],
        true,
        true,
        ALL,
    ),
    // Answered, never stored: a scheduler's Bindings, and the deprecated ComponentStatuses.
    b("", "v1", "Binding", "bindings", NONE, true, false, NONE),
    b(
        "",
        "v1",
        "ComponentStatus",
        "componentstatuses",
        &["cs"],
        false,
        false,
        NONE,
    ),
    b(
        "",
        "v1",
        "PodTemplate",
        "podtemplates",
        NONE,
        true,
        false,
        NONE,
    ),
    b(
        "",
        "v1",
        "ReplicationController",
        "replicationcontrollers",
        &["rc"],
        true,
        true,
        ALL,
    ),
    b(
        "apps",
        "v1",
        "ControllerRevision",
        "controllerrevisions",
        NONE,
        true,
        false,
        NONE,
    ),
    b(
        "certificates.k8s.io",
        "v1",
        "CertificateSigningRequest",
        "certificatesigningrequests",
        &["csr"],
        false,
        true,
        NONE,
    ),
    b(
        "discovery.k8s.io",
        "v1",
        "EndpointSlice",
        "endpointslices",
        NONE,
        true,
        false,
        NONE,
    ),
    b(
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "FlowSchema",
        "flowschemas",
        NONE,
        false,
        true,
        NONE,
    ),
    b(
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "PriorityLevelConfiguration",
        "prioritylevelconfigurations",
        NONE,
        false,
        true,
        NONE,
    ),
    b(
        "networking.k8s.io",
        "v1",
        "IPAddress",
        "ipaddresses",
        &["ip"],
        false,
        false,
        NONE,
    ),
    b(
        "networking.k8s.io",
        "v1",
        "ServiceCIDR",
        "servicecidrs",
        NONE,
        false,
        true,
        NONE,
    ),
    b(
        "node.k8s.io",
        "v1",
        "RuntimeClass",
        "runtimeclasses",
        NONE,
        false,
        false,
        NONE,
    ),
    b(
        "storage.k8s.io",
        "v1",
        "CSIDriver",
        "csidrivers",
        NONE,
        false,
        false,
        NONE,
    ),
    b(
        "storage.k8s.io",
        "v1",
        "CSINode",
        "csinodes",
        NONE,
        false,
        false,
        NONE,
    ),
    b(
        "storage.k8s.io",
        "v1",
        "CSIStorageCapacity",
        "csistoragecapacities",
        NONE,
        true,
        false,
        NONE,
    ),
    b(
        "storage.k8s.io",
        "v1",
        "VolumeAttachment",
        "volumeattachments",
        NONE,
        false,
        true,
        NONE,
    ),
    b(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicy",
        "validatingadmissionpolicies",
        NONE,
        false,
        true,
        NONE,
    ),
    b(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicyBinding",
        "validatingadmissionpolicybindings",
        NONE,
        false,
        false,
        NONE,
    ),
    // Answered, never stored (`kubectl auth can-i`).
    b(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
        NONE,
        false,
        false,
        NONE,
    ),
];

/// Every served resource, built-in and custom.
#[derive(Clone, Debug)]
pub struct Registry {
    resources: Vec<Arc<Resource>>,
    /// Bumped on every change, so discovery and OpenAPI caches can be keyed by it.
    pub generation: u64,
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new()
    }
}

impl Registry {
    pub fn new() -> Registry {
        let resources = BUILTINS
            .iter()
            .map(|b| {
                Arc::new(Resource {
                    group: b.group.into(),
                    versions: vec![b.version.into()],
                    kind: b.kind.into(),
                    list_kind: format!("{}List", b.kind),
                    plural: b.plural.into(),
                    singular: b.kind.to_ascii_lowercase(),
                    short_names: b.short.iter().map(|s| s.to_string()).collect(),
                    categories: b.categories.iter().map(|s| s.to_string()).collect(),
                    namespaced: b.namespaced,
                    status_subresource: b.status,
                    printer_columns: BTreeMap::new(),
                    crd: None,
                    schemas: BTreeMap::new(),
                    prune_unknown: false,
                    scale: None,
                })
            })
            .collect();
        Registry {
            resources,
            generation: 1,
        }
    }

    pub fn all(&self) -> &[Arc<Resource>] {
        &self.resources
    }

    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<Arc<Resource>> {
        self.resources
            .iter()
            .find(|r| {
                r.group == group && r.plural == plural && r.versions.iter().any(|v| v == version)
            })
            .cloned()
    }

    /// Groups in discovery order (core excluded), each with its served versions.
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for r in &self.resources {
            if r.group.is_empty() {
                continue;
            }
            let entry = match out.iter_mut().position(|(g, _)| *g == r.group) {
                Some(i) => &mut out[i].1,
                None => {
                    out.push((r.group.clone(), Vec::new()));
                    &mut out.last_mut().expect("just pushed").1
                }
            };
            for v in &r.versions {
                if !entry.contains(v) {
                    entry.push(v.clone());
                }
            }
        }
        out
    }

    pub fn by_key(&self, key: &str) -> Option<Arc<Resource>> {
        self.resources.iter().find(|r| r.key() == key).cloned()
    }

    pub fn in_group_version(&self, group: &str, version: &str) -> Vec<Arc<Resource>> {
        self.resources
            .iter()
            .filter(|r| r.group == group && r.versions.iter().any(|v| v == version))
            .cloned()
            .collect()
    }

    /// Replaces the resource a CRD defines (or removes it when `resource` is `None`).
    pub fn set_crd(&mut self, crd_name: &str, resource: Option<Resource>) {
        self.resources
            .retain(|r| r.crd.as_deref() != Some(crd_name));
        if let Some(r) = resource {
            self.resources.push(Arc::new(r));
        }
        self.generation += 1;
    }
}

/// Reads the resource a CRD object defines; `Err` names the first problem (for a 422).
pub fn resource_from_crd(crd: &Value) -> Result<Resource, (String, String)> {
    let name = crd
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let spec = crd
        .get("spec")
        .ok_or(("spec".to_string(), "Required value".to_string()))?;
    let s = |p: &str| {
        spec.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let group = s("/group");
    let plural = s("/names/plural");
    let kind = s("/names/kind");
    if group.is_empty() {
        return Err(("spec.group".into(), "Required value".into()));
    }
    if !group.contains('.') {
        return Err((
            "spec.group".into(),
            format!("Invalid value: {group:?}: should be a domain with at least one dot"),
        ));
    }
    if plural.is_empty() {
        return Err(("spec.names.plural".into(), "Required value".into()));
    }
    if kind.is_empty() {
        return Err(("spec.names.kind".into(), "Required value".into()));
    }
    if name != format!("{plural}.{group}") {
        return Err((
            "metadata.name".into(),
            format!("Invalid value: {name:?}: must be spec.names.plural+\".\"+spec.group"),
        ));
    }
    let scope = s("/scope");
    let namespaced = match scope.as_str() {
        "Namespaced" => true,
        "Cluster" => false,
        other => {
            return Err((
                "spec.scope".into(),
                format!(
                    "Unsupported value: {other:?}: supported values: \"Cluster\", \"Namespaced\""
                ),
            ));
        }
    };
    let versions = spec
        .get("versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if versions.is_empty() {
        return Err((
            "spec.versions".into(),
            "Invalid value: must have exactly one version marked as storage version".into(),
        ));
    }
    let storage: Vec<&Value> = versions
        .iter()
        .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .collect();
    if storage.len() != 1 {
        return Err((
            "spec.versions".into(),
            "Invalid value: must have exactly one version marked as storage version".into(),
        ));
    }
    let mut served: Vec<String> = Vec::new();
    let mut status_subresource = false;
    let mut printer_columns = BTreeMap::new();
    let mut schemas = BTreeMap::new();
    let mut scale = None;
    for (i, v) in versions.iter().enumerate() {
        let vname = v
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if v.get("served").and_then(Value::as_bool) != Some(true) {
            continue;
        }
        if v.pointer("/subresources/status").is_some() {
            status_subresource = true;
        }
        if let Some(sc) = v.pointer("/subresources/scale") {
            scale = Some(scale_paths(sc, i)?);
        }
        let cols = v
            .get("additionalPrinterColumns")
            .and_then(Value::as_array)
            .map(|cols| {
                cols.iter()
                    .map(|c| {
                        let f = |k: &str| {
                            c.get(k)
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_string()
                        };
                        PrinterColumn {
                            name: f("name"),
                            type_: f("type"),
                            format: f("format"),
                            description: f("description"),
                            priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                            json_path: f("jsonPath"),
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        printer_columns.insert(vname.clone(), cols);
        if let Some(schema) = v.pointer("/schema/openAPIV3Schema") {
            schemas.insert(vname.clone(), Arc::new(schema.clone()));
        }
        served.push(vname);
    }
    // Kubernetes prefers the storage version; put it first when it is served.
    let storage_name = storage[0]
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if let Some(i) = served.iter().position(|v| v == storage_name) {
        let v = served.remove(i);
        served.insert(0, v);
    }
    let list = |p: &str| {
        spec.pointer(p)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default()
    };
    let singular = match s("/names/singular") {
        x if x.is_empty() => kind.to_ascii_lowercase(),
        x => x,
    };
    let list_kind = match s("/names/listKind") {
        x if x.is_empty() => format!("{kind}List"),
        x => x,
    };
    Ok(Resource {
        group,
        versions: served,
        kind,
        list_kind,
        plural,
        singular,
        short_names: list("/names/shortNames"),
        categories: list("/names/categories"),
        namespaced,
        status_subresource,
        printer_columns,
        crd: Some(name.to_string()),
        schemas,
        scale,
        prune_unknown: spec.get("preserveUnknownFields").and_then(Value::as_bool) != Some(true),
    })
}

/// Reads `subresources.scale` of the CRD version at `index`; `Err` as the API server's
/// validation words it.
fn scale_paths(sc: &Value, index: usize) -> Result<ScalePaths, (String, String)> {
    let field = |name: &str| format!("spec.versions[{index}].subresources.scale.{name}");
    let path =
        |name: &str, under: &[&str], what: &str| -> Result<Option<Vec<String>>, (String, String)> {
            let Some(p) = sc
                .get(name)
                .and_then(Value::as_str)
                .filter(|p| !p.is_empty())
            else {
                return Ok(None);
            };
            let parts: Vec<String> = p
                .strip_prefix('.')
                .unwrap_or("")
                .split('.')
                .map(String::from)
                .collect();
            if parts.len() < 2
                || parts.iter().any(String::is_empty)
                || !under.contains(&parts[0].as_str())
            {
                return Err((
                    field(name),
                    format!("Invalid value: {p:?}: should be a json path under {what}"),
                ));
            }
            Ok(Some(parts))
        };
    let required = |name: &str, p: Option<Vec<String>>| {
        p.ok_or_else(|| (field(name), "Required value".to_string()))
    };
    Ok(ScalePaths {
        spec_replicas: required(
            "specReplicasPath",
            path("specReplicasPath", &["spec"], ".spec")?,
        )?,
        status_replicas: required(
            "statusReplicasPath",
            path("statusReplicasPath", &["status"], ".status")?,
        )?,
        label_selector: path(
            "labelSelectorPath",
            &["spec", "status"],
            "either .spec or .status",
        )?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_scopes() {
        let r = Registry::new();
        assert!(!r.lookup("", "v1", "namespaces").unwrap().namespaced);
        assert!(r.lookup("apps", "v1", "deployments").unwrap().namespaced);
        assert!(r.lookup("apps", "v2", "deployments").is_none());
        assert!(
            !r.lookup("rbac.authorization.k8s.io", "v1", "clusterroles")
                .unwrap()
                .namespaced
        );
    }
}
