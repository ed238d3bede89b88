//! Etherscan's `stats`, `token` and `contract` modules: the supply as the
//! index holds it, the coin's price from the exchange's own trades, a
//! token's supply and description from its contract, and contracts as a
//! server without verified sources describes them (their creation from the
//! index, their source as Etherscan answers for an unverified contract).

use std::sync::{Arc, Mutex, PoisonError};

use alloy_primitives::{Address, U256};
use axum::Json;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use weiport_storage::{HistoryPage, Store, Transfer};

use crate::envelope::{decimal, ok_string};
use crate::error::{MSG_BAD_ACTION, MSG_BAD_ADDRESS, QueryError};
use crate::node::{self, ask, malformed, small};
use crate::params::{BlockTag, Params, parse_address, parse_block_tag};
use crate::proxy::NodeProxy;
use crate::range::Indexed;

type Node<'a> = Option<&'a dyn NodeProxy>;

/// The exchange's prices of the chain's coin, for `stats&action=ethprice`.
pub trait CoinPrices: Send + Sync {
    /// The last trade of the coin against `quote` ("USD": a dollar stablecoin;
    /// "BTC"): its price as text and its time in seconds.
    fn last_price(&self, quote: &str) -> Option<(String, u64)>;
}

/// The supply as last summed: the indexed head it was summed at, the total.
#[derive(Default)]
pub(crate) struct SupplyCache(Mutex<Option<(u64, U256)>>);

/// Etherscan's message when a contract's source is not known.
const NOT_VERIFIED: &str = "Contract source code not verified";
/// Most addresses `getcontractcreation` takes at once, as Etherscan.
const MAX_CREATIONS: usize = 5;

fn ok(result: Value) -> Response {
    Json(json!({ "status": "1", "message": "OK", "result": result })).into_response()
}

fn address_param(params: &Params, name: &str) -> Result<Address, QueryError> {
    params
        .get(name)
        .and_then(|text| parse_address(text).ok())
        .ok_or_else(|| QueryError::bad(MSG_BAD_ADDRESS))
}

/// `module=stats`.
pub(crate) async fn stats(
    store: &Store,
    node: Node<'_>,
    (prices, supply): (Option<&Arc<dyn CoinPrices>>, &SupplyCache),
    params: &Params<'_>,
    action: &str,
) -> Result<Response, QueryError> {
    match action {
        "ethsupply" => {
            let indexed = Indexed::of(store)?;
            if store.indexed_start().is_some_and(|start| start > 0) {
                return Err(QueryError::bad(
                    "Error! The index starts after genesis: the supply is not known",
                ));
            }
            let head = indexed.resolve(BlockTag::Latest)?;
            let mut cached = supply.0.lock().unwrap_or_else(PoisonError::into_inner);
            let total = match *cached {
                Some((at, total)) if at == head => total,
                _ => {
                    // Every indexed balance summed at this head: the coin
                    // every account holds, issuance in, burnt fees out.
                    let (total, _) = store
                        .balances_total()
                        .map_err(|e| QueryError::unavailable(format!("Error! {e}")))?;
                    *cached = Some((head, total));
                    total
                }
            };
            Ok(ok_string(&decimal(&total)))
        }
        "ethprice" => {
            let prices = prices.ok_or_else(|| {
                QueryError::unavailable("Error! This server runs no exchange to price the coin")
            })?;
            let Some((usd, usd_time)) = prices.last_price("USD") else {
                return Err(QueryError::bad(
                    "Error! No trade of the coin against a dollar yet",
                ));
            };
            let (btc, btc_time) = prices
                .last_price("BTC")
                .map_or((String::new(), String::new()), |(p, t)| (p, t.to_string()));
            Ok(ok(json!({
                "ethbtc": btc,
                "ethbtc_timestamp": btc_time,
                "ethusd": usd,
                "ethusd_timestamp": usd_time.to_string(),
            })))
        }
        "nodecount" => {
            // The nodes this server knows of: its own and the node's peers
            // (none known when the node keeps no peers, as a dev node).
            let peers = match ask(node, "net_peerCount", json!([])).await {
                Ok(peers) => small(&peers).ok_or_else(|| malformed("peer count"))?,
                Err(refused) if !refused.is_unavailable() => 0,
                Err(unavailable) => return Err(unavailable),
            };
            let today = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() / 86_400);
            Ok(ok(json!({
                "UTCDate": civil_date(today),
                "TotalNodeCount": (peers + 1).to_string(),
            })))
        }
        // A node does not report its size on disk over JSON-RPC: not made up.
        "chainsize" => Err(QueryError::bad(
            "Error! The chain's size on disk is not known to this server: nodes do not report it over JSON-RPC",
        )),
        "tokensupply" | "tokensupplyhistory" => {
            let token = address_param(params, "contractaddress")?;
            let at = match action {
                "tokensupply" => "latest".to_owned(),
                _ => match params.get("blockno").and_then(parse_block_tag) {
                    Some(BlockTag::Number(n)) => format!("{n:#x}"),
                    _ => return Err(QueryError::bad("Error! Invalid block number")),
                },
            };
            // totalSupply()
            let answer = node::call(node, &token, "0x18160ddd", &at).await?;
            let supply = node::word(&answer)
                .ok_or_else(|| QueryError::bad("Error! The address answers no totalSupply()"))?;
            Ok(ok_string(&decimal(&supply)))
        }
        _ => Err(QueryError::bad(MSG_BAD_ACTION)),
    }
}

/// `YYYY-MM-DD` of day `days` since 1970-01-01.
fn civil_date(days: u64) -> String {
    // Howard Hinnant's days-from-civil, inverted.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// `module=token`: `tokeninfo` from the contract (and the index's record
/// of its name, symbol and decimals when it has one).
pub(crate) async fn token(
    store: &Store,
    node: Node<'_>,
    params: &Params<'_>,
    action: &str,
) -> Result<Response, QueryError> {
    match action {
        "tokeninfo" => {}
        "tokenholderlist" | "tokenholdercount" => return holders(store, params, action),
        _ => return Err(QueryError::bad(MSG_BAD_ACTION)),
    }
    let token = address_param(params, "contractaddress")?;
    let supply = node::word(&node::call(node, &token, "0x18160ddd", "latest").await?)
        .ok_or_else(|| QueryError::bad("Error! The address answers no totalSupply()"))?;
    let info = store
        .token_info(&token)
        .map_err(|e| QueryError::unavailable(format!("Error! {e}")))?;
    let (name, symbol, decimals) = match info {
        Some(info) => (info.name, info.symbol, info.decimals.map(u64::from)),
        None => (
            text_call(node, &token, "0x06fdde03").await,
            text_call(node, &token, "0x95d89b41").await,
            node::call(node, &token, "0x313ce567", "latest")
                .await
                .ok()
                .and_then(|a| node::word(&a))
                .and_then(|d| u64::try_from(d).ok()),
        ),
    };
    let mut entry = serde_json::Map::new();
    entry.insert("contractAddress".into(), format!("{token:#x}").into());
    entry.insert("tokenName".into(), name.into());
    entry.insert("symbol".into(), symbol.into());
    entry.insert(
        "divisor".into(),
        decimals.map_or(String::new(), |d| d.to_string()).into(),
    );
    entry.insert("tokenType".into(), "ERC20".into());
    entry.insert("totalSupply".into(), supply.to_string().into());
    // What only Etherscan's own records hold: empty, never made up.
    for field in [
        "blueCheckmark",
        "description",
        "website",
        "email",
        "blog",
        "reddit",
        "slack",
        "facebook",
        "twitter",
        "bitcointalk",
        "github",
        "telegram",
        "wechat",
        "linkedin",
        "discord",
        "whitepaper",
        "tokenPriceUSD",
    ] {
        entry.insert(field.into(), "".into());
    }
    Ok(ok(json!([entry])))
}

/// `tokenholderlist` (a page of the token's holders with a balance, by
/// address: `page`, `offset` ≤ 10,000) and `tokenholdercount`, from the
/// balances the index read from the token after each block.
fn holders(store: &Store, params: &Params, action: &str) -> Result<Response, QueryError> {
    let token = address_param(params, "contractaddress")?;
    crate::range::indexed_from(store, weiport_storage::HistoryIndex::Tokens)?;
    let failed = |e: weiport_storage::StorageError| QueryError::unavailable(format!("Error! {e}"));
    if action == "tokenholdercount" {
        let count = store.token_holder_count(&token).map_err(failed)?;
        return Ok(ok_string(&count.to_string()));
    }
    let page = crate::params::number(params, "page", 1)?.max(1);
    let offset = crate::params::number(params, "offset", 10)?.clamp(1, 10_000);
    let skip = usize::try_from((page - 1).saturating_mul(offset)).unwrap_or(usize::MAX);
    let found = store
        .token_holders(&token, (skip, offset as usize))
        .map_err(failed)?;
    if found.is_empty() {
        return Ok(crate::envelope::empty("No token holder found", "[]"));
    }
    Ok(crate::envelope::list(&found, |out, holding| {
        out.push_str(&format!(
            r#"{{"TokenHolderAddress":"{:#x}","TokenHolderQuantity":"{}"}}"#,
            holding.token, holding.balance
        ));
    }))
}

/// A contract's string answer (`name()`, `symbol()`), empty if none.
async fn text_call(node: Node<'_>, token: &Address, selector: &str) -> String {
    let Ok(bytes) = node::call(node, token, selector, "latest").await else {
        return String::new();
    };
    let length = bytes
        .get(32..64)
        .map(U256::from_be_slice)
        .and_then(|l| usize::try_from(l).ok())
        .unwrap_or(0);
    bytes
        .get(64..64 + length)
        .and_then(|b| std::str::from_utf8(b).ok())
        .unwrap_or_default()
        .to_owned()
}

/// `module=contract`.
pub(crate) async fn contract(
    store: &Store,
    params: &Params<'_>,
    action: &str,
) -> Result<Response, QueryError> {
    match action {
        "getabi" => {
            address_param(params, "address")?;
            Err(QueryError::bad(NOT_VERIFIED))
        }
        "getsourcecode" => {
            address_param(params, "address")?;
            Ok(ok(json!([{
                "SourceCode": "",
                "ABI": NOT_VERIFIED,
                "ContractName": "",
                "CompilerVersion": "",
                "OptimizationUsed": "",
                "Runs": "",
                "ConstructorArguments": "",
                "EVMVersion": "Default",
                "Library": "",
                "LicenseType": "Unknown",
                "Proxy": "0",
                "Implementation": "",
                "SwarmSource": "",
            }])))
        }
        "getcontractcreation" => {
            let list = params.get("contractaddresses").unwrap_or_default();
            let addresses: Vec<Address> = list
                .split(',')
                .map(|a| parse_address(a.trim()))
                .collect::<Result<_, _>>()
                .map_err(|_| QueryError::bad(MSG_BAD_ADDRESS))?;
            if addresses.is_empty() || addresses.len() > MAX_CREATIONS {
                return Err(QueryError::bad(format!(
                    "Error! Up to {MAX_CREATIONS} contract addresses at a time"
                )));
            }
            Indexed::of(store)?;
            let mut found = Vec::new();
            for address in &addresses {
                if let Some(creation) = creation(store, address)? {
                    found.push(creation);
                }
            }
            if found.is_empty() {
                return Ok(crate::envelope::empty("No data found", "null"));
            }
            Ok(ok(Value::Array(found)))
        }
        _ => Err(QueryError::bad(MSG_BAD_ACTION)),
    }
}

/// How `contract` was created, from the index: by a transaction of its own,
/// or by another contract within one (a creation the call trace recorded).
fn creation(store: &Store, contract: &Address) -> Result<Option<Value>, QueryError> {
    let failed = |e: weiport_storage::StorageError| QueryError::unavailable(format!("Error! {e}"));
    let everything = HistoryPage {
        from_block: 0,
        to_block: u64::MAX,
        descending: false,
        skip: 0,
        take: usize::MAX,
    };
    // A contract is created once: the earliest transaction or trace that
    // names it as created is its creation (a transfer to the address before
    // is not). Pages of 64 keep the read bounded by where it is found.
    let mut direct = None;
    let mut page = HistoryPage {
        take: 64,
        ..everything
    };
    loop {
        let rows = store.address_transactions(contract, page).map_err(failed)?;
        if let Some(tx) = rows
            .iter()
            .find(|t| t.row.contract_address == Some(*contract))
        {
            direct = Some(tx.clone());
            break;
        }
        if rows.len() < page.take {
            break;
        }
        page.skip += page.take;
    }
    let by_contract = store
        .address_transfers(
            contract,
            weiport_storage::TransferKind::Internal,
            HistoryPage {
                take: 1,
                ..everything
            },
            |t| matches!(t, Transfer::Internal(i) if i.contract_address == Some(*contract)),
        )
        .map_err(failed)?
        .into_iter()
        .next();
    let earlier_internal = match (&direct, &by_contract) {
        (Some(d), Some(i)) => (i.block, i.tx_index) < (d.block, d.index),
        (None, Some(_)) => true,
        _ => false,
    };
    let (block, tx, factory, code) = if earlier_internal {
        let Some(internal) = by_contract else {
            return Ok(None);
        };
        let Transfer::Internal(trace) = &internal.transfer else {
            return Ok(None);
        };
        (
            internal.block,
            internal.transaction,
            format!("{:#x}", trace.from),
            trace.input.clone(),
        )
    } else {
        let Some(direct) = direct else {
            return Ok(None);
        };
        (
            direct.block,
            direct.row.clone(),
            String::new(),
            direct.row.input.clone(),
        )
    };
    Ok(Some(json!({
        "contractAddress": format!("{contract:#x}"),
        "contractCreator": format!("{:#x}", tx.from),
        "txHash": format!("{:#x}", tx.hash),
        "blockNumber": block.to_string(),
        "timestamp": tx.timestamp.to_string(),
        "contractFactory": factory,
        "creationBytecode": alloy_primitives::hex::encode_prefixed(code),
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_become_utc_dates() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(19_723), "2024-01-01");
        assert_eq!(civil_date(20_783), "2026-11-26");
    }
}
