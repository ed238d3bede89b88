//! The transaction index: every indexed transaction once, by position in its
//! block, and each address's transactions (as sender, recipient or created
//! contract) in block order. Written in the indexer's batches, with the
//! balances of the same blocks, and undone with them on a reorganisation.

use alloy_primitives::{Address, B256, U256};
use rocksdb::{Direction, IteratorMode, ReadOptions};

use crate::codec::{ADDRESS_LEN, BLOCK_NUMBER_LEN, encode_block_number};
use crate::record::{Reader, Writer};
use crate::{IndexBatch, StorageError, Store, cf};

/// Length of a transaction's position: block number, index in the block.
const POSITION_LEN: usize = BLOCK_NUMBER_LEN + 4;

/// A transaction with its receipt's outcome, as `txlist` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionRow {
    /// Transaction hash.
    pub hash: B256,
    /// Sender.
    pub from: Address,
    /// Recipient; none for a contract creation.
    pub to: Option<Address>,
    /// The contract a creation made.
    pub contract_address: Option<Address>,
    /// Value sent, in Wei.
    pub value: U256,
    /// Sender's nonce.
    pub nonce: u64,
    /// Gas limit.
    pub gas: u64,
    /// Price paid per gas (the effective price after EIP-1559).
    pub gas_price: u128,
    /// Gas used by this transaction.
    pub gas_used: u64,
    /// Gas used in the block up to and including it.
    pub cumulative_gas_used: u64,
    /// Whether it succeeded (receipt status 1).
    pub success: bool,
    /// Call data.
    pub input: Vec<u8>,
    /// Its block's timestamp, in seconds.
    pub timestamp: u64,
    /// Its block's hash.
    pub block_hash: B256,
}

impl TransactionRow {
    fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.bytes(self.hash.as_slice());
        w.bytes(self.from.as_slice());
        w.opt_address(self.to.as_ref());
        w.opt_address(self.contract_address.as_ref());
        w.bytes(&self.value.to_be_bytes_trimmed_vec());
        w.u64(self.nonce);
        w.u64(self.gas);
        w.bytes(&self.gas_price.to_be_bytes());
        w.u64(self.gas_used);
        w.u64(self.cumulative_gas_used);
        w.u8(u8::from(self.success));
        w.bytes(&self.input);
        w.u64(self.timestamp);
        w.bytes(self.block_hash.as_slice());
        w.0
    }

    fn decode(bytes: &[u8]) -> Result<Self, StorageError> {
        let mut r = Reader::new(bytes, "transaction row")?;
        let hash = B256::try_from(r.bytes()?.as_slice()).map_err(|_| r.corrupt())?;
        let from = r.address()?;
        let to = r.opt_address()?;
        let contract_address = r.opt_address()?;
        let value = U256::try_from_be_slice(&r.bytes()?).ok_or_else(|| r.corrupt())?;
        let nonce = r.u64()?;
        let gas = r.u64()?;
        let gas_price = u128::from_be_bytes(r.bytes()?.try_into().map_err(|_| r.corrupt())?);
        let gas_used = r.u64()?;
        let cumulative_gas_used = r.u64()?;
        let success = r.u8()? == 1;
        let input = r.bytes()?;
        let timestamp = r.u64()?;
        let block_hash = B256::try_from(r.bytes()?.as_slice()).map_err(|_| r.corrupt())?;
        r.finish()?;
        Ok(Self {
            hash,
            from,
            to,
            contract_address,
            value,
            nonce,
            gas,
            gas_price,
            gas_used,
            cumulative_gas_used,
            success,
            input,
            timestamp,
            block_hash,
        })
    }

    /// Every address whose history lists it, each once.
    fn addresses(&self) -> impl Iterator<Item = Address> + '_ {
        let to = self.to.filter(|to| *to != self.from);
        let created = self.contract_address.filter(|c| *c != self.from);
        std::iter::once(self.from).chain(to).chain(created)
    }
}

/// An indexed transaction: where it is and what it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexedTransaction {
    /// Block number.
    pub block: u64,
    /// Position in the block.
    pub index: u32,
    /// The transaction.
    pub row: TransactionRow,
}

fn position(block: u64, index: u32) -> [u8; POSITION_LEN] {
    let mut key = [0u8; POSITION_LEN];
    key[..BLOCK_NUMBER_LEN].copy_from_slice(&encode_block_number(block));
    key[BLOCK_NUMBER_LEN..].copy_from_slice(&index.to_be_bytes());
    key
}

fn address_key(address: &Address, block: u64, index: u32) -> [u8; ADDRESS_LEN + POSITION_LEN] {
    let mut key = [0u8; ADDRESS_LEN + POSITION_LEN];
    key[..ADDRESS_LEN].copy_from_slice(address.as_slice());
    key[ADDRESS_LEN..].copy_from_slice(&position(block, index));
    key
}

fn decode_position(bytes: &[u8]) -> Result<(u64, u32), StorageError> {
    let corrupt = || StorageError::Corrupt {
        what: "transaction position",
        len: bytes.len(),
    };
    let bytes: [u8; POSITION_LEN] = bytes.try_into().map_err(|_| corrupt())?;
    let block = u64::from_be_bytes(
        bytes[..BLOCK_NUMBER_LEN]
            .try_into()
            .map_err(|_| corrupt())?,
    );
    let index = u32::from_be_bytes(
        bytes[BLOCK_NUMBER_LEN..]
            .try_into()
            .map_err(|_| corrupt())?,
    );
    Ok((block, index))
}

/// Which of an address's history entries (transactions, transfers) a
/// page holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryPage {
    /// First block, inclusive.
    pub from_block: u64,
    /// Last block, inclusive.
    pub to_block: u64,
    /// Newest first.
    pub descending: bool,
    /// Entries passed over before the page.
    pub skip: usize,
    /// Most entries in the page.
    pub take: usize,
}

impl Store {
    /// A page of `address`'s transactions in block order (then by position).
    pub fn address_transactions(
        &self,
        address: &Address,
        page: HistoryPage,
    ) -> Result<Vec<IndexedTransaction>, StorageError> {
        if page.from_block > page.to_block || page.take == 0 {
            return Ok(Vec::new());
        }
        let lower = address_key(address, page.from_block, 0);
        let upper = address_key(address, page.to_block, u32::MAX);
        let mut read = ReadOptions::default();
        read.set_prefix_same_as_start(true);
        let mut iter = self.db.raw_iterator_cf_opt(self.cf(cf::ADDRESS_TX), read);
        if page.descending {
            iter.seek_for_prev(upper);
        } else {
            iter.seek(lower);
        }
        let mut positions = Vec::with_capacity(page.take.min(1024));
        let mut skipped = 0;
        while iter.valid() && positions.len() < page.take {
            let Some(key) = iter.key() else { break };
            if key < &lower[..] || key > &upper[..] {
                break;
            }
            if skipped < page.skip {
                skipped += 1;
            } else {
                positions.push(decode_position(&key[ADDRESS_LEN..])?);
            }
            if page.descending {
                iter.prev();
            } else {
                iter.next();
            }
        }
        iter.status()?;
        let rows = self.transactions_at(positions.iter().copied())?;
        positions
            .into_iter()
            .zip(rows)
            .map(|((block, index), row)| {
                Ok(IndexedTransaction {
                    block,
                    index,
                    row: row.ok_or(StorageError::Corrupt {
                        what: "missing transaction row",
                        len: 0,
                    })?,
                })
            })
            .collect()
    }

    /// The transactions at `positions` (block, index), each if indexed.
    pub fn transactions_at(
        &self,
        positions: impl Iterator<Item = (u64, u32)>,
    ) -> Result<Vec<Option<TransactionRow>>, StorageError> {
        // Sorted keys let RocksDB read neighbouring rows from one block.
        let mut keys: Vec<([u8; POSITION_LEN], usize)> = positions
            .enumerate()
            .map(|(at, (b, i))| (position(b, i), at))
            .collect();
        keys.sort_unstable();
        let rows = self
            .db
            .batched_multi_get_cf(self.cf(cf::TX), keys.iter().map(|(k, _)| k), true);
        let mut found = vec![None; keys.len()];
        for ((_, at), row) in keys.iter().zip(rows) {
            found[*at] = row?.map(|row| TransactionRow::decode(&row)).transpose()?;
        }
        Ok(found)
    }

    /// Where the transaction `hash` is (block, index), if indexed.
    pub fn transaction_position(&self, hash: &B256) -> Result<Option<(u64, u32)>, StorageError> {
        self.read(self.cf(cf::TX_HASH), hash.as_slice(), decode_position)
    }

    /// The transactions of `block`, by position.
    pub fn block_transactions(&self, block: u64) -> Result<Vec<TransactionRow>, StorageError> {
        let prefix = encode_block_number(block);
        self.db
            .iterator_cf(
                self.cf(cf::TX),
                IteratorMode::From(&prefix, Direction::Forward),
            )
            .take_while(|item| item.as_ref().is_ok_and(|(key, _)| key.starts_with(&prefix)))
            .map(|item| TransactionRow::decode(&item?.1))
            .collect()
    }
}

impl IndexBatch {
    /// Records transaction `index` of `block` and lists it under each of
    /// its addresses.
    pub fn put_transaction(&mut self, block: u64, index: u32, row: &TransactionRow) {
        for address in row.addresses() {
            self.put(cf::ADDRESS_TX, address_key(&address, block, index), []);
        }
        self.put(cf::TX_HASH, row.hash.as_slice(), position(block, index));
        self.put(cf::TX, position(block, index), row.encode());
    }

    /// Removes `block`'s transactions and their address entries (a
    /// reorganisation dropped the block). Reads committed data.
    pub fn delete_block_transactions(&mut self, block: u64) -> Result<(), StorageError> {
        let rows = self.store().block_transactions(block)?;
        for (index, row) in rows.iter().enumerate() {
            let index = u32::try_from(index).unwrap_or(u32::MAX);
            for address in row.addresses() {
                self.delete(cf::ADDRESS_TX, address_key(&address, block, index));
            }
            self.delete(cf::TX_HASH, row.hash.as_slice());
            self.delete(cf::TX, position(block, index));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(from: u8, to: Option<u8>, nonce: u64) -> TransactionRow {
        TransactionRow {
            hash: B256::repeat_byte(nonce as u8),
            from: Address::repeat_byte(from),
            to: to.map(Address::repeat_byte),
            contract_address: to.is_none().then(|| Address::repeat_byte(0xcc)),
            value: U256::from(10u64).pow(U256::from(18u64)),
            nonce,
            gas: 21_000,
            gas_price: 1_000_000_007,
            gas_used: 21_000,
            cumulative_gas_used: 42_000,
            success: nonce.is_multiple_of(2),
            input: vec![0xa9, 0x05, 0x9c, 0xbb, 1, 2],
            timestamp: 1_700_000_000 + nonce,
            block_hash: B256::repeat_byte(0xbb),
        }
    }

    fn page(
        from_block: u64,
        to_block: u64,
        descending: bool,
        skip: usize,
        take: usize,
    ) -> HistoryPage {
        HistoryPage {
            from_block,
            to_block,
            descending,
            skip,
            take,
        }
    }

    #[test]
    fn rows_round_trip_and_pages_follow_block_order() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &Default::default()).unwrap();
        let mut batch = store.index_batch();
        // Address 1 sends in blocks 1, 2 (twice) and 5; 2 receives two; 1
        // creates a contract in block 5.
        let rows = [
            (1, 0, row(1, Some(2), 0)),
            (2, 0, row(3, Some(4), 1)),
            (2, 1, row(1, Some(2), 2)),
            (2, 2, row(1, Some(1), 3)),
            (5, 0, row(1, None, 4)),
        ];
        for (block, index, row) in &rows {
            batch.put_transaction(*block, *index, row);
        }
        batch.commit().unwrap();
        let one = Address::repeat_byte(1);
        let all = store
            .address_transactions(&one, page(0, u64::MAX, false, 0, 100))
            .unwrap();
        let nonces: Vec<u64> = all.iter().map(|t| t.row.nonce).collect();
        assert_eq!(nonces, [0, 2, 3, 4]);
        assert_eq!(all[3].row, rows[4].2);
        let newest: Vec<u64> = store
            .address_transactions(&one, page(0, u64::MAX, true, 1, 2))
            .unwrap()
            .iter()
            .map(|t| t.row.nonce)
            .collect();
        assert_eq!(newest, [3, 2]);
        let in_block_2: Vec<u64> = store
            .address_transactions(&one, page(2, 2, false, 0, 100))
            .unwrap()
            .iter()
            .map(|t| t.row.nonce)
            .collect();
        assert_eq!(in_block_2, [2, 3]);
        let hash_of_2 = rows[2].2.hash;
        assert_eq!(
            store.transaction_position(&hash_of_2).unwrap(),
            Some((2, 1))
        );
        let positions = [(2, 1), (3, 0)].into_iter();
        let found = store.transactions_at(positions).unwrap();
        assert_eq!(found, [Some(rows[2].2.clone()), None]);
        let created = store
            .address_transactions(&Address::repeat_byte(0xcc), page(0, 9, false, 0, 9))
            .unwrap();
        assert_eq!(created.len(), 1);
        // A neighbouring address's rows never leak into a page.
        assert!(
            store
                .address_transactions(&Address::repeat_byte(0), page(0, u64::MAX, true, 0, 9))
                .unwrap()
                .is_empty()
        );

        let mut undo = store.index_batch();
        undo.delete_block_transactions(2).unwrap();
        undo.commit().unwrap();
        let left: Vec<u64> = store
            .address_transactions(&one, page(0, u64::MAX, false, 0, 100))
            .unwrap()
            .iter()
            .map(|t| t.row.nonce)
            .collect();
        assert_eq!(left, [0, 4]);
        assert!(store.block_transactions(2).unwrap().is_empty());
        assert_eq!(store.transaction_position(&hash_of_2).unwrap(), None);
        assert!(
            store
                .address_transactions(&Address::repeat_byte(4), page(0, 9, false, 0, 9))
                .unwrap()
                .is_empty()
        );
    }
}
