#!/usr/bin/env bash
# Renders real charts with the oracle (Helm 4.2.3's engine, helm_template.py) and with
# `ferroflux helm template`, side by side, and reports identical/total with the differences.
#
# Usage: compare.sh CHARTS_DIR [OUT_DIR]
#   CHARTS_DIR holds one chart per directory (dependencies already in its charts/), and optionally
#   _values/<chart>.yaml: a values file rendered as a second run of that chart.
#   FERROFLUX (env) is the binary to test; default: target/debug/ferroflux of this checkout
#   ($CARGO_TARGET_DIR honoured).
# Every run uses the release name `rel` in namespace `default`. A run is identical when stdout and
# the exit status match, and for failures when the `Error:` lines match. Differences are written
# to OUT_DIR/<run>.diff (default OUT_DIR: a fresh temporary directory, printed at the end).
# Charts are never copied into the repository: they are public charts rendered side by side.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../../.." && pwd)"
py="$here/venv/bin/python"
[ -x "$py" ] || { echo "the oracle venv is missing: run ./test.sh" >&2; exit 1; }
charts="${1:?usage: compare.sh CHARTS_DIR [OUT_DIR]}"
charts="$(cd "$charts" && pwd)"
out="${2:-$(mktemp -d)}"
mkdir -p "$out"
ff="${FERROFLUX:-${CARGO_TARGET_DIR:-$root/target}/debug/ferroflux}"
[ -x "$ff" ] || { echo "no ferroflux binary at $ff (build it, or set FERROFLUX)" >&2; exit 1; }

same=0; random=0; total=0; report=()
# True when ferroflux's output has the oracle's line count and differs from it only on lines where
# a second oracle run differs from the first (randAlphaNum, genCA, now, ... in the chart).
random_only() {
  local name=$1; shift
  (cd "$charts" && env -u HELM_NAMESPACE -u KUBECONFIG "$py" "$here/helm_template.py" "$@") > "$out/$name.oracle2.out" 2>/dev/null
  python3 - "$out/$name.oracle.out" "$out/$name.oracle2.out" "$out/$name.ferroflux.out" <<'PY'
import sys
a, b, f = (open(p, encoding="utf-8", errors="replace").read().split("\n") for p in sys.argv[1:])
if len(a) != len(b) or len(a) != len(f) or a == b:
    sys.exit(1)
sys.exit(0 if all(x == z or x != y for x, y, z in zip(a, b, f)) else 1)
PY
}
run() { # name, args...
  local name=$1; shift
  (cd "$charts" && env -u HELM_NAMESPACE -u KUBECONFIG "$py" "$here/helm_template.py" "$@") > "$out/$name.oracle.out" 2> "$out/$name.oracle.err"
  local orc=$?
  if [ $orc -eq 2 ]; then report+=("$name: oracle cannot answer ($(head -1 "$out/$name.oracle.err"))"); return; fi
  (cd "$charts" && env -u HELM_NAMESPACE -u KUBECONFIG "$ff" helm template "$@") > "$out/$name.ferroflux.out" 2> "$out/$name.ferroflux.err"
  local frc=$?
  total=$((total + 1))
  sed -n '/^Error: /,$p' "$out/$name.oracle.err" > "$out/$name.oracle.msg"
  sed -n '/^Error: /,$p' "$out/$name.ferroflux.err" > "$out/$name.ferroflux.msg"
  if [ $orc -eq $frc ] && cmp -s "$out/$name.oracle.out" "$out/$name.ferroflux.out" && cmp -s "$out/$name.oracle.msg" "$out/$name.ferroflux.msg"; then
    same=$((same + 1)); report+=("$name: identical (exit $orc)")
  elif [ $orc -eq $frc ] && random_only "$name" "$@"; then
    random=$((random + 1)); report+=("$name: identical but for lines that differ between two oracle runs too (random functions)")
  else
    { echo "exit: oracle $orc, ferroflux $frc"
      diff -u "$out/$name.oracle.msg" "$out/$name.ferroflux.msg"
      diff -u "$out/$name.oracle.out" "$out/$name.ferroflux.out"; } > "$out/$name.diff"
    report+=("$name: DIFFERENT (exit oracle $orc, ferroflux $frc; $(grep -c '^[-+][^-+]' "$out/$name.diff") changed lines) -> $out/$name.diff")
  fi
}

for dir in "$charts"/*/; do
  c=$(basename "$dir")
  [ -f "$dir/Chart.yaml" ] || continue
  run "$c" rel "$c"
  [ -f "$charts/_values/$c.yaml" ] && run "$c+values" rel "$c" -f "_values/$c.yaml"
done
printf '%s\n' "${report[@]}"
echo "identical: $same/$total; identical but for random values: $random (outputs in $out)"
