"""What the client scripts share: the check that ends a run on the first
mismatch, and unchanged Binance clients with only their URLs pointed at a
local weiport."""

import sys
import time

import ccxt

PRODUCTION_HOSTS = [
    "https://api.binance.com",
    "https://fapi.binance.com",
    "https://dapi.binance.com",
    "https://eapi.binance.com",
    "https://papi.binance.com",
]


START = time.monotonic()


def check(label, actual, expected):
    if actual != expected:
        sys.exit(f"{label}: expected {expected!r}, got {actual!r}")
    print(f"ok {label} ({time.monotonic() - START:.1f} s)", file=sys.stderr)


def rest_json(base, path):
    """The JSON answer of GET base + path, with the standard library."""
    import json
    import urllib.request

    with urllib.request.urlopen(base + path) as answer:
        return json.load(answer)


PRODUCTION_SOCKETS = ["wss://stream.binance.com:9443", "wss://ws-api.binance.com:443"]


def local_urls(urls, base):
    """The client's own URL table with every production host replaced by
    `base` (its WebSocket hosts by `base` over ws://)."""
    if isinstance(urls, dict):
        return {k: local_urls(v, base) for k, v in urls.items()}
    if isinstance(urls, str):
        for host in PRODUCTION_HOSTS:
            if urls.startswith(host):
                return base + urls[len(host):]
        for host in PRODUCTION_SOCKETS:
            if urls.startswith(host):
                return base.replace("http://", "ws://", 1) + urls[len(host):]
    return urls


def ccxt_binance(base, key, secret):
    """ccxt's binance with default options, only its URLs changed."""
    api = local_urls(ccxt.binance().urls["api"], base)
    return ccxt.binance({"apiKey": key, "secret": secret, "urls": {"api": api}})


def ccxt_pro_binance(base, key, secret):
    """ccxt.pro's binance with default options, only its URLs changed."""
    import ccxt.pro

    api = local_urls(ccxt.pro.binance().urls["api"], base)
    return ccxt.pro.binance({"apiKey": key, "secret": secret, "urls": {"api": api}})


def local_etherscan(base, api_key):
    """etherscan-python's client, unchanged but for its base URL: the
    server's root (its /api), or a V2 URL naming a chain
    (`.../v2/api?chainid=N`)."""
    from etherscan import Etherscan
    from etherscan.enums.fields_enum import FieldsEnum

    if "?" in base:
        FieldsEnum.PREFIX = base + "&"
    else:
        FieldsEnum.PREFIX = base.rstrip("/") + "/api?"
    return Etherscan(api_key)


def ask_etherscan(call):
    """The call's result, or {"error": text} for the AssertionError
    etherscan-python raises on status "0" ("No transactions found" too)."""
    try:
        return call()
    except AssertionError as error:
        return {"error": str(error)}
