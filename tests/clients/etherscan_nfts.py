"""Reads ERC-721 transfers through the etherscan-python client library,
unchanged except for its base URL.

usage: etherscan_nfts.py BASE_URL API_KEY < request.json
request: {"addresses": [address...], "contract": address}
prints:  {"by_address": {address: [entry...] | {"error": text}},
          "by_contract": [entry...] | {"error": text}}
"""
import json
import sys

from clientkit import ask_etherscan as ask, local_etherscan

client = local_etherscan(sys.argv[1], sys.argv[2])
request = json.load(sys.stdin)

print(json.dumps({
    "by_address": {
        a: ask(lambda a=a: client.get_erc721_token_transfer_events_by_address(
            address=a, startblock=0, endblock=99999999, sort="asc"))
        for a in request["addresses"]
    },
    "by_contract": ask(lambda: client.get_erc721_token_transfer_events_by_contract_address_paginated(
        contract_address=request["contract"], page=1, offset=100, sort="asc")),
}))
