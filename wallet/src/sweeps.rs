//! Sweeps: a deposit address whose credited funds reach the threshold sends
//! them all to the hot wallet, paying the gas out of them.
//!
//! Only funds already final are swept (the address's last change is final),
//! so a sweep never races a deposit still being counted; the deposit scan
//! tells a sweep from a deposit by the address's own transactions.

use std::collections::HashMap;

use alloy_primitives::{Address, B256, U256};

use crate::chain::{TRANSFER_GAS, Transfer, sign};
use crate::{Wallet, WalletError};

/// Sweeps sent and not yet final.
#[derive(Default)]
pub(crate) struct Sweeper {
    /// By deposit address: the transaction, and the block whose balance it sweeps.
    in_flight: HashMap<Address, (B256, u64)>,
}

impl Sweeper {
    pub(crate) async fn pass(&mut self, wallet: &Wallet, chain_id: u64) -> Result<(), WalletError> {
        let Some(final_through) = wallet.final_through() else {
            return Ok(());
        };
        for (account, address) in wallet.store.deposit_addresses()? {
            if let Some((hash, covers)) = self.in_flight.get(&address).copied() {
                match wallet.node.receipt(hash).await? {
                    Some(mined) if mined.block <= final_through => {
                        if mined.success {
                            wallet.store.put_swept_through(&address, covers)?;
                            tracing::info!(%address, %hash, block = mined.block, "deposit address swept");
                        }
                        self.in_flight.remove(&address);
                    }
                    Some(_) => {}
                    None => {
                        if !wallet.node.knows(hash).await? {
                            // Dropped by the node: swept again next pass.
                            self.in_flight.remove(&address);
                        }
                    }
                }
                continue;
            }
            let Some(latest) = wallet.store.balance(&address)? else {
                continue;
            };
            if latest.block > final_through || latest.wei < wallet.config.sweep_threshold {
                continue;
            }
            // One sent before a restart and not mined yet: wait for it.
            let nonce = wallet.node.pending_nonce(address).await?;
            if nonce > wallet.node.mined_nonce(address).await? {
                continue;
            }
            let (max_fee, tip) = wallet.node.fees().await?;
            let gas = U256::from(TRANSFER_GAS) * U256::from(max_fee);
            if latest.wei <= gas {
                continue;
            }
            let transfer = Transfer {
                chain_id,
                nonce,
                to: wallet.hot.address(),
                value: latest.wei - gas,
                gas_limit: TRANSFER_GAS,
                max_fee,
                tip,
            };
            let (hash, raw) = sign(&wallet.keys.signer(account)?, &transfer)?;
            wallet.node.send_raw(&raw).await?;
            tracing::info!(%address, %hash, wei = %transfer.value, "sweeping a deposit address");
            self.in_flight.insert(address, (hash, latest.block));
        }
        Ok(())
    }
}
