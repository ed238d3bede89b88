//! Index writes queued in arrival order and handed to RocksDB sorted by
//! family and key. A memtable is a skip list: keys inserted in order each
//! search from where the last one ended, along nodes still in cache, where
//! scattered keys (addresses, hashes) each walk it from the top through
//! cold memory. Measured in BENCHMARKS.md ("The indexer at mainnet scale").

use rocksdb::{ColumnFamily, WriteBatch};

/// One queued write: its family, and where its key and value lie in the
/// shared buffer.
struct Queued {
    family: &'static str,
    start: usize,
    key_len: usize,
    /// None: a deletion.
    value_len: Option<usize>,
}

/// Writes kept until commit, then applied in (family, key) order.
#[derive(Default)]
pub(crate) struct SortedWrites {
    bytes: Vec<u8>,
    queued: Vec<Queued>,
}

impl SortedWrites {
    /// Queues `value` under `key` in `family`.
    pub(crate) fn put(&mut self, family: &'static str, key: &[u8], value: &[u8]) {
        self.queued.push(Queued {
            family,
            start: self.bytes.len(),
            key_len: key.len(),
            value_len: Some(value.len()),
        });
        self.bytes.extend_from_slice(key);
        self.bytes.extend_from_slice(value);
    }

    /// Queues the removal of `key` from `family`.
    pub(crate) fn delete(&mut self, family: &'static str, key: &[u8]) {
        self.queued.push(Queued {
            family,
            start: self.bytes.len(),
            key_len: key.len(),
            value_len: None,
        });
        self.bytes.extend_from_slice(key);
    }

    /// Writes queued.
    pub(crate) fn len(&self) -> usize {
        self.queued.len()
    }

    /// The batch to write: every queued write, sorted by family and key.
    /// The sort is stable, so of two writes to one key the later still
    /// lands last and wins, as in arrival order.
    pub(crate) fn into_batch<'a>(
        self,
        handle: impl Fn(&'static str) -> &'a ColumnFamily,
    ) -> WriteBatch {
        let Self { bytes, mut queued } = self;
        let key = |q: &Queued| &bytes[q.start..q.start + q.key_len];
        queued.sort_by(|a, b| a.family.cmp(b.family).then_with(|| key(a).cmp(key(b))));
        let mut batch = WriteBatch::default();
        let mut current: Option<(&'static str, &ColumnFamily)> = None;
        for q in &queued {
            let family = match current {
                Some((name, family)) if name == q.family => family,
                _ => {
                    let family = handle(q.family);
                    current = Some((q.family, family));
                    family
                }
            };
            let value_at = q.start + q.key_len;
            match q.value_len {
                Some(len) => batch.put_cf(family, key(q), &bytes[value_at..value_at + len]),
                None => batch.delete_cf(family, key(q)),
            }
        }
        batch
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Store, StoreOptions, cf};

    #[test]
    fn the_last_write_to_a_key_wins_after_sorting() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
        let mut writes = SortedWrites::default();
        writes.put(cf::TOKEN, b"b", b"1");
        writes.put(cf::TOKEN, b"a", b"1");
        writes.delete(cf::TOKEN, b"b");
        writes.put(cf::TOKEN, b"c", b"1");
        writes.put(cf::TOKEN, b"c", b"2");
        writes.put(cf::TX_HASH, b"a", b"3");
        writes.delete(cf::TOKEN, b"a");
        writes.put(cf::TOKEN, b"a", b"4");
        assert_eq!(writes.len(), 8);
        let batch = writes.into_batch(|name| store.handle(name));
        store.db.0.write(batch).unwrap();
        let get = |family: &str, key: &[u8]| store.db.0.get_cf(store.handle(family), key).unwrap();
        assert_eq!(get(cf::TOKEN, b"a"), Some(b"4".to_vec()));
        assert_eq!(get(cf::TOKEN, b"b"), None);
        assert_eq!(get(cf::TOKEN, b"c"), Some(b"2".to_vec()));
        assert_eq!(get(cf::TX_HASH, b"a"), Some(b"3".to_vec()));
    }
}
