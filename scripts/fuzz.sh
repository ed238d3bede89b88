#!/usr/bin/env bash
# Seeded fuzzing of the whole server (tests/fuzz.rs): REQUESTS requests
# (default 100,000) generated from /openapi.json and the Etherscan and
# CoinGecko parameter spaces, raw junk and WebSocket junk, against a
# `weiport serve` on a real anvil, once a seed (each its own server).
# Prints the figures; fails on a 5xx, a panic, a refusal out of its API's
# shape, or a state change by a refusal.
#   scripts/fuzz.sh [REQUESTS] [SEEDS]   (SEEDS comma-separated, default 1,2,90210)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$REPO_ROOT"
export FUZZ_REQUESTS="${1:-100000}" FUZZ_SEEDS="${2:-1,2,90210}"
cargo test -j2 --locked --test fuzz -- --nocapture 2>&1 | grep -E '^fuzz:|test result|panicked|FAILED' 
