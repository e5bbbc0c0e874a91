#!/usr/bin/env bash
# The in-cluster suite (tests/controller_e2e/in_cluster.rs): the operator's image deployed with
# `kubectl apply -k` of an overlay of config/default, checked as a user would. Needs a cluster
# whose node runs pods (../shared/k8s/cluster.sh up --node) in KUBECONFIG.
#
# The image: CELCOST_E2E_IMAGE when set (already on the node); else the release binary is built
# and packed by hack/image.sh as localhost/celcost:e2e-<digest of the binary> (a new tag for a
# new binary, so `kubectl apply` rolls the pods) and imported with `$CELCOST_K8S/cluster.sh
# load-image` (CELCOST_K8S defaults to ../shared/k8s).
# helm-lite (Helm v4's own install and uninstall, for the test that installs the chart,
# s8h_): the one on PATH, else decompressed from $CELCOST_HELM/bin/helm-lite.xz (CELCOST_HELM
# defaults to ../shared/helm) into target/helm-lite/.
# Without a reachable API server: SKIPPED, or a failure with CELCOST_E2E_REQUIRE_CLUSTER=1.
set -euo pipefail
cd "$(dirname "$0")/.."
K=${CELCOST_K8S:-../shared/k8s}
if ! kubectl version --request-timeout=5s >/dev/null 2>&1; then
  if [ "${CELCOST_E2E_REQUIRE_CLUSTER:-}" = 1 ]; then
    echo "in-cluster: no reachable API server (KUBECONFIG=${KUBECONFIG:-unset})" >&2
    exit 1
  fi
  echo "SKIPPED: no reachable API server (KUBECONFIG=${KUBECONFIG:-unset})"
  exit 0
fi
if [ -z "${CELCOST_E2E_IMAGE:-}" ]; then
  cargo build --release --locked --features system-allocator --bin celcost
  digest=$(sha256sum target/release/celcost | cut -c1-12)
  export CELCOST_E2E_IMAGE=localhost/celcost:e2e-$digest
  hack/image.sh --binary target/release/celcost -o target/celcost-image.tar "$CELCOST_E2E_IMAGE"
  "$K/cluster.sh" load-image target/celcost-image.tar
fi
echo "in-cluster: image $CELCOST_E2E_IMAGE"
HELM_KIT=${CELCOST_HELM:-../shared/helm}
if ! command -v helm-lite >/dev/null 2>&1 && [ -f "$HELM_KIT/bin/helm-lite.xz" ]; then
  mkdir -p target/helm-lite
  xz -dc "$HELM_KIT/bin/helm-lite.xz" > target/helm-lite/helm-lite
  chmod +x target/helm-lite/helm-lite
  export PATH=$PWD/target/helm-lite:$PATH
fi
echo "in-cluster: $(command -v helm-lite || echo 'no helm-lite: the Helm install test is skipped')"
cargo test --locked --test controller_e2e "${CELCOST_IN_CLUSTER_FILTER:-in_cluster::}" -- --ignored --test-threads=1 --nocapture
