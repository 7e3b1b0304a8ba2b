#!/usr/bin/env bash
# Conformance on real repositories (issue 20): builds every kustomization directory of every
# repository checked out under REPOS with `kubectl kustomize --load-restrictor
# LoadRestrictionsNone` and with BUILD..., and compares them byte for byte (both failing counts as
# agreement). Prints "repo identical/total" per repository; differences are listed in
# OUT/report.txt, outputs kept under OUT/{kubectl,ours}/<repo>/. kubectl's outputs are cached.
# The repositories are public fleets run side by side, never committed.
#
#   real_repos.sh /tmp/repos /tmp/out ferroflux kustomize build --load-restrictor LoadRestrictionsNone
#
# BUILD is run as `BUILD DIR`, with the repository's root in $REPO_ROOT.
set -u
repos=$1; out=$2; shift 2
for r in "$repos"/*/; do
  rn=$(basename "$r"); same=0; total=0
  mkdir -p "$out/kubectl/$rn" "$out/ours/$rn"
  while read -r d; do
    rel=${d#$r}; [ -z "$rel" ] && rel=.
    key=$(echo "$rel" | sed 's#/#__#g')
    k="$out/kubectl/$rn/$key"; o="$out/ours/$rn/$key"
    [ -f "$k.rc" ] || { kubectl kustomize --load-restrictor LoadRestrictionsNone "$d" < /dev/null > "$k.out" 2> "$k.err"; echo $? > "$k.rc"; }
    REPO_ROOT="$r" "$@" "$d" < /dev/null > "$o.out" 2> "$o.err"; echo $? > "$o.rc"
    total=$((total+1))
    if [ "$(cat "$k.rc")" = 0 ] && [ "$(cat "$o.rc")" = 0 ]; then cmp -s "$k.out" "$o.out" && same=$((same+1)) || echo "DIFF $rn $rel" >> "$out/report.txt"
    elif [ "$(cat "$k.rc")" != 0 ] && [ "$(cat "$o.rc")" != 0 ]; then same=$((same+1))
    else echo "RC $rn $rel kubectl=$(cat "$k.rc") ours=$(cat "$o.rc")" >> "$out/report.txt"; fi
  done < <(find "$r" \( -name kustomization.yaml -o -name kustomization.yml -o -name Kustomization \) -not -path '*/.git/*' -printf '%h\n' | sort -u)
  echo "$rn $same/$total"
done
