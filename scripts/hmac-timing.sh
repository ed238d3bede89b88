#!/usr/bin/env bash
# The statistical timing checks, which the default test run leaves out (a
# timing on a shared machine moves with its load, not with the code):
# - access/src/timing.rs, in a release build: HMAC signatures and the admin
#   token wrong in their first vs their last byte, and an early-exit
#   comparison as the positive control. Prints Welch's t for each; |t| < 10
#   means no measurable dependence.
# - tests/hostile_input.rs, history_reads_far_from_the_data_cost_what_reads_near_it_cost,
#   in the dev build the suite runs: the median time of history reads aimed
#   far from the data against reads near it, over 100,000 stored trades.
#   Prints each pair's medians; far must stay within 4x near + 2 ms.
#   scripts/hmac-timing.sh [SAMPLES_PER_CLASS]   (default 1,000,000)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$REPO_ROOT"

echo "== history reads far from the data vs near it (dev build)"
cargo test -j2 --locked -p weiport --test hostile_input \
  history_reads_far_from_the_data_cost_what_reads_near_it_cost \
  -- --ignored --exact --nocapture 2>&1 | grep -E 'median of|test result|panicked|FAILED'

echo "== secret comparisons (release build, ${1:-1000000} samples a class)"
# In a subshell: the prebuilt RocksDB is for the release build only, so the
# dev build above keeps its own.
(
  source "$REPO_ROOT/scripts/rocksdb-prebuilt.sh"
  TIMING_SAMPLES="${1:-1000000}" cargo test -j2 --release --locked -p weiport-access --lib timing:: \
    -- --ignored --nocapture --test-threads=1 2>&1 | grep -E 't = |test result|panicked|FAILED'
)
