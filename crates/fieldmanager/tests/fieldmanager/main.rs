//! Fuzz target: the server-side apply field sets (generator: `ferroflux-fuzzkit`).
//!
//! - `FieldsV1` JSON, generated and mutated: parsing gives a set or `None`, never a panic, and a
//!   parsed set written back and parsed again holds the same paths.
//! - The set algebra on random sets: union, intersection and difference agree with membership.
//! - `apply` of random Deployments and ConfigMaps by two managers, with and without force, onto
//!   objects whose `managedFields` may be mutated: an object or a clear error, never a panic;
//!   what it writes parses back; and applying the same configuration again as the same manager
//!   changes nothing (server-side apply is idempotent — the API client relies on it to retry).
//!
//! `FUZZ_CASES=100000 cargo test -p ferroflux-fieldmanager --test fieldmanager fuzz` runs longer.

use ferroflux_fieldmanager::{FieldSet, PathElement, SsaError, apply};
use ferroflux_fuzzkit::{Rng, run};
use serde_json::{Value, json};

const T0: &str = "2026-01-01T00:00:00Z";

fn element(rng: &mut Rng) -> PathElement {
    match rng.below(4) {
        0 | 1 => PathElement::Field(
            rng.pick(&["spec", "metadata", "a", "b", "x.y", "é", ""])
                .to_string(),
        ),
        2 => PathElement::Key(format!("{{\"name\":\"{}\"}}", rng.pick(&["a", "b", "c"]))),
        _ if rng.one_in(2) => PathElement::Value(format!("\"{}\"", rng.pick(&["a", "b"]))),
        _ => PathElement::Index(rng.below(4)),
    }
}

fn path(rng: &mut Rng) -> Vec<PathElement> {
    (0..1 + rng.below(4)).map(|_| element(rng)).collect()
}

fn set(rng: &mut Rng) -> (FieldSet, Vec<Vec<PathElement>>) {
    let mut s = FieldSet::new();
    let paths: Vec<_> = (0..rng.below(8)).map(|_| path(rng)).collect();
    for p in &paths {
        s.insert(p);
    }
    (s, paths)
}

const FIELDS_DICTIONARY: &[&str] = &[
    "\"f:spec\"",
    "\"k:{\\\"name\\\":\\\"a\\\"}\"",
    "\"v:1\"",
    "\"i:0\"",
    "\".\"",
    "{}",
    ":",
    ",",
    "{",
    "}",
    "\"x:y\"",
    "\"f:\"",
    "\"i:-1\"",
    "\"k:{\"",
    "null",
    "[]",
];

#[test]
fn fuzz_fields_v1_parse_and_round_trip() {
    run("ssa_fields_v1", 3000, |rng| {
        let (generated, _) = set(rng);
        let text = serde_json::to_string(&generated.to_fields_v1()).unwrap();
        let text = if rng.one_in(4) {
            text
        } else {
            String::from_utf8_lossy(&rng.mutate(text.as_bytes(), FIELDS_DICTIONARY)).into_owned()
        };
        let Ok(value) = serde_json::from_str::<Value>(&text) else {
            return;
        };
        let Some(parsed) = FieldSet::from_fields_v1(&value) else {
            return;
        };
        let again =
            FieldSet::from_fields_v1(&parsed.to_fields_v1()).expect("our own output parses");
        if !parsed.is_empty() {
            assert_eq!(again.paths(), parsed.paths(), "{text}");
        }
    });
}

#[test]
fn fuzz_set_algebra_agrees_with_membership() {
    run("ssa_set_algebra", 3000, |rng| {
        let (a, pa) = set(rng);
        let (b, pb) = set(rng);
        let (union, inter, diff) = (a.union(&b), a.intersection(&b), a.difference(&b));
        for p in pa.iter().chain(&pb) {
            let (in_a, in_b) = (a.contains(p), b.contains(p));
            assert_eq!(union.contains(p), in_a || in_b, "union at {p:?}");
            assert_eq!(inter.contains(p), in_a && in_b, "intersection at {p:?}");
            assert_eq!(diff.contains(p), in_a && !in_b, "difference at {p:?}");
        }
        assert_eq!(diff.union(&inter).paths(), a.paths());
        assert!(diff.intersection(&b).is_empty());
    });
}

fn config(rng: &mut Rng) -> Value {
    let name = |rng: &mut Rng| rng.pick(&["a", "b", "c"]).to_string();
    let labels: serde_json::Map<String, Value> = (0..rng.below(3))
        .map(|_| (name(rng), json!(rng.text(&["x", "y"], 3))))
        .collect();
    if rng.one_in(2) {
        let data: serde_json::Map<String, Value> = (0..rng.below(4))
            .map(|_| (name(rng), json!(rng.text(&["v"], 4))))
            .collect();
        return json!({"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": "cm", "labels": labels}, "data": data});
    }
    let containers: Vec<Value> = (0..rng.below(3))
        .map(|_| {
            let ports: Vec<Value> = (0..rng.below(3))
                .map(|_| json!({"containerPort": 80 + rng.below(3), "protocol": rng.pick(&["TCP", "UDP"])}))
                .collect();
            let env: Vec<Value> = (0..rng.below(3))
                .map(|_| json!({"name": name(rng), "value": rng.text(&["e"], 3)}))
                .collect();
            json!({"name": name(rng), "image": rng.pick(&["nginx:1", "nginx:2"]),
                   "ports": ports, "env": env, "args": [rng.text(&["--x"], 6)]})
        })
        .collect();
    let mut spec = json!({"selector": {"matchLabels": {"app": "w"}},
                          "template": {"metadata": {"labels": {"app": "w"}},
                                       "spec": {"containers": containers}}});
    if rng.one_in(2) {
        spec["replicas"] = json!(rng.below(4));
    }
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "web", "labels": labels}, "spec": spec})
}

/// Checks an apply's outcome; the object when there is one.
fn check(result: Result<ferroflux_fieldmanager::Applied, SsaError>, what: &str) -> Option<Value> {
    match result {
        Ok(applied) => {
            for entry in applied.object["metadata"]["managedFields"]
                .as_array()
                .into_iter()
                .flatten()
            {
                assert!(
                    FieldSet::from_fields_v1(&entry["fieldsV1"]).is_some(),
                    "{what}: wrote an unreadable entry {entry}"
                );
            }
            Some(applied.object)
        }
        Err(e) => {
            assert!(!e.to_string().is_empty(), "{what}: an empty error");
            None
        }
    }
}

#[test]
fn fuzz_apply_is_idempotent_and_never_panics() {
    run("ssa_apply", 400, |rng| {
        let mut live: Option<Value> = None;
        for step in 0..1 + rng.below(4) {
            let cfg = config(rng);
            let manager = rng.pick(&["flux", "kubectl"]);
            let force = rng.one_in(2);
            if let Some(l) = live.as_mut()
                && rng.one_in(5)
            {
                // A client may send any managedFields; the server must refuse or read them.
                let text = serde_json::to_string(&l["metadata"]["managedFields"]).unwrap();
                let mutated = rng.mutate(text.as_bytes(), FIELDS_DICTIONARY);
                if let Ok(v) = serde_json::from_slice::<Value>(&mutated) {
                    l["metadata"]["managedFields"] = v;
                }
            }
            let what = format!("step {step}: {manager} applies {cfg}");
            let Some(object) = check(apply(live.as_ref(), &cfg, manager, force, T0), &what) else {
                continue;
            };
            let again = apply(Some(&object), &cfg, manager, force, T0)
                .unwrap_or_else(|e| panic!("{what}: applying it again failed: {e}"));
            assert!(
                !again.changed,
                "{what}: applying it again changed {object} into {}",
                again.object
            );
            live = Some(object);
        }
    });
}

#[test]
fn fuzz_apply_of_mutated_objects_never_panics() {
    run("ssa_apply_mutated", 400, |rng| {
        let cfg = config(rng);
        let text = serde_json::to_vec(&cfg).unwrap();
        let mutated = rng.mutate(
            &text,
            &["{}", "[]", "null", "\"name\"", "\"spec\"", "1", ","],
        );
        let Ok(cfg) = serde_json::from_slice::<Value>(&mutated) else {
            return;
        };
        let live = check(apply(None, &config(rng), "kubectl", false, T0), "base");
        let _ = check(
            apply(live.as_ref(), &cfg, "flux", rng.one_in(2), T0),
            &cfg.to_string(),
        );
    });
}
