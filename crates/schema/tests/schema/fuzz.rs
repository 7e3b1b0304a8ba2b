//! Fuzz target of the strategic merge patch (issue 20), on `ferroflux-fuzzkit`'s seeded
//! generator: random objects and patches of built-in and custom kinds never panic the merge in
//! either flavor, a failure is an error with a message, and for custom kinds (maps merge, lists
//! are replaced) applying the same patch twice gives what applying it once gives.

use ferroflux_fuzzkit::{Rng, run};
use ferroflux_schema::{Flavor, strategic_merge_with};
use serde_json::{Map, Value, json};

const KINDS: &[(&str, &str)] = &[
    ("apps/v1", "Deployment"),
    ("v1", "ConfigMap"),
    ("v1", "Service"),
    ("v1", "Pod"),
    ("example.io/v1", "Widget"),
];
const KEYS: &[&str] = &[
    "spec",
    "template",
    "containers",
    "name",
    "image",
    "ports",
    "containerPort",
    "protocol",
    "env",
    "value",
    "volumes",
    "data",
    "labels",
    "metadata",
    "args",
    "$patch",
    "$retainKeys",
    "$setElementOrder/containers",
    "$deleteFromPrimitiveList/finalizers",
    "finalizers",
    "a",
    "b",
];
const SCALARS: &[&str] = &["delete", "replace", "merge", "c", "nginx", "TCP", "80", ""];

fn value(rng: &mut Rng, depth: usize) -> Value {
    match if depth > 4 {
        rng.below(3)
    } else {
        rng.below(6)
    } {
        0 => Value::Null,
        1 => json!(rng.below(100)),
        2 => Value::String(rng.pick(SCALARS).to_string()),
        3 => Value::Bool(rng.one_in(2)),
        4 => Value::Array((0..rng.below(4)).map(|_| value(rng, depth + 1)).collect()),
        _ => {
            let mut m = Map::new();
            for _ in 0..rng.below(5) {
                m.insert(rng.pick(KEYS).to_string(), value(rng, depth + 1));
            }
            Value::Object(m)
        }
    }
}

fn object(rng: &mut Rng, api_version: &str, kind: &str) -> Value {
    let mut body = match value(rng, 0) {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    body.insert("apiVersion".into(), json!(api_version));
    body.insert("kind".into(), json!(kind));
    body.insert("metadata".into(), json!({"name": "x"}));
    Value::Object(body)
}

/// Removes the `$` directives, under which a second application may rightly differ.
fn without_directives(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|k, _| !k.starts_with('$'));
            m.values_mut().for_each(without_directives);
        }
        Value::Array(a) => a.iter_mut().for_each(without_directives),
        _ => {}
    }
}

#[test]
fn fuzz_strategic_merge_never_panics_and_is_idempotent_on_custom_kinds() {
    run("fuzz_strategic_merge", 5_000, |rng: &mut Rng| {
        let (api_version, kind) = rng.pick(KINDS);
        let original = object(rng, api_version, kind);
        let mut patch = object(rng, api_version, kind);
        for flavor in [Flavor::Kustomize, Flavor::ApiServer] {
            if let Err(e) = strategic_merge_with(&original, &patch, flavor) {
                assert!(!e.to_string().is_empty());
            }
        }
        if kind == "Widget" {
            without_directives(&mut patch);
            let Ok(once) = strategic_merge_with(&original, &patch, Flavor::Kustomize) else {
                return;
            };
            let twice = strategic_merge_with(&once, &patch, Flavor::Kustomize)
                .expect("a patch that applied once applies again");
            assert_eq!(once, twice, "patch {patch}\noriginal {original}");
        }
    });
}
