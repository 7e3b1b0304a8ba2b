//! Impersonation and RBAC, for requests that impersonate someone.
//!
//! The cluster's own token is cluster-admin: its requests are never checked, as before. A request
//! carrying `Impersonate-User` (kubectl `--as`, kube-rs `impersonate`, Flux's
//! `serviceAccountName`) acts as that user instead, and is authorized the way the Kubernetes RBAC
//! authorizer does it: against the stored Roles, ClusterRoles, RoleBindings and
//! ClusterRoleBindings. What every real cluster grants through its default bindings (discovery,
//! version and health for every authenticated user, `system:masters` as cluster-admin, the
//! `cluster-admin` ClusterRole) is granted here without those objects being stored.

use axum::http::HeaderMap;
use serde_json::Value;

use crate::error::ApiError;
use crate::store::{State, meta_str};

const RBAC: &str = "rbac.authorization.k8s.io";
const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// Who an impersonating request acts as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub groups: Vec<String>,
}

/// Reads the impersonation headers: `None` when the request acts as the token's own user.
pub fn impersonated(headers: &HeaderMap) -> Result<Option<User>, ApiError> {
    let values = |name: &str| -> Result<Vec<String>, ApiError> {
        headers
            .get_all(name)
            .iter()
            .map(|v| {
                v.to_str().map(str::to_string).map_err(|_| {
                    ApiError::bad_request(format!("the {name} header is not valid text"))
                })
            })
            .collect()
    };
    let users = values("Impersonate-User")?;
    let groups = values("Impersonate-Group")?;
    let name = match users.as_slice() {
        [] if groups.is_empty() => return Ok(None),
        [] => {
            return Err(ApiError::bad_request(
                "requested impersonation of groups without impersonating a user",
            ));
        }
        [one] if !one.is_empty() => one.clone(),
        [_] => return Err(ApiError::bad_request("Impersonate-User is empty")),
        _ => {
            return Err(ApiError::bad_request(
                "only one Impersonate-User header is allowed",
            ));
        }
    };
    let specified = !groups.is_empty();
    let mut groups = groups;
    if !specified && let Some((ns, _)) = service_account(&name) {
        groups.push("system:serviceaccounts".into());
        groups.push(format!("system:serviceaccounts:{ns}"));
    }
    if !specified && name != "system:anonymous" {
        groups.push("system:authenticated".into());
    }
    Ok(Some(User { name, groups }))
}

/// `(namespace, name)` of a `system:serviceaccount:<ns>:<name>` user.
fn service_account(user: &str) -> Option<(&str, &str)> {
    let rest = user.strip_prefix(SERVICE_ACCOUNT_PREFIX)?;
    let (ns, name) = rest.split_once(':')?;
    (!ns.is_empty() && !name.is_empty() && !name.contains(':')).then_some((ns, name))
}

/// What a resource request asks to do, in the authorizer's terms.
#[derive(Clone, Debug, Default)]
pub struct Attributes<'a> {
    pub verb: &'a str,
    pub group: &'a str,
    /// The resource's plural name.
    pub resource: &'a str,
    pub subresource: &'a str,
    /// Empty at the cluster scope.
    pub namespace: &'a str,
    /// Empty for collections (list, watch, create, deletecollection).
    pub name: &'a str,
}

impl Attributes<'_> {
    fn combined_resource(&self) -> String {
        if self.subresource.is_empty() {
            self.resource.to_string()
        } else {
            format!("{}/{}", self.resource, self.subresource)
        }
    }
}

fn strings<'a>(rule: &'a Value, field: &str) -> impl Iterator<Item = &'a str> {
    rule.get(field)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// Whether one PolicyRule allows a resource request (Kubernetes' `RuleAllows`).
pub fn rule_allows(rule: &Value, a: &Attributes) -> bool {
    let verb = strings(rule, "verbs").any(|v| v == "*" || v == a.verb);
    let group = strings(rule, "apiGroups").any(|g| g == "*" || g == a.group);
    let combined = a.combined_resource();
    let resource = strings(rule, "resources").any(|r| {
        r == "*"
            || r == combined
            || (!a.subresource.is_empty() && r.strip_prefix("*/") == Some(a.subresource))
    });
    let mut names = strings(rule, "resourceNames").peekable();
    let name = names.peek().is_none() || names.any(|n| !a.name.is_empty() && n == a.name);
    verb && group && resource && name
}

/// Whether a binding's subject names `user`; `binding_ns` is where a RoleBinding lives (a
/// ServiceAccount subject without a namespace means that one).
pub fn subject_matches(subject: &Value, user: &User, binding_ns: &str) -> bool {
    let name = subject.get("name").and_then(Value::as_str).unwrap_or("");
    match subject.get("kind").and_then(Value::as_str).unwrap_or("") {
        "User" => name == user.name,
        "Group" => user.groups.iter().any(|g| g == name),
        "ServiceAccount" => {
            let ns = subject
                .get("namespace")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
                .unwrap_or(binding_ns);
            !ns.is_empty() && service_account(&user.name) == Some((ns, name))
        }
        _ => false,
    }
}

/// Rules of the role a binding refers to; `Err` names a missing role as the API server does.
fn role_rules<'a>(st: &'a State, binding: &Value, binding_ns: &str) -> Result<&'a Value, String> {
    let kind = binding
        .pointer("/roleRef/kind")
        .and_then(Value::as_str)
        .unwrap_or("");
    let name = binding
        .pointer("/roleRef/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let (key, ns, what) = match kind {
        "ClusterRole" => (format!("{RBAC}/clusterroles"), "", "clusterrole"),
        "Role" if !binding_ns.is_empty() => (format!("{RBAC}/roles"), binding_ns, "role"),
        other => return Err(format!("unsupported role reference kind: {other:?}")),
    };
    match st.get(&key, ns, name) {
        Some(role) => Ok(role.get("rules").unwrap_or(&Value::Null)),
        // Every real cluster has cluster-admin (Flux tenants are bound to it in their
        // namespace); it is granted without being stored.
        None if kind == "ClusterRole" && name == "cluster-admin" => Ok(&CLUSTER_ADMIN),
        None => Err(format!("{what}.{RBAC} {name:?} not found")),
    }
}

static CLUSTER_ADMIN: std::sync::LazyLock<Value> = std::sync::LazyLock::new(
    || serde_json::json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]),
);

/// Decides a resource request of `user` by RBAC; the error is the API server's 403.
pub fn authorize(st: &State, user: &User, a: &Attributes) -> Result<(), ApiError> {
    if user.groups.iter().any(|g| g == "system:masters") {
        return Ok(());
    }
    // Every real cluster binds system:basic-user to authenticated users: they may ask what they
    // are allowed to do.
    if a.group == "authorization.k8s.io"
        && matches!(
            a.resource,
            "selfsubjectaccessreviews" | "selfsubjectrulesreviews"
        )
        && a.verb == "create"
        && user.groups.iter().any(|g| g == "system:authenticated")
    {
        return Ok(());
    }
    let mut errors: Vec<String> = Vec::new();
    let mut allowed = |st: &State, binding: &Value, binding_ns: &str| -> bool {
        let applies = binding
            .get("subjects")
            .and_then(Value::as_array)
            .is_some_and(|s| s.iter().any(|s| subject_matches(s, user, binding_ns)));
        if !applies {
            return false;
        }
        match role_rules(st, binding, binding_ns) {
            Ok(rules) => rules
                .as_array()
                .is_some_and(|r| r.iter().any(|rule| rule_allows(rule, a))),
            Err(e) => {
                errors.push(e);
                false
            }
        }
    };
    let cluster_bindings = format!("{RBAC}/clusterrolebindings");
    if st
        .list(&cluster_bindings, None, None)
        .any(|b| allowed(st, b, ""))
    {
        return Ok(());
    }
    if !a.namespace.is_empty() {
        let role_bindings = format!("{RBAC}/rolebindings");
        if st
            .list(&role_bindings, Some(a.namespace), None)
            .any(|b| allowed(st, b, meta_str(b, "namespace")))
        {
            return Ok(());
        }
    }
    Err(forbidden(user, a, &errors))
}

/// Answers a SelfSubjectAccessReview: whether the requester (`None`: the cluster's own,
/// unrestricted user) may do what `review.spec` describes.
pub fn access_review(st: &State, user: Option<&User>, review: &Value) -> Result<Value, ApiError> {
    let spec = review
        .get("spec")
        .filter(|s| s.is_object())
        .ok_or_else(|| ApiError::bad_request("a SelfSubjectAccessReview needs a spec"))?;
    let text = |v: Option<&Value>, field: &str| -> String {
        v.and_then(|a| a.get(field))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let (allowed, reason) = match (
        spec.get("resourceAttributes"),
        spec.get("nonResourceAttributes"),
    ) {
        (Some(ra), None) => {
            let (verb, group, resource, subresource, namespace, name) = (
                text(Some(ra), "verb"),
                text(Some(ra), "group"),
                text(Some(ra), "resource"),
                text(Some(ra), "subresource"),
                text(Some(ra), "namespace"),
                text(Some(ra), "name"),
            );
            let a = Attributes {
                verb: &verb,
                group: &group,
                resource: &resource,
                subresource: &subresource,
                namespace: &namespace,
                name: &name,
            };
            match user {
                None => (true, String::new()),
                Some(u) => match authorize(st, u, &a) {
                    Ok(()) => (true, String::new()),
                    Err(e) => (
                        false,
                        e.message
                            .split_once(": RBAC: ")
                            .map(|(_, why)| format!("RBAC: {why}"))
                            .unwrap_or_default(),
                    ),
                },
            }
        }
        // Non-resource paths: what every authenticated user is granted by default (reading
        // discovery, version and health) and nothing else.
        (None, Some(na)) => {
            let verb = text(Some(na), "verb");
            (user.is_none() || verb == "get", String::new())
        }
        _ => {
            return Err(ApiError::bad_request(
                "spec: Invalid value: exactly one of nonResourceAttributes or resourceAttributes must be specified",
            ));
        }
    };
    let mut status = serde_json::json!({ "allowed": allowed });
    if !reason.is_empty() {
        status["reason"] = Value::String(reason);
    }
    Ok(serde_json::json!({
        "kind": "SelfSubjectAccessReview",
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": { "creationTimestamp": null },
        "spec": spec,
        "status": status,
    }))
}

/// The API server's Forbidden status: `<resource> "<name>" is forbidden: User "<user>" cannot
/// <verb> resource "<resource>" in API group "<group>" in the namespace "<ns>"`.
pub fn forbidden(user: &User, a: &Attributes, errors: &[String]) -> ApiError {
    let mut why = format!(
        "User {:?} cannot {} resource {:?} in API group {:?}",
        user.name,
        a.verb,
        a.combined_resource(),
        a.group
    );
    if a.namespace.is_empty() {
        why += " at the cluster scope";
    } else {
        why += &format!(" in the namespace {:?}", a.namespace);
    }
    match errors {
        [] => {}
        [one] => why += &format!(": RBAC: {one}"),
        many => why += &format!(": RBAC: [{}]", many.join(", ")),
    }
    ApiError::forbidden_request(a.group, a.resource, a.name, &why)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn attrs<'a>(verb: &'a str, group: &'a str, resource: &'a str) -> Attributes<'a> {
        Attributes {
            verb,
            group,
            resource,
            namespace: "team-a",
            name: "web",
            ..Default::default()
        }
    }

    #[test]
    fn rules_match_verbs_groups_resources_and_names() {
        let rule =
            json!({"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "patch"]});
        assert!(rule_allows(&rule, &attrs("patch", "apps", "deployments")));
        assert!(!rule_allows(&rule, &attrs("delete", "apps", "deployments")));
        assert!(!rule_allows(&rule, &attrs("patch", "", "deployments")));
        assert!(!rule_allows(&rule, &attrs("patch", "apps", "statefulsets")));

        let all = json!({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]});
        assert!(rule_allows(
            &all,
            &attrs("deletecollection", "x.io", "widgets")
        ));

        let core = json!({"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]});
        assert!(rule_allows(&core, &attrs("create", "", "configmaps")));
        assert!(!rule_allows(&core, &attrs("create", "apps", "configmaps")));

        let named = json!({"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"], "resourceNames": ["web"]});
        assert!(rule_allows(&named, &attrs("get", "", "configmaps")));
        let mut other = attrs("get", "", "configmaps");
        other.name = "db";
        assert!(!rule_allows(&named, &other));
        // A rule limited to names never grants a request without one (create, list).
        other.name = "";
        assert!(!rule_allows(&named, &other));

        let no_verbs = json!({"apiGroups": ["*"], "resources": ["*"]});
        assert!(!rule_allows(&no_verbs, &attrs("get", "", "pods")));
    }

    #[test]
    fn subresources_need_their_own_rule() {
        let mut status = attrs("patch", "apps", "deployments");
        status.subresource = "status";
        let main = json!({"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["*"]});
        assert!(!rule_allows(&main, &status));
        let sub =
            json!({"apiGroups": ["apps"], "resources": ["deployments/status"], "verbs": ["patch"]});
        assert!(rule_allows(&sub, &status));
        assert!(!rule_allows(&sub, &attrs("patch", "apps", "deployments")));
        let any_status = json!({"apiGroups": ["apps"], "resources": ["*/status"], "verbs": ["*"]});
        assert!(rule_allows(&any_status, &status));
        let mut scale = status.clone();
        scale.subresource = "scale";
        assert!(!rule_allows(&any_status, &scale));
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    #[test]
    fn service_accounts_get_their_groups() {
        assert_eq!(impersonated(&headers(&[])).unwrap(), None);
        let u = impersonated(&headers(&[(
            "Impersonate-User",
            "system:serviceaccount:team-a:deployer",
        )]))
        .unwrap()
        .unwrap();
        assert_eq!(
            u.groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:team-a",
                "system:authenticated"
            ]
        );
        let u = impersonated(&headers(&[
            ("Impersonate-User", "jane"),
            ("Impersonate-Group", "devs"),
            ("Impersonate-Group", "ops"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(
            (u.name.as_str(), u.groups.clone()),
            ("jane", vec!["devs".to_string(), "ops".into()])
        );
        let e = impersonated(&headers(&[("Impersonate-Group", "devs")])).unwrap_err();
        assert_eq!(e.code, 400);
        assert!(
            e.message.contains("without impersonating a user"),
            "{}",
            e.message
        );
    }

    #[test]
    fn subjects_match_users_groups_and_service_accounts() {
        let sa = User {
            name: "system:serviceaccount:team-a:deployer".into(),
            groups: vec!["system:serviceaccounts".into()],
        };
        let s = |v: Value| subject_matches(&v, &sa, "team-a");
        assert!(s(
            json!({"kind": "ServiceAccount", "name": "deployer", "namespace": "team-a"})
        ));
        // A RoleBinding's ServiceAccount subject defaults to the binding's namespace.
        assert!(s(json!({"kind": "ServiceAccount", "name": "deployer"})));
        assert!(!subject_matches(
            &json!({"kind": "ServiceAccount", "name": "deployer"}),
            &sa,
            ""
        ));
        assert!(!s(
            json!({"kind": "ServiceAccount", "name": "deployer", "namespace": "team-b"})
        ));
        assert!(s(
            json!({"kind": "Group", "name": "system:serviceaccounts"})
        ));
        assert!(s(
            json!({"kind": "User", "name": "system:serviceaccount:team-a:deployer"})
        ));
        assert!(!s(json!({"kind": "User", "name": "deployer"})));
    }

    #[test]
    fn forbidden_message_is_the_api_servers() {
        let sa = User {
            name: "system:serviceaccount:flux-system:deployer".into(),
            groups: vec![],
        };
        let mut a = attrs("patch", "", "configmaps");
        a.namespace = "team-b";
        a.name = "settings";
        let e = forbidden(&sa, &a, &[]);
        assert_eq!(e.code, 403);
        assert_eq!(
            e.message,
            "configmaps \"settings\" is forbidden: User \"system:serviceaccount:flux-system:deployer\" cannot patch resource \"configmaps\" in API group \"\" in the namespace \"team-b\""
        );
        let list = Attributes {
            verb: "list",
            group: "apps",
            resource: "deployments",
            ..Default::default()
        };
        assert_eq!(
            forbidden(
                &sa,
                &list,
                &["clusterrole.rbac.authorization.k8s.io \"x\" not found".into()]
            )
            .message,
            "deployments.apps is forbidden: User \"system:serviceaccount:flux-system:deployer\" cannot list resource \"deployments\" in API group \"apps\" at the cluster scope: RBAC: clusterrole.rbac.authorization.k8s.io \"x\" not found"
        );
    }
}
