"""Asks weiport for internal transfers, token transfers and token balances
through the etherscan-python client library, unchanged except for its base
URL.

usage: etherscan_transfers.py BASE_URL API_KEY < request.json
request: {"addresses": [address...], "txhashes": [hash...],
          "balances": [[token, holder]...]}
prints:  {"internal": {address: [entry...] | {"error": text}},
          "internal_by_hash": {hash: [entry...] | {"error": text}},
          "tokens": {address: [entry...] | {"error": text}},
          "balances": [text...]}
etherscan-python raises AssertionError on status "0" ("No transactions
found" included); the text it raises is reported as the error.
"""
import json
import sys

from clientkit import ask_etherscan as ask, local_etherscan

client = local_etherscan(sys.argv[1], sys.argv[2])
request = json.load(sys.stdin)


print(json.dumps({
    "internal": {
        a: ask(lambda a=a: client.get_internal_txs_by_address(
            address=a, startblock=0, endblock=99999999, sort="asc"))
        for a in request["addresses"]
    },
    "internal_by_hash": {
        h: ask(lambda h=h: client.get_internal_txs_by_txhash(txhash=h))
        for h in request["txhashes"]
    },
    "tokens": {
        a: ask(lambda a=a: client.get_erc20_token_transfer_events_by_address(
            address=a, startblock=0, endblock=99999999, sort="asc"))
        for a in request["addresses"]
    },
    "balances": [
        ask(lambda p=p: client.get_acc_balance_by_token_and_contract_address(
            contract_address=p[0], address=p[1]))
        for p in request["balances"]
    ],
}))
