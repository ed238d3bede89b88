//! Latest balances read since the last index commit, kept in memory so that
//! an address read again is answered without a RocksDB look-up.
//!
//! Exact by generations: every index commit moves the generation after its
//! write and before it publishes its head, and an entry answers only in the
//! generation its reader loaded *before* reading the database. An entry
//! therefore never holds less than the commits of its generation, and a
//! reader that sees a newer head sees a newer generation and reads afresh.
//!
//! This holds only while every write of a balance row reaches the database
//! through `IndexBatch::commit` (in `balances.rs`), the one place that moves
//! the generation. A balance written any other way would leave entries of
//! the current generation stale, with nothing to tell a reader. Hence the
//! balance families are handed out only inside `store` (`Store::cf` refuses
//! them), and this table is touched only there.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use alloy_primitives::Address;

use crate::codec::LatestBalance;

/// Slots of the table: under a megabyte (about 90 bytes each).
const SLOTS: usize = 8192;

/// A direct-mapped table: one slot per hash of the address, a colliding
/// address replaces the one before (a miss is a database read, as before).
pub(super) struct LatestCache {
    generation: AtomicU64,
    slots: Box<[Mutex<Option<Entry>>]>,
}

#[derive(Clone, Copy)]
struct Entry {
    address: Address,
    generation: u64,
    /// `None`: the index holds no balance for the address.
    latest: Option<LatestBalance>,
}

/// The generation a reader loaded before it read the database.
#[derive(Clone, Copy)]
pub(super) struct Generation(u64);

impl Default for LatestCache {
    fn default() -> Self {
        Self {
            generation: AtomicU64::new(0),
            slots: (0..SLOTS).map(|_| Mutex::new(None)).collect(),
        }
    }
}

impl LatestCache {
    /// The current generation, and the entry for `address` if one was read
    /// in it. `Err` carries the generation to fill a miss with.
    pub(super) fn get(&self, address: &Address) -> Result<Option<LatestBalance>, Generation> {
        let generation = self.generation.load(Ordering::Acquire);
        let slot = self.slot(address).lock().ok().and_then(|slot| *slot);
        match slot {
            Some(entry) if entry.generation == generation && entry.address == *address => {
                Ok(entry.latest)
            }
            _ => Err(Generation(generation)),
        }
    }

    /// Keeps what a reader found for `address` after loading `generation`.
    pub(super) fn fill(
        &self,
        address: &Address,
        generation: Generation,
        latest: Option<LatestBalance>,
    ) {
        if let Ok(mut slot) = self.slot(address).lock() {
            *slot = Some(Entry {
                address: *address,
                generation: generation.0,
                latest,
            });
        }
    }

    /// Called by `IndexBatch::commit` after its write, before its head is
    /// published: every entry read before falls out.
    pub(super) fn committed(&self) {
        self.generation.fetch_add(1, Ordering::Release);
    }

    fn slot(&self, address: &Address) -> &Mutex<Option<Entry>> {
        let bytes = address.as_slice();
        let word = |at: usize| {
            let mut word = [0; 8];
            word.copy_from_slice(&bytes[at..at + 8]);
            u64::from_le_bytes(word)
        };
        // Both ends of the address: vanity addresses share their leading bytes.
        let mixed = (word(0) ^ word(12)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        &self.slots[(mixed >> 32) as usize % SLOTS]
    }
}

#[cfg(test)]
mod tests {
    use alloy_primitives::U256;

    use super::*;

    fn balance(wei: u64, block: u64) -> Option<LatestBalance> {
        Some(LatestBalance {
            wei: U256::from(wei),
            block,
        })
    }

    #[test]
    fn an_entry_answers_only_in_the_generation_it_was_read_in() {
        let cache = LatestCache::default();
        let address = Address::repeat_byte(7);
        let Err(generation) = cache.get(&address) else {
            panic!("an empty cache answered");
        };
        cache.fill(&address, generation, balance(5, 1));
        assert_eq!(cache.get(&address).ok(), Some(balance(5, 1)));
        cache.committed();
        assert!(cache.get(&address).is_err(), "an entry survived a commit");
        // A reader that loaded the generation before a commit and read the
        // database after it keeps nothing the next reader can see.
        let Err(before) = cache.get(&address) else {
            unreachable!()
        };
        cache.committed();
        cache.fill(&address, before, balance(6, 2));
        assert!(cache.get(&address).is_err(), "a raced fill answered");
    }

    #[test]
    fn an_address_is_answered_only_for_itself() {
        let cache = LatestCache::default();
        let (one, other) = (Address::repeat_byte(1), Address::repeat_byte(2));
        let Err(generation) = cache.get(&one) else {
            unreachable!()
        };
        cache.fill(&one, generation, None);
        assert_eq!(cache.get(&one).ok(), Some(None));
        assert!(cache.get(&other).is_err());
    }
}
