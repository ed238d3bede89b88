#!/usr/bin/env bash
# Durable orders per second by durability, in one run: the bare group commit
# (examples/baseline_server.rs: each body appended to a log and synced,
# nothing else), weiport with exchange.durability = "local" (synced RocksDB
# write), and "replicated" on three nats-servers in a JetStream cluster
# (each batch acknowledged by JetStream, then synced here), once with the
# servers' lazy default (acknowledged before it is on their disks, synced
# every two minutes) and once with sync_interval: always (weiport's setting:
# on a majority's disks before it is acknowledged). wrk, one thread pinned
# to CPU 0; every server (weiport, nats, the baseline) on CPU 1.
# Env: BENCH_SECS (default 10, at most 55), BENCH_ROUNDS, BENCH_CONNECTIONS
# (default "8 64").
source "$(dirname "${BASH_SOURCE[0]}")/bench-http.sh"
[ "$secs" -le 55 ] || { echo "BENCH_SECS must stay within the 60 s recvWindow" >&2; exit 2; }

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# nats NAME COUNT SYNC: COUNT nats-servers in a cluster, JetStream's
# sync_interval SYNC ("always", or "" for the server's default); sets
# nats_urls_NAME.
nats() {
  local name="$1" count="$2" sync="${3:+, sync_interval: $3}" n routes="" urls=""
  local -a clients=() clusters=()
  for ((n = 0; n < count; n++)); do clients+=("$(free_port)"); clusters+=("$(free_port)"); done
  for ((n = 0; n < count; n++)); do routes+="nats-route://127.0.0.1:${clusters[n]},"; done
  for ((n = 0; n < count; n++)); do
    mkdir -p "$work/$name-$n"
    {
      echo "server_name: $name-$n"
      echo "listen: 127.0.0.1:${clients[n]}"
      echo "jetstream { store_dir: \"$work/$name-$n/js\"$sync }"
      [ "$count" -gt 1 ] && echo "cluster { name: $name, listen: 127.0.0.1:${clusters[n]}, routes: [${routes%,}] }"
    } >"$work/$name-$n/nats.conf"
    "${server_cpu[@]}" "$WEIPORT_NATS_SERVER" -c "$work/$name-$n/nats.conf" >/dev/null 2>&1 & pids+=($!)
    urls+="\"nats://127.0.0.1:${clients[n]}\","
  done
  printf -v "nats_urls_$name" '%s' "[${urls%,}]"
}
nats lazy 3 ""
nats synced 3 always

export WEIPORT_MASTER_KEY
WEIPORT_MASTER_KEY="$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
start_weiport /healthz 18080 < <(exchange_config local '[]')
start_weiport /healthz 18082 < <(exchange_config replicated "$nats_urls_lazy")
start_weiport /healthz 18084 < <(exchange_config replicated "$nats_urls_synced")

declare -A keys secrets
for port in 18080 18082 18084; do
  read -r key secret <<<"$(funded_key $((port + 1)) USDT 100000000)"
  keys[$port]=$key secrets[$port]=$secret
done
pin_servers

order_params="symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=IOC&quantity=0.01&price=1000&newOrderRespType=ACK"
signed() { # SECRET
  local body="$order_params&timestamp=$(date +%s%3N)&recvWindow=60000"
  echo "$body&signature=$(printf '%s' "$body" | openssl dgst -sha256 -hmac "$1" | sed 's/.* //')"
}
order() { # PORT CONNECTIONS
  WRK_METHOD=POST WRK_BODY="$(signed "${secrets[$1]}")" \
    WRK_HEADERS="X-MBX-APIKEY: ${keys[$1]}|Content-Type: application/x-www-form-urlencoded" \
    measure "$2" "http://127.0.0.1:$1/api/v3/order"
}
bare() { WRK_METHOD=POST WRK_BODY="$order_params" measure "$1" "http://127.0.0.1:18090/durable/api/v3/order"; }

echo
echo "Durable orders per second, median of ${BENCH_ROUNDS:-4} alternating ${secs}-second runs:"
echo
echo "| connections | bare group commit | local | replicated, 3 NATS, lazy sync | replicated, 3 NATS, sync before ack | local / bare | lazy / local | synced / local | synced / lazy |"
echo "|---|---|---|---|---|---|---|---|---|"
for c in ${BENCH_CONNECTIONS:-8 64}; do
  read -r b l lazy synced <<<"$(compare "$c" bare "order 18080" "order 18082" "order 18084")"
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$c" "$b" "$l" "$lazy" "$synced" \
    "$(ratio "$l" "$b")" "$(ratio "$lazy" "$l")" "$(ratio "$synced" "$l")" "$(ratio "$synced" "$lazy")"
done
echo
for port in 18080 18082 18084; do
  order "$port" 64 | awk -v port="$port" '{ print "order run on " port ", 64 connections: " $1 " req/s, non-2xx answers: " $4 }'
done
