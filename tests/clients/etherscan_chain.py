"""Reads one chain's balances, transactions and token transfers through the
etherscan-python client library, unchanged except for its base URL (a V2
URL naming the chain, e.g. http://127.0.0.1:8080/v2/api?chainid=31338).

usage: etherscan_chain.py BASE_URL API_KEY < request.json
request: {"addresses": [address...]}
prints:  {"balances": {address: text},
          "txlist": {address: [entry...] | {"error": text}},
          "tokentx": {address: [entry...] | {"error": text}}}
"""
import json
import sys

from clientkit import ask_etherscan as ask, local_etherscan

client = local_etherscan(sys.argv[1], sys.argv[2])
addresses = json.load(sys.stdin)["addresses"]

print(json.dumps({
    "balances": {a: ask(lambda a=a: client.get_eth_balance(address=a)) for a in addresses},
    "txlist": {
        a: ask(lambda a=a: client.get_normal_txs_by_address(
            address=a, startblock=0, endblock=99999999, sort="asc"))
        for a in addresses
    },
    "tokentx": {
        a: ask(lambda a=a: client.get_erc20_token_transfer_events_by_address(
            address=a, startblock=0, endblock=99999999, sort="asc"))
        for a in addresses
    },
}))
