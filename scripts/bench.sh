#!/usr/bin/env bash
# Runs benchmarks in release mode: scripts/bench.sh [BENCH_NAME ...]
# RocksDB's C++ library from the test build (already -O3) is reused through
# ROCKSDB_LIB_DIR, so a release build does not compile it a second time.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$REPO_ROOT"

rocksdb_cache="$HOME/.cache/weiport/rocksdb-11.8.1"
if [ ! -f "$rocksdb_cache/librocksdb.a" ]; then
  cargo build -j2 --locked -p weiport-storage
  built=$(ls -t "$CARGO_TARGET_DIR"/debug/build/librocksdb-sys-*/out/librocksdb.a 2>/dev/null | head -1)
  [ -n "$built" ] || { echo "bench: librocksdb.a not found after the build" >&2; exit 1; }
  mkdir -p "$rocksdb_cache"
  cp "$built" "$rocksdb_cache/librocksdb.a"
fi
export ROCKSDB_LIB_DIR="$rocksdb_cache" ROCKSDB_STATIC=1

if [ $# -eq 0 ]; then
  cargo bench -j2 --locked --workspace
else
  for name in "$@"; do
    cargo bench -j2 --locked --bench "$name"
  done
fi
