#!/usr/bin/env bash
# Runs the coverage-guided fuzz targets (docs/hostile-input.md) on the stable toolchain:
#
#   fuzz/run.sh SECONDS [TARGET...]      (default: every target, SECONDS each, one after another)
#
# Seeds fuzz/corpus/ from ../shared/corpus (fuzz/seed.py; $CELCOST_CORPUS to point elsewhere)
# when it is absent, builds the targets with cargo-fuzz (libFuzzer; no sanitizer, which needs a
# nightly compiler: the targets check what matters themselves) and runs each for SECONDS on one
# worker. Fails on the first target that finds a crash, a timeout (10 s) or an out-of-memory
# (2 GiB); its input is in fuzz/artifacts/TARGET/. Extra libFuzzer flags: $FUZZ_ARGS.
set -euo pipefail
cd "$(dirname "$0")"

secs=${1:?usage: fuzz/run.sh SECONDS [TARGET...]}
shift
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  # Every [[bin]] of Cargo.toml.
  mapfile -t targets < <(sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.toml | grep -v '^celcost-fuzz$')
fi

if [ ! -d corpus/crd_document ]; then
  python3 seed.py ${CELCOST_CORPUS:+"$CELCOST_CORPUS"}
fi

cargo fuzz build --sanitizer none
for t in "${targets[@]}"; do
  case $t in
    cel_expression) max_len=4096 ;;
    *) max_len=65536 ;;
  esac
  echo "== fuzz $t for ${secs} s"
  set +e
  # shellcheck disable=SC2086
  cargo fuzz run --sanitizer none "$t" -- \
    -max_total_time="$secs" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 ${FUZZ_ARGS:-} 2>&1 |
    grep --line-buffered -v -E '^#[0-9]+[[:space:]]+(NEW|REDUCE)'
  status=${PIPESTATUS[0]}
  set -e
  if [ "$status" -ne 0 ]; then
    echo "fuzz $t: a finding (exit status $status), in fuzz/artifacts/$t/" >&2
    exit 1
  fi
done
