#!/usr/bin/env bash
# Trade-stream fan-out benchmark: a release `weiport serve` pinned to CPU 1,
# the load generator (examples/stream_fanout.rs) pinned to CPU 0 opening
# 1,000 and then 10,000 connections to ethusdt@trade while it places crossing
# orders over REST at a steady rate; latency from each trade's engine time to
# its arrival at every client. Env: BENCH_TRADES (default 200), BENCH_RATE
# (orders pairs a second, default 50).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
source "$(dirname "${BASH_SOURCE[0]}")/rocksdb-prebuilt.sh"
cd "$REPO_ROOT"
apt_install curl

trades="${BENCH_TRADES:-200}"
rate="${BENCH_RATE:-50}"
cargo build -j2 --locked --release --bin weiport --example stream_fanout
bin="$CARGO_TARGET_DIR/release"
ulimit -n "$(ulimit -Hn)"

run() {
  local connections="$1" work
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
  taskset -c 1 "$bin/weiport" --config "$work/config.toml" serve & local pid=$!
  for _ in $(seq 100); do curl -fs -o /dev/null 127.0.0.1:18080/healthz && break; sleep 0.1; done
  admin() { curl -fs -H 'authorization: Bearer bench' -H 'content-type: application/json' "127.0.0.1:18081$1" --data "$2"; }
  key_of() {
    local account created
    account=$(admin /admin/accounts '{"label":"bench"}' | sed -E 's/.*"id":([0-9]+).*/\1/')
    created=$(admin /admin/keys "{\"account\":$account,\"permissions\":[\"read\",\"trade\"]}")
    admin "/admin/accounts/$account/credit" "{\"asset\":\"$1\",\"amount\":\"$2\"}" >/dev/null
    echo "$(echo "$created" | sed -E 's/.*"id":"([A-Za-z0-9]+)".*/\1/') $(echo "$created" | sed -E 's/.*"secret":"([A-Za-z0-9]+)".*/\1/')"
  }
  read -r maker_key maker_secret <<<"$(key_of ETH 1000)"
  read -r taker_key taker_secret <<<"$(key_of USDT 10000000)"
  taskset -c 0 "$bin/examples/stream_fanout" http://127.0.0.1:18080 "$connections" "$trades" "$rate" \
    "$maker_key" "$maker_secret" "$taker_key" "$taker_secret"
  kill "$pid"; wait "$pid" 2>/dev/null || true
  rm -rf "$work"
}

echo "| connections | trades | deliveries | p50 (ms) | p99 (ms) | max (ms) |"
echo "|---|---|---|---|---|---|"
run 1000
run 10000
