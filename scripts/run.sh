#!/usr/bin/env bash
# Runs weiport against a local anvil node it starts itself. Stops both on Ctrl-C.
# Environment: WEIPORT_* configuration overrides (see config/default.toml),
# ANVIL_PORT (default 8545).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$WEIPORT_ROOT"

cargo build -j2 --locked --bin weiport
anvil_port="${ANVIL_PORT:-8545}"
data_dir="${WEIPORT_DATA_DIR:-$WEIPORT_ROOT/data/weiport}"
mkdir -p "$(dirname "$data_dir")"

"$WEIPORT_ANVIL" --host 127.0.0.1 --port "$anvil_port" --silent &
anvil_pid=$!
trap 'kill $anvil_pid 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  curl -fsS -o /dev/null -X POST -H 'content-type: application/json' \
    --data '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}' \
    "http://127.0.0.1:$anvil_port" && break
  sleep 0.1
done
echo "anvil: http://127.0.0.1:$anvil_port (pid $anvil_pid)" >&2

export WEIPORT_NODE__URL="${WEIPORT_NODE__URL:-http://127.0.0.1:$anvil_port}"
export WEIPORT_DATA_DIR="$data_dir"
"$CARGO_TARGET_DIR/debug/weiport" serve "$@"
