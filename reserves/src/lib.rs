//! Proof of reserves: what the exchange owes every account, committed to
//! in a Merkle sum tree at one ledger sequence, and the proofs that let an
//! account check its claim is counted in the published totals.
//!
//! Pure but for the verifier: it takes what each account is owed and gives
//! roots and proofs. Reading the ledger at a sequence, the chain at a block
//! and signing with the wallet's keys belong to the crates that own them;
//! the verifier asks nodes of the client's choosing through the indexer's
//! JSON-RPC client.

mod check;
mod proof;
mod snapshot;
mod tree;
mod verify;

pub use check::{check_proof, check_signatures, signer};
pub use proof::{Proof, ProofDocument, StepDocument};
pub use snapshot::{
    ChainReserves, Coverage, CoverageDocument, Holding, Owed, ProofOf, SignedHolding, Snapshot,
    SnapshotDocument, WEI_PER_UNIT,
};
pub use tree::{Hash, Leaf, Node, Side, Step, SumTree, account_id, climb};
pub use verify::{Verdict, VerifyError, verify};

use sha2::{Digest, Sha256};

/// Why a tree could not be built or a proof does not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReservesError {
    /// A leaf or a sibling carries another number of sums than the
    /// snapshot has assets.
    #[error("a node carries another number of sums than the snapshot has assets")]
    AssetCount,
    /// A sum does not fit 128 bits.
    #[error("a sum overflows")]
    Overflow,
    /// The path does not lead to the published root's hash.
    #[error("the leaf and its path lead to root {found}, not the published {published}")]
    RootMismatch {
        /// The root recomputed, hex.
        found: String,
        /// The root published, hex.
        published: String,
    },
    /// The path leads to the root's hash but not to its sums.
    #[error("the path's sums do not add up to the published totals")]
    SumMismatch,
    /// A proof document is malformed.
    #[error("malformed proof: {0}")]
    Malformed(String),
}

/// An account's salt in the snapshot at `sequence`: derived from a secret
/// every process of the exchange shares, so each publishes the same root,
/// and nobody without it can tell which leaf is whose.
pub fn salt(secret: &[u8; 32], sequence: u64, account: u64) -> Hash {
    let mut hasher = Sha256::new();
    hasher.update(b"weiport/reserves/salt");
    hasher.update(secret);
    hasher.update(sequence.to_be_bytes());
    hasher.update(account.to_be_bytes());
    hasher.finalize().into()
}

/// Lower-case hex of `bytes`.
pub fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        text.push(char::from(DIGITS[usize::from(byte >> 4)]));
        text.push(char::from(DIGITS[usize::from(byte & 0xf)]));
    }
    text
}

/// A 32-byte hash from hex (with or without `0x`).
pub fn hash_from_hex(text: &str) -> Result<Hash, ReservesError> {
    let text = text.strip_prefix("0x").unwrap_or(text);
    let malformed = || ReservesError::Malformed(format!("not a 32-byte hex hash: {text:?}"));
    if text.len() != 64 || !text.is_ascii() {
        return Err(malformed());
    }
    let mut hash = [0u8; 32];
    for (i, byte) in hash.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).map_err(|_| malformed())?;
    }
    Ok(hash)
}

#[cfg(test)]
mod tests;
