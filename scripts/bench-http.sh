# Shared by the HTTP load benchmarks (source it): builds the release server
# and the baseline, starts the baseline on 127.0.0.1:18090, and provides
# start_weiport (config TOML on stdin, extra to the common part), admin
# (admin API call), and readers of hey's report (rps, pct, ms).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
source "$(dirname "${BASH_SOURCE[0]}")/rocksdb-prebuilt.sh"
cd "$REPO_ROOT"
apt_install hey curl openssl

secs="${BENCH_SECS:-10}"
conc="${BENCH_CONCURRENCY:-32}"
cargo build -j2 --locked --release --bin weiport --example baseline_server
bin="$CARGO_TARGET_DIR/release"
work="$(mktemp -d -t weiport-bench.XXXXXX)"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT

"$bin/examples/baseline_server" 127.0.0.1:18090 2>/dev/null & pids+=($!)

# start_weiport READY_PATH: config extras on stdin; waits until READY_PATH answers.
start_weiport() {
  {
    cat <<TOML
data_dir = "$work/data"
[server]
listen = "127.0.0.1:18080"
[admin]
listen = "127.0.0.1:18081"
token = "bench"
[log]
level = "warn"
TOML
    cat
  } > "$work/config.toml"
  "$bin/weiport" --config "$work/config.toml" serve & pids+=($!)
  for _ in $(seq 100); do curl -fs -o /dev/null "127.0.0.1:18080$1" && return; sleep 0.1; done
  echo "weiport did not become ready" >&2; exit 1
}

admin() { curl -fs -H 'authorization: Bearer bench' -H 'content-type: application/json' "127.0.0.1:18081$1" --data "$2"; }
rps() { sed -nE 's/^ *Requests\/sec:\s+([0-9.]+).*/\1/p'; }
pct() { sed -nE "s/^ *$1% in ([0-9.]+) secs.*/\\1/p"; }
ms() { awk -v s="$1" 'BEGIN { printf "%.2f", s * 1000 }'; }
