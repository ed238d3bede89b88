"""Watches weiport's WebSocket streams with ccxt.pro, unchanged but for its
URLs: trades, the order book (REST snapshot plus diff depth, ccxt's own sync
check) and the ticker, and account A's orders and balance (the WebSocket
API's userDataStream.subscribe.signature), while crossing orders go in over REST.
Arguments: base URL, then key and secret of account A (holds ETH) and of
account B (holds USDT). Exits non-zero with a message on the first mismatch."""

import asyncio
import sys

from clientkit import ccxt_pro_binance, check

base, key_a, secret_a, key_b, secret_b = sys.argv[1:6]


def client(key, secret):
    return ccxt_pro_binance(base, key, secret)


async def main():
    a, b = client(key_a, secret_a), client(key_b, secret_b)
    try:
        await a.load_markets()
        await b.load_markets()
        orders = asyncio.create_task(a.watch_orders("ETH/USDT"))
        balance = asyncio.create_task(a.watch_balance())
        trades = asyncio.create_task(b.watch_trades("ETH/USDT"))
        book = await b.watch_order_book("ETH/USDT")
        check("ccxt.pro empty book", (book["bids"], book["asks"]), ([], []))
        await asyncio.sleep(0.5)

        await a.create_order("ETH/USDT", "limit", "sell", 1, 3000)
        book = await b.watch_order_book("ETH/USDT")
        check("ccxt.pro book after the ask", book["asks"][:1], [[3000.0, 1.0]])

        taker = await b.create_order("ETH/USDT", "limit", "buy", 0.4, 3001)
        check("ccxt.pro taker filled", taker["filled"], 0.4)
        seen = await asyncio.wait_for(trades, 10)
        check("ccxt.pro trades", [(t["price"], t["amount"], t["side"]) for t in seen], [(3000.0, 0.4, "buy")])
        rest = await b.fetch_trades("ETH/USDT")
        check("ccxt.pro trade id equals REST's", seen[0]["id"], rest[-1]["id"])

        for _ in range(20):
            book = await b.watch_order_book("ETH/USDT")
            if book["asks"][:1] == [[3000.0, 0.6]]:
                break
        check("ccxt.pro book after the fill", book["asks"][:1], [[3000.0, 0.6]])
        rest_book = await b.fetch_order_book("ETH/USDT")
        check("ccxt.pro book equals REST", (book["bids"], book["asks"]), (rest_book["bids"], rest_book["asks"]))

        seen_orders = await asyncio.wait_for(orders, 10)
        check("ccxt.pro first order event", (seen_orders[0]["status"], seen_orders[0]["amount"], seen_orders[0]["price"]), ("open", 1.0, 3000.0))
        for _ in range(10):
            if seen_orders[-1]["filled"] == 0.4:
                break
            seen_orders = await asyncio.wait_for(a.watch_orders("ETH/USDT"), 10)
        check("ccxt.pro order after the fill", (seen_orders[-1]["status"], seen_orders[-1]["filled"], seen_orders[-1]["remaining"]), ("open", 0.4, 0.6))
        seen_balance = await asyncio.wait_for(balance, 10)
        rest_balance = await a.fetch_balance()
        for _ in range(10):
            if seen_balance["ETH"]["free"] == rest_balance["ETH"]["free"]:
                break
            seen_balance = await asyncio.wait_for(a.watch_balance(), 10)
        check("ccxt.pro balance equals REST", (seen_balance["ETH"], seen_balance["USDT"]["free"]), (rest_balance["ETH"], rest_balance["USDT"]["free"]))

        ticker = await asyncio.wait_for(b.watch_ticker("ETH/USDT"), 10)
        check("ccxt.pro ticker last", ticker["last"], 3000.0)
        full = await asyncio.wait_for(b.watch_ticker("ETH/USDT", {"name": "ticker"}), 10)
        check("ccxt.pro full ticker ask", (full["ask"], full["askVolume"], full["last"]), (3000.0, 0.6, 3000.0))
        rest_ticker = await b.fetch_ticker("ETH/USDT")
        check("ccxt.pro ticker volume equals REST", ticker["baseVolume"], rest_ticker["baseVolume"])
    finally:
        await a.close()
        await b.close()
    print("streams ok")


asyncio.run(main())
