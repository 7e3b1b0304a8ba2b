#!/usr/bin/env python3
"""Helm's own Go SDK (PyPI helm-python-sdk 0.2.2, libhelm_c, client-go inside) against a
devcluster: install, upgrade, rollback and uninstall of a chart, waiting as `--wait` does.

Usage: helm_lifecycle.py KUBECONFIG CHART_DIR RELEASE NAMESPACE [KIND/NAME...]

With HELM_LIFECYCLE_TEST=1 it also runs the chart's test hooks (`helm test`) after the install.

Run with the Helm oracle's venv (crates/helm/tests/oracle/venv, installed by ./test.sh). After
the install and after the uninstall it checks the listed objects (`Deployment/web`, ...) with the
SDK's view of the release manifest. Prints `ok <step>` per step; the first failure prints
`FAILED <step>: <why>` and exits 1.
"""

import os
import sys
import traceback

# Go writes its own warnings to file descriptor 2; keep them (they explain failures).
import helm_python as hp


def main(kubeconfig, chart, release, namespace, expected):
    step = "start"
    try:
        with hp.Config(kubeconfig_path=kubeconfig, namespace=namespace) as cfg:
            step = "install --wait"
            rel = cfg.install(chart, release, {}, create_namespace=True, wait="watcher", timeout=120)
            status = rel.get("info", {}).get("status") if isinstance(rel.get("info"), dict) else rel.get("status")
            assert status == "deployed", rel
            manifest = cfg.status(release).get("manifest", "")
            for obj in expected:
                kind, name = obj.split("/", 1)
                assert f"kind: {kind}" in manifest and f"name: {name}" in manifest, (obj, manifest)
            print("ok", step)

            step = "test hooks"
            if os.environ.get("HELM_LIFECYCLE_TEST") == "1":
                cfg.test(release, timeout=120)
            print("ok", step)

            step = "upgrade --wait"
            cfg.upgrade(chart, release, {"upgradedBy": "helm_lifecycle"}, wait="watcher", timeout=120)
            print("ok", step)

            step = "rollback to revision 1"
            cfg.rollback(release, version=1, wait="watcher", timeout=120)
            history = cfg.history(release)
            statuses = [h.get("status") or h.get("info", {}).get("status") for h in history]
            assert len(history) == 3 and statuses[-1] == "deployed", history
            print("ok", step)

            step = "uninstall --wait"
            cfg.uninstall(release, wait="watcher", timeout=120)
            assert not [r for r in cfg.list(all_states=True) if r.get("name") == release], cfg.list(all_states=True)
            print("ok", step)
    except Exception as e:  # noqa: BLE001 - any failure is the step's
        print(f"FAILED {step}: {type(e).__name__}: {e}")
        traceback.print_exc()
        return 1
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    sys.exit(main(args[0], os.path.abspath(args[1]), args[2], args[3], args[4:]))
