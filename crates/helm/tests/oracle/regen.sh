#!/usr/bin/env bash
# Regenerates every expectation of the Helm corpus (../corpus) with the oracle: Helm v4.2.3's Go
# engine through libhelm_c (helm_template.py). Needs the venv ./test.sh installs.
# Usage: regen.sh [case...]   (default: every case)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
py="$here/venv/bin/python"
[ -x "$py" ] || { echo "the oracle venv is missing: run ./test.sh (or: python3 -m venv $here/venv && $here/venv/bin/pip install helm-python-sdk==0.2.2)" >&2; exit 1; }
cd "$here/../corpus"
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(*/)
status=0
for c in "${cases[@]}"; do
  c=${c%/}
  for argsfile in "$c"/args "$c"/*.args; do
    [ -f "$argsfile" ] || continue
    base=$(basename "$argsfile")
    if [ "$base" = args ]; then pre=""; else pre="${base%.args}."; fi
    mapfile -t args < "$argsfile"
    out=""
    for i in "${!args[@]}"; do
      if [ "${args[$i]}" = '$OUT' ]; then
        out=$(mktemp -d); args[$i]="$out"
      fi
    done
    rm -f "$c/${pre}expected.yaml" "$c/${pre}expected-error.txt"
    rm -rf "$c/${pre}expected-out"
    set +e
    (cd "$c" && env -u HELM_NAMESPACE -u KUBECONFIG "$py" "$here/helm_template.py" --strict "${args[@]}") > /tmp/helm-oracle.$$.out 2> /tmp/helm-oracle.$$.err
    rc=$?
    set -e
    case $rc in
      0)
        if [ -n "$out" ]; then
          sed "s#$out#\$OUT#g" /tmp/helm-oracle.$$.out > "$c/${pre}expected.yaml"
          cp -r "$out" "$c/${pre}expected-out"
        else
          cp /tmp/helm-oracle.$$.out "$c/${pre}expected.yaml"
        fi ;;
      1) cp /tmp/helm-oracle.$$.err "$c/${pre}expected-error.txt" ;;
      *) echo "$argsfile: the oracle cannot answer:" >&2; cat /tmp/helm-oracle.$$.err >&2; status=1 ;;
    esac
    [ -z "$out" ] || rm -rf "$out"
    echo "$argsfile: exit $rc" >&2
  done
done
rm -f /tmp/helm-oracle.$$.out /tmp/helm-oracle.$$.err
exit $status
