//! The CEL interpreter's tests: Flux's documented expressions over realistic Kubernetes objects
//! (`flux`), the language table (`language`), and bad inputs with the messages users see
//! (`errors`).

mod errors;
mod flux;
mod language;

use ferroflux_cel::{Expression, Value};
use serde_json::{Map, Value as Json, json};

/// The variables of a health check: the object's own top-level fields.
pub fn fields(obj: Json) -> Map<String, Json> {
    match obj {
        Json::Object(m) => m,
        other => panic!("test object is not a JSON object: {other}"),
    }
}

/// Evaluates `src` over `vars`, panicking with the source on any error.
pub fn eval(src: &str, vars: &Map<String, Json>) -> Value {
    let e = Expression::parse(src).unwrap_or_else(|e| panic!("{src}: {e}"));
    e.evaluate(vars).unwrap_or_else(|e| panic!("{src}: {e}"))
}

/// `eval` converted to JSON, for comparing with `json!` literals.
pub fn eval_json(src: &str, vars: &Map<String, Json>) -> Json {
    eval(src, vars)
        .to_json()
        .unwrap_or_else(|| panic!("{src}: result has no JSON form"))
}

/// The error message (Display) evaluating `src` gives, parse or evaluation.
pub fn error(src: &str, vars: &Map<String, Json>) -> String {
    match Expression::parse(src) {
        Err(e) => e.to_string(),
        Ok(e) => match e.evaluate(vars) {
            Err(e) => e.to_string(),
            Ok(v) => panic!("{src}: expected an error, got {v:?}"),
        },
    }
}

/// An empty variable set.
pub fn none() -> Map<String, Json> {
    Map::new()
}

/// A variable set from a JSON object literal.
pub fn vars(v: Json) -> Map<String, Json> {
    fields(v)
}

#[test]
fn harness_parses_json_objects() {
    assert_eq!(
        eval_json("a", &vars(json!({"a": [1, "x"]}))),
        json!([1, "x"])
    );
}
