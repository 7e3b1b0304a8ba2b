//! The in-memory chart (Helm's `chart/v2` types): metadata from Chart.yaml, decoded with
//! `encoding/json`'s rules (keys matched case-insensitively, Go's type errors) and validated with
//! Helm's messages; templates, values, schema, other files and loaded subcharts.

use serde_json::{Map, Value};

use crate::error::Error;
use crate::yaml::json_kind;

/// A file of a chart, its path relative to the chart's root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    /// The path relative to the chart's root, `/`-separated.
    pub name: String,
    /// The content (a UTF-8 byte-order mark removed).
    pub data: Vec<u8>,
}

/// A maintainer entry of Chart.yaml.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Maintainer {
    /// `name`
    pub name: String,
    /// `email`
    pub email: String,
    /// `url`
    pub url: String,
}

/// A dependency entry of Chart.yaml (or requirements.yaml for apiVersion v1).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Dependency {
    /// `name`: the subchart's chart name.
    pub name: String,
    /// `version`: a Masterminds semver range the subchart's version must meet.
    pub version: String,
    /// `repository` (not fetched: dependencies must be in `charts/`).
    pub repository: String,
    /// `condition`: comma-separated values paths; the first that resolves to a bool decides.
    pub condition: String,
    /// `tags`: the subchart is enabled when any of these `tags.<name>` values is true.
    pub tags: Vec<String>,
    /// `enabled` (Helm's processing sets it from conditions and tags).
    pub enabled: bool,
    /// `import-values`: child values copied into the parent's (strings or child/parent maps).
    pub import_values: Vec<Value>,
    /// `alias`: the name the subchart renders under.
    pub alias: String,
}

/// Chart.yaml.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metadata {
    /// `name`
    pub name: String,
    /// `home`
    pub home: String,
    /// `sources`
    pub sources: Vec<String>,
    /// `version` (SemVer 2, checked by validation).
    pub version: String,
    /// `description`
    pub description: String,
    /// `keywords`
    pub keywords: Vec<String>,
    /// `None` entries are Chart.yaml's `null` items, which validation refuses.
    pub maintainers: Vec<Option<Maintainer>>,
    /// `icon`
    pub icon: String,
    /// `apiVersion`: `v1` or `v2` (`v1` when absent).
    pub api_version: String,
    /// `condition` (apiVersion v1's own field; unused by rendering).
    pub condition: String,
    /// `tags` (apiVersion v1's own field; unused by rendering).
    pub tags: String,
    /// `appVersion`
    pub app_version: String,
    /// `deprecated`
    pub deprecated: bool,
    /// `None` when Chart.yaml has no `annotations` (Go's nil map).
    pub annotations: Option<Vec<(String, String)>>,
    /// `kubeVersion`: a semver range the Capabilities' Kubernetes version must meet.
    pub kube_version: String,
    /// `None` entries are Chart.yaml's `null` items, which validation refuses.
    pub dependencies: Vec<Option<Dependency>>,
    /// Whether Chart.yaml has a `dependencies` list at all (Go's non-nil slice, even empty):
    /// Helm only processes conditions and import-values of charts that have one.
    pub dependencies_declared: bool,
    /// `type`: `application` (or empty) or `library`.
    pub chart_type: String,
}

/// A chart with its subcharts, as loaded (before dependencies are processed).
#[derive(Debug, Clone, Default)]
pub struct Chart {
    /// Chart.yaml (with requirements.yaml's dependencies for apiVersion v1).
    pub metadata: Metadata,
    /// The files under `templates/`.
    pub templates: Vec<File>,
    /// values.yaml, numbers as float64.
    pub values: Map<String, Value>,
    /// values.schema.json's bytes, when the chart has one.
    pub schema: Option<Vec<u8>>,
    /// Every file that is not Chart.yaml, values.yaml, values.schema.json, a template or in
    /// `charts/` (what `.Files` serves, `crds/` included).
    pub files: Vec<File>,
    /// The charts under `charts/` (directories and archives), sorted by their entry's name.
    pub dependencies: Vec<Chart>,
    /// What renders share and never change, built on first use: the files as `.Files` serves
    /// them and the templates' text (load once, render many without copying them again).
    pub(crate) shared: std::sync::OnceLock<Shared>,
}

/// A chart's files as `.Files` serves them: (name, bytes), sorted by name.
pub(crate) type SharedFiles = std::sync::Arc<Vec<(String, std::sync::Arc<[u8]>)>>;

/// See [`Chart::shared`].
#[derive(Debug, Clone)]
pub(crate) struct Shared {
    pub files: SharedFiles,
    pub templates: Vec<std::sync::Arc<str>>,
}

impl Chart {
    /// The chart's name (its alias once dependencies are processed).
    pub fn name(&self) -> &str {
        &self.metadata.name
    }

    /// Whether Chart.yaml says `type: library` (any case).
    pub fn is_library(&self) -> bool {
        self.metadata.chart_type.eq_ignore_ascii_case("library")
    }

    pub(crate) fn shared(&self) -> &Shared {
        self.shared.get_or_init(|| {
            let mut files: Vec<(String, std::sync::Arc<[u8]>)> = Vec::new();
            for f in &self.files {
                // A later file of the same name replaces an earlier one, as in Go's map.
                files.retain(|(n, _)| *n != f.name);
                files.push((f.name.clone(), std::sync::Arc::from(f.data.as_slice())));
            }
            files.sort_by(|a, b| a.0.cmp(&b.0));
            Shared {
                files: std::sync::Arc::new(files),
                templates: self
                    .templates
                    .iter()
                    .map(|t| std::sync::Arc::from(String::from_utf8_lossy(&t.data).as_ref()))
                    .collect(),
            }
        })
    }

    /// Files under `crds/` with a manifest extension (`.yaml`, `.yml`, `.json`, any case).
    pub fn own_crds(&self) -> impl Iterator<Item = &File> {
        self.files
            .iter()
            .filter(|f| f.name.starts_with("crds/") && has_manifest_extension(&f.name))
    }
}

fn has_manifest_extension(name: &str) -> bool {
    let base = name.rsplit('/').next().unwrap_or(name);
    match base.rfind('.') {
        Some(i) => {
            let ext = &base[i..];
            ext.eq_ignore_ascii_case(".yaml")
                || ext.eq_ignore_ascii_case(".yml")
                || ext.eq_ignore_ascii_case(".json")
        }
        None => false,
    }
}

/// Decoding Chart.yaml's JSON form into [`Metadata`], field by field with Go's rules.
struct Decoder;

fn type_error(found: &Value, path: &str, go_type: &str) -> String {
    format!(
        "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go struct field {} of type {}",
        json_kind(found),
        path,
        go_type
    )
}

impl Decoder {
    fn string(v: &Value, path: &str) -> Result<String, String> {
        match v {
            Value::Null => Ok(String::new()),
            other => crate::yaml::scalar_as_string(other)
                .ok_or_else(|| type_error(other, path, "string")),
        }
    }

    fn boolean(v: &Value, path: &str) -> Result<bool, String> {
        match v {
            Value::Null => Ok(false),
            Value::Bool(b) => Ok(*b),
            other => Err(type_error(other, path, "bool")),
        }
    }

    fn strings(v: &Value, path: &str) -> Result<Vec<String>, String> {
        match v {
            Value::Null => Ok(Vec::new()),
            Value::Array(items) => items.iter().map(|i| Self::string(i, path)).collect(),
            other => Err(type_error(other, path, "[]string")),
        }
    }

    /// The object's keys, each matched to one of `fields` as encoding/json does (exact name
    /// first, else ASCII case-insensitive); unknown keys are ignored.
    fn fields<'a>(
        obj: &'a Map<String, Value>,
        fields: &[&'static str],
    ) -> Vec<(&'static str, &'a Value)> {
        obj.iter()
            .filter_map(|(k, v)| {
                fields
                    .iter()
                    .find(|f| **f == k.as_str())
                    .or_else(|| fields.iter().find(|f| f.eq_ignore_ascii_case(k)))
                    .map(|f| (*f, v))
            })
            .collect()
    }

    fn maintainer(v: &Value) -> Result<Option<Maintainer>, String> {
        let obj = match v {
            Value::Null => return Ok(None),
            Value::Object(o) => o,
            other => {
                return Err(type_error(
                    other,
                    "Metadata.maintainers",
                    "chart.Maintainer",
                ));
            }
        };
        let mut m = Maintainer::default();
        for (field, value) in Self::fields(obj, &["name", "email", "url"]) {
            let path = format!("Metadata.maintainers.{field}");
            match field {
                "name" => m.name = Self::string(value, &path)?,
                "email" => m.email = Self::string(value, &path)?,
                _ => m.url = Self::string(value, &path)?,
            }
        }
        Ok(Some(m))
    }

    fn dependency(v: &Value, base: &str) -> Result<Option<Dependency>, String> {
        let obj = match v {
            Value::Null => return Ok(None),
            Value::Object(o) => o,
            other => return Err(type_error(other, base, "chart.Dependency")),
        };
        let mut d = Dependency::default();
        let names = [
            "name",
            "version",
            "repository",
            "condition",
            "tags",
            "enabled",
            "import-values",
            "alias",
        ];
        for (field, value) in Self::fields(obj, &names) {
            let path = format!("{base}.{field}");
            match field {
                "name" => d.name = Self::string(value, &path)?,
                "version" => d.version = Self::string(value, &path)?,
                "repository" => d.repository = Self::string(value, &path)?,
                "condition" => d.condition = Self::string(value, &path)?,
                "tags" => d.tags = Self::strings(value, &path)?,
                "enabled" => d.enabled = Self::boolean(value, &path)?,
                "import-values" => {
                    d.import_values = match value {
                        Value::Null => Vec::new(),
                        Value::Array(items) => items.clone(),
                        other => return Err(type_error(other, &path, "[]interface {}")),
                    }
                }
                _ => d.alias = Self::string(value, &path)?,
            }
        }
        Ok(Some(d))
    }

    fn dependencies(v: &Value, base: &str) -> Result<Vec<Option<Dependency>>, String> {
        match v {
            Value::Null => Ok(Vec::new()),
            Value::Array(items) => items.iter().map(|i| Self::dependency(i, base)).collect(),
            other => Err(type_error(other, base, "[]*chart.Dependency")),
        }
    }
}

impl Metadata {
    /// Decodes Chart.yaml's parsed form (`yaml.Unmarshal` into the Metadata struct).
    pub fn decode(v: &Value) -> Result<Metadata, String> {
        let mut md = Metadata::default();
        md.merge_decode(v)?;
        Ok(md)
    }

    /// Decodes `v` over the fields already set (how requirements.yaml adds its dependencies).
    pub fn merge_decode(&mut self, v: &Value) -> Result<(), String> {
        let obj = match v {
            Value::Null => return Ok(()),
            Value::Object(o) => o,
            other => {
                return Err(format!(
                    "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go value of type chart.Metadata",
                    json_kind(other)
                ));
            }
        };
        let names = [
            "name",
            "home",
            "sources",
            "version",
            "description",
            "keywords",
            "maintainers",
            "icon",
            "apiVersion",
            "condition",
            "tags",
            "appVersion",
            "deprecated",
            "annotations",
            "kubeVersion",
            "dependencies",
            "type",
        ];
        for (field, value) in Decoder::fields(obj, &names) {
            let path = format!("Metadata.{field}");
            match field {
                "name" => self.name = Decoder::string(value, &path)?,
                "home" => self.home = Decoder::string(value, &path)?,
                "sources" => self.sources = Decoder::strings(value, &path)?,
                "version" => self.version = Decoder::string(value, &path)?,
                "description" => self.description = Decoder::string(value, &path)?,
                "keywords" => self.keywords = Decoder::strings(value, &path)?,
                "maintainers" => {
                    self.maintainers = match value {
                        Value::Null => Vec::new(),
                        Value::Array(items) => items
                            .iter()
                            .map(Decoder::maintainer)
                            .collect::<Result<_, _>>()?,
                        other => return Err(type_error(other, &path, "[]*chart.Maintainer")),
                    }
                }
                "icon" => self.icon = Decoder::string(value, &path)?,
                "apiVersion" => self.api_version = Decoder::string(value, &path)?,
                "condition" => self.condition = Decoder::string(value, &path)?,
                "tags" => self.tags = Decoder::string(value, &path)?,
                "appVersion" => self.app_version = Decoder::string(value, &path)?,
                "deprecated" => self.deprecated = Decoder::boolean(value, &path)?,
                "annotations" => {
                    self.annotations = match value {
                        Value::Null => None,
                        Value::Object(o) => Some(
                            o.iter()
                                .map(|(k, v)| Ok((k.clone(), Decoder::string(v, &path)?)))
                                .collect::<Result<_, String>>()?,
                        ),
                        other => return Err(type_error(other, &path, "map[string]string")),
                    }
                }
                "kubeVersion" => self.kube_version = Decoder::string(value, &path)?,
                "dependencies" => {
                    self.dependencies = Decoder::dependencies(value, &path)?;
                    self.dependencies_declared = value.is_array();
                }
                _ => self.chart_type = Decoder::string(value, &path)?,
            }
        }
        Ok(())
    }

    /// Helm's `Metadata.Validate`: sanitizes strings in place and returns the first violation,
    /// worded as Helm words it (`validation: chart.metadata.name is required`).
    pub fn validate(&mut self) -> Result<(), Error> {
        let invalid = |m: String| Err(Error::Validation(m));
        for s in [
            &mut self.name,
            &mut self.description,
            &mut self.home,
            &mut self.icon,
            &mut self.condition,
            &mut self.tags,
            &mut self.app_version,
            &mut self.kube_version,
        ] {
            *s = sanitize(s);
        }
        for s in self.sources.iter_mut().chain(self.keywords.iter_mut()) {
            *s = sanitize(s);
        }
        if self.api_version.is_empty() {
            return invalid("chart.metadata.apiVersion is required".into());
        }
        if self.name.is_empty() {
            return invalid("chart.metadata.name is required".into());
        }
        if self.name == "." || self.name == ".." {
            return invalid(format!(
                "chart.metadata.name {:?} is not allowed",
                self.name
            ));
        }
        if self.name.contains('/') || base_name(&self.name) != self.name {
            return invalid(format!("chart.metadata.name {:?} is invalid", self.name));
        }
        if self.version.is_empty() {
            return invalid("chart.metadata.version is required".into());
        }
        if ferroflux_semver::Version::parse_loose(&self.version).is_err() {
            return invalid(format!(
                "chart.metadata.version {:?} is invalid",
                self.version
            ));
        }
        if !matches!(self.chart_type.as_str(), "" | "application" | "library") {
            return invalid("chart.metadata.type must be application or library".into());
        }
        for m in &mut self.maintainers {
            match m {
                None => {
                    return invalid("maintainers must not contain empty or null nodes".into());
                }
                Some(m) => {
                    m.name = sanitize(&m.name);
                    m.email = sanitize(&m.email);
                    m.url = sanitize(&m.url);
                }
            }
        }
        let mut seen: Vec<String> = Vec::new();
        for d in &mut self.dependencies {
            let Some(d) = d else {
                return invalid("dependencies must not contain empty or null nodes".into());
            };
            d.name = sanitize(&d.name);
            d.version = sanitize(&d.version);
            d.repository = sanitize(&d.repository);
            d.condition = sanitize(&d.condition);
            for t in &mut d.tags {
                *t = sanitize(t);
            }
            if !d.alias.is_empty()
                && !d
                    .alias
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                return invalid(format!(
                    "dependency {:?} has disallowed characters in the alias",
                    d.name
                ));
            }
            let key = if d.alias.is_empty() {
                d.name.clone()
            } else {
                d.alias.clone()
            };
            if seen.contains(&key) {
                return invalid(format!(
                    "more than one dependency with name or alias {key:?}"
                ));
            }
            seen.push(key);
        }
        Ok(())
    }
}

/// Go's `filepath.Base` on a slash path.
fn base_name(p: &str) -> &str {
    let t = p.trim_end_matches('/');
    if t.is_empty() {
        return if p.is_empty() { "." } else { "/" };
    }
    t.rsplit('/').next().unwrap_or(t)
}

/// Helm's `sanitizeString`: white space becomes a space, other unprintable characters go.
fn sanitize(s: &str) -> String {
    s.chars()
        .filter_map(|c| {
            if c.is_whitespace() {
                Some(' ')
            } else if c.is_control() || is_unprintable_format(c) {
                None
            } else {
                Some(c)
            }
        })
        .collect()
}

/// Format characters (Unicode Cf) Go's `unicode.IsPrint` rejects that `char::is_control` keeps.
fn is_unprintable_format(c: char) -> bool {
    matches!(c, '\u{00ad}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{feff}')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(text: &str) -> Result<Metadata, String> {
        Metadata::decode(&crate::yaml::unmarshal_typed(text)?)
    }

    #[test]
    fn decodes_case_insensitively_and_validates() {
        let mut m = md("apiversion: v2\nNAME: x\nversion: 1.2.3\n").unwrap_or_default();
        assert_eq!(m.name, "x");
        assert!(m.validate().is_ok());
    }

    #[test]
    fn type_errors_name_the_field_and_scalars_become_strings() {
        let e = md("apiVersion: v2\nname: x\nversion: [1]\n")
            .err()
            .unwrap_or_default();
        assert!(e.ends_with(
            "cannot unmarshal array into Go struct field Metadata.version of type string"
        ));
        let m = md("apiVersion: v2\nname: x\nversion: 1\nappVersion: 1.10\n").unwrap_or_default();
        assert_eq!((m.version.as_str(), m.app_version.as_str()), ("1", "1.1"));
    }

    #[test]
    fn validation_messages() {
        let check = |text: &str, want: &str| {
            let mut m = md(text).unwrap_or_default();
            let got = m
                .validate()
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert_eq!(got, want, "{text}");
        };
        check(
            "name: x\nversion: 1.0.0",
            "validation: chart.metadata.apiVersion is required",
        );
        check(
            "apiVersion: v2\nversion: 1.0.0",
            "validation: chart.metadata.name is required",
        );
        check(
            "apiVersion: v2\nname: x",
            "validation: chart.metadata.version is required",
        );
        check(
            "apiVersion: v2\nname: x\nversion: one",
            "validation: chart.metadata.version \"one\" is invalid",
        );
        check(
            "apiVersion: v2\nname: x\nversion: 1.0.0\ntype: foo",
            "validation: chart.metadata.type must be application or library",
        );
        check(
            "apiVersion: v2\nname: ..\nversion: 1.0.0",
            "validation: chart.metadata.name \"..\" is not allowed",
        );
        check(
            "apiVersion: v2\nname: a/b\nversion: 1.0.0",
            "validation: chart.metadata.name \"a/b\" is invalid",
        );
        check(
            "apiVersion: v2\nname: x\nversion: 1.0.0\ndependencies:\n- name: a\n- name: a\n",
            "validation: more than one dependency with name or alias \"a\"",
        );
        check(
            "apiVersion: v2\nname: x\nversion: 1.0.0\ndependencies:\n- name: a\n  alias: b.c\n",
            "validation: dependency \"a\" has disallowed characters in the alias",
        );
    }
}
