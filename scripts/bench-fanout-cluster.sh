#!/usr/bin/env bash
# Trade-stream fan-out to BENCH_CONNECTIONS subscribers (default 10,000): one
# weiport process, then three processes of a replicated exchange (one
# nats-server) with the subscribers spread evenly over them and the orders
# sent to the primary; next to a bare WebSocket server's fan-out of the same
# frames at the same rate (examples/fanout_baseline.rs). Latency is counted
# from each trade's event time E (the commit of the process that sends it:
# the fan-out's own cost) and, for the three, also from its trade time T (the
# primary's engine time, whole ms: the journal's hop to the followers
# included). Same flow as scripts/bench-streams.sh: BENCH_DELIVERIES
# (default 50,000) deliveries a second for BENCH_SECONDS (default 4).
# The generator is pinned to CPU 0; every server (weiport, nats, the
# baseline) to CPU 1: on this two-core machine the three processes share one
# core, so the run shows what replication costs the fan-out, not the
# capacity three machines would add.
source "$(dirname "${BASH_SOURCE[0]}")/bench-http.sh"
cargo build -j2 --locked --release --example stream_fanout --example fanout_baseline
ulimit -n "$(ulimit -Hn)"

connections="${BENCH_CONNECTIONS:-10000}"
deliveries="${BENCH_DELIVERIES:-50000}"
seconds="${BENCH_SECONDS:-4}"
rate=$(( deliveries / connections > 0 ? deliveries / connections : 1 ))
trades=$(( rate * seconds ))
export WEIPORT_SERVER__MAX_CONNECTIONS=20000 WEIPORT_SERVER__MAX_CONNECTIONS_PER_IP=20000
export WEIPORT_MASTER_KEY
WEIPORT_MASTER_KEY="$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# fanout URLS ADMIN_PORT [CLOCK]: the generator's row against the exchange at URLS.
fanout() {
  local maker maker_secret taker taker_secret
  read -r maker maker_secret <<<"$(funded_key "$2" ETH 1000000)"
  read -r taker taker_secret <<<"$(funded_key "$2" USDT 10000000000)"
  FANOUT_CLOCK="${3:-event}" taskset -c 0 "$bin/examples/stream_fanout" "$1" "$connections" "$trades" "$rate" \
    "$maker" "$maker_secret" "$taker" "$taker_secret" | grep '^|'
}

echo
echo "Trade-stream fan-out, $connections subscribers, $trades trades at $rate/s:"
echo
echo "| server | connections | trades | deliveries | p50 (ms) | p99 (ms) | max (ms) |"
echo "|---|---|---|---|---|---|---|"
taskset -c 1 "$bin/examples/fanout_baseline" 127.0.0.1:18092 "$connections" "$trades" "$rate" & baseline=$!
sleep 0.5
floor=$(taskset -c 0 "$bin/examples/stream_fanout" http://127.0.0.1:18092 "$connections" "$trades" "$rate" | grep '^|')
kill "$baseline"; wait "$baseline" 2>/dev/null || true
echo "| bare WebSocket fan-out $floor"

start_weiport /healthz 18080 < <(exchange_config local '[]')
pin_servers
one=$(fanout http://127.0.0.1:18080 18081)
echo "| weiport, one process $one"
single="${pids[-1]}"
kill "$single"; wait "$single" 2>/dev/null || true
pids=("${pids[@]:0:${#pids[@]}-1}")

nats_port=$(free_port)
mkdir -p "$work/nats"
echo "listen: 127.0.0.1:$nats_port
jetstream { store_dir: \"$work/nats/js\", sync_interval: always }" >"$work/nats/nats.conf"
"$WEIPORT_NATS_SERVER" -c "$work/nats/nats.conf" >/dev/null 2>&1 & pids+=($!)
nats_urls="[\"nats://127.0.0.1:$nats_port\"]"
urls=""
for port in 18082 18084 18086; do
  WEIPORT_CLUSTER__NODE_NAME="node-$port" start_weiport /healthz "$port" < <(exchange_config replicated "$nats_urls")
  urls+="http://127.0.0.1:$port,"
done
pin_servers
three=$(fanout "${urls%,}" 18083)
echo "| weiport, three processes (from E) $three"
three_t=$(fanout "${urls%,}" 18083 trade)
echo "| weiport, three processes (from T) $three_t"

# p50 and p99 are fields 5 and 6 of each "| a | b | c | p50 | p99 | max |".
ratios() { paste -d'|' <(echo "$floor") <(echo "$2") | awk -F'|' -v what="$1" \
  '{ printf "| %s ÷ bare | | | | %.2f× | %.2f× | |\n", what, $13 / $5, $14 / $6 }'; }
ratios "one process" "$one"
ratios "three processes (E)" "$three"
ratios "three processes (T)" "$three_t"
