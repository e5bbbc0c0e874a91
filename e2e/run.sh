#!/usr/bin/env bash
# Runs the e2e suite against the cluster in KUBECONFIG (see e2e/README.md).
# Usage: e2e/run.sh [--scale]
set -euo pipefail
cd "$(dirname "$0")/.."
if ! kubectl version --request-timeout=5s >/dev/null 2>&1; then
  echo "SKIPPED: no reachable API server (KUBECONFIG=${KUBECONFIG:-unset})"
  exit 0
fi
cargo test --test controller_e2e -- --ignored --test-threads=1 --nocapture --skip scale_cold_start
if [ "${1:-}" = --scale ]; then
  cargo test --release --test controller_e2e scale_cold_start -- --ignored --nocapture
fi
