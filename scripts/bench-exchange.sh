#!/usr/bin/env bash
# Exchange API load benchmark, against a bare axum server answering constant
# bodies on the same routes (examples/baseline_server.rs), same machine, same
# run, with `hey`:
#  - signed, durable POST /api/v3/order (HMAC over the form body, recvWindow
#    60 s, so one signed body is valid for the whole run; a LIMIT IOC buy far
#    below the book, which the engine accepts, logs with a synced WAL write
#    and expires);
#  - public GET /api/v3/ticker/price and /api/v3/depth over a book of 180
#    resting orders.
# Env: BENCH_SECS (default 10, at most 50), BENCH_CONCURRENCY (32).
source "$(dirname "${BASH_SOURCE[0]}")/bench-http.sh"
[ "$secs" -le 50 ] || { echo "BENCH_SECS must stay within the 60 s recvWindow" >&2; exit 2; }

start_weiport /healthz <<TOML
[indexer]
enabled = false
[access]
ip_weight_per_minute = 1000000000
key_weight_per_minute = 1000000000
orders_per_10s = 1000000000
orders_per_day = 1000000000
TOML
account=$(admin /admin/accounts '{"label":"bench"}' | sed -E 's/.*"id":([0-9]+).*/\1/')
created=$(admin /admin/keys "{\"account\":$account,\"permissions\":[\"read\",\"trade\"]}")
key=$(echo "$created" | sed -E 's/.*"id":"([A-Za-z0-9]+)".*/\1/')
secret=$(echo "$created" | sed -E 's/.*"secret":"([A-Za-z0-9]+)".*/\1/')
admin "/admin/accounts/$account/credit" '{"asset":"USDT","amount":"100000000"}' >/dev/null
admin "/admin/accounts/$account/credit" '{"asset":"ETH","amount":"100000"}' >/dev/null

sign() { printf '%s' "$1" | openssl dgst -sha256 -hmac "$secret" | sed 's/.* //'; }
post() {
  local body="$1&timestamp=$(date +%s%3N)&recvWindow=60000"
  echo "$body&signature=$(sign "$body")"
}
# A book for the market-data reads: 90 bids and 90 asks, one per level (the
# account stays under the market's 200 open orders, MAX_NUM_ORDERS).
for i in $(seq 0 89); do
  curl -fs -o /dev/null -H "X-MBX-APIKEY: $key" "127.0.0.1:18080/api/v3/order" \
    --data "$(post "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=0.01&price=$((2000 + i))")"
  curl -fs -o /dev/null -H "X-MBX-APIKEY: $key" "127.0.0.1:18080/api/v3/order" \
    --data "$(post "symbol=ETHUSDT&side=SELL&type=LIMIT&timeInForce=GTC&quantity=0.01&price=$((4000 + i))")"
done

codes() { sed -nE 's/^ *\[([0-9]+)\]\s+([0-9]+) responses.*/\1:\2/p' | tr '\n' ' '; }

body=$(post "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=IOC&quantity=0.01&price=1000&newOrderRespType=ACK")
curl -fs -H "X-MBX-APIKEY: $key" "127.0.0.1:18080/api/v3/order" --data "$body"; echo
order() { hey -z "${secs}s" -c "$conc" -m POST -T application/x-www-form-urlencoded -H "X-MBX-APIKEY: $key" -d "$body" "$1"; }
base_order=$(order http://127.0.0.1:18090/api/v3/order)
wei_order=$(order http://127.0.0.1:18080/api/v3/order)

read_run() { hey -z "${secs}s" -c "$conc" "$1"; }
base_price=$(read_run "http://127.0.0.1:18090/api/v3/ticker/price?symbol=ETHUSDT")
wei_price=$(read_run "http://127.0.0.1:18080/api/v3/ticker/price?symbol=ETHUSDT")
base_depth=$(read_run "http://127.0.0.1:18090/api/v3/depth?symbol=ETHUSDT&limit=100")
wei_depth=$(read_run "http://127.0.0.1:18080/api/v3/depth?symbol=ETHUSDT&limit=100")

row() {
  local name="$1" base="$2" wei="$3"
  local b w; b=$(echo "$base" | rps); w=$(echo "$wei" | rps)
  printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$name" "$b" "$w" \
    "$(awk -v w="$w" -v b="$b" 'BEGIN { printf "%.2f×", w / b }')" \
    "$(ms "$(echo "$base" | pct 99)")" "$(ms "$(echo "$wei" | pct 99)")" "$(echo "$wei" | codes)"
}
echo
echo "| route (c=$conc, ${secs}s) | baseline req/s | weiport req/s | ratio | baseline p99 (ms) | weiport p99 (ms) | weiport statuses |"
echo "|---|---|---|---|---|---|---|"
row "signed POST /api/v3/order (durable)" "$base_order" "$wei_order"
row "GET /api/v3/ticker/price" "$base_price" "$wei_price"
row "GET /api/v3/depth (limit 100)" "$base_depth" "$wei_depth"
