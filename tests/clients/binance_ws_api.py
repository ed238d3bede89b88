"""Trades and reads over weiport's WebSocket API with ccxt.pro, python-binance
and binance-sdk-spot, each unchanged but for its URLs, and checks every
answer against what the same client reads over REST. Arguments: base URL,
key and secret of account A (holds ETH), key and secret of account B (holds
USDT), then an Ed25519 key id of account A and its private key (PEM).
Exits non-zero with a message on the first mismatch."""

import asyncio
import sys

import ccxt.pro
from binance import AsyncClient
from binance.exceptions import BinanceAPIException
from binance_common.configuration import ConfigurationWebSocketAPI
from binance_sdk_spot.spot import Spot
from binance_sdk_spot.websocket_api.models import (
    OrderPlaceSideEnum,
    OrderPlaceTimeInForceEnum,
    OrderPlaceTypeEnum,
)

from clientkit import ccxt_pro_binance, check

base, key_a, secret_a, key_b, secret_b, ed_key, ed_pem = sys.argv[1:8]
ws_api = base.replace("http://", "ws://", 1) + "/ws-api/v3"


def same_candles(label, ws, rest):
    """The candles both answers hold are equal, and they hold some: a minute
    that turns between the two calls may add an empty candle to one."""
    both = {c[0] for c in ws} & {c[0] for c in rest}
    check(label, [c for c in ws if c[0] in both], [c for c in rest if c[0] in both])
    check(label + " not empty", len(both) > 0, True)


def same_orders(label, ws, rest):
    fields = ("id", "status", "amount", "price", "filled", "side", "type")
    check(label, [tuple(o[f] for f in fields) for o in ws], [tuple(o[f] for f in fields) for o in rest])


async def run_ccxt_pro():
    a = ccxt_pro_binance(base, key_a, secret_a)
    b = ccxt_pro_binance(base, key_b, secret_b)
    try:
        placed = await a.create_order_ws("ETH/USDT", "limit", "sell", 1, 3000)
        check("ccxt.pro create_order_ws", (placed["status"], placed["amount"], placed["price"]), ("open", 1.0, 3000.0))
        same_orders("ccxt.pro fetch_order_ws", [await a.fetch_order_ws(placed["id"], "ETH/USDT")],
                    [await a.fetch_order(placed["id"], "ETH/USDT")])
        edited = await a.edit_order_ws(placed["id"], "ETH/USDT", "limit", "sell", 1, 3010)
        check("ccxt.pro edit_order_ws", (edited["status"], edited["price"]), ("open", 3010.0))
        same_orders("ccxt.pro fetch_open_orders_ws", await a.fetch_open_orders_ws("ETH/USDT"),
                    await a.fetch_open_orders("ETH/USDT"))

        bought = await b.create_order_ws("ETH/USDT", "market", "buy", 0.4)
        check("ccxt.pro market buy", (bought["status"], bought["filled"], bought["average"]), ("closed", 0.4, 3010.0))
        trades_ws = await b.fetch_my_trades_ws("ETH/USDT")
        trades = await b.fetch_my_trades("ETH/USDT")
        check("ccxt.pro fetch_my_trades_ws", [(t["id"], t["price"], t["amount"], t["fee"]["cost"]) for t in trades_ws],
              [(t["id"], t["price"], t["amount"], t["fee"]["cost"]) for t in trades])
        public_ws = await b.fetch_trades_ws("ETH/USDT")
        public = await b.fetch_trades("ETH/USDT")
        check("ccxt.pro fetch_trades_ws", [(t["id"], t["price"], t["amount"]) for t in public_ws],
              [(t["id"], t["price"], t["amount"]) for t in public])
        candles_ws = await b.fetch_ohlcv_ws("ETH/USDT", "1m")
        same_candles("ccxt.pro fetch_ohlcv_ws", candles_ws, await b.fetch_ohlcv("ETH/USDT", "1m"))
        # ccxt.pro reads a spot account.status answer as a futures one
        # (result.assets), so its parsed balance is empty for every
        # exchange; the answer itself is in `info`.
        balance_ws = await a.fetch_balance_ws()
        balance = await a.fetch_balance()
        check("ccxt.pro fetch_balance_ws", balance_ws["info"]["balances"], balance["info"]["balances"])

        canceled = await a.cancel_order_ws(edited["id"], "ETH/USDT")
        check("ccxt.pro cancel_order_ws", canceled["status"], "canceled")
        check("ccxt.pro nothing open", await a.fetch_open_orders("ETH/USDT"), [])
        closed_ws = await a.fetch_closed_orders_ws("ETH/USDT")
        same_orders("ccxt.pro fetch_closed_orders_ws", closed_ws, await a.fetch_closed_orders("ETH/USDT"))
        try:
            await a.fetch_order_ws("999999", "ETH/USDT")
            sys.exit("ccxt.pro: an unknown order was found")
        except ccxt.OrderNotFound:
            check("ccxt.pro unknown order", True, True)
    finally:
        await a.close()
        await b.close()


class LocalClient(AsyncClient):
    API_URL = base + "/api"
    WS_API_URL = ws_api


async def run_python_binance():
    a = await LocalClient.create(key_a, secret_a)
    b = await LocalClient.create(key_b, secret_b)
    try:
        check("python-binance ws_ping", await a.ws_ping(), {})
        check("python-binance ws_get_time", "serverTime" in await a.ws_get_time(), True)
        info = await a.ws_get_exchange_info(symbol="ETHUSDT")
        check("python-binance ws_get_exchange_info", [s["symbol"] for s in info["symbols"]], ["ETHUSDT"])

        placed = await a.ws_create_order(symbol="ETHUSDT", side="SELL", type="LIMIT", timeInForce="GTC",
                                         quantity="0.5", price="3100", newOrderRespType="RESULT")
        check("python-binance ws_create_order", placed["status"], "NEW")
        order_id = placed["orderId"]
        check("python-binance ws_get_order", await a.ws_get_order(symbol="ETHUSDT", orderId=order_id),
              await a.get_order(symbol="ETHUSDT", orderId=order_id))
        replaced = await a.ws_cancel_and_replace_order(
            symbol="ETHUSDT", cancelReplaceMode="STOP_ON_FAILURE", cancelOrderId=order_id,
            side="SELL", type="LIMIT", timeInForce="GTC", quantity="0.5", price="3050")
        check("python-binance ws_cancel_and_replace_order",
              (replaced["cancelResult"], replaced["newOrderResult"]), ("SUCCESS", "SUCCESS"))
        check("python-binance ws_get_open_orders", await a.ws_get_open_orders(symbol="ETHUSDT"),
              await a.get_open_orders(symbol="ETHUSDT"))

        bought = await b.ws_create_order(symbol="ETHUSDT", side="BUY", type="MARKET", quantity="0.2")
        check("python-binance market buy", (bought["status"], bought["fills"][0]["price"]), ("FILLED", "3050.00000000"))
        check("python-binance ws_get_my_trades", await b.ws_get_my_trades(symbol="ETHUSDT"),
              await b.get_my_trades(symbol="ETHUSDT"))
        check("python-binance ws_get_all_orders", await b.ws_get_all_orders(symbol="ETHUSDT"),
              await b.get_all_orders(symbol="ETHUSDT"))
        account_ws, account = await b.ws_get_account(), await b.get_account()
        check("python-binance ws_get_account", account_ws["balances"], account["balances"])
        check("python-binance ws_get_commission_rates",
              await b.ws_get_commission_rates(symbol="ETHUSDT"), await b._get("account/commission", True, data={"symbol": "ETHUSDT"}))
        check("python-binance ws_get_account_rate_limits_orders",
              await b.ws_get_account_rate_limits_orders(), await b._get("rateLimit/order", True, data={}))
        check("python-binance ws_get_prevented_matches",
              await b.ws_get_prevented_matches(symbol="ETHUSDT", orderId=order_id), [])

        check("python-binance ws_get_order_book", await a.ws_get_order_book(symbol="ETHUSDT", limit=5),
              await a.get_order_book(symbol="ETHUSDT", limit=5))
        check("python-binance ws_get_recent_trades", await a.ws_get_recent_trades(symbol="ETHUSDT"),
              await a.get_recent_trades(symbol="ETHUSDT"))
        check("python-binance ws_get_historical_trades",
              await a.ws_get_historical_trades(symbol="ETHUSDT", fromId=0),
              await a.get_historical_trades(symbol="ETHUSDT", fromId=0))
        check("python-binance ws_get_aggregate_trades", await a.ws_get_aggregate_trades(symbol="ETHUSDT"),
              await a.get_aggregate_trades(symbol="ETHUSDT"))
        same_candles("python-binance ws_get_klines", await a.ws_get_klines(symbol="ETHUSDT", interval="1m"),
                     await a.get_klines(symbol="ETHUSDT", interval="1m"))
        same_candles("python-binance ws_get_uiKlines", await a.ws_get_uiKlines(symbol="ETHUSDT", interval="1m"),
                     await a.get_ui_klines(symbol="ETHUSDT", interval="1m"))
        check("python-binance ws_get_avg_price", (await a.ws_get_avg_price(symbol="ETHUSDT"))["price"],
              (await a.get_avg_price(symbol="ETHUSDT"))["price"])
        check("python-binance ws_get_symbol_ticker", await a.ws_get_symbol_ticker(symbol="ETHUSDT"),
              await a.get_symbol_ticker(symbol="ETHUSDT"))
        check("python-binance ws_get_orderbook_ticker", await a.ws_get_orderbook_ticker(symbol="ETHUSDT"),
              await a.get_orderbook_ticker(symbol="ETHUSDT"))
        ticker_ws, ticker = await a.ws_get_ticker(symbol="ETHUSDT"), await a.get_ticker(symbol="ETHUSDT")
        check("python-binance ws_get_ticker", (ticker_ws["lastPrice"], ticker_ws["volume"], ticker_ws["count"]),
              (ticker["lastPrice"], ticker["volume"], ticker["count"]))

        oco = await a.ws_create_oco_order(symbol="ETHUSDT", side="SELL", quantity="0.1", aboveType="LIMIT_MAKER",
                                          abovePrice="3600", belowType="STOP_LOSS", belowStopPrice="2500")
        list_id = oco["orderListId"]
        check("python-binance ws_get_oco_order", await a.ws_get_oco_order(orderListId=list_id),
              await a._get("orderList", True, data={"orderListId": list_id}))
        check("python-binance ws_get_oco_open_orders", len(await a.ws_get_oco_open_orders()), 1)
        canceled = await a.ws_cancel_oco_order(symbol="ETHUSDT", orderListId=list_id)
        check("python-binance ws_cancel_oco_order", canceled["listOrderStatus"], "ALL_DONE")
        canceled = await a.ws_cancel_all_open_orders(symbol="ETHUSDT")
        check("python-binance ws_cancel_all_open_orders", [o["status"] for o in canceled], ["CANCELED"])
        try:
            await a.ws_get_order(symbol="ETHUSDT", orderId=999999)
            sys.exit("python-binance: an unknown order was found")
        except BinanceAPIException as error:
            check("python-binance unknown order", error.code, -2013)
    finally:
        # Each client's read loop notices the close only at its next 10 s
        # read timeout: both wait out the same one.
        await asyncio.gather(a.close_connection(), b.close_connection())


async def run_sdk():
    rest = await LocalClient.create(key_a, secret_a)
    hmac = await Spot(config_ws_api=ConfigurationWebSocketAPI(
        api_key=key_a, api_secret=secret_a, stream_url=ws_api)).websocket_api.create_connection()
    ed = await Spot(config_ws_api=ConfigurationWebSocketAPI(
        api_key=ed_key, private_key=ed_pem, stream_url=ws_api)).websocket_api.create_connection()
    try:
        placed = await hmac.order_place(symbol="ETHUSDT", side=OrderPlaceSideEnum.SELL, type=OrderPlaceTypeEnum.LIMIT,
                                        time_in_force=OrderPlaceTimeInForceEnum.GTC, price=3400.0, quantity=0.1)
        order = placed.data().result
        check("binance-sdk-spot order_place", (order.status, order.orig_qty), ("NEW", "0.10000000"))
        check("binance-sdk-spot rate limits", [r.rateLimitType for r in placed.rate_limits],
              ["REQUEST_WEIGHT", "ORDERS", "ORDERS"])
        status = (await hmac.order_status(symbol="ETHUSDT", order_id=order.order_id)).data().result
        by_rest = await rest.get_order(symbol="ETHUSDT", orderId=order.order_id)
        check("binance-sdk-spot order_status", (status.order_id, status.price, status.status),
              (by_rest["orderId"], by_rest["price"], by_rest["status"]))
        account = (await hmac.account_status()).data().result
        by_rest = await rest.get_account()
        check("binance-sdk-spot account_status", [(b.asset, b.free, b.locked) for b in account.balances],
              [(b["asset"], b["free"], b["locked"]) for b in by_rest["balances"]])
        depth = (await hmac.depth(symbol="ETHUSDT", limit=5)).data().result
        by_rest = await rest.get_order_book(symbol="ETHUSDT", limit=5)
        check("binance-sdk-spot depth", (depth.last_update_id, depth.asks), (by_rest["lastUpdateId"], by_rest["asks"]))

        # The Ed25519 key logs the connection on; its orders go unsigned.
        logon = (await ed.session_logon()).data().result
        check("binance-sdk-spot session_logon", logon.api_key, ed_key)
        canceled = (await ed.order_cancel(symbol="ETHUSDT", order_id=order.order_id)).data().result
        check("binance-sdk-spot order_cancel after logon", canceled.status, "CANCELED")
        trades = (await ed.my_trades(symbol="ETHUSDT")).data().result
        by_rest = await rest.get_my_trades(symbol="ETHUSDT")
        check("binance-sdk-spot my_trades", [t.id for t in trades], [t["id"] for t in by_rest])
        refused = (await ed.order_status(symbol="ETHUSDT", order_id=999999)).data()
        check("binance-sdk-spot unknown order", refused["error"]["code"], -2013)
    finally:
        await hmac.close_connection()
        await ed.close_connection()
        await rest.close_connection()


async def main():
    await run_ccxt_pro()
    await run_python_binance()
    await run_sdk()
    print("ws api ok")


asyncio.run(main())
