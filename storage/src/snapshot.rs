//! The exchange's snapshot: its state at one command sequence, so a
//! restart reads it and replays only the commands after it. One is kept,
//! the latest, in the meta family:
//!
//! ```text
//! "exchange_snapshot" → format (4, BE) ‖ sequence (8, BE) ‖ state (JSON)
//! ```
//!
//! The state's shape belongs to the exchange's build; `format` names it, and
//! a snapshot of another format is not read (the log is replayed instead).

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::store::meta_key;
use crate::{StorageError, Store, cf};

impl Store {
    /// Replaces the exchange's snapshot with `state` at `sequence`, in
    /// `format`. Not synced: a snapshot lost in a crash costs a longer
    /// replay, never a command.
    pub fn put_exchange_snapshot<T: Serialize>(
        &self,
        format: u32,
        sequence: u64,
        state: &T,
    ) -> Result<usize, StorageError> {
        let mut value = Vec::with_capacity(1 << 16);
        value.extend_from_slice(&format.to_be_bytes());
        value.extend_from_slice(&sequence.to_be_bytes());
        serde_json::to_writer(&mut value, state).map_err(|_| StorageError::Corrupt {
            what: "exchange snapshot (written)",
            len: value.len(),
        })?;
        self.db
            .put_cf(self.cf(cf::META), meta_key::EXCHANGE_SNAPSHOT, &value)?;
        Ok(value.len())
    }

    /// The exchange's snapshot, if there is one of `format`: its sequence
    /// and state. One of another format is `None`; one that does not read
    /// is an error (the caller replays the log instead).
    pub fn exchange_snapshot<T: DeserializeOwned>(
        &self,
        format: u32,
    ) -> Result<Option<(u64, T)>, StorageError> {
        let Some(value) = self.meta(meta_key::EXCHANGE_SNAPSHOT)? else {
            return Ok(None);
        };
        let corrupt = || StorageError::Corrupt {
            what: "exchange snapshot",
            len: value.len(),
        };
        let (head, state) = value.split_at_checked(12).ok_or_else(corrupt)?;
        let (found, sequence) = head.split_at(4);
        if u32::from_be_bytes(found.try_into().map_err(|_| corrupt())?) != format {
            return Ok(None);
        }
        let sequence = u64::from_be_bytes(sequence.try_into().map_err(|_| corrupt())?);
        let state = serde_json::from_slice(state).map_err(|_| corrupt())?;
        Ok(Some((sequence, state)))
    }

    /// Removes the exchange's snapshot (one that did not read, or a log
    /// that no longer reaches it).
    pub fn drop_exchange_snapshot(&self) -> Result<(), StorageError> {
        Ok(self
            .db
            .delete_cf(self.cf(cf::META), meta_key::EXCHANGE_SNAPSHOT)?)
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
