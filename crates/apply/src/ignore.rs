//! A Kustomization's `spec.ignore`: JSON pointer paths Flux leaves out of drift detection and
//! of what it applies, on the objects a rule's target selects, as fluxcd/pkg's ssa does with
//! its drift ignore rules. Only objects already in the cluster are concerned (a new object is
//! created whole). Differences in ignored paths alone leave an object unchanged; when it
//! changes for another reason, each ignored path whose value the cluster holds differently is
//! either dropped from what is sent (another server-side-apply manager owns it, as an HPA or a
//! VPA would) or sent with the cluster's value (nobody else applies it, e.g. a `kubectl edit`),
//! so that the cluster's value is kept either way.
//!
//! Targets select as Flux's do: group, version, kind, name and namespace are anchored regular
//! expressions, labels and annotations are label selectors.

use ferroflux_api::kustomization::IgnoreRule;
use ferroflux_schema::LabelSelector;
use regex::Regex;
use serde_json::{Map, Value};

/// One rule, its target compiled.
#[derive(Debug)]
struct Compiled {
    paths: Vec<String>,
    target: Option<Target>,
}

#[derive(Debug)]
struct Target {
    group: Option<Regex>,
    version: Option<Regex>,
    kind: Option<Regex>,
    name: Option<Regex>,
    namespace: Option<Regex>,
    labels: LabelSelector,
    annotations: LabelSelector,
}

/// The compiled rules of one Kustomization.
#[derive(Debug, Default)]
pub struct IgnoreRules(Vec<Compiled>);

fn anchored(field: &str, p: Option<&str>) -> Result<Option<Regex>, String> {
    match p.filter(|p| !p.is_empty()) {
        None => Ok(None),
        Some(p) => Regex::new(&format!("^(?:{p})$"))
            .map(Some)
            .map_err(|e| format!("invalid {field} regex: {e}")),
    }
}

fn selector(field: &str, s: Option<&str>) -> Result<LabelSelector, String> {
    LabelSelector::parse(s.unwrap_or_default())
        .map_err(|e| format!("invalid {field} selector: {e}"))
}

fn str_at<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn map_matches(selector: &LabelSelector, map: Option<&Value>) -> bool {
    selector.is_empty()
        || selector.matches_with(|k| map.and_then(|m| m.get(k)).and_then(Value::as_str))
}

impl Target {
    fn matches(&self, obj: &Value) -> bool {
        let api_version = str_at(obj, "/apiVersion");
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let miss = |re: &Option<Regex>, s: &str| re.as_ref().is_some_and(|re| !re.is_match(s));
        !(miss(&self.namespace, str_at(obj, "/metadata/namespace"))
            || miss(&self.name, str_at(obj, "/metadata/name"))
            || miss(&self.group, group)
            || miss(&self.version, version)
            || miss(&self.kind, str_at(obj, "/kind")))
            && map_matches(&self.labels, obj.pointer("/metadata/labels"))
            && map_matches(&self.annotations, obj.pointer("/metadata/annotations"))
    }
}

impl IgnoreRules {
    /// Compiles `rules`; an invalid regular expression or selector is an error naming it.
    pub fn compile(rules: &[IgnoreRule]) -> Result<IgnoreRules, String> {
        let mut out = Vec::with_capacity(rules.len());
        for rule in rules {
            let target = match &rule.target {
                None => None,
                Some(t) => Some(Target {
                    group: anchored("group", t.group.as_deref())?,
                    version: anchored("version", t.version.as_deref())?,
                    kind: anchored("kind", t.kind.as_deref())?,
                    name: anchored("name", t.name.as_deref())?,
                    namespace: anchored("namespace", t.namespace.as_deref())?,
                    labels: selector("label", t.label_selector.as_deref())?,
                    annotations: selector("annotation", t.annotation_selector.as_deref())?,
                }),
            };
            out.push(Compiled {
                paths: rule.paths.clone(),
                target,
            });
        }
        Ok(IgnoreRules(out))
    }

    /// Whether there is no rule at all.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The paths ignored on `obj` (the rules whose target selects it).
    pub fn paths_for(&self, obj: &Value) -> Vec<&str> {
        self.0
            .iter()
            .filter(|r| r.target.as_ref().is_none_or(|t| t.matches(obj)))
            .flat_map(|r| r.paths.iter().map(String::as_str))
            .collect()
    }
}

/// RFC 6901 reference tokens of `pointer` (`~1` is `/`, `~0` is `~`); None for a pointer that
/// is not one (it ignores nothing, as in Flux).
fn tokens(pointer: &str) -> Option<Vec<String>> {
    let rest = pointer.strip_prefix('/')?;
    Some(
        rest.split('/')
            .map(|t| t.replace("~1", "/").replace("~0", "~"))
            .collect(),
    )
}

/// Removes what `pointer` names from `doc`, if it is there.
pub fn remove(doc: &mut Value, pointer: &str) {
    let Some(mut tokens) = tokens(pointer) else {
        return;
    };
    let Some(last) = tokens.pop() else {
        return;
    };
    let mut at = doc;
    for t in &tokens {
        let next = match at {
            Value::Object(m) => m.get_mut(t),
            Value::Array(a) => t.parse::<usize>().ok().and_then(|i| a.get_mut(i)),
            _ => None,
        };
        let Some(next) = next else {
            return;
        };
        at = next;
    }
    match at {
        Value::Object(m) => {
            m.remove(&last);
        }
        Value::Array(a) => {
            if let Some(i) = last.parse::<usize>().ok().filter(|i| *i < a.len()) {
                a.remove(i);
            }
        }
        _ => {}
    }
}

/// `doc` without the fields `paths` name.
pub fn without(doc: &Value, paths: &[&str]) -> Value {
    let mut out = doc.clone();
    for p in paths {
        remove(&mut out, p);
    }
    out
}

/// Sets what `pointer` names in `doc` to `value`, if its parent is there.
fn replace(doc: &mut Value, pointer: &str, value: Value) {
    let Some(tokens) = tokens(pointer) else {
        return;
    };
    let Some((last, parents)) = tokens.split_last() else {
        return;
    };
    let mut at = doc;
    for t in parents {
        let next = match at {
            Value::Object(m) => m.get_mut(t),
            Value::Array(a) => t.parse::<usize>().ok().and_then(|i| a.get_mut(i)),
            _ => None,
        };
        let Some(next) = next else {
            return;
        };
        at = next;
    }
    match at {
        Value::Object(m) => {
            m.insert(last.clone(), value);
        }
        Value::Array(a) => {
            if let Some(slot) = last.parse::<usize>().ok().and_then(|i| a.get_mut(i)) {
                *slot = value;
            }
        }
        _ => {}
    }
}

fn lookup<'a>(doc: &'a Value, pointer: &str) -> Option<&'a Value> {
    tokens(pointer)?;
    doc.pointer(pointer)
}

/// The `fieldsV1` sets of the server-side-apply managers of `live` other than `manager`
/// (main resource only).
fn other_appliers<'a>(live: &'a Value, manager: &str) -> Vec<&'a Map<String, Value>> {
    live.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|e| str_at(e, "/operation") == "Apply")
        .filter(|e| str_at(e, "/subresource").is_empty())
        .filter(|e| str_at(e, "/manager") != manager)
        .filter_map(|e| e.get("fieldsV1").and_then(Value::as_object))
        .collect()
}

/// Whether one of `sets` holds the field `pointer` names in `live`. A list index is matched
/// by its `k:{...}` key: the entry whose key fields all equal the item's.
fn owned_by(sets: &[&Map<String, Value>], live: &Value, pointer: &str) -> bool {
    let Some(tokens) = tokens(pointer) else {
        return false;
    };
    'sets: for set in sets {
        let mut node: &Map<String, Value> = set;
        let mut item = live;
        for (i, t) in tokens.iter().enumerate() {
            let key = match (item, t.parse::<usize>()) {
                (Value::Array(a), Ok(index)) => {
                    let Some(element) = a.get(index) else {
                        continue 'sets;
                    };
                    item = element;
                    let found = node.keys().find(|k| {
                        k.strip_prefix("k:")
                            .and_then(|j| serde_json::from_str::<Map<String, Value>>(j).ok())
                            .is_some_and(|kv| kv.iter().all(|(f, v)| element.get(f) == Some(v)))
                    });
                    let Some(found) = found else {
                        continue 'sets;
                    };
                    found.clone()
                }
                _ => {
                    item = item.get(t.as_str()).unwrap_or(&Value::Null);
                    format!("f:{t}")
                }
            };
            let Some(child) = node.get(&key) else {
                continue 'sets;
            };
            if i + 1 == tokens.len() {
                return true;
            }
            let Some(child) = child.as_object() else {
                continue 'sets;
            };
            node = child;
        }
    }
    false
}

/// Makes `payload` (the object about to be applied over `live`) keep the cluster's value of
/// each ignored path the dry-run `dry` would change: dropped when another applier owns it,
/// else set to the live value (dropped when the cluster has none).
pub fn keep_cluster_values(
    payload: &mut Value,
    live: &Value,
    dry: &Value,
    paths: &[&str],
    manager: &str,
) {
    let others = other_appliers(live, manager);
    for path in paths {
        let (now, then) = (lookup(live, path), lookup(dry, path));
        if now == then {
            continue;
        }
        match now {
            Some(value) if !owned_by(&others, live, path) => replace(payload, path, value.clone()),
            _ => remove(payload, path),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferroflux_api::common::Selector;
    use serde_json::json;

    fn deployment(name: &str, labels: Value) -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "apps", "labels": labels},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "app", "image": "a:1"}]}}},
        })
    }

    #[test]
    fn targets_select_as_flux() {
        let rules = IgnoreRules::compile(&[
            IgnoreRule {
                paths: vec!["/spec/replicas".into()],
                target: Some(Selector {
                    kind: Some("Deploy.*".into()),
                    name: Some("front|back".into()),
                    label_selector: Some("tier in (web)".into()),
                    ..Default::default()
                }),
            },
            IgnoreRule {
                paths: vec!["/metadata/annotations".into()],
                target: None,
            },
        ])
        .unwrap();
        let front = deployment("front", json!({"tier": "web"}));
        assert_eq!(
            rules.paths_for(&front),
            ["/spec/replicas", "/metadata/annotations"]
        );
        // The name regex is anchored; the label selector must hold.
        assert_eq!(
            rules.paths_for(&deployment("frontend", json!({"tier": "web"}))),
            ["/metadata/annotations"]
        );
        assert_eq!(
            rules.paths_for(&deployment("back", json!({"tier": "db"}))),
            ["/metadata/annotations"]
        );
        let err = IgnoreRules::compile(&[IgnoreRule {
            paths: vec![],
            target: Some(Selector {
                name: Some("(".into()),
                ..Default::default()
            }),
        }])
        .unwrap_err();
        assert!(err.starts_with("invalid name regex: "), "{err}");
    }

    #[test]
    fn removes_pointers_with_escapes_and_indices() {
        let doc = json!({"metadata": {"annotations": {"a/b": "1", "c": "2"}},
                         "spec": {"containers": [{"image": "x"}, {"image": "y"}]}});
        let out = without(
            &doc,
            &[
                "/metadata/annotations/a~1b",
                "/spec/containers/1/image",
                "/nothing/here",
                "not-a-pointer",
            ],
        );
        assert_eq!(
            out,
            json!({"metadata": {"annotations": {"c": "2"}},
                   "spec": {"containers": [{"image": "x"}, {}]}})
        );
    }

    #[test]
    fn keeps_what_another_applier_owns_and_adopts_the_rest() {
        let live = json!({
            "metadata": {"managedFields": [
                {"manager": "kustomize-controller", "operation": "Apply",
                 "fieldsV1": {"f:spec": {"f:replicas": {}, "f:template": {}}}},
                {"manager": "hpa", "operation": "Apply",
                 "fieldsV1": {"f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
                     "k:{\"name\":\"app\"}": {".": {}, "f:image": {}}}}}}}},
                {"manager": "kubectl-edit", "operation": "Update",
                 "fieldsV1": {"f:spec": {"f:paused": {}}}},
            ]},
            "spec": {"replicas": 5, "paused": true,
                     "template": {"spec": {"containers": [{"name": "app", "image": "a:2"}]}}},
        });
        let dry = json!({"spec": {"replicas": 2, "paused": false,
                         "template": {"spec": {"containers": [{"name": "app", "image": "a:1"}]}}}});
        let mut payload = dry.clone();
        keep_cluster_values(
            &mut payload,
            &live,
            &dry,
            &[
                "/spec/replicas",
                "/spec/paused",
                "/spec/template/spec/containers/0/image",
                "/spec/absent",
            ],
            "kustomize-controller",
        );
        assert_eq!(
            payload,
            json!({"spec": {"paused": true,
                   "template": {"spec": {"containers": [{"name": "app"}]}}}})
        );
    }
}
