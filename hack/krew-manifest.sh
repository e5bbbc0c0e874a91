#!/usr/bin/env bash
# hack/krew-manifest.sh [--repo OWNER/NAME] DIST
#
# The krew plugin manifest (plugins/celcost.yaml of krew-index) of a release, on standard output:
# one platform per archive of DIST (hack/release-archive.sh: linux and darwin, amd64 and arm64),
# each with its GitHub release URL and sha256. krew installs `celcost` from the archive and links
# it as `kubectl-celcost`, which kubectl runs for `kubectl celcost …`. The repository defaults to
# $GITHUB_REPOSITORY (set in a release workflow); VERSION is Cargo.toml's. A missing archive is an
# error.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=${GITHUB_REPOSITORY:-}
if [ "${1:-}" = --repo ]; then repo=${2:?--repo OWNER/NAME}; shift 2; fi
dist=${1:?usage: hack/krew-manifest.sh [--repo OWNER/NAME] DIST}
[ -n "$repo" ] || { echo "krew-manifest: --repo OWNER/NAME (or GITHUB_REPOSITORY)" >&2; exit 1; }
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
sha256() { if command -v sha256sum >/dev/null; then sha256sum "$1"; else shasum -a 256 "$1"; fi | cut -d' ' -f1; }

cat <<YAML
apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: celcost
spec:
  version: v$version
  homepage: https://github.com/$repo
  shortDescription: CEL cost estimates of CRDs and admission policies
  description: |
    The Kubernetes API server's own CEL cost estimates, to the unit, for the
    x-kubernetes-validations rules of CustomResourceDefinitions and for
    ValidatingAdmissionPolicies and MutatingAdmissionPolicies: which rule the API
    server refuses for its cost, which is near the limit, and the bounds that fix it.
    Reads files, standard input (kubectl celcost estimate -) or the cluster itself
    (kubectl celcost estimate --cluster: its CRDs judged by its minor and the next).
  platforms:
YAML
for t in x86_64-unknown-linux-gnu:linux:amd64 aarch64-unknown-linux-gnu:linux:arm64 \
         x86_64-apple-darwin:darwin:amd64 aarch64-apple-darwin:darwin:arm64; do
  IFS=: read -r target os arch <<<"$t"
  archive=celcost-v$version-$target.tar.gz
  [ -f "$dist/$archive" ] || { echo "krew-manifest: no $archive in $dist (hack/release-archive.sh $target)" >&2; exit 1; }
  cat <<YAML
  - selector:
      matchLabels:
        os: $os
        arch: $arch
    uri: https://github.com/$repo/releases/download/v$version/$archive
    sha256: $(sha256 "$dist/$archive")
    files:
    - from: celcost
      to: .
    - from: README.md
      to: .
    bin: celcost
YAML
done
