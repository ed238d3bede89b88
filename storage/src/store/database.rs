//! The open RocksDB database as the rest of `storage/` reaches it, and the
//! engine figures an operator watches.

use std::path::Path;

use rocksdb::{Cache, ColumnFamily, DB, Options, ReadOptions, WriteOptions};

/// The database as the rest of `storage/` reaches it: every read and write
/// names a column family by the handle [`Store::cf`] gives, which refuses
/// the balance families, so only this module and `balances` (which owns
/// their writes) can touch them. The database itself is this module's.
pub(crate) struct Database(pub(in crate::store) DB);

impl Database {
    pub(crate) fn get_cf(
        &self,
        family: &ColumnFamily,
        key: impl AsRef<[u8]>,
    ) -> Result<Option<Vec<u8>>, rocksdb::Error> {
        self.0.get_cf(family, key)
    }

    pub(crate) fn batched_multi_get_cf<'a, K, I>(
        &self,
        family: &ColumnFamily,
        keys: I,
        sorted_input: bool,
    ) -> Vec<Result<Option<rocksdb::DBPinnableSlice<'_>>, rocksdb::Error>>
    where
        K: AsRef<[u8]> + 'a + ?Sized,
        I: IntoIterator<Item = &'a K>,
    {
        self.0.batched_multi_get_cf(family, keys, sorted_input)
    }

    pub(crate) fn put_cf_opt(
        &self,
        family: &ColumnFamily,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        options: &WriteOptions,
    ) -> Result<(), rocksdb::Error> {
        self.0.put_cf_opt(family, key, value, options)
    }

    pub(crate) fn delete_cf(
        &self,
        family: &ColumnFamily,
        key: impl AsRef<[u8]>,
    ) -> Result<(), rocksdb::Error> {
        self.0.delete_cf(family, key)
    }

    pub(crate) fn iterator_cf(
        &self,
        family: &ColumnFamily,
        mode: rocksdb::IteratorMode<'_>,
    ) -> rocksdb::DBIteratorWithThreadMode<'_, DB> {
        self.0.iterator_cf(family, mode)
    }

    pub(crate) fn raw_iterator_cf(
        &self,
        family: &ColumnFamily,
    ) -> rocksdb::DBRawIteratorWithThreadMode<'_, DB> {
        self.0.raw_iterator_cf(family)
    }

    pub(crate) fn raw_iterator_cf_opt(
        &self,
        family: &ColumnFamily,
        read: ReadOptions,
    ) -> rocksdb::DBRawIteratorWithThreadMode<'_, DB> {
        self.0.raw_iterator_cf_opt(family, read)
    }

    /// Writes `batch`, whose rows name families by [`Store::cf`]'s handles.
    pub(crate) fn write_opt(
        &self,
        batch: rocksdb::WriteBatch,
        options: &WriteOptions,
    ) -> Result<(), rocksdb::Error> {
        self.0.write_opt(batch, options)
    }

    /// A consistent copy of every family in `path` (hard links where it can).
    pub(crate) fn checkpoint(&self, path: &Path) -> Result<(), rocksdb::Error> {
        rocksdb::checkpoint::Checkpoint::new(&self.0)?.create_checkpoint(path)
    }
}

/// What the figures of the database engine are read from.
pub(crate) struct Engine {
    pub(crate) options: Options,
    pub(crate) cache: Cache,
}

/// The database engine's figures an operator watches (see [`Store::figures`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EngineFigures {
    /// Estimated live data of each column family, bytes, by name on disk.
    pub live_bytes: Vec<(String, u64)>,
    /// Bytes compaction still has to rewrite to bring every level in shape,
    /// all families together: when it grows, writes are slowed, then stopped.
    pub pending_compaction_bytes: u64,
    /// Whether writes are stopped now (too many level-0 files, memtables or
    /// pending compaction bytes).
    pub writes_stopped: bool,
    /// The rate writes are held to while slowed, bytes a second (0: not slowed).
    pub delayed_write_rate: u64,
    /// Time writers have waited on stalls since the store opened, µs.
    pub stall_micros: u64,
    /// Block cache lookups answered from memory since the store opened.
    pub block_cache_hits: u64,
    /// Block cache lookups that read a file since the store opened.
    pub block_cache_misses: u64,
    /// Bytes the block cache holds now.
    pub block_cache_bytes: u64,
}
