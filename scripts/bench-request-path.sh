#!/usr/bin/env bash
# The request path under load: every read and the signed order through the
# release `weiport serve`, against the bare axum baseline answering the same
# shapes from constants (examples/baseline_server.rs), and the query API also
# against anvil's own eth_getBalance (the in-memory node a dApp would call
# instead), in one run. wrk, one thread pinned to CPU 0; every server (the
# baseline, weiport, anvil) pinned to CPU 1.
#
# Rows, each at BENCH_CONNECTIONS (default "8 64"):
#  - Etherscan balance at the latest block and balancehistory at block 100;
#    anvil eth_getBalance at latest and at block 100;
#  - Binance ticker/price and depth (limit 100) over a book of 90 + 90 levels;
#  - the signed, durable POST /api/v3/order (HMAC over the form body, a LIMIT
#    IOC buy far below the book: authenticated, limited, logged with a synced
#    WAL write, expired, acknowledged); its peer, the baseline's group commit
#    (the body appended to a log and fdatasync'd, nothing else).
# Then each read again at half of its peak rate (wrk connections pausing
# between requests) for p50/p99.
# Env: BENCH_SECS (default 10, at most 55: each run signs its order body
# anew, valid for the 60 s recvWindow), BENCH_ROUNDS, BENCH_CONNECTIONS,
# BENCH_PIN (after | start: when the servers are pinned, see bench-http.sh).
source "$(dirname "${BASH_SOURCE[0]}")/bench-http.sh"
[ "$secs" -le 55 ] || { echo "BENCH_SECS must stay within the 60 s recvWindow" >&2; exit 2; }

"${server_cpu[@]}" "$WEIPORT_ANVIL" --host 127.0.0.1 --port 18545 --silent & pids+=($!)
node=http://127.0.0.1:18545
rpc() {
  curl -fs -H 'content-type: application/json' "$node" \
    --data "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"$1\",\"params\":$2}"
}
for _ in $(seq 50); do rpc eth_chainId '[]' >/dev/null && break; sleep 0.1; done
address=0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266
# 150 blocks, each a transfer from the measured address, so its balance has
# a history and block 100 is in the past.
for i in $(seq 150); do
  rpc eth_sendTransaction "[{\"from\":\"$address\",\"to\":\"0x000000000000000000000000000000000000b0$(printf '%02x' $((i % 200)))\",\"value\":\"0x$(printf '%x' $((i * 1000)))\"}]" >/dev/null
done

start_weiport /healthz <<TOML
[node]
url = "$node"
[access]
ip_weight_per_minute = 1000000000
key_weight_per_minute = 1000000000
orders_per_10s = 1000000000
orders_per_day = 1000000000
[access.query_tiers]
default = 5
bench = 100000000
TOML
for _ in $(seq 300); do
  curl -fs 127.0.0.1:18080/readyz | grep -q '"indexed":150' && break
  sleep 0.1
done
account=$(admin /admin/accounts '{"label":"bench"}' | sed -E 's/.*"id":([0-9]+).*/\1/')
created=$(admin /admin/keys "{\"account\":$account,\"permissions\":[\"read\",\"trade\"],\"tier\":\"bench\"}")
key=$(echo "$created" | sed -E 's/.*"id":"([A-Za-z0-9]+)".*/\1/')
secret=$(echo "$created" | sed -E 's/.*"secret":"([A-Za-z0-9]+)".*/\1/')
admin "/admin/accounts/$account/credit" '{"asset":"USDT","amount":"100000000"}' >/dev/null
admin "/admin/accounts/$account/credit" '{"asset":"ETH","amount":"100000"}' >/dev/null

signed_body() {
  local body="$1&timestamp=$(date +%s%3N)&recvWindow=60000"
  echo "$body&signature=$(printf '%s' "$body" | openssl dgst -sha256 -hmac "$secret" | sed 's/.* //')"
}
# The book the market-data reads render: 90 bids and 90 asks, one per level.
for i in $(seq 0 89); do
  for side_price in "BUY $((2000 + i))" "SELL $((4000 + i))"; do
    set -- $side_price
    curl -fs -o /dev/null -H "X-MBX-APIKEY: $key" 127.0.0.1:18080/api/v3/order \
      --data "$(signed_body "symbol=ETHUSDT&side=$1&type=LIMIT&timeInForce=GTC&quantity=0.01&price=$2")"
  done
done
pin_servers

balance="/api?module=account&action=balance&address=$address&tag=latest&apikey=$key"
history="/api?module=account&action=balancehistory&address=$address&blockno=100&apikey=$key"
for path in "$balance" "$history" /api/v3/ticker/price?symbol=ETHUSDT "/api/v3/depth?symbol=ETHUSDT&limit=100"; do
  curl -fs "127.0.0.1:18080$path" | cut -c1-120
done

balance_of() { echo "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_getBalance\",\"params\":[\"$address\",\"$1\"]}"; }
# anvil BLOCK CONNECTIONS: anvil's own eth_getBalance of the measured address.
anvil() {
  WRK_METHOD=POST WRK_BODY="$(balance_of "$1")" WRK_HEADERS="Content-Type: application/json" \
    measure "$2" "$node"
}
# post URL CONNECTIONS: the order ($order_params), signed now, to URL.
post() {
  WRK_METHOD=POST WRK_BODY="$(signed_body "$order_params")" \
    WRK_HEADERS="X-MBX-APIKEY: $key|Content-Type: application/x-www-form-urlencoded" \
    measure "$2" "$1"
}
# row NAME CONNECTIONS BASELINE_RUNNER WEIPORT_RUNNER [PEER_NAME PEER_RUNNER]
row() {
  local name="$1" c="$2" b w p="" peer="–"
  if [ $# -ge 6 ]; then
    read -r b w p <<<"$(compare "$c" "$3" "$4" "$6")"
    peer="$p ($(ratio "$w" "$p") of $5)"
  else
    read -r b w <<<"$(compare "$c" "$3" "$4")"
  fi
  last=$w last_base=$b last_peer=$p
  printf '| %s | %s | %s | %s | %s | %s |\n' "$name" "$c" "$b" "$w" "$(ratio "$w" "$b")" "$peer"
}

base=http://127.0.0.1:18090
ours=http://127.0.0.1:18080
echo
echo "Peak, median of ${BENCH_ROUNDS:-4} alternating ${secs}-second runs each:"
echo
echo "| route | connections | baseline req/s | weiport req/s | weiport / baseline | peer req/s (weiport / peer) |"
echo "|---|---|---|---|---|---|"
declare -A peak
durable_floor=()
order_params="symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=IOC&quantity=0.01&price=1000&newOrderRespType=ACK"
for c in ${BENCH_CONNECTIONS:-8 64}; do
  row "balance, latest" "$c" "get $base$balance" "get $ours$balance" anvil "anvil latest"
  peak[balance]=$last
  row "balancehistory, block 100" "$c" "get $base$balance" "get $ours$history" anvil "anvil 0x64"
  peak[history]=$last
  row "ticker/price" "$c" "get $base/api/v3/ticker/price?symbol=ETHUSDT" "get $ours/api/v3/ticker/price?symbol=ETHUSDT"
  peak[ticker]=$last
  row "depth, limit 100" "$c" "get $base/api/v3/depth?symbol=ETHUSDT&limit=100" "get $ours/api/v3/depth?symbol=ETHUSDT&limit=100"
  peak[depth]=$last
  row "signed POST /api/v3/order (durable)" "$c" "post $base/api/v3/order" "post $ours/api/v3/order" \
    "bare group commit" "post $base/durable/api/v3/order"
  durable_floor+=("$c: $(ratio "$last_peer" "$last_base")")
done
# The bare group commit against the bare answer: what acknowledging only
# once on disk costs on this machine when nothing else is done.
echo
echo "bare group commit / bare answer, by connections: ${durable_floor[*]}"
# Every order was acknowledged: weiport's non-2xx answers over the last run.
post "$ours/api/v3/order" 64 | awk '{ print "order run of 64 connections: " $1 " req/s, non-2xx answers: " $4 }'

# Half of the peak: connections that pause 1-3 ms (2 ms on average, drawn
# per request) before each request.
echo
echo "| route at half of its peak | target req/s | weiport req/s | p50 ms | p99 ms | baseline p50 ms | baseline p99 ms |"
echo "|---|---|---|---|---|---|---|"
half() {
  local name="$1" target=$(( $2 / 2 )) c ours base
  c=$(( target * 2 / 1000 )); [ "$c" -ge 1 ] || c=1
  ours=$(WRK_DELAY_MS=2 measure "$c" "$3"); base=$(WRK_DELAY_MS=2 measure "$c" "$4")
  set -- $ours; local w=$1 p50=$2 p99=$3
  set -- $base
  printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$name" "$target" "$w" "$p50" "$p99" "$2" "$3"
}
half "balance, latest" "${peak[balance]}" "$ours$balance" "$base$balance"
half "balancehistory, block 100" "${peak[history]}" "$ours$history" "$base$balance"
half "ticker/price" "${peak[ticker]}" "$ours/api/v3/ticker/price?symbol=ETHUSDT" "$base/api/v3/ticker/price?symbol=ETHUSDT"
half "depth, limit 100" "${peak[depth]}" "$ours/api/v3/depth?symbol=ETHUSDT&limit=100" "$base/api/v3/depth?symbol=ETHUSDT&limit=100"
