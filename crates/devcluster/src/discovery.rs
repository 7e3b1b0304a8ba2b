//! Discovery documents (classic and aggregated `apidiscovery.k8s.io/v2`), the OpenAPI v3
//! documents kubectl reads to learn that the server validates fields itself, and `/openapi/v2`
//! (JSON, or the protobuf of gnostic's `openapi_v2.Document` that client-go's discovery asks
//! for) for older clients such as Helm's client-side validation.

use serde_json::{Value, json};

use crate::resources::{Registry, Resource};

pub const AGGREGATED_CT: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

pub fn api_versions(addr: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{ "clientCIDR": "0.0.0.0/0", "serverAddress": addr }],
    })
}

fn group_json(group: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({ "groupVersion": format!("{group}/{v}"), "version": v }))
        .collect();
    json!({
        "name": group,
        "versions": vs,
        "preferredVersion": vs.first().cloned().unwrap_or(Value::Null),
    })
}

pub fn api_group_list(reg: &Registry) -> Value {
    let groups: Vec<Value> = reg
        .groups()
        .iter()
        .map(|(g, vs)| group_json(g, vs))
        .collect();
    json!({ "kind": "APIGroupList", "apiVersion": "v1", "groups": groups })
}

pub fn api_group(reg: &Registry, group: &str) -> Option<Value> {
    let (g, vs) = reg.groups().into_iter().find(|(g, _)| g == group)?;
    let mut v = group_json(&g, &vs);
    v["kind"] = json!("APIGroup");
    v["apiVersion"] = json!("v1");
    Some(v)
}

/// The Pod subresources beyond status and log: (name, group, version, kind, verbs) as
/// kube-apiserver lists them.
const POD_ACTIONS: [(&str, &str, &str, &str, &[&str]); 5] = [
    ("attach", "", "", "PodAttachOptions", &["create", "get"]),
    ("binding", "", "", "Binding", &["create"]),
    ("eviction", "policy", "v1", "Eviction", &["create"]),
    ("exec", "", "", "PodExecOptions", &["create", "get"]),
    (
        "portforward",
        "",
        "",
        "PodPortForwardOptions",
        &["create", "get"],
    ),
];

pub fn resource_list(reg: &Registry, group: &str, version: &str) -> Option<Value> {
    let resources = reg.in_group_version(group, version);
    if resources.is_empty() {
        return None;
    }
    let mut out = Vec::new();
    for r in &resources {
        let mut e = json!({
            "name": r.plural,
            "singularName": r.singular,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": r.verbs(),
        });
        if !r.short_names.is_empty() {
            e["shortNames"] = json!(r.short_names);
        }
        if !r.categories.is_empty() {
            e["categories"] = json!(r.categories);
        }
        out.push(e);
        if r.status_subresource {
            out.push(json!({
                "name": format!("{}/status", r.plural),
                "singularName": "",
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": ["get", "patch", "update"],
            }));
        }
        if r.has_scale() {
            // kubectl scale finds the Scale kind's group and version here.
            out.push(json!({
                "name": format!("{}/scale", r.plural),
                "singularName": "",
                "namespaced": r.namespaced,
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
                "verbs": ["get", "patch", "update"],
            }));
        }
        if r.has_log() {
            out.push(json!({
                "name": format!("{}/log", r.plural),
                "singularName": "",
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": ["get"],
            }));
        }
        if r.has_pod_actions() {
            for (sub, group, version, kind, verbs) in POD_ACTIONS {
                let mut e = json!({
                    "name": format!("{}/{sub}", r.plural),
                    "singularName": "",
                    "namespaced": true,
                    "kind": kind,
                    "verbs": verbs,
                });
                if !group.is_empty() {
                    e["group"] = json!(group);
                    e["version"] = json!(version);
                }
                out.push(e);
            }
        }
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({ "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": out }),
    )
}

fn aggregated_resource(r: &Resource, version: &str) -> Value {
    let kind = json!({ "group": r.group, "version": version, "kind": r.kind });
    let mut e = json!({
        "resource": r.plural,
        "responseKind": kind,
        "scope": if r.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": r.singular,
        "verbs": r.verbs(),
    });
    if !r.short_names.is_empty() {
        e["shortNames"] = json!(r.short_names);
    }
    if !r.categories.is_empty() {
        e["categories"] = json!(r.categories);
    }
    let mut subs = Vec::new();
    if r.status_subresource {
        subs.push(json!({
            "subresource": "status",
            "responseKind": kind,
            "verbs": ["get", "patch", "update"],
        }));
    }
    if r.has_scale() {
        subs.push(json!({
            "subresource": "scale",
            "responseKind": { "group": "autoscaling", "version": "v1", "kind": "Scale" },
            "verbs": ["get", "patch", "update"],
        }));
    }
    if r.has_log() {
        subs.push(json!({
            "subresource": "log",
            "responseKind": { "group": "", "version": "", "kind": "string" },
            "verbs": ["get"],
        }));
    }
    if r.has_pod_actions() {
        for (sub, group, version, kind, verbs) in POD_ACTIONS {
            let version = if version.is_empty() { "v1" } else { version };
            subs.push(json!({
                "subresource": sub,
                "responseKind": { "group": group, "version": version, "kind": kind },
                "verbs": verbs,
            }));
        }
    }
    if !subs.is_empty() {
        e["subresources"] = Value::Array(subs);
    }
    e
}

/// `/api` (core only) or `/apis` (every group) as an `APIGroupDiscoveryList`.
pub fn aggregated(reg: &Registry, core: bool) -> Value {
    let mut items = Vec::new();
    let groups: Vec<(String, Vec<String>)> = if core {
        vec![(String::new(), vec!["v1".to_string()])]
    } else {
        reg.groups()
    };
    for (g, versions) in groups {
        let vs: Vec<Value> = versions
            .iter()
            .map(|v| {
                let resources: Vec<Value> = reg
                    .in_group_version(&g, v)
                    .iter()
                    .map(|r| aggregated_resource(r, v))
                    .collect();
                json!({ "version": v, "resources": resources, "freshness": "Current" })
            })
            .collect();
        let mut item = json!({ "metadata": { "creationTimestamp": null }, "versions": vs });
        if !g.is_empty() {
            item["metadata"]["name"] = json!(g);
        }
        items.push(item);
    }
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    })
}

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// `/openapi/v3`: one entry per group-version, with a hash that changes when the kinds do.
pub fn openapi_v3_root(reg: &Registry) -> Value {
    let mut paths = serde_json::Map::new();
    let mut gvs = vec![(String::new(), "v1".to_string())];
    for (g, vs) in reg.groups() {
        for v in vs {
            gvs.push((g.clone(), v));
        }
    }
    for (g, v) in gvs {
        let p = gv_path(&g, &v);
        paths.insert(
            p.clone(),
            json!({ "serverRelativeURL": format!("/openapi/v3/{p}?hash={:016X}", reg.generation) }),
        );
    }
    json!({ "paths": paths })
}

/// The OpenAPI v3 document of one group-version. It lists each kind's operations and their query
/// parameters (kubectl checks `fieldValidation` there and then leaves validation to the server);
/// it carries no schemas, so kubectl falls back to its compiled-in types for patch computation.
pub fn openapi_v3_doc(reg: &Registry, group: &str, version: &str) -> Option<Value> {
    let resources = reg.in_group_version(group, version);
    if resources.is_empty() {
        return None;
    }
    let prefix = format!("/{}", gv_path(group, version));
    let mut paths = serde_json::Map::new();
    let params = |names: &[&str]| -> Value {
        Value::Array(
            names
                .iter()
                .map(|n| json!({ "name": n, "in": "query", "schema": { "type": "string", "uniqueItems": true } }))
                .collect(),
        )
    };
    for r in resources {
        let gvk = json!({ "group": r.group, "version": version, "kind": r.kind });
        let op = |action: &str, qp: &[&str]| {
            json!({
                "operationId": format!("{action}{}", r.kind),
                "parameters": params(qp),
                "responses": { "200": { "description": "OK" } },
                "x-kubernetes-action": action,
                "x-kubernetes-group-version-kind": gvk,
            })
        };
        let write = ["dryRun", "fieldManager", "fieldValidation"];
        let patch = ["dryRun", "fieldManager", "fieldValidation", "force"];
        let base = if r.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}", r.plural)
        } else {
            format!("{prefix}/{}", r.plural)
        };
        paths.insert(
            base.clone(),
            json!({
                "get": op("list", &["labelSelector", "fieldSelector", "limit", "continue", "watch", "resourceVersion"]),
                "post": op("post", &write),
                "delete": op("deletecollection", &["dryRun", "labelSelector", "fieldSelector"]),
            }),
        );
        let mut item = json!({
            "get": op("get", &[]),
            "put": op("put", &write),
            "patch": op("patch", &patch),
            "delete": op("delete", &["dryRun", "propagationPolicy", "gracePeriodSeconds"]),
        });
        let name_param = json!([{ "name": "name", "in": "path", "required": true, "schema": { "type": "string" } }]);
        item["parameters"] = name_param.clone();
        paths.insert(format!("{base}/{{name}}"), item);
        if r.status_subresource {
            let mut st = json!({ "get": op("get", &[]), "put": op("put", &write), "patch": op("patch", &patch) });
            st["parameters"] = name_param;
            paths.insert(format!("{base}/{{name}}/status"), st);
        }
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": { "title": "Kubernetes", "version": crate::SERVER_VERSION },
        "paths": paths,
        "components": { "schemas": {} },
    }))
}

/// The operations of every kind: (path, [(method, x-kubernetes-action, operation id)], gvk).
type Operations = Vec<(String, Vec<(&'static str, &'static str, String)>, Value)>;

fn operations(reg: &Registry) -> Operations {
    let mut out = Operations::new();
    let mut gvs = vec![(String::new(), "v1".to_string())];
    for (g, vs) in reg.groups() {
        for v in vs {
            gvs.push((g.clone(), v));
        }
    }
    for (g, v) in gvs {
        let prefix = format!("/{}", gv_path(&g, &v));
        for r in reg.in_group_version(&g, &v) {
            let gvk = json!({ "group": r.group, "version": v, "kind": r.kind });
            let base = if r.namespaced {
                format!("{prefix}/namespaces/{{namespace}}/{}", r.plural)
            } else {
                format!("{prefix}/{}", r.plural)
            };
            let id = |verb: &str| format!("{verb}{}", r.kind);
            out.push((
                base.clone(),
                vec![
                    ("get", "list", id("list")),
                    ("post", "post", id("create")),
                    ("delete", "deletecollection", id("deletecollection")),
                ],
                gvk.clone(),
            ));
            out.push((
                format!("{base}/{{name}}"),
                vec![
                    ("get", "get", id("read")),
                    ("put", "put", id("replace")),
                    ("patch", "patch", id("patch")),
                    ("delete", "delete", id("delete")),
                ],
                gvk.clone(),
            ));
            if r.status_subresource {
                out.push((
                    format!("{base}/{{name}}/status"),
                    vec![
                        ("get", "get", id("readStatus")),
                        ("put", "put", id("replaceStatus")),
                        ("patch", "patch", id("patchStatus")),
                    ],
                    gvk.clone(),
                ));
            }
        }
    }
    out
}

/// `/openapi/v2` as JSON: every path and operation, no schemas (clients then skip client-side
/// validation of the kinds and leave it to the server, which validates).
pub fn openapi_v2(reg: &Registry) -> Value {
    let mut paths = serde_json::Map::new();
    for (path, ops, gvk) in operations(reg) {
        let mut item = serde_json::Map::new();
        for (method, action, id) in ops {
            item.insert(
                method.into(),
                json!({
                    "operationId": id,
                    "consumes": ["*/*"],
                    "produces": ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"],
                    "responses": { "200": { "description": "OK" } },
                    "x-kubernetes-action": action,
                    "x-kubernetes-group-version-kind": gvk,
                }),
            );
        }
        paths.insert(path, Value::Object(item));
    }
    json!({
        "swagger": "2.0",
        "info": { "title": "Kubernetes", "version": crate::SERVER_VERSION },
        "paths": paths,
        "definitions": {},
    })
}

/// [`openapi_v2`] as the protobuf of gnostic's `openapi.v2.Document` (field numbers of
/// gnostic-models' OpenAPIv2.proto), which client-go's `OpenAPISchema()` reads whatever the
/// response's content type.
pub fn openapi_v2_protobuf(reg: &Registry) -> Vec<u8> {
    use crate::protobuf::put_bytes;
    // NamedAny { 1 name, 2 Any { 2 yaml } }: vendor extensions carry YAML.
    let named_any = |name: &str, yaml: &str| {
        let mut any = Vec::new();
        put_bytes(&mut any, 2, yaml.as_bytes());
        let mut out = Vec::new();
        put_bytes(&mut out, 1, name.as_bytes());
        put_bytes(&mut out, 2, &any);
        out
    };
    let mut paths = Vec::new();
    for (path, ops, gvk) in operations(reg) {
        let gvk_yaml = format!(
            "group: {}\nkind: {}\nversion: {}\n",
            json!(gvk["group"]),
            gvk["kind"].as_str().unwrap_or_default(),
            gvk["version"].as_str().unwrap_or_default()
        );
        let mut item = Vec::new();
        for (method, action, id) in ops {
            // Response { 1 description } in ResponseValue { 1 response } in
            // NamedResponseValue { 1 name, 2 value } in Responses { 1 response_code }.
            let mut response = Vec::new();
            put_bytes(&mut response, 1, b"OK");
            let mut value = Vec::new();
            put_bytes(&mut value, 1, &response);
            let mut named = Vec::new();
            put_bytes(&mut named, 1, b"200");
            put_bytes(&mut named, 2, &value);
            let mut responses = Vec::new();
            put_bytes(&mut responses, 1, &named);
            // Operation { 5 operation_id, 6 produces, 7 consumes, 9 responses, 13 extensions }.
            let mut op = Vec::new();
            put_bytes(&mut op, 5, id.as_bytes());
            for p in [
                "application/json",
                "application/yaml",
                "application/vnd.kubernetes.protobuf",
            ] {
                put_bytes(&mut op, 6, p.as_bytes());
            }
            put_bytes(&mut op, 7, b"*/*");
            put_bytes(&mut op, 9, &responses);
            put_bytes(
                &mut op,
                13,
                &named_any("x-kubernetes-action", &format!("{action}\n")),
            );
            put_bytes(
                &mut op,
                13,
                &named_any("x-kubernetes-group-version-kind", &gvk_yaml),
            );
            // PathItem: 2 get, 3 put, 4 post, 5 delete, 8 patch.
            let field = match method {
                "get" => 2,
                "put" => 3,
                "post" => 4,
                "delete" => 5,
                _ => 8,
            };
            put_bytes(&mut item, field, &op);
        }
        // NamedPathItem { 1 name, 2 value } in Paths { 2 path }.
        let mut named = Vec::new();
        put_bytes(&mut named, 1, path.as_bytes());
        put_bytes(&mut named, 2, &item);
        put_bytes(&mut paths, 2, &named);
    }
    let mut info = Vec::new();
    put_bytes(&mut info, 1, b"Kubernetes");
    put_bytes(&mut info, 2, crate::SERVER_VERSION.as_bytes());
    // Document { 1 swagger, 2 info, 8 paths, 9 definitions }.
    let mut doc = Vec::new();
    put_bytes(&mut doc, 1, b"2.0");
    put_bytes(&mut doc, 2, &info);
    put_bytes(&mut doc, 8, &paths);
    put_bytes(&mut doc, 9, &[]);
    doc
}
