#!/usr/bin/env bash
# The quick start: builds weiport and runs `weiport sandbox` — a local anvil node,
# the server indexing it, test accounts with keys and fictitious funds, a market
# maker and a trickle of chain transfers. Ctrl-C stops all of it.
# Arguments go to `weiport sandbox` (--data-dir DIR, --node URL, --reset,
# --no-market-maker, --accounts N); WEIPORT_* variables configure the server
# as for `weiport serve` (see config/default.toml).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$REPO_ROOT"

cargo build -j2 --locked --bin weiport
exec "$CARGO_TARGET_DIR/debug/weiport" sandbox "$@"
