"""Order lists through unchanged clients: python-binance's create_oco_order
and the official binance-sdk-spot's order_list_oto, only their URLs pointed
at weiport. Arguments: base URL, then key and secret of accounts A (places
the lists), B (provides liquidity) and C (makes the trades that move the
price); each holds 100000 USDT and 10 ETH. Exits non-zero on the first
mismatch."""

import sys

from binance.client import Client
from binance_common.configuration import ConfigurationRestAPI
from binance_sdk_spot.rest_api.models import (
    NewOrderSideEnum,
    NewOrderTimeInForceEnum,
    NewOrderTypeEnum,
    OrderListOtoPendingSideEnum,
    OrderListOtoPendingTypeEnum,
    OrderListOtoWorkingSideEnum,
    OrderListOtoWorkingTimeInForceEnum,
    OrderListOtoWorkingTypeEnum,
)
from binance_sdk_spot.spot import Spot

from clientkit import check

base = sys.argv[1]
keys = [(sys.argv[i], sys.argv[i + 1]) for i in (2, 4, 6)]


def python_binance(key, secret):
    client = Client(key, secret, ping=False)
    client.API_URL = base + "/api"
    return client


a, b, c = (python_binance(*k) for k in keys)
SYMBOL = "ETHUSDT"


def balances(client):
    held = {x["asset"]: (x["free"], x["locked"]) for x in client.get_account()["balances"]}
    return {asset: held[asset] for asset in ("ETH", "USDT")}


def trade_at(price, quantity="0.1"):
    """A trade at `price`: B bids, C sells into it."""
    b.order_limit_buy(symbol=SYMBOL, quantity=quantity, price=price)
    c.order_market_sell(symbol=SYMBOL, quantity=quantity)


trade_at("3000")

# python-binance: a sell OCO, a take-profit above (post-only at 3100) and a
# stop-loss limit below (2900, selling down to 2890).
oco = a.create_oco_order(symbol=SYMBOL, side="SELL", quantity="1",
                         aboveType="LIMIT_MAKER", abovePrice="3100",
                         belowType="STOP_LOSS_LIMIT", belowPrice="2890", belowStopPrice="2900",
                         belowTimeInForce="GTC")
check("oco placed", (oco["contingencyType"], oco["listStatusType"], oco["listOrderStatus"]),
      ("OCO", "EXEC_STARTED", "EXECUTING"))
reports = {r["type"]: r for r in oco["orderReports"]}
check("oco orders", sorted(reports), ["LIMIT_MAKER", "STOP_LOSS_LIMIT"])
check("oco order statuses", {r["status"] for r in oco["orderReports"]}, {"NEW"})
check("oco list ids", {r["orderListId"] for r in oco["orderReports"]}, {oco["orderListId"]})
check("oco locks once", balances(a)["ETH"], ("9.00000000", "1.00000000"))
limit_id, stop_id = reports["LIMIT_MAKER"]["orderId"], reports["STOP_LOSS_LIMIT"]["orderId"]

# B lifts 0.4 of the take-profit: the stop-loss expires.
b.order_limit_buy(symbol=SYMBOL, quantity="0.4", price="3100")
check("stop expired", a.get_order(symbol=SYMBOL, orderId=stop_id)["status"], "EXPIRED")
check("limit part filled", a.get_order(symbol=SYMBOL, orderId=limit_id)["status"], "PARTIALLY_FILLED")
check("the rest stays locked", balances(a)["ETH"], ("9.00000000", "0.60000000"))
# Canceling the order that is left ends the list: the answer is the list's.
canceled = a.cancel_order(symbol=SYMBOL, orderId=limit_id)
check("cancel the rest", (canceled["listStatusType"], [r["status"] for r in canceled["orderReports"]]),
      ("ALL_DONE", ["CANCELED"]))
check("released", balances(a)["ETH"], ("9.60000000", "0.00000000"))

# The official SDK: an OTO, buy 0.5 at 2950, then offer it at 3050.
sdk = Spot(config_rest_api=ConfigurationRestAPI(api_key=keys[0][0], api_secret=keys[0][1],
                                                base_path=base)).rest_api
oto = sdk.order_list_oto(
    symbol=SYMBOL,
    working_type=OrderListOtoWorkingTypeEnum.LIMIT,
    working_side=OrderListOtoWorkingSideEnum.BUY,
    working_price=2950.0,
    working_quantity=0.5,
    working_time_in_force=OrderListOtoWorkingTimeInForceEnum.GTC,
    pending_type=OrderListOtoPendingTypeEnum.LIMIT_MAKER,
    pending_side=OrderListOtoPendingSideEnum.SELL,
    pending_price=3050.0,
    pending_quantity=0.5,
).data()
check("oto placed", (oto.contingency_type, oto.list_status_type), ("OTO", "EXEC_STARTED"))
check("oto statuses", [r.status for r in oto.order_reports], ["NEW", "PENDING_NEW"])
working_id, pending_id = (r.order_id for r in oto.order_reports)
check("pending locks nothing", balances(a)["ETH"], ("9.60000000", "0.00000000"))
# C sells 0.5 into the working bid: it fills, the pending offer is placed.
c.order_market_sell(symbol=SYMBOL, quantity="0.5")
check("working filled", a.get_order(symbol=SYMBOL, orderId=working_id)["status"], "FILLED")
pending = sdk.get_order(symbol=SYMBOL, order_id=pending_id).data()
check("pending now works", (pending.status, pending.type, pending.price), ("NEW", "LIMIT_MAKER", "3050.00000000"))
# Sold 0.4 at 3100 and bought 0.5 at 2950, both as maker: 10 - 0.4 + 0.4995
# ETH, 0.5 of it offered again; 100000 + 1240 - 1.24 - 1475 USDT.
check("A after the OTO", balances(a), {"ETH": ("9.59950000", "0.50000000"),
                                       "USDT": ("99763.76000000", "0.00000000")})
# The official SDK's amend keeps the order's place: A bids first, B after
# at the same price; A halves its bid, and a sale of 0.5 still meets A's.
bid = sdk.new_order(symbol=SYMBOL, side=NewOrderSideEnum.BUY, type=NewOrderTypeEnum.LIMIT,
                    time_in_force=NewOrderTimeInForceEnum.GTC, quantity=1.0, price=2800.0).data()
b.order_limit_buy(symbol=SYMBOL, quantity="1", price="2800")
amended = sdk.order_amend_keep_priority(symbol=SYMBOL, new_qty=0.5, order_id=bid.order_id).data()
check("amended", (amended.amended_order.qty, amended.amended_order.status, amended.amended_order.order_id),
      ("0.50000000", "NEW", bid.order_id))
check("amend unlocks", balances(a)["USDT"], ("98363.76000000", "1400.00000000"))
c.order_market_sell(symbol=SYMBOL, quantity="0.5")
check("its place kept", a.get_order(symbol=SYMBOL, orderId=bid.order_id)["status"], "FILLED")
print("order lists ok")
