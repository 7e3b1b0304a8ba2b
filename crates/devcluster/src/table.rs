//! Server-side printing: the `meta.k8s.io/v1` Table kubectl asks for, with kubectl's usual
//! columns for common kinds and a CRD's `additionalPrinterColumns`.

use serde_json::{Value, json};

use crate::resources::{PrinterColumn, Resource};
use crate::util;

fn col(name: &str, type_: &str, format: &str, description: &str, priority: i64) -> Value {
    json!({ "name": name, "type": type_, "format": format, "description": description, "priority": priority })
}

fn s<'a>(o: &'a Value, p: &str) -> &'a str {
    o.pointer(p).and_then(Value::as_str).unwrap_or_default()
}

fn i(o: &Value, p: &str) -> i64 {
    o.pointer(p).and_then(Value::as_i64).unwrap_or(0)
}

fn age(o: &Value) -> String {
    match util::parse_rfc3339(s(o, "/metadata/creationTimestamp")) {
        Some(t) => util::human_age(util::unix_now() - t),
        None => "<unknown>".into(),
    }
}

fn len(o: &Value, p: &str) -> usize {
    match o.pointer(p) {
        Some(Value::Object(m)) => m.len(),
        Some(Value::Array(a)) => a.len(),
        _ => 0,
    }
}

fn or_none(x: &str) -> String {
    if x.is_empty() {
        "<none>".into()
    } else {
        x.to_string()
    }
}

fn ports(o: &Value) -> String {
    let Some(ps) = o.pointer("/spec/ports").and_then(Value::as_array) else {
        return "<none>".into();
    };
    let v: Vec<String> = ps
        .iter()
        .map(|p| {
            let proto = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
            let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
            match p.get("nodePort").and_then(Value::as_i64) {
                Some(np) => format!("{port}:{np}/{proto}"),
                None => format!("{port}/{proto}"),
            }
        })
        .collect();
    if v.is_empty() {
        "<none>".into()
    } else {
        v.join(",")
    }
}

/// Columns and cell values for a built-in kind (NAME first, AGE last as kubectl prints).
/// Column definitions and the function computing the cells between NAME and AGE.
type Printer = (Vec<Value>, fn(&Value) -> Vec<Value>);

fn builtin(res: &Resource) -> Option<Printer> {
    let name = col(
        "Name",
        "string",
        "name",
        "Name must be unique within a namespace.",
        0,
    );
    let age_c = col(
        "Age",
        "string",
        "",
        "CreationTimestamp is a timestamp representing the server time when this object was created.",
        0,
    );
    let c = |n: &str, t: &str| col(n, t, "", "", 0);
    let out: Printer = match (res.group.as_str(), res.plural.as_str()) {
        ("apps", "deployments") => (
            vec![
                name,
                c("Ready", "string"),
                c("Up-to-date", "integer"),
                c("Available", "integer"),
                age_c,
            ],
            |o| {
                vec![
                    json!(format!(
                        "{}/{}",
                        i(o, "/status/readyReplicas"),
                        o.pointer("/spec/replicas")
                            .and_then(Value::as_i64)
                            .unwrap_or(1)
                    )),
                    json!(i(o, "/status/updatedReplicas")),
                    json!(i(o, "/status/availableReplicas")),
                ]
            },
        ),
        ("apps", "statefulsets") => (vec![name, c("Ready", "string"), age_c], |o| {
            vec![json!(format!(
                "{}/{}",
                i(o, "/status/readyReplicas"),
                o.pointer("/spec/replicas")
                    .and_then(Value::as_i64)
                    .unwrap_or(1)
            ))]
        }),
        ("apps", "replicasets") => (
            vec![
                name,
                c("Desired", "integer"),
                c("Current", "integer"),
                c("Ready", "integer"),
                age_c,
            ],
            |o| {
                vec![
                    json!(
                        o.pointer("/spec/replicas")
                            .and_then(Value::as_i64)
                            .unwrap_or(1)
                    ),
                    json!(i(o, "/status/replicas")),
                    json!(i(o, "/status/readyReplicas")),
                ]
            },
        ),
        ("apps", "daemonsets") => (
            vec![
                name,
                c("Desired", "integer"),
                c("Current", "integer"),
                c("Ready", "integer"),
                c("Up-to-date", "integer"),
                c("Available", "integer"),
                age_c,
            ],
            |o| {
                vec![
                    json!(i(o, "/status/desiredNumberScheduled")),
                    json!(i(o, "/status/currentNumberScheduled")),
                    json!(i(o, "/status/numberReady")),
                    json!(i(o, "/status/updatedNumberScheduled")),
                    json!(i(o, "/status/numberAvailable")),
                ]
            },
        ),
        ("", "namespaces") => (vec![name, c("Status", "string"), age_c], |o| {
            vec![json!(s(o, "/status/phase"))]
        }),
        ("", "configmaps") => (vec![name, c("Data", "integer"), age_c], |o| {
            vec![json!(len(o, "/data") + len(o, "/binaryData"))]
        }),
        ("", "secrets") => (
            vec![name, c("Type", "string"), c("Data", "integer"), age_c],
            |o| {
                vec![
                    json!(match s(o, "/type") {
                        "" => "Opaque",
                        t => t,
                    }),
                    json!(len(o, "/data")),
                ]
            },
        ),
        ("", "services") => (
            vec![
                name,
                c("Type", "string"),
                c("Cluster-IP", "string"),
                c("External-IP", "string"),
                c("Port(s)", "string"),
                age_c,
            ],
            |o| {
                let ext = o
                    .pointer("/status/loadBalancer/ingress")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(|x| x.get("ip").and_then(Value::as_str))
                            .collect::<Vec<_>>()
                            .join(",")
                    })
                    .unwrap_or_default();
                let ty = match s(o, "/spec/type") {
                    "" => "ClusterIP",
                    t => t,
                };
                let ext = if ext.is_empty() {
                    if ty == "LoadBalancer" {
                        "<pending>".to_string()
                    } else {
                        "<none>".to_string()
                    }
                } else {
                    ext
                };
                vec![
                    json!(ty),
                    json!(or_none(s(o, "/spec/clusterIP"))),
                    json!(ext),
                    json!(ports(o)),
                ]
            },
        ),
        ("", "persistentvolumeclaims") => (
            vec![
                name,
                c("Status", "string"),
                c("Volume", "string"),
                c("Capacity", "string"),
                c("Access Modes", "string"),
                c("StorageClass", "string"),
                age_c,
            ],
            |o| {
                vec![
                    json!(s(o, "/status/phase")),
                    json!(s(o, "/spec/volumeName")),
                    json!(s(o, "/status/capacity/storage")),
                    json!(
                        o.pointer("/spec/accessModes")
                            .and_then(Value::as_array)
                            .map(|a| a
                                .iter()
                                .filter_map(Value::as_str)
                                .map(|m| match m {
                                    "ReadWriteOnce" => "RWO",
                                    "ReadOnlyMany" => "ROX",
                                    "ReadWriteMany" => "RWX",
                                    "ReadWriteOncePod" => "RWOP",
                                    x => x,
                                })
                                .collect::<Vec<_>>()
                                .join(","))
                            .unwrap_or_default()
                    ),
                    json!(or_none(s(o, "/spec/storageClassName"))),
                ]
            },
        ),
        ("batch", "jobs") => (
            vec![
                name,
                c("Status", "string"),
                c("Completions", "string"),
                age_c,
            ],
            |o| {
                let done = o
                    .pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .is_some_and(|a| {
                        a.iter().any(|c| {
                            c.get("type") == Some(&json!("Complete"))
                                && c.get("status") == Some(&json!("True"))
                        })
                    });
                vec![
                    json!(if done { "Complete" } else { "Running" }),
                    json!(format!(
                        "{}/{}",
                        i(o, "/status/succeeded"),
                        o.pointer("/spec/completions")
                            .and_then(Value::as_i64)
                            .unwrap_or(1)
                    )),
                ]
            },
        ),
        ("apiextensions.k8s.io", "customresourcedefinitions") => {
            (vec![name, col("Created At", "date", "", "", 0)], |o| {
                vec![json!(s(o, "/metadata/creationTimestamp"))]
            })
        }
        _ => return None,
    };
    Some(out)
}

/// Evaluates the JSONPath subset printer columns use: `.a.b`, `[0]`, `[*]`,
/// `[?(@.type=="Ready")]`.
pub fn jsonpath(o: &Value, path: &str) -> Vec<Value> {
    let path = path
        .trim()
        .trim_start_matches('{')
        .trim_end_matches('}')
        .trim_start_matches('$');
    let mut cur: Vec<Value> = vec![o.clone()];
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let field = &r[..end];
            rest = &r[end..];
            if field.is_empty() {
                continue;
            }
            cur = cur.iter().filter_map(|v| v.get(field).cloned()).collect();
        } else if let Some(r) = rest.strip_prefix('[') {
            let Some(end) = find_close(r) else {
                return vec![];
            };
            let inner = &r[..end];
            rest = &r[end + 1..];
            if inner == "*" {
                cur = cur
                    .iter()
                    .flat_map(|v| v.as_array().cloned().unwrap_or_default())
                    .collect();
            } else if let Some(filter) = inner.strip_prefix("?(").and_then(|x| x.strip_suffix(')'))
            {
                let Some((lhs, rhs)) = filter.split_once("==") else {
                    return vec![];
                };
                let lhs = lhs.trim().trim_start_matches('@');
                let rhs = rhs.trim().trim_matches(|c| c == '"' || c == '\'');
                cur = cur
                    .iter()
                    .flat_map(|v| v.as_array().cloned().unwrap_or_default())
                    .filter(|item| {
                        jsonpath(item, lhs).first().is_some_and(|x| match x {
                            Value::String(s) => s == rhs,
                            other => *other == rhs_value(rhs),
                        })
                    })
                    .collect();
            } else if let Ok(n) = inner.parse::<usize>() {
                cur = cur.iter().filter_map(|v| v.get(n).cloned()).collect();
            } else {
                let key = inner.trim_matches(|c| c == '"' || c == '\'');
                cur = cur.iter().filter_map(|v| v.get(key).cloned()).collect();
            }
        } else {
            return vec![];
        }
    }
    cur
}

fn rhs_value(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.to_string()))
}

fn find_close(s: &str) -> Option<usize> {
    let mut depth = 0;
    for (i, c) in s.char_indices() {
        match c {
            '[' | '(' => depth += 1,
            ']' if depth == 0 => return Some(i),
            ']' | ')' => depth -= 1,
            _ => {}
        }
    }
    None
}

fn custom_cell(o: &Value, c: &PrinterColumn) -> Value {
    let found = jsonpath(o, &c.json_path);
    let Some(v) = found.first() else {
        return Value::Null;
    };
    match (c.type_.as_str(), v) {
        ("date", Value::String(ts)) => match util::parse_rfc3339(ts) {
            Some(t) => json!(util::human_age(util::unix_now() - t)),
            None => json!(ts),
        },
        (_, Value::String(_)) | (_, Value::Number(_)) | (_, Value::Bool(_)) => v.clone(),
        _ => json!(v.to_string()),
    }
}

fn row_object(o: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": o.get("metadata").cloned().unwrap_or(json!({})),
    })
}

/// Renders `objects` of `res` as a Table.
pub fn table(res: &Resource, version: &str, objects: &[&Value], rv: Option<&str>) -> Value {
    let name_col = col(
        "Name",
        "string",
        "name",
        "Name must be unique within a namespace.",
        0,
    );
    let age_col = col(
        "Age",
        "string",
        "",
        "CreationTimestamp is a timestamp representing the server time when this object was created.",
        0,
    );
    let custom = res.printer_columns.get(version).filter(|c| !c.is_empty());
    let (columns, rows): (Vec<Value>, Vec<Value>) =
        if res.plural == "events" && (res.group.is_empty() || res.group == "events.k8s.io") {
            event_table(objects)
        } else if res.group.is_empty() && res.crd.is_none() && res.plural == "pods" {
            pod_table(objects)
        } else if res.group.is_empty() && res.crd.is_none() && res.plural == "nodes" {
            node_table(objects)
        } else if res.group.is_empty() && res.crd.is_none() && res.plural == "componentstatuses" {
            component_status_table(objects)
        } else if let Some(cols) = custom {
            let mut defs = vec![name_col];
            defs.extend(
                cols.iter()
                    .map(|c| col(&c.name, &c.type_, &c.format, &c.description, c.priority)),
            );
            let has_age = cols
                .iter()
                .any(|c| c.json_path == ".metadata.creationTimestamp");
            if !has_age {
                defs.push(age_col);
            }
            let rows = objects
                .iter()
                .map(|o| {
                    let mut cells = vec![json!(s(o, "/metadata/name"))];
                    cells.extend(cols.iter().map(|c| custom_cell(o, c)));
                    if !has_age {
                        cells.push(json!(age(o)));
                    }
                    json!({ "cells": cells, "object": row_object(o) })
                })
                .collect();
            (defs, rows)
        } else if let Some((defs, cells)) = builtin(res) {
            let rows = objects
                .iter()
                .map(|o| {
                    let mut c = vec![json!(s(o, "/metadata/name"))];
                    c.extend(cells(o));
                    if res.plural != "customresourcedefinitions" {
                        c.push(json!(age(o)));
                    }
                    json!({ "cells": c, "object": row_object(o) })
                })
                .collect();
            (defs, rows)
        } else {
            let rows = objects
            .iter()
            .map(|o| json!({ "cells": [s(o, "/metadata/name"), age(o)], "object": row_object(o) }))
            .collect();
            (vec![name_col, age_col], rows)
        };
    let mut meta = json!({});
    if let Some(rv) = rv {
        meta["resourceVersion"] = json!(rv);
    }
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": meta,
        "columnDefinitions": columns,
        "rows": rows,
    })
}

/// Pods as kubectl prints them: NAME READY STATUS RESTARTS AGE, and with `-o wide` IP NODE
/// NOMINATED NODE READINESS GATES.
fn pod_table(objects: &[&Value]) -> (Vec<Value>, Vec<Value>) {
    let defs = vec![
        col(
            "Name",
            "string",
            "name",
            "Name must be unique within a namespace.",
            0,
        ),
        col(
            "Ready",
            "string",
            "",
            "The aggregate readiness state of this pod for accepting traffic.",
            0,
        ),
        col(
            "Status",
            "string",
            "",
            "The aggregate status of the containers in this pod.",
            0,
        ),
        col(
            "Restarts",
            "string",
            "",
            "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
            0,
        ),
        col(
            "Age",
            "string",
            "",
            "CreationTimestamp is a timestamp representing the server time when this object was created.",
            0,
        ),
        col(
            "IP",
            "string",
            "",
            "IP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
            1,
        ),
        col(
            "Node",
            "string",
            "",
            "NodeName is a request to schedule this pod onto a specific node.",
            1,
        ),
        col(
            "Nominated Node",
            "string",
            "",
            "nominatedNodeName is set when this pod preempts other pods on the node.",
            1,
        ),
        col(
            "Readiness Gates",
            "string",
            "",
            "If specified, all readiness gates will be evaluated for pod readiness.",
            1,
        ),
    ];
    let rows = objects
        .iter()
        .map(|o| {
            let statuses: Vec<&Value> = o
                .pointer("/status/containerStatuses")
                .and_then(Value::as_array)
                .map(|a| a.iter().collect())
                .unwrap_or_default();
            let ready = statuses
                .iter()
                .filter(|c| c.get("ready") == Some(&json!(true)))
                .count();
            let restarts: i64 = statuses
                .iter()
                .filter_map(|c| c.get("restartCount").and_then(Value::as_i64))
                .sum();
            let waiting = statuses.iter().find_map(|c| {
                c.pointer("/state/waiting/reason")
                    .or_else(|| c.pointer("/state/terminated/reason"))
                    .and_then(Value::as_str)
            });
            let phase = match s(o, "/status/phase") {
                "" => "Pending",
                p => p,
            };
            let status = if o.pointer("/metadata/deletionTimestamp").is_some() {
                "Terminating".to_string()
            } else {
                match (phase, waiting) {
                    ("Running", Some(w)) | ("Pending", Some(w)) | ("Failed", Some(w)) => {
                        w.to_string()
                    }
                    ("Succeeded", _) => "Completed".to_string(),
                    (p, _) => p.to_string(),
                }
            };
            let cells = json!([
                s(o, "/metadata/name"),
                format!("{ready}/{}", len(o, "/spec/containers")),
                status,
                restarts,
                age(o),
                or_none(s(o, "/status/podIP")),
                or_none(s(o, "/spec/nodeName")),
                "<none>",
                "<none>",
            ]);
            json!({ "cells": cells, "object": row_object(o) })
        })
        .collect();
    (defs, rows)
}

/// Nodes as kubectl prints them: NAME STATUS ROLES AGE VERSION, and with `-o wide` the
/// addresses, OS image, kernel and container runtime.
/// `kubectl get componentstatuses`: Name, Status, Message, Error (no age: they are not stored).
fn component_status_table(objects: &[&Value]) -> (Vec<Value>, Vec<Value>) {
    let c = |n: &str| col(n, "string", "", "", 0);
    let defs = vec![
        col(
            "Name",
            "string",
            "name",
            "Name must be unique within a namespace.",
            0,
        ),
        c("Status"),
        c("Message"),
        c("Error"),
    ];
    let rows = objects
        .iter()
        .map(|o| {
            let healthy = o
                .pointer("/conditions")
                .and_then(Value::as_array)
                .and_then(|cs| cs.iter().find(|c| c.get("type") == Some(&json!("Healthy"))));
            let field = |k: &str| {
                healthy
                    .and_then(|c| c.get(k))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            let status = match field("status").as_str() {
                "True" => "Healthy",
                _ => "Unhealthy",
            };
            json!({
                "cells": [s(o, "/metadata/name"), status, field("message"), field("error")],
                "object": row_object(o),
            })
        })
        .collect();
    (defs, rows)
}

fn node_table(objects: &[&Value]) -> (Vec<Value>, Vec<Value>) {
    let c = |n: &str, p: i64| col(n, "string", "", "", p);
    let defs = vec![
        col(
            "Name",
            "string",
            "name",
            "Name must be unique within a namespace.",
            0,
        ),
        c("Status", 0),
        c("Roles", 0),
        col(
            "Age",
            "string",
            "",
            "CreationTimestamp is a timestamp representing the server time when this object was created.",
            0,
        ),
        c("Version", 0),
        c("Internal-IP", 1),
        c("External-IP", 1),
        c("OS-Image", 1),
        c("Kernel-Version", 1),
        c("Container-Runtime", 1),
    ];
    let rows = objects
        .iter()
        .map(|o| {
            let ready = o
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .and_then(|cs| cs.iter().find(|c| c.get("type") == Some(&json!("Ready"))))
                .and_then(|c| c.get("status"))
                .and_then(Value::as_str)
                == Some("True");
            let mut status = if ready { "Ready" } else { "NotReady" }.to_string();
            if o.pointer("/spec/unschedulable") == Some(&json!(true)) {
                status += ",SchedulingDisabled";
            }
            let address = |t: &str| {
                o.pointer("/status/addresses")
                    .and_then(Value::as_array)
                    .and_then(|a| a.iter().find(|x| x.get("type") == Some(&json!(t))))
                    .and_then(|x| x.get("address"))
                    .and_then(Value::as_str)
                    .unwrap_or("<none>")
                    .to_string()
            };
            let cells = json!([
                s(o, "/metadata/name"),
                status,
                "<none>",
                age(o),
                s(o, "/status/nodeInfo/kubeletVersion"),
                address("InternalIP"),
                address("ExternalIP"),
                s(o, "/status/nodeInfo/osImage"),
                s(o, "/status/nodeInfo/kernelVersion"),
                s(o, "/status/nodeInfo/containerRuntimeVersion"),
            ]);
            json!({ "cells": cells, "object": row_object(o) })
        })
        .collect();
    (defs, rows)
}

fn since(ts: &str) -> String {
    match util::parse_rfc3339(ts) {
        Some(t) => util::human_age(util::unix_now() - t),
        None => "<unknown>".into(),
    }
}

/// The columns the API server prints for Events (either API; cells from the core field names,
/// falling back to the `events.k8s.io` ones).
fn event_table(objects: &[&Value]) -> (Vec<Value>, Vec<Value>) {
    let defs = vec![
        col("Last Seen", "string", "", "", 0),
        col("Type", "string", "", "", 0),
        col("Reason", "string", "", "", 0),
        col("Object", "string", "", "", 0),
        col("Subobject", "string", "", "", 1),
        col("Source", "string", "", "", 1),
        col("Message", "string", "", "", 0),
        col("First Seen", "string", "", "", 1),
        col("Count", "integer", "", "", 1),
        col("Name", "string", "name", "", 1),
    ];
    let either = |o: &Value, core: &str, new: &str| -> String {
        match s(o, core) {
            "" => s(o, new).to_string(),
            v => v.to_string(),
        }
    };
    let rows = objects
        .iter()
        .map(|o| {
            let first_ts = either(o, "/firstTimestamp", "/deprecatedFirstTimestamp");
            let first = if first_ts.is_empty() {
                since(s(o, "/eventTime"))
            } else {
                since(&first_ts)
            };
            let last_ts = either(o, "/lastTimestamp", "/deprecatedLastTimestamp");
            let mut last = if last_ts.is_empty() {
                first.clone()
            } else {
                since(&last_ts)
            };
            let mut count = o
                .get("count")
                .or_else(|| o.get("deprecatedCount"))
                .and_then(Value::as_i64)
                .unwrap_or(0);
            if let Some(series) = o.get("series").filter(|v| v.is_object()) {
                last = since(s(series, "/lastObservedTime"));
                count = series.get("count").and_then(Value::as_i64).unwrap_or(0);
            } else if count == 0 {
                count = 1;
            }
            let regarding = o
                .get("involvedObject")
                .or_else(|| o.get("regarding"))
                .cloned()
                .unwrap_or(json!({}));
            let kind = s(&regarding, "/kind").to_ascii_lowercase();
            let target = match s(&regarding, "/name") {
                "" => kind,
                n => format!("{kind}/{n}"),
            };
            let component = match either(o, "/source/component", "/deprecatedSource/component") {
                c if c.is_empty() => either(o, "/reportingComponent", "/reportingController"),
                c => c,
            };
            let instance = match either(o, "/source/host", "/deprecatedSource/host") {
                h if h.is_empty() => s(o, "/reportingInstance").to_string(),
                h => h,
            };
            let source = if instance.is_empty() {
                component
            } else {
                format!("{component}, {instance}")
            };
            let message = either(o, "/message", "/note");
            let cells = json!([
                last,
                s(o, "/type"),
                s(o, "/reason"),
                target,
                s(&regarding, "/fieldPath"),
                source,
                message.trim(),
                first,
                count,
                s(o, "/metadata/name"),
            ]);
            json!({ "cells": cells, "object": row_object(o) })
        })
        .collect();
    (defs, rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonpath_subset() {
        let o = json!({"status": {"conditions": [
            {"type": "Reconciling", "status": "False"},
            {"type": "Ready", "status": "True", "message": "Applied revision: main@sha1:abc"}
        ]}});
        assert_eq!(
            jsonpath(&o, ".status.conditions[?(@.type==\"Ready\")].status"),
            vec![json!("True")]
        );
        assert_eq!(
            jsonpath(&o, ".status.conditions[0].type"),
            vec![json!("Reconciling")]
        );
        assert!(jsonpath(&o, ".spec.missing").is_empty());
    }
}
