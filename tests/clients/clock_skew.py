"""ccxt's binance against a weiport whose clock is off the client's.
Arguments: the base URL, a key, its secret and a mode:

  unsynced   create_order with the client's own clock
  synced     the same after load_time_difference() (ccxt reads /api/v3/time
             and signs with the server's clock from then on; its option
             adjustForTimeDifference would do it only after load_markets'
             first signed call, which a skewed clock already fails)

Prints one JSON document: {"id", "status"} of the order placed (then
cancelled), or {"error": class, "message": text} for a refusal.
"""

import json
import sys

import ccxt

from clientkit import ccxt_binance

base, key, secret, mode = sys.argv[1:]
client = ccxt_binance(base, key, secret)
try:
    if mode == "synced":
        client.load_time_difference()
    client.load_markets()
    order = client.create_order("ETH/USDT", "limit", "buy", 0.01, 1000)
    client.cancel_order(order["id"], "ETH/USDT")
    result = {"id": order["id"], "status": order["status"]}
except ccxt.BaseError as error:
    result = {"error": type(error).__name__, "message": str(error)}
print(json.dumps(result))
