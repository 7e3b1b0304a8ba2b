#!/usr/bin/env python3
"""The Helm side of issue 14's benchmark: every corpus run rendered by Helm's own engine in-process.

Usage: venv/bin/python bench.py [--repeat N] [--ferroflux BIN] [--baseline BIN] [CORPUS_DIR]

For each run (an `args` file, see ../corpus/README.md) the chart is loaded and the values merged
before the clock starts; the timed part is one `helm_install` dry-run (action.Install, what
`helm template` runs: dependencies, values, schema, render, sort) through libhelm_c. A fresh chart
handle is loaded for each repetition (the install processes the chart in place). The best of N
repetitions is reported per run, and the sum of those bests as the total; the process's CPU time
over the call (user + system of all its threads, Go's included) is summed the same way, the
steadier figure on a loaded machine. Runs that fail before
rendering (argument, values or chart-loading errors) are listed as skipped: Helm's engine never
runs for them. Hooks, --show-only and --output-dir are assembled by the CLI around this call and
are not part of the timing; rendering errors are timed like successes.

With --ferroflux BIN, each timed run is also run as `BIN helm template ARGS` in its case directory,
one process per run, process start included (the best of N wall-clock times), and the two totals
and their ratio are printed. Only runs Helm's side timed are counted on both sides. Processes are
started with posix_spawn (glibc's is a vfork-style clone), not subprocess.Popen, whose own Python
work per start would be counted against us.

With --baseline BIN (e.g. /bin/true), BIN is run the same way with the same arguments for every
timed run, so the cost of starting any process through this driver is printed beside ours.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time

sys.argv = sys.argv[:1] + sys.argv[1:]
import helm_template as ht  # noqa: E402  (redirects Go's stderr, loads libhelm_c)
from helm_python import _native  # noqa: E402


def runs(corpus: str):
    for case in sorted(os.listdir(corpus)):
        d = os.path.join(corpus, case)
        if not os.path.isdir(d):
            continue
        for f in sorted(os.listdir(d)):
            if f == "args" or f.endswith(".args"):
                with open(os.path.join(d, f), encoding="utf-8") as fh:
                    args = fh.read().split("\n")[:-1]
                name = case if f == "args" else f"{case}/{f[:-5]}"
                yield name, d, args


def prepare(d: str, args: list[str]):
    """Everything before Helm's engine: returns (chart_path, release, values_json, opts_json)."""
    o = ht.parse_args(["/tmp/bench-out" if a == "$OUT" else a for a in args])
    name, ref = ht.name_and_chart(o)
    cwd = os.getcwd()
    os.chdir(d)
    try:
        path = ht.locate_chart(ref)
        vals = ht.merge_values(o)
    finally:
        os.chdir(cwd)
    opts = {"dry_run": "client", "namespace": o["namespace"] or "default", "replace": True}
    if o["kube_version"]:
        opts["kube_version"] = o["kube_version"]
    if o["api_versions"]:
        opts["api_versions"] = o["api_versions"]
    return path, name, json.dumps(vals), json.dumps(opts)


def time_process(binary: str, d: str, args: list[str], repeat: int) -> tuple[float, float]:
    """Best wall-clock time and best CPU time (user + system, from wait4) of
    `binary helm template args` run in the case directory. The CPU time does not count the
    time spent waiting for a CPU, so it is the steadier figure on a loaded machine."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HELM_") and k != "KUBECONFIG"}
    devnull = [(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
               (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)]
    best = None
    best_cpu = None
    cwd = os.getcwd()
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as out:
            argv = [binary, "helm", "template"] + [out if a == "$OUT" else a for a in args]
            # posix_spawn has no working-directory action here: the driver moves itself (it is
            # single-threaded while it does; libhelm_c's Go threads are idle between calls).
            os.chdir(d)
            try:
                t0 = time.perf_counter()
                pid = os.posix_spawn(binary, argv, env, file_actions=devnull)
                _, _, usage = os.wait4(pid, 0)
                dt = time.perf_counter() - t0
            finally:
                os.chdir(cwd)
        cpu = usage.ru_utime + usage.ru_stime
        best = dt if best is None else min(best, dt)
        best_cpu = cpu if best_cpu is None else min(best_cpu, cpu)
    return best, best_cpu


def main() -> int:
    sys.setrecursionlimit(60000)  # as helm_template.main: 10000-deep values
    argv = sys.argv[1:]
    repeat = 5
    ferroflux = None
    baseline = None
    while argv[:1] in (["--repeat"], ["--ferroflux"], ["--baseline"]):
        if argv[0] == "--repeat":
            repeat = int(argv[1])
        elif argv[0] == "--ferroflux":
            ferroflux = os.path.abspath(argv[1])
        else:
            baseline = os.path.abspath(argv[1])
        argv = argv[2:]
    corpus = argv[0] if argv else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "corpus")
    cfg = ht.config()
    total = 0.0
    helm_cpu = 0.0
    ff_total = 0.0
    ff_cpu = 0.0
    base_total = 0.0
    base_cpu = 0.0
    timed = 0
    if ferroflux is not None:
        print("     helm  ferroflux  run")
    skipped = []
    for name, d, args in runs(corpus):
        try:
            path, rel, vals, opts = prepare(d, args)
            ht.load_chart(path).close()
        except (ht.HelmError, ht.Unsupported) as e:
            skipped.append((name, str(e).split("\n")[0]))
            continue
        best = None
        best_cpu = None
        for _ in range(repeat):
            chart = ht.load_chart(path)
            r0 = resource.getrusage(resource.RUSAGE_SELF)
            t0 = time.perf_counter()
            try:
                _native.call_string("helm_install", cfg._raw(), _native.HANDLE(0), chart._raw(), None, rel, vals, opts)
            except Exception:  # a rendering error is a render too
                pass
            dt = time.perf_counter() - t0
            r1 = resource.getrusage(resource.RUSAGE_SELF)
            chart.close()
            cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
            best = dt if best is None else min(best, dt)
            best_cpu = cpu if best_cpu is None else min(best_cpu, cpu)
        total += best
        helm_cpu += best_cpu
        timed += 1
        if ferroflux is None:
            print(f"{best * 1000:9.3f} ms  {name}")
            continue
        ours, cpu = time_process(ferroflux, d, args, repeat)
        ff_total += ours
        ff_cpu += cpu
        if baseline is not None:
            b, bc = time_process(baseline, d, args, repeat)
            base_total += b
            base_cpu += bc
        print(f"{best * 1000:9.3f} ms  {ours * 1000:9.3f} ms  (CPU {best_cpu * 1000:.3f} / {cpu * 1000:.3f} ms)  {name}")
    for name, why in skipped:
        print(f"  skipped  {name}: {why}")
    print(f"total: {total * 1000:.1f} ms over {timed} runs (best of {repeat} each; {len(skipped)} skipped); "
          f"CPU time {helm_cpu * 1000:.1f} ms")
    if ferroflux is not None:
        print(f"ferroflux total (one process per run): {ff_total * 1000:.1f} ms; "
              f"helm in-process / ferroflux = {total / ff_total:.2f}x")
        print(f"ferroflux CPU time (user + system, best of {repeat} per run): {ff_cpu * 1000:.1f} ms; "
              f"helm CPU / ferroflux CPU = {helm_cpu / ff_cpu:.2f}x")
        if baseline is not None:
            print(f"{baseline} through the same driver: {base_total * 1000:.1f} ms wall, "
                  f"{base_cpu * 1000:.1f} ms CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
