//! The liabilities' Merkle sum tree.
//!
//! Every node commits to a hash and to one sum per asset. A leaf's hash
//! covers the account (through a salt only its owner and the exchange
//! know) and what the exchange owes it of each asset; an inner node's hash
//! covers each child's hash and each child's sums, and its own sums are
//! theirs added. Committing to each child's sums, not only to their total,
//! is what keeps a sibling's sums honest in a proof: with the total alone,
//! two siblings could each be shown the other as smaller than it is, and
//! the smaller of their claims would vanish from the root. Sums are
//! unsigned, so no subtree can hide a debt that cancels another account's
//! claim, and the root's sums are the exchange's total liabilities per
//! asset.
//!
//! Bytes hashed (SHA-256; integers big-endian; sums as 16 bytes each, in
//! the snapshot's asset order):
//! - account id: `"weiport/reserves/account" ‖ salt(32) ‖ account(8)`
//! - leaf: `0x00 ‖ account id(32) ‖ sums`
//! - inner node: `0x01 ‖ left(32) ‖ left's sums ‖ right(32) ‖ right's sums`
//! - the filler paired with the last node of a level of odd length:
//!   `0x02`, with sums of zero.

use sha2::{Digest, Sha256};

use crate::ReservesError;

/// A SHA-256 digest.
pub type Hash = [u8; 32];

/// One node: its hash and its sums per asset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// The node's hash.
    pub hash: Hash,
    /// Its sums, one per asset of the snapshot, in units of 10^-8.
    pub sums: Vec<u128>,
}

/// What one account is owed, as the tree's leaf.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leaf {
    /// The account.
    pub account: u64,
    /// The account's salt in this snapshot.
    pub salt: Hash,
    /// What the exchange owes it per asset, in units of 10^-8.
    pub owed: Vec<u128>,
}

/// The hash that stands for an account in one snapshot.
pub fn account_id(salt: &Hash, account: u64) -> Hash {
    let mut hasher = Sha256::new();
    hasher.update(b"weiport/reserves/account");
    hasher.update(salt);
    hasher.update(account.to_be_bytes());
    hasher.finalize().into()
}

/// SHA-256 of `tag` and each part: a hash, then its sums.
fn hash_node(tag: u8, parts: &[(&Hash, &[u128])]) -> Hash {
    let mut hasher = Sha256::new();
    hasher.update([tag]);
    for (hash, sums) in parts {
        hasher.update(hash);
        for sum in *sums {
            hasher.update(sum.to_be_bytes());
        }
    }
    hasher.finalize().into()
}

/// The hash of the leaf of the account `id` stands for, owed `owed`.
fn leaf_hash(id: &Hash, owed: &[u128]) -> Hash {
    hash_node(0, &[(id, owed)])
}

impl Leaf {
    /// The leaf's node.
    pub fn node(&self) -> Node {
        Node {
            hash: leaf_hash(&account_id(&self.salt, self.account), &self.owed),
            sums: self.owed.clone(),
        }
    }
}

/// The filler paired with the last node of a level of odd length.
pub fn filler(assets: usize) -> Node {
    Node {
        hash: hash_node(2, &[]),
        sums: vec![0; assets],
    }
}

/// The parent of `left` and `right`; fails if a sum overflows.
pub fn parent(left: &Node, right: &Node) -> Result<Node, ReservesError> {
    if left.sums.len() != right.sums.len() {
        return Err(ReservesError::AssetCount);
    }
    let sums = left
        .sums
        .iter()
        .zip(&right.sums)
        .map(|(a, b)| a.checked_add(*b).ok_or(ReservesError::Overflow))
        .collect::<Result<Vec<u128>, _>>()?;
    Ok(Node {
        hash: hash_node(1, &[(&left.hash, &left.sums), (&right.hash, &right.sums)]),
        sums,
    })
}

/// Which side of its parent a path's sibling is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The sibling is the left child; the path's node the right.
    Left,
    /// The sibling is the right child.
    Right,
}

/// A sibling on the way from a leaf to the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// Which side the sibling is on.
    pub side: Side,
    /// The sibling.
    pub sibling: Node,
}

/// The whole tree, kept level by level (leaves first) to answer proofs.
#[derive(Debug, Clone)]
pub struct SumTree {
    assets: usize,
    /// Hashes of every level, flat.
    hashes: Vec<Vec<Hash>>,
    /// Sums of every level, `assets` per node, flat.
    sums: Vec<Vec<u128>>,
}

impl SumTree {
    /// Builds the tree over `leaves`, in their order; every leaf must owe
    /// `assets` sums.
    pub fn build(assets: usize, leaves: &[Leaf]) -> Result<Self, ReservesError> {
        let ids = leaves
            .iter()
            .map(|leaf| account_id(&leaf.salt, leaf.account));
        Self::build_identified(assets, ids.zip(leaves))
    }

    /// [`SumTree::build`] over leaves whose accounts' ids (their
    /// [`account_id`]) are known already: each hashed once.
    pub(crate) fn build_identified<'a>(
        assets: usize,
        leaves: impl ExactSizeIterator<Item = (Hash, &'a Leaf)>,
    ) -> Result<Self, ReservesError> {
        let mut hashes = Vec::with_capacity(leaves.len());
        let mut sums = Vec::with_capacity(leaves.len() * assets);
        for (id, leaf) in leaves {
            if leaf.owed.len() != assets {
                return Err(ReservesError::AssetCount);
            }
            hashes.push(leaf_hash(&id, &leaf.owed));
            sums.extend_from_slice(&leaf.owed);
        }
        let mut tree = Self {
            assets,
            hashes: vec![hashes],
            sums: vec![sums],
        };
        while tree.hashes.last().map_or(0, Vec::len) > 1 {
            tree.grow()?;
        }
        Ok(tree)
    }

    /// Adds the level above the top one.
    fn grow(&mut self) -> Result<(), ReservesError> {
        let below = self.hashes.len() - 1;
        let count = self.hashes[below].len();
        let mut hashes = Vec::with_capacity(count.div_ceil(2));
        let mut sums = Vec::with_capacity(count.div_ceil(2) * self.assets);
        for pair in 0..count.div_ceil(2) {
            let left = self.node(below, 2 * pair);
            let right = if 2 * pair + 1 < count {
                self.node(below, 2 * pair + 1)
            } else {
                filler(self.assets)
            };
            let up = parent(&left, &right)?;
            hashes.push(up.hash);
            sums.extend_from_slice(&up.sums);
        }
        self.hashes.push(hashes);
        self.sums.push(sums);
        Ok(())
    }

    fn node(&self, level: usize, index: usize) -> Node {
        let at = index * self.assets;
        Node {
            hash: self.hashes[level][index],
            sums: self.sums[level][at..at + self.assets].to_vec(),
        }
    }

    /// The root: its hash and the total owed per asset (the filler when
    /// there is no account).
    pub fn root(&self) -> Node {
        let top = self.hashes.len() - 1;
        if self.hashes[top].is_empty() {
            return filler(self.assets);
        }
        self.node(top, 0)
    }

    /// How many leaves.
    pub fn len(&self) -> usize {
        self.hashes[0].len()
    }

    /// Whether it has no leaf.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The siblings from leaf `index` up to the root.
    pub fn path(&self, index: usize) -> Option<Vec<Step>> {
        if index >= self.len() {
            return None;
        }
        let mut steps = Vec::with_capacity(self.hashes.len());
        let mut at = index;
        for level in 0..self.hashes.len() - 1 {
            let count = self.hashes[level].len();
            let step = if at.is_multiple_of(2) {
                let sibling = if at + 1 < count {
                    self.node(level, at + 1)
                } else {
                    filler(self.assets)
                };
                Step {
                    side: Side::Right,
                    sibling,
                }
            } else {
                Step {
                    side: Side::Left,
                    sibling: self.node(level, at - 1),
                }
            };
            steps.push(step);
            at /= 2;
        }
        Some(steps)
    }

    /// Bytes the tree holds (hashes and sums of every level).
    pub fn heap_bytes(&self) -> usize {
        let hashes: usize = self.hashes.iter().map(|l| l.capacity() * 32).sum();
        let sums: usize = self.sums.iter().map(|l| l.capacity() * 16).sum();
        hashes + sums
    }
}

/// Recomputes the root from `leaf` and `path`: the root it leads to.
pub fn climb(leaf: &Leaf, path: &[Step]) -> Result<Node, ReservesError> {
    let mut node = leaf.node();
    for step in path {
        node = match step.side {
            Side::Right => parent(&node, &step.sibling)?,
            Side::Left => parent(&step.sibling, &node)?,
        };
    }
    Ok(node)
}
