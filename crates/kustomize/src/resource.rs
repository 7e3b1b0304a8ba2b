//! One object being built, with the bookkeeping kustomize keeps beside it (earlier names,
//! prefixes and suffixes applied, whether a generated name still needs its hash).

use std::path::PathBuf;

use serde_json::{Map, Value};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrevId {
    pub kind: String,
    pub name: String,
    /// The effective namespace at the time (cluster-scoped objects record a marker).
    pub namespace: String,
}

#[derive(Debug, Clone)]
pub struct Res {
    pub obj: Value,
    pub prev: Vec<PrevId>,
    pub prefixes: Vec<String>,
    pub suffixes: Vec<String>,
    pub needs_hash: bool,
    /// Generated objects may change their name (the hash suffix) and are matched by
    /// generator behavior merge/replace.
    pub generated: bool,
    /// Names of the vars that read a field of this object.
    pub var_names: Vec<String>,
    /// Source text of annotations YAML typed as non-strings (key, text, typed value).
    pub raw_annotations: Vec<(String, String, Value)>,
    /// The object went through JSON (a JSON 6902 patch), which loses source text.
    pub json_roundtripped: bool,
    /// JSON pointers of string values that were quoted in the source and hold `${`.
    pub quoted_placeholders: Vec<String>,
    pub source: PathBuf,
}

pub const NOT_NAMESPACEABLE: &str = "_non_namespaceable_";

impl Res {
    pub fn new(obj: Value, source: PathBuf) -> Res {
        Res {
            obj,
            prev: Vec::new(),
            prefixes: Vec::new(),
            suffixes: Vec::new(),
            needs_hash: false,
            generated: false,
            var_names: Vec::new(),
            raw_annotations: Vec::new(),
            json_roundtripped: false,
            quoted_placeholders: Vec::new(),
            source,
        }
    }

    fn str_at(&self, a: &str, b: Option<&str>) -> &str {
        let v = match b {
            None => self.obj.get(a),
            Some(b) => self.obj.get(a).and_then(|m| m.get(b)),
        };
        v.and_then(Value::as_str).unwrap_or("")
    }

    pub fn api_version(&self) -> &str {
        self.str_at("apiVersion", None)
    }
    pub fn kind(&self) -> &str {
        self.str_at("kind", None)
    }
    pub fn name(&self) -> &str {
        self.str_at("metadata", Some("name"))
    }
    pub fn namespace(&self) -> &str {
        self.str_at("metadata", Some("namespace"))
    }
    pub fn group_version(&self) -> (&str, &str) {
        split_api_version(self.api_version())
    }

    pub fn set_name(&mut self, name: &str) {
        if let Some(m) = self.metadata_mut() {
            m.insert("name".into(), Value::String(name.into()));
        }
    }

    pub fn metadata_mut(&mut self) -> Option<&mut Map<String, Value>> {
        let obj = self.obj.as_object_mut()?;
        let md = obj
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if md.is_null() {
            *md = Value::Object(Map::new());
        }
        md.as_object_mut()
    }

    pub fn labels(&self) -> Vec<(String, String)> {
        self.string_map("labels")
    }
    pub fn annotations(&self) -> Vec<(String, String)> {
        self.string_map("annotations")
    }
    fn string_map(&self, which: &str) -> Vec<(String, String)> {
        match self.obj.get("metadata").and_then(|m| m.get(which)) {
            Some(Value::Object(m)) => m
                .iter()
                .map(|(k, v)| {
                    let s = match v {
                        Value::String(s) => s.clone(),
                        Value::Null => String::new(),
                        o => o.to_string(),
                    };
                    (k.clone(), s)
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    pub fn is_cluster_scoped(&self) -> bool {
        let (g, _) = self.group_version();
        is_cluster_scoped(g, self.kind())
    }

    pub fn effective_namespace(&self) -> String {
        effective_namespace(self.is_cluster_scoped(), self.namespace())
    }

    /// Remembers the current identity before a transformer changes it.
    pub fn store_previous_id(&mut self) {
        let id = PrevId {
            kind: self.kind().to_string(),
            name: self.name().to_string(),
            namespace: self.effective_namespace(),
        };
        self.prev.push(id);
    }

    /// The identity this object had when first read (before any rename).
    pub fn org_name(&self) -> &str {
        self.prev
            .first()
            .map(|p| p.name.as_str())
            .unwrap_or(self.name())
    }
    pub fn org_kind(&self) -> &str {
        self.prev
            .first()
            .map(|p| p.kind.as_str())
            .unwrap_or(self.kind())
    }
    pub fn org_namespace(&self) -> String {
        match self.prev.first() {
            Some(p) => p.namespace.clone(),
            None => self.namespace().to_string(),
        }
    }

    /// `kind.version.group/name.namespace`, kustomize's id string, for messages.
    pub fn id_string(&self) -> String {
        let (g, v) = self.group_version();
        let or = |s: &str, d: &str| {
            if s.is_empty() {
                d.to_string()
            } else {
                s.to_string()
            }
        };
        format!(
            "{}.{}.{}/{}.{}",
            or(self.kind(), "[noKind]"),
            or(v, "[noVer]"),
            or(g, "[noGrp]"),
            or(self.name(), "[noName]"),
            or(self.namespace(), "[noNs]")
        )
    }

    pub fn id_key(&self) -> String {
        format!(
            "{}|{}|{}|{}",
            self.api_version(),
            self.kind(),
            self.name(),
            self.effective_namespace()
        )
    }
}

pub fn effective_namespace(cluster_scoped: bool, ns: &str) -> String {
    if cluster_scoped {
        NOT_NAMESPACEABLE.to_string()
    } else if ns.is_empty() || ns == "default" {
        "default".to_string()
    } else {
        ns.to_string()
    }
}

pub fn split_api_version(av: &str) -> (&str, &str) {
    match av.rsplit_once('/') {
        Some((g, v)) => (g, v),
        None => ("", av),
    }
}

/// Whether kustomize v5.5.0 treats a kind as cluster-scoped. kustomize decides this from the
/// Kubernetes 1.21 OpenAPI document it embeds; kinds it does not know are namespaced, so this
/// table lists exactly the cluster-scoped kinds of that document (by group).
pub fn is_cluster_scoped(group: &str, kind: &str) -> bool {
    matches!(
        (group, kind),
        (
            "",
            "Namespace" | "Node" | "PersistentVolume" | "ComponentStatus"
        ) | (
            "rbac.authorization.k8s.io",
            "ClusterRole" | "ClusterRoleBinding"
        ) | ("apiextensions.k8s.io", "CustomResourceDefinition")
            | (
                "storage.k8s.io",
                "StorageClass" | "CSIDriver" | "CSINode" | "VolumeAttachment"
            )
            | ("scheduling.k8s.io", "PriorityClass")
            | (
                "admissionregistration.k8s.io",
                "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration"
            )
            | ("apiregistration.k8s.io", "APIService")
            | ("node.k8s.io", "RuntimeClass")
            | ("policy" | "extensions", "PodSecurityPolicy")
            | ("certificates.k8s.io", "CertificateSigningRequest")
            | (
                "flowcontrol.apiserver.k8s.io",
                "FlowSchema" | "PriorityLevelConfiguration"
            )
            | ("networking.k8s.io", "IngressClass")
            | ("authentication.k8s.io", "TokenReview")
            | (
                "authorization.k8s.io",
                "SubjectAccessReview" | "SelfSubjectAccessReview" | "SelfSubjectRulesReview"
            )
            | ("internal.apiserver.k8s.io", "StorageVersion")
    )
}
