//! Rendered files into manifests and hooks, as Helm's `release/v1/util` does: the document
//! split (`releaseutil.SplitManifests`, Helm 4.2's separator rule), each document's head read
//! as YAML (a YAML error names the file), hooks recognised by `helm.sh/hook` (unknown events
//! skip the document), weights and delete policies, and the install-order kind sort.

use serde_json::Value;

/// `helm.sh/hook`.
pub const HOOK_ANNOTATION: &str = "helm.sh/hook";
/// `helm.sh/hook-weight`.
pub const HOOK_WEIGHT_ANNOTATION: &str = "helm.sh/hook-weight";
/// `helm.sh/hook-delete-policy`.
pub const HOOK_DELETE_ANNOTATION: &str = "helm.sh/hook-delete-policy";
/// `helm.sh/hook-output-log-policy`.
pub const HOOK_OUTPUT_LOG_ANNOTATION: &str = "helm.sh/hook-output-log-policy";

/// Helm's `InstallOrder`.
pub const INSTALL_ORDER: &[&str] = &[
    "PriorityClass",
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
];

/// One rendered document that is not a hook.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// The template it came from (`mychart/templates/deployment.yaml`).
    pub path: String,
    /// The document's text, as Helm keeps it (leading white space removed).
    pub content: String,
    /// `apiVersion` of the document.
    pub api_version: String,
    /// `kind` of the document.
    pub kind: String,
    /// `metadata.name` of the document.
    pub name: String,
}

/// A hook event (`helm.sh/hook` values; `test-success` is read as `test`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    /// `pre-install`
    PreInstall,
    /// `post-install`
    PostInstall,
    /// `pre-delete`
    PreDelete,
    /// `post-delete`
    PostDelete,
    /// `pre-upgrade`
    PreUpgrade,
    /// `post-upgrade`
    PostUpgrade,
    /// `pre-rollback`
    PreRollback,
    /// `post-rollback`
    PostRollback,
    /// `test` (and its old spelling `test-success`)
    Test,
}

impl HookEvent {
    fn parse(s: &str) -> Option<HookEvent> {
        Some(match s {
            "pre-install" => HookEvent::PreInstall,
            "post-install" => HookEvent::PostInstall,
            "pre-delete" => HookEvent::PreDelete,
            "post-delete" => HookEvent::PostDelete,
            "pre-upgrade" => HookEvent::PreUpgrade,
            "post-upgrade" => HookEvent::PostUpgrade,
            "pre-rollback" => HookEvent::PreRollback,
            "post-rollback" => HookEvent::PostRollback,
            "test" | "test-success" => HookEvent::Test,
            _ => return None,
        })
    }

    /// The annotation value naming the event.
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::PreInstall => "pre-install",
            HookEvent::PostInstall => "post-install",
            HookEvent::PreDelete => "pre-delete",
            HookEvent::PostDelete => "post-delete",
            HookEvent::PreUpgrade => "pre-upgrade",
            HookEvent::PostUpgrade => "post-upgrade",
            HookEvent::PreRollback => "pre-rollback",
            HookEvent::PostRollback => "post-rollback",
            HookEvent::Test => "test",
        }
    }
}

/// A hook document.
#[derive(Debug, Clone, PartialEq)]
pub struct Hook {
    /// `metadata.name` of the document.
    pub name: String,
    /// `kind` of the document.
    pub kind: String,
    /// The template it came from.
    pub path: String,
    /// The document's text.
    pub manifest: String,
    /// The events of its `helm.sh/hook` annotation, unknown ones left out.
    pub events: Vec<HookEvent>,
    /// `helm.sh/hook-weight` (0 when absent or not an integer).
    pub weight: i64,
    /// `helm.sh/hook-delete-policy` values, lower-cased, as written.
    pub delete_policies: Vec<String>,
    /// `helm.sh/hook-output-log-policy` values, lower-cased, as written.
    pub output_log_policies: Vec<String>,
}

/// Helm's `SplitManifests`: documents of a stream in order. Separators are `---` with the white
/// space around it (Helm 4.2's `(?:^|\s*\n)---\s*`); blank documents are dropped and each
/// document loses its leading white space.
pub fn split_manifests(text: &str) -> Vec<String> {
    let text = text.trim_start();
    let mut docs = Vec::new();
    let mut from = 0;
    let mut push = |d: &str| {
        if !d.trim().is_empty() {
            docs.push(d.trim_start().to_string());
        }
    };
    for (start, end) in separators(text) {
        push(&text[from..start]);
        from = end;
    }
    push(&text[from..]);
    docs
}

/// RE2's `\s`: ASCII white space only (no vertical tab).
fn is_go_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | 0x0C | b'\r' | b' ')
}

/// The spans of `(?:^|\s*\n)---\s*` in `text`, leftmost-first and non-overlapping as a
/// regular expression engine finds them, without building one: a process rendering one chart
/// paid more for compiling the expression than for splitting. A match is a `---` preceded by a
/// line break (or at the very start), taking the white space before that line break (back to
/// the previous match) and all the white space after the dashes.
fn separators(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut spans = Vec::new();
    let mut pos = 0;
    loop {
        let (start, dashes) = if pos == 0 && b.starts_with(b"---") {
            (0, 0)
        } else {
            let Some(k) = b[pos..].windows(4).position(|w| w == b"\n---") else {
                break;
            };
            let newline = pos + k;
            let mut start = newline;
            while start > pos && is_go_space(b[start - 1]) {
                start -= 1;
            }
            (start, newline + 1)
        };
        let mut end = dashes + 3;
        while end < b.len() && is_go_space(b[end]) {
            end += 1;
        }
        spans.push((start, end));
        pos = end;
    }
    spans
}

/// The head of a document (`SimpleHead`): apiVersion, kind, metadata.name and annotations.
struct Head {
    api_version: String,
    kind: String,
    name: String,
    /// None when the document has no metadata or no (or empty) annotations.
    annotations: Option<Vec<(String, String)>>,
}

fn head_error(found: &Value, field: &str) -> String {
    format!(
        "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go struct field SimpleHead.{field} of type string",
        crate::yaml::json_kind(found)
    )
}

fn head_string(v: Option<&Value>, field: &str) -> Result<String, String> {
    match v {
        None | Some(Value::Null) => Ok(String::new()),
        Some(other) => crate::yaml::scalar_as_string(other).ok_or_else(|| head_error(other, field)),
    }
}

fn read_head(doc: &str) -> Result<Head, String> {
    let v = crate::yaml::unmarshal_typed(doc)?;
    let obj = match &v {
        Value::Object(o) => o,
        Value::Null => {
            return Ok(Head {
                api_version: String::new(),
                kind: String::new(),
                name: String::new(),
                annotations: None,
            });
        }
        other => {
            return Err(format!(
                "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go value of type util.SimpleHead",
                crate::yaml::json_kind(other)
            ));
        }
    };
    let api_version = head_string(obj.get("apiVersion"), "apiVersion")?;
    let kind = head_string(obj.get("kind"), "kind")?;
    let (name, annotations) = match obj.get("metadata") {
        None | Some(Value::Null) => (String::new(), None),
        Some(Value::Object(m)) => {
            let name = head_string(m.get("name"), "metadata.name")?;
            let annotations = match m.get("annotations") {
                None | Some(Value::Null) => None,
                Some(Value::Object(a)) => {
                    let mut out = Vec::new();
                    for (k, v) in a {
                        out.push((k.clone(), head_string(Some(v), "metadata.annotations")?));
                    }
                    Some(out)
                }
                Some(other) => {
                    return Err(format!(
                        "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go struct field .metadata.annotations of type map[string]string",
                        crate::yaml::json_kind(other)
                    ));
                }
            };
            (name, annotations)
        }
        Some(other) => {
            return Err(format!(
                "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go struct field SimpleHead.metadata of type struct {{ Name string \"json:\\\"name\\\"\"; Annotations map[string]string \"json:\\\"annotations\\\"\" }}",
                crate::yaml::json_kind(other)
            ));
        }
    };
    Ok(Head {
        api_version,
        kind,
        name,
        annotations,
    })
}

/// A rendered document as go-yaml's reader takes it: its Go bytes (a template may print bytes
/// that are not UTF-8, carried in gotemplate's `gostr` form) must be UTF-8 without control
/// characters, or the document fails as in Helm. What passes is plain UTF-8 text from here on
/// (manifests and hooks as the library returns them).
fn checked_text(doc: String) -> Result<String, String> {
    let plain = |b: u8| (0x20..0x7F).contains(&b) || matches!(b, b'\n' | b'\t' | b'\r');
    if doc.bytes().all(plain) {
        return Ok(doc);
    }
    let bytes = ferroflux_gotemplate::gostr::to_bytes(&doc);
    if let Some(message) = crate::goyamlerr::reader_message(&bytes) {
        return Err(message);
    }
    // Checked above: the bytes are UTF-8, so nothing is replaced.
    Ok(match bytes {
        std::borrow::Cow::Borrowed(_) => doc,
        std::borrow::Cow::Owned(b) => String::from_utf8_lossy(&b).into_owned(),
    })
}

/// Helm's `SortManifests`: files in path order (partials `_*` and blank files skipped), each
/// split into documents; hooks and manifests each sorted stably by kind in install order.
/// `files` are (path, rendered text) pairs. An unreadable document fails the whole sort with
/// `YAML parse error on PATH: …`.
pub fn sort_manifests(files: &[(String, String)]) -> Result<(Vec<Hook>, Vec<Manifest>), String> {
    let mut sorted: Vec<&(String, String)> = files.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut hooks = Vec::new();
    let mut manifests = Vec::new();
    for (path, content) in sorted {
        let base = path.rsplit('/').next().unwrap_or(path);
        if base.starts_with('_') || content.trim().is_empty() {
            continue;
        }
        for doc in split_manifests(content) {
            let doc = checked_text(doc).map_err(|e| format!("YAML parse error on {path}: {e}"))?;
            let head = read_head(&doc).map_err(|e| format!("YAML parse error on {path}: {e}"))?;
            let annotations = match head.annotations {
                Some(a) if !a.is_empty() => a,
                _ => {
                    manifests.push(Manifest {
                        path: path.clone(),
                        content: doc,
                        api_version: head.api_version,
                        kind: head.kind,
                        name: head.name,
                    });
                    continue;
                }
            };
            let get = |k: &str| {
                annotations
                    .iter()
                    .find(|(n, _)| n == k)
                    .map(|(_, v)| v.as_str())
            };
            let Some(hook_types) = get(HOOK_ANNOTATION) else {
                manifests.push(Manifest {
                    path: path.clone(),
                    content: doc,
                    api_version: head.api_version,
                    kind: head.kind,
                    name: head.name,
                });
                continue;
            };
            let events: Option<Vec<HookEvent>> = hook_types
                .split(',')
                .map(|t| HookEvent::parse(&t.trim().to_lowercase()))
                .collect();
            // Helm skips a document naming an unknown hook event (it logs and drops it).
            let Some(events) = events else { continue };
            let weight = get(HOOK_WEIGHT_ANNOTATION).and_then(go_atoi).unwrap_or(0);
            let policies = |k: &str| -> Vec<String> {
                get(k)
                    .map(|v| v.split(',').map(|p| p.trim().to_lowercase()).collect())
                    .unwrap_or_default()
            };
            hooks.push(Hook {
                name: head.name,
                kind: head.kind,
                path: path.clone(),
                manifest: doc,
                events,
                weight,
                delete_policies: policies(HOOK_DELETE_ANNOTATION),
                output_log_policies: policies(HOOK_OUTPUT_LOG_ANNOTATION),
            });
        }
    }
    hooks.sort_by(|a, b| kind_order(&a.kind, &b.kind));
    manifests.sort_by(|a, b| kind_order(&a.kind, &b.kind));
    Ok((hooks, manifests))
}

/// Go's `strconv.Atoi` (optional sign, decimal digits, within int64).
fn go_atoi(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Helm's `lessByKind` as an ordering (used by a stable sort): known kinds in install order,
/// unknown kinds after them in alphabetical order.
fn kind_order(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let pa = INSTALL_ORDER.iter().position(|k| *k == a);
    let pb = INSTALL_ORDER.iter().position(|k| *k == b);
    match (pa, pb) {
        (None, None) => a.cmp(b),
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (Some(x), Some(y)) => x.cmp(&y),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_follows_helm_4_2() {
        assert_eq!(split_manifests("a: 1\n---\nb: 2\n"), vec!["a: 1", "b: 2\n"]);
        assert_eq!(
            split_manifests("---\na: 1\n\n---\n\n---\nb: 2"),
            vec!["a: 1", "---\nb: 2"]
        );
        assert_eq!(
            split_manifests("a: 1\n---apiVersion: v1\n"),
            vec!["a: 1", "apiVersion: v1\n"]
        );
    }

    #[test]
    fn separators_are_the_regular_expression_s_matches() {
        // Every string of up to 6 symbols over an alphabet of dashes, white space (RE2's and
        // the vertical tab it leaves out) and text: the same spans as Helm's expression.
        let re = regex::Regex::new(r"(?:^|[\t\n\x0C\r ]*\n)---[\t\n\x0C\r ]*")
            .unwrap_or_else(|e| panic!("{e}"));
        let alphabet = ["-", "-", "\n", " ", "\r", "\u{b}", "a", "é"];
        let mut text = String::new();
        for len in 0..=6u32 {
            for mut code in 0..alphabet.len().pow(len) {
                text.clear();
                for _ in 0..len {
                    text.push_str(alphabet[code % alphabet.len()]);
                    code /= alphabet.len();
                }
                let want: Vec<(usize, usize)> =
                    re.find_iter(&text).map(|m| (m.start(), m.end())).collect();
                assert_eq!(separators(&text), want, "{text:?}");
            }
        }
    }

    #[test]
    fn hooks_and_kind_order() {
        let files = vec![
            (
                "c/templates/a.yaml".to_string(),
                "kind: Deployment\nmetadata:\n  name: d\n---\nkind: Job\nmetadata:\n  name: j\n  annotations:\n    helm.sh/hook: pre-install,post-upgrade\n    helm.sh/hook-weight: \"-5\"\n    helm.sh/hook-delete-policy: Before-Hook-Creation\n".to_string(),
            ),
            ("c/templates/b.yaml".to_string(), "kind: Service\n---\nkind: Zebra\n---\nkind: Alpha\n".to_string()),
        ];
        let (hooks, manifests) = sort_manifests(&files).unwrap_or_default();
        let kinds: Vec<&str> = manifests.iter().map(|m| m.kind.as_str()).collect();
        assert_eq!(kinds, vec!["Service", "Deployment", "Alpha", "Zebra"]);
        assert_eq!(hooks.len(), 1);
        assert_eq!(
            hooks[0].events,
            vec![HookEvent::PreInstall, HookEvent::PostUpgrade]
        );
        assert_eq!(hooks[0].weight, -5);
        assert_eq!(hooks[0].delete_policies, vec!["before-hook-creation"]);
    }

    #[test]
    fn a_list_annotation_is_a_yaml_error() {
        // A number becomes its text (sigs.k8s.io/yaml's coercion); a list cannot.
        let files = vec![(
            "c/templates/a.yaml".to_string(),
            "kind: Job\nmetadata:\n  annotations:\n    helm.sh/hook-weight: [5]\n".to_string(),
        )];
        let e = sort_manifests(&files).err().unwrap_or_default();
        assert!(
            e.starts_with("YAML parse error on c/templates/a.yaml: "),
            "{e}"
        );
    }
}
