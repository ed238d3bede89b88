//! Encryption of HMAC secrets at rest (ChaCha20-Poly1305) under a master key
//! from `WEIPORT_MASTER_KEY` or a 0600 key file created on first run.

use std::io::Write;
use std::path::Path;

use chacha20poly1305::aead::{Aead, KeyInit};
use chacha20poly1305::{ChaCha20Poly1305, Nonce};

const NONCE_LEN: usize = 12;

/// Why the master key or a sealed secret is unusable.
#[derive(Debug, thiserror::Error)]
pub enum SealingError {
    /// `WEIPORT_MASTER_KEY` or the key file is not 64 hex digits.
    #[error("master key must be 64 hex digits (32 bytes)")]
    BadMasterKey,
    /// The key file could not be read or created.
    #[error("master key file {path}: {source}")]
    KeyFile {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A sealed secret failed authentication: wrong master key or tampering.
    #[error("a stored secret cannot be decrypted with this master key")]
    Open,
}

/// The key that seals secrets. Never logged, never serialised.
/// Holds the cipher, the cluster token and the proof-of-reserves secret,
/// each derived from the key for its purpose alone.
pub struct MasterKey(ChaCha20Poly1305, [u8; 32], [u8; 32]);

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MasterKey(..)")
    }
}

fn parse_hex_key(text: &str) -> Result<[u8; 32], SealingError> {
    let text = text.trim();
    if text.len() != 64 {
        return Err(SealingError::BadMasterKey);
    }
    let mut key = [0u8; 32];
    for (byte, pair) in key.iter_mut().zip(text.as_bytes().chunks_exact(2)) {
        let pair = std::str::from_utf8(pair).map_err(|_| SealingError::BadMasterKey)?;
        *byte = u8::from_str_radix(pair, 16).map_err(|_| SealingError::BadMasterKey)?;
    }
    Ok(key)
}

impl MasterKey {
    /// From 32 raw bytes.
    pub fn from_bytes(bytes: &[u8; 32]) -> Self {
        use sha2::Digest;
        let cipher = ChaCha20Poly1305::new_from_slice(bytes).expect("32 bytes is the key length");
        let derive = |purpose: &[u8]| -> [u8; 32] {
            let mut derived = sha2::Sha256::new();
            derived.update(purpose);
            derived.update(bytes);
            derived.finalize().into()
        };
        Self(
            cipher,
            derive(b"weiport cluster token\0"),
            derive(b"weiport reserves salts\0"),
        )
    }

    /// The secret every process sharing this key salts the proof of
    /// reserves' leaves with: the same roots everywhere, and no client can
    /// tell whose a leaf is.
    pub fn reserves_secret(&self) -> [u8; 32] {
        self.2
    }

    /// The bearer token processes sharing this master key present to each
    /// other (a follower's commands to the primary): derived from the key,
    /// so it is never configured apart and never reveals the key.
    pub fn cluster_token(&self) -> String {
        self.1.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// From `from_env` (the value of `WEIPORT_MASTER_KEY`) when given, else
    /// from `key_file`, which is created with mode 0600 if it does not exist.
    pub fn load(from_env: Option<&str>, key_file: &Path) -> Result<Self, SealingError> {
        if let Some(text) = from_env {
            return Ok(Self::from_bytes(&parse_hex_key(text)?));
        }
        let file_error = |source| SealingError::KeyFile {
            path: key_file.display().to_string(),
            source,
        };
        match std::fs::read_to_string(key_file) {
            Ok(text) => Ok(Self::from_bytes(&parse_hex_key(&text)?)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let key: [u8; 32] = rand::random();
                let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
                let mut options = std::fs::OpenOptions::new();
                options.write(true).create_new(true);
                #[cfg(unix)]
                std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
                let mut file = options.open(key_file).map_err(file_error)?;
                file.write_all(hex.as_bytes())
                    .and_then(|()| file.sync_all())
                    .map_err(file_error)?;
                tracing::info!(path = %key_file.display(), "created a new master key file");
                Ok(Self::from_bytes(&key))
            }
            Err(e) => Err(file_error(e)),
        }
    }

    /// `nonce ‖ ciphertext ‖ tag` of `secret`, bound to `context` (the key id)
    /// so a sealed secret cannot be moved to another key record.
    pub fn seal(&self, secret: &[u8], context: &[u8]) -> Vec<u8> {
        let nonce: [u8; NONCE_LEN] = rand::random();
        let payload = chacha20poly1305::aead::Payload {
            msg: secret,
            aad: context,
        };
        let sealed = self
            .0
            .encrypt(&Nonce::from(nonce), payload)
            .expect("encryption of a short secret cannot fail");
        [nonce.as_slice(), &sealed].concat()
    }

    /// Inverse of [`MasterKey::seal`].
    pub fn open(&self, sealed: &[u8], context: &[u8]) -> Result<Vec<u8>, SealingError> {
        if sealed.len() < NONCE_LEN {
            return Err(SealingError::Open);
        }
        let (nonce, ciphertext) = sealed.split_at(NONCE_LEN);
        let nonce: [u8; NONCE_LEN] = nonce.try_into().map_err(|_| SealingError::Open)?;
        let payload = chacha20poly1305::aead::Payload {
            msg: ciphertext,
            aad: context,
        };
        self.0
            .decrypt(&Nonce::from(nonce), payload)
            .map_err(|_| SealingError::Open)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_secrets_open_only_with_the_same_key_and_context() {
        let key = MasterKey::from_bytes(&[7; 32]);
        let sealed = key.seal(b"secret", b"key-id");
        assert!(
            !sealed.windows(6).any(|w| w == b"secret"),
            "plaintext must not appear"
        );
        assert_eq!(key.open(&sealed, b"key-id").unwrap(), b"secret");
        assert!(key.open(&sealed, b"other-id").is_err());
        assert!(
            MasterKey::from_bytes(&[8; 32])
                .open(&sealed, b"key-id")
                .is_err()
        );
        let mut tampered = sealed.clone();
        tampered[20] ^= 1;
        assert!(key.open(&tampered, b"key-id").is_err());
    }

    #[test]
    fn key_file_is_created_once_with_mode_0600() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("master.key");
        let first = MasterKey::load(None, &path).unwrap();
        let sealed = first.seal(b"s", b"c");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
                0o600
            );
        }
        let again = MasterKey::load(None, &path).unwrap();
        assert_eq!(again.open(&sealed, b"c").unwrap(), b"s");
    }

    #[test]
    fn env_key_wins_and_must_be_hex() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("absent.key");
        MasterKey::load(Some(&"ab".repeat(32)), &path).unwrap();
        assert!(
            !path.exists(),
            "no file when the key comes from the environment"
        );
        assert!(matches!(
            MasterKey::load(Some("short"), &path),
            Err(SealingError::BadMasterKey)
        ));
        assert!(matches!(
            MasterKey::load(Some(&"zz".repeat(32)), &path),
            Err(SealingError::BadMasterKey)
        ));
    }
}
