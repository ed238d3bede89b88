#!/usr/bin/env python3
"""Checks a weiport proof of reserves against a node of your choosing.

Trusts nothing the exchange says but the document it is given:
  - recomputes the Merkle sum tree's root from your leaf and its path
    (SHA-256; every sum unsigned and added on the way up) and compares it
    with the published root and totals;
  - checks, for each address the exchange lists as its reserves, that the
    signature of the snapshot's message recovers to that address (EIP-191),
    and asks YOUR node for the address's balance at the named block, whose
    hash must match the one named;
  - prints reserves / liabilities per asset.

Standard library only.  Usage:
    verify_reserves.py PROOF.json --node http://127.0.0.1:8545
    verify_reserves.py PROOF.json --node 1=https://eth.example --node 42161=https://arb.example
PROOF.json is what GET /sapi/v1/reserves/proof answers (a snapshot and an
account's proof).  Exit status 0: every check held; 1: one failed.
"""

import argparse
import hashlib
import json
import sys
import urllib.request
from decimal import Decimal, getcontext

getcontext().prec = 80

# --- Keccak-256 (the original Keccak padding Ethereum uses, not SHA3-256).

_ROUND_CONSTANTS = [
    0x0000000000000001, 0x0000000000008082, 0x800000000000808A, 0x8000000080008000,
    0x000000000000808B, 0x0000000080000001, 0x8000000080008081, 0x8000000000008009,
    0x000000000000008A, 0x0000000000000088, 0x0000000080008009, 0x000000008000000A,
    0x000000008000808B, 0x800000000000008B, 0x8000000000008089, 0x8000000000008003,
    0x8000000000008002, 0x8000000000000080, 0x000000000000800A, 0x800000008000000A,
    0x8000000080008081, 0x8000000000008080, 0x0000000080000001, 0x8000000080008008,
]
_ROTATIONS = [
    [0, 36, 3, 41, 18], [1, 44, 10, 45, 2], [62, 6, 43, 15, 61],
    [28, 55, 25, 21, 56], [27, 20, 39, 8, 14],
]
_MASK = (1 << 64) - 1


def _rotl(value, shift):
    return ((value << shift) | (value >> (64 - shift))) & _MASK if shift else value


def _keccak_f(state):
    for constant in _ROUND_CONSTANTS:
        parity = [state[x][0] ^ state[x][1] ^ state[x][2] ^ state[x][3] ^ state[x][4] for x in range(5)]
        for x in range(5):
            d = parity[(x - 1) % 5] ^ _rotl(parity[(x + 1) % 5], 1)
            for y in range(5):
                state[x][y] ^= d
        moved = [[0] * 5 for _ in range(5)]
        for x in range(5):
            for y in range(5):
                moved[y][(2 * x + 3 * y) % 5] = _rotl(state[x][y], _ROTATIONS[x][y])
        for x in range(5):
            for y in range(5):
                state[x][y] = moved[x][y] ^ ((~moved[(x + 1) % 5][y]) & moved[(x + 2) % 5][y])
        state[0][0] ^= constant


def keccak256(data: bytes) -> bytes:
    rate = 136
    padded = bytearray(data)
    padded.append(0x01)
    while len(padded) % rate:
        padded.append(0)
    padded[-1] |= 0x80
    state = [[0] * 5 for _ in range(5)]
    for start in range(0, len(padded), rate):
        block = padded[start:start + rate]
        for i in range(rate // 8):
            state[i % 5][i // 5] ^= int.from_bytes(block[8 * i:8 * i + 8], "little")
        _keccak_f(state)
    out = b"".join(state[i % 5][i // 5].to_bytes(8, "little") for i in range(4))
    return out


# --- secp256k1 public key recovery.

_P = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEFFFFFC2F
_N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
_G = (0x79BE667EF9DCBBAC55A06295CE870B07029BFCDB2DCE28D959F2815B16F81798,
      0x483ADA7726A3C4655DA4FBFC0E1108A8FD17B448A68554199C47D08FFB10D4B8)


def _add(a, b):
    if a is None:
        return b
    if b is None:
        return a
    if a[0] == b[0] and (a[1] + b[1]) % _P == 0:
        return None
    if a == b:
        slope = 3 * a[0] * a[0] * pow(2 * a[1], -1, _P) % _P
    else:
        slope = (b[1] - a[1]) * pow(b[0] - a[0], -1, _P) % _P
    x = (slope * slope - a[0] - b[0]) % _P
    return x, (slope * (a[0] - x) - a[1]) % _P


def _mul(point, scalar):
    result = None
    while scalar:
        if scalar & 1:
            result = _add(result, point)
        point = _add(point, point)
        scalar >>= 1
    return result


def recover_address(digest: bytes, signature: bytes):
    """The address whose key made `signature` (r ‖ s ‖ v) over `digest`."""
    if len(signature) != 65:
        return None
    r = int.from_bytes(signature[:32], "big")
    s = int.from_bytes(signature[32:64], "big")
    v = signature[64]
    v = v - 27 if v >= 27 else v
    if v not in (0, 1) or not (0 < r < _N and 0 < s < _N):
        return None
    y_squared = (pow(r, 3, _P) + 7) % _P
    y = pow(y_squared, (_P + 1) // 4, _P)
    if y * y % _P != y_squared:
        return None
    if y % 2 != v:
        y = _P - y
    z = int.from_bytes(digest, "big")
    r_inverse = pow(r, -1, _N)
    point = _add(_mul((r, y), s * r_inverse % _N), _mul(_G, (-z) * r_inverse % _N))
    if point is None:
        return None
    public = point[0].to_bytes(32, "big") + point[1].to_bytes(32, "big")
    return "0x" + keccak256(public)[12:].hex()


def personal_digest(message: str) -> bytes:
    """EIP-191 version 0x45: what personal_sign signs."""
    body = message.encode()
    return keccak256(b"\x19Ethereum Signed Message:\n" + str(len(body)).encode() + body)


# --- The Merkle sum tree (see reserves/src/tree.rs for the bytes hashed).

def _sha256(*parts: bytes) -> bytes:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part)
    return digest.digest()


def _sums_bytes(sums):
    return b"".join(int(s).to_bytes(16, "big") for s in sums)


def _amounts(values, count, what):
    """`values` as exactly `count` unsigned 128-bit integers."""
    if not isinstance(values, list) or len(values) != count:
        raise ValueError(f"{what}: {count} amounts expected")
    amounts = []
    for value in values:
        amount = int(value)
        if amount < 0 or amount >= 1 << 128:
            raise ValueError(f"{what}: {value} is not an unsigned 128-bit amount")
        amounts.append(amount)
    return amounts


def _hash(text, what):
    raw = bytes.fromhex(text.removeprefix("0x"))
    if len(raw) != 32:
        raise ValueError(f"{what} is not 32 bytes")
    return raw


def climb(proof, assets):
    """The root (hash, sums) the leaf and its path lead to.  An inner node
    commits to each child's hash and each child's sums, so a sibling cannot
    be shown smaller than it is."""
    salt = _hash(proof["salt"], "the salt")
    account = int(proof["account"]).to_bytes(8, "big")
    account_id = _sha256(b"weiport/reserves/account", salt, account)
    sums = _amounts(proof["owed"], assets, "the leaf")
    node = _sha256(b"\x00", account_id, _sums_bytes(sums))
    for step in proof["path"]:
        sibling = _hash(step["hash"], "a sibling's hash")
        sibling_sums = _amounts(step["sums"], assets, "a sibling")
        if step["side"] == "right":
            node = _sha256(b"\x01", node, _sums_bytes(sums), sibling, _sums_bytes(sibling_sums))
        elif step["side"] == "left":
            node = _sha256(b"\x01", sibling, _sums_bytes(sibling_sums), node, _sums_bytes(sums))
        else:
            raise ValueError("a step's side is left or right")
        sums = [a + b for a, b in zip(sums, sibling_sums)]
        if any(s >= 1 << 128 for s in sums):
            raise ValueError("a sum overflows")
    return node.hex(), sums


def message(sequence, chain, address):
    """The text each reserve address signs (reserves/src/snapshot.rs)."""
    return (f"weiport proof of reserves: snapshot {sequence}; chain {chain['chainId']} "
            f"block {chain['block']} ({chain['blockHash']}); address {address}")


# --- The node of the client's choosing.

def rpc(url, method, params):
    request = urllib.request.Request(
        url,
        data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        reply = json.load(answer)
    if "error" in reply:
        raise RuntimeError(f"{method}: {reply['error']}")
    return reply["result"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("proof", help="the document GET /sapi/v1/reserves/proof answered")
    parser.add_argument("--node", action="append", required=True,
                        help="a JSON-RPC node you trust: URL (every chain) or CHAINID=URL; repeat per chain")
    args = parser.parse_args()
    nodes = {}
    for given in args.node:
        chain_id, _, url = given.partition("=") if "=" in given.split("//")[0] else ("", "", given)
        nodes[chain_id] = url
    with open(args.proof) as file:
        document = json.load(file)
    snapshot, proof = document["snapshot"], document["proof"]
    failures = []

    assets = snapshot["assets"]
    try:
        totals = _amounts(snapshot["totals"], len(assets), "the totals")
        if proof["sequence"] != snapshot["sequence"] or proof["assets"] != assets:
            failures.append("the proof is of another snapshot than the one given with it")
        root, sums = climb(proof, len(assets))
        if root != snapshot["root"] or proof["root"] != snapshot["root"]:
            failures.append(f"the path leads to root {root}, not the published {snapshot['root']}")
        if sums != totals:
            failures.append(f"the path's sums {sums} are not the published totals {totals}")
    except (ValueError, KeyError, TypeError) as error:
        failures.append(f"malformed proof: {error}")
    print(f"leaf of account {proof.get('account')} owed {proof.get('owed')} {assets}: "
          f"{'in' if not failures else 'NOT in'} root {snapshot.get('root')}")

    scale = Decimal(10) ** int(snapshot.get("scale", 8))
    reserves = {}
    seen_chains, seen_addresses = set(), set()
    for chain in snapshot["chains"]:
        if chain["chainId"] in seen_chains:
            failures.append(f"chain {chain['chainId']} listed twice")
            continue
        seen_chains.add(chain["chainId"])
        url = nodes.get(str(chain["chainId"])) or nodes.get("")
        if url is None:
            failures.append(f"no --node given for chain {chain['chainId']}")
            continue
        if int(rpc(url, "eth_chainId", []), 16) != chain["chainId"]:
            failures.append(f"{url} is not chain {chain['chainId']}")
            continue
        block = rpc(url, "eth_getBlockByNumber", [hex(chain["block"]), False])
        if block is None or block["hash"].lower() != chain["blockHash"].lower():
            failures.append(f"block {chain['block']} is not {chain['blockHash']} on your node")
            continue
        for holding in chain["addresses"]:
            address = holding["address"].lower()
            if (chain["chainId"], address) in seen_addresses:
                failures.append(f"{address} listed twice on chain {chain['chainId']}")
                continue
            seen_addresses.add((chain["chainId"], address))
            expected = message(snapshot["sequence"], chain, address)
            if holding["message"] != expected:
                failures.append(f"{address}: the signed message is not this snapshot's: {holding['message']!r}")
            signer = recover_address(personal_digest(holding["message"]),
                                     bytes.fromhex(holding["signature"].removeprefix("0x")))
            if signer != address:
                failures.append(f"{address}: the signature recovers to {signer}")
            balance = int(rpc(url, "eth_getBalance", [address, hex(chain["block"])]), 16)
            if balance != int(holding["balanceWei"]):
                failures.append(f"{address}: your node says {balance} wei at block {chain['block']}, "
                                f"the exchange {holding['balanceWei']}")
            reserves[chain["coin"]] = reserves.get(chain["coin"], 0) + balance

    on_chain = {chain["coin"] for chain in snapshot["chains"]}
    for index, asset in enumerate(assets):
        owed = Decimal(int(snapshot["totals"][index])) / scale
        if asset not in on_chain:
            print(f"{asset}: liabilities {owed}; no reserves on a chain listed")
            continue
        held = Decimal(reserves.get(asset, 0)) / Decimal(10) ** 18
        ratio = "no liabilities" if owed == 0 else f"{held / owed:.6f}"
        print(f"{asset}: reserves {held} / liabilities {owed} = {ratio}")
        if owed > 0 and held < owed:
            failures.append(f"{asset}: reserves {held} do not cover liabilities {owed}")

    for failure in failures:
        print(f"FAILED: {failure}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
