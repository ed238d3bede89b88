use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use alloy_primitives::{Address, B256, U256};
use rocksdb::{
    BlockBasedOptions, Cache, ColumnFamily, ColumnFamilyDescriptor, DB, DBCompressionType,
    Direction, IteratorMode, Options, ReadOptions, SliceTransform, WriteBatch, WriteOptions,
};

use crate::codec::{
    self, ADDRESS_LEN, balance_at_key, decode_balance_at_key, encode_block_number, encode_wei,
};
use crate::latest::LatestCache;
use crate::{
    AccountRecord, ApiKeyRecord, BlockRecord, CommandRecord, Cursor, LatestBalance, SCHEMA_VERSION,
    StorageError, cf,
};

pub(crate) mod meta_key {
    pub const SCHEMA_VERSION: &[u8] = b"schema_version";
    pub const CHAIN_ID: &[u8] = b"chain_id";
    pub const GENESIS_HASH: &[u8] = b"genesis_hash";
    pub const CURSOR: &[u8] = b"index_cursor";
    pub const INDEX_START: &[u8] = b"index_start";
    pub const NEXT_ACCOUNT: &[u8] = b"next_account_id";
    pub const EXCHANGE_HISTORY: &[u8] = b"exchange_history_sequence";
    pub const COARSE_CANDLES: &[u8] = b"coarse_candles";
    pub const TRANSACTIONS_FROM: &[u8] = b"transactions_from";
    pub const INTERNAL_FROM: &[u8] = b"internal_transfers_from";
    pub const TOKENS_FROM: &[u8] = b"token_transfers_from";
}

/// Tuning knobs for [`Store::open`].
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// Size of the shared LRU block cache in bytes.
    pub block_cache_bytes: usize,
    /// Background compaction and flush threads.
    pub background_jobs: i32,
    /// Memtable size of each column family: written to disk when full.
    pub write_buffer_bytes: usize,
    /// All memtables together: past it the largest is written out, so
    /// memory stays bounded however many column families take writes.
    pub memtable_budget_bytes: usize,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            block_cache_bytes: 256 << 20,
            background_jobs: 4,
            write_buffer_bytes: 64 << 20,
            memtable_budget_bytes: 256 << 20,
        }
    }
}

/// The open database. Clones share it; all methods take `&self`.
#[derive(Clone)]
pub struct Store {
    // Declared before `db`: the pooled iterators read the database and are
    // dropped first (see `HistoryReaders`).
    history_readers: Arc<HistoryReaders>,
    pub(crate) db: Arc<DB>,
    path: PathBuf,
    indexed: Arc<IndexedRange>,
    /// The options of every point read, made once: RocksDB's own `get`
    /// makes and frees a set per call.
    point_reads: Arc<ReadOptions>,
    /// Latest balances read since the last index commit.
    latest: Arc<LatestCache>,
}

/// Balance-history iterators kept for reuse: opening a RocksDB iterator
/// costs more than the seek it serves, refreshing an idle one to the
/// latest state costs little. At most one per concurrent reader is kept;
/// an idle one holds on to the files it last read until it is refreshed,
/// as any open iterator does.
#[derive(Default)]
struct HistoryReaders {
    idle: std::sync::Mutex<Vec<HistoryIterator>>,
}

/// An iterator over the balance history, its borrow of the database
/// extended to `'static`. SAFETY (of that extension, in `take`): the
/// database is the `Arc<DB>` every `Store` holds beside its
/// `Arc<HistoryReaders>`; only `Store`s hold the readers, and a `Store`
/// drops them before its `db` (field order), so no iterator outlives the
/// database it reads.
type HistoryIterator = rocksdb::DBRawIteratorWithThreadMode<'static, DB>;

/// The indexed block range, kept in memory beside the database: every
/// query reads it, and only a committed index batch moves it.
struct IndexedRange {
    head: AtomicU64,
    start: AtomicU64,
}

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

/// What [`IndexedRange`] holds for "not recorded".
const UNSET: u64 = u64::MAX;

impl IndexedRange {
    fn load(slot: &AtomicU64) -> Option<u64> {
        Some(slot.load(Ordering::Acquire)).filter(|n| *n != UNSET)
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

fn column_family_options(name: &str, cache: &Cache, write_buffer_bytes: usize) -> Options {
    let mut table = BlockBasedOptions::default();
    table.set_block_cache(cache);
    table.set_cache_index_and_filter_blocks(true);
    table.set_pin_l0_filter_and_index_blocks_in_cache(true);
    // Point lookups dominate (balance by address); a bloom filter turns a miss
    // for a never-seen address into a memory check.
    table.set_bloom_filter(10.0, false);

    let mut opts = Options::default();
    opts.set_write_buffer_size(write_buffer_bytes);
    opts.set_level_compaction_dynamic_level_bytes(true);
    opts.set_compression_type(DBCompressionType::Lz4);
    opts.set_bottommost_compression_type(DBCompressionType::Zstd);
    if [
        cf::BALANCE_AT,
        cf::ADDRESS_TX,
        cf::ADDRESS_TRANSFER,
        cf::TOKEN_BALANCE,
    ]
    .contains(&name)
    {
        // History rows are always read within one address: prefix blooms let
        // `seek_for_prev(address ‖ block)` skip files that lack the address.
        opts.set_prefix_extractor(SliceTransform::create_fixed_prefix(ADDRESS_LEN));
        opts.set_memtable_prefix_bloom_ratio(0.1);
        table.set_whole_key_filtering(false);
    }
    opts.set_block_based_table_factory(&table);
    opts
}

impl Store {
    /// Opens (or creates) the database in `path`, checking its schema version.
    pub fn open(path: impl AsRef<Path>, options: &StoreOptions) -> Result<Self, StorageError> {
        let path = path.as_ref().to_path_buf();
        std::fs::create_dir_all(&path).map_err(|source| StorageError::DataDir {
            path: path.clone(),
            source,
        })?;
        probe_writable(&path)?;

        let cache = Cache::new_lru_cache(options.block_cache_bytes);
        let mut db_opts = Options::default();
        db_opts.create_if_missing(true);
        db_opts.create_missing_column_families(true);
        db_opts.set_max_background_jobs(options.background_jobs);
        db_opts.increase_parallelism(options.background_jobs);
        db_opts.set_bytes_per_sync(1 << 20);
        db_opts.set_keep_log_file_num(4);
        db_opts.set_db_write_buffer_size(options.memtable_budget_bytes);
        // A family written once (the schema version, a wallet) keeps every
        // WAL file after its entry alive until it flushes, and RocksDB's own
        // limit is four times all the write buffers: over thirty families,
        // gigabytes of log a restart replays, and no file ever obsolete to be
        // reused. Past the memtable budget the families holding the oldest
        // file are flushed instead.
        db_opts.set_max_total_wal_size(options.memtable_budget_bytes as u64);
        // Reused WAL files keep their size, so a synced write is one data
        // write: appending to a fresh file also rewrites its inode (size) on
        // every fdatasync.
        db_opts.set_recycle_log_file_num(4);
        let descriptors = cf::ALL.iter().map(|name| {
            ColumnFamilyDescriptor::new(
                *name,
                column_family_options(name, &cache, options.write_buffer_bytes),
            )
        });
        let db = DB::open_cf_descriptors(&db_opts, &path, descriptors)?;
        let store = Self {
            history_readers: Arc::default(),
            db: Arc::new(db),
            path,
            indexed: Arc::new(IndexedRange {
                head: AtomicU64::new(UNSET),
                start: AtomicU64::new(UNSET),
            }),
            point_reads: Arc::new(ReadOptions::default()),
            latest: Arc::default(),
        };
        store.check_schema()?;
        let head = store.cursor()?.map_or(UNSET, |cursor| cursor.number);
        let start = store.index_start()?.unwrap_or(UNSET);
        store.indexed.head.store(head, Ordering::Release);
        store.indexed.start.store(start, Ordering::Release);
        Ok(store)
    }

    fn check_schema(&self) -> Result<(), StorageError> {
        match self
            .db
            .get_cf(self.cf(cf::META), meta_key::SCHEMA_VERSION)?
        {
            Some(bytes) => {
                let found = u32::from_be_bytes(bytes.as_slice().try_into().map_err(|_| {
                    StorageError::Corrupt {
                        what: "schema version",
                        len: bytes.len(),
                    }
                })?);
                if found != SCHEMA_VERSION {
                    return Err(StorageError::UnknownSchema {
                        found,
                        supported: SCHEMA_VERSION,
                    });
                }
            }
            None => {
                self.db.put_cf_opt(
                    self.cf(cf::META),
                    meta_key::SCHEMA_VERSION,
                    SCHEMA_VERSION.to_be_bytes(),
                    &Self::synced(),
                )?;
            }
        }
        Ok(())
    }

    /// The directory the database lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn cf(&self, name: &str) -> &ColumnFamily {
        // Every name in `cf::ALL` is opened in `open`; a miss is a programming error.
        self.db
            .cf_handle(name)
            .unwrap_or_else(|| panic!("column family {name} was not opened"))
    }

    /// Point read of `key` in `cf`, decoded.
    pub(crate) fn read<T>(
        &self,
        cf: &ColumnFamily,
        key: impl AsRef<[u8]>,
        decode: impl FnOnce(&[u8]) -> Result<T, StorageError>,
    ) -> Result<Option<T>, StorageError> {
        self.db
            .get_pinned_cf_opt(cf, key, &self.point_reads)?
            .map(|b| decode(&b))
            .transpose()
    }

    pub(crate) fn meta(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(self.db.get_cf(self.cf(cf::META), key)?)
    }

    /// The schema version recorded on disk.
    pub fn schema_version(&self) -> Result<u32, StorageError> {
        Ok(self
            .meta(meta_key::SCHEMA_VERSION)?
            .map(|b| u32::from_be_bytes(b.as_slice().try_into().unwrap_or_default()))
            .unwrap_or(SCHEMA_VERSION))
    }

    /// The chain id the index was built from, if any block was indexed yet.
    pub fn chain_id(&self) -> Result<Option<u64>, StorageError> {
        self.meta(meta_key::CHAIN_ID)?
            .map(|b| codec::decode_block_number(&b))
            .transpose()
    }

    /// The genesis (or start block) hash the index was built from.
    pub fn genesis_hash(&self) -> Result<Option<B256>, StorageError> {
        self.meta(meta_key::GENESIS_HASH)?
            .map(|b| {
                if b.len() == codec::HASH_LEN {
                    Ok(B256::from_slice(&b))
                } else {
                    Err(StorageError::Corrupt {
                        what: "genesis hash",
                        len: b.len(),
                    })
                }
            })
            .transpose()
    }

    /// The first block the index covers (0 when it starts at genesis).
    pub fn index_start(&self) -> Result<Option<u64>, StorageError> {
        self.meta(meta_key::INDEX_START)?
            .map(|b| codec::decode_block_number(&b))
            .transpose()
    }

    /// The last fully indexed block.
    pub fn cursor(&self) -> Result<Option<Cursor>, StorageError> {
        self.meta(meta_key::CURSOR)?
            .map(|b| Cursor::decode(&b))
            .transpose()
    }

    /// The last fully indexed block, from memory (no read).
    pub fn indexed_head(&self) -> Option<u64> {
        IndexedRange::load(&self.indexed.head)
    }

    /// The first block the index covers, from memory (no read).
    pub fn indexed_start(&self) -> Option<u64> {
        IndexedRange::load(&self.indexed.start)
    }

    /// The latest indexed balance of `address`: from memory when the
    /// address was read since the last index commit.
    pub fn balance(&self, address: &Address) -> Result<Option<LatestBalance>, StorageError> {
        let generation = match self.latest.get(address) {
            Ok(latest) => return Ok(latest),
            Err(generation) => generation,
        };
        let latest = self.read(
            self.cf(cf::BALANCE),
            address.as_slice(),
            LatestBalance::decode,
        )?;
        self.latest.fill(address, generation, latest);
        Ok(latest)
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
        let iter = self.db.raw_iterator_cf_opt(self.cf(cf::BALANCE_AT), read);
        // SAFETY: see `HistoryIterator`: the readers that keep this iterator
        // are dropped before the database it borrows.
        Ok(unsafe {
            std::mem::transmute::<rocksdb::DBRawIteratorWithThreadMode<'_, DB>, HistoryIterator>(
                iter,
            )
        })
    }

    /// The stored record of block `number`.
    pub fn block(&self, number: u64) -> Result<Option<BlockRecord>, StorageError> {
        self.read(
            self.cf(cf::BLOCK),
            encode_block_number(number),
            BlockRecord::decode,
        )
    }

    /// Every `(address, block, wei)` history row, in key order. For checks and tests.
    pub fn history(&self) -> impl Iterator<Item = Result<(Address, u64, U256), StorageError>> + '_ {
        self.db
            .iterator_cf(
                self.cf(cf::BALANCE_AT),
                IteratorMode::From(&[], Direction::Forward),
            )
            .map(|item| {
                let (key, value) = item?;
                let (address, block) = decode_balance_at_key(&key)?;
                Ok((address, block, codec::decode_wei(&value)?))
            })
    }

    /// Starts an atomic batch of index writes.
    pub fn index_batch(&self) -> IndexBatch {
        IndexBatch {
            store: self.clone(),
            batch: WriteBatch::default(),
            head: None,
            start: None,
        }
    }

    pub(crate) fn synced() -> WriteOptions {
        let mut opts = WriteOptions::default();
        opts.set_sync(true);
        opts
    }

    /// Creates an account with the next free id, durably.
    pub fn create_account(
        &self,
        label: &str,
        created_ms: u64,
    ) -> Result<AccountRecord, StorageError> {
        // One writer allocates ids: account creation is rare and serialised here.
        static ALLOCATION: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _guard = ALLOCATION.lock().unwrap_or_else(|e| e.into_inner());
        let id = self
            .meta(meta_key::NEXT_ACCOUNT)?
            .map(|b| codec::decode_block_number(&b))
            .transpose()?
            .unwrap_or(1);
        let record = AccountRecord {
            id,
            label: label.to_owned(),
            created_ms,
        };
        let mut batch = WriteBatch::default();
        batch.put_cf(self.cf(cf::ACCOUNT), id.to_be_bytes(), record.encode());
        batch.put_cf(
            self.cf(cf::META),
            meta_key::NEXT_ACCOUNT,
            (id + 1).to_be_bytes(),
        );
        self.db.write_opt(batch, &Self::synced())?;
        Ok(record)
    }

    /// The account with `id`.
    pub fn account(&self, id: u64) -> Result<Option<AccountRecord>, StorageError> {
        self.read(
            self.cf(cf::ACCOUNT),
            id.to_be_bytes(),
            AccountRecord::decode,
        )
    }

    /// Every account, by id.
    pub fn accounts(&self) -> Result<Vec<AccountRecord>, StorageError> {
        self.db
            .iterator_cf(self.cf(cf::ACCOUNT), IteratorMode::Start)
            .map(|item| AccountRecord::decode(&item?.1))
            .collect()
    }

    /// Writes (creates or replaces) an API key record, durably.
    pub fn put_api_key(&self, record: &ApiKeyRecord) -> Result<(), StorageError> {
        self.db.put_cf_opt(
            self.cf(cf::API_KEY),
            record.id.as_bytes(),
            record.encode(),
            &Self::synced(),
        )?;
        Ok(())
    }

    /// The API key record with `id`.
    pub fn api_key(&self, id: &str) -> Result<Option<ApiKeyRecord>, StorageError> {
        self.read(self.cf(cf::API_KEY), id.as_bytes(), ApiKeyRecord::decode)
    }

    /// Every API key record, revoked ones included.
    pub fn api_keys(&self) -> Result<Vec<ApiKeyRecord>, StorageError> {
        self.db
            .iterator_cf(self.cf(cf::API_KEY), IteratorMode::Start)
            .map(|item| ApiKeyRecord::decode(&item?.1))
            .collect()
    }

    /// The exchange's command log in sequence order: `(sequence, command)`.
    pub fn commands(
        &self,
    ) -> impl Iterator<Item = Result<(u64, CommandRecord), StorageError>> + '_ {
        self.db
            .iterator_cf(self.cf(cf::COMMAND_LOG), IteratorMode::Start)
            .map(|item| {
                let (key, value) = item?;
                Ok((
                    codec::decode_block_number(&key)?,
                    CommandRecord::decode(&value)?,
                ))
            })
    }

    /// Compacts every column family fully: the size on disk the data
    /// settles at (benchmarks, maintenance).
    pub fn compact(&self) {
        for name in cf::ALL {
            self.db
                .compact_range_cf(self.cf(name), None::<&[u8]>, None::<&[u8]>);
        }
    }

    /// Flushes memtables and the WAL to disk; used on graceful shutdown.
    pub fn flush(&self) -> Result<(), StorageError> {
        for name in cf::ALL {
            self.db.flush_cf(self.cf(name))?;
        }
        self.db.flush_wal(true)?;
        Ok(())
    }
}

fn probe_writable(path: &Path) -> Result<(), StorageError> {
    let probe = path.join(".weiport-write-probe");
    std::fs::write(&probe, b"ok")
        .and_then(|()| std::fs::remove_file(&probe))
        .map_err(|source| StorageError::DataDir {
            path: path.to_path_buf(),
            source,
        })
}

/// A set of index writes applied all together or not at all. Owns a handle
/// to the store, so it can be committed on another thread.
pub struct IndexBatch {
    pub(crate) store: Store,
    pub(crate) batch: WriteBatch,
    /// The cursor and start block this batch records, published to
    /// [`Store::indexed_head`] and [`Store::indexed_start`] once committed.
    head: Option<u64>,
    start: Option<u64>,
}

impl IndexBatch {
    /// Records that `address` holds `wei` after `block`: updates the latest
    /// balance and appends a history row.
    pub fn set_balance(&mut self, address: &Address, block: u64, wei: &U256) {
        let latest = LatestBalance { wei: *wei, block };
        self.batch.put_cf(
            self.store.cf(cf::BALANCE),
            address.as_slice(),
            latest.encode(),
        );
        self.batch.put_cf(
            self.store.cf(cf::BALANCE_AT),
            balance_at_key(address, block),
            encode_wei(wei),
        );
    }

    /// Stores block `number`'s record.
    pub fn put_block(&mut self, number: u64, record: &BlockRecord) {
        self.batch.put_cf(
            self.store.cf(cf::BLOCK),
            encode_block_number(number),
            record.encode(),
        );
    }

    /// Removes block `number`'s record.
    pub fn delete_block(&mut self, number: u64) {
        self.batch
            .delete_cf(self.store.cf(cf::BLOCK), encode_block_number(number));
    }

    /// Moves the indexer cursor.
    pub fn set_cursor(&mut self, cursor: &Cursor) {
        self.batch
            .put_cf(self.store.cf(cf::META), meta_key::CURSOR, cursor.encode());
        self.head = Some(cursor.number);
    }

    /// Records the chain the index belongs to and the block it starts at.
    pub fn set_chain(&mut self, chain_id: u64, genesis_hash: &B256, start_block: u64) {
        let meta = self.store.cf(cf::META);
        self.batch
            .put_cf(meta, meta_key::CHAIN_ID, encode_block_number(chain_id));
        self.batch
            .put_cf(meta, meta_key::GENESIS_HASH, genesis_hash.as_slice());
        self.batch.put_cf(
            meta,
            meta_key::INDEX_START,
            encode_block_number(start_block),
        );
        self.start = Some(start_block);
    }

    /// Undoes every change to `address` after block `keep_through`: deletes its
    /// newer history rows and restores its latest balance from history. Reads
    /// committed data, so call it before writing anything else for `address`
    /// in this batch.
    pub fn rewind_address(
        &mut self,
        address: &Address,
        keep_through: u64,
    ) -> Result<(), StorageError> {
        let history = self.store.cf(cf::BALANCE_AT);
        let mut read = ReadOptions::default();
        read.set_prefix_same_as_start(true);
        let mut iter = self.store.db.raw_iterator_cf_opt(history, read);
        iter.seek(balance_at_key(address, keep_through.saturating_add(1)));
        while iter.valid() {
            let Some(key) = iter.key() else { break };
            let (found, _) = decode_balance_at_key(key)?;
            if found != *address {
                break;
            }
            self.batch.delete_cf(history, key);
            iter.next();
        }
        iter.status()?;
        match self.store.history_at_or_before(address, keep_through)? {
            Some((block, wei)) => self.batch.put_cf(
                self.store.cf(cf::BALANCE),
                address.as_slice(),
                LatestBalance { wei, block }.encode(),
            ),
            None => self
                .batch
                .delete_cf(self.store.cf(cf::BALANCE), address.as_slice()),
        }
        Ok(())
    }

    /// Number of operations queued.
    pub fn len(&self) -> usize {
        self.batch.len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.batch.is_empty()
    }

    /// Writes the batch atomically with the WAL synced, so a crash after this
    /// returns cannot lose it.
    pub fn commit(self) -> Result<(), StorageError> {
        self.store.db.write_opt(self.batch, &Store::synced())?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn open(dir: &tempfile::TempDir) -> Store {
        Store::open(dir.path(), &StoreOptions::default()).unwrap()
    }

    /// Bytes of WAL files in the store's directory.
    fn wal_bytes(dir: &tempfile::TempDir) -> u64 {
        std::fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap())
            .filter(|entry| entry.path().extension().is_some_and(|ext| ext == "log"))
            // A file the background purge removed meanwhile counts nothing.
            .filter_map(|entry| entry.metadata().ok())
            .map(|metadata| metadata.len())
            .sum()
    }

    #[test]
    fn the_log_stays_within_the_memtable_budget_while_a_family_sits_unflushed() {
        let dir = tempfile::tempdir().unwrap();
        let budget = 8 << 20;
        let options = StoreOptions {
            memtable_budget_bytes: budget,
            write_buffer_bytes: 1 << 20,
            ..StoreOptions::default()
        };
        let store = Store::open(dir.path(), &options).unwrap();
        // `meta` got its schema version on open and is not written again;
        // balances take 48 MiB, six budgets, in synced batches of 1 MiB.
        let value = [7u8; 1024];
        for round in 0u32..48 {
            let mut batch = WriteBatch::default();
            for row in 0u32..1024 {
                let key = [round.to_be_bytes(), row.to_be_bytes()].concat();
                batch.put_cf(store.cf(cf::BALANCE), key, value);
            }
            store.db.write_opt(batch, &Store::synced()).unwrap();
        }
        // Flushes and the removal of the files they free run in the
        // background: on a busy machine they may trail the last write.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut live = wal_bytes(&dir);
        while live > 2 * budget as u64 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(50));
            live = wal_bytes(&dir);
        }
        assert!(
            live <= 2 * budget as u64,
            "{live} bytes of WAL for a budget of {budget}"
        );
        drop(store);
        let store = Store::open(dir.path(), &options).unwrap();
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        let last = [47u32.to_be_bytes(), 1023u32.to_be_bytes()].concat();
        assert_eq!(
            store
                .db
                .get_cf(store.cf(cf::BALANCE), last)
                .unwrap()
                .as_deref(),
            Some(&value[..])
        );
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
    fn fresh_store_records_schema_version_and_reopens() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(open(&dir).schema_version().unwrap(), SCHEMA_VERSION);
        assert_eq!(open(&dir).schema_version().unwrap(), SCHEMA_VERSION);
    }

    #[test]
    fn unknown_schema_version_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = open(&dir);
            store
                .db
                .put_cf(
                    store.cf(cf::META),
                    meta_key::SCHEMA_VERSION,
                    99u32.to_be_bytes(),
                )
                .unwrap();
        }
        let err = Store::open(dir.path(), &StoreOptions::default()).unwrap_err();
        assert!(
            matches!(
                err,
                StorageError::UnknownSchema {
                    found: 99,
                    supported: SCHEMA_VERSION
                }
            ),
            "{err}"
        );
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

    #[test]
    fn accounts_get_increasing_ids_and_keys_persist() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir);
        let first = store.create_account("a", 1).unwrap();
        let second = store.create_account("b", 2).unwrap();
        assert_eq!((first.id, second.id), (1, 2));
        let key = ApiKeyRecord {
            id: "x".repeat(64),
            account: second.id,
            kind: 1,
            material: vec![7; 32],
            previous: None,
            permissions: 1,
            allowed_ips: vec![],
            tier: "default".into(),
            label: String::new(),
            created_ms: 3,
            revoked_ms: None,
        };
        store.put_api_key(&key).unwrap();
        drop(store);
        let store = open(&dir);
        assert_eq!(store.accounts().unwrap(), vec![first, second.clone()]);
        assert_eq!(store.account(2).unwrap(), Some(second));
        assert_eq!(store.api_key(&key.id).unwrap(), Some(key.clone()));
        assert_eq!(store.api_key("absent").unwrap(), None);
        assert_eq!(store.api_keys().unwrap(), vec![key]);
        assert_eq!(
            store.create_account("c", 4).unwrap().id,
            3,
            "the counter survives a reopen"
        );
    }

    #[test]
    fn unwritable_data_dir_is_a_clear_error() {
        let err =
            Store::open("/proc/weiport-cannot-write-here", &StoreOptions::default()).unwrap_err();
        assert!(matches!(err, StorageError::DataDir { .. }), "{err}");
    }
}
