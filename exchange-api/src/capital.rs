//! Binance's wallet endpoints over weiport's on-chain wallet: deposit
//! addresses and history, withdrawals and their history, the coin's network
//! settings (`/sapi/v1/capital/…`, `/sapi/v1/asset/assetDetail`).

use std::sync::Arc;

use alloy_primitives::Address;
use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use weiport_exchange::amount::Amount;
use weiport_exchange::engine::{Command, Event, WithdrawalStage};
use weiport_exchange::now_ms;

use crate::calendar::civil_from_days;
use crate::error::{Answer, BinanceError, Refusal};
use crate::extract::Signed;
use crate::params::{Params, boolean, integer, limit};
use crate::{ChainWallet, CoinSettings, Exchange, WalletFailure};

/// The networks of `asset`, its default first.
pub(crate) fn networks_of(
    exchange: &Exchange,
    asset: weiport_exchange::AssetId,
) -> impl Iterator<Item = &dyn ChainWallet> {
    exchange
        .wallets
        .iter()
        .map(|wallet| wallet.as_ref())
        .filter(move |wallet| wallet.coin().asset == asset)
}

/// The one network a request acts on: its `coin`'s (required), the one
/// `network` names or, without it, the coin's default.
fn network_of<'a>(
    exchange: &'a Exchange,
    params: &Params,
) -> Result<&'a dyn ChainWallet, BinanceError> {
    if exchange.wallets.is_empty() {
        return Err(unsupported());
    }
    let coin = params
        .get("coin")
        .ok_or_else(|| BinanceError::mandatory("coin"))?;
    let mut of_coin = exchange
        .wallets
        .iter()
        .map(|wallet| wallet.as_ref())
        .filter(|wallet| wallet.coin().coin == coin)
        .peekable();
    let default = *of_coin.peek().ok_or_else(|| malformed("coin"))?;
    match params.get("network") {
        None | Some("") => Ok(default),
        Some(network) => of_coin
            .find(|wallet| wallet.coin().network == network)
            .ok_or_else(|| malformed("network")),
    }
}

/// The networks a history read covers: every one, narrowed to `coin`'s and
/// to the one `network` names when they are sent.
fn networks_read<'a>(
    exchange: &'a Exchange,
    params: &Params,
) -> Result<Vec<&'a dyn ChainWallet>, BinanceError> {
    if exchange.wallets.is_empty() {
        return Err(unsupported());
    }
    let coin = params.get("coin");
    let network = params.get("network").filter(|n| !n.is_empty());
    let read: Vec<&dyn ChainWallet> = exchange
        .wallets
        .iter()
        .map(|wallet| wallet.as_ref())
        .filter(|wallet| coin.is_none_or(|coin| wallet.coin().coin == coin))
        .filter(|wallet| network.is_none_or(|network| wallet.coin().network == network))
        .collect();
    if read.is_empty() {
        let unknown_coin =
            coin.is_some_and(|coin| !exchange.wallets.iter().any(|w| w.coin().coin == coin));
        return Err(malformed(if unknown_coin { "coin" } else { "network" }));
    }
    Ok(read)
}

/// The wallet of ledger network `network` (0: the first chain), if it is
/// still configured.
fn wallet_on(exchange: &Exchange, network: u64) -> Option<&dyn ChainWallet> {
    exchange
        .wallets
        .iter()
        .map(|wallet| wallet.as_ref())
        .find(|wallet| wallet.coin().ledger_network == network)
}

/// A deposit's id as the API shows it: the first chain's ids as they are,
/// a further chain's prefixed with its chain id (each chain numbers its own).
fn deposit_id_text(config: &CoinSettings, deposit_id: u64) -> String {
    match config.ledger_network {
        0 => deposit_id.to_string(),
        chain => format!("{chain}-{deposit_id}"),
    }
}

fn unsupported() -> BinanceError {
    Refusal::Unsupported.into()
}

fn malformed(name: &str) -> BinanceError {
    BinanceError::mandatory(name)
}

/// A chain address: 20 bytes of hex, its EIP-55 checksum right when its
/// letters are mixed (all lower or all upper case carries none).
fn chain_address(text: &str) -> Option<Address> {
    let hex = text.strip_prefix("0x")?;
    if hex.len() != 40 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let letters = hex.bytes().filter(u8::is_ascii_alphabetic);
    let mixed = letters.clone().any(|b| b.is_ascii_lowercase())
        && letters.clone().any(|b| b.is_ascii_uppercase());
    if mixed {
        Address::parse_checksummed(text, None).ok()
    } else {
        text.parse().ok()
    }
}

/// `YYYY-MM-DD HH:MM:SS` in UTC, as Binance writes `applyTime`.
fn utc_text(time_ms: u64) -> String {
    let seconds = time_ms / 1000;
    let (y, m, d) = civil_from_days((seconds / 86_400) as i64);
    let day = seconds % 86_400;
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        day / 3600,
        day % 3600 / 60,
        day % 60
    )
}

/// The history window and page: `startTime`/`endTime` bound the record's
/// time, then `offset` rows are skipped and at most `limit` (≤ 1000) shown.
struct Page {
    start: u64,
    end: u64,
    offset: usize,
    limit: usize,
}

impl Page {
    fn of(params: &Params) -> Result<Self, BinanceError> {
        Ok(Self {
            start: integer(params, "startTime")?.unwrap_or(0),
            end: integer(params, "endTime")?.unwrap_or(u64::MAX),
            offset: integer(params, "offset")?.unwrap_or(0) as usize,
            limit: limit(params, 1000, 1000)?,
        })
    }

    fn shows(&self, time_ms: u64) -> bool {
        (self.start..=self.end).contains(&time_ms)
    }

    fn cut(&self, rows: Vec<Value>) -> Response {
        Json(Value::Array(
            rows.into_iter()
                .skip(self.offset)
                .take(self.limit)
                .collect(),
        ))
        .into_response()
    }
}

/// The networks a read covers.
type Networks<'a> = Vec<&'a dyn ChainWallet>;

/// What both history reads share: the networks read, the page and the
/// `status` wanted.
fn history_query<'a>(
    exchange: &'a Exchange,
    params: &Params,
) -> Result<(Networks<'a>, Page, Option<u64>), BinanceError> {
    let networks = networks_read(exchange, params)?;
    Ok((networks, Page::of(params)?, integer(params, "status")?))
}

/// `GET /sapi/v1/capital/deposit/address`: the account's own address.
pub(crate) async fn deposit_address(
    State(exchange): State<Arc<Exchange>>,
    Signed {
        account, params, ..
    }: Signed,
) -> Answer {
    let wallet = network_of(&exchange, &params)?;
    if !wallet.coin().deposit_enable {
        return Err(unsupported());
    }
    let failed = |error: WalletFailure| {
        tracing::error!(%error, "a deposit address could not be had");
        BinanceError::unavailable()
    };
    let address = match wallet.deposit_address(account).map_err(failed)? {
        Some(address) => address,
        None => {
            // Assigned through the exchange's log, so every process (and
            // the one that leads next) scans it for deposits.
            let derived = wallet.derive_deposit_address(account).map_err(failed)?;
            let assign = Command::AssignDepositAddress {
                account,
                address: derived.into_array(),
            };
            // Refused only when a request before this one assigned it:
            // either way it is recorded now, or the answer is an error.
            let _ = exchange.submit(assign).await;
            wallet
                .deposit_address(account)
                .map_err(failed)?
                .ok_or_else(BinanceError::unavailable)?
        }
    };
    Ok(Json(json!({
        "coin": wallet.coin().coin,
        "address": address.to_checksum(None),
        "tag": "",
        "url": "",
    }))
    .into_response())
}

/// `GET /sapi/v1/capital/deposit/hisrec`: the account's deposits, newest first.
pub(crate) async fn deposit_history(
    State(exchange): State<Arc<Exchange>>,
    Signed {
        account, params, ..
    }: Signed,
) -> Answer {
    let (networks, page, status) = history_query(&exchange, &params)?;
    let tx_id = params.get("txId");
    let mut deposits = Vec::new();
    for wallet in networks {
        let config = wallet.coin();
        let read = wallet.deposits(account).map_err(|error| {
            tracing::error!(%error, network = %config.network, "reading deposits failed");
            BinanceError::unavailable()
        })?;
        deposits.extend(read.into_iter().map(|deposit| (config, deposit)));
    }
    // Newest first across networks, as each network lists its own.
    deposits.sort_by_key(|(_, d)| std::cmp::Reverse(d.row.time_ms));
    let rows = deposits
        .into_iter()
        .filter(|(_, d)| page.shows(d.row.time_ms))
        .filter(|(_, d)| status.is_none_or(|s| s == u64::from(d.status)))
        .map(|(config, d)| {
            let tx = d.row.tx_hash.map(|h| h.to_string()).unwrap_or_default();
            (tx, config, d)
        })
        .filter(|(tx, ..)| tx_id.is_none_or(|wanted| wanted.eq_ignore_ascii_case(tx)))
        .map(|(tx, config, d)| {
            json!({
                "id": deposit_id_text(config, d.row.deposit_id),
                "amount": Amount::from_units(d.row.amount).to_string(),
                "coin": config.coin,
                "network": config.network,
                "status": d.status,
                "address": d.row.address.to_checksum(None),
                "addressTag": "",
                "txId": tx,
                "insertTime": d.row.time_ms,
                "transferType": 0,
                "confirmTimes": format!("{}/{}", d.confirmations.min(config.confirmations), config.confirmations),
                "unlockConfirm": config.confirmations,
                "walletType": 0,
                "blockNumber": d.row.block,
                "weiReceived": d.row.wei.to_string(),
            })
        })
        .collect();
    Ok(page.cut(rows))
}

/// `POST /sapi/v1/capital/withdraw/apply`: takes amount and fee from the
/// account at once; the wallet sends it on chain.
pub(crate) async fn withdraw(
    State(exchange): State<Arc<Exchange>>,
    Signed {
        key,
        account,
        params,
        ..
    }: Signed,
) -> Answer {
    // As on Binance, withdrawing needs a key bound to addresses.
    if key.allowed_ips.is_empty() {
        return Err(BinanceError::from(Refusal::Unauthorized));
    }
    let wallet = network_of(&exchange, &params)?;
    let config = wallet.coin();
    if !wallet.withdrawals_open() {
        return Err(unsupported());
    }
    let address = params.required("address")?;
    let destination = chain_address(address).ok_or_else(|| malformed("address"))?;
    if params.get("addressTag").is_some_and(|tag| !tag.is_empty()) {
        return Err(malformed("addressTag"));
    }
    if params.get("walletType").is_some_and(|w| w != "0") {
        return Err(malformed("walletType"));
    }
    let requested = params
        .amount("amount")?
        .ok_or_else(|| BinanceError::mandatory("amount"))?;
    // With transactionFeeFlag the fee comes out of the amount instead of on top.
    let amount = if boolean(&params, "transactionFeeFlag") {
        requested
            .checked_sub(config.withdraw_fee)
            .ok_or_else(|| malformed("amount"))?
    } else {
        requested
    };
    if amount < config.withdraw_min || amount > config.withdraw_max || amount.is_zero() {
        return Err(Refusal::WithdrawalAmount {
            min: &config.withdraw_min,
            max: &config.withdraw_max,
        }
        .into());
    }
    let client_id = match params.get("withdrawOrderId") {
        Some(id) if id.is_empty() || id.len() > 64 => return Err(malformed("withdrawOrderId")),
        id => id.map(Box::<str>::from),
    };
    let outcome = exchange
        .submit(Command::Withdraw {
            account,
            asset: config.asset,
            amount,
            fee: config.withdraw_fee,
            client_id,
            destination: destination.into_array(),
            requested_ms: now_ms(),
            network: config.ledger_network,
        })
        .await?;
    let id = outcome.events.iter().find_map(|event| match event {
        Event::Withdrawal { withdrawal_id, .. } => Some(*withdrawal_id),
        _ => None,
    });
    wallet.wake();
    Ok(Json(json!({ "id": id.unwrap_or_default().to_string() })).into_response())
}

/// `GET /sapi/v1/capital/withdraw/history`: the account's withdrawals, newest first.
pub(crate) async fn withdraw_history(
    State(exchange): State<Arc<Exchange>>,
    Signed {
        account, params, ..
    }: Signed,
) -> Answer {
    let (networks, page, status) = history_query(&exchange, &params)?;
    let client_id = params.get("withdrawOrderId");
    let ids: Option<Vec<&str>> = params.get("idList").map(|list| list.split(',').collect());
    let withdrawals: Vec<_> = {
        let view = exchange.sequencer.view();
        view.chain
            .withdrawals
            .iter()
            .rev()
            .filter(|(_, w)| w.account == account)
            .map(|(id, w)| (*id, w.clone()))
            .collect()
    };
    let mut rows = Vec::new();
    for (id, w) in withdrawals {
        let Some(wallet) = wallet_on(&exchange, w.network) else {
            continue;
        };
        let config = wallet.coin();
        if !networks
            .iter()
            .any(|n| n.coin().ledger_network == w.network && n.coin().asset == w.asset)
            || !page.shows(w.requested_ms)
            || client_id.is_some_and(|c| w.client_id.as_deref() != Some(c))
            || ids
                .as_ref()
                .is_some_and(|ids| !ids.contains(&id.to_string().as_str()))
        {
            continue;
        }
        let sent = wallet.withdrawal_tx(id).map_err(|error| {
            tracing::error!(%error, "reading a withdrawal failed");
            BinanceError::unavailable()
        })?;
        // Binance's withdrawal statuses: 4 processing, 5 failure, 6 completed.
        let code = match w.stage {
            WithdrawalStage::Completed => 6,
            WithdrawalStage::Failed => 5,
            _ => 4,
        };
        if status.is_some_and(|s| s != code) {
            continue;
        }
        let (tx_id, block, info) = match &sent {
            Some(row) => {
                let hash = row
                    .mined
                    .map(|(hash, ..)| hash)
                    .or_else(|| row.sent.last().map(|s| s.hash));
                (
                    hash.map(|h| h.to_string()).unwrap_or_default(),
                    row.mined.map(|(_, block, _)| block),
                    match (&row.refused, row.mined) {
                        (Some(reason), _) => reason.clone(),
                        (None, Some((_, _, false))) => "the transaction reverted".to_owned(),
                        _ => String::new(),
                    },
                )
            }
            None => (String::new(), None, String::new()),
        };
        let confirmations = match (block, wallet.indexed_head()) {
            (Some(block), Some(head)) => head.saturating_sub(block) + 1,
            _ => 0,
        };
        let mut row = json!({
            "id": id.to_string(),
            "amount": w.amount.to_string(),
            "transactionFee": w.fee.to_string(),
            "coin": config.coin,
            "status": code,
            "address": Address::from(w.destination).to_checksum(None),
            "txId": tx_id,
            "applyTime": utc_text(w.requested_ms),
            "network": config.network,
            "transferType": 0,
            "info": info,
            "confirmNo": confirmations.min(config.confirmations),
            "walletType": 0,
            "txKey": "",
        });
        if let Some(client_id) = &w.client_id {
            row["withdrawOrderId"] = json!(client_id);
        }
        rows.push(row);
    }
    Ok(page.cut(rows))
}

/// `asset`'s networks as `capital/config/getall` lists them.
pub(crate) fn network_list(exchange: &Exchange, asset: weiport_exchange::AssetId) -> Value {
    let networks = networks_of(exchange, asset)
        .enumerate()
        .map(|(n, wallet)| network_entry(wallet, n == 0))
        .collect();
    Value::Array(networks)
}

fn network_entry(wallet: &dyn ChainWallet, is_default: bool) -> Value {
    let config = wallet.coin();
    json!({
        "network": config.network,
        "coin": config.coin,
        "name": config.chain_name,
        "isDefault": is_default,
        "depositEnable": config.deposit_enable,
        "withdrawEnable": wallet.withdrawals_open(),
        "depositDesc": "",
        "withdrawDesc": "",
        "specialTips": "",
        "withdrawFee": config.withdraw_fee.to_string(),
        "withdrawMin": config.withdraw_min.to_string(),
        "withdrawMax": config.withdraw_max.to_string(),
        "withdrawIntegerMultiple": "0.00000001",
        "minConfirm": config.confirmations,
        "unLockConfirm": config.confirmations,
        "addressRegex": "^(0x)[0-9A-Fa-f]{40}$",
        "memoRegex": "",
        "sameAddress": false,
        "busy": false,
        "resetAddressStatus": false,
        "contractAddress": "",
        "estimatedArrivalTime": 1,
    })
}

/// `GET /sapi/v1/asset/assetDetail`: per asset, whether it moves on chain and at what fee.
pub(crate) async fn asset_detail(
    State(exchange): State<Arc<Exchange>>,
    Signed { params, .. }: Signed,
) -> Answer {
    let wanted = params.get("asset");
    let mut out = serde_json::Map::new();
    for (id, name) in exchange.catalog.assets() {
        if wanted.is_some_and(|w| w != name) {
            continue;
        }
        let wallet = networks_of(&exchange, id).next();
        let config = wallet.map(|w| w.coin());
        out.insert(
            name.to_owned(),
            json!({
                "minWithdrawAmount": config.map_or("0".to_owned(), |c| c.withdraw_min.to_string()),
                "depositStatus": config.is_some_and(|c| c.deposit_enable),
                "withdrawFee": config.map_or("0".to_owned(), |c| c.withdraw_fee.to_string()),
                "withdrawStatus": wallet.is_some_and(|w| w.withdrawals_open()),
                "depositTip": "",
            }),
        );
    }
    Ok(Json(Value::Object(out)).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_checked_by_their_checksum_when_it_has_one() {
        let good = "0xa0Ee7A142d267C1f36714E4a8F75612F20a79720";
        assert!(chain_address(good).is_some());
        assert!(chain_address(&good.to_ascii_lowercase()).is_some());
        assert!(chain_address(&format!("0x{}", good[2..].to_ascii_uppercase())).is_some());
        // One letter's case flipped: the checksum fails.
        assert!(chain_address("0xA0Ee7A142d267C1f36714E4a8F75612F20a79720").is_none());
        for bad in [
            "",
            "0x",
            "a0Ee7A142d267C1f36714E4a8F75612F20a79720",
            "0xa0Ee7A142d267C1f36714E4a8F75612F20a7972",
            "0xa0Ee7A142d267C1f36714E4a8F75612F20a7972g",
            "0xa0Ee7A142d267C1f36714E4a8F75612F20a797200",
        ] {
            assert!(chain_address(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn apply_times_are_utc_text() {
        assert_eq!(utc_text(0), "1970-01-01 00:00:00");
        assert_eq!(utc_text(1_618_488_413_000), "2021-04-15 12:06:53");
    }
}
