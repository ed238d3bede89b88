"""ccxt's unified wallet methods against weiport, unchanged but for their URLs.
Arguments: an action, the base URL, a key and its secret, then the action's
own. Prints one JSON document: what ccxt returned, reduced to the fields the
tests compare, or {"error": class, "message": text} for a refusal.

  address                      fetch_deposit_address("ETH")
  deposits                     fetch_deposits("ETH")
  withdraw ADDRESS AMOUNT [ID] withdraw("ETH", AMOUNT, ADDRESS[, withdrawOrderId])
  withdrawals                  fetch_withdrawals("ETH")

An action written ACTION@NETWORK passes {"network": NETWORK} too.
"""

import json
import sys

import ccxt

from clientkit import ccxt_binance

action, base, key, secret, *rest = sys.argv[1:]
action, _, network = action.partition("@")
on_network = {"network": network} if network else {}
client = ccxt_binance(base, key, secret)


def transaction(t):
    return {
        "id": t["id"],
        "txid": t["txid"],
        "amount": t["amount"],
        "status": t["status"],
        "address": t["address"],
        "fee": (t.get("fee") or {}).get("cost"),
        "type": t["type"],
        "network": t.get("network"),
    }


try:
    if action == "address":
        found = client.fetch_deposit_address("ETH", on_network)
        result = {"address": found["address"], "currency": found["currency"]}
    elif action == "deposits":
        result = [transaction(t) for t in client.fetch_deposits("ETH", params=on_network)]
    elif action == "withdraw":
        address, amount, *client_id = rest
        params = {"withdrawOrderId": client_id[0]} if client_id else {}
        params.update(on_network)
        result = {"id": client.withdraw("ETH", float(amount), address, params=params)["id"]}
    elif action == "withdrawals":
        result = [transaction(t) for t in client.fetch_withdrawals("ETH", params=on_network)]
    else:
        sys.exit(f"unknown action {action}")
except ccxt.BaseError as error:
    result = {"error": type(error).__name__, "message": str(error)}
print(json.dumps(result))
