//! Online backups: a consistent copy of the whole database (the exchange's
//! command log and history, the index, keys and accounts, the wallet) taken
//! while it serves, with a manifest of what the copy holds; and its
//! restoration into an empty data directory.
//!
//! ```text
//!  backup dir/
//!    db/           a RocksDB checkpoint: every family at one point in time
//!                  (files hard-linked when on the same file system)
//!    backup.json   BackupManifest, read from the copy itself
//!    master.key    only when asked (the secrets the database is sealed with)
//!    admin.token   only when asked
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::{SCHEMA_VERSION, StorageError, Store, StoreOptions};

/// The directory of a backup that holds the database.
pub const BACKUP_DB: &str = "db";
/// The manifest's file in a backup.
pub const MANIFEST: &str = "backup.json";
/// Version of the backup's own layout.
const FORMAT: u32 = 1;

/// What a backup holds, as read from the copy itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackupManifest {
    /// Version of the backup's layout.
    pub format: u32,
    /// The database's schema version.
    pub schema_version: u32,
    /// The indexed chain's id, once the indexer has seen the node.
    pub chain_id: Option<u64>,
    /// The last fully indexed block.
    pub indexed_block: Option<u64>,
    /// The last command of the exchange's log (0: none): every order
    /// acknowledged before the backup began is at or below it.
    pub last_command_sequence: u64,
    /// When the copy was taken (ms since the epoch).
    pub taken_ms: u64,
    /// Files from beside the database copied with it (the master key, the
    /// admin token), by name; empty unless asked.
    pub secrets: Vec<String>,
}

fn failed(path: &Path, what: impl Into<String>) -> StorageError {
    StorageError::Backup {
        path: path.to_path_buf(),
        what: what.into(),
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StorageError + '_ {
    move |error| failed(path, error.to_string())
}

/// `dir`, created if missing; refused unless empty.
fn empty_dir(dir: &Path) -> Result<(), StorageError> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    if std::fs::read_dir(dir).map_err(io(dir))?.next().is_some() {
        return Err(failed(dir, "the directory is not empty"));
    }
    Ok(())
}

/// What the database in `path` holds, read by opening it.
fn manifest_of(path: &Path, secrets: Vec<String>) -> Result<BackupManifest, StorageError> {
    let store = Store::open(path, &StoreOptions::default())?;
    Ok(BackupManifest {
        format: FORMAT,
        schema_version: store.schema_version()?,
        chain_id: store.chain_id()?,
        indexed_block: store.cursor()?.map(|cursor| cursor.number),
        last_command_sequence: store.last_command_sequence()?,
        taken_ms: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64),
        secrets,
    })
}

impl Store {
    /// Writes a consistent copy of the whole database into `dir` (which
    /// must be missing or empty) while the database keeps serving, copies
    /// `secrets` (files beside it, such as the master key) along, and
    /// returns what the copy holds, also written to `dir/backup.json`.
    pub fn backup(&self, dir: &Path, secrets: &[PathBuf]) -> Result<BackupManifest, StorageError> {
        empty_dir(dir)?;
        let copy = dir.join(BACKUP_DB);
        self.db.checkpoint(&copy)?;
        let mut copied = Vec::new();
        for secret in secrets.iter().filter(|s| s.is_file()) {
            let name = secret
                .file_name()
                .ok_or_else(|| failed(secret, "not a file name"))?;
            std::fs::copy(secret, dir.join(name)).map_err(io(secret))?;
            copied.push(name.to_string_lossy().into_owned());
        }
        let manifest = manifest_of(&copy, copied)?;
        let text = serde_json::to_vec_pretty(&manifest).map_err(|e| failed(dir, e.to_string()))?;
        std::fs::write(dir.join(MANIFEST), text).map_err(io(dir))?;
        Ok(manifest)
    }
}

/// The manifest of the backup in `dir`.
pub fn read_manifest(dir: &Path) -> Result<BackupManifest, StorageError> {
    let path = dir.join(MANIFEST);
    let text = std::fs::read(&path).map_err(io(&path))?;
    serde_json::from_slice(&text).map_err(|e| failed(&path, e.to_string()))
}

/// Restores the backup in `dir` into `data_dir`, which must be empty or
/// missing (as database restore tools ask: nothing there is overwritten or
/// mixed in): the database's files and the secrets the backup holds. The
/// restored database is opened and checked against the manifest before
/// this returns it.
pub fn restore(dir: &Path, data_dir: &Path) -> Result<BackupManifest, StorageError> {
    let manifest = read_manifest(dir)?;
    if manifest.format != FORMAT || manifest.schema_version != SCHEMA_VERSION {
        return Err(failed(
            dir,
            format!(
                "backup format {} of schema {}; this build restores format {FORMAT} of schema {SCHEMA_VERSION}",
                manifest.format, manifest.schema_version
            ),
        ));
    }
    std::fs::create_dir_all(data_dir).map_err(io(data_dir))?;
    let mut present: Vec<String> = std::fs::read_dir(data_dir)
        .map_err(io(data_dir))?
        .map(|entry| entry.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_, _>>()
        .map_err(io(data_dir))?;
    if !present.is_empty() {
        present.sort();
        let more = present.len().saturating_sub(5);
        present.truncate(5);
        let also = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        return Err(failed(
            data_dir,
            format!(
                "the data directory is not empty (it holds {}{also}): restore into an empty or new directory",
                present.join(", ")
            ),
        ));
    }
    let copy = dir.join(BACKUP_DB);
    for entry in std::fs::read_dir(&copy).map_err(io(&copy))? {
        let entry = entry.map_err(io(&copy))?;
        // RocksDB's own lock and logs are the copy's, not the data's.
        let name = entry.file_name();
        if name == "LOCK" || name.to_string_lossy().starts_with("LOG") {
            continue;
        }
        std::fs::copy(entry.path(), data_dir.join(&name)).map_err(io(&entry.path()))?;
    }
    for secret in &manifest.secrets {
        let target = data_dir.join(secret);
        std::fs::copy(dir.join(secret), &target).map_err(io(&target))?;
    }
    let restored = manifest_of(data_dir, manifest.secrets.clone())?;
    if (restored.indexed_block, restored.last_command_sequence)
        != (manifest.indexed_block, manifest.last_command_sequence)
    {
        return Err(failed(
            data_dir,
            "the restored database does not hold what the manifest says",
        ));
    }
    Ok(manifest)
}
