#!/usr/bin/env bash
# Sourced by the benchmark scripts: reuses the RocksDB static library that the
# dev build already compiled (-O3, see Cargo.toml) for release builds, through
# ROCKSDB_LIB_DIR, so RocksDB's C++ is not compiled a second time.
rocksdb_cache="$HOME/.cache/weiport/rocksdb-11.8.1-sse42"
if [ ! -f "$rocksdb_cache/librocksdb.a" ]; then
  (cd "$REPO_ROOT" && cargo build -j2 --locked --workspace --all-targets)
  built=$(ls -t "$CARGO_TARGET_DIR"/debug/build/librocksdb-sys-*/out/librocksdb.a 2>/dev/null | head -1)
  [ -n "$built" ] || { echo "librocksdb.a not found after the build" >&2; exit 1; }
  mkdir -p "$rocksdb_cache"
  cp "$built" "$rocksdb_cache/librocksdb.a"
fi
export ROCKSDB_LIB_DIR="$rocksdb_cache" ROCKSDB_STATIC=1
