//! The field-setting transformers: namespace, name prefix/suffix, labels, annotations,
//! replicas and images.

use serde_json::Value;

use crate::fieldspec::{self, Create, FieldSpec};
use crate::kustomization::{ImageArgs, Kustomization, string_map};
use crate::resource::Res;

fn set_string(v: &mut Value, s: &str) {
    *v = Value::String(s.to_string());
}

fn apply_specs(
    r: &mut Res,
    specs: &[FieldSpec],
    create: Create,
    set: &mut dyn FnMut(&mut Value) -> Result<(), String>,
) -> Result<(), String> {
    let av = r.api_version().to_string();
    let kind = r.kind().to_string();
    for fs in specs {
        if !fs.matches(&av, &kind) {
            continue;
        }
        let c = if fs.create { Some(create) } else { None };
        fieldspec::apply(&mut r.obj, &fs.path, c, set).map_err(|e| {
            format!(
                "considering field '{}' of object {}: {e}",
                fs.raw_path,
                r.id_string()
            )
        })?;
    }
    Ok(())
}

pub fn namespace(res: &mut [Res], ns: &str) -> Result<(), String> {
    let specs = fieldspec::builtin("namespace");
    for r in res.iter_mut() {
        if r.obj.as_object().is_none_or(|m| m.is_empty()) {
            continue;
        }
        r.store_previous_id();
        if !r.is_cluster_scoped()
            && let Some(md) = r.metadata_mut()
        {
            md.insert("namespace".into(), Value::String(ns.into()));
        }
        let kind = r.kind().to_string();
        let av = r.api_version().to_string();
        let specs: Vec<FieldSpec> = specs
            .iter()
            .filter(|f| !(f.raw_path == "metadata/name" && av != "v1"))
            .cloned()
            .collect();
        if (kind == "RoleBinding" || kind == "ClusterRoleBinding")
            && let Some(Value::Array(subjects)) = r.obj.get_mut("subjects")
        {
            {
                for s in subjects.iter_mut() {
                    if s.get("name").and_then(Value::as_str) == Some("default")
                        && let Some(m) = s.as_object_mut()
                    {
                        m.insert("namespace".into(), Value::String(ns.into()));
                    }
                }
            }
        }
        apply_specs(r, &specs, Create::Scalar, &mut |v| {
            set_string(v, ns);
            Ok(())
        })?;
        if kind == "ValidatingWebhookConfiguration" || kind == "MutatingWebhookConfiguration" {
            let path = fieldspec::split_path("webhooks/clientConfig/service");
            fieldspec::apply(&mut r.obj, &path, None, &mut |svc| {
                if let Value::Object(m) = svc {
                    m.insert("namespace".into(), Value::String(ns.into()));
                }
                Ok(())
            })?;
        }
    }
    // An id clash after the move is an error in kustomize too.
    let mut seen = std::collections::HashSet::new();
    for r in res.iter() {
        if !seen.insert(r.id_key()) {
            return Err(format!(
                "namespace transformation produces ID conflict: {}",
                r.id_string()
            ));
        }
    }
    Ok(())
}

fn skip_prefix(r: &Res) -> bool {
    let (g, _) = r.group_version();
    let k = r.org_kind();
    k == "CustomResourceDefinition"
        || (g == "apiregistration.k8s.io" && k == "APIService")
        || k == "Namespace"
}

pub fn prefix_suffix(res: &mut [Res], affix: &str, prefix: bool) -> Result<(), String> {
    for r in res.iter_mut() {
        if skip_prefix(r) {
            continue;
        }
        if prefix {
            if !affix.is_empty() {
                r.prefixes.push(affix.to_string());
                r.store_previous_id();
            }
        } else if !affix.is_empty() {
            r.suffixes.push(affix.to_string());
            r.store_previous_id();
        }
        let name = r.name().to_string();
        let new = if prefix {
            format!("{affix}{name}")
        } else {
            format!("{name}{affix}")
        };
        r.set_name(&new);
    }
    Ok(())
}

type LabelSet = (Vec<(String, String)>, Vec<FieldSpec>);

fn label_specs(k: &Kustomization) -> Vec<LabelSet> {
    let mut out = Vec::new();
    for l in &k.labels {
        let pairs = match string_map(&l.pairs, "labels") {
            Ok(p) => p,
            Err(_) => continue,
        };
        let mut specs: Vec<FieldSpec> = l
            .fields
            .iter()
            .map(|f| FieldSpec::new(&f.kind, &f.group, &f.version, &f.path, f.create))
            .collect();
        if l.include_selectors {
            specs.extend(fieldspec::builtin("commonLabels"));
            specs.extend(fieldspec::builtin("metadataLabels"));
        } else {
            if l.include_templates {
                specs.extend(fieldspec::builtin("metadataLabels"));
            }
            specs.push(FieldSpec::new("", "", "", "metadata/labels", true));
        }
        out.push((pairs, specs));
    }
    out
}

/// `extra`: the `commonLabels` field specs of custom transformer configurations.
pub fn labels(res: &mut [Res], k: &Kustomization, extra: &[FieldSpec]) -> Result<(), String> {
    for l in &k.labels {
        string_map(&l.pairs, "labels")?;
    }
    let mut sets = label_specs(k);
    if let Some(cl) = &k.common_labels {
        let pairs = string_map(cl, "commonLabels")?;
        let mut specs = fieldspec::builtin("commonLabels");
        specs.extend(fieldspec::builtin("metadataLabels"));
        specs.extend(extra.iter().cloned());
        sets.push((pairs, specs));
    }
    for (pairs, specs) in &sets {
        if pairs.is_empty() {
            continue;
        }
        for r in res.iter_mut() {
            apply_specs(r, specs, Create::Map, &mut |v| set_pairs(v, pairs))?;
        }
    }
    Ok(())
}

fn set_pairs(v: &mut Value, pairs: &[(String, String)]) -> Result<(), String> {
    if v.is_null() {
        *v = Value::Object(Default::default());
    }
    match v {
        Value::Object(m) => {
            for (k, val) in pairs {
                m.insert(k.clone(), Value::String(val.clone()));
            }
            Ok(())
        }
        _ => Err("expected a mapping".into()),
    }
}

/// `extra`: the `commonAnnotations` field specs of custom transformer configurations.
pub fn annotations(
    res: &mut [Res],
    pairs: &[(String, String)],
    extra: &[FieldSpec],
) -> Result<(), String> {
    if pairs.is_empty() {
        return Ok(());
    }
    let mut specs = fieldspec::builtin("commonAnnotations");
    specs.extend(extra.iter().cloned());
    for r in res.iter_mut() {
        apply_specs(r, &specs, Create::Map, &mut |v| set_pairs(v, pairs))?;
    }
    Ok(())
}

pub fn replicas(res: &mut [Res], name: &str, count: i64) -> Result<(), String> {
    let specs = fieldspec::builtin("replicas");
    let mut found = false;
    for fs in &specs {
        for r in res.iter_mut() {
            let names_match = r.name() == name || r.prev.iter().any(|p| p.name == name);
            if !(names_match && fs.matches(r.api_version(), r.kind())) {
                continue;
            }
            found = true;
            fieldspec::apply(&mut r.obj, &fs.path, Some(Create::Scalar), &mut |v| {
                *v = Value::Number(count.into());
                Ok(())
            })?;
        }
    }
    if !found {
        let gvks: Vec<String> = specs
            .iter()
            .map(|f| format!("{}.[noVer].[noGrp]", f.kind))
            .collect();
        return Err(format!(
            "resource with name {name} does not match a config with the following GVK [{}]",
            gvks.join(" ")
        ));
    }
    Ok(())
}

/// Splits an image reference into name, tag and digest like kustomize does.
pub fn split_image(image: &str) -> (String, String, String) {
    let (search, offset) = match image.find('/') {
        Some(i) if i > 0 => (&image[i..], i),
        _ => (image, 0),
    };
    let id = search.find('@');
    let ic = search.find(':');
    match (ic, id) {
        (None, None) => (image.to_string(), String::new(), String::new()),
        (ic, Some(id)) if ic.is_none() || id < ic.unwrap_or(usize::MAX) => {
            let id = id + offset;
            (
                image[..id].to_string(),
                String::new(),
                image[id + 1..].to_string(),
            )
        }
        (Some(ic), Some(id)) => {
            let (ic, id) = (ic + offset, id + offset);
            (
                image[..ic].to_string(),
                image[ic + 1..id].to_string(),
                image[id + 1..].to_string(),
            )
        }
        (Some(ic), None) => {
            let ic = ic + offset;
            (
                image[..ic].to_string(),
                image[ic + 1..].to_string(),
                String::new(),
            )
        }
        (None, Some(_)) => (image.to_string(), String::new(), String::new()),
    }
}

pub fn images(res: &mut [Res], img: &ImageArgs) -> Result<(), String> {
    let pattern = format!(
        "^{}(:[a-zA-Z0-9_.{{}}-]*)?(@sha256:[a-zA-Z0-9_.{{}}-]*)?$",
        img.name
    );
    let re = regex::Regex::new(&pattern)
        .map_err(|e| format!("images: invalid image name {:?}: {e}", img.name))?;
    let update = |v: &mut Value| {
        let Some(s) = v.as_str() else { return };
        if !re.is_match(s) {
            return;
        }
        let (mut name, mut tag, mut digest) = split_image(s);
        if !img.new_name.is_empty() {
            name = img.new_name.clone();
        }
        if !img.new_tag.is_empty() && !img.digest.is_empty() {
            tag = img.new_tag.clone();
            digest = img.digest.clone();
        } else if !img.new_tag.is_empty() {
            tag = img.new_tag.clone();
            digest.clear();
        } else if !img.digest.is_empty() {
            tag.clear();
            digest = img.digest.clone();
        } else if !img.tag_suffix.is_empty() {
            tag.push_str(&img.tag_suffix);
            digest.clear();
        }
        if !tag.is_empty() {
            name = format!("{name}:{tag}");
        }
        if !digest.is_empty() {
            name = format!("{name}@{digest}");
        }
        *v = Value::String(name);
    };
    for r in res.iter_mut() {
        if r.kind() == "CustomResourceDefinition" {
            continue;
        }
        walk_containers(&mut r.obj, &update);
    }
    Ok(())
}

fn walk_containers(v: &mut Value, update: &dyn Fn(&mut Value)) {
    match v {
        Value::Object(m) => {
            for (k, child) in m.iter_mut() {
                walk_containers(child, update);
                if (k == "containers" || k == "initContainers")
                    && let Value::Array(items) = child
                {
                    for it in items {
                        if let Some(image) = it.get_mut("image") {
                            update(image);
                        }
                    }
                }
            }
        }
        Value::Array(items) => {
            for it in items {
                walk_containers(it, update);
            }
        }
        _ => {}
    }
}
