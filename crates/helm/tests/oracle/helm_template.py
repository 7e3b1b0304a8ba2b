#!/usr/bin/env python3
"""`helm template` of Helm v4.2.3, run through Helm's own Go SDK (libhelm_c, PyPI helm-python-sdk).

Usage: helm_template.py [--strict] [helm template arguments...]

Prints on stdout what `helm template` prints, and on failure `Error: <message>` on stderr with
exit status 1, as the helm CLI does. Exit status 2 means the oracle cannot answer faithfully
(an option the C ABI does not carry, see README.md); that is never a Helm answer.

What Helm's SDK does here (through `helm_install` with dry_run "client", exactly the action
`helm template` runs): release-name validation, dependency processing (condition, tags, alias,
import-values), values coalescing, values.schema.json validation, the kubeVersion check,
Capabilities (--kube-version, --api-versions), rendering (templates and NOTES.txt), the manifest
split, the install-order sort and the `---\n# Source:` formatting of the manifests.

What this file does itself, mirroring Helm's CLI code (pkg/cmd/template.go, pkg/cmd/install.go,
pkg/cli/values/options.go) because the C ABI does not expose it: argument parsing, merging the
values sources, the library-chart and missing-dependency checks, the hooks (taken from
`helm_render` of the same chart handle and sorted like releaseutil.SortManifests), the CRDs of
--include-crds, --skip-tests, --no-hooks, --show-only and --output-dir. See README.md.
"""

from __future__ import annotations

import json
import os
import re
import sys

# Go writes its warnings (values coalescing, ...) straight to file descriptor 2. helm prints them
# too, but they are not what the corpus records: keep the real stderr for our own messages only.
_REAL_STDERR = os.fdopen(os.dup(2), "w", encoding="utf-8", errors="surrogateescape")
if os.environ.get("HELM_ORACLE_GO_STDERR") != "1":
    _devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(_devnull, 2)
sys.stderr = _REAL_STDERR

import helm_python as hp  # noqa: E402  (after the stderr redirection: the library loads here)
from helm_python import _native  # noqa: E402


class HelmError(Exception):
    """An error `helm template` would report (printed as `Error: ...`, exit 1)."""


class Unsupported(Exception):
    """The oracle cannot reproduce Helm faithfully for this input (exit 2)."""


# --- Go helpers -------------------------------------------------------------------------------

# unicode.IsSpace
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"


def go_trim_space(s: str) -> str:
    return s.strip(_GO_SPACE)


def go_trim_left_space(s: str) -> str:
    return s.lstrip(_GO_SPACE)


# releaseutil's separator `(?:^|\s*\n)---\s*`; RE2's \s is [\t\n\f\r ].
_SEP = re.compile(r"(?:^|[\t\n\f\r ]*\n)---[\t\n\f\r ]*")


def split_manifests(big: str) -> list[str]:
    """releaseutil.SplitManifests, in document order."""
    docs = []
    big = go_trim_left_space(big)
    parts = []
    beg = 0
    for m in _SEP.finditer(big):
        if m.end() != 0:
            parts.append(big[beg : m.start()])
        beg = m.end()
    parts.append(big[beg:])
    for d in parts:
        if go_trim_space(d) == "":
            continue
        docs.append(go_trim_left_space(d))
    return docs


def go_path_match(pattern: str, name: str) -> bool:
    """path/filepath.Match on '/'-separated paths (a malformed pattern matches nothing)."""
    rx = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "*":
            rx.append("[^/]*")
        elif c == "?":
            rx.append("[^/]")
        elif c == "\\":
            i += 1
            if i >= len(pattern):
                return False
            rx.append(re.escape(pattern[i]))
        elif c == "[":
            j = i + 1
            negate = j < len(pattern) and pattern[j] == "^"
            if negate:
                j += 1
            items = []
            first = True
            while True:
                if j >= len(pattern):
                    return False
                if pattern[j] == "]" and not first:
                    break
                first = False
                lo = pattern[j]
                if lo == "\\":
                    j += 1
                    if j >= len(pattern):
                        return False
                    lo = pattern[j]
                j += 1
                if j + 1 < len(pattern) and pattern[j] == "-" and pattern[j + 1] != "]":
                    hi = pattern[j + 1]
                    if hi == "\\":
                        j += 1
                        hi = pattern[j + 1]
                    j += 2
                    items.append(re.escape(lo) + "-" + re.escape(hi))
                else:
                    items.append(re.escape(lo))
            body = "".join(items)
            rx.append(("[^/" + body + "]") if negate else ("(?!/)[" + body + "]"))
            i = j
        else:
            rx.append(re.escape(c))
        i += 1
    return re.fullmatch("".join(rx), name, re.S) is not None


def merge_maps(a: dict, b: dict) -> dict:
    """loader.MergeMaps."""
    out = dict(a)
    for k, v in b.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge_maps(out[k], v)
            continue
        out[k] = v
    return out


def native(func: str, *args):
    """Calls a libhelm_c function returning a string; Helm's error text becomes a HelmError."""
    try:
        return _native.call_string(func, *args)
    except hp.HelmError as e:
        raise HelmError(str(e)) from None


# --- command line (cobra/pflag semantics for the flags `helm template` has) -------------------

BOOL_FLAGS = {
    "include-crds": "include_crds",
    "skip-tests": "skip_tests",
    "is-upgrade": "is_upgrade",
    "no-hooks": "no_hooks",
    "generate-name": "generate_name",
    "g": "generate_name",
    "release-name": "use_release_name",
    "skip-schema-validation": "skip_schema_validation",
    "skip-crds": "skip_crds",
}
STRING_FLAGS = {
    "namespace": "namespace",
    "n": "namespace",
    "kube-version": "kube_version",
    "output-dir": "output_dir",
}
ARRAY_FLAGS = {  # StringArray: one value per occurrence
    "set": "set",
    "set-string": "set_string",
    "set-file": "set_file",
    "set-json": "set_json",
    "set-literal": "set_literal",
    "show-only": "show_only",
    "s": "show_only",
}
SLICE_FLAGS = {  # StringSlice: comma-separated (CSV) values, accumulated
    "values": "values",
    "f": "values",
    "api-versions": "api_versions",
    "a": "api_versions",
}


def _csv(value: str) -> list[str]:
    import csv

    if value == "":
        return []
    return next(csv.reader([value]))


def parse_args(argv: list[str]) -> dict:
    o = {k: [] for k in set(ARRAY_FLAGS.values()) | set(SLICE_FLAGS.values())}
    o.update({k: False for k in set(BOOL_FLAGS.values())})
    o.update({"namespace": None, "kube_version": "", "output_dir": "", "args": []})
    i = 0
    while i < len(argv):
        a = argv[i]
        i += 1
        if a == "--":
            o["args"].extend(argv[i:])
            break
        if not a.startswith("-") or a == "-":
            o["args"].append(a)
            continue
        if a.startswith("--"):
            name, eq, val = a[2:].partition("=")
            shorthand = False
        else:
            name, val = a[1], a[2:]
            eq = "=" if val else ""
            if val.startswith("="):
                val = val[1:]
            shorthand = True
        if name in BOOL_FLAGS and (not shorthand or len(name) == 1):
            if eq:
                if val in ("1", "t", "T", "true", "TRUE", "True"):
                    o[BOOL_FLAGS[name]] = True
                elif val in ("0", "f", "F", "false", "FALSE", "False"):
                    o[BOOL_FLAGS[name]] = False
                else:
                    raise HelmError(f'invalid argument "{val}" for "{_flag_display(name)}" flag: strconv.ParseBool: parsing "{val}": invalid syntax')
            else:
                o[BOOL_FLAGS[name]] = True
            continue
        table = {**STRING_FLAGS, **ARRAY_FLAGS, **SLICE_FLAGS}
        if name not in table:
            if shorthand:
                raise HelmError(f"unknown shorthand flag: '{name}' in {a}")
            raise Unsupported(f"flag --{name} is not supported by the oracle")
        if not eq:
            if i >= len(argv):
                raise HelmError(f"flag needs an argument: {_flag_display(name, shorthand)}")
            val = argv[i]
            i += 1
        key = table[name]
        if name in STRING_FLAGS:
            o[key] = val
        elif name in ARRAY_FLAGS:
            o[key].append(val)
        else:
            o[key].extend(_csv(val))
    return o


def _flag_display(name: str, shorthand: bool = False) -> str:
    if shorthand:
        return f"'{name}' in -{name}"
    return f"--{name}" if len(name) > 1 else f"-{name}"


# --- values (pkg/cli/values/options.go MergeValues) --------------------------------------------


class YamlSeparatorError(Exception):
    pass


def yaml_documents(data: str):
    """k8s.io/apimachinery utilyaml.YAMLReader: documents split at lines starting with `---`."""
    buf: list[str] = []
    lines = data.splitlines(keepends=True)
    for line in lines:
        if line.startswith("---"):
            trimmed = go_trim_space(line[3:])
            if trimmed and trimmed[0] != "#":
                raise YamlSeparatorError(f"error reading yaml document: invalid Yaml document separator: {trimmed}")
            if buf:
                yield "".join(buf)
                buf = []
            continue
        buf.append(line)
    if buf:
        yield "".join(buf)


def load_values_file(path: str) -> dict:
    try:
        with open(path, "rb") as f:
            raw = f.read().decode("utf-8", errors="surrogateescape")
    except FileNotFoundError:
        raise HelmError(f"open {path}: no such file or directory") from None
    values: dict = {}
    try:
        docs = list(yaml_documents(raw))
    except YamlSeparatorError as e:
        raise HelmError(f"failed to parse {path}: {e}") from None
    for doc in docs:
        try:
            current = json.loads(native("helm_values_from_yaml", doc))
        except HelmError as e:
            msg = str(e)
            if "into Go value of type" in msg:
                # ReadValues decodes into chartutil.Values, LoadValues into map[string]any: the
                # type named in a JSON error differs, so only YAML syntax errors are reproduced.
                raise Unsupported(f"values file {path}: {msg}") from None
            raise HelmError(f"failed to parse {path}: cannot unmarshal yaml document: {msg}") from None
        values = merge_maps(values, current)
    return values


def _has_number(v) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, (int, float)):
        return True
    if isinstance(v, dict):
        return any(_has_number(x) for x in v.values())
    if isinstance(v, list):
        return any(_has_number(x) for x in v)
    return False


def _refuse_non_utf8_files(value: str) -> None:
    """--set-file of bytes that are not UTF-8: Helm keeps them (Go's string(bytes)), but they
    cross the C ABI as JSON, which makes each bad byte U+FFFD, so the answer would be wrong."""
    for item in value.split(","):
        path = item.split("=", 1)[-1]
        try:
            with open(path, "rb") as fh:
                fh.read().decode("utf-8")
        except OSError:
            continue  # not a file name (or unreadable): strvals says what Helm says
        except UnicodeDecodeError:
            raise Unsupported(f"--set-file {value}: bytes that are not UTF-8 cannot cross the C ABI") from None


def merge_values(o: dict) -> dict:
    base: dict = {}
    for path in o["values"]:
        base = merge_maps(base, load_values_file(path))
    for value in o["set_json"]:
        trimmed = go_trim_space(value)
        if trimmed.startswith("{"):
            try:
                parsed = json.loads(trimmed)
                if not isinstance(parsed, dict):
                    raise ValueError
            except ValueError:
                raise HelmError(f"failed parsing --set-json data JSON: {value}") from None
            base = merge_maps(base, parsed)
        else:
            try:
                base = merge_maps(base, json.loads(native("helm_strvals_parse_json", value)))
            except HelmError:
                raise HelmError(f"failed parsing --set-json data {value}") from None
    for flag, func, key in (
        ("--set", "helm_strvals_parse", "set"),
        ("--set-string", "helm_strvals_parse_string", "set_string"),
        ("--set-file", "helm_strvals_parse_file", "set_file"),
        ("--set-literal", "helm_strvals_parse_literal", "set_literal"),
    ):
        for value in o[key]:
            try:
                parsed = json.loads(native(func, value))
            except HelmError as e:
                raise HelmError(f"failed parsing {flag} data: {e}") from None
            if key == "set_file":
                _refuse_non_utf8_files(value)
            if key == "set" and _has_number(parsed):
                # strvals makes these int64; crossing the C ABI as JSON turns them into float64,
                # which prints and compares differently in templates.
                raise Unsupported(f"--set {value}: integers cannot cross the C ABI as int64")
            base = merge_maps(base, parsed)
    return base


# --- hooks (releaseutil.SortManifests over helm_render's output) -----------------------------

INSTALL_ORDER = [
    "PriorityClass", "Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange",
    "PodSecurityPolicy", "PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList",
    "ConfigMap", "StorageClass", "PersistentVolume", "PersistentVolumeClaim",
    "CustomResourceDefinition", "ClusterRole", "ClusterRoleList", "ClusterRoleBinding",
    "ClusterRoleBindingList", "Role", "RoleList", "RoleBinding", "RoleBindingList", "Service",
    "DaemonSet", "Pod", "ReplicationController", "ReplicaSet", "Deployment",
    "HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "IngressClass", "Ingress",
    "APIService", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
]
_ORDER = {k: i for i, k in enumerate(INSTALL_ORDER)}
HOOK_EVENTS = {
    "pre-install", "post-install", "pre-delete", "post-delete", "pre-upgrade", "post-upgrade",
    "pre-rollback", "post-rollback", "test", "test-success",
}


def _kind_key(kind: str):
    # lessByKind: known kinds by install order, then unknown kinds alphabetically; stable.
    return (0, _ORDER[kind], "") if kind in _ORDER else (1, 0, kind)


def sort_manifests(files: dict[str, str]):
    """Returns (hooks, manifests); each item is (path, kind, content[, events])."""
    hooks, generic = [], []
    for path in sorted(files):
        content = files[path]
        # renderResources drops every NOTES.txt (any chart's) before sorting.
        if path.endswith("NOTES.txt"):
            continue
        if os.path.basename(path).startswith("_") or go_trim_space(content) == "":
            continue
        for doc in split_manifests(content):
            head = json.loads(native("helm_values_from_yaml", doc))
            kind = head.get("kind") or ""
            meta = head.get("metadata") or {}
            ann = meta.get("annotations") if isinstance(meta, dict) else None
            if not ann or "helm.sh/hook" not in ann:
                generic.append((path, kind, doc))
                continue
            events = []
            unknown = False
            for t in str(ann["helm.sh/hook"]).split(","):
                t = go_trim_space(t).lower()
                if t not in HOOK_EVENTS:
                    unknown = True
                    break
                events.append("test" if t == "test-success" else t)
            if unknown:
                continue
            hooks.append((path, kind, doc, events))
    hooks.sort(key=lambda h: _kind_key(h[1]))
    generic.sort(key=lambda m: _kind_key(m[1]))
    return hooks, generic


def format_manifests(manifests) -> str:
    return "".join(f"---\n# Source: {m[0]}\n{m[2]}\n" for m in manifests)


# --- the command ------------------------------------------------------------------------------

_CONFIG = None


def config():
    global _CONFIG
    if _CONFIG is None:
        # Never used to reach a cluster: a client dry-run replaces the kube client and storage.
        _CONFIG = hp.Config(
            storage_driver="memory",
            kubeconfig_content="apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n",
        )
    return _CONFIG


def load_chart(path: str):
    try:
        return hp.Chart.load(path)
    except hp.HelmError as e:
        raise HelmError(str(e)) from None


def name_and_chart(o: dict) -> tuple[str, str]:
    """action.Install.NameAndChart as `helm template` calls it (ReleaseName preset)."""
    args = o["args"]
    if not args:
        raise HelmError('"helm template" requires at least 1 argument\n\nUsage:  helm template [NAME] [CHART] [flags]')
    if len(args) > 2:
        raise HelmError(f"expected at most two arguments, unexpected arguments: {', '.join(args[2:])}")
    if len(args) == 2:
        if o["generate_name"]:
            raise HelmError("cannot set --generate-name and also specify a name")
        return args[0], args[1]
    return "release-name", args[0]


def locate_chart(ref: str) -> str:
    ref = ref.strip()
    if os.path.exists(ref):
        return os.path.abspath(ref)
    if os.path.isabs(ref) or ref.startswith("."):
        raise HelmError(f'path "{ref}" not found')
    raise Unsupported(f"chart {ref!r} is not a local path (repositories are not used by the oracle)")


def template(o: dict, strict: bool) -> tuple[str, list[tuple[str, str]]]:
    """Returns (stdout, files written under --output-dir)."""
    kube_version = None
    if o["kube_version"]:
        kube_version = o["kube_version"]
    name, ref = name_and_chart(o)
    chart_path = locate_chart(ref)
    vals = merge_values(o)
    chart = load_chart(chart_path)
    meta = chart.metadata
    ctype = meta.get("type") or ""
    if ctype not in ("", "application"):
        raise HelmError(f"{ctype} charts are not installable")
    deps = meta.get("dependencies") or []
    if deps:
        present = {d.get("name") for d in chart.dependencies}
        missing = [d.get("name") for d in deps if d.get("name") not in present]
        if missing:
            raise HelmError(
                "an error occurred while checking for chart dependencies. You may need to run "
                "'helm dependency build' to fetch missing dependencies: found in Chart.yaml, but "
                f"missing in charts/ directory: {', '.join(missing)}"
            )
    namespace = o["namespace"] if o["namespace"] is not None else "default"
    opts = {"dry_run": "client", "namespace": namespace, "replace": True}
    if kube_version is not None:
        opts["kube_version"] = kube_version
    if o["api_versions"]:
        opts["api_versions"] = o["api_versions"]
    if o["skip_schema_validation"]:
        # The ABI accepts the key but still validates (checked against a failing schema).
        raise Unsupported("--skip-schema-validation is not honoured by helm_install of libhelm_c 0.2.2")
    try:
        rel = json.loads(
            _native.call_string(
                "helm_install", config()._raw(), _native.HANDLE(0), chart._raw(), None, name,
                json.dumps(vals), json.dumps(opts),
            )
        )
    except hp.HelmError as e:
        msg = str(e)
        if msg.startswith("could not parse") and kube_version is not None:
            raise HelmError(f"invalid kube version '{kube_version}': {msg}") from None
        # RunWithContext returns the partial release with render errors (the kubeVersion check,
        # template execution, NOTES, the manifest sort); template.go then adds the --debug hint.
        if _returns_release(msg):
            msg += "\n\nUse --debug flag to render out invalid YAML"
        raise HelmError(msg) from None

    # The same chart handle, now processed by the install (disabled subcharts removed, imports
    # applied), rendered again for the hooks the ABI's release summary leaves out.
    render_opts = {"name": name, "namespace": namespace}
    if o["is_upgrade"] and (kube_version is not None or o["api_versions"]):
        raise Unsupported("--is-upgrade renders through helm_render, which has only the default Capabilities")
    if o["is_upgrade"]:
        render_opts.update({"is_upgrade": True, "is_install": False})
    files = json.loads(native("helm_render", chart._raw(), json.dumps(vals), json.dumps(render_opts)))
    hooks, generic = sort_manifests(files)
    manifest = rel.get("manifest") or ""
    if o["is_upgrade"]:
        manifest = format_manifests(generic)
    elif format_manifests(generic) != manifest:
        same_shape = [(m[0], m[1]) for m in generic] == [(m[0], m[1]) for m in _heads(manifest)]
        # Only hooks that will be printed need the render: with none, the output is the
        # install's alone and the difference does not matter.
        printed = [] if o["no_hooks"] else [h for h in hooks if not (o["skip_tests"] and "test" in h[3])]
        if printed and (strict or not same_shape):
            raise Unsupported(
                "the render used for hooks differs from the install's manifests (Capabilities "
                "or random functions): hooks cannot be reproduced"
            )
        if hooks:
            print("oracle: warning: install and render manifests differ (random functions?); hooks taken from the render", file=sys.stderr)

    crds = []
    if o["include_crds"]:
        crds = json.loads(native("helm_chart_crds", chart._raw()))

    if o["output_dir"]:
        # The manifests as renderResources holds them: the sorted documents, each exactly as
        # split (the self-check above proved them byte-identical to the install's manifest).
        return output_dir(o, name, crds, generic, hooks)

    big = "".join(f"---\n# Source: {c['filename']}\n{c['data']}\n" for c in crds) + manifest
    out = go_trim_space(big) + "\n"
    if not o["no_hooks"]:
        for h in hooks:
            if o["skip_tests"] and "test" in h[3]:
                continue
            out += f"---\n# Source: {h[0]}\n{h[2]}\n"
    if o["show_only"]:
        return show_only(out, o["show_only"]), []
    return out, []


def _heads(manifest: str):
    """(path, kind) of each `---\\n# Source: path\\n` document of a release manifest."""
    heads = []
    for doc in split_manifests(manifest):
        first, _, body = doc.partition("\n")
        path = first[len("# Source: "):]
        head = json.loads(native("helm_values_from_yaml", body))
        heads.append((path, head.get("kind") or "", body))
    return heads


def _returns_release(msg: str) -> bool:
    early = (
        "release name check failed",
        "chart dependencies processing failed",
        "values don't meet the specifications of the schema",
        "invalid install options",
    )
    return not any(msg.startswith(e) for e in early)


def show_only(rendered: str, patterns: list[str]) -> str:
    docs = split_manifests(rendered)
    rx = re.compile(r"# Source: [^/]+/(.+)")
    chosen = []
    for f in patterns:
        missing = True
        for doc in docs:
            m = rx.search(doc)
            if not m:
                continue
            if not go_path_match(f, m.group(1)):
                continue
            chosen.append(doc)
            missing = False
        if missing:
            raise HelmError(f"could not find template {f} in chart")
    return "".join(f"---\n{d}\n" for d in chosen)


def output_dir(o, name, crds, manifests, hooks):
    """--output-dir: renderResources' and template.go's writeToFile, emulated."""
    base = o["output_dir"]
    out = []
    written: dict[str, bool] = {}

    def write(directory, fname, data, append):
        path = directory + os.sep + fname
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a" if append else "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(f"---\n# Source: {fname}\n{data}\n")
        out.append(f"wrote {path}\n")

    for c in crds:
        write(base, c["filename"], c["data"], written.get(c["filename"], False))
        written[c["filename"]] = True
    mdir = os.path.join(base, name) if o["use_release_name"] else base
    for path, _kind, body in manifests:
        write(mdir, path, body, written.get(path, False))
        written[path] = True
    if not o["no_hooks"]:
        hook_written: dict[str, bool] = {}
        for h in hooks:
            if o["skip_tests"] and "test" in h[3]:
                continue
            if os.path.exists(os.path.join(mdir, h[0])):
                hook_written[h[0]] = True
            write(mdir, h[0], h[2], hook_written.get(h[0], False))
    out.append("\n")
    return "".join(out), []


def main(argv: list[str]) -> int:
    # Values may nest up to Go's JSON limit (10000): JSON decoding and merging recurse that deep.
    sys.setrecursionlimit(60000)
    strict = False
    if argv and argv[0] == "--strict":
        strict = True
        argv = argv[1:]
    try:
        o = parse_args(argv)
        out, _ = template(o, strict)
    except HelmError as e:
        _REAL_STDERR.write(f"Error: {e}\n")
        _REAL_STDERR.flush()
        return 1
    except Unsupported as e:
        _REAL_STDERR.write(f"oracle: cannot reproduce helm here: {e}\n")
        _REAL_STDERR.flush()
        return 2
    except Exception as e:  # a failure of the harness itself is never a Helm answer
        import traceback

        traceback.print_exc(file=_REAL_STDERR)
        _REAL_STDERR.write(f"oracle: internal failure: {e!r}\n")
        _REAL_STDERR.flush()
        return 2
    sys.stdout.buffer.write(out.encode("utf-8", errors="surrogateescape"))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
