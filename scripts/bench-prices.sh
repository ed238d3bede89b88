#!/usr/bin/env bash
# CoinGecko price face under load, against the bare axum baseline
# (examples/baseline_server.rs answering the same shape from a constant),
# same machine, same run: wrk with one thread pinned to CPU 0, each server
# pinned to CPU 1, so the generator is never the bottleneck. Routes:
# simple/price for one id and currency with every 24 h field, and for
# three ids in two currencies (one an inverse market); and, against the same
# baseline, weiport's own /api/v3/ping: the request path with a handler that
# does nothing, the floor of every guarded route.
# Env: BENCH_SECS (default 10), BENCH_CONNECTIONS (default "8 64").
source "$(dirname "${BASH_SOURCE[0]}")/bench-http.sh"

start_weiport /healthz <<TOML
[indexer]
enabled = false
$UNLIMITED_ACCESS
TOML
pin_servers

account() {
  local account created
  account=$(admin /admin/accounts '{"label":"bench"}' | sed -E 's/.*"id":([0-9]+).*/\1/')
  created=$(admin /admin/keys "{\"account\":$account,\"permissions\":[\"read\",\"trade\"]}")
  admin "/admin/accounts/$account/credit" "{\"asset\":\"$1\",\"amount\":\"$2\"}" >/dev/null
  echo "$(echo "$created" | sed -E 's/.*"id":"([A-Za-z0-9]+)".*/\1/') $(echo "$created" | sed -E 's/.*"secret":"([A-Za-z0-9]+)".*/\1/')"
}
order() {
  local key="$1" secret="$2" body="$3&timestamp=$(date +%s%3N)"
  curl -fs -o /dev/null -H "X-MBX-APIKEY: $key" "127.0.0.1:18080/api/v3/order" \
    --data "$body&signature=$(printf '%s' "$body" | openssl dgst -sha256 -hmac "$secret" | sed 's/.* //')"
}
read -r maker maker_secret <<<"$(account ETH 1000)"
read -r taker taker_secret <<<"$(account USDT 10000000)"
# A day of statistics to compute: 200 trades.
for i in $(seq 0 99); do
  order "$maker" "$maker_secret" "symbol=ETHUSDT&side=SELL&type=LIMIT&timeInForce=GTC&quantity=0.02&price=$((3000 + i))"
  order "$taker" "$taker_secret" "symbol=ETHUSDT&side=BUY&type=MARKET&quantity=0.01"
  order "$taker" "$taker_secret" "symbol=ETHUSDT&side=BUY&type=MARKET&quantity=0.01"
done

one="/api/v3/simple/price?ids=ethereum&vs_currencies=usd&include_24hr_vol=true&include_24hr_change=true&include_last_updated_at=true"
many="/api/v3/simple/price?ids=ethereum,tether,bitcoin&vs_currencies=usd,eth&include_24hr_vol=true&include_24hr_change=true"
echo "Median of ${BENCH_ROUNDS:-4} alternating ${secs}-second runs each:"
echo
echo "| route | connections | baseline req/s | weiport req/s | ratio |"
echo "|---|---|---|---|---|"
for c in ${BENCH_CONNECTIONS:-8 64}; do
  for path in "$one" "$many" /api/v3/ping; do
    read -r base ours <<<"$(compare "$c" "get http://127.0.0.1:18090/api/v3/simple/price" "get http://127.0.0.1:18080$path")"
    printf '| `%s` | %s | %s | %s | %s |\n' "${path#/api/v3/}" "$c" "$base" "$ours" "$(ratio "$ours" "$base")"
  done
done
