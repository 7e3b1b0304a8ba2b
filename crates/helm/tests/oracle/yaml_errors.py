#!/usr/bin/env python3
"""Records go-yaml's error texts (as Helm 4.2.3 reads a values document) for the inputs of
../yaml-errors.json, rewriting each entry's "err" (or "ok") in place. The unit test of
src/goyamlerr.rs compares our wording with these records.

Usage: venv/bin/python yaml_errors.py
"""

import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.argv = sys.argv[:1]
import helm_template as ht  # noqa: E402  (loads libhelm_c)

path = os.path.join(here, "..", "yaml-errors.json")
with open(path, encoding="utf-8") as f:
    cases = json.load(f)
out = []
for c in cases:
    entry = {"in": c["in"]}
    try:
        entry["ok"] = ht.native("helm_values_from_yaml", c["in"])
    except ht.HelmError as e:
        entry["err"] = str(e)
    out.append(entry)
with open(path, "w", encoding="utf-8") as f:
    json.dump(out, f, indent=1, ensure_ascii=False)
    f.write("\n")
