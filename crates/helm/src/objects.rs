//! The template objects that are Go structs or typed maps in Helm (`.Capabilities` with its
//! `KubeVersion`, `APIVersions.Has` and `HelmVersion`; `.Files` with `Get`, `GetBytes`, `Glob`,
//! `Lines`, `AsConfig`, `AsSecrets`), and `.Chart` built as Helm 4 builds it (a map of the
//! metadata's Go field names, plus `IsRoot`).

use std::sync::Arc;

use ferroflux_gotemplate::{CallContext, FuncError, Map, Object, Signature, Type, Value};

use crate::chart::Metadata;
use crate::glob::FilesGlob;

/// A Kubernetes version as Helm's `common.KubeVersion`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeVersion {
    /// `v1.36.0` (what `--kube-version` gave, with a `v`).
    pub version: String,
    /// The version normalised for constraint checks (`v1.36.0` of `v1.36.0-gke.1`).
    pub normalized: String,
    /// `.Capabilities.KubeVersion.Major` (`1`).
    pub major: String,
    /// `.Capabilities.KubeVersion.Minor` (`36`, a vendor's `+` kept).
    pub minor: String,
}

impl KubeVersion {
    /// Helm's `ParseKubeVersion` (k8s.io's `ParseGeneric`: `[v]MAJOR.MINOR[.PATCH][anything]`).
    pub fn parse(text: &str) -> Result<KubeVersion, String> {
        let rest = text.strip_prefix('v').unwrap_or(text);
        let bad = || format!("could not parse {text:?} as version");
        let num_end = |s: &str| s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        let mut parts = Vec::new();
        let mut s = rest;
        loop {
            let n = num_end(s);
            if n == 0 {
                return Err(bad());
            }
            parts.push(s[..n].parse::<u64>().map_err(|_| bad())?);
            s = &s[n..];
            if parts.len() < 3 && s.starts_with('.') {
                s = &s[1..];
                continue;
            }
            break;
        }
        if parts.len() < 2 {
            return Err(bad());
        }
        // ParseGeneric accepts trailing text only after a `-` or `+` (pre-release/metadata).
        if !s.is_empty() && !s.starts_with(['-', '+']) {
            return Err(bad());
        }
        let patch = parts.get(2).copied().unwrap_or(0);
        let version = if text.starts_with('v') {
            text.to_string()
        } else {
            format!("v{text}")
        };
        Ok(KubeVersion {
            version,
            normalized: format!("v{}.{}.{patch}", parts[0], parts[1]),
            major: parts[0].to_string(),
            minor: parts[1].to_string(),
        })
    }
}

/// Helm 4.2.3's defaults for `helm template`: Kubernetes v1.36.0 (client-go v0.36 + 1) and the
/// API versions of client-go's scheme plus apiextensions (the order Helm lists them in).
pub const DEFAULT_KUBE_VERSION: &str = "v1.36.0";

/// Helm's `DefaultVersionSet`.
pub const DEFAULT_API_VERSIONS: &[&str] = &[
    "v1",
    "admissionregistration.k8s.io/v1",
    "admissionregistration.k8s.io/v1alpha1",
    "admissionregistration.k8s.io/v1beta1",
    "internal.apiserver.k8s.io/v1alpha1",
    "apps/v1",
    "apps/v1beta1",
    "apps/v1beta2",
    "authentication.k8s.io/v1",
    "authentication.k8s.io/v1alpha1",
    "authentication.k8s.io/v1beta1",
    "authorization.k8s.io/v1",
    "authorization.k8s.io/v1beta1",
    "autoscaling/v1",
    "autoscaling/v2",
    "batch/v1",
    "batch/v1beta1",
    "certificates.k8s.io/v1",
    "certificates.k8s.io/v1beta1",
    "certificates.k8s.io/v1alpha1",
    "coordination.k8s.io/v1alpha2",
    "coordination.k8s.io/v1beta1",
    "coordination.k8s.io/v1",
    "discovery.k8s.io/v1",
    "discovery.k8s.io/v1beta1",
    "events.k8s.io/v1",
    "events.k8s.io/v1beta1",
    "extensions/v1beta1",
    "flowcontrol.apiserver.k8s.io/v1",
    "flowcontrol.apiserver.k8s.io/v1beta1",
    "flowcontrol.apiserver.k8s.io/v1beta2",
    "flowcontrol.apiserver.k8s.io/v1beta3",
    "networking.k8s.io/v1",
    "networking.k8s.io/v1beta1",
    "node.k8s.io/v1",
    "node.k8s.io/v1alpha1",
    "node.k8s.io/v1beta1",
    "policy/v1",
    "policy/v1beta1",
    "rbac.authorization.k8s.io/v1",
    "rbac.authorization.k8s.io/v1beta1",
    "rbac.authorization.k8s.io/v1alpha1",
    "resource.k8s.io/v1",
    "resource.k8s.io/v1beta2",
    "resource.k8s.io/v1beta1",
    "resource.k8s.io/v1alpha3",
    "scheduling.k8s.io/v1alpha2",
    "scheduling.k8s.io/v1beta1",
    "scheduling.k8s.io/v1",
    "storage.k8s.io/v1beta1",
    "storage.k8s.io/v1",
    "storage.k8s.io/v1alpha1",
    "storagemigration.k8s.io/v1beta1",
    "apiextensions.k8s.io/v1beta1",
    "apiextensions.k8s.io/v1",
];

/// Helm's `version.BuildInfo` as the oracle (Helm SDK 4.2.3 in libhelm_c) reports it.
pub const HELM_VERSION: &str = "v4.2";
const GO_VERSION: &str = "go1.26.6";
const KUBE_CLIENT_VERSION: &str = "v1.36";

/// `.Capabilities`: what the cluster offers the chart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    /// `.Capabilities.KubeVersion`
    pub kube_version: KubeVersion,
    /// `.Capabilities.APIVersions` (group/version and group/version/Kind entries).
    pub api_versions: Vec<String>,
}

impl Default for Capabilities {
    /// `helm template`'s defaults.
    fn default() -> Self {
        Capabilities {
            kube_version: KubeVersion::parse(DEFAULT_KUBE_VERSION)
                .unwrap_or_else(|_| unreachable!("the default version parses")),
            api_versions: DEFAULT_API_VERSIONS.iter().map(|s| s.to_string()).collect(),
        }
    }
}

fn field_str(s: &str) -> Option<Value> {
    Some(Value::from(s))
}

struct KubeVersionObj(KubeVersion);

impl Object for KubeVersionObj {
    fn type_name(&self) -> String {
        "common.KubeVersion".into()
    }
    fn kind_name(&self) -> String {
        "struct".into()
    }
    fn field(&self, name: &str) -> Option<Value> {
        match name {
            "Version" => field_str(&self.0.version),
            "Major" => field_str(&self.0.major),
            "Minor" => field_str(&self.0.minor),
            _ => None,
        }
    }
    fn method(&self, name: &str) -> Option<Signature> {
        matches!(name, "String" | "GitVersion").then(|| Signature::fixed(&[]))
    }
    fn call_method(
        &self,
        name: &str,
        _: &mut CallContext<'_>,
        _: &[Value],
    ) -> Result<Value, FuncError> {
        match name {
            "String" => Ok(Value::from(self.0.normalized.as_str())),
            _ => Ok(Value::from(self.0.version.as_str())),
        }
    }
    /// Go prints the struct (`{v1.36.0 v1.36.0 1 36}`) when the value reaches a function such
    /// as `quote`; only a direct `{{ .Capabilities.KubeVersion }}` would use its `String()`.
    fn format(&self) -> String {
        let k = &self.0;
        format!("{{{} {} {} {}}}", k.version, k.normalized, k.major, k.minor)
    }
    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"Version": self.0.version, "Major": self.0.major, "Minor": self.0.minor})
    }
}

struct VersionSet(Arc<Vec<String>>);

impl Object for VersionSet {
    fn type_name(&self) -> String {
        "common.VersionSet".into()
    }
    fn kind_name(&self) -> String {
        "slice".into()
    }
    fn method(&self, name: &str) -> Option<Signature> {
        (name == "Has").then(|| Signature::fixed(&[Type::String]))
    }
    fn call_method(
        &self,
        _: &str,
        _: &mut CallContext<'_>,
        args: &[Value],
    ) -> Result<Value, FuncError> {
        let want = args.first().and_then(Value::as_str).unwrap_or_default();
        Ok(Value::Bool(self.0.iter().any(|v| v == want)))
    }
    fn format(&self) -> String {
        format!("[{}]", self.0.join(" "))
    }
    fn truth(&self) -> bool {
        !self.0.is_empty()
    }
    fn to_json(&self) -> serde_json::Value {
        serde_json::Value::Array(
            self.0
                .iter()
                .map(|s| serde_json::Value::from(s.as_str()))
                .collect(),
        )
    }
    fn as_value(&self) -> Option<Value> {
        Some(Value::list(
            self.0.iter().map(|s| Value::from(s.as_str())).collect(),
        ))
    }
}

struct BuildInfo;

impl Object for BuildInfo {
    fn type_name(&self) -> String {
        "version.BuildInfo".into()
    }
    fn kind_name(&self) -> String {
        "struct".into()
    }
    fn field(&self, name: &str) -> Option<Value> {
        match name {
            "Version" => field_str(HELM_VERSION),
            "GitCommit" | "GitTreeState" => field_str(""),
            "GoVersion" => field_str(GO_VERSION),
            "KubeClientVersion" => field_str(KUBE_CLIENT_VERSION),
            _ => None,
        }
    }
    fn format(&self) -> String {
        format!("{{{HELM_VERSION}   {GO_VERSION} {KUBE_CLIENT_VERSION}}}")
    }
    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"version": HELM_VERSION, "go_version": GO_VERSION, "kube_client_version": KUBE_CLIENT_VERSION})
    }
}

/// `.Capabilities` (a `*common.Capabilities`).
pub struct CapabilitiesObj {
    kube: Value,
    apis: Value,
    caps: Capabilities,
}

impl CapabilitiesObj {
    pub fn value(caps: &Capabilities) -> Value {
        Value::object(CapabilitiesObj {
            kube: Value::object(KubeVersionObj(caps.kube_version.clone())),
            apis: Value::object(VersionSet(Arc::new(caps.api_versions.clone()))),
            caps: caps.clone(),
        })
    }
}

impl Object for CapabilitiesObj {
    fn type_name(&self) -> String {
        "*common.Capabilities".into()
    }
    fn field(&self, name: &str) -> Option<Value> {
        match name {
            "KubeVersion" => Some(self.kube.clone()),
            "APIVersions" => Some(self.apis.clone()),
            "HelmVersion" => Some(Value::object(BuildInfo)),
            _ => None,
        }
    }
    fn format(&self) -> String {
        let k = &self.caps.kube_version;
        format!(
            "&{{{{{} {} {} {}}} [{}] {}}}",
            k.version,
            k.normalized,
            k.major,
            k.minor,
            self.caps.api_versions.join(" "),
            BuildInfo.format()
        )
    }
    fn to_json(&self) -> serde_json::Value {
        let k = &self.caps.kube_version;
        serde_json::json!({
            "KubeVersion": {"Version": k.version, "Major": k.major, "Minor": k.minor},
            "APIVersions": self.caps.api_versions,
            "HelmVersion": BuildInfo.to_json(),
        })
    }
}

/// `.Files` (Helm's `engine.files`, a `map[string][]byte` with methods).
pub struct FilesObj(pub Arc<Vec<(String, Arc<[u8]>)>>);

impl FilesObj {
    /// `.Files` of a chart (shared between renders: the bytes are not copied).
    pub fn value(files: &crate::chart::SharedFiles) -> Value {
        Value::object(FilesObj(files.clone()))
    }

    fn get(&self, name: &str) -> Option<&Arc<[u8]>> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, d)| d)
    }

    /// The files by base name, as `AsConfig`/`AsSecrets` build their maps (a later name wins).
    fn by_base(&self, encode: impl Fn(&[u8]) -> String) -> String {
        let mut m = serde_json::Map::new();
        for (name, data) in self.0.iter() {
            let base = name.rsplit('/').next().unwrap_or(name);
            m.insert(base.to_string(), serde_json::Value::String(encode(data)));
        }
        let text = crate::yaml::marshal(&serde_json::Value::Object(m));
        text.strip_suffix('\n').unwrap_or(&text).to_string()
    }
}

impl Object for FilesObj {
    fn type_name(&self) -> String {
        "engine.files".into()
    }
    fn kind_name(&self) -> String {
        "map".into()
    }
    fn method(&self, name: &str) -> Option<Signature> {
        match name {
            "Get" | "GetBytes" | "Glob" | "Lines" => Some(Signature::fixed(&[Type::String])),
            "AsConfig" | "AsSecrets" => Some(Signature::fixed(&[])),
            _ => None,
        }
    }
    fn call_method(
        &self,
        name: &str,
        _: &mut CallContext<'_>,
        args: &[Value],
    ) -> Result<Value, FuncError> {
        let arg = args.first().and_then(Value::as_str).unwrap_or_default();
        match name {
            "Get" => Ok(Value::from(
                self.get(arg)
                    .map(|d| ferroflux_gotemplate::gostr::from_bytes(d))
                    .unwrap_or_default(),
            )),
            "GetBytes" => Ok(Value::Bytes(
                self.get(arg)
                    .cloned()
                    .unwrap_or_else(|| Arc::from(&b""[..])),
            )),
            "Glob" => {
                let g = FilesGlob::new(arg)
                    .or_else(|_| FilesGlob::new("**"))
                    .map_err(FuncError::new)?;
                let matched: Vec<(String, Arc<[u8]>)> = self
                    .0
                    .iter()
                    .filter(|(n, _)| g.is_match(n))
                    .cloned()
                    .collect();
                Ok(Value::object(FilesObj(Arc::new(matched))))
            }
            "Lines" => {
                let Some(data) = self.get(arg) else {
                    return Ok(Value::list(Vec::new()));
                };
                let s = ferroflux_gotemplate::gostr::from_bytes(data);
                if s.is_empty() {
                    return Err(FuncError::new("runtime error: index out of range [-1]"));
                }
                let s = s.strip_suffix('\n').unwrap_or(&s);
                Ok(Value::list(s.split('\n').map(Value::from).collect()))
            }
            "AsConfig" => Ok(Value::from(self.by_base(|d| {
                let s = ferroflux_gotemplate::gostr::from_bytes(d);
                ferroflux_gotemplate::gostr::lossy(&s).into_owned()
            }))),
            _ => Ok(Value::from(
                self.by_base(ferroflux_gotemplate::value::base64),
            )),
        }
    }
    fn format(&self) -> String {
        let inner: Vec<String> = self
            .0
            .iter()
            .map(|(n, d)| {
                let bytes: Vec<String> = d.iter().map(|b| b.to_string()).collect();
                format!("{n}:[{}]", bytes.join(" "))
            })
            .collect();
        format!("map[{}]", inner.join(" "))
    }
    fn truth(&self) -> bool {
        !self.0.is_empty()
    }
    fn to_json(&self) -> serde_json::Value {
        serde_json::Value::Object(
            self.0
                .iter()
                .map(|(n, d)| {
                    (
                        n.clone(),
                        serde_json::Value::String(ferroflux_gotemplate::value::base64(d)),
                    )
                })
                .collect(),
        )
    }
    fn as_value(&self) -> Option<Value> {
        Some(Value::Map(Map::from_iter(
            self.0
                .iter()
                .map(|(n, d)| (n.clone(), Value::Bytes(d.clone()))),
        )))
    }
}

fn strings(list: &[String]) -> Value {
    Value::list(list.iter().map(|s| Value::from(s.as_str())).collect())
}

/// `.Chart`: Helm 4's `structToMap` of the metadata (Go field names; nil slices become empty
/// lists, a nil annotations map stays nil) plus `IsRoot`.
pub fn chart_map(md: &Metadata, is_root: bool) -> Value {
    let m = Map::new();
    m.insert("Name", md.name.as_str());
    m.insert("Home", md.home.as_str());
    m.insert("Sources", strings(&md.sources));
    m.insert("Version", md.version.as_str());
    m.insert("Description", md.description.as_str());
    m.insert("Keywords", strings(&md.keywords));
    let maintainers: Vec<Value> = md
        .maintainers
        .iter()
        .map(|mt| match mt {
            None => Value::Nil,
            Some(mt) => {
                let x = Map::new();
                x.insert("Name", mt.name.as_str());
                x.insert("Email", mt.email.as_str());
                x.insert("URL", mt.url.as_str());
                Value::Map(x)
            }
        })
        .collect();
    m.insert("Maintainers", Value::list(maintainers));
    m.insert("Icon", md.icon.as_str());
    m.insert("APIVersion", md.api_version.as_str());
    m.insert("Condition", md.condition.as_str());
    m.insert("Tags", md.tags.as_str());
    m.insert("AppVersion", md.app_version.as_str());
    m.insert("Deprecated", Value::Bool(md.deprecated));
    m.insert(
        "Annotations",
        match &md.annotations {
            None => Value::Nil,
            Some(a) => Value::Map(Map::from_iter(
                a.iter().map(|(k, v)| (k.clone(), Value::from(v.as_str()))),
            )),
        },
    );
    m.insert("KubeVersion", md.kube_version.as_str());
    let deps: Vec<Value> = md
        .dependencies
        .iter()
        .map(|d| match d {
            None => Value::Nil,
            Some(d) => {
                let x = Map::new();
                x.insert("Name", d.name.as_str());
                x.insert("Version", d.version.as_str());
                x.insert("Repository", d.repository.as_str());
                x.insert("Condition", d.condition.as_str());
                x.insert("Tags", strings(&d.tags));
                x.insert("Enabled", Value::Bool(d.enabled));
                x.insert(
                    "ImportValues",
                    Value::list(
                        d.import_values
                            .iter()
                            .map(crate::render::to_value)
                            .collect(),
                    ),
                );
                x.insert("Alias", d.alias.as_str());
                Value::Map(x)
            }
        })
        .collect();
    m.insert("Dependencies", Value::list(deps));
    m.insert("Type", md.chart_type.as_str());
    m.insert("IsRoot", Value::Bool(is_root));
    Value::Map(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_versions() {
        let k = KubeVersion::parse("1.30").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (
                k.version.as_str(),
                k.normalized.as_str(),
                k.major.as_str(),
                k.minor.as_str()
            ),
            ("v1.30", "v1.30.0", "1", "30")
        );
        let k = KubeVersion::parse("v1.33.4-gke.1245000").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(k.normalized, "v1.33.4");
        assert!(KubeVersion::parse("abc").is_err());
        assert!(KubeVersion::parse("1").is_err());
    }
}
