#!/usr/bin/env bash
# A local cluster to try "more than one process": one redis-server (keys,
# limits, bans), three nats-servers in a JetStream cluster (the exchange's
# replicated journal, synced to disk before each acknowledgement), one anvil node, and three weiport processes on three
# ports. Any process serves every face: one leads the exchange (and its
# wallet signs, sweeps and credits), the others follow its journal and pass
# it their orders; each indexes the same chain for the Etherscan face and
# the deposit history. Ctrl-C stops all of it.
# Environment: CLUSTER_DIR (default: a new temporary directory), CLUSTER_PORT
# (first public port, default 8180; process n listens on CLUSTER_PORT + 10n,
# its admin API one above).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$REPO_ROOT"

cargo build -j2 --locked --bin weiport
weiport="$CARGO_TARGET_DIR/debug/weiport"

dir="${CLUSTER_DIR:-$(mktemp -d -t weiport-cluster.XXXXXX)}"
first_port="${CLUSTER_PORT:-8180}"
mkdir -p "$dir"
# free_ports N: N distinct free loopback ports (all held open while chosen,
# so no two are the same).
free_ports() {
  python3 -c 'import socket, sys
held = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in held: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in held))' "$1"
}
read -r redis_port anvil_port n0 n1 n2 r0 r1 r2 <<<"$(free_ports 8)"
nats_ports=("$n0" "$n1" "$n2")
route_ports=("$r0" "$r1" "$r2")

pids=()
stop() {
  trap - INT TERM EXIT
  echo
  echo "stopping the cluster"
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap stop EXIT
trap 'exit 0' INT TERM

mkdir -p "$dir/redis"
redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$dir/redis" \
  --save "" --appendonly no >"$dir/redis.log" 2>&1 &
pids+=($!)
"$WEIPORT_ANVIL" --host 127.0.0.1 --port "$anvil_port" --block-time 1 >"$dir/anvil.log" 2>&1 &
pids+=($!)
routes="$(printf 'nats-route://127.0.0.1:%s,' "${route_ports[@]}")"
nats_urls=""
for n in 0 1 2; do
  mkdir -p "$dir/nats-$n"
  cat >"$dir/nats-$n/nats.conf" <<NATS
server_name: nats-$n
listen: 127.0.0.1:${nats_ports[n]}
jetstream { store_dir: "$dir/nats-$n/js", sync_interval: always }
cluster { name: weiport, listen: 127.0.0.1:${route_ports[n]}, routes: [${routes%,}] }
NATS
  "$WEIPORT_NATS_SERVER" -c "$dir/nats-$n/nats.conf" >"$dir/nats-$n.log" 2>&1 &
  pids+=($!)
  nats_urls+="\"nats://127.0.0.1:${nats_ports[n]}\","
done
nats_urls="[${nats_urls%,}]"
until redis-cli -p "$redis_port" ping >/dev/null 2>&1; do sleep 0.1; done
until curl -s -o /dev/null -X POST -H 'content-type: application/json' \
  --data '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}' \
  "http://127.0.0.1:$anvil_port"; do sleep 0.1; done

# Every process of a cluster opens the same sealed secrets.
master_key="$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
for n in 1 2 3; do
  port=$((first_port + 10 * (n - 1)))
  mkdir -p "$dir/node-$n"
  WEIPORT_MASTER_KEY="$master_key" \
  WEIPORT_DATA_DIR="$dir/node-$n" \
  WEIPORT_SERVER__LISTEN="127.0.0.1:$port" \
  WEIPORT_ADMIN__LISTEN="127.0.0.1:$((port + 1))" \
  WEIPORT_NODE__URL="http://127.0.0.1:$anvil_port" \
  WEIPORT_CLUSTER__REDIS_URL="redis://127.0.0.1:$redis_port" \
  WEIPORT_CLUSTER__NODE_NAME="node-$n" \
  WEIPORT_CLUSTER__NATS_URLS="$nats_urls" \
  WEIPORT_EXCHANGE__DURABILITY=replicated \
    "$weiport" serve >"$dir/node-$n.log" 2>&1 &
  pids+=($!)
done
for n in 1 2 3; do
  port=$((first_port + 10 * (n - 1)))
  until curl -sf "http://127.0.0.1:$port/healthz" >/dev/null; do sleep 0.2; done
done

token1="$(cat "$dir/node-1/admin.token")"
cat <<SCREEN

weiport cluster (data and logs in $dir)

  redis-server   redis://127.0.0.1:$redis_port    keys, accounts, rate limits, bans
  nats-server ×3 $nats_urls
                 the exchange's journal (JetStream, three replicas)
  anvil          http://127.0.0.1:$anvil_port     one chain, a block a second
  node-1         http://127.0.0.1:$first_port     every face   admin :$((first_port + 1))
  node-2         http://127.0.0.1:$((first_port + 10))     every face   admin :$((first_port + 11))
  node-3         http://127.0.0.1:$((first_port + 20))     every face   admin :$((first_port + 21))

Who leads the exchange: curl -s -H "authorization: Bearer \$(cat $dir/node-2/admin.token)" http://127.0.0.1:$((first_port + 11))/admin/cluster

Each admin API has its own token: $dir/node-N/admin.token. A key made on any
process works on all three at once; revoked on one, it is refused on all.

  curl -s -XPOST -H "authorization: Bearer $token1" http://127.0.0.1:$((first_port + 1))/admin/accounts -d '{}' -H 'content-type: application/json'
  curl -s -XPOST -H "authorization: Bearer $token1" http://127.0.0.1:$((first_port + 1))/admin/keys -d '{"account":1}' -H 'content-type: application/json'
  curl -s "http://127.0.0.1:$((first_port + 20))/api?module=proxy&action=eth_blockNumber&apikey=<id>"

Ctrl-C stops everything.
SCREEN
wait -n "${pids[@]}" || true
echo "a process of the cluster stopped; see the logs in $dir"
