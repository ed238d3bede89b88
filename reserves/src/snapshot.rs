//! A snapshot: the liabilities' tree at a ledger sequence and the reserves
//! at a block of each chain, and the document it is published as.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::proof::{Proof, ProofDocument};
use crate::tree::{Leaf, Node, SumTree};
use crate::{Hash, ReservesError, salt, to_hex};

/// Wei in one unit of an exchange amount (10^-8 of a coin of 18 decimals).
pub const WEI_PER_UNIT: u128 = 10_000_000_000;

/// What one account is owed per asset at the snapshot's sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owed {
    /// The account.
    pub account: u64,
    /// Per asset of the snapshot, in units of 10^-8: free, locked and
    /// withdrawals asked for and not yet ended.
    pub amounts: Vec<u128>,
}

/// One address the exchange controls at a block, as its wallet signed for
/// it: what a chain's wallet hands the snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedHolding {
    /// The address.
    pub address: alloy_primitives::Address,
    /// Its balance at the block, in Wei, by the index.
    pub wei: alloy_primitives::U256,
    /// The text signed.
    pub message: String,
    /// The EIP-191 signature of the text by the address's key (r, s, v).
    pub signature: [u8; 65],
}

/// One address the exchange controls, at the chain's snapshot block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Holding {
    /// `0x` and 40 hex digits.
    pub address: String,
    /// Its balance at the block, from the index, in Wei.
    #[serde(with = "decimal")]
    pub balance_wei: u128,
    /// The text signed ([`Snapshot::message`]).
    pub message: String,
    /// EIP-191 (`personal_sign`) signature of the message by the address's
    /// key: `0x`, r, s and v.
    pub signature: String,
}

/// The reserves on one chain, at one block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChainReserves {
    /// The chain's id.
    pub chain_id: u64,
    /// The asset its coin is on the exchange.
    pub coin: String,
    /// The block the balances are read at.
    pub block: u64,
    /// That block's hash, `0x` and hex.
    pub block_hash: String,
    /// Every address holding some of the coin at the block.
    pub addresses: Vec<Holding>,
}

impl ChainReserves {
    /// What the addresses hold together, in Wei.
    pub fn total_wei(&self) -> Result<u128, ReservesError> {
        self.addresses.iter().try_fold(0u128, |sum, holding| {
            sum.checked_add(holding.balance_wei)
                .ok_or(ReservesError::Overflow)
        })
    }
}

/// A snapshot taken: the liabilities' tree and the reserves.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The ledger sequence of the liabilities.
    pub sequence: u64,
    /// When it was taken, ms.
    pub taken_ms: u64,
    /// The assets, in the order of every node's sums.
    pub assets: Vec<String>,
    /// The reserves per chain.
    pub chains: Vec<ChainReserves>,
    tree: SumTree,
    leaves: Vec<Leaf>,
    index: HashMap<u64, usize>,
}

impl Snapshot {
    /// The text an address's key signs for the snapshot at `sequence`.
    pub fn message(sequence: u64, chain: &ChainReserves, address: &str) -> String {
        format!(
            "weiport proof of reserves: snapshot {sequence}; chain {} block {} ({}); address {address}",
            chain.chain_id, chain.block, chain.block_hash
        )
    }

    /// Builds the liabilities' tree over `owed` (each account's salt derived
    /// from `secret`). Leaves go in the order of their salted account ids:
    /// the same on every process, and a proof's neighbours are nobody a
    /// client can name (in account order, account N's path would show what
    /// N + 1 is owed).
    pub fn take(
        secret: &[u8; 32],
        sequence: u64,
        taken_ms: u64,
        assets: Vec<String>,
        owed: Vec<Owed>,
        chains: Vec<ChainReserves>,
    ) -> Result<Self, ReservesError> {
        let mut keyed: Vec<(Hash, Leaf)> = owed
            .into_iter()
            .map(|o| {
                let salt = salt(secret, sequence, o.account);
                let leaf = Leaf {
                    account: o.account,
                    salt,
                    owed: o.amounts,
                };
                (crate::account_id(&salt, o.account), leaf)
            })
            .collect();
        keyed.sort_unstable_by_key(|(id, _)| *id);
        let tree =
            SumTree::build_identified(assets.len(), keyed.iter().map(|(id, leaf)| (*id, leaf)))?;
        let leaves: Vec<Leaf> = keyed.into_iter().map(|(_, leaf)| leaf).collect();
        let index = leaves
            .iter()
            .enumerate()
            .map(|(i, leaf)| (leaf.account, i))
            .collect();
        Ok(Self {
            sequence,
            taken_ms,
            assets,
            chains,
            tree,
            leaves,
            index,
        })
    }

    /// The root: its hash and the total owed per asset.
    pub fn root(&self) -> Node {
        self.tree.root()
    }

    /// How many accounts the tree holds.
    pub fn accounts(&self) -> usize {
        self.tree.len()
    }

    /// Bytes the tree and its leaves hold.
    pub fn heap_bytes(&self) -> usize {
        self.tree.heap_bytes()
            + self.leaves.capacity() * (std::mem::size_of::<Leaf>() + 16 * self.assets.len())
    }

    /// `account`'s proof, if it is owed anything in this snapshot.
    pub fn proof(&self, account: u64) -> Option<Proof> {
        let index = *self.index.get(&account)?;
        Some(Proof {
            sequence: self.sequence,
            assets: self.assets.clone(),
            leaf: self.leaves[index].clone(),
            path: self.tree.path(index)?,
            root: self.tree.root(),
        })
    }

    /// Per asset: reserves on the chains listed for it (Wei), and the
    /// ratio reserves ÷ liabilities in millionths (`None`: no reserves
    /// listed for it, or it owes nothing).
    pub fn coverage(&self) -> Result<Vec<Coverage>, ReservesError> {
        let totals = self.root().sums;
        let mut covered = Vec::with_capacity(self.assets.len());
        for (asset, owed) in self.assets.iter().zip(totals) {
            let mut reserves = None;
            for chain in self.chains.iter().filter(|c| &c.coin == asset) {
                let wei = chain.total_wei()?;
                let sum: u128 = reserves.unwrap_or(0);
                reserves = Some(sum.checked_add(wei).ok_or(ReservesError::Overflow)?);
            }
            let ratio_millionths = match (reserves, owed) {
                (Some(wei), owed) if owed > 0 => {
                    let owed_wei = owed.checked_mul(WEI_PER_UNIT);
                    owed_wei.and_then(|owed_wei| wei.checked_mul(1_000_000).map(|w| w / owed_wei))
                }
                _ => None,
            };
            covered.push(Coverage {
                asset: asset.clone(),
                liabilities: owed,
                reserves_wei: reserves,
                ratio_millionths,
            });
        }
        Ok(covered)
    }

    /// The snapshot as published.
    pub fn document(&self) -> Result<SnapshotDocument, ReservesError> {
        let root = self.root();
        let coverage = self.coverage()?;
        Ok(SnapshotDocument {
            sequence: self.sequence,
            taken_at: self.taken_ms,
            assets: self.assets.clone(),
            scale: 8,
            root: to_hex(&root.hash),
            totals: root.sums.iter().map(u128::to_string).collect(),
            accounts: self.accounts() as u64,
            chains: self.chains.clone(),
            coverage: coverage.iter().map(CoverageDocument::from).collect(),
        })
    }

    /// `account`'s proof with the snapshot it belongs to, as published.
    pub fn proof_document(&self, account: u64) -> Result<Option<ProofOf>, ReservesError> {
        let Some(proof) = self.proof(account) else {
            return Ok(None);
        };
        Ok(Some(ProofOf {
            snapshot: self.document()?,
            proof: ProofDocument::from(&proof),
        }))
    }

    /// The root's hash.
    pub fn root_hash(&self) -> Hash {
        self.root().hash
    }
}

/// One asset's reserves against its liabilities.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Coverage {
    /// The asset.
    pub asset: String,
    /// What the exchange owes in it, in units of 10^-8.
    pub liabilities: u128,
    /// What its addresses hold on the chains listed for it, in Wei.
    pub reserves_wei: Option<u128>,
    /// Reserves ÷ liabilities, in millionths.
    pub ratio_millionths: Option<u128>,
}

impl Coverage {
    /// The liabilities in coins (`1.5`).
    pub fn liabilities_in_coins(&self) -> String {
        coins(self.liabilities, 8)
    }

    /// The reserves in coins, if any chain holds the asset.
    pub fn reserves_in_coins(&self) -> Option<String> {
        self.reserves_wei.map(|wei| coins(wei, 18))
    }

    /// The ratio with six decimals (`1.000000`), if there is one.
    pub fn ratio_text(&self) -> Option<String> {
        self.ratio_millionths
            .map(|r| format!("{}.{:06}", r / 1_000_000, r % 1_000_000))
    }

    /// The ratio as a number (for gauges), if there is one.
    pub fn ratio(&self) -> Option<f64> {
        self.ratio_millionths.map(|r| r as f64 / 1e6)
    }
}

/// A [`Coverage`] as published.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CoverageDocument {
    /// The asset.
    pub asset: String,
    /// Liabilities, units of 10^-8.
    pub liabilities: String,
    /// Reserves in Wei, if any chain is listed for the asset.
    pub reserves_wei: Option<String>,
    /// Reserves ÷ liabilities, six decimals.
    pub ratio: Option<String>,
}

impl From<&Coverage> for CoverageDocument {
    fn from(coverage: &Coverage) -> Self {
        Self {
            asset: coverage.asset.clone(),
            liabilities: coverage.liabilities.to_string(),
            reserves_wei: coverage.reserves_wei.map(|w| w.to_string()),
            ratio: coverage.ratio_text(),
        }
    }
}

/// A snapshot as published.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotDocument {
    /// The ledger sequence of the liabilities.
    pub sequence: u64,
    /// When it was taken, ms.
    pub taken_at: u64,
    /// The assets, in the order of `totals`.
    pub assets: Vec<String>,
    /// Decimal places of the liabilities' units.
    pub scale: u32,
    /// The liabilities' root hash, hex.
    pub root: String,
    /// Liabilities per asset, units of 10^-8.
    pub totals: Vec<String>,
    /// Accounts in the tree.
    pub accounts: u64,
    /// Reserves per chain.
    pub chains: Vec<ChainReserves>,
    /// Reserves against liabilities per asset.
    pub coverage: Vec<CoverageDocument>,
}

/// An account's proof and the snapshot it proves inclusion in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProofOf {
    /// The snapshot.
    pub snapshot: SnapshotDocument,
    /// The account's proof.
    pub proof: ProofDocument,
}

/// Wei as a decimal string on the wire.
mod decimal {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &u128, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&value.to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u128, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// `amount` units of 10^-`decimals` as a decimal number of coins.
fn coins(amount: u128, decimals: u32) -> String {
    let one = 10u128.pow(decimals);
    let fraction = format!("{:0width$}", amount % one, width = decimals as usize);
    match fraction.trim_end_matches('0') {
        "" => (amount / one).to_string(),
        fraction => format!("{}.{fraction}", amount / one),
    }
}
