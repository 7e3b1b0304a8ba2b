//! The chart tree of one render: a loaded [`Chart`] stays untouched (load once, render many),
//! while each render works on a [`Node`] tree holding what Helm's dependency processing
//! changes: names (aliases), the Chart.yaml dependency list (enabled flags, import-values),
//! the chart's values (after import-values) and which subcharts are kept.
//!
//! Dependency processing follows Helm's `chart/v2/util/dependencies.go`: aliases, `tags`,
//! `condition` (first path that holds a bool wins), disabled subcharts removed recursively,
//! then `import-values` (children first) merged under the parent's own values.

use serde_json::{Map, Value};

use crate::chart::{Chart, Dependency, Metadata};
use crate::coalesce::{Warnings, coalesce_root, coalesce_tables, path_value, table};

/// One chart of a render.
#[derive(Clone)]
pub struct Node<'c> {
    pub chart: &'c Chart,
    pub metadata: Metadata,
    pub values: Map<String, Value>,
    pub deps: Vec<Node<'c>>,
}

impl<'c> Node<'c> {
    /// The tree of `chart` and every loaded subchart, as loaded.
    pub fn new(chart: &'c Chart) -> Self {
        Node {
            chart,
            metadata: chart.metadata.clone(),
            values: chart.values.clone(),
            deps: chart.dependencies.iter().map(Node::new).collect(),
        }
    }

    /// The chart's name (its alias after processing).
    pub fn name(&self) -> &str {
        &self.metadata.name
    }

    fn reqs(&self) -> impl Iterator<Item = &Dependency> {
        self.metadata.dependencies.iter().flatten()
    }

    fn reqs_mut(&mut self) -> impl Iterator<Item = &mut Dependency> {
        self.metadata.dependencies.iter_mut().flatten()
    }
}

/// Masterminds `IsCompatibleRange`: false when either side does not parse.
pub fn is_compatible_range(constraint: &str, version: &str) -> bool {
    let Ok(range) = ferroflux_semver::Range::parse(constraint) else {
        return false;
    };
    let Ok(v) = ferroflux_semver::Version::parse_loose(version) else {
        return false;
    };
    range.matches(&v)
}

/// Helm's `ProcessDependencies` over the user's values.
pub fn process_dependencies(
    root: &mut Node<'_>,
    vals: &Map<String, Value>,
    warnings: &mut Warnings,
) -> Result<(), String> {
    process_enabled(root, vals, "", warnings)?;
    process_import_values_rec(root, warnings)
}

fn process_enabled(
    node: &mut Node<'_>,
    vals: &Map<String, Value>,
    path: &str,
    warnings: &mut Warnings,
) -> Result<(), String> {
    if !node.metadata.dependencies_declared {
        return Ok(());
    }
    let existing = std::mem::take(&mut node.deps);
    let mut chart_deps: Vec<Node<'_>> = existing
        .iter()
        .filter(|e| {
            !node
                .reqs()
                .any(|r| e.name() == r.name && is_compatible_range(&r.version, &e.metadata.version))
        })
        .cloned()
        .collect();
    for req in node.reqs_mut() {
        if let Some(c) = existing.iter().find(|c| {
            c.name() == req.name && is_compatible_range(&req.version, &c.metadata.version)
        }) {
            let mut copy = c.clone();
            if !req.alias.is_empty() {
                copy.metadata.name = req.alias.clone();
            }
            chart_deps.push(copy);
        }
        if !req.alias.is_empty() {
            req.name = req.alias.clone();
        }
    }
    node.deps = chart_deps;
    for r in node.reqs_mut() {
        r.enabled = true;
    }
    let cvals = coalesce_root(node, vals, false, warnings)?;
    process_tags(node, &cvals, warnings);
    process_conditions(node, &cvals, path, warnings);
    let removed: Vec<String> = node
        .reqs()
        .filter(|r| !r.enabled)
        .map(|r| r.name.clone())
        .collect();
    node.deps.retain(|d| !removed.iter().any(|r| r == d.name()));
    node.metadata
        .dependencies
        .retain(|r| r.as_ref().is_none_or(|r| !removed.contains(&r.name)));
    for t in &mut node.deps {
        let sub_path = format!("{path}{}.", t.name());
        process_enabled(t, &cvals, &sub_path, warnings)?;
    }
    Ok(())
}

fn process_tags(node: &mut Node<'_>, cvals: &Map<String, Value>, warnings: &mut Warnings) {
    let Some(Value::Object(tags)) = cvals.get("tags") else {
        return;
    };
    for r in node.reqs_mut() {
        let (mut has_true, mut has_false) = (false, false);
        for k in &r.tags {
            match tags.get(k) {
                Some(Value::Bool(true)) => has_true = true,
                Some(Value::Bool(false)) => has_false = true,
                Some(_) => {
                    warnings.push(format!("returned non-bool value tag={k} chart={}", r.name))
                }
                None => {}
            }
        }
        // Helm: disabled only when some tag is false and none is true.
        r.enabled = has_true || !has_false;
    }
}

fn process_conditions(
    node: &mut Node<'_>,
    cvals: &Map<String, Value>,
    path: &str,
    warnings: &mut Warnings,
) {
    for r in node.reqs_mut() {
        for c in r.condition.trim().split(',') {
            if c.is_empty() {
                continue;
            }
            match path_value(cvals, &format!("{path}{c}")) {
                Some(Value::Bool(b)) => {
                    r.enabled = *b;
                    break;
                }
                Some(_) => {
                    warnings.push(format!("returned non-bool value path={c} chart={}", r.name))
                }
                None => {}
            }
        }
    }
}

fn process_import_values_rec(node: &mut Node<'_>, warnings: &mut Warnings) -> Result<(), String> {
    for d in &mut node.deps {
        process_import_values_rec(d, warnings)?;
    }
    process_import_values(node, warnings)
}

/// Go's `fmt.Sprintf("%v", x)` of an import-values field.
fn sprint(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "<nil>".into(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => crate::gofmt::go_print(other),
    }
}

/// `parent` as nested maps around `data` (`.` is the top).
fn path_to_map(path: &str, data: Map<String, Value>) -> Map<String, Value> {
    if path == "." {
        return data;
    }
    let mut cur = data;
    for part in path.split('.').rev() {
        let mut m = Map::new();
        m.insert(part.to_string(), Value::Object(cur));
        cur = m;
    }
    cur
}

fn process_import_values(node: &mut Node<'_>, warnings: &mut Warnings) -> Result<(), String> {
    if !node.metadata.dependencies_declared {
        return Ok(());
    }
    let cvals = coalesce_root(node, &Map::new(), true, warnings)?;
    let mut b = Map::new();
    for r in node.metadata.dependencies.iter_mut().flatten() {
        let mut out = Vec::new();
        for riv in &r.import_values {
            let (child, parent) = match riv {
                Value::Object(iv) => (sprint(iv.get("child")), sprint(iv.get("parent"))),
                Value::String(s) => (format!("exports.{s}"), ".".to_string()),
                _ => continue,
            };
            let mut entry = Map::new();
            entry.insert("child".into(), Value::String(child.clone()));
            entry.insert("parent".into(), Value::String(parent.clone()));
            out.push(Value::Object(entry));
            match table(&cvals, &format!("{}.{child}", r.name)) {
                Some(vv) => {
                    let imported = if matches!(riv, Value::String(_)) {
                        vv.clone()
                    } else {
                        path_to_map(&parent, vv.clone())
                    };
                    coalesce_tables(&mut b, imported, "", true, warnings);
                }
                None => warnings.push(format!(
                    "ImportValues missing table from chart {}: {child}",
                    r.name
                )),
            }
        }
        r.import_values = out;
    }
    let mut merged = cvals;
    coalesce_tables(&mut merged, b, "", true, warnings);
    node.values = merged;
    Ok(())
}
