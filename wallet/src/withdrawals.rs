//! Withdrawals: each one the engine holds gets one hot wallet nonce and a
//! signed transfer, stored before it is sent; it is followed until mined
//! `confirmations` deep (replaced with higher fees while stuck, sent again
//! if the node forgot it), then settled: completed, or refunded if it
//! failed.

use std::collections::HashMap;
use std::time::Instant;

use alloy_primitives::{Address, U256};
use weiport_exchange::engine::{Command, Event, Reject, SignedTx};
use weiport_exchange::view::WithdrawalView;
use weiport_storage::{SentTx, WithdrawalTxRow};

use crate::chain::{TRANSFER_GAS, Transfer, sign};
use crate::{Ledger, WEI_PER_UNIT, Wallet, WalletError};

/// The withdrawal loop's memory between passes.
pub(crate) struct Sender {
    chain_id: u64,
    /// When each withdrawal's latest transaction was sent by this process.
    sent_at: HashMap<u64, Instant>,
    /// The nonce after the last one this wallet signed, once read from storage.
    signed_through: Option<u64>,
}

/// A replacement must pay at least 10 % more (geth's rule); 12.5 % leaves room.
fn bumped(old: u128, now: u128) -> u128 {
    now.max(old.saturating_add(old / 8).saturating_add(1))
}

/// Withdrawals asked for and not yet final (gauge), for the operator's alerts.
pub(crate) const PROCESSING: &str = "weiport_wallet_withdrawals_processing";
/// Age of the oldest of them, in seconds (0: none).
pub(crate) const OLDEST_SECONDS: &str = "weiport_wallet_oldest_withdrawal_seconds";

impl Sender {
    pub(crate) fn new(chain_id: u64) -> Self {
        Self {
            chain_id,
            sent_at: HashMap::new(),
            signed_through: None,
        }
    }

    pub(crate) async fn pass(
        &mut self,
        wallet: &Wallet,
        ledger: &dyn Ledger,
    ) -> Result<(), WalletError> {
        let pending = ledger.pending_withdrawals(wallet.config.ledger_network);
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let oldest_ms = pending.iter().map(|(_, w)| w.requested_ms).min();
        let network = wallet.config.network.clone();
        metrics::gauge!(PROCESSING, "network" => network.clone()).set(pending.len() as f64);
        metrics::gauge!(OLDEST_SECONDS, "network" => network)
            .set(oldest_ms.map_or(0.0, |t| now_ms.saturating_sub(t) as f64 / 1000.0));
        for (id, withdrawal) in pending {
            match wallet.store.withdrawal_tx(id)? {
                None => self.first_send(wallet, ledger, id, &withdrawal).await?,
                Some(row) if row.refused.is_some() => settle(ledger, id, false).await?,
                Some(row) => self.follow(wallet, ledger, (id, &withdrawal), row).await?,
            }
        }
        Ok(())
    }

    /// The hot wallet's next nonce: past every transaction the node has or
    /// this wallet signed.
    async fn next_nonce(
        &mut self,
        wallet: &Wallet,
        ledger: &dyn Ledger,
    ) -> Result<u64, WalletError> {
        let node = wallet.node.pending_nonce(wallet.hot.address()).await?;
        let signed = match self.signed_through {
            Some(next) => next,
            // Read once: from then on this wallet is the only signer. Only
            // this network's: every chain's hot wallet counts its own nonces.
            None => wallet
                .store
                .withdrawal_txs()?
                .into_iter()
                .filter(|(id, _)| {
                    ledger.withdrawal_network(*id) == Some(wallet.config.ledger_network)
                })
                .filter(|(_, row)| row.refused.is_none() && !row.sent.is_empty())
                .map(|(_, row)| row.nonce + 1)
                .max()
                .unwrap_or(0),
        };
        self.signed_through = Some(signed);
        Ok(node.max(signed))
    }

    /// The transfer paying `withdrawal` with `nonce` and `(max fee, tip)`.
    async fn transfer(
        &self,
        wallet: &Wallet,
        withdrawal: &WithdrawalView,
        nonce: u64,
        (max_fee, tip): (u128, u128),
    ) -> Result<Transfer, WalletError> {
        let to = Address::from(withdrawal.destination);
        // An address with code may do work on receipt: more than a bare transfer's gas.
        let gas_limit = if wallet.node.has_code(to).await? {
            wallet.config.contract_gas_limit
        } else {
            TRANSFER_GAS
        };
        Ok(Transfer {
            chain_id: self.chain_id,
            nonce,
            to,
            value: U256::from(withdrawal.amount.units()) * U256::from(WEI_PER_UNIT),
            gas_limit,
            max_fee,
            tip,
        })
    }

    async fn first_send(
        &mut self,
        wallet: &Wallet,
        ledger: &dyn Ledger,
        id: u64,
        withdrawal: &WithdrawalView,
    ) -> Result<(), WalletError> {
        let nonce = self.next_nonce(wallet, ledger).await?;
        let (max_fee, tip) = wallet.node.fees().await?;
        let transfer = self
            .transfer(wallet, withdrawal, nonce, (max_fee, tip))
            .await?;
        let (to, value) = (transfer.to, transfer.value);
        let (hash, raw) = sign(&wallet.hot, &transfer)?;
        let sent = SentTx {
            hash,
            max_fee,
            tip,
            raw: raw.clone(),
        };
        // Recorded before it is sent: after a crash or a failover it is
        // followed, never signed anew.
        if !record(ledger, id, nonce, &sent).await? {
            return Ok(());
        }
        let mut row = WithdrawalTxRow {
            nonce,
            sent: vec![sent],
            mined: None,
            refused: None,
        };
        tracing::info!(id, %to, %hash, nonce, wei = %value, "sending a withdrawal");
        match wallet.node.send_raw(&raw).await {
            Ok(()) => {
                self.sent_at.insert(id, Instant::now());
                self.signed_through = Some(nonce + 1);
                Ok(())
            }
            Err(WalletError::Node(error)) if !error.is_transient() => {
                tracing::warn!(id, %error, "the node refused a withdrawal; refunding it");
                row.refused = Some(error.to_string());
                wallet.store.put_withdrawal_tx(id, &row)?;
                settle(ledger, id, false).await
            }
            Err(error) => Err(error),
        }
    }

    async fn follow(
        &mut self,
        wallet: &Wallet,
        ledger: &dyn Ledger,
        (id, withdrawal): (u64, &WithdrawalView),
        mut row: WithdrawalTxRow,
    ) -> Result<(), WalletError> {
        let mut mined = None;
        for sent in row.sent.iter().rev() {
            if let Some(receipt) = wallet.node.receipt(sent.hash).await? {
                mined = Some((sent.hash, receipt.block, receipt.success));
                break;
            }
        }
        if mined != row.mined {
            // Newly mined, or mined and then reorganised away.
            row.mined = mined;
            wallet.store.put_withdrawal_tx(id, &row)?;
        }
        if let Some((hash, block, success)) = mined {
            if wallet
                .final_through()
                .is_some_and(|through| block <= through)
            {
                tracing::info!(id, %hash, block, success, "withdrawal final");
                settle(ledger, id, success).await?;
                self.sent_at.remove(&id);
            }
            return Ok(());
        }
        let Some(latest) = row.sent.last().cloned() else {
            return Ok(());
        };
        if !wallet.node.knows(latest.hash).await? {
            // A node restarted without its pool, or another process
            // signed it and stopped before sending: the same bytes again.
            match wallet.node.send_raw(&latest.raw).await {
                Ok(()) => {}
                Err(WalletError::Node(error)) if !error.is_transient() => {
                    tracing::warn!(id, %error, "the node refused a withdrawal; refunding it");
                    row.refused = Some(error.to_string());
                    wallet.store.put_withdrawal_tx(id, &row)?;
                    return settle(ledger, id, false).await;
                }
                Err(error) => return Err(error),
            }
            self.sent_at.insert(id, Instant::now());
            return Ok(());
        }
        let sent_at = *self.sent_at.entry(id).or_insert_with(Instant::now);
        if sent_at.elapsed() < wallet.config.replace_after {
            return Ok(());
        }
        let (max_fee, tip) = wallet.node.fees().await?;
        let fees = (bumped(latest.max_fee, max_fee), bumped(latest.tip, tip));
        let transfer = self.transfer(wallet, withdrawal, row.nonce, fees).await?;
        let (max_fee, tip) = fees;
        let (hash, raw) = sign(&wallet.hot, &transfer)?;
        let replacement = SentTx {
            hash,
            max_fee,
            tip,
            raw: raw.clone(),
        };
        if !record(ledger, id, row.nonce, &replacement).await? {
            return Ok(());
        }
        tracing::info!(id, %hash, max_fee, tip, "replacing a stuck withdrawal with higher fees");
        if let Err(error) = wallet.node.send_raw(&raw).await {
            tracing::warn!(id, %error, "replacement not taken; the earlier transaction stands");
        }
        self.sent_at.insert(id, Instant::now());
        Ok(())
    }
}

/// Records `sent` as a transaction of withdrawal `id` in the exchange's
/// log (every process's store has it once this returns); `false` when the
/// withdrawal has ended meanwhile (nothing to send).
async fn record(
    ledger: &dyn Ledger,
    id: u64,
    nonce: u64,
    sent: &SentTx,
) -> Result<bool, WalletError> {
    let outcome = ledger
        .submit(Command::WithdrawalSigned {
            withdrawal_id: id,
            nonce,
            tx: SignedTx {
                hash: sent.hash.0,
                max_fee: sent.max_fee,
                tip: sent.tip,
                raw: sent.raw.clone().into_boxed_slice(),
            },
        })
        .await?;
    match outcome.events.first() {
        Some(Event::WithdrawalSigned { .. }) => Ok(true),
        Some(Event::Rejected(Reject::UnknownWithdrawal)) => Ok(false),
        _ => Err(WalletError::Malformed(
            "recording a withdrawal's transaction",
        )),
    }
}

/// Ends withdrawal `id` in the engine; one already ended is left as it is.
async fn settle(ledger: &dyn Ledger, id: u64, completed: bool) -> Result<(), WalletError> {
    let outcome = ledger
        .submit(Command::SettleWithdrawal {
            withdrawal_id: id,
            completed,
        })
        .await?;
    match outcome.events.first() {
        Some(Event::Rejected(Reject::UnknownWithdrawal)) | Some(Event::Withdrawal { .. }) => Ok(()),
        _ => Err(WalletError::Malformed("settling a withdrawal")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replacement_pays_at_least_an_eighth_more() {
        assert_eq!(bumped(800, 0), 901);
        assert_eq!(bumped(800, 2000), 2000);
        assert_eq!(bumped(0, 0), 1);
    }
}
