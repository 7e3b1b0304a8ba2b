#!/usr/bin/env bash
# Runs every test of the workspace. Installs what the tests need when it is missing, so a fresh
# machine needs nothing but this script.
set -euo pipefail
cd "$(dirname "$0")"

need_apt=()
have() { command -v "$1" >/dev/null 2>&1; }
# --- tools the tests use (each section names the crate that needs it) ---
have git || need_apt+=(git)
have kubectl || { echo "kubectl is required (the tests use it as the Kubernetes client and kustomize oracle)" >&2; exit 1; }

if [ ${#need_apt[@]} -gt 0 ]; then
  echo "installing: ${need_apt[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
fi
have cargo || { echo "cargo is required: install Rust with rustup" >&2; exit 1; }

cargo test --workspace "$@"
