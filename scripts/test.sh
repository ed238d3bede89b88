#!/usr/bin/env bash
# The whole test suite: formatting, lints, then every unit and integration
# test (real anvil node, real RocksDB, real sockets on 127.0.0.1).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$REPO_ROOT"
# A clean clone is built once: incremental state would only fill the disk.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

echo "== cargo fmt --check" >&2
cargo fmt --all -- --check
echo "== house rules (module circles, glob re-exports, file sizes)" >&2
python3 scripts/house-rules.py
echo "== cargo clippy" >&2
cargo clippy -j2 --workspace --all-targets --locked -- -D warnings
echo "== cargo nextest" >&2
cargo nextest run -j2 --workspace --locked --no-fail-fast "$@"
