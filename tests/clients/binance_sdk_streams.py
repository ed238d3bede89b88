"""Reads weiport's WebSocket streams with python-binance's socket manager
(raw /ws/<stream>, combined /stream, and the user socket over the WebSocket
API) and with binance-sdk-spot's WebSocket streams, each unchanged but for
its URLs, while crossing orders go in over REST. Arguments: base URL, then
key and secret of account A (holds ETH) and of account B (holds USDT).
Exits non-zero with a message on the first mismatch."""

import asyncio
import sys
import time

START = time.monotonic()

from binance import AsyncClient, BinanceSocketManager
from binance_common.configuration import ConfigurationWebSocketStreams
from binance_sdk_spot.spot import Spot

base, key_a, secret_a, key_b, secret_b = sys.argv[1:6]
ws_base = base.replace("http://", "ws://", 1)


def check(label, actual, expected):
    if actual != expected:
        sys.exit(f"{label}: expected {expected!r}, got {actual!r}")
    print(f"ok {label} ({time.monotonic() - START:.1f} s)", file=sys.stderr)


class LocalClient(AsyncClient):
    API_URL = base + "/api"
    WS_API_URL = ws_base + "/ws-api/v3"


async def until(socket, wanted):
    """The next message of `socket` that `wanted` accepts."""
    while True:
        message = await asyncio.wait_for(socket.recv(), 10)
        if wanted(message):
            return message


async def main():
    a = await LocalClient.create(key_a, secret_a)
    b = await LocalClient.create(key_b, secret_b)
    sdk = Spot(config_ws_streams=ConfigurationWebSocketStreams(stream_url=ws_base))
    connection = await sdk.websocket_streams.create_connection()
    sdk_trades = []
    stream = await connection.trade(symbol="ethusdt")
    stream.on("message", lambda data: sdk_trades.append(data))
    try:
        manager = BinanceSocketManager(b)
        manager.STREAM_URL = ws_base + "/"
        user_manager = BinanceSocketManager(a)
        user_manager.STREAM_URL = ws_base + "/"
        async with manager.trade_socket("ETHUSDT") as trades, \
                manager.multiplex_socket(["ethusdt@aggTrade", "ethusdt@bookTicker"]) as combined, \
                user_manager.user_socket() as user:
            await asyncio.sleep(0.5)
            await a.create_order(symbol="ETHUSDT", side="SELL", type="LIMIT", timeInForce="GTC",
                                 quantity="1", price="3000")
            await b.create_order(symbol="ETHUSDT", side="BUY", type="LIMIT", timeInForce="GTC",
                                 quantity="0.4", price="3000")
            rest = await b.get_recent_trades(symbol="ETHUSDT")

            trade = await until(trades, lambda m: m.get("e") == "trade")
            check("python-binance trade", (trade["t"], trade["p"], trade["q"]),
                  (rest[-1]["id"], rest[-1]["price"], rest[-1]["qty"]))
            agg = await until(combined, lambda m: m.get("stream") == "ethusdt@aggTrade")
            check("python-binance multiplex aggTrade", (agg["data"]["p"], agg["data"]["q"]),
                  ("3000.00000000", "0.40000000"))
            new = await until(user, lambda m: m.get("e") == "executionReport")
            check("python-binance user NEW", (new["x"], new["X"], new["q"]), ("NEW", "NEW", "1.00000000"))
            filled = await until(user, lambda m: m.get("e") == "executionReport")
            check("python-binance user TRADE", (filled["x"], filled["X"], filled["l"], filled["t"]),
                  ("TRADE", "PARTIALLY_FILLED", "0.40000000", rest[-1]["id"]))
        for _ in range(50):
            if sdk_trades:
                break
            await asyncio.sleep(0.1)
        check("binance-sdk-spot trade stream", [(t.t, t.p, t.q) for t in sdk_trades],
              [(rest[-1]["id"], "3000.00000000", "0.40000000")])
    finally:
        print(f"closing ({time.monotonic() - START:.1f} s)", file=sys.stderr)
        await stream.unsubscribe()
        await connection.close_connection(close_session=True)
        await a.close_connection()
        await b.close_connection()
    print(f"closed ({time.monotonic() - START:.1f} s)", file=sys.stderr)
    print("sdk streams ok")


asyncio.run(main())
