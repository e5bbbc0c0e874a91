#!/usr/bin/env bash
# hack/release-archive.sh [--name-only] TARGET [BINARY] [OUTDIR]
#
# The release archive of celcost for a Rust target triple: OUTDIR/celcost-vVERSION-TARGET.tar.gz
# (default OUTDIR target/dist) with the binary `celcost` at its root (BINARY, default
# target/TARGET/release/celcost) and README.md, and beside it its sha256 (`….tar.gz.sha256`,
# as `sha256sum` prints it). What the GitHub Action (action.yml) downloads, `cargo binstall` finds
# ([package.metadata.binstall] in Cargo.toml) and hack/krew-manifest.sh lists; VERSION is
# Cargo.toml's. --name-only prints the archive's name and makes nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
name_only=false
if [ "${1:-}" = --name-only ]; then name_only=true; shift; fi
target=${1:?usage: hack/release-archive.sh [--name-only] TARGET [BINARY] [OUTDIR]}
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
archive="celcost-v$version-$target.tar.gz"
if $name_only; then echo "$archive"; exit 0; fi
binary=${2:-target/$target/release/celcost}
out=${3:-target/dist}
[ -x "$binary" ] || { echo "release-archive: no binary at $binary (cargo build --release --locked --target $target)" >&2; exit 1; }
mkdir -p "$out"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cp "$binary" "$stage/celcost"
cp README.md "$stage/"
tar -C "$stage" -czf "$out/$archive" celcost README.md
(cd "$out" && if command -v sha256sum >/dev/null; then sha256sum "$archive"; else shasum -a 256 "$archive"; fi) >"$out/$archive.sha256"
echo "$out/$archive"
