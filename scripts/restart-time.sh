#!/usr/bin/env bash
# Restart time against command-log length (tests/restart.rs): for each count
# of crossing order pairs (two log entries each; default 100,000 and 500,000),
# writes the log, starts `weiport serve` on it twice (the first start also
# writes the history rows the log lacks) and prints the times. A release
# build: the dev build checks the engine's invariants after every command.
#   scripts/restart-time.sh [PAIRS ...]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$REPO_ROOT"
source "$REPO_ROOT/scripts/rocksdb-prebuilt.sh"
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(100000 500000)
for pairs in "${counts[@]}"; do
  RESTART_PAIRS="$pairs" cargo test -j2 --release --locked --test restart -- --nocapture 2>&1 |
    grep -E '^restart:|test result|panicked|FAILED'
done
