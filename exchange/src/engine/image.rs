//! The engine's whole state as data, to be written at a sequence and read
//! back in place of replaying the commands before it (a snapshot). The
//! form is serde's: the store that keeps it chooses the bytes. An image
//! belongs to the build that wrote it; a store keeps its build's version
//! with it and replays the log when they differ.

use std::sync::Arc;

use super::*;

/// The engine's state, borrowed for writing.
#[derive(serde::Serialize)]
pub struct EngineImage<'a> {
    books: &'a [Book],
    ledger: &'a Ledger,
    next_list_id: u64,
    chain: &'a Withdrawals,
    now_ms: u64,
}

/// An engine's state as read back, to become an engine again.
#[derive(serde::Deserialize)]
pub struct StoredEngine {
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

    /// Its whole state, for writing.
    pub fn image(&self) -> EngineImage<'_> {
        EngineImage {
            books: &self.books,
            ledger: &self.ledger,
            next_list_id: self.next_list_id,
            chain: &self.chain,
            now_ms: self.now_ms,
        }
    }

    /// The engine `stored` was the image of, over `catalog`'s markets (whose
    /// rules, as configured now, replace the stored ones: a replay would
    /// apply today's too).
    pub fn from_image(
        catalog: Arc<Catalog>,
        fee_account: AccountId,
        stored: StoredEngine,
    ) -> Result<Self, ImageMismatch> {
        let StoredEngine {
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

    fn read_back(engine: &Engine) -> Engine {
        let written = serde_json::to_vec(&engine.image()).unwrap();
        Engine::from_image(
            two_markets(),
            FEES,
            serde_json::from_slice(&written).unwrap(),
        )
        .unwrap()
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
        let mut restored = read_back(&engine);
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
        let engine = Engine::new(two_markets(), FEES);
        let written = serde_json::to_vec(&engine.image()).unwrap();
        let one_market = Arc::new(Catalog::new(vec![crate::market::tests_support::eth_usdt()]));
        let refused =
            Engine::from_image(one_market, FEES, serde_json::from_slice(&written).unwrap());
        assert!(refused.is_err());
    }
}
