#!/usr/bin/env bash
# Runs benchmarks in release mode: scripts/bench.sh [BENCH_NAME ...]
# (e.g. indexer_catch_up, verify). See BENCHMARKS.md for what each measures.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
source "$(dirname "${BASH_SOURCE[0]}")/rocksdb-prebuilt.sh"
cd "$REPO_ROOT"

if [ $# -eq 0 ]; then
  cargo bench -j2 --locked --workspace
else
  for name in "$@"; do
    cargo bench -j2 --locked --workspace --bench "$name"
  done
fi
