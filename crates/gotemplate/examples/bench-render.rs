//! Benchmark: the templates `helm create` writes (deployment, service, serviceaccount, ingress,
//! hpa, helpers) parsed once into one set, then rendered for 1,000 different values.
//!
//! Run: `cargo run --release -p ferroflux-gotemplate --example bench-render`
//!
//! The host functions here are small stand-ins for sprig's and Helm's (`include`, `default`,
//! `quote`, `nindent`, `toYaml`, …): this measures the template engine, not the function
//! library; crates/helm measures whole charts.

use std::time::Instant;

use ferroflux_gotemplate::{
    CallContext, Func, FuncError, FuncMap, MissingKey, Template, Type, Value,
};

const HELPERS: &str = r#"
{{- define "mychart.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- define "mychart.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}
{{- define "mychart.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- define "mychart.labels" -}}
helm.sh/chart: {{ include "mychart.chart" . }}
{{ include "mychart.selectorLabels" . }}
{{- if .Chart.AppVersion }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}
{{- define "mychart.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mychart.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}
{{- define "mychart.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "mychart.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}
"#;

const DEPLOYMENT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "mychart.fullname" . }}
  labels:
    {{- include "mychart.labels" . | nindent 4 }}
spec:
  {{- if not .Values.autoscaling.enabled }}
  replicas: {{ .Values.replicaCount }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "mychart.selectorLabels" . | nindent 6 }}
  template:
    metadata:
      {{- with .Values.podAnnotations }}
      annotations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      labels:
        {{- include "mychart.labels" . | nindent 8 }}
        {{- with .Values.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      {{- with .Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      serviceAccountName: {{ include "mychart.serviceAccountName" . }}
      securityContext:
        {{- toYaml .Values.podSecurityContext | nindent 8 }}
      containers:
        - name: {{ .Chart.Name }}
          securityContext:
            {{- toYaml .Values.securityContext | nindent 12 }}
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"
          imagePullPolicy: {{ .Values.image.pullPolicy }}
          ports:
            - name: http
              containerPort: {{ .Values.service.port }}
              protocol: TCP
          {{- with .Values.livenessProbe }}
          livenessProbe:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
          {{- with .Values.env }}
          env:
            {{- range $k, $v := . }}
            - name: {{ $k }}
              value: {{ $v | quote }}
            {{- end }}
          {{- end }}
"#;

const SERVICE: &str = r#"apiVersion: v1
kind: Service
metadata:
  name: {{ include "mychart.fullname" . }}
  labels:
    {{- include "mychart.labels" . | nindent 4 }}
spec:
  type: {{ .Values.service.type }}
  ports:
    - port: {{ .Values.service.port }}
      targetPort: http
      protocol: TCP
      name: http
  selector:
    {{- include "mychart.selectorLabels" . | nindent 4 }}
"#;

const SERVICEACCOUNT: &str = r#"{{- if .Values.serviceAccount.create -}}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "mychart.serviceAccountName" . }}
  labels:
    {{- include "mychart.labels" . | nindent 4 }}
  {{- with .Values.serviceAccount.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
automountServiceAccountToken: {{ .Values.serviceAccount.automount }}
{{- end }}
"#;

const INGRESS: &str = r#"{{- if .Values.ingress.enabled -}}
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: {{ include "mychart.fullname" . }}
  labels:
    {{- include "mychart.labels" . | nindent 4 }}
spec:
  rules:
    {{- range .Values.ingress.hosts }}
    - host: {{ .host | quote }}
      http:
        paths:
          {{- range .paths }}
          - path: {{ .path }}
            pathType: {{ .pathType }}
            backend:
              service:
                name: {{ include "mychart.fullname" $ }}
                port:
                  number: {{ $.Values.service.port }}
          {{- end }}
    {{- end }}
{{- end }}
"#;

fn s(v: &Value) -> String {
    match v {
        Value::String(s) => s.to_string(),
        Value::Nil => String::new(),
        other => other.to_string(),
    }
}

/// A plain block-YAML printer (enough for the benchmark's values).
fn to_yaml(v: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match v {
        Value::Map(m) => {
            for (k, v) in m.entries() {
                match &v {
                    Value::Map(inner) if !inner.is_empty() => {
                        out.push_str(&format!("{pad}{k}:\n"));
                        to_yaml(&v, indent + 2, out);
                    }
                    Value::List(l) if !l.is_empty() => {
                        out.push_str(&format!("{pad}{k}:\n"));
                        to_yaml(&v, indent, out);
                    }
                    _ => out.push_str(&format!("{pad}{k}: {}\n", s(&v))),
                }
            }
        }
        Value::List(l) => {
            for item in l.iter() {
                out.push_str(&format!("{pad}- {}\n", s(item)));
            }
        }
        other => out.push_str(&format!("{pad}{}\n", s(other))),
    }
}

fn funcs() -> FuncMap {
    let mut f = FuncMap::new();
    f.insert(
        "include",
        Func::fixed(
            &[Type::String, Type::Any],
            |ctx: &mut CallContext<'_>, a| {
                Ok(Value::from(ctx.execute_template(
                    a[0].as_str().unwrap_or_default(),
                    a[1].clone(),
                )?))
            },
        ),
    );
    f.insert(
        "default",
        Func::fixed(&[Type::Any, Type::Any], |_, a| {
            Ok(if a[1].truth() {
                a[1].clone()
            } else {
                a[0].clone()
            })
        }),
    );
    f.insert(
        "trunc",
        Func::fixed(&[Type::Int, Type::String], |_, a| {
            let (Value::Int(n), Some(t)) = (&a[0], a[1].as_str()) else {
                return Err(FuncError::new("bad arguments"));
            };
            Ok(Value::from(t.chars().take(*n as usize).collect::<String>()))
        }),
    );
    f.insert(
        "trimSuffix",
        Func::fixed(&[Type::String, Type::String], |_, a| {
            let (x, t) = (s(&a[0]), s(&a[1]));
            Ok(Value::from(
                t.strip_suffix(x.as_str()).unwrap_or(&t).to_string(),
            ))
        }),
    );
    f.insert(
        "contains",
        Func::fixed(&[Type::String, Type::String], |_, a| {
            Ok(Value::Bool(s(&a[1]).contains(s(&a[0]).as_str())))
        }),
    );
    f.insert(
        "replace",
        Func::fixed(&[Type::String, Type::String, Type::String], |_, a| {
            Ok(Value::from(
                s(&a[2]).replace(s(&a[0]).as_str(), s(&a[1]).as_str()),
            ))
        }),
    );
    f.insert(
        "quote",
        Func::variadic(&[], Type::Any, |_, a| {
            let parts: Vec<String> = a
                .iter()
                .filter(|v| !v.is_nil())
                .map(|v| ferroflux_gotemplate::fmt::quote(&s(v)))
                .collect();
            Ok(Value::from(parts.join(" ")))
        }),
    );
    f.insert(
        "nindent",
        Func::fixed(&[Type::Int, Type::String], |_, a| {
            let Value::Int(n) = a[0] else {
                return Err(FuncError::new("bad arguments"));
            };
            let pad = " ".repeat(n as usize);
            Ok(Value::from(format!(
                "\n{pad}{}",
                s(&a[1]).replace('\n', &format!("\n{pad}"))
            )))
        }),
    );
    f.insert(
        "toYaml",
        Func::fixed(&[Type::Any], |_, a| {
            let mut out = String::new();
            to_yaml(&a[0], 0, &mut out);
            Ok(Value::from(out.trim_end().to_string()))
        }),
    );
    f
}

fn values(i: usize) -> serde_json::Value {
    serde_json::json!({
        "replicaCount": 1 + i % 5,
        "image": {"repository": format!("registry.example.com/team{}/app", i % 17), "pullPolicy": "IfNotPresent", "tag": if i.is_multiple_of(3) { "" } else { "1.2.3" }},
        "imagePullSecrets": if i.is_multiple_of(2) { serde_json::json!([{"name": "regcred"}]) } else { serde_json::json!([]) },
        "nameOverride": "",
        "fullnameOverride": if i.is_multiple_of(7) { format!("custom-{i}") } else { String::new() },
        "serviceAccount": {"create": !i.is_multiple_of(4), "automount": true, "annotations": {"team": format!("t{i}")}, "name": ""},
        "podAnnotations": {"checksum/config": format!("{i:064x}")},
        "podLabels": {"tier": "web"},
        "podSecurityContext": {"fsGroup": 2000},
        "securityContext": {"readOnlyRootFilesystem": true, "runAsNonRoot": true, "runAsUser": 1000},
        "service": {"type": "ClusterIP", "port": 80 + i % 10},
        "ingress": {"enabled": i % 2 == 1, "hosts": [{"host": format!("app{i}.example.com"), "paths": [{"path": "/", "pathType": "Prefix"}]}]},
        "resources": {"limits": {"cpu": "100m", "memory": "128Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}},
        "livenessProbe": {"httpGet": {"path": "/", "port": "http"}},
        "autoscaling": {"enabled": i.is_multiple_of(5)},
        "env": {"LOG_LEVEL": "info", "INDEX": format!("{i}")},
    })
}

fn main() {
    let files = [
        ("mychart/templates/_helpers.tpl", HELPERS),
        ("mychart/templates/deployment.yaml", DEPLOYMENT),
        ("mychart/templates/service.yaml", SERVICE),
        ("mychart/templates/serviceaccount.yaml", SERVICEACCOUNT),
        ("mychart/templates/ingress.yaml", INGRESS),
    ];
    let parse_start = Instant::now();
    let mut set = Template::named("gotpl")
        .with_funcs(funcs())
        .with_missing_key(MissingKey::Zero);
    for (name, text) in files {
        if let Err(e) = set.parse(name, text) {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
    let parse_time = parse_start.elapsed();

    let n = 1_000;
    let inputs: Vec<Value> = (0..n)
        .map(|i| {
            Value::from_json(&serde_json::json!({
                "Values": values(i),
                "Release": {"Name": format!("rel{i}"), "Namespace": "default", "Service": "Helm", "IsInstall": true, "Revision": 1},
                "Chart": {"Name": "mychart", "Version": "0.1.0", "AppVersion": "1.16.0"},
            }))
        })
        .collect();
    let start = Instant::now();
    let mut bytes = 0;
    for data in &inputs {
        for (name, _) in &files[1..] {
            match set.execute(name, data) {
                Ok(out) => bytes += out.len(),
                Err(e) => {
                    eprintln!("{e}");
                    std::process::exit(1);
                }
            }
        }
    }
    let elapsed = start.elapsed();
    // `BENCH_SHOW=N` prints release N's manifests, to check what is being measured.
    let show = std::env::var("BENCH_SHOW")
        .ok()
        .and_then(|v| v.parse::<usize>().ok());
    if let Some(data) = show.and_then(|i| inputs.get(i)) {
        for (name, _) in &files[1..] {
            if let Ok(out) = set.execute(name, data) {
                println!("--- {name}\n{out}");
            }
        }
    }
    println!(
        "parse of 5 templates: {:.2} ms",
        parse_time.as_secs_f64() * 1e3
    );
    println!(
        "{n} releases x 4 manifests: {:.1} ms total, {:.1} µs per release, {} bytes rendered",
        elapsed.as_secs_f64() * 1e3,
        elapsed.as_secs_f64() * 1e6 / n as f64,
        bytes
    );
}
