//! Every account's balances in one flat table, and the supply each asset must add up to.

use rustc_hash::FxHashMap;

use super::*;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Balance {
    pub(crate) free: Amount,
    pub(crate) locked: Amount,
}

/// Every account's balances: one row of `assets` entries per account slot.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Ledger {
    pub(crate) assets: usize,
    pub(crate) slots: FxHashMap<AccountId, u32>,
    pub(crate) accounts: Vec<AccountId>,
    pub(crate) rows: Vec<Balance>,
    /// Credits minus debits per asset: what the ledger must hold in total.
    pub(crate) supply: Vec<Amount>,
    pub(crate) fee_slot: usize,
}

impl Ledger {
    pub(crate) fn new(assets: usize, fee_account: AccountId) -> Self {
        let mut ledger = Self {
            assets,
            slots: FxHashMap::default(),
            accounts: Vec::new(),
            rows: Vec::new(),
            supply: vec![Amount::ZERO; assets],
            fee_slot: 0,
        };
        ledger.fee_slot = ledger.slot(fee_account);
        ledger
    }

    /// The account's slot, created on first use.
    pub(crate) fn slot(&mut self, account: AccountId) -> usize {
        if let Some(slot) = self.slots.get(&account) {
            return *slot as usize;
        }
        let slot = self.accounts.len();
        self.slots.insert(account, slot as u32);
        self.accounts.push(account);
        self.rows
            .resize(self.rows.len() + self.assets, Balance::default());
        slot
    }

    pub(crate) fn at(&mut self, slot: usize, asset: AssetId) -> &mut Balance {
        &mut self.rows[slot * self.assets + usize::from(asset.0)]
    }

    pub(crate) fn get(&self, account: AccountId, asset: AssetId) -> Balance {
        match self.slots.get(&account) {
            Some(slot) if usize::from(asset.0) < self.assets => {
                self.rows[*slot as usize * self.assets + usize::from(asset.0)]
            }
            _ => Balance::default(),
        }
    }

    /// Adds (`credit`) or removes free funds of `account`, keeping the
    /// supply in step; refused whole if either would not fit.
    pub(crate) fn adjust(
        &mut self,
        account: AccountId,
        asset: AssetId,
        amount: Amount,
        credit: bool,
        events: &mut Vec<Event>,
    ) -> Result<(), Reject> {
        let index = usize::from(asset.0);
        if index >= self.assets {
            return Err(Reject::UnknownAsset);
        }
        let free = self.get(account, asset).free;
        let supply = self.supply[index];
        let (free, supply) = if credit {
            (
                free.checked_add(amount).ok_or(Reject::Overflow)?,
                supply.checked_add(amount).ok_or(Reject::Overflow)?,
            )
        } else {
            (
                free.checked_sub(amount)
                    .ok_or(Reject::InsufficientBalance)?,
                supply.checked_sub(amount).ok_or(Reject::Overflow)?,
            )
        };
        self.supply[index] = supply;
        let slot = self.slot(account);
        self.at(slot, asset).free = free;
        self.emit(slot, asset, events);
        Ok(())
    }

    /// Takes `released` out of the slot's locked `asset` and adds `credited` to its free.
    pub(crate) fn settle_leg(
        &mut self,
        slot: usize,
        asset: AssetId,
        released: Amount,
        credited: Amount,
    ) {
        let b = self.at(slot, asset);
        b.locked = sure(b.locked.checked_sub(released));
        b.free = sure(b.free.checked_add(credited));
    }

    /// Moves `amount` from free to locked (or back with `lock = false`).
    pub(crate) fn shift(&mut self, slot: usize, asset: AssetId, amount: Amount, lock: bool) {
        let b = self.at(slot, asset);
        let (from, to) = if lock {
            (b.free, b.locked)
        } else {
            (b.locked, b.free)
        };
        // Callers check the free balance first: a shift cannot fail.
        let (from, to) = (sure(from.checked_sub(amount)), sure(to.checked_add(amount)));
        if lock {
            (b.free, b.locked) = (from, to);
        } else {
            (b.locked, b.free) = (from, to);
        }
    }

    /// Both assets of a market, base first.
    pub(crate) fn emit_pair(
        &mut self,
        slot: usize,
        (base, quote): (AssetId, AssetId),
        events: &mut Vec<Event>,
    ) {
        self.emit(slot, base, events);
        self.emit(slot, quote, events);
    }

    pub(crate) fn emit(&mut self, slot: usize, asset: AssetId, events: &mut Vec<Event>) {
        let account = self.accounts[slot];
        let b = *self.at(slot, asset);
        events.push(Event::Balance {
            account,
            asset,
            free: b.free,
            locked: b.locked,
        });
    }
}
