#!/usr/bin/env python3
"""Regenerates the expected outputs of crates/gotemplate/tests/cases.txt with Helm's own engine.

Usage: PYTHON-WITH-helm-python-sdk render.py [cases.txt]   (pip install helm-python-sdk==0.2.2)

Each case marked `[helm]` is rendered as the only template of a tiny chart
(`chart/templates/t.yaml`, the case's values as values.yaml) through libhelm_c's `helm_render`
(Helm 4.2.3's engine: Go's text/template with missingkey=zero and Helm's function map). Its
`---- want` section is replaced with Helm's output, or its `---- error` section with Go's error
text recovered from Helm's reformatted message (Helm rewrites `template: LOC: executing "N" at
<C>: MSG` as `LOC\n  executing "N" at <C>:\n    MSG`, and parse errors `template: LOC: MSG` as
`parse error at (LOC): MSG`, keeping only the text after the last ": " of Go's message, so a
parse error whose Go text has ": " in it, like `bad number syntax: "3k"`, is a `[go]` case). Cases marked `[go]` are written by hand from Go's documented
behaviour (Helm cannot run them: other missingkey modes, `<no value>` printing) and left alone.
"""

import json
import os
import re
import sys
import tempfile

import helm_python as hp
from helm_python import _native

HEADER = re.compile(r"^#### (?P<name>\S+) \[(?P<mode>helm|go(?::\w+)?)\]$")


def parse_cases(text):
    cases, cur, section = [], None, None
    for line in text.split("\n"):
        m = HEADER.match(line)
        if m:
            cur = {"name": m["name"], "mode": m["mode"], "sections": {"template": []}, "order": ["template"]}
            cases.append(cur)
            section = "template"
            continue
        if cur is not None and line.startswith("---- "):
            section = line[5:].strip()
            cur["sections"][section] = []
            cur["order"].append(section)
            continue
        if cur is not None:
            cur["sections"][section].append(line)
    return cases


def body(case, name):
    lines = case["sections"].get(name)
    if lines is None:
        return None
    return "\n".join(lines).removesuffix("\n")


def go_error(msg):
    msg = msg.removeprefix("Error: ")
    if msg.startswith("template: ") and "\n" not in msg:
        return msg  # Helm passed Go's text through unchanged.
    m = re.match(r"^parse error at \((?P<loc>[^)]*)\): (?P<rest>.*)$", msg, re.S)
    if m:
        return f"template: {m['loc']}: {m['rest']}"
    lines = msg.split("\n")
    if len(lines) == 3 and lines[1].startswith("  executing ") and lines[1].endswith(":"):
        return f"template: {lines[0]}: {lines[1].strip()[:-1]}: {lines[2].strip()}"
    return None


def render(case):
    with tempfile.TemporaryDirectory() as d:
        root = os.path.join(d, "chart")
        os.makedirs(os.path.join(root, "templates"))
        with open(os.path.join(root, "Chart.yaml"), "w") as f:
            f.write("apiVersion: v2\nname: chart\nversion: 0.1.0\n")
        values = body(case, "values") or "{}"
        with open(os.path.join(root, "values.yaml"), "w", encoding="utf-8") as f:
            f.write(json.dumps(json.loads(values), ensure_ascii=False))
        with open(os.path.join(root, "templates", "t.yaml"), "w", encoding="utf-8") as f:
            f.write(body(case, "template"))
        chart = hp.Chart.load(root)
        opts = {"name": "release-name", "namespace": "default"}
        try:
            files = json.loads(_native.call_string("helm_render", chart._raw(), "{}", json.dumps(opts)))
        except hp.HelmError as e:
            return None, str(e)
        return files.get("chart/templates/t.yaml", ""), None


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "cases.txt")
    text = open(path).read()
    cases = parse_cases(text)
    out = []
    for case in cases:
        if case["mode"] == "helm":
            got, err = render(case)
            secs = case["sections"]
            for k in ("want", "error"):
                if k in secs:
                    del secs[k]
                    case["order"].remove(k)
            if err is None:
                secs["want"] = got.split("\n") + [""]
                case["order"].append("want")
            else:
                ge = go_error(err)
                if ge is None:
                    print(f"{case['name']}: Helm's error is not in a form Go's can be recovered from:\n{err}", file=sys.stderr)
                    ge = "UNRECOVERABLE: " + err.replace("\n", "\\n")
                secs["error"] = [ge, ""]
                case["order"].append("error")
        out.append(f"#### {case['name']} [{case['mode']}]")
        for i, s in enumerate(case["order"]):
            if i > 0:
                out.append(f"---- {s}")
            out.extend(case["sections"][s])
    result = "\n".join(out)
    if not result.endswith("\n"):
        result += "\n"
    open(path, "w").write(result)


if __name__ == "__main__":
    main()
