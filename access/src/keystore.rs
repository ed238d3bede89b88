//! Accounts and API keys: created, rotated and revoked durably in storage,
//! served from memory on the hot path. Secrets are sealed at rest.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use ed25519_dalek::VerifyingKey;
use ed25519_dalek::pkcs8::DecodePublicKey;
use weiport_storage::{AccountRecord, ApiKeyRecord, StorageError, Store};

use crate::cluster::{Redis, SharedError, table};
use crate::keys::{BadIpRule, IpRule, KeyKind, Permission, Permissions, random_token};
use crate::limits::IdHasher;
use crate::sealing::{MasterKey, SealingError};
use crate::signature::HmacKey;

pub use crate::clock::now_ms;

/// What a key proves possession of.
enum Credential {
    Hmac(HmacKey),
    Ed25519(VerifyingKey),
}

/// A live API key. Its secret never leaves this crate and never prints.
pub struct ApiKey {
    /// Public id.
    pub id: String,
    /// Owning account.
    pub account: u64,
    /// Signature scheme.
    pub kind: KeyKind,
    credential: Credential,
    previous_hmac: Option<(HmacKey, u64)>,
    /// Granted permissions.
    pub permissions: Permissions,
    /// IP allow-list; empty means any address.
    pub allowed_ips: Vec<IpRule>,
    /// Rate-limit tier.
    pub tier: String,
    /// Label.
    pub label: String,
    /// Creation time (ms).
    pub created_ms: u64,
    /// Revocation time (ms), if revoked.
    pub revoked_ms: Option<u64>,
    /// Stable number identifying the key in the rate limiter.
    pub limit_slot: u64,
    /// The shared table's revision this copy came from (0: never shared).
    pub(crate) revision: u64,
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiKey")
            .field("id", &self.id)
            .field("account", &self.account)
            .finish_non_exhaustive()
    }
}

impl ApiKey {
    /// Whether requests from `ip` may use this key.
    pub fn allows_ip(&self, ip: std::net::IpAddr) -> bool {
        self.allowed_ips.is_empty() || self.allowed_ips.iter().any(|rule| rule.contains(ip))
    }

    /// Checks a request signature: hex HMAC (current secret, or the previous
    /// one during a rotation's grace period) or base64 Ed25519.
    pub fn verify(
        &self,
        signed: &crate::SignedPayload<'_>,
        now_ms: u64,
    ) -> Result<(), crate::SignatureError> {
        match &self.credential {
            Credential::Hmac(secret) => {
                signed
                    .verify_hmac(secret)
                    .or_else(|error| match &self.previous_hmac {
                        Some((previous, until)) if now_ms < *until => signed.verify_hmac(previous),
                        _ => Err(error),
                    })
            }
            Credential::Ed25519(key) => signed.verify_ed25519(key),
        }
    }

    /// The key as listed: everything but secrets.
    pub fn info(&self) -> KeyInfo {
        KeyInfo {
            id: self.id.clone(),
            account: self.account,
            kind: self.kind,
            permissions: self.permissions.list(),
            allowed_ips: self.allowed_ips.iter().map(ToString::to_string).collect(),
            tier: self.tier.clone(),
            label: self.label.clone(),
            created_ms: self.created_ms,
            revoked_ms: self.revoked_ms,
        }
    }
}

/// A key as shown to administrators: no secret material.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct KeyInfo {
    /// Public id.
    pub id: String,
    /// Owning account.
    pub account: u64,
    /// Signature scheme.
    pub kind: KeyKind,
    /// Granted permissions.
    pub permissions: Vec<Permission>,
    /// IP allow-list.
    pub allowed_ips: Vec<String>,
    /// Rate-limit tier.
    pub tier: String,
    /// Label.
    pub label: String,
    /// Creation time (ms).
    pub created_ms: u64,
    /// Revocation time (ms).
    pub revoked_ms: Option<u64>,
}

/// A request to create a key.
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct NewKey {
    /// Owning account.
    pub account: u64,
    /// `hmac` (default) or `ed25519`.
    pub kind: Option<KeyKind>,
    /// PEM (SPKI) Ed25519 public key, for `ed25519` keys.
    pub public_key: Option<String>,
    /// Permissions; default `read`.
    #[serde(default)]
    pub permissions: Vec<Permission>,
    /// IP allow-list entries.
    #[serde(default)]
    pub allowed_ips: Vec<String>,
    /// Rate-limit tier; default from configuration.
    pub tier: Option<String>,
    /// Label.
    #[serde(default)]
    pub label: String,
}

/// A created or rotated key: the only time an HMAC secret is shown.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct CreatedKey {
    /// The key.
    #[serde(flatten)]
    pub info: KeyInfo,
    /// HMAC secret, shown once.
    pub secret: Option<String>,
}

/// Why a key operation was refused.
#[derive(Debug, thiserror::Error)]
pub enum KeyStoreError {
    /// No such account.
    #[error("unknown account {0}")]
    UnknownAccount(u64),
    /// No such key.
    #[error("unknown API key")]
    UnknownKey,
    /// The key is revoked.
    #[error("API key is revoked")]
    Revoked,
    /// Only HMAC keys have secrets to rotate.
    #[error("only HMAC keys can be rotated; register a new Ed25519 key instead")]
    NotRotatable,
    /// Bad IP rule.
    #[error(transparent)]
    BadIp(#[from] BadIpRule),
    /// Unusable public key.
    #[error("invalid Ed25519 public key: {0}")]
    BadPublicKey(String),
    /// Unknown tier.
    #[error("unknown rate-limit tier {0:?}")]
    UnknownTier(String),
    /// Storage failure.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// Secret decryption failure.
    #[error(transparent)]
    Sealing(#[from] SealingError),
    /// The shared key store did not take the change; nothing was changed.
    #[error(transparent)]
    Shared(#[from] SharedError),
}

/// All accounts' keys, durable in storage, served from memory.
pub struct KeyStore {
    store: Store,
    master: MasterKey,
    keys: RwLock<HashMap<String, Arc<ApiKey>, IdHasher>>,
    /// Held across each read-modify-write of a key record, so that a revoke
    /// and a rotation of one key cannot interleave and undo each other.
    changes: std::sync::Mutex<()>,
    tiers: Vec<String>,
    default_tier: String,
    /// Set when the table is shared with other processes through Redis.
    shared: OnceLock<Arc<Redis>>,
}

/// The key's number in the limiters: FNV-1a of its id, the same in every
/// process and every build, so processes sharing budgets agree on it.
fn limit_slot(id: &str) -> u64 {
    id.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

impl KeyStore {
    /// Loads every key from `store`, opening secrets with `master`.
    pub fn open(
        store: Store,
        master: MasterKey,
        tiers: Vec<String>,
        default_tier: String,
    ) -> Result<Self, KeyStoreError> {
        let mut keys = HashMap::default();
        for record in store.api_keys()? {
            let key = Self::live(&master, &record)?;
            keys.insert(key.id.clone(), Arc::new(key));
        }
        Ok(Self {
            store,
            master,
            keys: RwLock::new(keys),
            changes: std::sync::Mutex::new(()),
            tiers,
            default_tier,
            shared: OnceLock::new(),
        })
    }

    fn live(master: &MasterKey, record: &ApiKeyRecord) -> Result<ApiKey, KeyStoreError> {
        let kind = KeyKind::from_tag(record.kind).ok_or(StorageError::Corrupt {
            what: "api key kind",
            len: 1,
        })?;
        let credential =
            match kind {
                KeyKind::Hmac => Credential::Hmac(HmacKey::new(
                    &master.open(&record.material, record.id.as_bytes())?,
                )),
                KeyKind::Ed25519 => {
                    let bytes: [u8; 32] = record.material.as_slice().try_into().map_err(|_| {
                        StorageError::Corrupt {
                            what: "ed25519 key",
                            len: record.material.len(),
                        }
                    })?;
                    Credential::Ed25519(
                        VerifyingKey::from_bytes(&bytes)
                            .map_err(|e| KeyStoreError::BadPublicKey(e.to_string()))?,
                    )
                }
            };
        let previous_hmac = match &record.previous {
            Some((sealed, until)) => Some((
                HmacKey::new(&master.open(sealed, record.id.as_bytes())?),
                *until,
            )),
            None => None,
        };
        Ok(ApiKey {
            id: record.id.clone(),
            account: record.account,
            kind,
            credential,
            previous_hmac,
            permissions: Permissions::from_bits(record.permissions),
            allowed_ips: record
                .allowed_ips
                .iter()
                .map(|ip| ip.parse())
                .collect::<Result<_, _>>()?,
            tier: record.tier.clone(),
            label: record.label.clone(),
            created_ms: record.created_ms,
            revoked_ms: record.revoked_ms,
            limit_slot: limit_slot(&record.id),
            revision: 0,
        })
    }

    /// The live key with `id`, revoked or not. One map lookup.
    pub fn get(&self, id: &str) -> Option<Arc<ApiKey>> {
        self.keys
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .cloned()
    }

    /// Shares the table through `redis` from now on: changes go to Redis
    /// first, and what other processes change arrives through
    /// [`KeyStore::apply_shared`].
    pub(crate) fn share(&self, redis: Arc<Redis>) {
        let _ = self.shared.set(redis);
    }

    fn install(&self, record: &ApiKeyRecord) -> Result<Arc<ApiKey>, KeyStoreError> {
        self.install_at(record, 0)
    }

    fn install_at(
        &self,
        record: &ApiKeyRecord,
        revision: u64,
    ) -> Result<Arc<ApiKey>, KeyStoreError> {
        let mut key = Self::live(&self.master, record)?;
        key.revision = revision;
        let key = Arc::new(key);
        // Durable first: a crash after this line still has the key on restart.
        self.store.put_api_key(record)?;
        self.keys
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key.id.clone(), key.clone());
        Ok(key)
    }

    fn record_of(&self, id: &str) -> Result<ApiKeyRecord, KeyStoreError> {
        self.store.api_key(id)?.ok_or(KeyStoreError::UnknownKey)
    }

    /// A key record changed by any process, at `revision` of the shared
    /// table. Older copies and un-revocations are ignored: a key revoked
    /// anywhere stays revoked here, whatever Redis forgot.
    pub(crate) fn apply_shared(&self, revision: u64, record: &ApiKeyRecord) {
        let _changing = self.changes.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(current) = self.get(&record.id)
            && (current.revision >= revision
                || (current.revoked_ms.is_some() && record.revoked_ms.is_none()))
        {
            return;
        }
        if let Err(error) = self.install_at(record, revision) {
            tracing::error!(key = %record.id, %error, "shared key not applied");
        }
    }

    /// The key as held after the shared table took `record` at `revision`
    /// (or a later change that arrived first).
    fn applied(&self, revision: u64, record: &ApiKeyRecord) -> Result<Arc<ApiKey>, KeyStoreError> {
        self.apply_shared(revision, record);
        self.get(&record.id).ok_or(KeyStoreError::UnknownKey)
    }

    /// An account created by any process.
    pub(crate) fn apply_shared_account(&self, record: &AccountRecord) {
        match self.store.account(record.id) {
            Ok(Some(_)) => {}
            _ => {
                if let Err(error) = self.store.put_account(record) {
                    tracing::error!(account = record.id, %error, "shared account not applied");
                }
            }
        }
    }

    /// This process's own copy of the table: keys with their revisions,
    /// accounts; what it offers a Redis that lost its data.
    pub(crate) fn local_table(&self) -> (Vec<(u64, ApiKeyRecord)>, Vec<AccountRecord>) {
        let records = self.store.api_keys().unwrap_or_default();
        let keys = records
            .into_iter()
            .map(|record| {
                let revision = self.get(&record.id).map_or(0, |key| key.revision);
                (revision, record)
            })
            .collect();
        (keys, self.store.accounts().unwrap_or_default())
    }

    /// The bearer token of processes sharing this master key (see
    /// [`MasterKey::cluster_token`]).
    pub fn cluster_token(&self) -> String {
        self.master.cluster_token()
    }

    /// The proof-of-reserves salt secret of processes sharing this master
    /// key (see [`MasterKey::reserves_secret`]).
    pub fn reserves_secret(&self) -> [u8; 32] {
        self.master.reserves_secret()
    }

    /// Creates an account.
    pub fn create_account(&self, label: &str) -> Result<AccountRecord, KeyStoreError> {
        let Some(redis) = self.shared.get() else {
            return Ok(self.store.create_account(label, now_ms())?);
        };
        let record = table::create_account(redis, label)?;
        self.store.put_account(&record)?;
        Ok(record)
    }

    /// Whether account `id` exists.
    pub fn account_exists(&self, id: u64) -> Result<bool, KeyStoreError> {
        Ok(self.store.account(id)?.is_some())
    }

    /// Every account.
    pub fn accounts(&self) -> Result<Vec<AccountRecord>, KeyStoreError> {
        Ok(self.store.accounts()?)
    }

    /// Creates a key; an HMAC key's secret is returned this once.
    pub fn create_key(&self, request: NewKey) -> Result<CreatedKey, KeyStoreError> {
        if self.store.account(request.account)?.is_none() {
            return Err(KeyStoreError::UnknownAccount(request.account));
        }
        let tier = request.tier.unwrap_or_else(|| self.default_tier.clone());
        if !self.tiers.contains(&tier) {
            return Err(KeyStoreError::UnknownTier(tier));
        }
        let allowed_ips: Vec<IpRule> = request
            .allowed_ips
            .iter()
            .map(|ip| ip.parse())
            .collect::<Result<_, _>>()?;
        let id = random_token();
        let kind = request.kind.unwrap_or(KeyKind::Hmac);
        let (material, secret) = match kind {
            KeyKind::Hmac => {
                let secret = random_token();
                (
                    self.master.seal(secret.as_bytes(), id.as_bytes()),
                    Some(secret),
                )
            }
            KeyKind::Ed25519 => {
                let pem = request.public_key.as_deref().ok_or_else(|| {
                    KeyStoreError::BadPublicKey("an ed25519 key needs public_key (PEM)".into())
                })?;
                let key = VerifyingKey::from_public_key_pem(pem.trim())
                    .map_err(|e| KeyStoreError::BadPublicKey(e.to_string()))?;
                (key.to_bytes().to_vec(), None)
            }
        };
        let permissions: Permissions = if request.permissions.is_empty() {
            [Permission::Read].into_iter().collect()
        } else {
            request.permissions.into_iter().collect()
        };
        let record = ApiKeyRecord {
            id,
            account: request.account,
            kind: kind.tag(),
            material,
            previous: None,
            permissions: permissions.bits(),
            allowed_ips: allowed_ips.iter().map(ToString::to_string).collect(),
            tier,
            label: request.label,
            created_ms: now_ms(),
            revoked_ms: None,
        };
        let key = match self.shared.get() {
            None => self.install(&record)?,
            Some(redis) => match table::write_key(redis, &record, 0)? {
                table::Written::At(revision) => self.applied(revision, &record)?,
                // A fresh random id taken: as likely as guessing a secret.
                _ => {
                    return Err(KeyStoreError::Shared(SharedError::Unexpected(
                        "key id already taken".into(),
                    )));
                }
            },
        };
        Ok(CreatedKey {
            info: key.info(),
            secret,
        })
    }

    /// Every key (no secrets), optionally of one account.
    pub fn list(&self, account: Option<u64>) -> Vec<KeyInfo> {
        let keys = self.keys.read().unwrap_or_else(|e| e.into_inner());
        let mut listed: Vec<KeyInfo> = keys
            .values()
            .filter(|k| account.is_none_or(|a| k.account == a))
            .map(|k| k.info())
            .collect();
        listed.sort_by(|a, b| {
            (a.account, a.created_ms, &a.id).cmp(&(b.account, b.created_ms, &b.id))
        });
        listed
    }

    /// Reads key `id`, lets `edit` change it, and stores the result: here
    /// under a lock, or in the shared table only if no other process
    /// changed the key in between (else read and edit again).
    fn change<T>(
        &self,
        id: &str,
        mut edit: impl FnMut(&mut ApiKeyRecord) -> Result<T, KeyStoreError>,
    ) -> Result<(Arc<ApiKey>, T), KeyStoreError> {
        let Some(redis) = self.shared.get() else {
            let _changing = self.changes.lock().unwrap_or_else(|e| e.into_inner());
            let mut record = self.record_of(id)?;
            let made = edit(&mut record)?;
            return Ok((self.install(&record)?, made));
        };
        loop {
            let (revision, mut record) =
                table::read_key(redis, id)?.ok_or(KeyStoreError::UnknownKey)?;
            let made = edit(&mut record)?;
            match table::write_key(redis, &record, revision)? {
                table::Written::At(revision) => {
                    return Ok((self.applied(revision, &record)?, made));
                }
                table::Written::Conflict => continue,
                table::Written::Revoked => return Err(KeyStoreError::Revoked),
            }
        }
    }

    /// Gives an HMAC key a new secret; the old one keeps working for `grace`.
    pub fn rotate(&self, id: &str, grace: Duration) -> Result<CreatedKey, KeyStoreError> {
        let (key, secret) = self.change(id, |record| {
            if record.revoked_ms.is_some() {
                return Err(KeyStoreError::Revoked);
            }
            if KeyKind::from_tag(record.kind) != Some(KeyKind::Hmac) {
                return Err(KeyStoreError::NotRotatable);
            }
            let secret = random_token();
            let old = std::mem::replace(
                &mut record.material,
                self.master.seal(secret.as_bytes(), id.as_bytes()),
            );
            record.previous =
                (!grace.is_zero()).then(|| (old, now_ms() + grace.as_millis() as u64));
            Ok(secret)
        })?;
        Ok(CreatedKey {
            info: key.info(),
            secret: Some(secret),
        })
    }

    /// Revokes a key; the next request with it is refused.
    pub fn revoke(&self, id: &str) -> Result<KeyInfo, KeyStoreError> {
        let (key, ()) = self.change(id, |record| {
            if record.revoked_ms.is_none() {
                record.revoked_ms = Some(now_ms());
            }
            Ok(())
        })?;
        Ok(key.info())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keystore(dir: &tempfile::TempDir) -> KeyStore {
        let store = Store::open(dir.path().join("db"), &Default::default()).unwrap();
        let master = MasterKey::load(None, &dir.path().join("master.key")).unwrap();
        KeyStore::open(store, master, vec!["default".into()], "default".into()).unwrap()
    }

    #[test]
    fn keys_survive_a_restart_and_secrets_are_sealed_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let created = {
            let keys = keystore(&dir);
            let account = keys.create_account("desk").unwrap();
            let request = NewKey {
                account: account.id,
                permissions: vec![Permission::Read, Permission::Trade],
                allowed_ips: vec!["10.0.0.0/8".into()],
                ..NewKey::default()
            };
            keys.create_key(request).unwrap()
        };
        let secret = created.secret.clone().unwrap();
        assert_eq!(secret.len(), 64);
        // The plaintext secret appears nowhere in the database files.
        for entry in std::fs::read_dir(dir.path().join("db")).unwrap() {
            let bytes = std::fs::read(entry.unwrap().path()).unwrap();
            assert!(!bytes.windows(secret.len()).any(|w| w == secret.as_bytes()));
        }
        let keys = keystore(&dir);
        let key = keys.get(&created.info.id).unwrap();
        assert_eq!(key.info(), created.info);
        let payload = crate::SignedPayload {
            payload: b"a=1".to_vec().into(),
            signature: &crate::sign_hmac_sha256(secret.as_bytes(), b"a=1"),
        };
        key.verify(&payload, now_ms()).unwrap();
        assert!(format!("{key:?}").find(&secret).is_none());
    }

    #[test]
    fn rotation_grace_and_revocation() {
        let dir = tempfile::tempdir().unwrap();
        let keys = keystore(&dir);
        let account = keys.create_account("").unwrap();
        let created = keys
            .create_key(NewKey {
                account: account.id,
                ..NewKey::default()
            })
            .unwrap();
        let old = created.secret.unwrap();
        let sign = |secret: &str| crate::sign_hmac_sha256(secret.as_bytes(), b"x=1");
        let rotated = keys
            .rotate(&created.info.id, Duration::from_secs(60))
            .unwrap();
        let new = rotated.secret.unwrap();
        let key = keys.get(&created.info.id).unwrap();
        let (old_sig, new_sig) = (sign(&old), sign(&new));
        let check = |sig: &str, at: u64| {
            key.verify(
                &crate::SignedPayload {
                    payload: b"x=1".to_vec().into(),
                    signature: sig,
                },
                at,
            )
        };
        check(&new_sig, now_ms()).unwrap();
        check(&old_sig, now_ms()).unwrap();
        assert!(
            check(&old_sig, now_ms() + 61_000).is_err(),
            "grace period over"
        );

        keys.rotate(&created.info.id, Duration::ZERO).unwrap();
        let key = keys.get(&created.info.id).unwrap();
        assert!(
            key.verify(
                &crate::SignedPayload {
                    payload: b"x=1".to_vec().into(),
                    signature: &new_sig
                },
                now_ms()
            )
            .is_err()
        );

        let revoked = keys.revoke(&created.info.id).unwrap();
        assert!(revoked.revoked_ms.is_some());
        assert!(keys.get(&created.info.id).unwrap().revoked_ms.is_some());
        assert!(matches!(
            keys.rotate(&created.info.id, Duration::ZERO),
            Err(KeyStoreError::Revoked)
        ));
    }

    #[test]
    fn a_revoke_racing_rotations_stays_revoked() {
        let dir = tempfile::tempdir().unwrap();
        let keys = keystore(&dir);
        let account = keys.create_account("").unwrap();
        for _ in 0..20 {
            let id = keys
                .create_key(NewKey {
                    account: account.id,
                    ..NewKey::default()
                })
                .unwrap()
                .info
                .id;
            std::thread::scope(|scope| {
                for _ in 0..3 {
                    scope.spawn(|| {
                        for _ in 0..20 {
                            let _ = keys.rotate(&id, Duration::from_secs(60));
                        }
                    });
                }
                scope.spawn(|| keys.revoke(&id).unwrap());
            });
            assert!(keys.get(&id).unwrap().revoked_ms.is_some(), "revoke undone");
            let stored = keys.record_of(&id).unwrap();
            assert!(stored.revoked_ms.is_some(), "revoke undone on disk");
        }
    }

    #[test]
    fn ed25519_keys_are_registered_from_pem_and_verify_base64_signatures() {
        use base64::Engine;
        use ed25519_dalek::Signer;
        use ed25519_dalek::pkcs8::EncodePublicKey;
        let dir = tempfile::tempdir().unwrap();
        let keys = keystore(&dir);
        let account = keys.create_account("").unwrap().id;
        let signing = ed25519_dalek::SigningKey::from_bytes(&[9u8; 32]);
        let pem = signing
            .verifying_key()
            .to_public_key_pem(Default::default())
            .unwrap();
        let request = NewKey {
            account,
            kind: Some(KeyKind::Ed25519),
            public_key: Some(pem),
            ..NewKey::default()
        };
        let created = keys.create_key(request).unwrap();
        assert!(created.secret.is_none(), "the client holds the private key");
        let signature =
            base64::engine::general_purpose::STANDARD.encode(signing.sign(b"a=1").to_bytes());
        let encoded = signature
            .replace('+', "%2B")
            .replace('/', "%2F")
            .replace('=', "%3D");
        let key = keys.get(&created.info.id).unwrap();
        let signed = crate::SignedPayload {
            payload: b"a=1".to_vec().into(),
            signature: &encoded,
        };
        key.verify(&signed, now_ms()).unwrap();
        let forged = crate::SignedPayload {
            payload: b"a=2".to_vec().into(),
            signature: &encoded,
        };
        assert!(key.verify(&forged, now_ms()).is_err());
        assert!(matches!(
            keys.rotate(&created.info.id, Duration::ZERO),
            Err(KeyStoreError::NotRotatable)
        ));
    }

    #[test]
    fn refusals() {
        let dir = tempfile::tempdir().unwrap();
        let keys = keystore(&dir);
        assert!(matches!(
            keys.create_key(NewKey {
                account: 99,
                ..NewKey::default()
            }),
            Err(KeyStoreError::UnknownAccount(99))
        ));
        let account = keys.create_account("").unwrap().id;
        let bad_ip = NewKey {
            account,
            allowed_ips: vec!["nope".into()],
            ..NewKey::default()
        };
        assert!(matches!(
            keys.create_key(bad_ip),
            Err(KeyStoreError::BadIp(_))
        ));
        let no_pem = NewKey {
            account,
            kind: Some(KeyKind::Ed25519),
            ..NewKey::default()
        };
        assert!(matches!(
            keys.create_key(no_pem),
            Err(KeyStoreError::BadPublicKey(_))
        ));
        let bad_tier = NewKey {
            account,
            tier: Some("gold".into()),
            ..NewKey::default()
        };
        assert!(matches!(
            keys.create_key(bad_tier),
            Err(KeyStoreError::UnknownTier(_))
        ));
        assert!(matches!(
            keys.revoke("nope"),
            Err(KeyStoreError::UnknownKey)
        ));
    }
}
