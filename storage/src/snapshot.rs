//! The exchange's snapshot: its state at one command sequence, so a
//! restart reads it and replays only the commands after it. One is kept,
//! the latest, in a file of its own beside the database's:
//!
//! ```text
//! exchange.snapshot: format (4, BE) ‖ sequence (8, BE) ‖ state (postcard)
//! ```
//!
//! Not a row: RocksDB logs every write it takes in its write-ahead log
//! (this store recycles log files, which rules out unlogged writes), so the
//! command log's next synced group commit would wait for the snapshot's
//! megabytes (a 30 ms commit after a 10 MB snapshot, measured), and
//! compaction would rewrite it again and again. A file is written beside
//! and renamed over the last: a reader finds the old one or the new one,
//! whole. A backup's checkpoint holds no snapshot; its restore replays the
//! log.
//!
//! The state's shape belongs to the exchange's build; `format` names it, and
//! a snapshot of another format is not read (the log is replayed instead).
//! The state is postcard, serde's compact binary form (fields in order,
//! integers as varints): a resting order is about a twelfth of its JSON,
//! and it is written and read several times faster. It is not
//! self-describing, so a change of any type written in it must raise
//! `format`.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::store::meta_key;
use crate::{StorageError, Store, cf};

/// The snapshot's file in the store's directory.
const FILE: &str = "exchange.snapshot";
/// Where the next one is written before it replaces the last.
const NEXT_FILE: &str = "exchange.snapshot.next";
/// Bytes of a snapshot written to the disk at a time.
const SYNCED_SLICE: usize = 1 << 20;

fn unusable(path: &Path) -> impl FnOnce(std::io::Error) -> StorageError + '_ {
    |source| StorageError::DataDir {
        path: path.to_path_buf(),
        source,
    }
}

impl Store {
    fn snapshot_file(&self) -> PathBuf {
        self.path().join(FILE)
    }

    /// Replaces the exchange's snapshot with `state` at `sequence`, in
    /// `format`; its size in bytes. Synced before it replaces the last one,
    /// so a crash leaves one of the two whole; a snapshot lost costs a
    /// longer replay, never a command.
    pub fn put_exchange_snapshot<T: Serialize>(
        &self,
        format: u32,
        sequence: u64,
        state: &T,
    ) -> Result<usize, StorageError> {
        let next = self.path().join(NEXT_FILE);
        let written = write_synced(&next, format, sequence, state).inspect_err(|_| {
            // A disk that filled up mid-way gets its space back.
            let _ = std::fs::remove_file(&next);
        })?;
        let path = self.snapshot_file();
        std::fs::rename(&next, &path).map_err(unusable(&path))?;
        std::fs::File::open(self.path())
            .and_then(|dir| dir.sync_all())
            .map_err(unusable(self.path()))?;
        // Builds before the file kept their snapshot (JSON, now unread) in
        // the meta family: its megabytes go with the first new one.
        self.db
            .delete_cf(self.cf(cf::META), meta_key::EXCHANGE_SNAPSHOT)?;
        Ok(written)
    }

    /// The exchange's snapshot, if there is one of `format`: its sequence
    /// and state. One of another format is `None`; one that does not read
    /// is an error (the caller replays the log instead).
    pub fn exchange_snapshot<T: DeserializeOwned>(
        &self,
        format: u32,
    ) -> Result<Option<(u64, T)>, StorageError> {
        let Some(value) = self.snapshot_bytes()? else {
            return Ok(None);
        };
        let corrupt = || StorageError::Corrupt {
            what: "exchange snapshot",
            len: value.len(),
        };
        let (found, sequence) = header(&value).ok_or_else(corrupt)?;
        if found != format {
            return Ok(None);
        }
        let (state, rest) = postcard::take_from_bytes(&value[12..]).map_err(|_| corrupt())?;
        if !rest.is_empty() {
            return Err(corrupt());
        }
        Ok(Some((sequence, state)))
    }

    /// The exchange's snapshot's format, sequence and size in bytes, if
    /// there is one: its first twelve bytes and its length, not the state.
    pub fn exchange_snapshot_header(&self) -> Result<Option<(u32, u64, usize)>, StorageError> {
        let path = self.snapshot_file();
        let mut file = match std::fs::File::open(&path) {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(unusable(&path)(error)),
        };
        let len = file.metadata().map_err(unusable(&path))?.len() as usize;
        let mut head = [0; 12];
        let read = std::io::Read::read_exact(&mut file, &mut head);
        let (format, sequence) =
            read.ok()
                .and_then(|()| header(&head))
                .ok_or(StorageError::Corrupt {
                    what: "exchange snapshot",
                    len,
                })?;
        Ok(Some((format, sequence, len)))
    }

    fn snapshot_bytes(&self) -> Result<Option<Vec<u8>>, StorageError> {
        let path = self.snapshot_file();
        match std::fs::read(&path) {
            Ok(value) => Ok(Some(value)),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(unusable(&path)(error)),
        }
    }

    /// Removes the exchange's snapshot (one that did not read, or a log
    /// that no longer reaches it).
    pub fn drop_exchange_snapshot(&self) -> Result<(), StorageError> {
        let path = self.snapshot_file();
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(error) => Err(unusable(&path)(error)),
        }
    }

    /// The commands after `sequence` in the log, in order.
    pub fn commands_after(
        &self,
        sequence: u64,
    ) -> impl Iterator<Item = Result<(u64, crate::CommandRecord), StorageError>> + '_ {
        let from = crate::codec::encode_block_number(sequence.saturating_add(1));
        self.db
            .iterator_cf(
                self.cf(cf::COMMAND_LOG),
                rocksdb::IteratorMode::From(&from, rocksdb::Direction::Forward),
            )
            .map(|item| {
                let (key, value) = item?;
                Ok((
                    crate::codec::decode_block_number(&key)?,
                    crate::CommandRecord::decode(&value)?,
                ))
            })
    }
}

/// Writes the snapshot's bytes into `path`, synced; how many.
fn write_synced<T: Serialize>(
    path: &Path,
    format: u32,
    sequence: u64,
    state: &T,
) -> Result<usize, StorageError> {
    let file = std::fs::File::create(path).map_err(unusable(path))?;
    let mut out = SyncedSlices::new(file);
    let mut header = [0; 12];
    header[..4].copy_from_slice(&format.to_be_bytes());
    header[4..].copy_from_slice(&sequence.to_be_bytes());
    let encoded = out
        .write_all(&header)
        .map_err(drop)
        .and_then(|()| postcard::to_io(state, &mut out).map(drop).map_err(drop));
    match (encoded, out.finish()) {
        (_, Err(error)) => Err(unusable(path)(error)),
        (Err(()), Ok(_)) => Err(StorageError::Corrupt {
            what: "exchange snapshot (written)",
            len: 0,
        }),
        (Ok(()), Ok(written)) => Ok(written),
    }
}

/// A snapshot's format and sequence, from its first twelve bytes.
fn header(value: &[u8]) -> Option<(u32, u64)> {
    let format = u32::from_be_bytes(value.get(..4)?.try_into().ok()?);
    let sequence = u64::from_be_bytes(value.get(4..12)?.try_into().ok()?);
    Some((format, sequence))
}

/// A file written through a buffer of one slice and synced a slice at a
/// time: the state is encoded straight into it, never whole in memory, and
/// the command log's synced commits, which share the disk, never wait
/// behind more than one slice of it.
struct SyncedSlices {
    file: std::fs::File,
    buffer: Vec<u8>,
    written: usize,
    /// The first write that failed: the encoder sees only that one did.
    failed: Option<std::io::Error>,
}

impl SyncedSlices {
    fn new(file: std::fs::File) -> Self {
        Self {
            file,
            buffer: Vec::with_capacity(SYNCED_SLICE),
            written: 0,
            failed: None,
        }
    }

    fn sync_slice(&mut self) -> std::io::Result<()> {
        self.file.write_all(&self.buffer)?;
        self.file.sync_data()?;
        self.written += self.buffer.len();
        self.buffer.clear();
        Ok(())
    }

    /// Writes and syncs what is left; the bytes written in all.
    fn finish(mut self) -> std::io::Result<usize> {
        if let Some(error) = self.failed.take() {
            return Err(error);
        }
        self.sync_slice()?;
        Ok(self.written)
    }
}

impl Write for SyncedSlices {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buffer.extend_from_slice(bytes);
        if self.buffer.len() >= SYNCED_SLICE
            && let Err(error) = self.sync_slice()
        {
            let kind = error.kind();
            self.failed.get_or_insert(error);
            return Err(kind.into());
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::{Store, StoreOptions};

    #[test]
    fn a_snapshot_reads_back_and_one_that_does_not_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
        assert_eq!(store.exchange_snapshot::<Vec<u64>>(2).unwrap(), None);
        // More than a synced slice, so the file is written in several.
        let state: Vec<u64> = (0..300_000).collect();
        let bytes = store.put_exchange_snapshot(2, 41, &state).unwrap();
        assert_eq!(
            store.exchange_snapshot_header().unwrap(),
            Some((2, 41, bytes))
        );
        assert_eq!(store.exchange_snapshot(2).unwrap(), Some((41, state)));
        // Another format is not read; the next replaces it whole.
        assert_eq!(store.exchange_snapshot::<Vec<u64>>(3).unwrap(), None);
        store.put_exchange_snapshot(2, 42, &vec![7u64]).unwrap();
        assert_eq!(store.exchange_snapshot(2).unwrap(), Some((42, vec![7u64])));
        assert!(!dir.path().join(super::NEXT_FILE).exists());
        // Cut short, or longer than its state: an error, not a state.
        let path = dir.path().join(super::FILE);
        let whole = std::fs::read(&path).unwrap();
        std::fs::write(&path, &whole[..whole.len() - 1]).unwrap();
        assert!(store.exchange_snapshot::<Vec<u64>>(2).is_err());
        std::fs::write(&path, [whole.as_slice(), &[0]].concat()).unwrap();
        assert!(store.exchange_snapshot::<Vec<u64>>(2).is_err());
        store.drop_exchange_snapshot().unwrap();
        assert_eq!(store.exchange_snapshot_header().unwrap(), None);
    }
}
