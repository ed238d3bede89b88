"""Asks weiport for balances through the etherscan-python client library,
unchanged except for its base URL.

usage: etherscan_balances.py BASE_URL API_KEY < request.json
request: {"single": [address...], "multi": [address...], "history": [[address, block]...]}
prints:  {"single": {address: wei}, "multi": [{"account", "balance"}...],
          "history": [wei...], "block_number": "0x..."}
"""
import json
import sys

from etherscan import Etherscan
from etherscan.enums.fields_enum import FieldsEnum

base_url, api_key = sys.argv[1], sys.argv[2]
FieldsEnum.PREFIX = base_url.rstrip("/") + "/api?"
client = Etherscan(api_key)
request = json.load(sys.stdin)
print(json.dumps({
    "single": {a: client.get_eth_balance(address=a) for a in request["single"]},
    "multi": client.get_eth_balance_multiple(addresses=request["multi"]),
    "history": [
        client.get_hist_eth_balance_for_address_by_block_no(address=a, block_no=b)
        for a, b in request["history"]
    ],
    "block_number": client.get_proxy_block_number(),
}))
