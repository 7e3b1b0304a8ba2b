#!/usr/bin/env bash
# Builds ferroflux's container image without Docker and pushes it: umoci lays out the image
# described by image/Containerfile (FROM scratch, the binary at /ferroflux, user 65534, the OCI
# labels) and skopeo pushes it.
#
#   image/build.sh --image REGISTRY/REPO:TAG [--binary PATH] [--version V] [--revision R]
#                  [--insecure] [--allow-dynamic] [--layout DIR]
#
# Without --binary it builds the static release binary first, against musl (a glibc binary
# linked statically still loads its DNS resolver as a shared library at run time, which an
# image FROM scratch does not have):
#   cargo build --release --locked -p ferroflux --target x86_64-unknown-linux-musl
# which needs `rustup target add x86_64-unknown-linux-musl` and a musl C compiler for ring and
# SQLite (`apt-get install musl-tools`).
# A binary with a dynamic loader is refused (FROM scratch has no libc) unless --allow-dynamic
# is given (tests packaging the debug binary they already built). --insecure pushes over plain
# HTTP (a local registry). --layout keeps the OCI layout there instead of a temporary folder.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"

image="" binary="" version="" revision="" insecure=false allow_dynamic=false layout=""
while [ $# -gt 0 ]; do
  case "$1" in
    --image) image="$2"; shift 2 ;;
    --binary) binary="$2"; shift 2 ;;
    --version) version="$2"; shift 2 ;;
    --revision) revision="$2"; shift 2 ;;
    --insecure) insecure=true; shift ;;
    --allow-dynamic) allow_dynamic=true; shift ;;
    --layout) layout="$2"; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "build.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$image" ] || { echo "build.sh: --image REGISTRY/REPO:TAG is required" >&2; exit 2; }
for tool in umoci skopeo readelf; do
  command -v "$tool" >/dev/null || { echo "build.sh: '$tool' is missing (apt-get install umoci skopeo binutils)" >&2; exit 1; }
done
[ -n "$version" ] || version="${image##*:}"
[ -n "$revision" ] || revision="$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)"

if [ -z "$binary" ]; then
  target=x86_64-unknown-linux-musl
  if command -v rustup >/dev/null && ! rustup target list --installed | grep -qx "$target"; then
    echo "build.sh: the Rust target $target is missing (rustup target add $target)" >&2
    exit 1
  fi
  command -v musl-gcc >/dev/null || { echo "build.sh: 'musl-gcc' is missing (apt-get install musl-tools)" >&2; exit 1; }
  target_dir="${CARGO_TARGET_DIR:-$root/target}"
  (cd "$root" && cargo build --release --locked -p ferroflux --target "$target")
  binary="$target_dir/$target/release/ferroflux"
fi
[ -f "$binary" ] || { echo "build.sh: binary '$binary' not found" >&2; exit 1; }
if readelf -l "$binary" 2>/dev/null | grep -q 'Requesting program interpreter'; then
  if ! $allow_dynamic; then
    echo "build.sh: '$binary' is dynamically linked (it names a program interpreter); the image is FROM scratch and needs a static binary (build without --binary, or pass --allow-dynamic)" >&2
    exit 1
  fi
fi

# The values image/Containerfile states; the test compares the pushed config with that file.
containerfile="$here/Containerfile"
user="$(sed -n 's/^USER //p' "$containerfile")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
[ -n "$layout" ] || layout="$work/layout"
tag="ferroflux"
rm -rf "$layout"
umoci init --layout "$layout"
umoci new --image "$layout:$tag"
umoci unpack --rootless --image "$layout:$tag" "$work/bundle" >/dev/null
install -m 0755 "$binary" "$work/bundle/rootfs/ferroflux"
umoci repack --image "$layout:$tag" "$work/bundle"
labels=()
while IFS= read -r kv; do
  key="${kv%%=*}" value="${kv#*=}"
  value="${value//\$\{VERSION\}/$version}"
  value="${value//\$\{REVISION\}/$revision}"
  labels+=(--config.label "$key=$value")
done < <(sed -n '/^LABEL /,/[^\\]$/p' "$containerfile" | sed -e 's/^LABEL //' -e 's/\\$//' \
  | sed -E 's/^ +//; s/ +$//; s/="(.*)"$/=\1/')
umoci config --image "$layout:$tag" \
  --os linux --architecture amd64 \
  --config.user "$user" \
  --config.entrypoint /ferroflux --config.cmd controller \
  --clear=config.env \
  "${labels[@]}" >/dev/null
tls=()
$insecure && tls=(--dest-tls-verify=false)
skopeo copy -q "${tls[@]}" "oci:$layout:$tag" "docker://$image"
echo "pushed $image"
