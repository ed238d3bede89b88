"""Stop-loss, take-profit and trailing orders through ccxt's unified
create_order, unchanged but for its URLs. Arguments: base URL, then key and
secret of accounts A (places the conditional orders), B (provides the
liquidity) and C (makes the trades that move the last price); each holds
100000 USDT and 10 ETH. Exits non-zero on the first mismatch."""

import sys

from clientkit import ccxt_binance, check

base = sys.argv[1]
a, b, c = (ccxt_binance(base, sys.argv[i], sys.argv[i + 1]) for i in (2, 4, 6))
SYMBOL = "ETH/USDT"
for client in (a, b, c):
    client.load_markets()


def balances(client):
    held = client.fetch_balance()
    return {asset: (held[asset]["free"], held[asset]["used"]) for asset in ("ETH", "USDT")}


def print_at(price):
    """A trade of 0.1 ETH at `price`: B bids, C sells into it."""
    b.create_order(SYMBOL, "limit", "buy", 0.1, price)
    c.create_order(SYMBOL, "market", "sell", 0.1)


# The last price: 3000.
b.create_order(SYMBOL, "limit", "sell", 0.1, 3000)
c.create_order(SYMBOL, "market", "buy", 0.1)
check("last price", c.fetch_ticker(SYMBOL)["last"], 3000.0)

# A stop-loss limit sell (stopLossPrice + a limit price: STOP_LOSS_LIMIT),
# a trailing stop-loss market sell of 1 % (STOP_LOSS, trailingDelta 100) and
# a take-profit market buy (TAKE_PROFIT).
stop_limit = a.create_order(SYMBOL, "limit", "sell", 1, 2890, {"stopLossPrice": 2900})
trailing = a.create_order(SYMBOL, "market", "sell", 0.5, None,
                          {"trailingPercent": 1, "stopLossOrTakeProfit": "stopLoss"})
take_profit = a.create_order(SYMBOL, "market", "buy", 0.5, None, {"takeProfitPrice": 2800})
for name, order, kind in [("stop limit", stop_limit, "STOP_LOSS_LIMIT"),
                          ("trailing", trailing, "STOP_LOSS"),
                          ("take profit", take_profit, "TAKE_PROFIT")]:
    fetched = a.fetch_order(order["id"], SYMBOL)
    check(f"{name} waits", (fetched["status"], fetched["info"]["type"], fetched["info"]["isWorking"],
                            fetched["info"]["workingTime"]), ("open", kind, False, -1))
check("stop limit trigger", a.fetch_order(stop_limit["id"], SYMBOL)["triggerPrice"], 2900.0)
check("trailing delta", a.fetch_order(trailing["id"], SYMBOL)["info"]["trailingDelta"], 100)
check("waiting orders are open orders", sorted(o["id"] for o in a.fetch_open_orders(SYMBOL)),
      sorted([stop_limit["id"], trailing["id"], take_profit["id"]]))
# The sells lock their ETH; the market buy's cost is known only when it works.
check("locked while waiting", balances(a), {"ETH": (8.5, 1.5), "USDT": (100000.0, 0.0)})
check("nothing on the book", a.fetch_order_book(SYMBOL)["asks"], [])

# Bids for the stops to sell into once they work, then a trade at 2900: the
# stop price is reached and 2900 is more than 1 % below 3000, so both sells
# trigger (the older first): 1 ETH at 2895, then 0.5 at 2850.
b.create_order(SYMBOL, "limit", "buy", 1, 2895)
b.create_order(SYMBOL, "limit", "buy", 0.5, 2850)
print_at(2900)
for name, order, filled, average in [("stop limit", stop_limit, 1.0, 2895.0),
                                     ("trailing", trailing, 0.5, 2850.0)]:
    fetched = a.fetch_order(order["id"], SYMBOL)
    check(f"{name} triggered and filled", (fetched["status"], fetched["filled"], fetched["average"],
                                           fetched["info"]["isWorking"]), ("closed", filled, average, True))
check("take profit still waits", a.fetch_order(take_profit["id"], SYMBOL)["status"], "open")

# An ask for the take-profit buy, then a trade at 2800 triggers it.
b.create_order(SYMBOL, "limit", "sell", 0.5, 2805)
print_at(2800)
fetched = a.fetch_order(take_profit["id"], SYMBOL)
check("take profit triggered and filled", (fetched["status"], fetched["filled"], fetched["average"]),
      ("closed", 0.5, 2805.0))
check("every trade of A", [(t["side"], t["price"], t["amount"], t["takerOrMaker"]) for t in a.fetch_my_trades(SYMBOL)],
      [("sell", 2895.0, 1.0, "taker"), ("sell", 2850.0, 0.5, "taker"), ("buy", 2805.0, 0.5, "taker")])
# Sold 1 at 2895 and 0.5 at 2850, bought 0.5 at 2805, each as taker paying
# 0.1 % of what it received: 10 - 1.5 + 0.4995 ETH and
# 100000 + 2892.105 + 1423.575 - 1402.5 USDT.
check("A to the last unit", balances(a), {"ETH": (8.9995, 0.0), "USDT": (102913.18, 0.0)})

# A stop the last price already meets is refused, as Binance refuses it.
try:
    a.create_order(SYMBOL, "limit", "sell", 0.1, 2700, {"stopLossPrice": 2810})
    sys.exit("a stop that would trigger immediately was accepted")
except Exception as error:  # ccxt maps -2010 to InvalidOrder or OrderImmediatelyFillable
    check("would trigger", "Order would trigger immediately." in str(error), True)

# ccxt's plain stopPrice (triggerPrice) on a limit order is a stop-loss limit too.
plain = a.create_order(SYMBOL, "limit", "sell", 0.1, 2400, {"stopPrice": 2450})
check("stopPrice", (a.fetch_order(plain["id"], SYMBOL)["info"]["type"], plain["triggerPrice"]),
      ("STOP_LOSS_LIMIT", 2450.0))
a.cancel_order(plain["id"], SYMBOL)

# Canceling a waiting order releases what it locked.
waiting = a.create_order(SYMBOL, "limit", "sell", 2, 2500, {"stopLossPrice": 2600})
check("locked again", balances(a)["ETH"], (6.9995, 2.0))
check("cancel a waiting order", a.cancel_order(waiting["id"], SYMBOL)["status"], "canceled")
check("released", balances(a)["ETH"], (8.9995, 0.0))
# edit_order is Binance's cancel-replace: the old order goes, the new rests.
bid = a.create_order(SYMBOL, "limit", "buy", 0.2, 2500)
edited = a.edit_order(bid["id"], SYMBOL, "limit", "buy", 0.3, 2550)
check("edit order", (edited["status"], edited["amount"], edited["price"]), ("open", 0.3, 2550.0))
check("the edited order went", a.fetch_order(bid["id"], SYMBOL)["status"], "canceled")
check("the new one locks", balances(a)["USDT"], (102913.18 - 765.0, 765.0))
a.cancel_order(edited["id"], SYMBOL)
try:
    a.edit_order(bid["id"], SYMBOL, "limit", "buy", 0.3, 2560)
    sys.exit("a cancel-replace of an ended order was accepted")
except Exception as error:
    check("edit an ended order", "-2022" in str(error), True)
print("order types ok")
