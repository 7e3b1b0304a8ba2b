//! `healthCheckExprs`: the health of custom resources told by CEL expressions, as Flux's
//! status evaluator tells it (fluxcd/pkg's RFC 0009 rules): an object whose `status` reports
//! an older `observedGeneration` is in progress; else `inProgress`, `failed` and `current` are
//! evaluated in that order over the object's top-level fields, the first true one deciding;
//! none true, in progress. An expression that cannot be evaluated leaves the object `Unknown`
//! with the error, so that the wait names it when it times out.

use super::{Health, Status};
use crate::object::{group_version, int_at, str_at};
use ferroflux_api::kustomization::CustomHealthCheck;
use ferroflux_cel::Expression;
use serde_json::Value;

/// The parsed `healthCheckExprs` of one Kustomization or HelmRelease, by group and kind.
#[derive(Default)]
pub struct CustomHealth {
    /// `(group, Some(kind))` for one kind, `(group, None)` for every kind of the group.
    checks: Vec<((String, Option<String>), Evaluator)>,
}

impl std::fmt::Debug for CustomHealth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kinds: Vec<String> = self.checks.iter().map(|(k, _)| group_kind(k)).collect();
        f.debug_struct("CustomHealth")
            .field("kinds", &kinds)
            .finish()
    }
}

struct Evaluator {
    current: Expression,
    failed: Option<Expression>,
    in_progress: Option<Expression>,
}

impl CustomHealth {
    /// Parses `checks`; the error is worded as Flux words it (the index of the check, which
    /// expression, the parser's message), and a group and kind named twice is refused.
    pub fn new(checks: &[CustomHealthCheck]) -> Result<CustomHealth, String> {
        let mut parsed: Vec<((String, Option<String>), Evaluator)> = Vec::new();
        for (i, check) in checks.iter().enumerate() {
            let group = group_version(&check.api_version).0.to_string();
            let kind = check.kind.clone().filter(|k| !k.is_empty());
            let key = (group, kind);
            if parsed.iter().any(|(k, _)| *k == key) {
                return Err(format!(
                    "duplicate custom health check for GroupKind {} at healthchecks[{i}]",
                    group_kind(&key)
                ));
            }
            let evaluator = Evaluator::new(check).map_err(|e| {
                format!("failed to create custom status evaluator for healthchecks[{i}]: {e}")
            })?;
            parsed.push((key, evaluator));
        }
        Ok(CustomHealth { checks: parsed })
    }

    /// Whether no expression is configured.
    pub fn is_empty(&self) -> bool {
        self.checks.is_empty()
    }

    /// The health of `obj` by its group's or kind's expressions; None when none applies (the
    /// built-in rules do). A kind's own check wins over its group's.
    pub fn assess(&self, obj: &Value) -> Option<Health> {
        let group = group_version(str_at(obj, &["apiVersion"]).unwrap_or("")).0;
        let kind = str_at(obj, &["kind"]).unwrap_or("");
        let find = |k: Option<&str>| {
            self.checks
                .iter()
                .find(|((g, ck), _)| g == group && ck.as_deref() == k)
                .map(|(_, e)| e)
        };
        let evaluator = find(Some(kind)).or_else(|| find(None))?;
        Some(evaluator.evaluate(obj, kind))
    }
}

/// Go's `GroupKind.String()`: `Kind.group`, or `Kind` for the core group.
fn group_kind((group, kind): &(String, Option<String>)) -> String {
    let kind = kind.as_deref().unwrap_or("");
    if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    }
}

impl Evaluator {
    fn new(check: &CustomHealthCheck) -> Result<Evaluator, String> {
        if check.current.is_empty() {
            return Err("expression Current not specified".into());
        }
        let parse = |which: &str, source: &str| {
            Expression::parse(source)
                .map_err(|e| format!("failed to parse the expression {which}: {e}"))
        };
        let optional =
            |which: &str, source: &Option<String>| -> Result<Option<Expression>, String> {
                match source.as_deref() {
                    Some(s) if !s.is_empty() => parse(which, s).map(Some),
                    _ => Ok(None),
                }
            };
        Ok(Evaluator {
            current: parse("Current", &check.current)?,
            failed: optional("Failed", &check.failed)?,
            in_progress: optional("InProgress", &check.in_progress)?,
        })
    }

    fn evaluate(&self, obj: &Value, kind: &str) -> Health {
        // Some CRDs type observedGeneration otherwise: only integers count, as in Flux.
        if let (Some(observed), Some(generation)) = (
            int_at(obj, &["status", "observedGeneration"]),
            int_at(obj, &["metadata", "generation"]),
        ) && observed != generation
        {
            return Health::in_progress(format!(
                "{kind} generation is {generation}, but latest observed generation is {observed}"
            ));
        }
        let variables = match obj {
            Value::Object(fields) => fields,
            _ => return Health::new(Status::Unknown, "not an object"),
        };
        let order = [
            (self.in_progress.as_ref(), Status::InProgress),
            (self.failed.as_ref(), Status::Failed),
            (Some(&self.current), Status::Current),
        ];
        for (expression, status) in order {
            let Some(expression) = expression else {
                continue;
            };
            match expression.evaluate_bool(variables) {
                Ok(true) => {
                    return Health::new(
                        status,
                        format!("healthCheckExprs: '{}' is true", expression.source()),
                    );
                }
                Ok(false) => {}
                Err(e) => return Health::new(Status::Unknown, e.to_string()),
            }
        }
        Health::in_progress("healthCheckExprs: no expression is true")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(api_version: &str, kind: Option<&str>, current: &str) -> CustomHealthCheck {
        CustomHealthCheck {
            api_version: api_version.into(),
            kind: kind.map(String::from),
            current: current.into(),
            failed: Some("status.phase == 'Failed'".into()),
            in_progress: Some("status.phase == 'Pending'".into()),
        }
    }

    fn widget(status: serde_json::Value) -> Value {
        json!({"apiVersion": "example.com/v1", "kind": "Widget",
               "metadata": {"name": "w", "generation": 2}, "status": status})
    }

    #[test]
    fn expressions_decide_in_flux_s_order() {
        let custom = CustomHealth::new(&[check(
            "example.com/v1",
            Some("Widget"),
            "status.phase == 'Ready'",
        )])
        .unwrap();
        let status = |s| custom.assess(&widget(s)).map(|h| h.status);
        assert_eq!(status(json!({"phase": "Ready"})), Some(Status::Current));
        assert_eq!(status(json!({"phase": "Failed"})), Some(Status::Failed));
        assert_eq!(
            status(json!({"phase": "Pending"})),
            Some(Status::InProgress)
        );
        // None true: in progress.
        assert_eq!(status(json!({"phase": "Other"})), Some(Status::InProgress));
        // An older observed generation wins over the expressions.
        assert_eq!(
            status(json!({"phase": "Ready", "observedGeneration": 1})),
            Some(Status::InProgress)
        );
        // Not an integer: the rule is skipped, as in Flux.
        assert_eq!(
            status(json!({"phase": "Ready", "observedGeneration": "1"})),
            Some(Status::Current)
        );
        // An expression that cannot be evaluated: Unknown, with cel's message.
        let unknown = custom.assess(&widget(json!({}))).unwrap();
        assert_eq!(unknown.status, Status::Unknown);
        assert!(
            unknown
                .message
                .starts_with("failed to evaluate the CEL expression 'status.phase == 'Pending'': "),
            "{}",
            unknown.message
        );
        // Other kinds keep the built-in rules.
        assert!(
            custom
                .assess(
                    &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
                )
                .is_none()
        );
    }

    #[test]
    fn a_kind_s_check_wins_over_its_group_s() {
        let custom = CustomHealth::new(&[
            check("example.com/v1", None, "false"),
            check("example.com/v1", Some("Widget"), "true"),
        ])
        .unwrap();
        let widget_health = custom.assess(&widget(json!({"phase": "x"}))).unwrap();
        assert_eq!(widget_health.status, Status::Current);
        let gadget = json!({"apiVersion": "example.com/v2", "kind": "Gadget", "metadata": {"name": "g"},
                            "status": {"phase": "x"}});
        assert_eq!(custom.assess(&gadget).unwrap().status, Status::InProgress);
    }

    #[test]
    fn bad_checks_are_refused_as_flux_words_it() {
        let message = |checks: &[CustomHealthCheck]| CustomHealth::new(checks).unwrap_err();
        assert_eq!(
            message(&[check("example.com/v1", Some("Widget"), "")]),
            "failed to create custom status evaluator for healthchecks[0]: expression Current not specified"
        );
        let parse = message(&[
            check("apps/v1", Some("Deployment"), "true"),
            check("example.com/v1", Some("Widget"), "status.phase =="),
        ]);
        assert!(
            parse.starts_with(
                "failed to create custom status evaluator for healthchecks[1]: failed to parse the expression Current: failed to parse the CEL expression 'status.phase ==': "
            ),
            "{parse}"
        );
        assert_eq!(
            message(&[
                check("example.com/v1", Some("Widget"), "true"),
                check("example.com/v2", Some("Widget"), "true"),
            ]),
            "duplicate custom health check for GroupKind Widget.example.com at healthchecks[1]"
        );
        assert_eq!(
            message(&[
                check("v1", Some("Pod"), "true"),
                check("v1", Some("Pod"), "true")
            ]),
            "duplicate custom health check for GroupKind Pod at healthchecks[1]"
        );
    }
}
