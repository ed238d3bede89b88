#!/usr/bin/env bash
# The request path of a process in a cluster against the same process alone,
# in one run: two release `weiport serve`s, one with [cluster] redis_url set
# (its Redis on loopback), one without, same configuration otherwise, both
# indexing one anvil. wrk, one thread pinned to CPU 0; both servers, Redis
# and anvil pinned to CPU 1 (Redis's work is part of the clustered path).
#
# Rows, each at BENCH_CONNECTIONS (default "8 64"):
#  - ticker/price (unsigned: the IP's weight),
#  - signed GET /api/v3/account (signature, the IP's and the key's weight),
#  - Etherscan balance with an API key (the key's weight, a query call),
#  - signed, durable POST /api/v3/order (an order counted exactly in Redis).
# Limits are high (as in bench-request-path.sh), so slices are large and
# the clustered process asks Redis about once per 1/16 of a budget; orders
# ask it every time.
# Env: BENCH_SECS (default 10, at most 55), BENCH_ROUNDS, BENCH_CONNECTIONS,
# BENCH_ROUTES (a regular expression: the rows whose route it matches),
# BENCH_WEIPORT_BIN (another build to measure, e.g. an earlier commit's).
source "$(dirname "${BASH_SOURCE[0]}")/bench-http.sh"
[ "$secs" -le 55 ] || { echo "BENCH_SECS must stay within the 60 s recvWindow" >&2; exit 2; }
apt_install redis-server

"${server_cpu[@]}" "$WEIPORT_ANVIL" --host 127.0.0.1 --port 18545 --silent & pids+=($!)
node=http://127.0.0.1:18545
for _ in $(seq 50); do
  curl -fs -H 'content-type: application/json' "$node" \
    --data '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}' >/dev/null && break
  sleep 0.1
done
mkdir -p "$work/redis"
"${server_cpu[@]}" redis-server --port 18379 --bind 127.0.0.1 --dir "$work/redis" \
  --save "" --appendonly no >/dev/null & pids+=($!)
until redis-cli -p 18379 ping >/dev/null 2>&1; do sleep 0.1; done

config() {
  cat <<TOML
[node]
url = "$node"
[wallet]
enabled = false
$UNLIMITED_ACCESS
[access.query_tiers]
default = 5
bench = 100000000
TOML
}
export WEIPORT_MASTER_KEY
WEIPORT_MASTER_KEY="$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
# Fed by redirection, not a pipe: start_weiport must run in this shell to
# record the server's pid (pinned and stopped with the others).
start_weiport /healthz 18080 < <(config)
start_weiport /healthz 18082 < <(config; printf '[cluster]\nredis_url = "redis://127.0.0.1:18379"\nnode_name = "bench"\n')

# key PORT: makes a funded trading key on the server on PORT; prints "id secret".
key() {
  local account created
  account=$(ADMIN_PORT=$(($1 + 1)) admin /admin/accounts '{"label":"bench"}' | sed -E 's/.*"id":([0-9]+).*/\1/')
  created=$(ADMIN_PORT=$(($1 + 1)) admin /admin/keys "{\"account\":$account,\"permissions\":[\"read\",\"trade\"],\"tier\":\"bench\"}")
  ADMIN_PORT=$(($1 + 1)) admin "/admin/accounts/$account/credit" '{"asset":"USDT","amount":"100000000"}' >/dev/null
  echo "$(echo "$created" | sed -E 's/.*"id":"([A-Za-z0-9]+)".*/\1/') $(echo "$created" | sed -E 's/.*"secret":"([A-Za-z0-9]+)".*/\1/')"
}
read -r alone_key alone_secret <<<"$(key 18080)"
read -r cluster_key cluster_secret <<<"$(key 18082)"
for port in 18080 18082; do
  for _ in $(seq 100); do curl -fs "127.0.0.1:$port/readyz" | grep -q '"status":"ready"' && break; sleep 0.1; done
done
pin_servers
taskset -acp 1 "$(pgrep -f 'redis-server.*18379')" >/dev/null

signed() { # SECRET PARAMS: PARAMS with a timestamp and their signature
  local body="$2&timestamp=$(date +%s%3N)&recvWindow=60000"
  echo "$body&signature=$(printf '%s' "$body" | openssl dgst -sha256 -hmac "$1" | sed 's/.* //')"
}
# account PORT CONNECTIONS / order PORT CONNECTIONS: signed now, by PORT's key.
account() {
  local key=$alone_key secret=$alone_secret
  [ "$1" = 18082 ] && key=$cluster_key secret=$cluster_secret
  WRK_HEADERS="X-MBX-APIKEY: $key" measure "$2" "http://127.0.0.1:$1/api/v3/account?$(signed "$secret" "omitZeroBalances=true")"
}
order() {
  local key=$alone_key secret=$alone_secret
  [ "$1" = 18082 ] && key=$cluster_key secret=$cluster_secret
  WRK_METHOD=POST WRK_BODY="$(signed "$secret" "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=IOC&quantity=0.01&price=1000&newOrderRespType=ACK")" \
    WRK_HEADERS="X-MBX-APIKEY: $key|Content-Type: application/x-www-form-urlencoded" \
    measure "$2" "http://127.0.0.1:$1/api/v3/order"
}
balance() {
  local key=$alone_key
  [ "$1" = 18082 ] && key=$cluster_key
  measure "$2" "http://127.0.0.1:$1/api?module=account&action=balance&address=0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266&tag=latest&apikey=$key"
}
row() { # NAME CONNECTIONS ALONE_RUNNER CLUSTER_RUNNER
  local a c
  [[ "$1" =~ ${BENCH_ROUTES:-.} ]] || return 0
  read -r a c <<<"$(compare "$2" "$3" "$4")"
  printf '| %s | %s | %s | %s | %s |\n' "$1" "$2" "$a" "$c" "$(ratio "$c" "$a")"
}

echo
echo "Peak, median of ${BENCH_ROUNDS:-4} alternating ${secs}-second runs each:"
echo
echo "| route | connections | alone req/s | in a cluster req/s | cluster / alone |"
echo "|---|---|---|---|---|"
for c in ${BENCH_CONNECTIONS:-8 64}; do
  row "ticker/price" "$c" "get http://127.0.0.1:18080/api/v3/ticker/price?symbol=ETHUSDT" \
    "get http://127.0.0.1:18082/api/v3/ticker/price?symbol=ETHUSDT"
  row "signed GET /api/v3/account" "$c" "account 18080" "account 18082"
  row "Etherscan balance (API key)" "$c" "balance 18080" "balance 18082"
  row "signed POST /api/v3/order (durable)" "$c" "order 18080" "order 18082"
done
echo
for port in 18080 18082; do
  order "$port" 64 | awk -v port="$port" '{ print "order run on " port ", 64 connections: " $1 " req/s, non-2xx answers: " $4 }'
done
echo "budget slices leased by the clustered process (Lua scripts run by Redis): $(redis-cli -p 18379 info commandstats | grep -E 'cmdstat_(evalsha|eval):' | sed -E 's/^[^:]*:calls=([0-9]+).*/\1/' | awk '{ n += $1 } END { print n + 0 }')"
