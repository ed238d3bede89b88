//! Funds crossing the chain boundary: deposits credited once, and
//! withdrawals held from the moment they are asked for until the chain has
//! them (or refunded when it does not).
//!
//! What a withdrawal holds is out of every account yet still part of the
//! supply, so per asset: accounts + fees + withdrawals pending = deposits and
//! credits − debits − withdrawals completed.

use rustc_hash::FxHashMap;

use super::*;

/// What became of a withdrawal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum WithdrawalStage {
    /// Taken from the account and held until the chain has it.
    Requested,
    /// Asked again under a client id already used: nothing taken.
    Repeated,
    /// Final on chain: the amount left the ledger, the fee went to the fee account.
    Completed,
    /// Did not reach the chain: all of it went back to the account.
    Failed,
}

/// A signed transaction paying a withdrawal: the chain's bytes and what the
/// wallet needs to follow or replace it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedTx {
    /// Its hash.
    pub hash: [u8; 32],
    /// Max fee per gas, Wei.
    pub max_fee: u128,
    /// Priority fee per gas, Wei.
    pub tip: u128,
    /// The signed transaction as sent.
    pub raw: Box<[u8]>,
}

/// One withdrawal as the engine keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Withdrawal {
    pub(crate) account: AccountId,
    pub(crate) asset: AssetId,
    pub(crate) amount: Amount,
    pub(crate) fee: Amount,
    pub(crate) destination: [u8; 20],
    pub(crate) requested_ms: u64,
    pub(crate) pending: bool,
    pub(crate) network: u64,
}

impl Withdrawal {
    fn event(&self, withdrawal_id: u64, stage: WithdrawalStage) -> Event {
        Event::Withdrawal {
            withdrawal_id,
            account: self.account,
            asset: self.asset,
            amount: self.amount,
            fee: self.fee,
            stage,
            destination: self.destination,
            requested_ms: self.requested_ms,
            network: self.network,
        }
    }
}

/// Deposits credited and withdrawals, pending and ended.
#[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Withdrawals {
    /// Per network: the last deposit id credited (none: 0).
    pub(crate) last_deposit_ids: std::collections::BTreeMap<u64, u64>,
    pub(crate) next_withdrawal_id: u64,
    pub(crate) all: FxHashMap<u64, Withdrawal>,
    #[serde(with = "super::image::pairs")]
    pub(crate) by_client_id: FxHashMap<(AccountId, Box<str>), u64>,
    /// Per asset: what pending withdrawals hold (amount + fee).
    pub(crate) held: FxHashMap<AssetId, Amount>,
    /// The nonce of each pending withdrawal signed so far.
    pub(crate) nonces: FxHashMap<u64, u64>,
    /// Each account's deposit address, once assigned.
    pub(crate) deposit_addresses: FxHashMap<AccountId, [u8; 20]>,
}

impl Engine {
    /// The id of the last deposit credited on `network` (0: none yet).
    pub fn last_deposit_id(&self, network: u64) -> u64 {
        self.chain
            .last_deposit_ids
            .get(&network)
            .copied()
            .unwrap_or(0)
    }

    /// What pending withdrawals of `asset` hold (amounts and fees).
    pub fn withdrawals_held(&self, asset: AssetId) -> Amount {
        self.chain.held.get(&asset).copied().unwrap_or(Amount::ZERO)
    }

    pub(super) fn deposit(
        &mut self,
        account: AccountId,
        asset: AssetId,
        amount: Amount,
        (deposit_id, network): (u64, u64),
        events: &mut Vec<Event>,
    ) -> Result<(), Reject> {
        if deposit_id <= self.last_deposit_id(network) {
            return Err(Reject::DepositCredited);
        }
        events.push(Event::Deposited {
            account,
            asset,
            amount,
            deposit_id,
            network,
        });
        self.ledger.adjust(account, asset, amount, true, events)?;
        self.chain.last_deposit_ids.insert(network, deposit_id);
        Ok(())
    }

    pub(super) fn withdraw(
        &mut self,
        account: AccountId,
        asset: AssetId,
        (amount, fee): (Amount, Amount),
        client_id: Option<Box<str>>,
        (destination, requested_ms, network): ([u8; 20], u64, u64),
        events: &mut Vec<Event>,
    ) -> Result<(), Reject> {
        if usize::from(asset.0) >= self.ledger.assets {
            return Err(Reject::UnknownAsset);
        }
        if let Some(client_id) = &client_id
            && let Some(&withdrawal_id) = self.chain.by_client_id.get(&(account, client_id.clone()))
        {
            let earlier = self.chain.all[&withdrawal_id];
            events.push(earlier.event(withdrawal_id, WithdrawalStage::Repeated));
            return Ok(());
        }
        let total = amount.checked_add(fee).ok_or(Reject::Overflow)?;
        let free = self.ledger.get(account, asset).free;
        let free = free.checked_sub(total).ok_or(Reject::InsufficientBalance)?;
        let held = self.withdrawals_held(asset);
        let held = held.checked_add(total).ok_or(Reject::Overflow)?;
        self.chain.next_withdrawal_id += 1;
        let withdrawal_id = self.chain.next_withdrawal_id;
        let withdrawal = Withdrawal {
            account,
            asset,
            amount,
            fee,
            destination,
            requested_ms,
            pending: true,
            network,
        };
        self.chain.held.insert(asset, held);
        self.chain.all.insert(withdrawal_id, withdrawal);
        if let Some(client_id) = client_id {
            self.chain
                .by_client_id
                .insert((account, client_id), withdrawal_id);
        }
        events.push(withdrawal.event(withdrawal_id, WithdrawalStage::Requested));
        let slot = self.ledger.slot(account);
        self.ledger.at(slot, asset).free = free;
        self.ledger.emit(slot, asset, events);
        Ok(())
    }

    pub(super) fn settle_withdrawal(
        &mut self,
        withdrawal_id: u64,
        completed: bool,
        events: &mut Vec<Event>,
    ) -> Result<(), Reject> {
        let Some(w) = self.chain.all.get(&withdrawal_id).copied() else {
            return Err(Reject::UnknownWithdrawal);
        };
        if !w.pending {
            return Err(Reject::UnknownWithdrawal);
        }
        // Requested checked these sums; they cannot fail here.
        let total = sure(w.amount.checked_add(w.fee));
        let held = sure(self.withdrawals_held(w.asset).checked_sub(total));
        let index = usize::from(w.asset.0);
        events.push(w.event(
            withdrawal_id,
            if completed {
                WithdrawalStage::Completed
            } else {
                WithdrawalStage::Failed
            },
        ));
        if completed {
            let fee_slot = self.ledger.fee_slot;
            let fees = self.ledger.at(fee_slot, w.asset).free;
            self.ledger.at(fee_slot, w.asset).free =
                fees.checked_add(w.fee).ok_or(Reject::Overflow)?;
            self.ledger.supply[index] = sure(self.ledger.supply[index].checked_sub(w.amount));
            self.ledger.emit(fee_slot, w.asset, events);
        } else {
            let slot = self.ledger.slot(w.account);
            let free = self.ledger.at(slot, w.asset).free;
            self.ledger.at(slot, w.asset).free = free.checked_add(total).ok_or(Reject::Overflow)?;
            self.ledger.emit(slot, w.asset, events);
        }
        self.chain.held.insert(w.asset, held);
        if let Some(w) = self.chain.all.get_mut(&withdrawal_id) {
            w.pending = false;
        }
        self.chain.nonces.remove(&withdrawal_id);
        Ok(())
    }

    pub(super) fn withdrawal_signed(
        &mut self,
        withdrawal_id: u64,
        nonce: u64,
        events: &mut Vec<Event>,
    ) -> Result<(), Reject> {
        if !self
            .chain
            .all
            .get(&withdrawal_id)
            .is_some_and(|w| w.pending)
        {
            return Err(Reject::UnknownWithdrawal);
        }
        // Two nonces for one withdrawal could both be mined: paid twice.
        let signed = *self.chain.nonces.entry(withdrawal_id).or_insert(nonce);
        if signed != nonce {
            return Err(Reject::UnknownWithdrawal);
        }
        events.push(Event::WithdrawalSigned {
            withdrawal_id,
            nonce,
        });
        Ok(())
    }

    pub(super) fn assign_deposit_address(
        &mut self,
        account: AccountId,
        address: [u8; 20],
        events: &mut Vec<Event>,
    ) -> Result<(), Reject> {
        if self.chain.deposit_addresses.contains_key(&account) {
            return Err(Reject::DepositAddressAssigned);
        }
        self.chain.deposit_addresses.insert(account, address);
        events.push(Event::DepositAddress { account, address });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::tests::{ETH, FEES, two_markets};

    fn engine() -> (Engine, AssetId) {
        (Engine::new(two_markets(), FEES), ETH)
    }

    fn units(n: u64) -> Amount {
        Amount::from_units(n)
    }

    #[test]
    fn deposits_are_credited_once_in_id_order_on_each_network() {
        let (mut engine, eth) = engine();
        let deposit = |id, network| Command::Deposit {
            account: 1,
            asset: eth,
            amount: units(500),
            deposit_id: id,
            network,
        };
        let events = engine.apply(deposit(7, 0));
        assert!(matches!(events[0], Event::Deposited { deposit_id: 7, .. }));
        for again in [7, 3] {
            assert_eq!(
                engine.apply(deposit(again, 0)),
                vec![Event::Rejected(Reject::DepositCredited)]
            );
        }
        engine.apply(deposit(8, 0));
        // Another chain's ids are its own: lower ones are new there.
        engine.apply(deposit(3, 42161));
        assert_eq!(
            engine.apply(deposit(3, 42161)),
            vec![Event::Rejected(Reject::DepositCredited)]
        );
        assert_eq!(engine.balance(1, eth), (units(1500), Amount::ZERO));
        assert_eq!(engine.last_deposit_id(0), 8);
        assert_eq!(engine.last_deposit_id(42161), 3);
        assert_eq!(engine.last_deposit_id(10), 0);
    }

    #[test]
    fn a_withdrawal_is_held_then_completed_or_refunded() {
        let (mut engine, eth) = engine();
        engine.apply(Command::Credit {
            account: 1,
            asset: eth,
            amount: units(1000),
        });
        let withdraw = |amount, client_id: Option<&str>| Command::Withdraw {
            account: 1,
            asset: eth,
            amount: units(amount),
            fee: units(10),
            client_id: client_id.map(Into::into),
            destination: [7; 20],
            requested_ms: 1,
            network: 0,
        };
        assert_eq!(
            engine.apply(withdraw(991, None)),
            vec![Event::Rejected(Reject::InsufficientBalance)]
        );
        let first = engine.apply(withdraw(400, Some("a")));
        assert!(matches!(
            first[0],
            Event::Withdrawal {
                withdrawal_id: 1,
                stage: WithdrawalStage::Requested,
                ..
            }
        ));
        assert_eq!(engine.balance(1, eth).0, units(590));
        assert_eq!(engine.withdrawals_held(eth), units(410));
        // The same client id again takes nothing more.
        let repeated = engine.apply(withdraw(400, Some("a")));
        assert_eq!(repeated.len(), 1);
        assert!(matches!(
            repeated[0],
            Event::Withdrawal {
                withdrawal_id: 1,
                stage: WithdrawalStage::Repeated,
                ..
            }
        ));
        assert_eq!(engine.balance(1, eth).0, units(590));
        engine.apply(withdraw(100, Some("b")));
        assert_eq!(engine.balance(1, eth).0, units(480));

        engine.apply(Command::SettleWithdrawal {
            withdrawal_id: 1,
            completed: true,
        });
        assert_eq!(engine.balance(FEES, eth).0, units(10));
        engine.apply(Command::SettleWithdrawal {
            withdrawal_id: 2,
            completed: false,
        });
        assert_eq!(engine.balance(1, eth).0, units(590));
        assert_eq!(engine.withdrawals_held(eth), Amount::ZERO);
        for id in [1, 2, 3] {
            assert_eq!(
                engine.apply(Command::SettleWithdrawal {
                    withdrawal_id: id,
                    completed: true,
                }),
                vec![Event::Rejected(Reject::UnknownWithdrawal)]
            );
        }
        // 1000 credited, 400 left on chain: 590 + 10 in fees remain.
        assert!(
            engine
                .snapshot()
                .contains(&"supply ETH 0.00000600".to_owned())
        );
    }

    #[test]
    fn a_withdrawal_is_signed_with_one_nonce_and_an_address_assigned_once() {
        let (mut engine, eth) = engine();
        engine.apply(Command::Credit {
            account: 1,
            asset: eth,
            amount: units(1000),
        });
        engine.apply(Command::Withdraw {
            account: 1,
            asset: eth,
            amount: units(100),
            fee: units(10),
            client_id: None,
            destination: [7; 20],
            requested_ms: 1,
            network: 0,
        });
        let signed = |withdrawal_id, nonce| Command::WithdrawalSigned {
            withdrawal_id,
            nonce,
            tx: SignedTx {
                hash: [nonce as u8; 32],
                max_fee: 2,
                tip: 1,
                raw: vec![1, 2, 3].into(),
            },
        };
        let first = engine.apply(signed(1, 5));
        assert_eq!(
            first,
            vec![Event::WithdrawalSigned {
                withdrawal_id: 1,
                nonce: 5
            }]
        );
        // A replacement shares the nonce; another nonce could pay twice.
        assert_eq!(engine.apply(signed(1, 5)).len(), 1);
        let refused = vec![Event::Rejected(Reject::UnknownWithdrawal)];
        assert_eq!(engine.apply(signed(1, 6)), refused);
        assert_eq!(engine.apply(signed(2, 6)), refused);
        engine.apply(Command::SettleWithdrawal {
            withdrawal_id: 1,
            completed: true,
        });
        assert_eq!(engine.apply(signed(1, 5)), refused);

        let assign = |address| Command::AssignDepositAddress {
            account: 1,
            address,
        };
        assert_eq!(
            engine.apply(assign([9; 20])),
            vec![Event::DepositAddress {
                account: 1,
                address: [9; 20]
            }]
        );
        for again in [[9; 20], [8; 20]] {
            assert_eq!(
                engine.apply(assign(again)),
                vec![Event::Rejected(Reject::DepositAddressAssigned)]
            );
        }
    }
}
