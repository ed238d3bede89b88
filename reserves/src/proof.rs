//! An account's inclusion proof, and the document it travels as.

use serde::{Deserialize, Serialize};

use crate::tree::{Leaf, Node, Side, Step, climb};
use crate::{Hash, ReservesError, hash_from_hex, to_hex};

/// That one account's claim is counted in a snapshot's totals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proof {
    /// The ledger sequence of the snapshot.
    pub sequence: u64,
    /// The snapshot's assets, in the order of every node's sums.
    pub assets: Vec<String>,
    /// The account's leaf: its id, salt and what it is owed.
    pub leaf: Leaf,
    /// The siblings from the leaf up to the root.
    pub path: Vec<Step>,
    /// The published root: its hash and the total owed per asset.
    pub root: Node,
}

impl Proof {
    /// Checks that the leaf and its path lead to the published root, its
    /// hash and its sums; every sum on the way is unsigned and none
    /// overflows.
    pub fn verify(&self) -> Result<(), ReservesError> {
        let assets = self.assets.len();
        if self.leaf.owed.len() != assets || self.root.sums.len() != assets {
            return Err(ReservesError::AssetCount);
        }
        let found = climb(&self.leaf, &self.path)?;
        if found.hash != self.root.hash {
            return Err(ReservesError::RootMismatch {
                found: to_hex(&found.hash),
                published: to_hex(&self.root.hash),
            });
        }
        if found.sums != self.root.sums {
            return Err(ReservesError::SumMismatch);
        }
        Ok(())
    }
}

/// A proof as a JSON document: hashes in hex, amounts as strings of
/// integer units of 10^-8, so any language reads it without floats.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ProofDocument {
    /// The ledger sequence of the snapshot.
    pub sequence: u64,
    /// The assets, in the order of every `sums` list.
    pub assets: Vec<String>,
    /// Decimal places of every amount's units.
    pub scale: u32,
    /// The account.
    pub account: u64,
    /// The account's salt, hex.
    pub salt: String,
    /// What the exchange owes the account per asset.
    pub owed: Vec<String>,
    /// The siblings from the leaf up: `side` is `left` or `right`.
    pub path: Vec<StepDocument>,
    /// The root's hash, hex.
    pub root: String,
    /// The total owed per asset.
    pub totals: Vec<String>,
}

/// One sibling of a [`ProofDocument`]'s path.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct StepDocument {
    /// `left` or `right`: where the sibling is.
    pub side: String,
    /// The sibling's hash, hex.
    pub hash: String,
    /// The sibling's sums.
    pub sums: Vec<String>,
}

fn amounts(list: &[u128]) -> Vec<String> {
    list.iter().map(u128::to_string).collect()
}

fn parse_amounts(list: &[String]) -> Result<Vec<u128>, ReservesError> {
    list.iter()
        .map(|text| {
            text.parse::<u128>()
                .map_err(|_| ReservesError::Malformed(format!("not an amount in units: {text:?}")))
        })
        .collect()
}

impl From<&Proof> for ProofDocument {
    fn from(proof: &Proof) -> Self {
        Self {
            sequence: proof.sequence,
            assets: proof.assets.clone(),
            scale: 8,
            account: proof.leaf.account,
            salt: to_hex(&proof.leaf.salt),
            owed: amounts(&proof.leaf.owed),
            path: proof
                .path
                .iter()
                .map(|step| StepDocument {
                    side: match step.side {
                        Side::Left => "left",
                        Side::Right => "right",
                    }
                    .into(),
                    hash: to_hex(&step.sibling.hash),
                    sums: amounts(&step.sibling.sums),
                })
                .collect(),
            root: to_hex(&proof.root.hash),
            totals: amounts(&proof.root.sums),
        }
    }
}

impl TryFrom<&ProofDocument> for Proof {
    type Error = ReservesError;

    fn try_from(document: &ProofDocument) -> Result<Self, ReservesError> {
        let salt: Hash = hash_from_hex(&document.salt)?;
        let path = document
            .path
            .iter()
            .map(|step| {
                let side = match step.side.as_str() {
                    "left" => Side::Left,
                    "right" => Side::Right,
                    other => {
                        return Err(ReservesError::Malformed(format!(
                            "a step's side is left or right, not {other:?}"
                        )));
                    }
                };
                Ok(Step {
                    side,
                    sibling: Node {
                        hash: hash_from_hex(&step.hash)?,
                        sums: parse_amounts(&step.sums)?,
                    },
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            sequence: document.sequence,
            assets: document.assets.clone(),
            leaf: Leaf {
                account: document.account,
                salt,
                owed: parse_amounts(&document.owed)?,
            },
            path,
            root: Node {
                hash: hash_from_hex(&document.root)?,
                sums: parse_amounts(&document.totals)?,
            },
        })
    }
}
