//! Discovery documents (classic and aggregated `apidiscovery.k8s.io/v2`) and the OpenAPI v3
//! documents kubectl reads to learn that the server validates fields itself.

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
    if r.status_subresource {
        e["subresources"] = json!([{
            "subresource": "status",
            "responseKind": kind,
            "verbs": ["get", "patch", "update"],
        }]);
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
