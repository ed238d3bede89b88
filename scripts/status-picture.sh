#!/usr/bin/env bash
# Photographs the status page of a sandbox (two chains, the market maker and
# the chain transfers) that has run MINUTES minutes (default 10), into
# docs/status.png: `scripts/status-picture.sh [MINUTES]`. Meanwhile a client
# asks each face about twice a second (an Etherscan balance on each chain, a
# Binance depth, a CoinGecko price), so the requests chart has something to draw.
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
public=$(sed -n 's/^ *REST *\(http:[^ ]*\).*/\1/p' "$data/sandbox.out" | head -n 1)
public=${public:-http://127.0.0.1:8080}
key=$(sed -n 's/^ *read-only key of #1: \([^ ]*\).*/\1/p' "$data/sandbox.out" | head -n 1)
holder=0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266
end=$((SECONDS + minutes * 60))
while [ "$SECONDS" -lt "$end" ]; do
  for chain in 31337 31338; do
    curl -s -o /dev/null "$public/v2/api?chainid=$chain&module=account&action=balance&address=$holder&tag=latest&apikey=$key" || true
  done
  curl -s -o /dev/null "$public/api/v3/depth?symbol=ETHUSDT&limit=5" || true
  curl -s -o /dev/null "$public/api/v3/simple/price?ids=ethereum&vs_currencies=usd" || true
  sleep 0.5
done

curl -sf -H "Authorization: Bearer $(cat "$data/admin.token")" "$admin/status" >"$data/status.html"
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1000,1000 \
  --screenshot="$REPO_ROOT/docs/status.png" "file://$data/status.html" 2>/dev/null
echo "docs/status.png: $(stat -c %s docs/status.png) bytes"
