"""Asks weiport's block, transaction, gas tracker, stats, token and contract
modules through the etherscan-python client library, unchanged except for its
base URL.

usage: etherscan_modules.py BASE_URL API_KEY < request.json
request: {"reward_block": n, "time": t, "countdown_block": n,
          "failed_tx": hash, "good_tx": hash, "gas_price": wei,
          "token": address, "token_block": n}
prints one JSON object, each call's answer or {"error": text}.
"""
import json
import sys

from clientkit import ask_etherscan as ask, local_etherscan

client = local_etherscan(sys.argv[1], sys.argv[2])
r = json.load(sys.stdin)

print(json.dumps({
    "reward": ask(lambda: client.get_block_reward_by_block_number(block_no=r["reward_block"])),
    "before": ask(lambda: client.get_block_number_by_timestamp(timestamp=r["time"], closest="before")),
    "after": ask(lambda: client.get_block_number_by_timestamp(timestamp=r["time"], closest="after")),
    "countdown": ask(lambda: client.get_est_block_countdown_time_by_block_number(block_no=r["countdown_block"])),
    "failed": ask(lambda: client.get_contract_execution_status(txhash=r["failed_tx"])),
    "good": ask(lambda: client.get_tx_receipt_status(txhash=r["good_tx"])),
    "oracle": ask(lambda: client.get_gas_oracle()),
    "confirmation": ask(lambda: client.get_est_confirmation_time(gas_price=r["gas_price"])),
    "supply": ask(lambda: client.get_total_eth_supply()),
    "price": ask(lambda: client.get_eth_last_price()),
    "token_supply": ask(lambda: client.get_total_supply_by_contract_address(contract_address=r["token"])),
    "token_supply_then": ask(lambda: client.get_hist_erc20_token_total_supply_by_contract_address_and_block_no(
        contract_address=r["token"], block_no=r["token_block"])),
    "token_info": ask(lambda: client.get_token_info_by_contract_address(contract_address=r["token"])),
    "abi": ask(lambda: client.get_contract_abi(address=r["token"])),
    "source": ask(lambda: client.get_contract_source_code(address=r["token"])),
}))
