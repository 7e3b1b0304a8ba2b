//! The commit message of an image update: `spec.git.commit.messageTemplate`, a Go text/template
//! run with sprig's hermetic functions over Flux's `TemplateData`.
//!
//! The data has Go's shape and Go's type names, so templates, their output and their error
//! texts are Flux's:
//!
//! - `.AutomationObject` (`types.NamespacedName`): prints `namespace/name`; `.Name`,
//!   `.Namespace`.
//! - `.Changed` (`update.Result`): `.FileChanges`, a map of file → `update.ObjectChanges`;
//!   `.Changes`, every distinct `update.Change`; `.Objects`, the `ObjectChanges` of all files
//!   merged.
//! - `update.ObjectChanges` is a Go map keyed by `update.ObjectIdentifier` (fields
//!   `.APIVersion`, `.Kind`, `.Name`, `.Namespace`, promoted from kyaml's embedded
//!   `ResourceIdentifier`; printed `{{{apiVersion kind} {name namespace}}}`): `range` visits
//!   its keys sorted field by field, as Go does.
//! - `update.Change`: `.OldValue`, `.NewValue`, `.Setter`; printed `{old new setter}`.
//! - `.Values`: `spec.git.commit.messageTemplateValues`.
//!
//! Sprig's functions that depend on the time, the environment, randomness or the network
//! (sprig's `HermeticTxtFuncMap` leaves them out) are not defined, so a template using them
//! fails to parse.

use std::collections::BTreeMap;

use ferroflux_gotemplate::{
    CallContext, FuncError, FuncMap, Map, Object, Signature, Template, Value,
};

use crate::setters::{Change, Changes, ObjectChanges, ObjectId};

/// The message when the automation has no template.
pub const DEFAULT_MESSAGE_TEMPLATE: &str = "Update from image update automation";

/// The name Flux gives the template (it appears in error texts).
const TEMPLATE_NAME: &str = "commit message";

const MESSAGE_TEMPLATE_DOCS: &str =
    "https://fluxcd.io/flux/components/image/imageupdateautomations/#message-template";

/// Sprig's functions that sprig's `HermeticTxtFuncMap` removes.
const NON_HERMETIC: &[&str] = &[
    "date",
    "date_in_zone",
    "date_modify",
    "now",
    "htmlDate",
    "htmlDateInZone",
    "dateInZone",
    "dateModify",
    "randAlphaNum",
    "randAlpha",
    "randAscii",
    "randNumeric",
    "randBytes",
    "uuidv4",
    "env",
    "expandenv",
    "getHostByName",
];

/// Why a commit message could not be rendered (Flux's texts).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MessageError {
    /// The template does not parse.
    #[error("unable to create commit message template from spec: {0}")]
    Parse(String),
    /// The template failed while running.
    #[error("failed to run template from spec: {0}")]
    Execute(String),
    /// The template uses a field Flux removed (`.Updated`, `.Changed.ImageResult`); Flux marks
    /// the automation Stalled, since retrying cannot help.
    #[error("{}", removed_field_message(field))]
    RemovedField {
        /// The removed field, `.Updated` or `.Changed.ImageResult`.
        field: String,
    },
}

fn removed_field_message(field: &str) -> String {
    match field {
        ".Updated" => format!(
            "template uses removed '.Updated' field. Please use '.Changed' instead. See: {MESSAGE_TEMPLATE_DOCS}"
        ),
        ".Changed.ImageResult" => format!(
            "template uses removed '.Changed.ImageResult' field. Please use '.Changed.FileChanges' or '.Changed.Objects' instead. See: {MESSAGE_TEMPLATE_DOCS}"
        ),
        other => format!("template uses removed '{other}' field. See: {MESSAGE_TEMPLATE_DOCS}"),
    }
}

/// Sprig's functions without the non-hermetic ones.
pub fn hermetic_funcs() -> FuncMap {
    let all = ferroflux_sprig::funcs();
    let mut out = FuncMap::new();
    for name in all.names() {
        if !NON_HERMETIC.contains(&name)
            && let Some(f) = all.get(name)
        {
            out.insert(name, f.clone());
        }
    }
    out
}

/// Renders the commit message of an update: `template` (the default message when None or
/// empty) over the automation's namespace and name, the changes made, and the template
/// values.
pub fn render_message(
    template: Option<&str>,
    automation_namespace: &str,
    automation_name: &str,
    changes: &Changes,
    values: &BTreeMap<String, String>,
) -> Result<String, MessageError> {
    let text = template
        .filter(|t| !t.is_empty())
        .unwrap_or(DEFAULT_MESSAGE_TEMPLATE);
    let mut set = Template::named(TEMPLATE_NAME).with_funcs(hermetic_funcs());
    set.parse(TEMPLATE_NAME, text)
        .map_err(|e| MessageError::Parse(e.to_string()))?;
    let data = Value::object(TemplateData {
        automation: NamespacedName {
            namespace: automation_namespace.to_string(),
            name: automation_name.to_string(),
        },
        changed: ResultObject(changes.clone()),
        values: values
            .iter()
            .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
            .collect(),
    });
    set.execute(TEMPLATE_NAME, &data).map_err(|e| {
        let text = e.to_string();
        if text.contains("can't evaluate field Updated in type source.TemplateData") {
            MessageError::RemovedField {
                field: ".Updated".into(),
            }
        } else if text.contains("can't evaluate field ImageResult in type update.Result") {
            MessageError::RemovedField {
                field: ".Changed.ImageResult".into(),
            }
        } else {
            MessageError::Execute(text)
        }
    })
}

/// Flux's `source.TemplateData`.
struct TemplateData {
    automation: NamespacedName,
    changed: ResultObject,
    values: Map,
}

impl Object for TemplateData {
    fn type_name(&self) -> String {
        "source.TemplateData".into()
    }
    fn kind_name(&self) -> String {
        "struct".into()
    }
    fn field(&self, name: &str) -> Option<Value> {
        match name {
            "AutomationObject" => Some(Value::object(self.automation.clone())),
            "Changed" => Some(Value::object(self.changed.clone())),
            "Values" => Some(Value::Map(self.values.clone())),
            _ => None,
        }
    }
    fn format(&self) -> String {
        format!(
            "{{{} {} {}}}",
            self.automation.format(),
            self.changed.format(),
            Value::Map(self.values.clone())
        )
    }
}

/// Kubernetes' `types.NamespacedName`.
#[derive(Clone)]
struct NamespacedName {
    namespace: String,
    name: String,
}

impl Object for NamespacedName {
    fn type_name(&self) -> String {
        "types.NamespacedName".into()
    }
    fn kind_name(&self) -> String {
        "struct".into()
    }
    fn field(&self, name: &str) -> Option<Value> {
        match name {
            "Namespace" => Some(Value::from(self.namespace.as_str())),
            "Name" => Some(Value::from(self.name.as_str())),
            _ => None,
        }
    }
    fn method(&self, name: &str) -> Option<Signature> {
        (name == "String").then(|| Signature::fixed(&[]))
    }
    fn call_method(
        &self,
        _: &str,
        _: &mut CallContext<'_>,
        _: &[Value],
    ) -> Result<Value, FuncError> {
        Ok(Value::from(self.format()))
    }
    /// Its `String` method.
    fn format(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// Flux's `update.Result`.
#[derive(Clone)]
struct ResultObject(Changes);

impl ResultObject {
    fn file_changes(&self) -> Value {
        Value::Map(
            self.0
                .file_changes
                .iter()
                .map(|(f, o)| (f.clone(), Value::object(ObjectChangesObject(o.clone()))))
                .collect(),
        )
    }
}

impl Object for ResultObject {
    fn type_name(&self) -> String {
        "update.Result".into()
    }
    fn kind_name(&self) -> String {
        "struct".into()
    }
    fn field(&self, name: &str) -> Option<Value> {
        (name == "FileChanges").then(|| self.file_changes())
    }
    fn method(&self, name: &str) -> Option<Signature> {
        matches!(name, "Changes" | "Objects").then(|| Signature::fixed(&[]))
    }
    fn call_method(
        &self,
        name: &str,
        _: &mut CallContext<'_>,
        _: &[Value],
    ) -> Result<Value, FuncError> {
        match name {
            "Changes" => Ok(changes_value(&self.0.changes())),
            _ => Ok(Value::object(ObjectChangesObject(self.0.objects()))),
        }
    }
    fn format(&self) -> String {
        format!("{{{}}}", self.file_changes())
    }
}

/// A `[]update.Change`.
fn changes_value(changes: &[Change]) -> Value {
    Value::list(
        changes
            .iter()
            .map(|c| Value::object(ChangeObject(c.clone())))
            .collect(),
    )
}

/// Flux's `update.ObjectChanges`, a map keyed by `update.ObjectIdentifier`.
struct ObjectChangesObject(ObjectChanges);

impl Object for ObjectChangesObject {
    fn type_name(&self) -> String {
        "update.ObjectChanges".into()
    }
    fn kind_name(&self) -> String {
        "map".into()
    }
    fn truth(&self) -> bool {
        !self.0.is_empty()
    }
    fn map_entries(&self) -> Option<Vec<(Value, Value)>> {
        // BTreeMap order is Go's: APIVersion, Kind, Name, Namespace, compared in turn.
        Some(
            self.0
                .iter()
                .map(|(id, changes)| {
                    (
                        Value::object(Identifier::Object(id.clone())),
                        changes_value(changes),
                    )
                })
                .collect(),
        )
    }
    fn format(&self) -> String {
        let entries: Vec<String> = self
            .0
            .iter()
            .map(|(id, changes)| {
                format!(
                    "{}:{}",
                    Identifier::Object(id.clone()).format(),
                    changes_value(changes)
                )
            })
            .collect();
        format!("map[{}]", entries.join(" "))
    }
}

/// Flux's `update.ObjectIdentifier` and the kyaml structs embedded in it, which templates can
/// reach by their type names (`.ResourceIdentifier`, `.TypeMeta`, `.NameMeta`).
#[derive(Clone)]
enum Identifier {
    Object(ObjectId),
    Resource(ObjectId),
    TypeMeta(ObjectId),
    NameMeta(ObjectId),
}

impl Identifier {
    fn id(&self) -> &ObjectId {
        match self {
            Identifier::Object(id)
            | Identifier::Resource(id)
            | Identifier::TypeMeta(id)
            | Identifier::NameMeta(id) => id,
        }
    }
}

impl Object for Identifier {
    fn type_name(&self) -> String {
        match self {
            Identifier::Object(_) => "update.ObjectIdentifier",
            Identifier::Resource(_) => "yaml.ResourceIdentifier",
            Identifier::TypeMeta(_) => "yaml.TypeMeta",
            Identifier::NameMeta(_) => "yaml.NameMeta",
        }
        .into()
    }
    fn kind_name(&self) -> String {
        "struct".into()
    }
    fn field(&self, name: &str) -> Option<Value> {
        let id = self.id();
        let type_meta = matches!(
            self,
            Identifier::Object(_) | Identifier::Resource(_) | Identifier::TypeMeta(_)
        );
        let name_meta = matches!(
            self,
            Identifier::Object(_) | Identifier::Resource(_) | Identifier::NameMeta(_)
        );
        let embedded = matches!(self, Identifier::Object(_) | Identifier::Resource(_));
        let s = |v: &str| Some(Value::from(v));
        match name {
            "APIVersion" if type_meta => s(&id.api_version),
            "Kind" if type_meta => s(&id.kind),
            "Name" if name_meta => s(&id.name),
            "Namespace" if name_meta => s(&id.namespace),
            "ResourceIdentifier" if matches!(self, Identifier::Object(_)) => {
                Some(Value::object(Identifier::Resource(id.clone())))
            }
            "TypeMeta" if embedded => Some(Value::object(Identifier::TypeMeta(id.clone()))),
            "NameMeta" if embedded => Some(Value::object(Identifier::NameMeta(id.clone()))),
            _ => None,
        }
    }
    fn format(&self) -> String {
        let id = self.id();
        let type_meta = format!("{{{} {}}}", id.api_version, id.kind);
        let name_meta = format!("{{{} {}}}", id.name, id.namespace);
        match self {
            Identifier::Object(_) => format!("{{{{{type_meta} {name_meta}}}}}"),
            Identifier::Resource(_) => format!("{{{type_meta} {name_meta}}}"),
            Identifier::TypeMeta(_) => type_meta,
            Identifier::NameMeta(_) => name_meta,
        }
    }
}

/// Flux's `update.Change`.
struct ChangeObject(Change);

impl Object for ChangeObject {
    fn type_name(&self) -> String {
        "update.Change".into()
    }
    fn kind_name(&self) -> String {
        "struct".into()
    }
    fn field(&self, name: &str) -> Option<Value> {
        match name {
            "OldValue" => Some(Value::from(self.0.old_value.as_str())),
            "NewValue" => Some(Value::from(self.0.new_value.as_str())),
            "Setter" => Some(Value::from(self.0.setter.as_str())),
            _ => None,
        }
    }
    fn format(&self) -> String {
        format!(
            "{{{} {} {}}}",
            self.0.old_value, self.0.new_value, self.0.setter
        )
    }
}
