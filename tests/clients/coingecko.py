"""pycoingecko, unchanged but for its base URL, against weiport's price face:
prices and 24 h figures equal the Binance face's ticker, markets and charts
agree with tickers and klines, unknown ids and bad keys answer as CoinGecko.
Usage: coingecko.py URL KEY_ID"""
import sys

from pycoingecko import CoinGeckoAPI

from clientkit import check, rest_json

url, key = sys.argv[1], sys.argv[2]


def rest(path):
    return rest_json(url, path)


def client(**keys):
    gecko = CoinGeckoAPI(**keys)
    gecko.api_base_url = url + "/api/v3/"
    return gecko


gecko = client(demo_api_key=key)
day = rest("/api/v3/ticker/24hr?symbol=ETHUSDT")
last_trade = rest("/api/v3/trades?symbol=ETHUSDT&limit=1")[0]
price = gecko.get_price(
    ids="ethereum",
    vs_currencies="usd",
    include_24hr_vol=True,
    include_24hr_change=True,
    include_last_updated_at=True,
)["ethereum"]
check("price", price["usd"], float(day["lastPrice"]))
check("24 h volume", price["usd_24h_vol"], float(day["quoteVolume"]))
check("24 h change", round(price["usd_24h_change"], 3), float(day["priceChangePercent"]))
check("last updated", price["last_updated_at"], last_trade["time"] // 1000)
check("unknown id", gecko.get_price(ids="not-a-coin", vs_currencies="usd"), {})
check("no key", client().get_price(ids="ethereum", vs_currencies="usd"), {"ethereum": {"usd": price["usd"]}})
try:
    client(demo_api_key="x" * 64).get_price(ids="ethereum", vs_currencies="usd")
    check("bad key refused", False, True)
except ValueError as refusal:
    check("bad key", refusal.args[0]["status"]["error_code"], 401)

markets = gecko.get_coins_markets(vs_currency="usd", ids="ethereum")
check("markets", len(markets), 1)
check("market price", markets[0]["current_price"], float(day["lastPrice"]))
check("market high", markets[0]["high_24h"], float(day["highPrice"]))
check("market low", markets[0]["low_24h"], float(day["lowPrice"]))
check("market volume", markets[0]["total_volume"], float(day["quoteVolume"]))
check("market change", markets[0]["price_change_24h"], float(day["priceChange"]))

chart = gecko.get_coin_market_chart_by_id(id="ethereum", vs_currency="usd", days=1)
klines = rest("/api/v3/klines?symbol=ETHUSDT&interval=5m&limit=288")
check("chart times", [p[0] for p in chart["prices"]], [k[0] for k in klines])
check("chart prices", [p[1] for p in chart["prices"]], [float(k[4]) for k in klines])
check("chart volumes", [v[1] for v in chart["total_volumes"]], [float(k[7]) for k in klines])
print("coingecko ok")
