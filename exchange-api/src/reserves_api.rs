//! Proof of reserves as the Binance face publishes it: the kept snapshots,
//! each account's proof of inclusion, and the loop that takes them.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::response::IntoResponse;
use weiport_reserves::{ReservesError, Snapshot};

use crate::error::{Answer, BinanceError, Refusal};
use crate::exchange::Exchange;
use crate::extract::{Query, Signed};
use crate::reserves::{ReserveKeeper, Schedule, SnapshotError, record};

fn keeper(exchange: &Exchange) -> Result<&ReserveKeeper, BinanceError> {
    exchange
        .reserves()
        .ok_or_else(|| Refusal::Unsupported.into())
}

fn published(snapshot: &Snapshot) -> Answer {
    let document = snapshot.document().map_err(|error| {
        tracing::error!(%error, "publishing a reserves snapshot failed");
        BinanceError::unavailable()
    })?;
    Ok(Json(document).into_response())
}

/// The snapshot asked for: `sequence`, or the latest.
fn chosen(
    exchange: &Exchange,
    params: &crate::params::Params,
) -> Result<Arc<Snapshot>, BinanceError> {
    let keeper = keeper(exchange)?;
    let snapshot = match params.get("sequence") {
        Some(text) => {
            let sequence: u64 = text
                .parse()
                .map_err(|_| BinanceError::from(Refusal::InvalidValue("sequence")))?;
            keeper.at(sequence)
        }
        None => keeper.latest(),
    };
    snapshot.ok_or_else(|| Refusal::NoSuchSnapshot.into())
}

/// `GET /sapi/v1/reserves`: a snapshot (`sequence`, or the latest): its
/// root and totals, each chain's block and signed addresses, the coverage.
pub(crate) async fn snapshot(
    State(exchange): State<Arc<Exchange>>,
    Query(params): Query,
) -> Answer {
    let snapshot = chosen(&exchange, &params)?;
    published(&snapshot)
}

/// `GET /sapi/v1/reserves/snapshots`: the kept snapshots, oldest first
/// (sequence, time, root, coverage).
pub(crate) async fn snapshots(State(exchange): State<Arc<Exchange>>) -> Answer {
    let keeper = keeper(&exchange)?;
    let mut list = Vec::new();
    for snapshot in keeper.all() {
        let document = snapshot.document().map_err(|error| {
            tracing::error!(%error, "publishing a reserves snapshot failed");
            BinanceError::unavailable()
        })?;
        list.push(serde_json::json!({
            "sequence": document.sequence,
            "takenAt": document.taken_at,
            "root": document.root,
            "accounts": document.accounts,
            "coverage": document.coverage,
        }));
    }
    Ok(Json(list).into_response())
}

/// `GET /sapi/v1/reserves/proof` (USER_DATA): the account's leaf, salt and
/// path to the root of a snapshot (`sequence`, or the latest), with the
/// snapshot: what `tools/verify_reserves.py` checks. An account owed
/// nothing is in no leaf: its `proof` is null.
pub(crate) async fn proof(
    State(exchange): State<Arc<Exchange>>,
    Signed {
        account, params, ..
    }: Signed,
) -> Answer {
    let snapshot = chosen(&exchange, &params)?;
    let failed = |error: ReservesError| {
        tracing::error!(%error, "publishing a reserves proof failed");
        BinanceError::unavailable()
    };
    // An account owed nothing has no leaf: the snapshot, and no proof.
    let document = match snapshot.proof_document(account).map_err(failed)? {
        Some(document) => serde_json::to_value(document),
        None => serde_json::to_value(serde_json::json!({
            "snapshot": snapshot.document().map_err(failed)?,
            "proof": null,
        })),
    }
    .map_err(|_| BinanceError::unavailable())?;
    Ok(Json(document).into_response())
}

/// Takes snapshots on `schedule` while the exchange lives (the first as soon
/// as every chain has a final block); the tree is built off the runtime.
pub async fn take_snapshots(exchange: std::sync::Weak<Exchange>, schedule: Schedule) {
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // When the last snapshot was taken, and the first chain's block in it.
    let mut last: Option<(std::time::Instant, Option<u64>)> = None;
    let mut waiting = 0u32;
    loop {
        tick.tick().await;
        let Some(strong) = exchange.upgrade() else {
            return;
        };
        let block = strong.wallets.first().and_then(|w| w.final_block());
        let due = match last {
            None => true,
            Some((at, last_block)) => {
                let on_time = schedule.every.is_some_and(|every| at.elapsed() >= every);
                let on_blocks = schedule.every_blocks > 0
                    && match (block, last_block) {
                        (Some(now), Some(then)) => {
                            now >= then.saturating_add(schedule.every_blocks)
                        }
                        // The last one was at genesis, before any block was final.
                        (Some(_), None) => true,
                        (None, _) => false,
                    };
                on_time || on_blocks
            }
        };
        if !due {
            continue;
        }
        let taken = tokio::task::spawn_blocking(move || {
            let Some(keeper) = strong.reserves() else {
                return Ok(None);
            };
            keeper
                .take(
                    &strong.sequencer,
                    &strong.catalog,
                    &strong.wallets,
                    crate::now_ms(),
                )
                .map(Some)
        })
        .await;
        match taken {
            Ok(Ok(Some(snapshot))) => {
                let first_block = snapshot.chains.first().map(|c| c.block).filter(|b| *b > 0);
                last = Some((std::time::Instant::now(), first_block));
                waiting = 0;
                record(&snapshot);
            }
            Ok(Ok(None)) => return,
            // A chain not indexed yet: tried again next second, said once a minute.
            Ok(Err(error @ SnapshotError::NotIndexed(_))) => {
                waiting += 1;
                if waiting.is_multiple_of(60) {
                    tracing::warn!(%error, "proof of reserves: no snapshot yet");
                }
            }
            Ok(Err(error)) => {
                tracing::warn!(%error, "proof of reserves: snapshot not taken");
                last = Some((std::time::Instant::now(), block));
            }
            Err(error) => {
                tracing::error!(%error, "proof of reserves: taking a snapshot failed");
                last = Some((std::time::Instant::now(), block));
            }
        }
    }
}
