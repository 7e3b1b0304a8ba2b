#!/usr/bin/env python3
"""Writes ../src/protobuf/messages.txt: the field table of every Kubernetes message the
devcluster decodes from protobuf, read from the `generated.proto` files of a Kubernetes release.

Usage: generate.py API_CHECKOUT APIMACHINERY_CHECKOUT TAG > ../src/protobuf/messages.txt

API_CHECKOUT and APIMACHINERY_CHECKOUT are git clones of github.com/kubernetes/api and
github.com/kubernetes/apimachinery (not kept in this repository); TAG is the release whose
messages the server speaks (v0.33.x for Kubernetes 1.33). Only names, numbers and types are taken:
the table is the wire contract, nothing else of those files.

The table format (read by src/protobuf/schema.rs), one line each:
    M <full message name> [wrapper]         a message; `wrapper` when JSON shows its one
                                            repeated field `items` as a bare array
    <number> <json name> <o|r|m> <type> [k] a field: optional, repeated, or map<string, type>;
                                            `k` when its JSON keeps a zero value (a pointer,
                                            or a field without omitempty)
where <type> is a scalar (string bytes bool int32 int64 uint32 uint64 double float) or a full
message name.
"""

import re
import subprocess
import sys

API_FILES = [
    "core/v1", "apps/v1", "batch/v1", "autoscaling/v1", "autoscaling/v2", "networking/v1",
    "policy/v1", "rbac/v1", "storage/v1", "scheduling/v1", "coordination/v1", "discovery/v1",
    "events/v1", "admissionregistration/v1", "certificates/v1", "flowcontrol/v1", "node/v1",
    "authentication/v1", "authorization/v1",
]
MACHINERY_FILES = [
    "pkg/apis/meta/v1", "pkg/runtime", "pkg/runtime/schema", "pkg/util/intstr", "pkg/api/resource",
]
SCALARS = {"string", "bytes", "bool", "int32", "int64", "uint32", "uint64", "double", "float"}

FIELD = re.compile(r"^\s*(optional|repeated)\s+(\S+)\s+(\w+)\s*=\s*(\d+)\s*;")
MAP = re.compile(r"^\s*map<\s*string\s*,\s*(\S+)\s*>\s+(\w+)\s*=\s*(\d+)\s*;")


def show(repo, tag, path):
    return subprocess.run(["git", "-C", repo, "show", f"{tag}:{path}/generated.proto"],
                          check=True, capture_output=True, text=True).stdout


def json_names(repo, tag, path):
    """(Go struct, proto field name) -> JSON name, from the struct tags of the package's Go files:
    a few proto names differ from the JSON ones (`Webhooks`, `Expression`)."""
    names = {}
    files = subprocess.run(["git", "-C", repo, "ls-tree", "--name-only", f"{tag}:{path}"],
                           check=True, capture_output=True, text=True).stdout.split()
    for f in files:
        if not f.endswith(".go") or f.endswith("_test.go") or f.startswith("zz_") or f == "generated.pb.go":
            continue
        src = subprocess.run(["git", "-C", repo, "show", f"{tag}:{path}/{f}"],
                             check=True, capture_output=True, text=True).stdout
        struct = None
        for line in src.splitlines():
            m = re.match(r"^type\s+(\w+)\s+struct\s*\{", line)
            if m:
                struct = m.group(1)
                continue
            if line.startswith("}"):
                struct = None
            if struct is None:
                continue
            pm = re.search(r'protobuf:"[^"]*name=(\w+)', line)
            jm = re.search(r'json:"([^",]*)([^"]*)"', line)
            tm = re.match(r"^\s*\w+\s+(\S+)\s+`", line)
            if pm and jm and jm.group(1):
                # Go's JSON shows a zero value when the field is a pointer or not omitempty.
                keep = bool(tm) and (tm.group(1).startswith("*") or "omitempty" not in jm.group(2))
                names[(struct, pm.group(1))] = (jm.group(1), keep)
    return names


def parse(text, out, names):
    package = re.search(r"^package\s+([\w.]+);", text, re.M).group(1)

    def qualify(t):
        if t in SCALARS:
            return t
        if t.startswith("."):
            return t[1:]
        return f"{package}.{t}"

    current, struct, wrapper = None, None, False
    for line in text.splitlines():
        if "+protobuf.nullable=true" in line:
            wrapper = True
        m = re.match(r"^message\s+(\w+)\s*\{", line)
        if m:
            struct = m.group(1)
            current = f"{package}.{struct}"
            out.append(f"M {current}" + (" wrapper" if wrapper else ""))
            wrapper = False
            continue
        if line.startswith("}"):
            current = None
            continue
        if current is None:
            continue
        m = MAP.match(line)
        if m:
            json, _ = names.get((struct, m.group(2)), (m.group(2), False))
            out.append(f"{m.group(3)} {json} m {qualify(m.group(1))}")
            continue
        m = FIELD.match(line)
        if m:
            card = "o" if m.group(1) == "optional" else "r"
            json, keep = names.get((struct, m.group(3)), (m.group(3), False))
            flag = " k" if keep and card == "o" and m.group(2) in SCALARS else ""
            out.append(f"{m.group(4)} {json} {card} {qualify(m.group(2))}{flag}")


def main():
    api, machinery, tag = sys.argv[1:4]
    out = [f"# Kubernetes protobuf messages of k8s.io/api and k8s.io/apimachinery {tag}, generated by protogen/generate.py"]
    for repo, paths in ((machinery, MACHINERY_FILES), (api, API_FILES)):
        for f in paths:
            parse(show(repo, tag, f), out, json_names(repo, tag, f))
    print("\n".join(out))


main()
