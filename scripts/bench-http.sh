# Shared by the HTTP load benchmarks (source it): builds the release server
# and the baseline, starts the baseline on 127.0.0.1:18090, and provides
# start_weiport (config TOML on stdin, extra to the common part), admin (admin
# API call), pin_servers, and measure (one wrk run).
#
# Method: wrk with one thread pinned to CPU 0 and every server pinned to CPU 1,
# so the generator is never the bottleneck; each figure is a ratio against a
# baseline measured in the same run.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
source "$(dirname "${BASH_SOURCE[0]}")/rocksdb-prebuilt.sh"
cd "$REPO_ROOT"
apt_install wrk curl openssl

secs="${BENCH_SECS:-10}"
cargo build -j2 --locked --release --bin weiport --example baseline_server
bin="$CARGO_TARGET_DIR/release"
work="$(mktemp -d -t weiport-bench.XXXXXX)"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT

# BENCH_PIN=after (default; the journal's tables before BENCH_PIN came in):
# servers start unpinned and pin_servers moves every thread onto CPU 1, so
# each runtime keeps a worker per core of the machine, taking turns on one.
# BENCH_PIN=start: every server starts on CPU 1 and sizes its runtime to
# that one core.
server_cpu=()
[ "${BENCH_PIN:-after}" = start ] && server_cpu=(taskset -c 1)

# Its durable route appends to a log in the work directory.
BASELINE_LOG_DIR="$work" "${server_cpu[@]}" "$bin/examples/baseline_server" 127.0.0.1:18090 2>/dev/null & pids+=($!)

# start_weiport READY_PATH [PORT]: config extras on stdin; listens on PORT
# (default 18080) and its admin API on PORT + 1; waits until READY_PATH answers.
# BENCH_WEIPORT_BIN names another build to measure (e.g. an earlier commit's, to
# compare before and after against the same baseline).
start_weiport() {
  local port="${2:-18080}"
  {
    cat <<TOML
data_dir = "$work/data-$port"
[server]
listen = "127.0.0.1:$port"
[admin]
listen = "127.0.0.1:$((port + 1))"
token = "bench"
[log]
level = "warn"
TOML
    cat
  } > "$work/config-$port.toml"
  "${server_cpu[@]}" "${BENCH_WEIPORT_BIN:-$bin/weiport}" --config "$work/config-$port.toml" serve & pids+=($!)
  for _ in $(seq 100); do curl -fs -o /dev/null "127.0.0.1:$port$1" && return; sleep 0.1; done
  echo "weiport did not become ready" >&2; exit 1
}

# admin PATH BODY: a POST to the admin API of the server on ADMIN_PORT (18081).
admin() { curl -fs -H 'authorization: Bearer bench' -H 'content-type: application/json' "127.0.0.1:${ADMIN_PORT:-18081}$1" --data "$2"; }

# The access limits a load run lifts out of its way, for a configuration.
UNLIMITED_ACCESS="$(cat <<'TOML'
[access]
ip_weight_per_minute = 1000000000
key_weight_per_minute = 1000000000
orders_per_10s = 1000000000
orders_per_day = 1000000000
TOML
)"

# exchange_config DURABILITY NATS_URLS: the exchange alone (no indexer, no
# wallet), its durability as given, limits lifted.
exchange_config() {
  cat <<TOML
[indexer]
enabled = false
[wallet]
enabled = false
$UNLIMITED_ACCESS
[exchange]
durability = "$1"
[cluster]
nats_urls = $2
TOML
}

# funded_key ADMIN_PORT ASSET AMOUNT: "id secret" of a new trading key whose
# account holds AMOUNT of ASSET.
funded_key() {
  local account created
  account=$(ADMIN_PORT=$1 admin /admin/accounts '{"label":"bench"}' | sed -E 's/.*"id":([0-9]+).*/\1/')
  created=$(ADMIN_PORT=$1 admin /admin/keys "{\"account\":$account,\"permissions\":[\"read\",\"trade\"]}")
  ADMIN_PORT=$1 admin "/admin/accounts/$account/credit" "{\"asset\":\"$2\",\"amount\":\"$3\"}" >/dev/null
  echo "$(echo "$created" | sed -E 's/.*"id":"([A-Za-z0-9]+)".*/\1/') $(echo "$created" | sed -E 's/.*"secret":"([A-Za-z0-9]+)".*/\1/')"
}

# Every server started so far, every thread of it, onto CPU 1.
pin_servers() { for pid in "${pids[@]}"; do taskset -acp 1 "$pid" >/dev/null; done; }

# The request wrk sends, from the environment: WRK_METHOD, WRK_BODY,
# WRK_HEADERS ("Name: value|Name: value"), WRK_DELAY_MS (for runs below peak
# load: a pause before each request of a connection, drawn uniformly from
# 1..2×WRK_DELAY_MS-1 ms so that connections do not fire in step).
cat > "$work/request.lua" <<'LUA'
wrk.method = os.getenv("WRK_METHOD") or "GET"
wrk.body = os.getenv("WRK_BODY")
for name, value in string.gmatch(os.getenv("WRK_HEADERS") or "", "([^:|]+):%s*([^|]+)") do
  wrk.headers[name] = value
end
local pause = tonumber(os.getenv("WRK_DELAY_MS") or "0")
if pause > 0 then
  function delay() return math.random(1, 2 * pause - 1) end
end
LUA

# measure CONNECTIONS URL: one wrk run of $secs seconds; prints
# "req/s p50_ms p99_ms non_2xx".
measure() {
  taskset -c 0 wrk -t1 -c"$1" -d"${secs}s" --latency -s "$work/request.lua" "$2" | awk '
    function ms(v) {
      if (v ~ /us$/) return substr(v, 1, length(v) - 2) / 1000
      if (v ~ /ms$/) return substr(v, 1, length(v) - 2) + 0
      if (v ~ /s$/) return substr(v, 1, length(v) - 1) * 1000
      return v
    }
    $1 == "50%" { p50 = ms($2) }
    $1 == "99%" { p99 = ms($2) }
    /Non-2xx or 3xx responses:/ { bad = $NF }
    /^Requests\/sec:/ { rps = $2 }
    END { printf "%.0f %.3f %.3f %d\n", rps, p50, p99, bad }'
}

# compare CONNECTIONS RUNNER...: each RUNNER, a command and its words (no
# spaces inside a word) that is given the connection count last and prints
# measure's line, run BENCH_ROUNDS times (default 4), taking turns, so
# that drift of the machine during a run falls on every server alike; every
# other round takes the turns in reverse, as the first run of a round
# measured a few percent faster than the same server run later in it (an
# even count of rounds balances the turns); prints the median req/s of each
# RUNNER in order (of an even count, the lower middle one).
compare() {
  local c="$1"; shift
  local rounds="${BENCH_ROUNDS:-4}" round i step runner
  local -a results=() runners=("$@")
  for ((round = 0; round < rounds; round++)); do
    for ((step = 0; step < $#; step++)); do
      i=$(( round % 2 == 0 ? step : $# - 1 - step ))
      runner="${runners[i]}"
      # shellcheck disable=SC2086 # the runner's words, split on purpose
      results[i]+="$($runner "$c" | cut -d' ' -f1) "
    done
  done
  local out=()
  for ((i = 0; i < $#; i++)); do
    out+=("$(tr ' ' '\n' <<<"${results[i]}" | grep . | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')")
  done
  echo "${out[*]}"
}

# get URL CONNECTIONS: a measure of GET URL (a runner for compare).
get() { measure "$2" "$1"; }

# ratio A B: A / B with two decimals and a ×.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f×", a / b }'; }
