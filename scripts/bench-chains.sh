#!/usr/bin/env bash
# Indexer catch-up of one chain alone against the same chain while a second
# is indexed beside it, in one run. Two anvils (CPU 0) each get BENCH_BLOCKS
# blocks of one transfer (default 3000); then the
# release `weiport index --until N` (CPU 1) catches up on a fresh data dir:
# first the first chain alone (the baseline), then both chains configured,
# twice each, alternating. The figure is the wall time until the process
# exits (every chain at N), and its ratio to the alone run.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
source "$(dirname "${BASH_SOURCE[0]}")/rocksdb-prebuilt.sh"
cd "$REPO_ROOT"
apt_install curl bc
cargo build -j2 --locked --release --bin weiport
bin="$CARGO_TARGET_DIR/release"
blocks="${BENCH_BLOCKS:-3000}"
work="$(mktemp -d -t weiport-chains.XXXXXX)"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT

anvil="$REPO_ROOT/tools/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil"
taskset -c 0 "$anvil" --host 127.0.0.1 --port 18545 --silent & pids+=($!)
taskset -c 0 "$anvil" --host 127.0.0.1 --port 18546 --chain-id 31338 --silent & pids+=($!)
rpc() { curl -fs -H 'content-type: application/json' "127.0.0.1:$1" --data "$2"; }
for port in 18545 18546; do
  for _ in $(seq 100); do rpc "$port" '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}' >/dev/null && break; sleep 0.1; done
done
# Dev account 0 → 1..4 in turn, one transaction a request (a batch's
# transactions race for the same nonce): a block per transfer (automine).
from=0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266
to=(0x70997970c51812dc3a010c7d01b50e0d17dc79c8 0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc 0x90f79bf6eb2c4f870365e785982e1f101e93b906 0x15d34aaf54267db7d7c367839aaf71a00a2c6a65)
for port in 18545 18546; do
  for ((i = 0; i < blocks; i++)); do
    printf '{"jsonrpc":"2.0","id":%d,"method":"eth_sendTransaction","params":[{"from":"%s","to":"%s","value":"0x1"}]}\n' \
      "$i" "$from" "${to[$((i % 4))]}"
  done | while read -r request; do rpc "$port" "$request" >/dev/null; done
done
head_of() { rpc "$1" '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}' | sed 's/.*"result":"\(0x[0-9a-f]*\)".*/\1/'; }
first_head=$(( $(head_of 18545) )) second_head=$(( $(head_of 18546) ))
until_block=$(( first_head < second_head ? first_head : second_head ))
echo "heads $first_head and $second_head: indexing through block $until_block" >&2

both='[{ id = 31337, name = "first", url = "http://127.0.0.1:18545", network = "ETH" }, { id = 31338, name = "second", url = "http://127.0.0.1:18546", network = "ARBITRUM" }]'
# run alone|both: seconds until every chain is indexed through the head.
run() {
  local dir="$work/data-$1-$RANDOM" started ended
  local -a env=(WEIPORT_DATA_DIR="$dir" WEIPORT_LOG__LEVEL=warn WEIPORT_NODE__URL=http://127.0.0.1:18545)
  [ "$1" = both ] && env+=(WEIPORT_CHAINS="$both")
  started=$(date +%s.%N)
  env "${env[@]}" taskset -c 1 "$bin/weiport" index --until "$until_block" >/dev/null 2>"$work/log"
  ended=$(date +%s.%N)
  rm -rf "$dir"
  echo "$ended - $started" | bc -l
}
declare -a alone beside
for round in 1 2; do
  alone+=("$(run alone)"); beside+=("$(run both)")
done
mean() { echo "($1 + $2) / 2" | bc -l; }
a=$(mean "${alone[@]}"); b=$(mean "${beside[@]}")
printf '| indexed | blocks each | seconds (rounds) | blocks/s of the first chain | ratio |\n|---|---|---|---|---|\n'
printf '| first chain alone | %d | %.2f (%.2f, %.2f) | %.0f | 1.00× |\n' "$until_block" "$a" "${alone[0]}" "${alone[1]}" "$(echo "$until_block / $a" | bc -l)"
printf '| first chain, second beside | %d | %.2f (%.2f, %.2f) | %.0f | %.2f× |\n' "$until_block" "$b" "${beside[0]}" "${beside[1]}" "$(echo "$until_block / $b" | bc -l)" "$(echo "$a / $b" | bc -l)"
