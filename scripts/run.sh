#!/usr/bin/env bash
# Runs weiport against a local anvil node it starts itself. Stops both on Ctrl-C.
# Environment: WEIPORT_* configuration overrides (see config/default.toml),
# ANVIL_PORT (default 8545).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$REPO_ROOT"

cargo build -j2 --locked --bin weiport
anvil_port="${ANVIL_PORT:-8545}"
# The node is new on every run, so by default the index is too: a throw-away
# data dir (set WEIPORT_DATA_DIR to keep one across runs of the same node).
if [ -n "${WEIPORT_DATA_DIR:-}" ]; then
  data_dir="$WEIPORT_DATA_DIR"
else
  data_dir="$(mktemp -d -t weiport-run.XXXXXX)"
  cleanup_data="$data_dir"
fi

"$WEIPORT_ANVIL" --host 127.0.0.1 --port "$anvil_port" --silent &
anvil_pid=$!
trap 'kill $anvil_pid 2>/dev/null || true; [ -n "${cleanup_data:-}" ] && rm -rf "$cleanup_data"' EXIT
for _ in $(seq 50); do
  curl -fsS -o /dev/null -X POST -H 'content-type: application/json' \
    --data '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}' \
    "http://127.0.0.1:$anvil_port" 2>/dev/null && break
  sleep 0.1
done
echo "anvil: http://127.0.0.1:$anvil_port (pid $anvil_pid)" >&2

export WEIPORT_NODE__URL="${WEIPORT_NODE__URL:-http://127.0.0.1:$anvil_port}"
export WEIPORT_DATA_DIR="$data_dir"
echo "data dir: $data_dir  (manage keys with: WEIPORT_DATA_DIR=$data_dir $CARGO_TARGET_DIR/debug/weiport keys --help)" >&2
"$CARGO_TARGET_DIR/debug/weiport" serve "$@"
