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
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
source "$(dirname "${BASH_SOURCE[0]}")/rocksdb-prebuilt.sh"
cd "$REPO_ROOT"
apt_install hey curl openssl

secs="${BENCH_SECS:-10}"
[ "$secs" -le 50 ] || { echo "BENCH_SECS must stay within the 60 s recvWindow" >&2; exit 2; }
conc="${BENCH_CONCURRENCY:-32}"
cargo build -j2 --locked --release --bin weiport --example baseline_server
bin="$CARGO_TARGET_DIR/release"
work="$(mktemp -d -t weiport-bench.XXXXXX)"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT

"$bin/examples/baseline_server" 127.0.0.1:18090 2>/dev/null & pids+=($!)
cat > "$work/config.toml" <<TOML
data_dir = "$work/data"
[server]
listen = "127.0.0.1:18080"
[admin]
listen = "127.0.0.1:18081"
token = "bench"
[indexer]
enabled = false
[access]
ip_weight_per_minute = 1000000000
key_weight_per_minute = 1000000000
orders_per_10s = 1000000000
orders_per_day = 1000000000
[log]
level = "warn"
TOML
"$bin/weiport" --config "$work/config.toml" serve & pids+=($!)
for _ in $(seq 100); do curl -fs -o /dev/null 127.0.0.1:18080/healthz && break; sleep 0.1; done
admin() { curl -fs -H 'authorization: Bearer bench' -H 'content-type: application/json' "127.0.0.1:18081$1" --data "$2"; }
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

rps() { sed -nE 's/^ *Requests\/sec:\s+([0-9.]+).*/\1/p'; }
pct() { sed -nE "s/^ *$1% in ([0-9.]+) secs.*/\\1/p"; }
codes() { sed -nE 's/^ *\[([0-9]+)\]\s+([0-9]+) responses.*/\1:\2/p' | tr '\n' ' '; }
ms() { awk -v s="$1" 'BEGIN { printf "%.2f", s * 1000 }'; }

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
