#!/usr/bin/env bash
# An order's round trip over the WebSocket API against REST, in one run:
# examples/ws_order_roundtrip.rs (one thread, pinned to CPU 0) keeps 1 and
# then 64 clients each sending a signed, durable order and waiting for its
# answer, over one kept-alive HTTP/1.1 connection each (REST) or one
# WebSocket API connection each; weiport (exchange.durability = "local")
# on CPU 1. The transports take turns over BENCH_ROUNDS rounds (default 4,
# every other round in reverse); the medians are printed. wrk's figure for
# the same REST order is printed beside, to show the generator is not what
# limits REST. Env: BENCH_SECS (default 10, at most 55).
source "$(dirname "${BASH_SOURCE[0]}")/bench-http.sh"
[ "$secs" -le 55 ] || { echo "BENCH_SECS must stay within the 60 s recvWindow" >&2; exit 2; }
cargo build -j2 --locked --release --example ws_order_roundtrip

export WEIPORT_MASTER_KEY
WEIPORT_MASTER_KEY="$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
start_weiport /healthz 18080 < <(exchange_config local '[]')
read -r key secret <<<"$(funded_key 18081 USDT 100000000)"
pin_servers

# run TRANSPORT CONNECTIONS: "orders/s p50_us p99_us refused".
run() { taskset -c 0 "$bin/examples/ws_order_roundtrip" 127.0.0.1:18080 "$key" "$secret" "$secs" "$2" "$1"; }
# median FIELD LINES...: the median of field FIELD (1-based) of the lines.
median() {
  local field="$1"; shift
  printf '%s\n' "$@" | cut -d' ' -f"$field" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

rounds="${BENCH_ROUNDS:-4}"
echo "| connections | transport | orders/s | per connection | p50 µs | p99 µs | refused |"
echo "|---|---|---|---|---|---|---|"
for c in 1 64; do
  rest=() ws=()
  for ((round = 0; round < rounds; round++)); do
    if ((round % 2 == 0)); then rest+=("$(run rest "$c")"); ws+=("$(run ws "$c")")
    else ws+=("$(run ws "$c")"); rest+=("$(run rest "$c")"); fi
  done
  for transport in rest ws; do
    declare -n lines="$transport"
    rps="$(median 1 "${lines[@]}")"
    printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$c" "$transport" "$rps" \
      "$(awk -v r="$rps" -v c="$c" 'BEGIN { printf "%.0f", r / c }')" \
      "$(median 2 "${lines[@]}")" "$(median 3 "${lines[@]}")" "$(median 4 "${lines[@]}")"
    unset -n lines
  done
  echo "ratio ws/rest at $c: orders/s $(ratio "$(median 1 "${ws[@]}")" "$(median 1 "${rest[@]}")"), p50 $(ratio "$(median 2 "${ws[@]}")" "$(median 2 "${rest[@]}")")"
done

body="symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=IOC&quantity=0.01&price=1000&newOrderRespType=ACK&recvWindow=60000&timestamp=$(date +%s%3N)"
body="$body&signature=$(printf '%s' "$body" | openssl dgst -sha256 -hmac "$secret" | sed 's/.* //')"
for c in 1 64; do
  echo "wrk REST at $c: $(WRK_METHOD=POST WRK_BODY="$body" \
    WRK_HEADERS="X-MBX-APIKEY: $key|Content-Type: application/x-www-form-urlencoded" \
    measure "$c" http://127.0.0.1:18080/api/v3/order) (req/s p50_ms p99_ms non_2xx)"
done
