"""Drives weiport's exchange with unchanged Binance clients: ccxt (default
options, only its URLs pointed at weiport) and the official binance-sdk-spot
(only its base path changed). Arguments: base URL, then key and secret of
account A and of account B; each account holds 100000 USDT and 10 ETH.
Exits non-zero with a message on the first mismatch."""

import sys

import ccxt
from binance_common.configuration import ConfigurationRestAPI
from binance_sdk_spot.spot import Spot
from binance_sdk_spot.rest_api.models import (
    NewOrderSideEnum,
    NewOrderTimeInForceEnum,
    NewOrderTypeEnum,
)

from clientkit import ccxt_binance, check

base, key_a, secret_a, key_b, secret_b = sys.argv[1:6]


def ccxt_client(key, secret):
    return ccxt_binance(base, key, secret)


def run_ccxt():
    a, b = ccxt_client(key_a, secret_a), ccxt_client(key_b, secret_b)
    markets = a.load_markets()
    check("ccxt markets", sorted(markets), ["ETH/USDT"])
    b.load_markets()
    check("ccxt precision", a.market("ETH/USDT")["precision"]["price"], 0.01)
    check("ccxt status", a.fetch_status()["status"], "ok")
    fee = a.fetch_trading_fee("ETH/USDT")
    check("ccxt trading fee", (fee["symbol"], fee["maker"], fee["taker"]), ("ETH/USDT", 0.001, 0.001))
    check("ccxt trading fees", sorted(a.fetch_trading_fees()), ["ETH/USDT"])

    maker = a.create_order("ETH/USDT", "limit", "sell", 1, 3000)
    check("ccxt maker status", maker["status"], "open")
    book = b.fetch_order_book("ETH/USDT")
    check("ccxt book asks", book["asks"][0], [3000.0, 1.0])

    taker = b.create_order("ETH/USDT", "limit", "buy", 0.4, 3001)
    check("ccxt taker status", taker["status"], "closed")
    check("ccxt taker filled", taker["filled"], 0.4)
    check("ccxt taker average", taker["average"], 3000.0)
    check("ccxt taker fee", taker["fee"]["cost"], 0.0004)

    ticker = b.fetch_ticker("ETH/USDT")
    check("ccxt ticker last", ticker["last"], 3000.0)

    balance_a = a.fetch_balance()
    balance_b = b.fetch_balance()
    # A sold 0.4 ETH at 3000 as maker (0.1 % fee in USDT), 0.6 still locked.
    check("ccxt A ETH", (balance_a["ETH"]["free"], balance_a["ETH"]["used"]), (9.0, 0.6))
    check("ccxt A USDT", balance_a["USDT"]["free"], 101198.8)
    # B bought 0.4 ETH for 1200 USDT as taker (0.1 % fee in ETH).
    check("ccxt B ETH", balance_b["ETH"]["free"], 10.3996)
    check("ccxt B USDT", (balance_b["USDT"]["free"], balance_b["USDT"]["used"]), (98800.0, 0.0))

    order = a.fetch_order(maker["id"], "ETH/USDT")
    check("ccxt maker after fill", (order["status"], order["filled"], order["remaining"]), ("open", 0.4, 0.6))
    trades = b.fetch_my_trades("ETH/USDT")
    check("ccxt my trades", [(t["side"], t["price"], t["amount"], t["takerOrMaker"], t["fee"]["cost"], t["fee"]["currency"]) for t in trades],
          [("buy", 3000.0, 0.4, "taker", 0.0004, "ETH")])
    check("ccxt open orders", [o["id"] for o in a.fetch_open_orders("ETH/USDT")], [maker["id"]])

    canceled = a.cancel_order(maker["id"], "ETH/USDT")
    check("ccxt cancel", canceled["status"], "canceled")
    check("ccxt open orders after cancel", a.fetch_open_orders("ETH/USDT"), [])
    check("ccxt all orders", [(o["id"], o["status"]) for o in a.fetch_orders("ETH/USDT")], [(maker["id"], "canceled")])
    balance_a = a.fetch_balance()
    check("ccxt A ETH after cancel", (balance_a["ETH"]["free"], balance_a["ETH"]["used"]), (9.6, 0.0))

    try:
        b.create_order("ETH/USDT", "limit", "buy", 100, 3000)
        sys.exit("ccxt: an order beyond the balance was accepted")
    except ccxt.InsufficientFunds:
        print("ok ccxt insufficient funds", file=sys.stderr)
    try:
        a.cancel_order(maker["id"], "ETH/USDT")
        sys.exit("ccxt: a second cancel was accepted")
    except ccxt.OrderNotFound:
        print("ok ccxt cancel twice", file=sys.stderr)


def sdk_client(key, secret):
    config = ConfigurationRestAPI(api_key=key, api_secret=secret, base_path=base)
    return Spot(config_rest_api=config).rest_api


def run_sdk():
    a, b = sdk_client(key_a, secret_a), sdk_client(key_b, secret_b)
    info = a.exchange_info(symbol="ETHUSDT").data()
    check("sdk exchange info", [s.symbol for s in info.symbols], ["ETHUSDT"])
    placed = a.new_order(
        symbol="ETHUSDT",
        side=NewOrderSideEnum.BUY,
        type=NewOrderTypeEnum.LIMIT,
        time_in_force=NewOrderTimeInForceEnum.GTC,
        quantity=2.0,
        price=2900.0,
    ).data()
    check("sdk maker status", placed.status, "NEW")
    depth = b.depth(symbol="ETHUSDT").data()
    check("sdk depth bids", depth.bids[0], ["2900.00000000", "2.00000000"])
    sold = b.new_order(
        symbol="ETHUSDT",
        side=NewOrderSideEnum.SELL,
        type=NewOrderTypeEnum.MARKET,
        quantity=0.5,
    ).data()
    check("sdk taker", (sold.status, sold.executed_qty, sold.cummulative_quote_qty), ("FILLED", "0.50000000", "1450.00000000"))
    check("sdk taker fills", [(f.price, f.qty, f.commission, f.commission_asset) for f in sold.fills],
          [("2900.00000000", "0.50000000", "1.45000000", "USDT")])
    order = a.get_order(symbol="ETHUSDT", order_id=placed.order_id).data()
    check("sdk maker after fill", (order.status, order.executed_qty), ("PARTIALLY_FILLED", "0.50000000"))
    balances = {x.asset: (x.free, x.locked) for x in a.get_account().data().balances}
    # A (after the ccxt part: 9.6 ETH, 101198.8 USDT) bought 0.5 ETH at 2900 as maker.
    check("sdk A USDT", balances["USDT"], ("95398.80000000", "4350.00000000"))
    check("sdk A ETH", balances["ETH"], ("10.09950000", "0.00000000"))
    trades = b.my_trades(symbol="ETHUSDT").data()
    check("sdk B trades", [(t.price, t.qty, t.is_buyer, t.is_maker) for t in trades],
          [("3000.00000000", "0.40000000", True, False), ("2900.00000000", "0.50000000", False, False)])
    open_orders = a.get_open_orders(symbol="ETHUSDT").data()
    check("sdk open orders", [o.order_id for o in open_orders], [placed.order_id])
    canceled = a.delete_order(symbol="ETHUSDT", order_id=placed.order_id).data()
    check("sdk cancel", canceled.status, "CANCELED")
    orders = a.all_orders(symbol="ETHUSDT").data()
    check("sdk all orders", [o.status for o in orders], ["CANCELED", "CANCELED"])


run_ccxt()
run_sdk()
print("all clients ok")
