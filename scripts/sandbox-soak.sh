#!/usr/bin/env bash
# Runs the sandbox for SECONDS (default 600) and checks its market makers all
# along (scripts/sandbox_soak.py): inventory inside its band, no trade with
# itself. Prints the figures the README quotes.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$REPO_ROOT"
seconds="${1:-600}"
cargo build -j2 --locked --bin weiport
work="$(mktemp -d -t weiport-soak.XXXXXX)"
WEIPORT_SERVER__LISTEN=127.0.0.1:0 WEIPORT_ADMIN__LISTEN=127.0.0.1:0 WEIPORT_LOG__LEVEL=warn \
  "$CARGO_TARGET_DIR/debug/weiport" sandbox --data-dir "$work/data" > "$work/screen.txt" &
pid=$!
trap 'kill -INT $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 600); do [ -s "$work/data/sandbox.json" ] && break; sleep 0.1; done
"$WEIPORT_PYTHON" scripts/sandbox_soak.py "$work/data/sandbox.json" "$seconds"
