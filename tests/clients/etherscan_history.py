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

from clientkit import ask_etherscan as ask, local_etherscan

client = local_etherscan(sys.argv[1], sys.argv[2])
request = json.load(sys.stdin)


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
