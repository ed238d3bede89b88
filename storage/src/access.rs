//! Accounts and API keys: their records, byte layouts, reads and writes.
//! Secrets arrive here already sealed by the access layer; this module never
//! sees plaintext.

use rocksdb::{IteratorMode, WriteBatch};

use crate::record::{Reader, Writer};
use crate::store::meta_key;
use crate::{StorageError, Store, cf, codec};

/// An account: the owner of API keys and exchange balances.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountRecord {
    /// Numeric id, allocated in increasing order.
    pub id: u64,
    /// Free-form label.
    pub label: String,
    /// Creation time, Unix milliseconds.
    pub created_ms: u64,
}

/// An API key as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKeyRecord {
    /// Public key id sent by clients (64 alphanumerics).
    pub id: String,
    /// Owning account.
    pub account: u64,
    /// 0 = HMAC-SHA256, 1 = Ed25519.
    pub kind: u8,
    /// HMAC: the sealed secret. Ed25519: the 32-byte public key.
    pub material: Vec<u8>,
    /// HMAC rotation: the previous sealed secret and when it stops working.
    pub previous: Option<(Vec<u8>, u64)>,
    /// Permission bits (read = 1, trade = 2, withdraw = 4).
    pub permissions: u8,
    /// IP allow-list entries as text (addresses or CIDRs); empty = any IP.
    pub allowed_ips: Vec<String>,
    /// Rate-limit tier name.
    pub tier: String,
    /// Free-form label.
    pub label: String,
    /// Creation time, Unix milliseconds.
    pub created_ms: u64,
    /// Revocation time, if revoked.
    pub revoked_ms: Option<u64>,
}

impl AccountRecord {
    /// `version ‖ id ‖ created ‖ label`.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u64(self.id);
        w.u64(self.created_ms);
        w.bytes(self.label.as_bytes());
        w.0
    }

    /// Inverse of [`AccountRecord::encode`].
    pub fn decode(bytes: &[u8]) -> Result<Self, StorageError> {
        let mut r = Reader::new(bytes, "account record")?;
        let record = Self {
            id: r.u64()?,
            created_ms: r.u64()?,
            label: r.string()?,
        };
        r.finish()?;
        Ok(record)
    }
}

impl ApiKeyRecord {
    /// Length-prefixed fields behind a version byte.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.bytes(self.id.as_bytes());
        w.u64(self.account);
        w.u8(self.kind);
        w.bytes(&self.material);
        match &self.previous {
            Some((material, until)) => {
                w.u8(1);
                w.bytes(material);
                w.u64(*until);
            }
            None => w.u8(0),
        }
        w.u8(self.permissions);
        w.u64(self.allowed_ips.len() as u64);
        for ip in &self.allowed_ips {
            w.bytes(ip.as_bytes());
        }
        w.bytes(self.tier.as_bytes());
        w.bytes(self.label.as_bytes());
        w.u64(self.created_ms);
        w.opt_u64(self.revoked_ms);
        w.0
    }

    /// Inverse of [`ApiKeyRecord::encode`].
    pub fn decode(bytes: &[u8]) -> Result<Self, StorageError> {
        let mut r = Reader::new(bytes, "api key record")?;
        let id = r.string()?;
        let account = r.u64()?;
        let kind = r.u8()?;
        let material = r.bytes()?;
        let previous = match r.u8()? {
            0 => None,
            _ => Some((r.bytes()?, r.u64()?)),
        };
        let permissions = r.u8()?;
        let count = r.u64()?;
        if count > 4096 {
            return Err(r.corrupt());
        }
        let allowed_ips = (0..count).map(|_| r.string()).collect::<Result<_, _>>()?;
        let record = Self {
            id,
            account,
            kind,
            material,
            previous,
            permissions,
            allowed_ips,
            tier: r.string()?,
            label: r.string()?,
            created_ms: r.u64()?,
            revoked_ms: r.opt_u64()?,
        };
        r.finish()?;
        Ok(record)
    }
}

/// One writer allocates account ids: account creation is rare and
/// serialised here.
static ACCOUNT_IDS: std::sync::Mutex<()> = std::sync::Mutex::new(());

impl Store {
    fn next_account_id(&self) -> Result<u64, StorageError> {
        Ok(self
            .meta(meta_key::NEXT_ACCOUNT)?
            .map(|b| codec::decode_block_number(&b))
            .transpose()?
            .unwrap_or(1))
    }

    /// Creates an account with the next free id, durably.
    pub fn create_account(
        &self,
        label: &str,
        created_ms: u64,
    ) -> Result<AccountRecord, StorageError> {
        let _guard = ACCOUNT_IDS.lock().unwrap_or_else(|e| e.into_inner());
        let id = self.next_account_id()?;
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

    /// Stores an account made elsewhere (by another process of a cluster)
    /// under its own id, and moves the next free id past it.
    pub fn put_account(&self, record: &AccountRecord) -> Result<(), StorageError> {
        let _guard = ACCOUNT_IDS.lock().unwrap_or_else(|e| e.into_inner());
        let next = self.next_account_id()?;
        let mut batch = WriteBatch::default();
        batch.put_cf(
            self.cf(cf::ACCOUNT),
            record.id.to_be_bytes(),
            record.encode(),
        );
        if record.id >= next {
            batch.put_cf(
                self.cf(cf::META),
                meta_key::NEXT_ACCOUNT,
                (record.id + 1).to_be_bytes(),
            );
        }
        self.db.write_opt(batch, &Self::synced())?;
        Ok(())
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> ApiKeyRecord {
        ApiKeyRecord {
            id: "k".repeat(64),
            account: 7,
            kind: 0,
            material: vec![1, 2, 3],
            previous: Some((vec![9; 40], 1_700_000_000_000)),
            permissions: 0b011,
            allowed_ips: vec!["10.0.0.0/8".into(), "::1".into()],
            tier: "default".into(),
            label: "bot ☃".into(),
            created_ms: 1,
            revoked_ms: Some(2),
        }
    }

    #[test]
    fn records_round_trip() {
        let account = AccountRecord {
            id: 3,
            label: "desk".into(),
            created_ms: 99,
        };
        assert_eq!(AccountRecord::decode(&account.encode()).unwrap(), account);
        let mut record = key();
        assert_eq!(ApiKeyRecord::decode(&record.encode()).unwrap(), record);
        record.previous = None;
        record.revoked_ms = None;
        record.allowed_ips.clear();
        assert_eq!(ApiKeyRecord::decode(&record.encode()).unwrap(), record);
    }

    #[test]
    fn truncated_or_extended_records_are_corrupt() {
        let bytes = key().encode();
        for cut in 0..bytes.len() {
            assert!(ApiKeyRecord::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(ApiKeyRecord::decode(&longer).is_err());
        let mut other_version = bytes;
        other_version[0] = 2;
        assert!(ApiKeyRecord::decode(&other_version).is_err());
    }

    #[test]
    fn accounts_get_increasing_ids_and_keys_persist() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &Default::default()).unwrap();
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
        let store = Store::open(dir.path(), &Default::default()).unwrap();
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
}
