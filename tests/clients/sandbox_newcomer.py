"""What a newcomer does with a running sandbox, using only what
sandbox.json says: with the official binance-sdk-spot (only its base path
changed) places an order away from the market and cancels it; with
etherscan-python (only its base URL changed) reads the index's head and the
balances of ADDRESSES at it. usage: sandbox_newcomer.py SANDBOX_JSON ADDRESS...
prints: {"block": n, "balances": {address: wei}}; exits non-zero on a mismatch."""

import json
import sys

from binance_common.configuration import ConfigurationRestAPI
from binance_sdk_spot.spot import Spot
from binance_sdk_spot.rest_api.models import (
    NewOrderSideEnum,
    NewOrderTimeInForceEnum,
    NewOrderTypeEnum,
)
from etherscan import Etherscan
from etherscan.enums.fields_enum import FieldsEnum

sandbox = json.load(open(sys.argv[1]))
addresses = sys.argv[2:]
trader = sandbox["accounts"][0]


def check(label, actual, expected):
    if actual != expected:
        sys.exit(f"{label}: expected {expected!r}, got {actual!r}")
    print(f"ok {label}", file=sys.stderr)


config = ConfigurationRestAPI(
    api_key=trader["api_key"], api_secret=trader["secret"], base_path=sandbox["rest_url"]
)
spot = Spot(config_rest_api=config).rest_api
last = float(spot.ticker_price(symbol="ETHUSDT").data().actual_instance.price)
price = round(last * 0.8, 2)
placed = spot.new_order(
    symbol="ETHUSDT",
    side=NewOrderSideEnum.BUY,
    type=NewOrderTypeEnum.LIMIT,
    time_in_force=NewOrderTimeInForceEnum.GTC,
    quantity=0.05,
    price=price,
).data()
check("order placed", placed.status, "NEW")
open_ids = [o.order_id for o in spot.get_open_orders(symbol="ETHUSDT").data()]
check("order open", open_ids, [placed.order_id])
usdt = {b.asset: b for b in spot.get_account().data().balances}["USDT"]
check("funds locked", round(float(usdt.locked), 6), round(price * 0.05, 6))
canceled = spot.delete_order(symbol="ETHUSDT", order_id=placed.order_id).data()
check("order canceled", canceled.status, "CANCELED")
check("nothing open", spot.get_open_orders(symbol="ETHUSDT").data(), [])

FieldsEnum.PREFIX = sandbox["rest_url"].rstrip("/") + "/api?"
etherscan = Etherscan(sandbox["read_key"]["api_key"])
block = int(etherscan.get_proxy_block_number(), 16)
balances = {
    a: etherscan.get_hist_eth_balance_for_address_by_block_no(address=a, block_no=block)
    for a in addresses
}
print(json.dumps({"block": block, "balances": balances}))
