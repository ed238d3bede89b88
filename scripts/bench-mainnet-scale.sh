#!/usr/bin/env bash
# The indexer at mainnet scale (BENCHMARKS.md, "The indexer at mainnet
# scale"). The replay node (indexer/examples/mainnet_scale) records a
# mainnet-shaped chain of SCALE_TRANSACTIONS transactions (default 10
# million) and serves it on CPU 0; on CPU 1:
#   1. its bare serving rate (what the indexer asks, fetched raw);
#   2. the indexer (CPU 1, or SCALE_INDEXER_CPUS) from genesis to
#      SCALE_SMALL transactions (default 1 million), every history on: rate, peak memory, bytes per transaction
#      once compacted, then read latencies on that index;
#   3. the indexer on to the head: the same figures on the larger index,
#      the index checked against the recording;
#   4. the bare serving rate again.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
source "$(dirname "${BASH_SOURCE[0]}")/rocksdb-prebuilt.sh"
cd "$REPO_ROOT"
cargo build -j2 --locked --release -p weiport-indexer --example mainnet_scale
bin="$CARGO_TARGET_DIR/release/examples/mainnet_scale"
total="${SCALE_TRANSACTIONS:-10000000}"
small="${SCALE_SMALL:-1000000}"
work="$(mktemp -d -t weiport-scale.XXXXXX)"
node_pid=
# SCALE_KEEP=1 keeps the index (its directory is printed) for a look after.
trap '[ -n "$node_pid" ] && kill "$node_pid" 2>/dev/null; wait 2>/dev/null || true; [ -n "${SCALE_KEEP:-}" ] && echo "kept $work/db" || rm -rf "$work"' EXIT

export RUST_LOG="${RUST_LOG:-warn}"
WORKERS=1 taskset -c 0 "$bin" serve "$total" "$work/genesis.json" >"$work/url" &
node_pid=$!
until [ -s "$work/url" ]; do
  kill -0 "$node_pid" || { echo "the replay node stopped" >&2; exit 1; }
  sleep 1
done
url="$(cat "$work/url")"
echo "replay node at $url (CPU 0); measurements on CPU 1"

taskset -c 1 "$bin" bare "$url"
# SCALE_INDEXER_CPUS=0,1 gives the indexer both cores (sharing CPU 0 with the
# replay node) instead of CPU 1 alone.
cpus="${SCALE_INDEXER_CPUS:-1}"
taskset -c "$cpus" "$bin" index "$url" "$work/db" "$work/genesis.json" "$small"
taskset -c 1 "$bin" reads "$work/db" "$url"
taskset -c "$cpus" "$bin" index "$url" "$work/db" "$work/genesis.json" "$total"
taskset -c 1 "$bin" reads "$work/db" "$url"
taskset -c 1 "$bin" bare "$url"
