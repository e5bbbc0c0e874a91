# celcost: `just` lists the recipes.

set shell := ["bash", "-euo", "pipefail", "-c"]

image := env("CELCOST_IMAGE", "celcost:latest")

[doc('List the recipes')]
default:
    @just --list

[group('build')]
[doc('Build the CLI and operator (debug)')]
build:
    cargo build

[group('build')]
[doc('Write crds/costreport.yaml from the Rust types, and its copy in the Helm chart (CI fails when either drifts)')]
generate:
    cargo run --quiet -- crd > crds/costreport.yaml
    cp crds/costreport.yaml charts/celcost/crds/costreport.yaml

[group('build')]
[doc('Install celcost (cargo install --locked) and the same binary as kubectl-celcost, the kubectl plugin (`kubectl celcost estimate …`)')]
install:
    cargo install --locked --path .
    bin="${CARGO_INSTALL_ROOT:-${CARGO_HOME:-$HOME/.cargo}}/bin"; ln -sf celcost "$bin/kubectl-celcost" && echo "installed $bin/celcost and $bin/kubectl-celcost"

[group('dev')]
[doc('Format the code')]
fmt:
    cargo fmt --all

[group('dev')]
[doc('Clippy with warnings as errors, as CI runs it')]
lint:
    cargo fmt --all -- --check
    cargo clippy --all-targets -- -D warnings

[group('dev')]
[doc('Run the operator locally against the cluster in KUBECONFIG (installs the CRD first; leader election and the webhook are off outside a pod)')]
run *ARGS:
    cargo run -- crd | kubectl apply -f -
    RUST_LOG=${RUST_LOG:-info,celcost=debug} cargo run -- controller --listen-address 127.0.0.1:8080 --metrics-bind-address 127.0.0.1:8443 {{ARGS}}

[group('test')]
[doc('Unit, mock-API-server and CRD drift tests (no cluster)')]
test:
    cargo test

[group('test')]
[doc('The e2e suite against the API server in KUBECONFIG (skips without one)')]
e2e:
    e2e/run.sh

[group('test')]
[doc('The in-cluster suite: the image on the node of ../shared/k8s/cluster.sh up --node, installed with kubectl apply -k')]
e2e-in-cluster:
    e2e/in-cluster.sh

[group('test')]
[doc('Every ignored (cluster) test, including the scale benchmark')]
test-integration:
    cargo test --release -- --ignored --test-threads=1 --nocapture

[group('test')]
[doc('Scale benchmark: 2,000 renamed corpus CRDs, operator cold start (CELCOST_SCALE_COUNT)')]
bench-scale:
    cargo test --release --test controller_e2e scale_cold_start -- --ignored --nocapture

[group('test')]
[doc('Coverage-guided fuzzing (cargo-fuzz, libFuzzer, stable): SECONDS per target, seeded from ../shared/corpus (fuzz/run.sh; docs/hostile-input.md)')]
fuzz SECONDS="60" *TARGETS:
    fuzz/run.sh {{SECONDS}} {{TARGETS}}

[group('deploy')]
[doc('Build the container image: docker build where a Docker engine runs, else hack/image.sh (an OCI archive, no daemon)')]
image:
    if docker info >/dev/null 2>&1; then docker build -t {{image}} .; else hack/image.sh -o target/celcost-image.tar {{image}} && echo "no Docker engine: target/celcost-image.tar (podman load -i, ctr -n k8s.io images import, or cluster.sh load-image)"; fi

[group('deploy')]
[doc('Install the CRD, namespace, RBAC and Deployment into the cluster in KUBECONFIG')]
deploy:
    kubectl apply -k config/default

[group('deploy')]
[doc('The same install with Helm: the chart charts/celcost, release celcost in celcost-system')]
deploy-helm *ARGS:
    helm install celcost charts/celcost -n celcost-system --create-namespace {{ARGS}}
