#!/usr/bin/env bash
# Stream benchmarks, a release `weiport serve` pinned to CPU 1 and every load
# generator pinned to CPU 0:
#  1. Trade-stream fan-out: examples/stream_fanout.rs opens 1,000 and then
#     10,000 connections to ethusdt@trade (times in microseconds) and places
#     crossing orders over REST at a steady rate, the same number of
#     deliveries a second at every size (BENCH_DELIVERIES, default 50,000:
#     50 trades/s to 1,000 connections, 5/s to 10,000) for BENCH_SECONDS
#     (default 4). Latency from each trade's commit (its event time E) to its
#     arrival at every client, next to a bare WebSocket server's fan-out of
#     the same frames at the same rate (examples/fanout_baseline.rs), as ratios.
#  2. Order throughput with subscribers: examples/order_load.rs places
#     crossing order pairs from 8 workers for BENCH_LOAD_SECONDS (default 10)
#     with no subscriber, then with 1,000 reading subscribers (to a stream
#     pushed each second, then to the traded market's 100 ms depth and its
#     ticker) and 10 never reading ones (on its trades, depth and book
#     ticker), then with none again.
# Env: BENCH_PARTS (default "fanout load"), BENCH_CONNECTIONS (default
# "1000 10000"), BENCH_PERF (a path: the
# fan-out server is profiled with perf into <path>.<connections>).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
source "$(dirname "${BASH_SOURCE[0]}")/rocksdb-prebuilt.sh"
cd "$REPO_ROOT"
apt_install curl

deliveries="${BENCH_DELIVERIES:-50000}"
seconds="${BENCH_SECONDS:-4}"
load_seconds="${BENCH_LOAD_SECONDS:-10}"
cargo build -j2 --locked --release --bin weiport \
  --example stream_fanout --example fanout_baseline --example order_load
bin="$CARGO_TARGET_DIR/release"
ulimit -n "$(ulimit -Hn)"

work=""
server_pid=""
# Starts weiport on a fresh data dir; sets maker_key/maker_secret (ETH) and
# taker_key/taker_secret (USDT).
start_weiport() {
  work="$(mktemp -d -t weiport-streams.XXXXXX)"
  cat > "$work/config.toml" <<TOML
data_dir = "$work/data"
[server]
listen = "127.0.0.1:18080"
max_connections = 20000
max_connections_per_ip = 20000
[admin]
listen = "127.0.0.1:18081"
token = "bench"
[log]
level = "warn"
[indexer]
enabled = false
[access]
ip_weight_per_minute = 1000000000
key_weight_per_minute = 1000000000
orders_per_10s = 1000000000
orders_per_day = 1000000000
TOML
  taskset -c 1 "$bin/weiport" --config "$work/config.toml" serve & server_pid=$!
  for _ in $(seq 100); do curl -fs -o /dev/null 127.0.0.1:18080/healthz && break; sleep 0.1; done
  admin() { curl -fs -H 'authorization: Bearer bench' -H 'content-type: application/json' "127.0.0.1:18081$1" --data "$2"; }
  key_of() {
    local account created
    account=$(admin /admin/accounts '{"label":"bench"}' | sed -E 's/.*"id":([0-9]+).*/\1/')
    created=$(admin /admin/keys "{\"account\":$account,\"permissions\":[\"read\",\"trade\"]}")
    admin "/admin/accounts/$account/credit" "{\"asset\":\"$1\",\"amount\":\"$2\"}" >/dev/null
    echo "$(echo "$created" | sed -E 's/.*"id":"([A-Za-z0-9]+)".*/\1/') $(echo "$created" | sed -E 's/.*"secret":"([A-Za-z0-9]+)".*/\1/')"
  }
  read -r maker_key maker_secret <<<"$(key_of ETH 1000000)"
  read -r taker_key taker_secret <<<"$(key_of USDT 10000000000)"
}

stop_weiport() {
  kill "$server_pid"; wait "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}

# The floor: a bare WebSocket server sending the same frames to the same
# number of connections at the same rate, pinned the same way.
fanout_baseline() {
  local connections="$1" trades="$2" rate="$3" pid
  taskset -c 1 "$bin/examples/fanout_baseline" 127.0.0.1:18090 "$connections" "$trades" "$rate" & pid=$!
  sleep 0.5
  taskset -c 0 "$bin/examples/stream_fanout" http://127.0.0.1:18090 "$connections" "$trades" "$rate"
  kill "$pid"; wait "$pid" 2>/dev/null || true
}

fanout_weiport() {
  local connections="$1" trades="$2" rate="$3" perf_pid=""
  start_weiport
  if [ -n "${BENCH_PERF:-}" ]; then
    perf record -q -F 1999 -g -p "$server_pid" -o "$BENCH_PERF.$connections" 2>/dev/null & perf_pid=$!
  fi
  taskset -c 0 "$bin/examples/stream_fanout" http://127.0.0.1:18080 "$connections" "$trades" "$rate" \
    "$maker_key" "$maker_secret" "$taker_key" "$taker_secret"
  if [ -n "$perf_pid" ]; then kill -INT "$perf_pid"; wait "$perf_pid" || true; fi
  stop_weiport
}

parts="${BENCH_PARTS:-fanout load}"
if [[ " $parts " == *" fanout "* ]]; then
echo "| server | connections | trades | deliveries | p50 (ms) | p99 (ms) | max (ms) |"
echo "|---|---|---|---|---|---|---|"
for connections in ${BENCH_CONNECTIONS:-1000 10000}; do
  rate=$(( deliveries / connections > 0 ? deliveries / connections : 1 ))
  trades=$(( rate * seconds ))
  floor=$(fanout_baseline "$connections" "$trades" "$rate" | grep '^|')
  echo "| bare WebSocket fan-out $floor"
  ours=$(fanout_weiport "$connections" "$trades" "$rate" | grep '^|')
  echo "| weiport $ours"
  # p50 and p99 are fields 5 and 6 of each "| a | b | c | p50 | p99 | max |".
  paste -d'|' <(echo "$floor") <(echo "$ours") | awk -F'|' -v n="$connections" \
    '{ printf "| weiport ÷ bare | %s | | | %.2f× | %.2f× | |\n", n, $13 / $5, $14 / $6 }'
done

fi

[[ " $parts " == *" load "* ]] || exit 0
echo
echo "| subscribers reading | subscribers never reading | orders/s | frames sent to the readers |"
echo "|---|---|---|---|"
load() {
  start_weiport
  taskset -c 0 "$bin/examples/order_load" http://127.0.0.1:18080 "$load_seconds" 8 "$@" \
    "$maker_key" "$maker_secret" "$taker_key" "$taker_secret"
  stop_weiport
}
# Interleaved, three rounds: the synced write's latency on this disk moves
# from run to run, so each setting is judged by its median against the
# median without subscribers.
results=$(for _ in 1 2 3; do
  load 0 - 0
  load 1000 ethusdt@avgPrice 10
  load 1000 ethusdt@depth@100ms/ethusdt@ticker 10
done)
echo "$results"
echo
echo "| subscribers reading × streams (with 10 never reading, but for none) | median orders/s | ÷ none |"
echo "|---|---|---|"
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
orders_of() { echo "$results" | grep -F "| $1 |" | awk -F'|' '{ print $4 + 0 }' | median; }
none=$(orders_of "0 × -")
for setting in "0 × -" "1000 × ethusdt@avgPrice" "1000 × ethusdt@depth@100ms/ethusdt@ticker"; do
  median_orders=$(orders_of "$setting")
  printf '| %s | %s | %s |\n' "$setting" "$median_orders" \
    "$(awk -v m="$median_orders" -v n="$none" 'BEGIN { printf "%.2f×", m / n }')"
done
