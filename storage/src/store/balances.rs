//! Ether balances: each address's latest balance and its balance after
//! every block that changed it, read back (the latest through the table in
//! `latest.rs`), and the index batch that writes them together with the
//! blocks and the cursor, committed atomically.
//!
//! The one way to write a balance: this module alone holds handles to the
//! balance families (`Store::cf` refuses them elsewhere) and alone touches
//! an index batch's writes, so every balance row reaches the database in
//! [`IndexBatch::commit`], which moves the latest-balance table's
//! generation before it publishes the new head. That is what keeps the
//! table exact; a balance written past the commit would break it.

use std::sync::atomic::Ordering;

use alloy_primitives::{Address, B256, U256};
use rocksdb::{DB, Direction, IteratorMode, ReadOptions};

use super::sorted::SortedWrites;
use super::{Store, meta_key};
use crate::codec::{self, balance_at_key, decode_balance_at_key, encode_block_number, encode_wei};
use crate::{BlockRecord, Cursor, LatestBalance, StorageError, cf};

/// Balance-history iterators kept for reuse: opening a RocksDB iterator
/// costs more than the seek it serves, refreshing an idle one to the
/// latest state costs little. At most one per concurrent reader is kept;
/// an idle one holds on to the files it last read until it is refreshed,
/// as any open iterator does.
#[derive(Default)]
pub(super) struct HistoryReaders {
    idle: std::sync::Mutex<Vec<HistoryIterator>>,
}

/// An iterator over the balance history, its borrow of the database
/// extended to `'static`. SAFETY (of that extension, in `take`): the
/// database is the `Arc<DB>` every `Store` holds beside its
/// `Arc<HistoryReaders>`; only `Store`s hold the readers, and a `Store`
/// drops them before its `db` (field order), so no iterator outlives the
/// database it reads.
type HistoryIterator = rocksdb::DBRawIteratorWithThreadMode<'static, DB>;

impl HistoryReaders {
    /// Most idle iterators kept: more than the server's worker threads.
    const KEEP: usize = 16;

    fn take(&self) -> Option<HistoryIterator> {
        self.idle.lock().ok()?.pop()
    }

    fn put_back(&self, iter: HistoryIterator) {
        if let Ok(mut idle) = self.idle.lock()
            && idle.len() < Self::KEEP
        {
            idle.push(iter);
        }
    }
}

impl Store {
    /// The latest indexed balance of `address`: from memory when the
    /// address was read since the last index commit.
    pub fn balance(&self, address: &Address) -> Result<Option<LatestBalance>, StorageError> {
        let generation = match self.latest.get(address) {
            Ok(latest) => return Ok(latest),
            Err(generation) => generation,
        };
        let latest = self.read(
            self.handle(cf::BALANCE),
            address.as_slice(),
            LatestBalance::decode,
        )?;
        self.latest.fill(address, generation, latest);
        Ok(latest)
    }

    /// Every latest balance summed, and how many addresses hold one: all
    /// the indexed chain's accounts hold (the supply, when the index starts
    /// at genesis). A read of the whole table, at one point in time.
    pub fn balances_total(&self) -> Result<(U256, u64), StorageError> {
        let (mut total, mut holders) = (U256::ZERO, 0u64);
        let snapshot = self.db.0.snapshot();
        let mut read = ReadOptions::default();
        read.set_snapshot(&snapshot);
        for item in self
            .db
            .0
            .iterator_cf_opt(self.handle(cf::BALANCE), read, IteratorMode::Start)
        {
            let (_, value) = item?;
            let latest = LatestBalance::decode(&value)?;
            total = total.saturating_add(latest.wei);
            holders += u64::from(!latest.wei.is_zero());
        }
        Ok((total, holders))
    }

    /// The balance of `address` after block `block`: the newest history row at
    /// or below `block`. `None` if the index holds no row for it that early.
    pub fn balance_at(&self, address: &Address, block: u64) -> Result<Option<U256>, StorageError> {
        Ok(self
            .history_at_or_before(address, block)?
            .map(|(_, wei)| wei))
    }

    fn history_at_or_before(
        &self,
        address: &Address,
        block: u64,
    ) -> Result<Option<(u64, U256)>, StorageError> {
        let mut iter = self.history_iterator()?;
        iter.seek_for_prev(balance_at_key(address, block));
        let found = if iter.valid() {
            match (iter.key(), iter.value()) {
                (Some(key), Some(value)) => {
                    let (found_address, found_block) = decode_balance_at_key(key)?;
                    (found_address == *address)
                        .then(|| codec::decode_wei(value).map(|wei| (found_block, wei)))
                        .transpose()?
                }
                _ => None,
            }
        } else {
            iter.status()?;
            None
        };
        self.history_readers.put_back(iter);
        Ok(found)
    }

    /// An idle history iterator refreshed to the latest committed state, or
    /// a new one.
    fn history_iterator(&self) -> Result<HistoryIterator, StorageError> {
        if let Some(mut iter) = self.history_readers.take() {
            iter.refresh()?;
            return Ok(iter);
        }
        let mut read = ReadOptions::default();
        read.set_prefix_same_as_start(true);
        let iter = self
            .db
            .0
            .raw_iterator_cf_opt(self.handle(cf::BALANCE_AT), read);
        // SAFETY: see `HistoryIterator`: the readers that keep this iterator
        // are dropped before the database it borrows.
        Ok(unsafe {
            std::mem::transmute::<rocksdb::DBRawIteratorWithThreadMode<'_, DB>, HistoryIterator>(
                iter,
            )
        })
    }

    /// Every `(address, block, wei)` history row, in key order. For checks and tests.
    pub fn history(&self) -> impl Iterator<Item = Result<(Address, u64, U256), StorageError>> + '_ {
        self.db
            .0
            .iterator_cf(
                self.handle(cf::BALANCE_AT),
                IteratorMode::From(&[], Direction::Forward),
            )
            .map(|item| {
                let (key, value) = item?;
                let (address, block) = decode_balance_at_key(&key)?;
                Ok((address, block, codec::decode_wei(&value)?))
            })
    }

    /// `address`'s indexed balance after each block in `(after, through]`
    /// that changed it, oldest first.
    pub fn balance_changes(
        &self,
        address: &Address,
        after: u64,
        through: u64,
    ) -> Result<Vec<(u64, U256)>, StorageError> {
        let mut out = Vec::new();
        if after >= through {
            return Ok(out);
        }
        let start = codec::balance_at_key(address, after + 1);
        for item in self.db.0.iterator_cf(
            self.handle(cf::BALANCE_AT),
            IteratorMode::From(&start, Direction::Forward),
        ) {
            let (key, value) = item?;
            let (found, block) = match codec::decode_balance_at_key(&key) {
                Ok(found) => found,
                Err(_) => break,
            };
            if found != *address || block > through {
                break;
            }
            out.push((block, codec::decode_wei(&value)?));
        }
        Ok(out)
    }

    /// Starts an atomic batch of index writes.
    pub fn index_batch(&self) -> IndexBatch {
        IndexBatch {
            store: self.clone(),
            writes: SortedWrites::default(),
            head: None,
            start: None,
        }
    }
}

/// A set of index writes applied all together or not at all. Owns a handle
/// to the store, so it can be committed on another thread.
///
/// The only way a balance is written: its writes are private to this
/// module, other modules add their rows through [`IndexBatch::put`] and
/// [`IndexBatch::delete`] (which refuse the balance families), and
/// [`IndexBatch::commit`] keeps the latest-balance table exact.
pub struct IndexBatch {
    store: Store,
    writes: SortedWrites,
    /// The cursor and start block this batch records, published to
    /// [`Store::indexed_head`] and [`Store::indexed_start`] once committed.
    head: Option<u64>,
    start: Option<u64>,
}

impl IndexBatch {
    /// Records that `address` holds `wei` after `block`: updates the latest
    /// balance and appends a history row. Written by [`IndexBatch::commit`]
    /// only, as every balance must be (see the module's note).
    pub fn set_balance(&mut self, address: &Address, block: u64, wei: &U256) {
        let latest = LatestBalance { wei: *wei, block };
        self.writes
            .put(cf::BALANCE, address.as_slice(), &latest.encode());
        self.writes.put(
            cf::BALANCE_AT,
            &balance_at_key(address, block),
            &encode_wei(wei),
        );
    }

    /// Stores block `number`'s record.
    pub fn put_block(&mut self, number: u64, record: &BlockRecord) {
        self.put(cf::BLOCK, encode_block_number(number), record.encode());
    }

    /// Removes block `number`'s record.
    pub fn delete_block(&mut self, number: u64) {
        self.delete(cf::BLOCK, encode_block_number(number));
    }

    /// Moves the indexer cursor.
    pub fn set_cursor(&mut self, cursor: &Cursor) {
        self.put(cf::CHAIN_META, meta_key::CURSOR, cursor.encode());
        self.head = Some(cursor.number);
    }

    /// Records the chain the index belongs to and the block it starts at.
    pub fn set_chain(&mut self, chain_id: u64, genesis_hash: &B256, start_block: u64) {
        let meta = cf::CHAIN_META;
        self.put(meta, meta_key::CHAIN_ID, encode_block_number(chain_id));
        self.put(meta, meta_key::GENESIS_HASH, genesis_hash.as_slice());
        self.put(
            meta,
            meta_key::INDEX_START,
            encode_block_number(start_block),
        );
        self.start = Some(start_block);
    }

    /// Undoes every change to `address` after block `keep_through`: deletes its
    /// newer history rows and restores its latest balance from history. Reads
    /// committed data, so call it before writing anything else for `address`
    /// in this batch. Like every balance write, it takes effect in
    /// [`IndexBatch::commit`] only.
    pub fn rewind_address(
        &mut self,
        address: &Address,
        keep_through: u64,
    ) -> Result<(), StorageError> {
        let history = self.store.handle(cf::BALANCE_AT);
        let mut read = ReadOptions::default();
        read.set_prefix_same_as_start(true);
        let mut iter = self.store.db.0.raw_iterator_cf_opt(history, read);
        iter.seek(balance_at_key(address, keep_through.saturating_add(1)));
        while iter.valid() {
            let Some(key) = iter.key() else { break };
            let (found, _) = decode_balance_at_key(key)?;
            if found != *address {
                break;
            }
            self.writes.delete(cf::BALANCE_AT, key);
            iter.next();
        }
        iter.status()?;
        match self.store.history_at_or_before(address, keep_through)? {
            Some((block, wei)) => self.writes.put(
                cf::BALANCE,
                address.as_slice(),
                &LatestBalance { wei, block }.encode(),
            ),
            None => self.writes.delete(cf::BALANCE, address.as_slice()),
        }
        Ok(())
    }

    /// Number of operations queued.
    pub fn len(&self) -> usize {
        self.writes.len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.writes.len() == 0
    }

    /// Queues `value` under `key` in `family`, written with the batch. For
    /// the rows other modules add; the balance families are refused.
    pub(crate) fn put(
        &mut self,
        family: &'static str,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) {
        refuse_balances(family);
        self.writes.put(family, key.as_ref(), value.as_ref());
    }

    /// Queues the removal of `key` from `family`; the balance families are
    /// refused.
    pub(crate) fn delete(&mut self, family: &'static str, key: impl AsRef<[u8]>) {
        refuse_balances(family);
        self.writes.delete(family, key.as_ref());
    }

    /// The store this batch commits to, for reads of committed data.
    pub(crate) fn store(&self) -> &Store {
        &self.store
    }

    /// Writes the batch atomically with the WAL synced, so a crash after this
    /// returns cannot lose it.
    ///
    /// The latest-balance table (`latest.rs`) is exact because this is the
    /// only write of a balance and moves the table's generation after the
    /// write and before the head: keep both, in this order.
    pub fn commit(self) -> Result<(), StorageError> {
        let batch = self.writes.into_batch(|family| self.store.handle(family));
        self.store.db.0.write_opt(batch, &Store::synced())?;
        // Before the head: a reader that sees the new head reads afresh.
        self.store.latest.committed();
        let range = &self.store.indexed;
        if let Some(start) = self.start {
            range.start.store(start, Ordering::Release);
        }
        if let Some(head) = self.head {
            range.head.store(head, Ordering::Release);
        }
        Ok(())
    }
}

/// The balance families are written only by [`IndexBatch::set_balance`]
/// and [`IndexBatch::rewind_address`] (see the module's note).
fn refuse_balances(family: &str) {
    assert!(
        family != cf::BALANCE && family != cf::BALANCE_AT,
        "the balance families are written only through IndexBatch::commit"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StoreOptions;

    fn open(dir: &tempfile::TempDir) -> Store {
        Store::open(dir.path(), &StoreOptions::default()).unwrap()
    }

    #[test]
    fn a_latest_balance_is_never_older_than_the_head_its_reader_saw() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir);
        let address = Address::repeat_byte(0x42);
        let commits = 300;
        let done = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|scope| {
            let readers: Vec<_> = (0..3)
                .map(|_| {
                    scope.spawn(|| {
                        let mut reads = 0u64;
                        while !done.load(Ordering::Acquire) {
                            let Some(head) = store.indexed_head() else {
                                continue;
                            };
                            let latest = store.balance(&address).unwrap().unwrap();
                            assert!(
                                latest.block >= head,
                                "balance of block {} read after head {head}",
                                latest.block
                            );
                            assert_eq!(latest.wei, U256::from(latest.block));
                            reads += 1;
                        }
                        reads
                    })
                })
                .collect();
            for block in 1..=commits {
                let mut batch = store.index_batch();
                batch.set_balance(&address, block, &U256::from(block));
                batch.set_cursor(&Cursor {
                    number: block,
                    hash: B256::ZERO,
                });
                batch.commit().unwrap();
            }
            done.store(true, Ordering::Release);
            for reader in readers {
                assert!(reader.join().unwrap() > 0);
            }
        });
        let latest = store.balance(&address).unwrap().unwrap();
        assert_eq!((latest.block, latest.wei), (commits, U256::from(commits)));
    }

    #[test]
    fn a_reused_history_reader_sees_every_later_commit_and_the_range_follows() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir);
        assert_eq!((store.indexed_head(), store.indexed_start()), (None, None));
        let a = Address::repeat_byte(0xaa);
        for block in 1..=40u64 {
            let mut batch = store.index_batch();
            if block == 1 {
                batch.set_chain(1, &B256::ZERO, 1);
            }
            batch.set_balance(&a, block, &U256::from(block));
            batch.set_cursor(&Cursor {
                number: block,
                hash: B256::ZERO,
            });
            batch.commit().unwrap();
            // Each read leaves its iterator idle for the next, which must
            // see the batch committed in between.
            assert_eq!(
                store.balance_at(&a, u64::MAX).unwrap(),
                Some(U256::from(block))
            );
            assert_eq!(store.indexed_head(), Some(block));
        }
        assert_eq!(store.indexed_start(), Some(1));
        store.flush().unwrap();
        drop(store);
        let reopened = open(&dir);
        assert_eq!(
            (reopened.indexed_head(), reopened.indexed_start()),
            (Some(40), Some(1)),
            "the range is read back on open"
        );
        assert_eq!(reopened.balance_at(&a, 20).unwrap(), Some(U256::from(20u8)));
    }

    #[test]
    fn balance_at_finds_the_newest_row_at_or_below_the_block() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir);
        let a = Address::repeat_byte(0xaa);
        let neighbour_below = Address::repeat_byte(0xa9);
        let neighbour_above = Address::repeat_byte(0xab);
        let mut batch = store.index_batch();
        batch.set_balance(&neighbour_below, 1, &U256::from(7u8));
        batch.set_balance(&a, 5, &U256::from(100u8));
        batch.set_balance(&a, 9, &U256::from(90u8));
        batch.set_balance(&a, 300, &U256::from(80u8));
        batch.set_balance(&neighbour_above, 2, &U256::from(3u8));
        batch.commit().unwrap();

        assert_eq!(
            store.balance_at(&a, 4).unwrap(),
            None,
            "before the first change"
        );
        assert_eq!(store.balance_at(&a, 5).unwrap(), Some(U256::from(100u8)));
        assert_eq!(store.balance_at(&a, 8).unwrap(), Some(U256::from(100u8)));
        assert_eq!(store.balance_at(&a, 9).unwrap(), Some(U256::from(90u8)));
        // 256..299 would sort before 9 if keys were little-endian or decimal text.
        assert_eq!(store.balance_at(&a, 299).unwrap(), Some(U256::from(90u8)));
        assert_eq!(
            store.balance_at(&a, u64::MAX).unwrap(),
            Some(U256::from(80u8))
        );
        assert_eq!(
            store.balance(&a).unwrap(),
            Some(LatestBalance {
                wei: U256::from(80u8),
                block: 300
            })
        );
        assert_eq!(store.balance(&Address::ZERO).unwrap(), None);
    }

    #[test]
    fn rewind_restores_the_latest_balance_from_history() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir);
        let a = Address::repeat_byte(1);
        let b = Address::repeat_byte(2);
        let mut batch = store.index_batch();
        batch.set_balance(&a, 10, &U256::from(1u8));
        batch.set_balance(&a, 11, &U256::from(2u8));
        batch.set_balance(&a, 12, &U256::from(3u8));
        batch.set_balance(&b, 12, &U256::from(4u8));
        batch.commit().unwrap();

        let mut batch = store.index_batch();
        batch.rewind_address(&a, 10).unwrap();
        batch.rewind_address(&b, 10).unwrap();
        batch.commit().unwrap();

        assert_eq!(
            store.balance(&a).unwrap(),
            Some(LatestBalance {
                wei: U256::from(1u8),
                block: 10
            })
        );
        assert_eq!(
            store.balance(&b).unwrap(),
            None,
            "b did not exist before block 12"
        );
        let rows: Vec<_> = store.history().map(Result::unwrap).collect();
        assert_eq!(rows, vec![(a, 10, U256::from(1u8))]);
    }

    #[test]
    fn a_batch_is_invisible_until_committed() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir);
        let cursor = Cursor {
            number: 3,
            hash: B256::repeat_byte(3),
        };
        let mut batch = store.index_batch();
        batch.set_balance(&Address::repeat_byte(5), 3, &U256::from(5u8));
        batch.set_cursor(&cursor);
        assert_eq!(store.cursor().unwrap(), None);
        drop(batch);
        assert_eq!(store.cursor().unwrap(), None);
        assert_eq!(store.balance(&Address::repeat_byte(5)).unwrap(), None);

        let mut batch = store.index_batch();
        batch.set_cursor(&cursor);
        batch.set_chain(31337, &B256::repeat_byte(0xee), 0);
        batch.commit().unwrap();
        drop(store);
        let store = open(&dir);
        assert_eq!(store.cursor().unwrap(), Some(cursor));
        assert_eq!(store.chain_id().unwrap(), Some(31337));
        assert_eq!(store.genesis_hash().unwrap(), Some(B256::repeat_byte(0xee)));
        assert_eq!(store.index_start().unwrap(), Some(0));
    }
}
