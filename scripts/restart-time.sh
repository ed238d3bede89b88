#!/usr/bin/env bash
# Restart time against command-log length (tests/restart.rs): for each count
# of crossing order pairs (two log entries each; default 100,000 and 500,000),
# writes the log, starts `weiport serve` on it twice (the first start also
# writes the history rows the log lacks) and prints the times.
#   scripts/restart-time.sh [PAIRS ...]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$REPO_ROOT"
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(100000 500000)
for pairs in "${counts[@]}"; do
  RESTART_PAIRS="$pairs" cargo test -j2 --locked --test restart -- --nocapture 2>&1 |
    grep -E '^restart:|test result|panicked|FAILED'
done
