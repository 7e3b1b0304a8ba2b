//! The embedded Kubernetes type data (`data/k8s-merge.json`) and the lookups built on it.

use serde_json::Value;
use std::collections::HashMap;
use std::sync::OnceLock;

const DATA: &str = include_str!("../data/k8s-merge.json");

/// How server-side apply treats a list (`x-kubernetes-list-type`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListType {
    /// A list-map: elements are identified by the values of these keys.
    Map(Vec<String>),
    /// A set of scalars: elements are identified by their value.
    Set,
    /// The list is one value: whoever sets it owns all of it.
    Atomic,
}

/// How server-side apply treats a map (`x-kubernetes-map-type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapType {
    /// Each key is owned and merged separately (the default for maps and structs).
    Granular,
    /// The map is one value.
    Atomic,
}

/// The scope of a kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Objects live in a namespace (`/api/v1/namespaces/<ns>/...`).
    Namespaced,
    /// Objects live at the cluster level (Namespace, Node, ClusterRole, …).
    Cluster,
    /// A subresource-only kind (Scale, Eviction, …): not stored on its own.
    Subresource,
}

#[derive(Debug)]
pub(crate) enum Shape {
    /// A Kubernetes struct type, by index into `Schema::types`.
    Struct(usize),
    List {
        strategy: ListStrategy,
        /// The patch merge key(s) as k8s-openapi records them.
        keys: Vec<String>,
        /// The list-map keys when Kubernetes declares more than the patch merge key.
        ssa_keys: Option<Vec<String>>,
        item: Option<Box<Shape>>,
    },
    Map {
        atomic: bool,
        value: Option<Box<Shape>>,
    },
    /// Arbitrary JSON (RawExtension, JSON, FieldsV1, CRD schema parts).
    Any,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListStrategy {
    Map,
    Set,
    Atomic,
}

/// A list's strategy, patch merge keys and (when they differ) server-side-apply keys.
pub(crate) type ListInfo = (ListStrategy, &'static [String], Option<&'static [String]>);

#[derive(Debug)]
pub(crate) struct TypeDef {
    pub(crate) name: String,
    pub(crate) fields: HashMap<String, Shape>,
    /// The type's other (scalar) JSON field names, sorted.
    pub(crate) scalars: Vec<String>,
}

/// A built-in kind: what discovery and the REST paths need to know about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KindInfo {
    /// `apps/v1`, `v1`, …
    pub api_version: &'static str,
    /// `Deployment`, `ConfigMap`, …
    pub kind: &'static str,
    /// The resource name in URLs (`deployments`); for subresource kinds the subresource name
    /// (`scale`, `eviction`, `status`, `token`).
    pub plural: &'static str,
    /// Where its objects live in the REST paths.
    pub scope: Scope,
}

#[derive(Debug)]
struct KindEntry {
    api_version: String,
    kind: String,
    plural: String,
    scope: Scope,
    /// index into `types`, None for kinds without structured fields
    ty: Option<usize>,
}

#[derive(Debug)]
pub(crate) struct Schema {
    pub(crate) types: Vec<TypeDef>,
    kinds: Vec<KindEntry>,
    /// apiVersion -> kind -> index into `kinds`
    by_kind: HashMap<String, HashMap<String, usize>>,
}

/// The schema, parsed from the embedded data on first use and shared afterwards.
pub(crate) fn schema() -> &'static Schema {
    static SCHEMA: OnceLock<Schema> = OnceLock::new();
    // The data is generated, committed and checked by tests/schema/data_fresh.rs and the unit tests
    // below; failing to parse it is a build defect, not an input error.
    SCHEMA.get_or_init(|| {
        Schema::parse(DATA).unwrap_or_else(|e| panic!("embedded data/k8s-merge.json: {e}"))
    })
}

impl Schema {
    fn parse(text: &str) -> Result<Schema, String> {
        let root: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let types_json = root["types"].as_object().ok_or("no types object")?;
        let index: HashMap<&str, usize> = types_json
            .keys()
            .enumerate()
            .map(|(i, k)| (k.as_str(), i))
            .collect();
        let mut types = Vec::with_capacity(types_json.len());
        for (name, entry) in types_json {
            let fields_json = entry["fields"]
                .as_object()
                .ok_or_else(|| format!("type {name} has no fields object"))?;
            let mut fields = HashMap::with_capacity(fields_json.len());
            for (field, shape) in fields_json {
                fields.insert(field.clone(), parse_shape(shape, &index)?);
            }
            let mut scalars: Vec<String> = entry["scalars"]
                .as_array()
                .ok_or_else(|| format!("type {name} has no scalars list"))?
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect();
            scalars.sort();
            types.push(TypeDef {
                name: name.clone(),
                fields,
                scalars,
            });
        }
        let mut kinds = Vec::new();
        let mut by_kind: HashMap<String, HashMap<String, usize>> = HashMap::new();
        for k in root["kinds"].as_array().ok_or("no kinds array")? {
            let (Some(api_version), Some(kind), Some(def), Some(scope), Some(plural)) = (
                k[0].as_str(),
                k[1].as_str(),
                k[2].as_str(),
                k[3].as_str(),
                k[4].as_str(),
            ) else {
                return Err(format!("bad kind entry {k}"));
            };
            let scope = match scope {
                "Namespace" => Scope::Namespaced,
                "Cluster" => Scope::Cluster,
                "Sub" => Scope::Subresource,
                other => return Err(format!("unknown scope {other}")),
            };
            by_kind
                .entry(api_version.to_string())
                .or_default()
                .insert(kind.to_string(), kinds.len());
            kinds.push(KindEntry {
                api_version: api_version.to_string(),
                kind: kind.to_string(),
                plural: plural.to_string(),
                scope,
                // Kinds whose type has no structured field (e.g. Event) are not in `types`.
                ty: index.get(def).copied(),
            });
        }
        Ok(Schema {
            types,
            kinds,
            by_kind,
        })
    }

    pub(crate) fn kind(&self, api_version: &str, kind: &str) -> Option<(Option<usize>, Scope)> {
        let e = &self.kinds[*self.by_kind.get(api_version)?.get(kind)?];
        Some((e.ty, e.scope))
    }

    fn info(&'static self, i: usize) -> KindInfo {
        let e = &self.kinds[i];
        KindInfo {
            api_version: &e.api_version,
            kind: &e.kind,
            plural: &e.plural,
            scope: e.scope,
        }
    }
}

fn parse_shape(v: &Value, index: &HashMap<&str, usize>) -> Result<Shape, String> {
    if v.get("any").is_some() {
        return Ok(Shape::Any);
    }
    if let Some(t) = v.get("type").and_then(Value::as_str) {
        return index
            .get(t)
            .map(|i| Shape::Struct(*i))
            .ok_or_else(|| format!("reference to unknown type {t}"));
    }
    let strings = |key: &str| -> Option<Vec<String>> {
        v.get(key).and_then(Value::as_array).map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
    };
    if let Some(list) = v.get("list").and_then(Value::as_str) {
        let strategy = match list {
            "map" => ListStrategy::Map,
            "set" => ListStrategy::Set,
            "atomic" => ListStrategy::Atomic,
            other => return Err(format!("unknown list strategy {other}")),
        };
        let item = match v.get("item") {
            Some(i) => Some(Box::new(parse_shape(i, index)?)),
            None => None,
        };
        return Ok(Shape::List {
            strategy,
            keys: strings("keys").unwrap_or_default(),
            ssa_keys: strings("ssaKeys"),
            item,
        });
    }
    if let Some(map) = v.get("map").and_then(Value::as_str) {
        let value = match v.get("value") {
            Some(i) => Some(Box::new(parse_shape(i, index)?)),
            None => None,
        };
        return Ok(Shape::Map {
            atomic: map == "atomic",
            value,
        });
    }
    Err(format!("unknown shape {v}"))
}

/// A position in a kind's schema: a struct, a list or a map field.
///
/// Walk it with [`Field::field`] (struct fields and map values) and [`Field::item`] (list
/// elements); ask it [`Field::list_type`], [`Field::map_type`] or
/// [`Field::patch_merge_keys`]. Fields the schema does not describe (scalars, unknown fields,
/// custom resources) have no `Field`: treat them as scalars, granular maps and atomic lists, which
/// is what Kubernetes does for untyped data.
#[derive(Clone, Copy)]
pub struct Field {
    pub(crate) shape: ShapeRef,
}

#[derive(Clone, Copy)]
pub(crate) enum ShapeRef {
    Struct(usize),
    Shape(&'static Shape),
}

impl ShapeRef {
    pub(crate) fn from_shape(s: &'static Shape) -> ShapeRef {
        match s {
            Shape::Struct(i) => ShapeRef::Struct(*i),
            other => ShapeRef::Shape(other),
        }
    }

    /// The schema of field `name` (struct field or map value).
    pub(crate) fn field(self, name: &str) -> Option<ShapeRef> {
        match self {
            ShapeRef::Struct(i) => schema().types[i].fields.get(name).map(ShapeRef::from_shape),
            ShapeRef::Shape(Shape::Map { value: Some(v), .. }) => Some(ShapeRef::from_shape(v)),
            ShapeRef::Shape(_) => None,
        }
    }

    /// The schema of a list's elements.
    pub(crate) fn item(self) -> Option<ShapeRef> {
        match self {
            ShapeRef::Shape(Shape::List { item: Some(i), .. }) => Some(ShapeRef::from_shape(i)),
            _ => None,
        }
    }

    pub(crate) fn list(self) -> Option<ListInfo> {
        match self {
            ShapeRef::Shape(Shape::List {
                strategy,
                keys,
                ssa_keys,
                ..
            }) => Some((*strategy, keys.as_slice(), ssa_keys.as_deref())),
            _ => None,
        }
    }
}

impl Field {
    /// The root of a built-in kind's schema; None for kinds the schema does not know (CRDs).
    pub fn root(api_version: &str, kind: &str) -> Option<Field> {
        let (ty, _) = schema().kind(api_version, kind)?;
        ty.map(|t| Field {
            shape: ShapeRef::Struct(t),
        })
    }

    /// The field `name` of a struct, or the value of any key of a map.
    pub fn field(&self, name: &str) -> Option<Field> {
        self.shape.field(name).map(|shape| Field { shape })
    }

    /// The elements of a list.
    pub fn item(&self) -> Option<Field> {
        self.shape.item().map(|shape| Field { shape })
    }

    /// The server-side-apply list type, when this is a list.
    pub fn list_type(&self) -> Option<ListType> {
        let (strategy, keys, ssa_keys) = self.shape.list()?;
        Some(match strategy {
            ListStrategy::Map => ListType::Map(ssa_keys.unwrap_or(keys).to_vec()),
            ListStrategy::Set => ListType::Set,
            ListStrategy::Atomic => ListType::Atomic,
        })
    }

    /// The strategic-merge-patch merge key of a list-map (`x-kubernetes-patch-merge-key`, as
    /// the API server's strategic merge uses it), when this is a list merged by key.
    pub fn patch_merge_keys(&self) -> Option<&'static [String]> {
        match self.shape.list()? {
            (ListStrategy::Map, keys, _) => Some(keys),
            _ => None,
        }
    }

    /// The server-side-apply map type, when this is a map or a struct.
    pub fn map_type(&self) -> Option<MapType> {
        match self.shape {
            ShapeRef::Struct(_) => Some(MapType::Granular),
            ShapeRef::Shape(Shape::Map { atomic, .. }) => Some(if *atomic {
                MapType::Atomic
            } else {
                MapType::Granular
            }),
            ShapeRef::Shape(_) => None,
        }
    }

    /// Whether this struct declares a field of that JSON name (of any type, scalars included).
    /// False for everything but structs: use it to reject unknown fields.
    pub fn has_field(&self, name: &str) -> bool {
        match self.shape {
            ShapeRef::Struct(i) => {
                let t = &schema().types[i];
                t.fields.contains_key(name)
                    || t.scalars.binary_search_by(|s| s.as_str().cmp(name)).is_ok()
            }
            ShapeRef::Shape(_) => false,
        }
    }

    /// Whether the value here is arbitrary JSON the schema says nothing more about
    /// (`RawExtension`, `JSON`, `FieldsV1`, parts of a CRD's schema).
    pub fn is_free_form(&self) -> bool {
        matches!(self.shape, ShapeRef::Shape(Shape::Any))
    }

    /// The Kubernetes definition name when this is a struct (`io.k8s.api.core.v1.PodSpec`).
    pub fn type_name(&self) -> Option<&'static str> {
        match self.shape {
            ShapeRef::Struct(i) => Some(schema().types[i].name.as_str()),
            ShapeRef::Shape(_) => None,
        }
    }
}

/// Whether a built-in kind is namespaced; None for kinds the schema does not know (custom
/// resources, whose scope is in their CRD) and for subresource-only kinds.
pub fn is_namespaced(api_version: &str, kind: &str) -> Option<bool> {
    match schema().kind(api_version, kind)?.1 {
        Scope::Namespaced => Some(true),
        Scope::Cluster => Some(false),
        Scope::Subresource => None,
    }
}

/// Every built-in kind the schema knows, sorted by apiVersion then kind.
pub fn builtin_kinds() -> impl Iterator<Item = KindInfo> {
    let s = schema();
    (0..s.kinds.len()).map(move |i| s.info(i))
}

/// A built-in kind's discovery facts; None for kinds the schema does not know.
pub fn kind_info(api_version: &str, kind: &str) -> Option<KindInfo> {
    let s = schema();
    let i = *s.by_kind.get(api_version)?.get(kind)?;
    Some(s.info(i))
}

/// Whether built-in kinds of this name are namespaced, whatever their apiVersion, when every
/// built-in kind of that name agrees; None otherwise. Manifests still written against removed
/// API versions (`extensions/v1beta1` Ingress, `batch/v1beta1` CronJob) find their scope here.
pub fn is_namespaced_kind(kind: &str) -> Option<bool> {
    let mut answer = None;
    for k in builtin_kinds().filter(|k| k.kind == kind) {
        let this = match k.scope {
            Scope::Namespaced => true,
            Scope::Cluster => false,
            Scope::Subresource => return None,
        };
        match answer {
            None => answer = Some(this),
            Some(a) if a != this => return None,
            Some(_) => {}
        }
    }
    answer
}

/// The scope of a built-in kind; None for kinds the schema does not know.
pub fn scope(api_version: &str, kind: &str) -> Option<Scope> {
    schema().kind(api_version, kind).map(|(_, s)| s)
}

/// The server-side-apply type of the list at `path` in a built-in kind.
///
/// `path` names fields from the object root (`["spec", "template", "spec", "containers",
/// "ports"]`); list elements are stepped through implicitly (the path goes from `containers` to
/// its elements' `ports`), and a segment under a map consumes one map key. Lists the schema does
/// not describe (custom resources, unknown fields) are [`ListType::Atomic`], as Kubernetes treats
/// untyped lists.
pub fn list_type(api_version: &str, kind: &str, path: &[&str]) -> ListType {
    lookup_path(api_version, kind, path)
        .and_then(|f| f.list_type())
        .unwrap_or(ListType::Atomic)
}

/// The schema position at `path` (see [`list_type`] for the path convention).
pub fn lookup_path(api_version: &str, kind: &str, path: &[&str]) -> Option<Field> {
    let mut cur = Field::root(api_version, kind)?;
    for seg in path {
        // Step into list elements implicitly: paths name fields, not indexes.
        while cur.list_type().is_some() {
            cur = cur.item()?;
        }
        cur = cur.field(seg)?;
    }
    Some(cur)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_data_parses_and_knows_core_kinds() {
        assert!(schema().types.len() > 100);
        assert_eq!(is_namespaced("apps/v1", "Deployment"), Some(true));
        assert_eq!(is_namespaced("v1", "Namespace"), Some(false));
        assert_eq!(
            is_namespaced("rbac.authorization.k8s.io/v1", "ClusterRole"),
            Some(false)
        );
        assert_eq!(is_namespaced("v1", "ConfigMap"), Some(true));
        assert_eq!(
            is_namespaced("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
            Some(false)
        );
        assert_eq!(is_namespaced("example.com/v1", "Widget"), None);
        let d = kind_info("apps/v1", "Deployment").unwrap();
        assert_eq!((d.plural, d.scope), ("deployments", Scope::Namespaced));
        assert_eq!(
            kind_info("autoscaling/v1", "Scale").unwrap().scope,
            Scope::Subresource
        );
        assert_eq!(is_namespaced("autoscaling/v1", "Scale"), None);
        let all: Vec<KindInfo> = builtin_kinds().collect();
        assert!(all.len() > 100);
        assert!(
            all.windows(2)
                .all(|w| (w[0].api_version, w[0].kind) < (w[1].api_version, w[1].kind))
        );
        assert!(
            all.iter()
                .any(|k| k.api_version == "v1" && k.kind == "Secret" && k.plural == "secrets")
        );
        assert_eq!(is_namespaced("apps/v1", "Nope"), None);
        assert_eq!(is_namespaced("extensions/v1beta1", "Ingress"), None);
        assert_eq!(is_namespaced_kind("Ingress"), Some(true));
        assert_eq!(is_namespaced_kind("ClusterRoleBinding"), Some(false));
        assert_eq!(is_namespaced_kind("Scale"), None);
        assert_eq!(is_namespaced_kind("Widget"), None);
    }

    #[test]
    fn list_types_distinguish_ssa_and_patch_keys() {
        let ports = ["spec", "template", "spec", "containers", "ports"];
        assert_eq!(
            list_type("apps/v1", "Deployment", &ports),
            ListType::Map(vec!["containerPort".into(), "protocol".into()])
        );
        let f = lookup_path("apps/v1", "Deployment", &ports).unwrap();
        assert_eq!(f.patch_merge_keys().unwrap(), ["containerPort".to_string()]);
        assert_eq!(
            list_type(
                "apps/v1",
                "Deployment",
                &["spec", "template", "spec", "containers"]
            ),
            ListType::Map(vec!["name".into()])
        );
        assert_eq!(
            list_type("v1", "Pod", &["spec", "containers", "env"]),
            ListType::Map(vec!["name".into()])
        );
        assert_eq!(
            list_type("v1", "Pod", &["spec", "tolerations"]),
            ListType::Atomic
        );
        assert_eq!(
            list_type("v1", "Pod", &["metadata", "finalizers"]),
            ListType::Set
        );
        assert_eq!(
            list_type("v1", "Service", &["spec", "ports"]),
            ListType::Map(vec!["port".into(), "protocol".into()])
        );
        assert_eq!(
            list_type("example.com/v1", "Widget", &["spec", "items"]),
            ListType::Atomic
        );
        let labels = lookup_path("v1", "Pod", &["metadata", "labels"]).unwrap();
        assert_eq!(labels.map_type(), Some(MapType::Granular));
        let sel = lookup_path("v1", "Pod", &["spec", "nodeSelector"]).unwrap();
        assert_eq!(sel.map_type(), Some(MapType::Atomic));
        let spec = lookup_path("v1", "Pod", &["spec"]).unwrap();
        assert_eq!(spec.type_name(), Some("io.k8s.api.core.v1.PodSpec"));
        // Structs with only scalar fields are still named (SSA needs struct-level atomicity).
        let env_ref = ["spec", "containers", "env", "valueFrom", "secretKeyRef"];
        let sel = lookup_path("v1", "Pod", &env_ref).unwrap();
        assert_eq!(
            sel.type_name(),
            Some("io.k8s.api.core.v1.SecretKeySelector")
        );
        assert_eq!(sel.field("name").map(|f| f.type_name()), None);
        assert!(sel.has_field("name") && sel.has_field("optional") && !sel.has_field("nmae"));
        let pod = Field::root("v1", "Pod").unwrap();
        assert!(pod.has_field("apiVersion") && pod.has_field("spec") && !pod.has_field("extra"));
        let raw = lookup_path("apps/v1", "ControllerRevision", &["data"]).unwrap();
        assert!(raw.is_free_form() && !raw.has_field("x"));
        let port = lookup_path("v1", "Pod", &["spec", "containers", "ports"]).unwrap();
        assert_eq!(
            port.item().and_then(|i| i.type_name()),
            Some("io.k8s.api.core.v1.ContainerPort")
        );
    }
}
