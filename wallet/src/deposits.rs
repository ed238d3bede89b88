//! Deposits: what the index says each deposit address received, block by
//! block, credited once the block is final.
//!
//! A deposit address's balance moves only by what it receives and by what
//! it spends (its sweeps, value and gas, which its own transactions in that
//! block tell), so what a block brought it is `after − before + spent`. The
//! deposits of a block get ids `block << 16 | n` (n from 1, addresses in byte
//! order): the same on every scan of the same final block, so after a crash
//! the scan repeats itself and the engine refuses every id it has credited.

use std::collections::{BTreeMap, HashMap, HashSet};

use alloy_primitives::{Address, B256, U256};
use weiport_exchange::engine::{Command, Event, Reject};
use weiport_storage::DepositRow;

use crate::chain::Mined;
use crate::{Ledger, Wallet, WalletError, wei_to_units};

type Transfers = Vec<(B256, Address, Option<Address>, U256)>;

/// The deposit scan's memory between passes: node answers that never change.
#[derive(Default)]
pub(crate) struct Scanner {
    blocks: HashMap<B256, Transfers>,
    receipts: HashMap<B256, Mined>,
    /// Deposit rows known to be stored.
    stored: HashSet<u64>,
    /// Deposit addresses scanned whole since this process started: one
    /// learnt since (its assignment applied after blocks it received in
    /// were scanned) is scanned from the start once.
    known: HashSet<Address>,
}

/// Bits of a deposit id below the block number.
const INDEX_BITS: u32 = 16;

impl Scanner {
    /// One scan: credits every final deposit not credited yet (when
    /// `crediting`; else the primary does, through the exchange's log), and
    /// keeps the ones not final yet for the history.
    pub(crate) async fn pass(
        &mut self,
        wallet: &Wallet,
        ledger: &dyn Ledger,
        crediting: bool,
    ) -> Result<(), WalletError> {
        let store = &wallet.store;
        let Some(head) = store.indexed_head() else {
            return Ok(());
        };
        let final_through = wallet.final_through();
        let last = ledger.last_deposit_id(wallet.config.ledger_network);
        // The block of the last deposit credited is scanned again: its later
        // deposits may not be, and its row may not be stored yet. A process
        // that does not credit follows the primary's credits through the
        // log, which may run ahead of its own rows (a new process, one that
        // was down): it scans from the last block all of whose rows it has.
        let recorded = store.deposits_recorded_through()?.unwrap_or(0);
        let after = (last >> INDEX_BITS).saturating_sub(1).min(recorded);
        let addresses = store.deposit_addresses()?;
        let mut by_block: BTreeMap<u64, Vec<(Address, u64, U256)>> = BTreeMap::new();
        for (account, address) in &addresses {
            let (account, address) = (*account, *address);
            let from = if self.known.contains(&address) {
                after
            } else {
                0
            };
            for (block, after_block) in store.balance_changes(&address, from, head)? {
                by_block
                    .entry(block)
                    .or_default()
                    .push((address, account, after_block));
            }
        }
        if self.blocks.len() > 4096 {
            self.blocks.clear();
            self.receipts.clear();
        }
        let mut pending = Vec::new();
        // The first final block with a row not stored (a credit not yet
        // through the log): rows are recorded only up to before it.
        let mut unrecorded: Option<u64> = None;
        for (block, mut changes) in by_block {
            changes.sort_by_key(|(address, ..)| *address);
            let Some(record) = store.block(block)? else {
                unrecorded.get_or_insert(block);
                continue;
            };
            let mut index = 0u64;
            for (address, account, after_block) in changes {
                let before = match block.checked_sub(1) {
                    Some(parent) => store.balance_at(&address, parent)?.unwrap_or_default(),
                    None => U256::ZERO,
                };
                let (spent, tx_hash) = self
                    .spent_and_sender(wallet, block, record.hash, address)
                    .await?;
                let received = after_block.saturating_add(spent).saturating_sub(before);
                if received.is_zero() {
                    continue;
                }
                let (amount, rest) = wei_to_units(received);
                if amount == 0 {
                    tracing::info!(%address, block, wei = %received, "deposit below one unit left on chain, not credited");
                    continue;
                }
                index += 1;
                let row = DepositRow {
                    deposit_id: (block << INDEX_BITS) | index,
                    account,
                    address,
                    block,
                    tx_hash,
                    wei: received,
                    amount,
                    time_ms: weiport_exchange::now_ms(),
                };
                if final_through.is_none_or(|through| block > through) {
                    pending.push(row);
                    continue;
                }
                if row.deposit_id > last {
                    if !crediting {
                        // Final, not credited yet: shown pending until the
                        // primary's credit reaches this process.
                        unrecorded.get_or_insert(block);
                        pending.push(row);
                        continue;
                    }
                    self.credit(wallet, ledger, &row, rest).await?;
                }
                if self.stored.insert(row.deposit_id) {
                    store.put_deposit(&row)?;
                }
            }
        }
        wallet.set_pending(pending);
        if let Some(through) = final_through {
            let through = unrecorded.map_or(through, |block| through.min(block.saturating_sub(1)));
            if through > recorded {
                store.put_deposits_recorded_through(through)?;
            }
        }
        self.known
            .extend(addresses.into_iter().map(|(_, address)| address));
        Ok(())
    }

    async fn credit(
        &mut self,
        wallet: &Wallet,
        ledger: &dyn Ledger,
        row: &DepositRow,
        rest: U256,
    ) -> Result<(), WalletError> {
        let outcome = ledger
            .submit(Command::Deposit {
                account: row.account,
                asset: wallet.config.asset,
                amount: weiport_exchange::Amount::from_units(row.amount),
                deposit_id: row.deposit_id,
                network: wallet.config.ledger_network,
            })
            .await?;
        match outcome.events.first() {
            Some(Event::Rejected(Reject::DepositCredited)) | Some(Event::Deposited { .. }) => {}
            Some(Event::Rejected(reject)) => {
                // An account's balance that cannot grow (overflow): nothing
                // later may pass it, so the scan stops here until it can.
                tracing::error!(
                    ?reject,
                    deposit = row.deposit_id,
                    "deposit refused by the engine"
                );
                return Err(WalletError::Malformed("deposit refused by the engine"));
            }
            _ => {}
        }
        tracing::info!(
            network = %wallet.config.network,
            account = row.account,
            address = %row.address,
            block = row.block,
            wei = %row.wei,
            left_on_chain_wei = %rest,
            "deposit credited"
        );
        Ok(())
    }

    /// What `address`'s own transactions in block `number` cost it (value
    /// sent and gas), and the first transaction that sent to it directly.
    async fn spent_and_sender(
        &mut self,
        wallet: &Wallet,
        number: u64,
        hash: B256,
        address: Address,
    ) -> Result<(U256, Option<B256>), WalletError> {
        let transfers = match self.blocks.get(&hash) {
            Some(transfers) => transfers.clone(),
            None => {
                let Some((found, transfers)) = wallet.node.block_transfers(number).await? else {
                    return Err(WalletError::Malformed("indexed block missing on the node"));
                };
                if found != hash {
                    // The node moved on to another branch: the index follows
                    // it soon, and this block is scanned again then.
                    return Err(WalletError::Malformed("indexed block replaced on the node"));
                }
                self.blocks.insert(hash, transfers.clone());
                transfers
            }
        };
        let mut spent = U256::ZERO;
        let mut sender = None;
        for (tx, from, to, value) in transfers {
            if to == Some(address) && sender.is_none() {
                sender = Some(tx);
            }
            if from != address {
                continue;
            }
            let mined = match self.receipts.get(&tx) {
                Some(mined) => *mined,
                None => {
                    let mined = wallet
                        .node
                        .receipt(tx)
                        .await?
                        .ok_or(WalletError::Malformed("receipt of a mined transaction"))?;
                    self.receipts.insert(tx, mined);
                    mined
                }
            };
            spent = spent.saturating_add(mined.gas_cost);
            if mined.success {
                spent = spent.saturating_add(value);
            }
        }
        Ok((spent, sender))
    }
}
