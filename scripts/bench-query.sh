#!/usr/bin/env bash
# Query API load benchmark: `balance` through weiport (key check, limiter,
# index read) against a bare axum constant handler, same machine, same run.
# Peak throughput with `hey` at fixed concurrency, then p50/p99 at half of
# weiport's peak rate. Env: BENCH_SECS (default 10), BENCH_CONCURRENCY (32).
source "$(dirname "${BASH_SOURCE[0]}")/bench-http.sh"

"$WEIPORT_ANVIL" --host 127.0.0.1 --port 18545 --silent & pids+=($!)
sleep 1
start_weiport /readyz <<TOML
[node]
url = "http://127.0.0.1:18545"
[access]
ip_weight_per_minute = 1000000000
key_weight_per_minute = 1000000000
[access.query_tiers]
default = 5
bench = 100000000
TOML
account=$(admin /admin/accounts '{"label":"bench"}' | sed -E 's/.*"id":([0-9]+).*/\1/')
key=$(admin /admin/keys "{\"account\":$account,\"tier\":\"bench\"}" | sed -E 's/.*"id":"([A-Za-z0-9]+)".*/\1/')
address=0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266
weiport_url="http://127.0.0.1:18080/api?module=account&action=balance&address=$address&tag=latest&apikey=$key"
baseline_url="http://127.0.0.1:18090/api?module=account&action=balance&address=$address&tag=latest&apikey=$key"
curl -fs "$weiport_url"; echo

run() { hey -z "${secs}s" -c "$conc" "$@"; }

base_out=$(run "$baseline_url"); base_rps=$(echo "$base_out" | rps)
wei_out=$(run "$weiport_url"); wei_rps=$(echo "$wei_out" | rps)
half=$(awk -v r="$wei_rps" -v c="$conc" 'BEGIN { printf "%d", r / 2 / c }')
half_out=$(run -q "$half" "$weiport_url")
base_half_out=$(run -q "$half" "$baseline_url")
echo
echo "| target | peak req/s (c=$conc) | p50 at half load (ms) | p99 at half load (ms) |"
echo "|---|---|---|---|"
echo "| bare axum constant (baseline) | $base_rps | $(ms "$(echo "$base_half_out" | pct 50)") | $(ms "$(echo "$base_half_out" | pct 99)") |"
echo "| weiport \`balance\` | $wei_rps | $(ms "$(echo "$half_out" | pct 50)") | $(ms "$(echo "$half_out" | pct 99)") |"
awk -v w="$wei_rps" -v b="$base_rps" 'BEGIN { printf "\nratio weiport / baseline: %.2fx\n", w / b }'
