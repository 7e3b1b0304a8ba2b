//! Flux's commit message cases: the templates of image-automation-controller's
//! `internal/source/source_test.go` (d36e2ea07a39) with the messages that test expects, and the
//! examples of its `docs/spec/v1/imageupdateautomations.md`. The templates are Flux's test data,
//! copied verbatim.

use std::collections::BTreeMap;

use ferroflux_imageupdate::message::DEFAULT_MESSAGE_TEMPLATE;
use ferroflux_imageupdate::{Change, Changes, MessageError, ObjectId, render_message};

use crate::flux_setters::appconfig_update;

const TEMPLATE_REMOVED: &str = r#"Commit summary

Automation: {{ .AutomationObject }}

Files:
{{ range $filename, $_ := .Updated.Files -}}
- {{ $filename }}
{{ end -}}

Objects:
{{ range $resource, $_ := .Updated.Objects -}}
{{ if eq $resource.Kind "Deployment" -}}
- {{ $resource.Kind | lower }} {{ $resource.Name | lower }}
{{ else -}}
- {{ $resource.Kind }} {{ $resource.Name }}
{{ end -}}
{{ end -}}

Images:
{{ range .Updated.Images -}}
- {{.}} ({{.Policy.Name}})
{{ end -}}
"#;

const TEMPLATE_RESULT_V2: &str = r#"Commit summary with ResultV2

Automation: {{ .AutomationObject }}

{{ range $filename, $objchange := .Changed.FileChanges -}}
- File: {{ $filename }}
{{- range $obj, $changes := $objchange }}
  - Object: {{ $obj.Kind }}/{{ $obj.Namespace }}/{{ $obj.Name }}
    Changes:
{{- range $_ , $change := $changes }}
    - {{ $change.OldValue }} -> {{ $change.NewValue }}
{{ end -}}
{{ end -}}
{{ end -}}
"#;

const TEMPLATE_WITH_VALUES: &str = r#"Commit summary

Automation: {{ .AutomationObject }}

Cluster: {{ index .Values "cluster" }}
Testing: {{ .Values.testing }}
"#;

const TEMPLATE_IMAGE_RESULT: &str = r#"Commit summary

Automation: {{ .AutomationObject }}

Files:
{{ range $filename, $_ := .Changed.ImageResult.Files -}}
- {{ $filename }}
{{ end -}}

Objects:
{{ range $resource, $_ := .Changed.ImageResult.Objects -}}
- {{ $resource.Kind }} {{ $resource.Name }}
{{ end -}}

Images:
{{ range .Changed.ImageResult.Images -}}
- {{.}} ({{.Policy.Name}})
{{ end -}}
"#;

/// The docs' first example (`.Changed.Objects`), its YAML block scalar unindented.
const DOCS_OBJECTS: &str = r#"Automated image update

Automation name: {{ .AutomationObject }}

Files:
{{ range $filename, $_ := .Changed.FileChanges -}}
- {{ $filename }}
{{ end -}}

Objects:
{{ range $resource, $changes := .Changed.Objects -}}
- {{ $resource.Kind }} {{ $resource.Name }}
  Changes:
{{- range $_, $change := $changes }}
    - {{ $change.OldValue }} -> {{ $change.NewValue }}
{{ end -}}
{{ end -}}
"#;

/// The docs' second example (sprig's `lower` and `contains`).
const DOCS_FUNCTIONS: &str = r#"Automated image update

Automation name: {{ .AutomationObject }}

Files:
{{ range $filename, $_ := .Changed.FileChanges -}}
- {{ $filename }}
{{ end -}}

Objects:
{{ range $resource, $changes := .Changed.Objects -}}
- {{ $resource.Kind | lower }} {{ $resource.Name | lower }}
  Changes:
{{- range $_, $change := $changes }}
  {{ if contains "5.0.3" $change.NewValue -}}
    - {{ $change.OldValue }} -> {{ $change.NewValue }}
  {{ else -}}
    [skip ci] wrong image
  {{ end -}}
{{ end -}}
{{ end -}}
"#;

/// The docs' Gerrit example: a Change-Id from the printed changes.
const DOCS_CHANGE_ID: &str = r#"Perform automatic image update

Automation name: {{ .AutomationObject }}

{{- $ChangeId := .AutomationObject -}}
{{- $ChangeId = printf "%s%s" $ChangeId ( .Changed.FileChanges | toString ) -}}
{{- $ChangeId = printf "%s%s" $ChangeId ( .Changed.Objects | toString ) -}}
{{- $ChangeId = printf "%s%s" $ChangeId ( .Changed.Changes | toString ) }}
Change-Id: {{ printf "I%s" ( sha256sum $ChangeId | trunc 40 ) }}
"#;

/// The docs' Gitea/Forgejo example.
const DOCS_PRINTLN: &str =
    "{{range .Changed.Changes}}{{print .OldValue}} -> {{println\n  .NewValue}}{{end}}";

fn no_values() -> BTreeMap<String, String> {
    BTreeMap::new()
}

fn appconfig_changes() -> Changes {
    appconfig_update("helloworld:1.0.1").changes
}

fn render(template: &str, changes: &Changes) -> Result<String, MessageError> {
    render_message(
        Some(template),
        "test-ns",
        "test-update",
        changes,
        &no_values(),
    )
}

#[test]
fn result_v2_template() {
    assert_eq!(
        render(TEMPLATE_RESULT_V2, &appconfig_changes()).unwrap(),
        "Commit summary with ResultV2

Automation: test-ns/test-update

- File: deploy.yaml
  - Object: Deployment//test
    Changes:
    - helloworld:1.0.0 -> helloworld:1.0.1
"
    );
}

#[test]
fn template_with_values() {
    let values = BTreeMap::from([
        ("cluster".to_string(), "prod".to_string()),
        ("testing".to_string(), "value".to_string()),
    ]);
    assert_eq!(
        render_message(
            Some(TEMPLATE_WITH_VALUES),
            "test-ns",
            "test-update",
            &appconfig_changes(),
            &values
        )
        .unwrap(),
        "Commit summary\n\nAutomation: test-ns/test-update\n\nCluster: prod\nTesting: value\n"
    );
}

#[test]
fn default_message() {
    for template in [None, Some("")] {
        assert_eq!(
            render_message(template, "ns", "n", &appconfig_changes(), &no_values()).unwrap(),
            DEFAULT_MESSAGE_TEMPLATE
        );
    }
    assert_eq!(
        DEFAULT_MESSAGE_TEMPLATE,
        "Update from image update automation"
    );
}

#[test]
fn removed_fields() {
    let err = render(TEMPLATE_REMOVED, &appconfig_changes()).unwrap_err();
    assert_eq!(
        err,
        MessageError::RemovedField {
            field: ".Updated".into()
        }
    );
    assert_eq!(
        err.to_string(),
        "template uses removed '.Updated' field. Please use '.Changed' instead. See: https://fluxcd.io/flux/components/image/imageupdateautomations/#message-template"
    );
    let err = render(TEMPLATE_IMAGE_RESULT, &appconfig_changes()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "template uses removed '.Changed.ImageResult' field. Please use '.Changed.FileChanges' or '.Changed.Objects' instead. See: https://fluxcd.io/flux/components/image/imageupdateautomations/#message-template"
    );
    assert!(matches!(err, MessageError::RemovedField { .. }));
}

/// Flux's `TestTemplateMsgAggregatesObjectChangesAcrossFiles`.
#[test]
fn object_changes_across_files() {
    let id = ObjectId {
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        name: "podinfo".into(),
        namespace: "default".into(),
    };
    let mut changes = Changes::default();
    changes.add(
        "base/deployment.yaml",
        id.clone(),
        change("podinfo:v1.0.0", "podinfo:v1.0.1", "flux-system:podinfo"),
    );
    changes.add(
        "overlays/prod/deployment.yaml",
        id,
        change("1", "2", "flux-system:replicas"),
    );
    let msg = render_message(
        Some(TEMPLATE_RESULT_V2),
        "flux-system",
        "podinfo",
        &changes,
        &no_values(),
    )
    .unwrap();
    assert!(msg.contains("- podinfo:v1.0.0 -> podinfo:v1.0.1"));
    assert!(msg.contains("- 1 -> 2"));
}

fn change(old: &str, new: &str, setter: &str) -> Change {
    Change {
        old_value: old.into(),
        new_value: new.into(),
        setter: setter.into(),
    }
}

fn deployment(name: &str) -> ObjectId {
    ObjectId {
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        name: name.into(),
        namespace: "default".into(),
    }
}

/// Two files, two objects; the objects sort by name (`other` before `podinfo`).
fn two_objects() -> Changes {
    let mut c = Changes::default();
    c.add(
        "apps/podinfo.yaml",
        deployment("podinfo"),
        change("podinfo:5.0.0", "podinfo:5.0.3", "flux-system:podinfo"),
    );
    c.add(
        "apps/other.yaml",
        deployment("other"),
        change("x:1", "x:2", "flux-system:other"),
    );
    c
}

#[test]
fn docs_example_objects() {
    assert_eq!(
        render(DOCS_OBJECTS, &two_objects()).unwrap(),
        "Automated image update\n\nAutomation name: test-ns/test-update\n\nFiles:\n\
         - apps/other.yaml\n- apps/podinfo.yaml\nObjects:\n\
         - Deployment other\n  Changes:\n    - x:1 -> x:2\n\
         - Deployment podinfo\n  Changes:\n    - podinfo:5.0.0 -> podinfo:5.0.3\n"
    );
}

#[test]
fn docs_example_functions() {
    assert_eq!(
        render(DOCS_FUNCTIONS, &two_objects()).unwrap(),
        "Automated image update\n\nAutomation name: test-ns/test-update\n\nFiles:\n\
         - apps/other.yaml\n- apps/podinfo.yaml\nObjects:\n\
         - deployment other\n  Changes:\n  [skip ci] wrong image\n  \
         - deployment podinfo\n  Changes:\n  - podinfo:5.0.0 -> podinfo:5.0.3\n  "
    );
}

#[test]
fn docs_example_println() {
    assert_eq!(
        render(DOCS_PRINTLN, &two_objects()).unwrap(),
        "x:1 -> x:2\npodinfo:5.0.0 -> podinfo:5.0.3\n"
    );
}

/// The Change-Id example hashes Go's `%v` of the data; check those prints, then the shape.
#[test]
fn docs_example_change_id_and_go_printing() {
    let c = two_objects();
    let other = "{{{apps/v1 Deployment} {other default}}}:[{x:1 x:2 flux-system:other}]";
    let podinfo = "{{{apps/v1 Deployment} {podinfo default}}}:[{podinfo:5.0.0 podinfo:5.0.3 flux-system:podinfo}]";
    assert_eq!(
        render("{{ .Changed.FileChanges | toString }}", &c).unwrap(),
        format!("map[apps/other.yaml:map[{other}] apps/podinfo.yaml:map[{podinfo}]]")
    );
    assert_eq!(
        render("{{ .Changed.Objects | toString }}", &c).unwrap(),
        format!("map[{other} {podinfo}]")
    );
    assert_eq!(
        render("{{ .Changed.Changes | toString }}", &c).unwrap(),
        "[{x:1 x:2 flux-system:other} {podinfo:5.0.0 podinfo:5.0.3 flux-system:podinfo}]"
    );
    assert_eq!(
        render("{{ .Changed }}", &c).unwrap(),
        format!("{{map[apps/other.yaml:map[{other}] apps/podinfo.yaml:map[{podinfo}]]}}")
    );
    assert_eq!(
        render(
            "{{ .AutomationObject.Namespace }} {{ .AutomationObject.Name }} {{ len .Changed.Objects }}",
            &c
        )
        .unwrap(),
        "test-ns test-update 2"
    );
    let msg = render(DOCS_CHANGE_ID, &c).unwrap();
    let (head, id) = msg.split_once("Change-Id: I").unwrap();
    assert_eq!(
        head,
        "Perform automatic image update\n\nAutomation name: test-ns/test-update\n"
    );
    let id = id.strip_suffix('\n').unwrap();
    assert_eq!(id.len(), 40);
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(render(DOCS_CHANGE_ID, &c).unwrap(), msg);
}

#[test]
fn parse_and_execution_errors() {
    let c = two_objects();
    assert_eq!(
        render("{{ .AutomationObject ", &c).unwrap_err().to_string(),
        "unable to create commit message template from spec: template: commit message:1: unclosed action"
    );
    assert_eq!(
        render("x\n{{ .Changed.Nope }}", &c)
            .unwrap_err()
            .to_string(),
        "failed to run template from spec: template: commit message:2:11: executing \"commit message\" at <.Changed.Nope>: can't evaluate field Nope in type update.Result"
    );
    assert_eq!(
        render("{{.Updated}}", &c).unwrap_err(),
        MessageError::RemovedField {
            field: ".Updated".into()
        }
    );
    // The hermetic function map has no clock, randomness or environment.
    for f in ["now", "env \"HOME\"", "randAlpha 3", "uuidv4"] {
        let err = render(&format!("{{{{ {f} }}}}"), &c).unwrap_err();
        assert!(
            matches!(&err, MessageError::Parse(m) if m.contains("not defined")),
            "{f}: {err}"
        );
    }
}
