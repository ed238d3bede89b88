//! What a client checks of a published proof without asking weiport
//! anything more: the proof against its snapshot, and each reserve
//! address's signature of the snapshot's message. What the chain says
//! (the block's hash, each balance at it) needs a node of the client's
//! choosing, and is left to the caller.

use std::collections::BTreeSet;
use std::str::FromStr;

use alloy_primitives::Signature;

use crate::proof::Proof;
use crate::snapshot::{ProofOf, Snapshot};
use crate::{ReservesError, hash_from_hex, to_hex};

/// The address (`0x`, lower-case hex) whose key signed `message` (EIP-191,
/// `personal_sign`) with `signature` (`0x`, r, s, v).
pub fn signer(message: &str, signature: &str) -> Result<String, ReservesError> {
    let malformed = |what: &str| ReservesError::Malformed(format!("{what}: {signature:?}"));
    let signature = Signature::from_str(signature).map_err(|_| malformed("not a signature"))?;
    let address = signature
        .recover_address_from_msg(message)
        .map_err(|_| malformed("recovers to no key"))?;
    Ok(format!("{address:#x}"))
}

/// Checks `document`'s proof against the snapshot given with it: the same
/// snapshot, the leaf and path leading to its root and its totals.
pub fn check_proof(document: &ProofOf) -> Result<(), ReservesError> {
    let snapshot = &document.snapshot;
    let proof = Proof::try_from(&document.proof)?;
    if proof.sequence != snapshot.sequence || proof.assets != snapshot.assets {
        return Err(ReservesError::Malformed(
            "the proof is of another snapshot than the one given with it".into(),
        ));
    }
    let root = hash_from_hex(&snapshot.root)?;
    if proof.root.hash != root {
        return Err(ReservesError::RootMismatch {
            found: to_hex(&proof.root.hash),
            published: snapshot.root.clone(),
        });
    }
    let totals: Vec<String> = proof.root.sums.iter().map(u128::to_string).collect();
    if totals != snapshot.totals {
        return Err(ReservesError::SumMismatch);
    }
    proof.verify()
}

/// Every way the snapshot's reserve addresses fail what needs no node: an
/// address listed twice, a message that is not this snapshot's, a signature
/// by another key. Empty: all hold.
pub fn check_signatures(document: &ProofOf) -> Vec<String> {
    let snapshot = &document.snapshot;
    let mut failures = Vec::new();
    let mut chains = BTreeSet::new();
    for chain in &snapshot.chains {
        if !chains.insert(chain.chain_id) {
            failures.push(format!("chain {} listed twice", chain.chain_id));
            continue;
        }
        let mut addresses = BTreeSet::new();
        for holding in &chain.addresses {
            let address = holding.address.to_lowercase();
            if !addresses.insert(address.clone()) {
                failures.push(format!(
                    "{address} listed twice on chain {}",
                    chain.chain_id
                ));
                continue;
            }
            if holding.message != Snapshot::message(snapshot.sequence, chain, &address) {
                failures.push(format!(
                    "{address}: the signed message is not this snapshot's: {:?}",
                    holding.message
                ));
            }
            match signer(&holding.message, &holding.signature) {
                Ok(signer) if signer == address => {}
                Ok(signer) => {
                    failures.push(format!("{address}: the signature recovers to {signer}"))
                }
                Err(error) => failures.push(format!("{address}: {error}")),
            }
        }
    }
    failures
}
