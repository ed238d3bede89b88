"""pycoingecko, unchanged but for its base URL, against the rest of weiport's
price face: coin details and tickers, OHLC, chart ranges, a day's history, a
token by its contract, this exchange, search and the global figures, each
checked against the Binance face's own figures.
Usage: coingecko_breadth.py URL KEY_ID CONTRACT"""
import sys
import time

from pycoingecko import CoinGeckoAPI

from clientkit import check, rest_json

url, key, contract = sys.argv[1], sys.argv[2], sys.argv[3]


def rest(path):
    return rest_json(url, path)


gecko = CoinGeckoAPI(demo_api_key=key)
gecko.api_base_url = url + "/api/v3/"
day = rest("/api/v3/ticker/24hr?symbol=ETHUSDT")
last = float(day["lastPrice"])
first_trade = rest("/api/v3/aggTrades?symbol=ETHUSDT&fromId=0&limit=1")[0]

check("price by symbol", gecko.get_price(ids="", vs_currencies="usd", symbols="eth"), {"eth": {"usd": last}})
token = gecko.get_token_price(id="ethereum", contract_addresses=contract, vs_currencies="usd")
check("token price", token, {contract.lower(): {"usd": last}})

coin = gecko.get_coin_by_id("ethereum")
check("coin id", coin["id"], "ethereum")
check("coin price", coin["market_data"]["current_price"]["usd"], last)
check("coin volume", coin["market_data"]["total_volume"]["usd"], float(day["quoteVolume"]))
check("coin high", coin["market_data"]["high_24h"]["usd"], float(day["highPrice"]))
check("coin platforms", coin["platforms"], {"ethereum": contract.lower()})
check("coin tickers", [(t["base"], t["target"], t["last"]) for t in coin["tickers"]], [("ETH", "USDT", last)])
check("coin ticker volume", coin["tickers"][0]["volume"], float(day["volume"]))
tickers = gecko.get_coin_ticker_by_id("ethereum")["tickers"]
check("tickers", [t["market"]["identifier"] for t in tickers], ["weiport"])

rows = gecko.get_coin_ohlc_by_id("ethereum", vs_currency="usd", days=1)
check("ohlc shape", all(len(r) == 5 for r in rows) and len(rows) >= 1, True)
check("ohlc last close", rows[-1][4], last)
check("ohlc bounds", all(r[2] >= max(r[1], r[4]) and r[3] <= min(r[1], r[4]) for r in rows), True)
check("ohlc high", max(r[2] for r in rows), float(day["highPrice"]))

now = int(time.time())
chart = gecko.get_coin_market_chart_range_by_id("ethereum", vs_currency="usd", from_timestamp=now - 3600, to_timestamp=now)
check("range last price", chart["prices"][-1][1], last)
check("range volume", sum(v[1] for v in chart["total_volumes"]), float(day["quoteVolume"]))

today = time.strftime("%d-%m-%Y", time.gmtime(first_trade["T"] / 1000))
history = gecko.get_coin_history_by_id("ethereum", date=today)
check("history price", history["market_data"]["current_price"]["usd"], float(first_trade["p"]))

by_contract = gecko.get_coin_info_from_contract_address_by_id(id="ethereum", contract_address=contract)
check("contract coin", by_contract["id"], "ethereum")

exchanges = gecko.get_exchanges_list()
check("exchanges", [e["id"] for e in exchanges], ["weiport"])
venue = gecko.get_exchanges_by_id("weiport")
check("exchange tickers", [t["base"] for t in venue["tickers"]], ["ETH"])
check("exchange tickers by coin", len(gecko.get_exchanges_tickers_by_id("weiport", coin_ids="ethereum")["tickers"]), 1)

found = gecko.search("eth")
check("search", "ethereum" in [c["id"] for c in found["coins"]], True)
world = gecko.get_global()
check("global markets", world["markets"], 1)
check("global volume", world["total_volume"]["usd"], float(day["quoteVolume"]))
check("global coins", world["active_cryptocurrencies"], len(gecko.get_coins_list()))

for refused in (lambda: gecko.get_coin_by_id("not-a-coin"), lambda: gecko.get_exchanges_by_id("elsewhere")):
    try:
        refused()
        check("refused", False, True)
    except ValueError:
        pass
print("coingecko breadth ok")
