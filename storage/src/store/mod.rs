//! The open database: its directory, options and column families, the
//! schema check, the metadata every part reads (chain, cursor, index
//! start), and maintenance. The other modules each add their own reads and
//! writes to [`Store`]; balances and the index batch live in [`balances`].

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use alloy_primitives::B256;
use rocksdb::{
    BlockBasedOptions, Cache, ColumnFamily, ColumnFamilyDescriptor, DB, DBCompressionType, Options,
    ReadOptions, SliceTransform, WriteOptions,
};

use crate::codec::{self, ADDRESS_LEN, encode_block_number};
use crate::{BlockRecord, Cursor, SCHEMA_VERSION, StorageError, cf};

mod balances;
mod database;
mod latest;
mod sorted;

use latest::LatestCache;

pub use balances::IndexBatch;
pub use database::EngineFigures;
pub(crate) use database::{Database, Engine};

pub(crate) mod meta_key {
    pub(crate) const SCHEMA_VERSION: &[u8] = b"schema_version";
    /// Where builds before the snapshot file kept the exchange's snapshot
    /// (removed when a new one is written).
    pub(crate) const EXCHANGE_SNAPSHOT: &[u8] = b"exchange_snapshot";
    pub(crate) const CHAIN_ID: &[u8] = b"chain_id";
    pub(crate) const GENESIS_HASH: &[u8] = b"genesis_hash";
    pub(crate) const CURSOR: &[u8] = b"index_cursor";
    pub(crate) const INDEX_START: &[u8] = b"index_start";
    pub(crate) const NEXT_ACCOUNT: &[u8] = b"next_account_id";
    pub(crate) const EXCHANGE_HISTORY: &[u8] = b"exchange_history_sequence";
    pub(crate) const COARSE_CANDLES: &[u8] = b"coarse_candles";
    pub(crate) const TRANSACTIONS_FROM: &[u8] = b"transactions_from";
    pub(crate) const INTERNAL_FROM: &[u8] = b"internal_transfers_from";
    pub(crate) const TOKENS_FROM: &[u8] = b"token_transfers_from";
    pub(crate) const NFTS_FROM: &[u8] = b"nft_transfers_from";
    pub(crate) const BLOCKS_FROM: &[u8] = b"block_rows_from";
    pub(crate) const TOKEN_HOLDERS_BUILT: &[u8] = b"token_holders_built";
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
    /// Chains indexed beside the first, by chain id: each gets its own
    /// copy of the per-chain families ([`cf::PER_CHAIN`]), reached through
    /// [`Store::chain`].
    pub further_chains: Vec<u64>,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            block_cache_bytes: 256 << 20,
            background_jobs: 4,
            write_buffer_bytes: 16 << 20,
            memtable_budget_bytes: 256 << 20,
            further_chains: Vec::new(),
        }
    }
}

/// The open database. Clones share it; all methods take `&self`.
#[derive(Clone)]
pub struct Store {
    // Declared before `db`: the pooled iterators read the database and are
    // dropped first (see `balances::HistoryReaders`).
    history_readers: Arc<balances::HistoryReaders>,
    /// The database. Its handles come from [`Store::cf`], which refuses the
    /// balance families: a balance row written other than through
    /// [`IndexBatch::commit`] would leave the latest-balance table stale
    /// (see `latest.rs`).
    pub(crate) db: Arc<Database>,
    path: PathBuf,
    indexed: Arc<IndexedRange>,
    /// The options of every point read, made once: RocksDB's own `get`
    /// makes and frees a set per call.
    point_reads: Arc<ReadOptions>,
    /// Latest balances read since the last index commit; exact only while
    /// [`IndexBatch::commit`] is the one way a balance is written.
    latest: Arc<LatestCache>,
    /// For a further chain's store: where its per-chain families live.
    scope: Option<Arc<ChainScope>>,
    /// Every family opened, by its name on disk (maintenance walks them all).
    families: Arc<Vec<String>>,
    /// The further chains' stores (empty in a further chain's own store).
    further: Arc<Vec<Store>>,
    /// The database's options, whose statistics count cache hits and stalls.
    engine: Arc<Engine>,
}

/// A further chain's families: each logical per-chain name and its copy.
struct ChainScope {
    chain_id: u64,
    names: Vec<(&'static str, String)>,
}

/// The indexed block range, kept in memory beside the database: every
/// query reads it, and only a committed index batch moves it.
struct IndexedRange {
    head: AtomicU64,
    start: AtomicU64,
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
        f.debug_struct("Store")
            .field("path", &self.path)
            .field("chain", &self.scope.as_ref().map(|s| s.chain_id))
            .finish()
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
        cf::TOKEN_HOLDER,
        cf::NFT_HOLDING,
    ]
    .contains(&cf::base(name))
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
        // Counters only (cache hits, stall time): timers and histograms cost
        // a clock read per operation, counters an add.
        db_opts.enable_statistics();
        db_opts.set_statistics_level(rocksdb::statistics::StatsLevel::ExceptHistogramOrTimers);
        // RocksDB opens only with every family on disk named: those of
        // chains no longer configured stay open (and untouched).
        let mut families: Vec<String> = cf::ALL.iter().map(|name| (*name).to_owned()).collect();
        let on_disk = DB::list_cf(&db_opts, &path).unwrap_or_default();
        let configured = options
            .further_chains
            .iter()
            .flat_map(|id| cf::PER_CHAIN.iter().map(|family| cf::of_chain(family, *id)));
        for name in on_disk.into_iter().chain(configured) {
            if !families.contains(&name) {
                families.push(name);
            }
        }
        let descriptors = families.iter().map(|name| {
            ColumnFamilyDescriptor::new(
                name,
                column_family_options(name, &cache, options.write_buffer_bytes),
            )
        });
        let db = Arc::new(Database(DB::open_cf_descriptors(
            &db_opts,
            &path,
            descriptors,
        )?));
        let families = Arc::new(families);
        let engine = Arc::new(Engine {
            options: db_opts,
            cache,
        });
        let blank = |scope: Option<Arc<ChainScope>>| Self {
            history_readers: Arc::default(),
            db: db.clone(),
            path: path.clone(),
            indexed: Arc::new(IndexedRange {
                head: AtomicU64::new(UNSET),
                start: AtomicU64::new(UNSET),
            }),
            point_reads: Arc::new(ReadOptions::default()),
            latest: Arc::default(),
            scope,
            families: families.clone(),
            further: Arc::default(),
            engine: engine.clone(),
        };
        let mut further = Vec::new();
        for &chain_id in &options.further_chains {
            let names = cf::PER_CHAIN
                .iter()
                .map(|family| (*family, cf::of_chain(family, chain_id)))
                .collect();
            let store = blank(Some(Arc::new(ChainScope { chain_id, names })));
            store.load_indexed_range()?;
            store.build_token_holders()?;
            further.push(store);
        }
        let mut store = blank(None);
        store.further = Arc::new(further);
        store.check_schema()?;
        store.load_indexed_range()?;
        store.build_token_holders()?;
        Ok(store)
    }

    fn load_indexed_range(&self) -> Result<(), StorageError> {
        let head = self.cursor()?.map_or(UNSET, |cursor| cursor.number);
        let start = self.index_start()?.unwrap_or(UNSET);
        self.indexed.head.store(head, Ordering::Release);
        self.indexed.start.store(start, Ordering::Release);
        Ok(())
    }

    /// The store of further chain `chain_id` (one of
    /// [`StoreOptions::further_chains`]): its own index, cursor and deposits
    /// in its own families, every shared family (accounts, keys, the
    /// exchange, deposit addresses) the same as this one's.
    pub fn chain(&self, chain_id: u64) -> Option<Store> {
        self.further
            .iter()
            .find(|store| store.scope.as_ref().is_some_and(|s| s.chain_id == chain_id))
            .cloned()
    }

    fn check_schema(&self) -> Result<(), StorageError> {
        match self
            .db
            .0
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
                self.db.0.put_cf_opt(
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

    /// The handle of column family `name`, for any family but the
    /// balances'. Those are written only by [`IndexBatch`], whose commit
    /// moves the latest-balance table's generation (`latest.rs`); a handle
    /// to them here would let any module write a balance that the table
    /// never hears of, so asking for one is a programming error.
    pub(crate) fn cf(&self, name: &str) -> &ColumnFamily {
        assert!(
            name != cf::BALANCE && name != cf::BALANCE_AT,
            "the balance families are written only through IndexBatch::commit"
        );
        self.handle(name)
    }

    /// The handle of any column family, the balances' included: only this
    /// module and `balances` (which owns their writes) ask for it.
    pub(in crate::store) fn handle(&self, name: &str) -> &ColumnFamily {
        let name = self.resolve(name);
        // Every name in `cf::ALL` and every configured chain's copies are
        // opened in `open`; a miss is a programming error.
        self.db
            .0
            .cf_handle(name)
            .unwrap_or_else(|| panic!("column family {name} was not opened"))
    }

    /// Every family opened, every chain's.
    fn on_disk(&self) -> impl Iterator<Item = &ColumnFamily> {
        self.families
            .iter()
            .filter_map(|name| self.db.0.cf_handle(name))
    }

    /// The name on disk of family `name` for this store's chain.
    fn resolve<'a>(&'a self, name: &'a str) -> &'a str {
        match &self.scope {
            Some(scope) => scope
                .names
                .iter()
                .find(|(logical, _)| *logical == name)
                .map_or(name, |(_, on_disk)| on_disk.as_str()),
            None if name == cf::CHAIN_META => cf::META,
            None if name == cf::CHAIN_WALLET => cf::WALLET,
            None => name,
        }
    }

    /// Point read of `key` in `cf`, decoded.
    pub(crate) fn read<T>(
        &self,
        cf: &ColumnFamily,
        key: impl AsRef<[u8]>,
        decode: impl FnOnce(&[u8]) -> Result<T, StorageError>,
    ) -> Result<Option<T>, StorageError> {
        self.db
            .0
            .get_pinned_cf_opt(cf, key, &self.point_reads)?
            .map(|b| decode(&b))
            .transpose()
    }

    pub(crate) fn meta(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(self.db.0.get_cf(self.cf(cf::META), key)?)
    }

    /// A key of this store's chain's own metadata.
    pub(crate) fn chain_meta(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(self.db.0.get_cf(self.cf(cf::CHAIN_META), key)?)
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
        self.chain_meta(meta_key::CHAIN_ID)?
            .map(|b| codec::decode_block_number(&b))
            .transpose()
    }

    /// The genesis (or start block) hash the index was built from.
    pub fn genesis_hash(&self) -> Result<Option<B256>, StorageError> {
        self.chain_meta(meta_key::GENESIS_HASH)?
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
        self.chain_meta(meta_key::INDEX_START)?
            .map(|b| codec::decode_block_number(&b))
            .transpose()
    }

    /// The last fully indexed block.
    pub fn cursor(&self) -> Result<Option<Cursor>, StorageError> {
        self.chain_meta(meta_key::CURSOR)?
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

    /// The stored record of block `number`.
    pub fn block(&self, number: u64) -> Result<Option<BlockRecord>, StorageError> {
        self.read(
            self.cf(cf::BLOCK),
            encode_block_number(number),
            BlockRecord::decode,
        )
    }

    pub(crate) fn synced() -> WriteOptions {
        let mut opts = WriteOptions::default();
        opts.set_sync(true);
        opts
    }

    /// Compacts every column family fully: the size on disk the data
    /// settles at (benchmarks, maintenance).
    pub fn compact(&self) {
        for family in self.on_disk() {
            self.db
                .0
                .compact_range_cf(family, None::<&[u8]>, None::<&[u8]>);
        }
    }

    /// Bytes of table files each family holds on disk, largest first
    /// (benchmarks, capacity planning).
    pub fn family_sizes(&self) -> Vec<(String, u64)> {
        let mut sizes: Vec<(String, u64)> = self
            .families
            .iter()
            .filter_map(|name| {
                let family = self.db.0.cf_handle(name)?;
                let bytes = self
                    .db
                    .0
                    .property_int_value_cf(family, "rocksdb.total-sst-files-size")
                    .ok()
                    .flatten()?;
                Some((name.clone(), bytes))
            })
            .collect();
        sizes.sort_by_key(|(_, bytes)| std::cmp::Reverse(*bytes));
        sizes
    }

    /// The engine's figures now: live data by family, compaction debt, write
    /// stalls and the block cache (metrics).
    pub fn figures(&self) -> EngineFigures {
        use rocksdb::statistics::Ticker;
        let property = |family: &ColumnFamily, name: &str| {
            self.db
                .0
                .property_int_value_cf(family, name)
                .ok()
                .flatten()
                .unwrap_or(0)
        };
        let mut figures = EngineFigures::default();
        for name in self.families.iter() {
            let Some(family) = self.db.0.cf_handle(name) else {
                continue;
            };
            figures.live_bytes.push((
                name.clone(),
                property(family, "rocksdb.estimate-live-data-size"),
            ));
            figures.pending_compaction_bytes +=
                property(family, "rocksdb.estimate-pending-compaction-bytes");
        }
        let db_property = |name: &str| {
            self.db
                .0
                .property_int_value(name)
                .ok()
                .flatten()
                .unwrap_or(0)
        };
        figures.writes_stopped = db_property("rocksdb.is-write-stopped") != 0;
        figures.delayed_write_rate = db_property("rocksdb.actual-delayed-write-rate");
        let options = &self.engine.options;
        figures.stall_micros = options.get_ticker_count(Ticker::StallMicros);
        figures.block_cache_hits = options.get_ticker_count(Ticker::BlockCacheHit);
        figures.block_cache_misses = options.get_ticker_count(Ticker::BlockCacheMiss);
        figures.block_cache_bytes = self.engine.cache.get_usage() as u64;
        figures
    }

    /// Flushes memtables and the WAL to disk; used on graceful shutdown.
    pub fn flush(&self) -> Result<(), StorageError> {
        for family in self.on_disk() {
            self.db.0.flush_cf(family)?;
        }
        self.db.0.flush_wal(true)?;
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

#[cfg(test)]
mod tests {
    use rocksdb::WriteBatch;

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
    fn the_engine_reports_live_data_and_block_cache_use() {
        use alloy_primitives::{Address, U256};
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir);
        let mut batch = store.index_batch();
        for n in 0..2_000u64 {
            let mut bytes = [0u8; 20];
            bytes[..8].copy_from_slice(&n.to_be_bytes());
            batch.set_balance(&Address::from(bytes), n, &U256::from(n));
        }
        batch.commit().unwrap();
        store.flush().unwrap();
        store.compact();
        let before = store.figures();
        for _ in 0..2 {
            assert_eq!(
                store.balance_at(&Address::ZERO, 10).unwrap(),
                Some(U256::ZERO)
            );
        }
        let after = store.figures();
        let live = |figures: &EngineFigures, family: &str| {
            figures
                .live_bytes
                .iter()
                .find(|(name, _)| name == family)
                .map(|(_, bytes)| *bytes)
        };
        assert!(live(&after, cf::BALANCE_AT).unwrap() > 20_000, "{after:?}");
        assert_eq!(live(&after, cf::COMMAND_LOG), Some(0), "{after:?}");
        let lookups = |f: &EngineFigures| f.block_cache_hits + f.block_cache_misses;
        assert!(lookups(&after) > lookups(&before), "{before:?} {after:?}");
        assert!(
            after.block_cache_hits > before.block_cache_hits,
            "the second read is cached"
        );
        assert!(after.block_cache_bytes > 0);
        assert!(!after.writes_stopped);
        assert_eq!(after.delayed_write_rate, 0);
    }

    #[test]
    fn fresh_store_records_schema_version_and_reopens() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(open(&dir).schema_version().unwrap(), SCHEMA_VERSION);
        assert_eq!(open(&dir).schema_version().unwrap(), SCHEMA_VERSION);
    }

    #[test]
    fn each_chain_keeps_its_own_index_and_shares_the_rest() {
        use alloy_primitives::{Address, U256};
        let dir = tempfile::tempdir().unwrap();
        let options = StoreOptions {
            further_chains: vec![42],
            ..StoreOptions::default()
        };
        let first = Store::open(dir.path(), &options).unwrap();
        let second = first.chain(42).unwrap();
        assert!(first.chain(7).is_none());
        let holder = Address::repeat_byte(1);
        let write = |store: &Store, chain: u64, block: u64, wei: u64| {
            let mut batch = store.index_batch();
            batch.set_chain(chain, &B256::repeat_byte(chain as u8), 0);
            batch.set_balance(&holder, block, &U256::from(wei));
            batch.set_cursor(&Cursor {
                number: block,
                hash: B256::ZERO,
            });
            batch.commit().unwrap();
        };
        write(&first, 1, 5, 100);
        write(&second, 42, 9, 7);
        let read = |store: &Store| {
            (
                store.chain_id().unwrap(),
                store.indexed_head(),
                store.balance(&holder).unwrap().map(|b| b.wei),
            )
        };
        assert_eq!(read(&first), (Some(1), Some(5), Some(U256::from(100))));
        assert_eq!(read(&second), (Some(42), Some(9), Some(U256::from(7))));
        second.put_deposit_address(3, &holder).unwrap();
        assert_eq!(first.deposit_address(3).unwrap(), Some(holder));
        second.put_swept_through(&holder, 4).unwrap();
        assert_eq!(first.swept_through(&holder).unwrap(), None);
        drop((first, second));

        // Reopened without the chain configured: its families stay, apart.
        let first = open(&dir);
        assert_eq!(read(&first), (Some(1), Some(5), Some(U256::from(100))));
        drop(first);
        let second = Store::open(dir.path(), &options)
            .unwrap()
            .chain(42)
            .unwrap();
        assert_eq!(read(&second), (Some(42), Some(9), Some(U256::from(7))));
        assert_eq!(second.swept_through(&holder).unwrap(), Some(4));
    }

    #[test]
    fn unknown_schema_version_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = open(&dir);
            store
                .db
                .0
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
        // transaction rows take 48 MiB, six budgets, in synced batches of 1 MiB.
        let value = [7u8; 1024];
        for round in 0u32..48 {
            let mut batch = WriteBatch::default();
            for row in 0u32..1024 {
                let key = [round.to_be_bytes(), row.to_be_bytes()].concat();
                batch.put_cf(store.cf(cf::TX), key, value);
            }
            store.db.0.write_opt(batch, &Store::synced()).unwrap();
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
                .0
                .get_cf(store.cf(cf::TX), last)
                .unwrap()
                .as_deref(),
            Some(&value[..])
        );
    }

    #[test]
    #[should_panic(expected = "written only through IndexBatch::commit")]
    fn the_balance_families_are_handed_out_to_the_index_batch_only() {
        let dir = tempfile::tempdir().unwrap();
        let _ = open(&dir).cf(cf::BALANCE_AT);
    }

    #[test]
    fn unwritable_data_dir_is_a_clear_error() {
        let err =
            Store::open("/proc/weiport-cannot-write-here", &StoreOptions::default()).unwrap_err();
        assert!(matches!(err, StorageError::DataDir { .. }), "{err}");
    }
}
