"""Watches a running sandbox's market makers for SECONDS: every two seconds
each maker's base holding (free + locked, through its read-only key) must lie
within the band sandbox.json gives; at the end every trade of the maker's
account must have it as maker (it never takes) and appear once (a trade with
itself would be listed twice, once per side). Prints one line of figures
per market; exits non-zero on a breach. usage: sandbox_soak.py SANDBOX_JSON SECONDS"""

import hashlib
import hmac
import json
import sys
import time
import urllib.parse
import urllib.request
from decimal import Decimal

sandbox = json.load(open(sys.argv[1]))
seconds = float(sys.argv[2])
rest = sandbox["rest_url"]


def signed(path, key, params):
    params = dict(params, timestamp=int(time.time() * 1000))
    query = urllib.parse.urlencode(params)
    signature = hmac.new(key["secret"].encode(), query.encode(), hashlib.sha256).hexdigest()
    request = urllib.request.Request(
        f"{rest}{path}?{query}&signature={signature}", headers={"X-MBX-APIKEY": key["api_key"]}
    )
    with urllib.request.urlopen(request) as answer:
        return json.load(answer)


def public(path):
    with urllib.request.urlopen(f"{rest}{path}") as answer:
        return json.load(answer)


markets = {m["symbol"]: m for m in sandbox["market_makers"]}
bases = {s["symbol"]: s["baseAsset"] for s in public("/api/v3/exchangeInfo")["symbols"]}
seen = {symbol: [] for symbol in markets}
first_count = {s: public(f"/api/v3/ticker/24hr?symbol={s}")["count"] for s in markets}
end = time.time() + seconds
breaches = []
while time.time() < end:
    for symbol, maker in markets.items():
        balances = signed("/api/v3/account", maker["read_key"], {})["balances"]
        held = next((Decimal(b["free"]) + Decimal(b["locked"]) for b in balances if b["asset"] == bases[symbol]), Decimal(0))
        seen[symbol].append(held)
        low, high = Decimal(maker["min_inventory"]), Decimal(maker["max_inventory"])
        if not low <= held <= high:
            breaches.append(f"{symbol}: inventory {held} outside {low}..{high}")
    time.sleep(2)

for symbol, maker in markets.items():
    trades, from_id = [], 0
    while True:
        page = signed("/api/v3/myTrades", maker["read_key"], {"symbol": symbol, "fromId": from_id, "limit": 1000})
        trades += page
        if len(page) < 1000:
            break
        from_id = page[-1]["id"] + 1
    ids = [t["id"] for t in trades]
    if len(ids) != len(set(ids)):
        breaches.append(f"{symbol}: a trade listed twice (a trade with itself)")
    if any(not t["isMaker"] for t in trades):
        breaches.append(f"{symbol}: the maker took liquidity")
    count = public(f"/api/v3/ticker/24hr?symbol={symbol}")["count"] - first_count[symbol]
    held = seen[symbol]
    print(
        f"{symbol}: {seconds:.0f} s, {len(held)} samples, {count} trades in the window, "
        f"{len(trades)} maker trades in all, every one as maker and listed once; inventory "
        f"{min(held)}..{max(held)} within {maker['min_inventory']}..{maker['max_inventory']}"
    )
if breaches:
    sys.exit("\n".join(breaches))
