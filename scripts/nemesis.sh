#!/usr/bin/env bash
# The cluster under a nemesis for as long as asked: three weiport processes
# of one replicated exchange, three NATS servers, Redis and anvil, clients
# sending a random mix to any process, and faults drawn from SEED (processes
# SIGKILLed, SIGSTOPped and restarted, the primary killed, Redis lost or
# paused, NATS servers killed, processes cut off from Redis, NATS or each
# other); then the checker reads the recorded history and the final state.
# Prints the faults by kind, the operations by kind and outcome, every check
# and every violation; fails if there is one. The same seed replays the same
# schedule. With --shrink, a failing run is run again on ever shorter
# prefixes of its schedule, and the shortest that still fails is named.
#   scripts/nemesis.sh [MINUTES] [SEED] [--shrink]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$REPO_ROOT"
minutes="${1:-5}"
seed="${2:-$RANDOM}"
shrink="${3:-}"
cargo build -j2 --locked --tests --bins >/dev/null

run() { # STEPS (empty: the whole schedule); prints the figures, fails on a violation
  WEIPORT_NEMESIS_SEED="$seed" WEIPORT_NEMESIS_MINUTES="$minutes" WEIPORT_NEMESIS_STEPS="$1" \
    cargo nextest run -j2 --locked --profile nemesis --no-capture \
    -E 'binary(nemesis) & test(the_cluster_keeps_every_promise_under_the_seed_given)' 2>&1 |
    grep -E -A4 '^nemesis: |panicked' | grep -vE '^nemesis: +[0-9.]+ s step '
  return "${PIPESTATUS[0]}"
}

if run ""; then
  exit 0
fi
if [[ "$shrink" != "--shrink" ]]; then
  echo "nemesis: failed with seed $seed; scripts/nemesis.sh $minutes $seed --shrink finds the shortest failing prefix"
  exit 1
fi
# Bisect on the number of steps: the shortest prefix that still fails.
steps=$(( minutes * 60 / 2 ))
low=0 high=$steps
while (( high - low > 1 )); do
  mid=$(( (low + high) / 2 ))
  if run "$mid" >/dev/null; then low=$mid; else high=$mid; fi
done
echo "nemesis: seed $seed fails with its first $high steps: WEIPORT_NEMESIS_STEPS=$high"
run "$high" || true
exit 1
