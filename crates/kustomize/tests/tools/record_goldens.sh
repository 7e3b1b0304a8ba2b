#!/usr/bin/env bash
# Records every corpus golden from kubectl kustomize (the oracle).
set -euo pipefail
cd "$(dirname "$0")/../corpus"
for d in */; do
  d=${d%/}
  b=.
  [ -f "$d/BUILD" ] && b=$(cat "$d/BUILD")
  kubectl kustomize "$d/$b" > "$d/expected.yaml"
done
