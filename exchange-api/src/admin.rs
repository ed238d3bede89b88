//! The exchange's admin routes, merged into the admin listener behind its
//! bearer token: credits and debits through the engine, and the wallet's
//! books beside the chain.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::json;
use weiport_exchange::amount::Amount;
use weiport_exchange::engine::{Command, Event, Reject, WithdrawalStage};

use crate::exchange::Exchange;

#[derive(serde::Deserialize)]
struct Transfer {
    asset: String,
    amount: String,
}

/// `POST /admin/accounts/{id}/credit` (`CREDIT`) or `/debit` with `{"asset","amount"}`.
async fn transfer<const CREDIT: bool>(
    State(exchange): State<Arc<Exchange>>,
    Path(account): Path<u64>,
    body: Result<Json<Transfer>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let bad = axum::http::StatusCode::BAD_REQUEST;
    let Ok(Json(transfer)) = body else {
        return refuse(
            bad,
            "expected a JSON body {\"asset\": …, \"amount\": \"decimal\"}".into(),
        );
    };
    let Some(asset) = exchange.catalog.asset_id(&transfer.asset) else {
        return refuse(bad, format!("unknown asset {}", transfer.asset));
    };
    let amount: Amount = match transfer.amount.parse() {
        Ok(amount) => amount,
        Err(error) => return refuse(bad, format!("amount: {error}")),
    };
    match exchange.access.keys.account_exists(account) {
        Ok(true) => {}
        Ok(false) => {
            return refuse(
                axum::http::StatusCode::NOT_FOUND,
                format!("no account {account}"),
            );
        }
        Err(error) => {
            return refuse(
                axum::http::StatusCode::SERVICE_UNAVAILABLE,
                error.to_string(),
            );
        }
    }
    let command = if CREDIT {
        Command::Credit {
            account,
            asset,
            amount,
        }
    } else {
        Command::Debit {
            account,
            asset,
            amount,
        }
    };
    // A follower's transfer is sequenced by the primary; its refusal comes
    // back in the Binance face's shape and is answered in this API's.
    if exchange.sequencer.is_following() {
        return match exchange.submit(command).await {
            Ok(outcome) => transferred(account, &transfer.asset, &outcome, bad),
            Err(error) if error.code == -2010 => refuse(
                axum::http::StatusCode::CONFLICT,
                "insufficient free balance".into(),
            ),
            Err(error) => refuse(error.status, error.msg),
        };
    }
    let outcome = match exchange.sequencer.submit(command).await {
        Ok(outcome) => outcome,
        Err(error) => {
            return refuse(
                axum::http::StatusCode::SERVICE_UNAVAILABLE,
                error.to_string(),
            );
        }
    };
    transferred(account, &transfer.asset, &outcome, bad)
}

/// An admin refusal: `{"error": message}`.
fn refuse(status: axum::http::StatusCode, message: String) -> Response {
    (status, Json(serde_json::json!({ "error": message }))).into_response()
}

/// The answer to a transfer the engine applied or refused.
fn transferred(
    account: u64,
    asset: &str,
    outcome: &weiport_exchange::sequencer::Outcome,
    bad: axum::http::StatusCode,
) -> Response {
    match outcome.events.first() {
        Some(Event::Balance { free, locked, .. }) => Json(serde_json::json!({
            "account": account,
            "asset": asset,
            "free": free.to_string(),
            "locked": locked.to_string(),
        }))
        .into_response(),
        Some(Event::Rejected(Reject::InsufficientBalance)) => refuse(
            axum::http::StatusCode::CONFLICT,
            "insufficient free balance".into(),
        ),
        other => refuse(bad, format!("refused: {other:?}")),
    }
}

/// Admin routes that credit and debit accounts (merged into the admin
/// listener, behind its bearer token).
pub fn admin_router(exchange: Arc<Exchange>) -> Router {
    Router::new()
        .route("/admin/accounts/{id}/credit", post(transfer::<true>))
        .route("/admin/accounts/{id}/debit", post(transfer::<false>))
        .route("/admin/wallet", get(wallet_report))
        .with_state(exchange)
}

/// `GET /admin/wallet`: the chain coin's books side by side with the chain:
/// every account's holding (fees included), pending withdrawals, deposits
/// credited and withdrawals completed, and what the hot wallet and deposit
/// addresses hold, on every network of the coin together and each apart.
/// Accounts + pending = credited − completed (+ admin credits − debits)
/// always; the chains together should hold at least the accounts' and
/// pending amounts.
pub(crate) async fn wallet_report(State(exchange): State<Arc<Exchange>>) -> Response {
    let Some(wallet) = exchange.wallets.first().map(|w| w.as_ref()) else {
        return (
            axum::http::StatusCode::NOT_FOUND,
            Json(json!({ "error": "no wallet" })),
        )
            .into_response();
    };
    let asset = wallet.coin().asset;
    let (accounts, pending, deposited, withdrawn) = {
        let view = exchange.sequencer.view();
        let accounts = view
            .accounts
            .values()
            .filter_map(|a| a.balances.get(&asset))
            .fold(0u128, |sum, (free, locked)| {
                sum + u128::from(free.units()) + u128::from(locked.units())
            });
        let of_asset = |stage| {
            view.chain
                .withdrawals
                .values()
                .filter(move |w| w.asset == asset && w.stage == stage)
        };
        let pending = of_asset(WithdrawalStage::Requested).fold(0u128, |sum, w| {
            sum + u128::from(w.amount.units()) + u128::from(w.fee.units())
        });
        // A completed withdrawal's amount left the ledger; its fee stayed, with the fee account.
        let withdrawn = of_asset(WithdrawalStage::Completed)
            .fold(0u128, |sum, w| sum + u128::from(w.amount.units()));
        let deposited = view
            .chain
            .deposited
            .get(&asset)
            .copied()
            .unwrap_or_default();
        (accounts, pending, u128::from(deposited.units()), withdrawn)
    };
    let units = |n: u128| Amount::from_units(u64::try_from(n).unwrap_or(u64::MAX)).to_string();
    let holdings: Result<Vec<_>, _> = crate::capital::networks_of(&exchange, asset)
        .map(|network| network.holdings().map(|wei| (network, wei)))
        .collect();
    match holdings {
        Ok(holdings) => {
            let on_chain = holdings
                .iter()
                .fold(alloy_primitives::U256::ZERO, |sum, (_, wei)| {
                    sum.saturating_add(*wei)
                });
            let networks: Vec<_> = holdings
                .iter()
                .map(|(network, wei)| {
                    json!({
                        "network": network.coin().network,
                        "hot_wallet": network.hot_address().to_checksum(None),
                        "indexed_head": network.indexed_head(),
                        "on_chain_wei": wei.to_string(),
                    })
                })
                .collect();
            Json(json!({
                "coin": wallet.coin().coin,
                "accounts": units(accounts),
                "withdrawals_pending": units(pending),
                "deposits_credited": units(deposited),
                "withdrawals_completed": units(withdrawn),
                "hot_wallet": wallet.hot_address().to_checksum(None),
                "on_chain_wei": on_chain.to_string(),
                "networks": networks,
            }))
            .into_response()
        }
        Err(error) => {
            tracing::error!(%error, "reading the wallet's holdings failed");
            (
                axum::http::StatusCode::SERVICE_UNAVAILABLE,
                Json(json!({ "error": "storage" })),
            )
                .into_response()
        }
    }
}
