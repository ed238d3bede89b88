#!/usr/bin/env bash
# Instructions per request of the in-process request path (benches/request_path.rs),
# counted by callgrind: exact and repeatable where wall-clock figures drift with the
# host. Prints each case's instructions per request and weiport's ratio to the bare
# application; the durable order (engine, command log, stream hub) over all threads.
# Env: REQUEST_PATH_COUNT (requests counted per case, default 2000).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
source "$(dirname "${BASH_SOURCE[0]}")/rocksdb-prebuilt.sh"
cd "$REPO_ROOT"
apt_install valgrind

count="${REQUEST_PATH_COUNT:-2000}"
bench=$(cargo bench -j2 --locked --bench request_path --no-run --message-format=json |
  sed -n 's/.*"executable":"\([^"]*request_path[^"]*\)".*/\1/p' | tail -1)
[ -x "$bench" ] || { echo "the request_path benchmark did not build" >&2; exit 1; }
out="$(mktemp -d -t weiport-callgrind.XXXXXX)"
trap 'rm -rf "$out"' EXIT

# instructions CASE: instructions per request inside `repeat`.
instructions() {
  REQUEST_PATH_COUNT="$count" REQUEST_PATH_CASE="$1" valgrind --tool=callgrind \
    --callgrind-out-file="$out/$1.out" --toggle-collect='*request_path*repeat*' \
    "$bench" >/dev/null 2>"$out/$1.log"
  awk -v n="$count" '/^summary:|^totals:/ { print $2 / n; exit }' "$out/$1.out"
}

# all_threads CASE: instructions per request over every thread (a durable
# order is also the engine's, the stream hub's and RocksDB's work): the whole
# program counted for `count` requests and for three times as many, the
# difference divided by the extra requests, so start-up drops out.
all_threads() {
  local n total=()
  for n in "$count" $((3 * count)); do
    BASELINE_LOG_DIR="$out" REQUEST_PATH_COUNT="$n" REQUEST_PATH_CASE="$1" valgrind --tool=callgrind \
      --callgrind-out-file="$out/$1-$n.out" "$bench" >/dev/null 2>"$out/$1-$n.log"
    total+=("$(awk '/^summary:|^totals:/ { print $2; exit }' "$out/$1-$n.out")")
  done
  awk -v a="${total[0]}" -v b="${total[1]}" -v n="$count" 'BEGIN { print (b - a) / (2 * n) }'
}

declare -A per_request
for case in bare-balance weiport-balance weiport-balance-history bare-ticker weiport-ticker bare-order weiport-order-test; do
  per_request[$case]=$(instructions "$case")
  printf '%-24s %10.0f instructions per request\n' "$case" "${per_request[$case]}"
done
for case in bare-durable-order weiport-order; do
  per_request[$case]=$(all_threads "$case")
  printf '%-24s %10.0f instructions per request, all threads\n' "$case" "${per_request[$case]}"
done
awk -v bb="${per_request[bare-balance]}" -v wb="${per_request[weiport-balance]}" \
  -v wh="${per_request[weiport-balance-history]}" \
  -v bt="${per_request[bare-ticker]}" -v wt="${per_request[weiport-ticker]}" \
  -v bo="${per_request[bare-order]}" -v wo="${per_request[weiport-order-test]}" 'BEGIN {
  printf "balance, latest: weiport %.2fx the bare instructions (+%.0f)\n", wb / bb, wb - bb
  printf "balancehistory at block 100: %.2fx (+%.0f)\n", wh / bb, wh - bb
  printf "ticker/price: weiport %.2fx the bare instructions (+%.0f)\n", wt / bt, wt - bt
  printf "signed order/test vs a body-reading POST: %.2fx (+%.0f)\n", wo / bo, wo - bo
}'
awk -v bd="${per_request[bare-durable-order]}" -v wd="${per_request[weiport-order]}" 'BEGIN {
  printf "signed durable order vs a bare group commit, one order per commit: %.2fx (+%.0f)\n", wd / bd, wd - bd
}'
