#!/usr/bin/env bash
# Soak under mixed load (tests/soak.rs) for SECONDS (default 600): anvil
# mining transfers, Etherscan and market-data reads, three traders crossing
# and cancelling orders, trade and depth streams. Prints the server's memory,
# descriptors and request rate every 10 s, per-route p50/p99, and checks the
# index against the node and the books after a restart. The figures go to
# target/soak/soak.txt and the memory/descriptor curves to
# target/soak/soak.svg. A dev build: the engine asserts its ledger
# invariants after every command.
#   scripts/soak.sh [SECONDS]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$REPO_ROOT"
seconds="${1:-600}"
out="$CARGO_TARGET_DIR/soak"
mkdir -p "$out"
# cargo test, not nextest: the suite's profile stops a test after 3 minutes.
SOAK_SECONDS="$seconds" cargo test -j2 --locked --test soak -- --nocapture 2>&1 |
  grep --line-buffered -E '^soak|panicked|test result' | tee "$out/soak.txt"
"$WEIPORT_PYTHON" scripts/soak_plot.py "$out/soak.txt" "$out/soak.svg"
echo "soak: curves in $out/soak.svg"
