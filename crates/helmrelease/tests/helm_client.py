#!/usr/bin/env python3
"""Helm 4 itself (its Go SDK, PyPI helm-python-sdk / libhelm_c) as a second client of a
cluster's release storage, for crates/helmrelease's interop tests.

Usage: helm_client.py KUBECONFIG NAMESPACE ACTION [ARGS...]

  list                          helm list --all (summaries)
  history NAME                  helm history NAME
  values NAME                   helm get values NAME
  status NAME                   helm status NAME
  rollback NAME REVISION [--force-conflicts]
                                helm rollback NAME REVISION, then the history
  install CHART_DIR NAME JSON   helm install NAME CHART_DIR with values JSON (no wait)
  upgrade CHART_DIR NAME JSON   helm upgrade NAME CHART_DIR with values JSON (no wait)
  uninstall NAME                helm uninstall NAME
  test NAME                     helm test NAME

Prints the SDK's answer as JSON on stdout (exit 0), or `Error: <message>` on stderr (exit 1).
"""

from __future__ import annotations

import json
import os
import sys

# Go writes its own logs to file descriptor 2; keep them apart from our error line.
_REAL_STDERR = os.fdopen(os.dup(2), "w", encoding="utf-8")
if os.environ.get("HELM_CLIENT_GO_STDERR") != "1":
    os.dup2(os.open(os.devnull, os.O_WRONLY), 2)

import helm_python as hp  # noqa: E402
from helm_python import _native  # noqa: E402


def main(argv: list[str]) -> int:
    kubeconfig, namespace, action, *args = argv
    with hp.Config(kubeconfig_path=kubeconfig, namespace=namespace) as cfg:
        if action == "list":
            out = cfg.list(all_states=True)
        elif action == "history":
            out = cfg.history(args[0])
        elif action == "values":
            out = cfg.get_values(args[0])
        elif action == "status":
            out = cfg.status(args[0])
        elif action == "rollback":
            opts = {"version": int(args[1])}
            if "--force-conflicts" in args[2:]:
                # Config.rollback does not pass this option of Helm's Rollback action; the
                # library's own call does.
                opts["force_conflicts"] = True
            _native.call_status("helm_rollback", cfg._raw(), args[0], json.dumps(opts))
            out = cfg.history(args[0])
        elif action == "install":
            out = cfg.install(args[0], args[1], json.loads(args[2]), namespace=namespace)
        elif action == "upgrade":
            out = cfg.upgrade(args[0], args[1], json.loads(args[2]), namespace=namespace)
        elif action == "uninstall":
            out = cfg.uninstall(args[0])
        elif action == "test":
            out = cfg.test(args[0], timeout=60)
        else:
            raise SystemExit(f"unknown action {action}")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except hp.HelmError as e:
        print(f"Error: {e}", file=_REAL_STDERR)
        sys.exit(1)
