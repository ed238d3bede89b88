#!/usr/bin/env bash
# Photographs the status page of a sandbox (two chains, the market maker and
# the chain transfers) that has run MINUTES minutes (default 10), into
# docs/status.png: `scripts/status-picture.sh [MINUTES]`.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$REPO_ROOT"
minutes=${1:-10}

cargo build -j2 --locked --bin weiport
data=$(mktemp -d)
"$CARGO_TARGET_DIR/debug/weiport" sandbox --data-dir "$data" >"$data/sandbox.out" 2>&1 &
sandbox=$!
stop() {
  kill -INT "$sandbox" 2>/dev/null || true
  wait "$sandbox" 2>/dev/null || true
  rm -rf "$data"
}
trap stop EXIT

admin=""
for _ in $(seq 1 120); do
  admin=$(sed -n 's/^ *Admin *\(http:[^ ]*\).*/\1/p' "$data/sandbox.out" | head -n 1)
  [ -n "$admin" ] && break
  kill -0 "$sandbox" 2>/dev/null || { cat "$data/sandbox.out"; exit 1; }
  sleep 1
done
[ -n "$admin" ] || { echo "the sandbox did not start within two minutes" >&2; exit 1; }
echo "sandbox up, admin on $admin; photographing its status page in $minutes min"
sleep $((minutes * 60))

curl -sf -H "Authorization: Bearer $(cat "$data/admin.token")" "$admin/status" >"$data/status.html"
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1000,1000 \
  --screenshot="$REPO_ROOT/docs/status.png" "file://$data/status.html" 2>/dev/null
echo "docs/status.png: $(stat -c %s docs/status.png) bytes"
