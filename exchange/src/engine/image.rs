//! The engine's whole state as data, to be written at a sequence and read
//! back in place of replaying the commands before it (a snapshot). The
//! form is serde's: the store that keeps it chooses the bytes. An image
//! belongs to the build that wrote it: the snapshot's format number names
//! its shape, and a store whose snapshot has another replays the log.
//!
//! An image is a copy, not a borrow: the engine thread pays only for the
//! copy (flat vectors and tables, most of it copied as memory) and another
//! thread encodes and writes it while the engine goes on.

use std::sync::Arc;

use super::*;

/// The engine's state, copied for writing, or read back to become an
/// engine again.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub struct EngineImage {
    books: Vec<Book>,
    ledger: Ledger,
    next_list_id: u64,
    chain: Withdrawals,
    now_ms: u64,
}

/// Why an image cannot become this engine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the snapshot does not fit this configuration: {0}")]
pub struct ImageMismatch(&'static str);

impl Engine {
    /// The engine time of the last command it applied, ms.
    pub fn time_ms(&self) -> u64 {
        self.now_ms
    }

    /// A copy of its whole state, for writing, in `spare`'s memory when
    /// given (an earlier image: its order slabs and balance rows are
    /// overwritten in place instead of taken fresh from the system).
    pub fn image(&mut self, spare: Option<EngineImage>) -> EngineImage {
        let (mut spare_books, spare_ledger) = match spare {
            Some(spare) => (spare.books, Some(spare.ledger)),
            None => (Vec::new(), None),
        };
        spare_books.truncate(self.books.len());
        let mut spare_books = spare_books.into_iter();
        let books = self
            .books
            .iter_mut()
            .map(|book| copy_reusing(book, spare_books.next(), |book| &mut book.slab))
            .collect();
        EngineImage {
            books,
            ledger: copy_reusing(&mut self.ledger, spare_ledger, |ledger| &mut ledger.rows),
            next_list_id: self.next_list_id,
            chain: self.chain.clone(),
            now_ms: self.now_ms,
        }
    }

    /// The engine `stored` was the image of, over `catalog`'s markets (whose
    /// rules, as configured now, replace the stored ones: a replay would
    /// apply today's too).
    pub fn from_image(
        catalog: Arc<Catalog>,
        fee_account: AccountId,
        stored: EngineImage,
    ) -> Result<Self, ImageMismatch> {
        let EngineImage {
            mut books,
            ledger,
            next_list_id,
            chain,
            now_ms,
        } = stored;
        if books.len() != catalog.markets().count() {
            return Err(ImageMismatch("another number of markets"));
        }
        if ledger.assets != catalog.assets().count() {
            return Err(ImageMismatch("another number of assets"));
        }
        if ledger.accounts.get(ledger.fee_slot) != Some(&fee_account) {
            return Err(ImageMismatch("another fee account"));
        }
        for (book, (id, market)) in books.iter_mut().zip(catalog.markets()) {
            let pair = catalog
                .pair(id)
                .ok_or(ImageMismatch("a market without its pair"))?;
            if book.id != id
                || book.market.symbol != market.symbol
                || (book.base, book.quote) != pair
            {
                return Err(ImageMismatch("another market at the same place"));
            }
            book.market = market.clone();
        }
        let engine = Self {
            catalog,
            books,
            ledger,
            now_ms,
            next_list_id,
            chain,
            taker_log: TakerLog::default(),
            command_start: 0,
        };
        engine
            .check_invariants()
            .map_err(|_| ImageMismatch("its books do not balance"))?;
        Ok(engine)
    }
}

/// A copy of `source` whose largest `part` is copied into `spare`'s (an
/// earlier copy's) allocation. Fresh memory costs a page fault a page on
/// first touch: a copy of 100,000 resting orders took 3.5–12 ms into new
/// memory and about 2 ms into memory already mapped (measured). The part is
/// lent out of `source` while the rest is cloned, and put back.
pub(crate) fn copy_reusing<T: Clone, P: Clone + Default>(
    source: &mut T,
    spare: Option<T>,
    part: fn(&mut T) -> &mut P,
) -> T {
    let lent = std::mem::take(part(source));
    let mut copy = source.clone();
    *part(source) = lent;
    if let Some(mut spare) = spare {
        std::mem::swap(part(&mut copy), part(&mut spare));
    }
    part(&mut copy).clone_from(part(source));
    copy
}

/// A map written in the order of its keys, not of its hashes (std's hash
/// maps seed theirs per process): a snapshot's bytes then follow from its
/// state, and can be pinned.
pub(crate) fn sorted_map<K, V, H, S>(
    map: &std::collections::HashMap<K, V, H>,
    serializer: S,
) -> Result<S::Ok, S::Error>
where
    K: serde::Serialize + Ord,
    V: serde::Serialize,
    S: serde::Serializer,
{
    let mut entries: Vec<_> = map.iter().collect();
    entries.sort_unstable_by_key(|(key, _)| *key);
    serializer.collect_map(entries)
}

/// A map written as a list of its entries: keys that are not strings or
/// numbers (tuples) have no place as keys in every format.
pub(crate) mod pairs {
    use std::collections::HashMap;
    use std::hash::{BuildHasher, Hash};

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(crate) fn serialize<K, V, H, S>(
        map: &HashMap<K, V, H>,
        serializer: S,
    ) -> Result<S::Ok, S::Error>
    where
        K: Serialize,
        V: Serialize,
        S: Serializer,
    {
        serializer.collect_seq(map.iter())
    }

    pub(crate) fn deserialize<'de, K, V, H, D>(
        deserializer: D,
    ) -> Result<HashMap<K, V, H>, D::Error>
    where
        K: Deserialize<'de> + Eq + Hash,
        V: Deserialize<'de>,
        H: BuildHasher + Default,
        D: Deserializer<'de>,
    {
        let entries = Vec::<(K, V)>::deserialize(deserializer)?;
        Ok(entries.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::tests::{ETH, FEES, two_markets};

    fn read_back(engine: &mut Engine) -> Engine {
        let written = postcard::to_stdvec(&engine.image(None)).unwrap();
        Engine::from_image(two_markets(), FEES, postcard::from_bytes(&written).unwrap()).unwrap()
    }

    #[test]
    fn withdrawals_deposits_and_addresses_come_back_as_they_were() {
        let mut engine = Engine::new(two_markets(), FEES);
        let units = Amount::from_units;
        engine.apply(Command::Deposit {
            account: 1,
            asset: ETH,
            amount: units(1000),
            deposit_id: 7,
            network: 0,
        });
        let withdraw = Command::Withdraw {
            account: 1,
            asset: ETH,
            amount: units(100),
            fee: units(10),
            client_id: Some("mine".into()),
            destination: [7; 20],
            requested_ms: 9,
            network: 10,
        };
        engine.apply(withdraw.clone());
        let signed = |nonce| Command::WithdrawalSigned {
            withdrawal_id: 1,
            nonce,
            tx: SignedTx {
                hash: [1; 32],
                max_fee: 2,
                tip: 1,
                raw: vec![1].into(),
            },
        };
        engine.apply(signed(4));
        engine.apply(Command::AssignDepositAddress {
            account: 1,
            address: [9; 20],
        });
        let mut restored = read_back(&mut engine);
        assert_eq!(restored.snapshot(), engine.snapshot());
        assert_eq!(restored.last_deposit_id(0), 7);
        // The client id, the nonce and the address are remembered.
        for command in [
            withdraw,
            signed(5),
            Command::AssignDepositAddress {
                account: 1,
                address: [9; 20],
            },
            Command::Deposit {
                account: 1,
                asset: ETH,
                amount: units(1),
                deposit_id: 7,
                network: 0,
            },
        ] {
            assert_eq!(restored.apply(command.clone()), engine.apply(command));
        }
    }

    #[test]
    fn an_image_of_other_markets_is_refused() {
        let mut engine = Engine::new(two_markets(), FEES);
        let written = postcard::to_stdvec(&engine.image(None)).unwrap();
        let one_market = Arc::new(Catalog::new(vec![crate::market::tests_support::eth_usdt()]));
        let refused = Engine::from_image(one_market, FEES, postcard::from_bytes(&written).unwrap());
        assert!(refused.is_err());
    }
}
