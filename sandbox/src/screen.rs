//! The one screen a newcomer reads: what runs where, the keys, and
//! examples to paste.

use weiport_exchange::{Amount, Catalog, MarketId};

use crate::DESCRIPTION_FILE;
use crate::description::Description;
use crate::input::SandboxSettings;

/// The one screen a newcomer reads: what runs where, the keys, and
/// examples to paste.
pub(crate) fn screen(d: &Description, settings: &SandboxSettings, kept: bool) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let first = &d.accounts[0];
    let symbol = d.market_makers.first().map_or_else(
        || settings.catalog.symbol(MarketId(0)).to_owned(),
        |m| m.symbol.clone(),
    );
    let price = settings
        .reference_prices
        .get(&symbol)
        .map_or_else(|| "1".to_owned(), |p| plain(*p));
    let node = match d.node_pid {
        Some(pid) => format!("{} (anvil, pid {pid})", d.node_url),
        None => d.node_url.clone(),
    };
    let dir = if kept {
        format!("{} (kept)", d.data_dir.display())
    } else {
        format!("{} (removed on exit)", d.data_dir.display())
    };
    let _ = writeln!(out, "weiport sandbox");
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "  REST       {}   (Binance /api/v3, Etherscan /api, CoinGecko /api/v3/simple)",
        d.rest_url
    );
    let _ = writeln!(
        out,
        "  WebSocket  {}   (/ws/<stream>, /stream?streams=, /ws-api/v3)",
        d.ws_url
    );
    let _ = writeln!(
        out,
        "  Admin      {}   (bearer token in {})",
        d.admin_url,
        d.admin_token_file.display()
    );
    let _ = writeln!(out, "  Node       {node}");
    for chain in d.chains.iter().skip(1) {
        let pid = chain
            .node_pid
            .map_or_else(String::new, |pid| format!(", pid {pid}"));
        let _ = writeln!(
            out,
            "  Node       {} (anvil{pid}: chain {} \"{}\", network {}; /v2/api?chainid={})",
            chain.node_url, chain.chain_id, chain.name, chain.network, chain.chain_id
        );
    }
    let _ = writeln!(out, "  Data dir   {dir}");
    let _ = writeln!(
        out,
        "  Described  {}",
        d.data_dir.join(DESCRIPTION_FILE).display()
    );
    let _ = writeln!(out);
    let _ = writeln!(out, "Test accounts (HMAC keys: API key, then secret)");
    for a in &d.accounts {
        let perms: Vec<String> = a
            .permissions
            .iter()
            .map(|p| format!("{p:?}").to_lowercase())
            .collect();
        let funds: Vec<String> = a
            .balances
            .iter()
            .map(|(k, v)| format!("{} {k}", plain(*v)))
            .collect();
        let _ = writeln!(
            out,
            "  #{:<4} {}  {}  {}  {}",
            a.account,
            a.api_key,
            a.secret,
            perms.join("+"),
            funds.join(", ")
        );
    }
    let _ = writeln!(
        out,
        "  read-only key of #{}: {}  {}",
        d.read_key.account, d.read_key.api_key, d.read_key.secret
    );
    for m in &d.market_makers {
        let _ = writeln!(
            out,
            "  market maker on {} (account #{}, taker flow #{}), inventory kept within {}..{}",
            m.symbol,
            m.account,
            m.flow_account,
            plain(m.min_inventory),
            plain(m.max_inventory)
        );
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "A signed order with curl and openssl:");
    let _ = writeln!(
        out,
        "  q=\"symbol={symbol}&side=BUY&type=LIMIT&timeInForce=GTC&quantity=0.01&price={price}&timestamp=$(date +%s000)\""
    );
    let _ = writeln!(
        out,
        "  sig=$(printf '%s' \"$q\" | openssl dgst -sha256 -hmac '{}' | sed 's/^.* //')",
        first.secret
    );
    let _ = writeln!(
        out,
        "  curl -s -H 'X-MBX-APIKEY: {}' -X POST \"{}/api/v3/order?$q&signature=$sig\"",
        first.api_key, d.rest_url
    );
    let _ = writeln!(out);
    let _ = writeln!(out, "python-binance:");
    let _ = writeln!(out, "  from binance.client import Client");
    let _ = writeln!(
        out,
        "  client = Client('{}', '{}', base_endpoint='', ping=False)",
        first.api_key, first.secret
    );
    let _ = writeln!(out, "  client.API_URL = '{}/api'", d.rest_url);
    let _ = writeln!(
        out,
        "  print(client.get_symbol_ticker(symbol='{symbol}'), client.get_account()['balances'])"
    );
    let _ = writeln!(out);
    let _ = writeln!(out, "ccxt:");
    let _ = writeln!(out, "  import ccxt");
    let _ = writeln!(
        out,
        "  ex = ccxt.binance({{'apiKey': '{}', 'secret': '{}', 'options': {{'fetchMarkets': {{'types': ['spot']}}}}}})",
        first.api_key, first.secret
    );
    let _ = writeln!(
        out,
        "  ex.urls['api'] = {{k: v.replace('https://api.binance.com', '{}') for k, v in ex.urls['api'].items() if isinstance(v, str)}}",
        d.rest_url
    );
    let _ = writeln!(
        out,
        "  print(ex.fetch_ticker('{}'))",
        ccxt_symbol(&settings.catalog, &symbol)
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Etherscan balance (any key works as apikey, read-only included):"
    );
    let _ = writeln!(
        out,
        "  curl -s '{}/api?module=account&action=balance&address=0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266&tag=latest&apikey={}'",
        d.rest_url, d.read_key.api_key
    );
    let _ = writeln!(out);
    let _ = writeln!(out, "CoinGecko simple price:");
    let _ = writeln!(
        out,
        "  curl -s '{}/api/v3/simple/price?ids=ethereum&vs_currencies=usd&include_24hr_change=true'",
        d.rest_url
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Proof of reserves (the latest snapshot; an account's own proof is the signed GET /sapi/v1/reserves/proof, checked by tools/verify_reserves.py against any node):"
    );
    let _ = writeln!(out, "  curl -s '{}/sapi/v1/reserves'", d.rest_url);
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Trades as they happen:  websocat {}/{}@trade",
        d.ws_url,
        symbol.to_lowercase()
    );
    let _ = writeln!(out, "Ctrl-C stops everything.");
    out
}

/// An amount without trailing zeros: `100`, `0.5`.
fn plain(amount: Amount) -> String {
    let text = amount.to_string();
    match text.split_once('.') {
        Some((whole, fraction)) => match fraction.trim_end_matches('0') {
            "" => whole.to_owned(),
            fraction => format!("{whole}.{fraction}"),
        },
        None => text,
    }
}

/// `ETH/USDT` for `ETHUSDT`.
fn ccxt_symbol(catalog: &Catalog, symbol: &str) -> String {
    catalog
        .market_id(symbol)
        .and_then(|id| catalog.market(id))
        .map_or_else(|| symbol.to_owned(), |m| format!("{}/{}", m.base, m.quote))
}
