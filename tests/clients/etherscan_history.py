"""Asks weiport for address histories through the etherscan-python client
library, unchanged except for its base URL.

usage: etherscan_history.py BASE_URL API_KEY < request.json
request: {"lists": [address...],
          "pages": [[address, page, offset, startblock, endblock, sort]...],
          "proxy": {"txhash": hash, "tag": hex block number}}
prints:  {"lists": {address: [entry...] | {"error": text}},
          "pages": [[entry...] | {"error": text}...],
          "proxy": {"transaction", "receipt", "block", "code"}}
etherscan-python raises AssertionError on status "0" ("No transactions
found" included); the text it raises is reported as the error.
"""
import json
import sys

from etherscan import Etherscan
from etherscan.enums.fields_enum import FieldsEnum

base_url, api_key = sys.argv[1], sys.argv[2]
FieldsEnum.PREFIX = base_url.rstrip("/") + "/api?"
client = Etherscan(api_key)
request = json.load(sys.stdin)


def ask(call):
    try:
        return call()
    except AssertionError as error:
        return {"error": str(error)}


print(json.dumps({
    "lists": {
        a: ask(lambda a=a: client.get_normal_txs_by_address(
            address=a, startblock=0, endblock=99999999, sort="asc"))
        for a in request["lists"]
    },
    "pages": [
        ask(lambda p=p: client.get_normal_txs_by_address_paginated(
            address=p[0], page=p[1], offset=p[2], startblock=p[3], endblock=p[4], sort=p[5]))
        for p in request["pages"]
    ],
    "proxy": {
        "transaction": client.get_proxy_transaction_by_hash(txhash=request["proxy"]["txhash"]),
        "receipt": client.get_proxy_transaction_receipt(txhash=request["proxy"]["txhash"]),
        "block": client.get_proxy_block_by_number(tag=request["proxy"]["tag"]),
        "code": client.get_proxy_code_at(address=request["proxy"]["contract"]),
    },
}))
