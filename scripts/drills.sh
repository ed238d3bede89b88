#!/usr/bin/env bash
# The fault drills at scale, in one command: the indexer and the engine
# SIGKILLed KILLS times each (default 20) during a catch-up and an order flood,
# the node's outages and garbage answers through the fault proxy, reorgs, the
# wallet's kills (a deposit seen, a withdrawal sent), the data dir's disk
# filling up, the server's clock stepped back and ahead, and the replicated
# exchange's primary killed KILLS times under load on a three-server NATS
# cluster (each NATS server killed in turn as well), and the power cuts: the
# engine's disk KILLS times under an order flood, all three NATS servers
# together (with sync-before-ack, and once with JetStream's lazy default to
# show the loss the drill detects), the primary's machine. Prints each drill's
# figures; fails if any drill finds a wrong balance or a lost acknowledgement.
#   scripts/drills.sh [KILLS]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$REPO_ROOT"
export DRILL_KILLS="${1:-20}" DRILL_BLOCKS="${DRILL_BLOCKS:-8000}"
export WEIPORT_DRILL_KILLS="$DRILL_KILLS"
cargo test -j2 --locked --test indexer_crash --test exchange_crash --test indexer --test wallet \
  --test disk_full --test clock_skew --test failover --test power_cut -- \
  --nocapture --test-threads=1 sigkill node_outages reorganisations kill disk clock primary_killed \
  power 2>&1 |
  grep -oE 'drill: .*|disk full: .*|test [a-z0-9_]+ \.\.\. (ok|FAILED)|test result.*|panicked.*'
