#!/usr/bin/env bash
# Builds ferroflux's container image without Docker and pushes it: umoci lays out the image
# described by image/Containerfile (FROM scratch, the binary at /ferroflux, user 65534, the OCI
# labels) and skopeo pushes it.
#
#   image/build.sh --image REGISTRY/REPO:TAG [--binary PATH] [--profile P] [--target-dir DIR]
#                  [--version V] [--revision R] [--insecure] [--allow-dynamic] [--layout DIR]
#
# Without --binary it builds the static binary first, for the host's glibc target with the C
# runtime linked in (Rust's crt-static; ring's and SQLite's C code is built by the system gcc):
#   RUSTFLAGS='-C target-feature=+crt-static' \
#     cargo build --locked -p ferroflux --profile P --target x86_64-unknown-linux-gnu
# in DIR (default: $CARGO_TARGET_DIR/static, else target/static), P being `release` unless
# --profile names another (the tests use `image-test`, tuned for build speed). Why glibc and
# not musl: the musl target comes from rustup (`rustup target add`), which a machine with only
# apt and crates.io cannot reach, while a static glibc needs nothing but libc6-dev; and glibc
# since 2.34 has its `files` and `dns` name services built in, so in an image with no
# /etc/nsswitch.conf (FROM scratch; Kubernetes mounts only /etc/hosts and /etc/resolv.conf) a
# name is resolved from /etc/hosts, then DNS, without loading any shared library. Another
# service named in an nsswitch.conf (mdns, systemd) would be loaded with dlopen and fail.
# A binary with a dynamic loader or shared libraries is refused (FROM scratch has no libc)
# unless --allow-dynamic is given. --insecure pushes over plain HTTP (a local registry).
# --layout keeps the OCI layout there instead of a temporary folder.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"

image="" binary="" version="" revision="" insecure=false allow_dynamic=false layout=""
profile=release target_dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    --image) image="$2"; shift 2 ;;
    --binary) binary="$2"; shift 2 ;;
    --version) version="$2"; shift 2 ;;
    --revision) revision="$2"; shift 2 ;;
    --insecure) insecure=true; shift ;;
    --allow-dynamic) allow_dynamic=true; shift ;;
    --layout) layout="$2"; shift 2 ;;
    --profile) profile="$2"; shift 2 ;;
    --target-dir) target_dir="$2"; shift 2 ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
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
  cargo="${CARGO:-cargo}"
  target="$("${RUSTC:-rustc}" -vV | sed -n 's/^host: //p')"
  case "$target" in
    x86_64-unknown-linux-gnu|aarch64-unknown-linux-gnu) ;;
    *) echo "build.sh: the static build is for a Linux glibc host (x86_64 or aarch64), not '$target'; pass --binary" >&2; exit 1 ;;
  esac
  [ -n "$target_dir" ] || target_dir="${CARGO_TARGET_DIR:-$root/target}/static"
  # Run from a test, this script inherits the variables cargo sets for the test's package;
  # ring's build script tracks CARGO_MANIFEST_DIR, so they would rebuild half the stack each
  # time the build is started from elsewhere.
  while read -r var; do unset "$var"; done < <(compgen -e | grep -E '^CARGO_(MANIFEST_|PKG_|CRATE_|BIN_|PRIMARY_PACKAGE|TARGET_TMPDIR)')
  # With --target, RUSTFLAGS reach only the target's crates: build scripts and proc macros
  # stay ordinary host programs.
  (cd "$root" && RUSTFLAGS="-C target-feature=+crt-static" "$cargo" build --locked -p ferroflux \
    --profile "$profile" --target "$target" --target-dir "$target_dir")
  case "$profile" in
    dev) dir=debug ;;
    *) dir="$profile" ;;
  esac
  binary="$target_dir/$target/$dir/ferroflux"
fi
[ -f "$binary" ] || { echo "build.sh: binary '$binary' not found" >&2; exit 1; }
if readelf -l "$binary" 2>/dev/null | grep -q 'Requesting program interpreter' \
  || readelf -d "$binary" 2>/dev/null | grep -q '(NEEDED)'; then
  if ! $allow_dynamic; then
    echo "build.sh: '$binary' is dynamically linked (it names a program interpreter or shared libraries); the image is FROM scratch and needs a static binary (build without --binary, or pass --allow-dynamic)" >&2
    exit 1
  fi
fi

case "$(readelf -h "$binary" | sed -n 's/^ *Machine: *//p')" in
  *X86-64*) arch=amd64 ;;
  AArch64) arch=arm64 ;;
  *) echo "build.sh: '$binary' is neither an x86-64 nor an AArch64 executable" >&2; exit 1 ;;
esac

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
  --os linux --architecture "$arch" \
  --config.user "$user" \
  --config.entrypoint /ferroflux --config.cmd controller \
  --clear=config.env \
  "${labels[@]}" >/dev/null
tls=()
$insecure && tls=(--dest-tls-verify=false)
skopeo copy -q "${tls[@]}" "oci:$layout:$tag" "docker://$image"
echo "pushed $image"
