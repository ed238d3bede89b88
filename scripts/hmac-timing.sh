#!/usr/bin/env bash
# The statistical timing check of secret comparisons (access/src/timing.rs) at
# full size in a release build: HMAC signatures and the admin token wrong in
# their first vs their last byte, and an early-exit comparison as the positive
# control. Prints Welch's t for each; |t| < 10 means no measurable dependence.
#   scripts/hmac-timing.sh [SAMPLES_PER_CLASS]   (default 1,000,000)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$REPO_ROOT"
source "$REPO_ROOT/scripts/rocksdb-prebuilt.sh"
TIMING_SAMPLES="${1:-1000000}" cargo test -j2 --release --locked -p weiport-access --lib timing \
  -- --nocapture --test-threads=1 2>&1 | grep -E 't = |test result|panicked|FAILED'
