//! What each address holds of ERC-721 collections and ERC-1155 contracts,
//! as the contracts answered after each block that moved it (`ownerOf`,
//! `balanceOf`): `nft_holding`: `holder ‖ contract ‖ token id ‖ block` →
//! standard ‖ amount. Undone with its block like the token balances.

use alloy_primitives::{Address, U256};
use rocksdb::ReadOptions;

use crate::codec::{ADDRESS_LEN, BLOCK_NUMBER_LEN, decode_block_number, encode_block_number};
use crate::{IndexBatch, StorageError, Store, cf};

const ID_LEN: usize = 32;
const KEY_LEN: usize = 2 * ADDRESS_LEN + ID_LEN + BLOCK_NUMBER_LEN;

/// Which standard a holding is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum NftStandard {
    /// ERC-721: an amount of 0 or 1.
    Erc721 = 1,
    /// ERC-1155: any amount.
    Erc1155 = 2,
}

/// One token of a contract an address holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NftHolding {
    /// The contract.
    pub contract: Address,
    /// The token's id.
    pub token_id: U256,
    /// How many (1 for an ERC-721 token held).
    pub amount: U256,
    /// Its standard.
    pub standard: NftStandard,
    /// The block after which it was read.
    pub block: u64,
}

pub(crate) fn holding_key(
    holder: &Address,
    contract: &Address,
    token_id: &U256,
    block: u64,
) -> [u8; KEY_LEN] {
    let mut key = [0u8; KEY_LEN];
    key[..ADDRESS_LEN].copy_from_slice(holder.as_slice());
    key[ADDRESS_LEN..2 * ADDRESS_LEN].copy_from_slice(contract.as_slice());
    key[2 * ADDRESS_LEN..2 * ADDRESS_LEN + ID_LEN].copy_from_slice(&token_id.to_be_bytes::<32>());
    key[2 * ADDRESS_LEN + ID_LEN..].copy_from_slice(&encode_block_number(block));
    key
}

impl Store {
    /// The tokens `holder` holds now (an amount above zero), of `contract`
    /// only when given, by contract and id: `skip` of them passed, at most
    /// `take`. Each (contract, id) costs one seek.
    pub fn nft_holdings(
        &self,
        holder: &Address,
        contract: Option<&Address>,
        standard: NftStandard,
        (mut skip, take): (usize, usize),
    ) -> Result<Vec<NftHolding>, StorageError> {
        let mut prefix = holder.as_slice().to_vec();
        if let Some(contract) = contract {
            prefix.extend_from_slice(contract.as_slice());
        }
        let mut read = ReadOptions::default();
        read.set_prefix_same_as_start(true);
        let mut iter = self.db.raw_iterator_cf_opt(self.cf(cf::NFT_HOLDING), read);
        iter.seek(&prefix);
        let mut found = Vec::new();
        while found.len() < take {
            let Some(key) = iter.key() else { break };
            if !key.starts_with(&prefix) || key.len() != KEY_LEN {
                break;
            }
            let contract = Address::from_slice(&key[ADDRESS_LEN..2 * ADDRESS_LEN]);
            let token_id = U256::from_be_slice(&key[2 * ADDRESS_LEN..2 * ADDRESS_LEN + ID_LEN]);
            // The pair's newest row is the last before the next pair.
            iter.seek_for_prev(holding_key(holder, &contract, &token_id, u64::MAX));
            let (Some(key), Some(value)) = (iter.key(), iter.value()) else {
                break;
            };
            let corrupt = || StorageError::Corrupt {
                what: "nft holding",
                len: value.len(),
            };
            let (kind, amount) = value.split_first().ok_or_else(corrupt)?;
            let row_standard = match kind {
                1 => NftStandard::Erc721,
                2 => NftStandard::Erc1155,
                _ => return Err(corrupt()),
            };
            let amount = U256::try_from_be_slice(amount).ok_or_else(corrupt)?;
            if row_standard == standard && !amount.is_zero() {
                if skip > 0 {
                    skip -= 1;
                } else {
                    found.push(NftHolding {
                        contract,
                        token_id,
                        amount,
                        standard,
                        block: decode_block_number(&key[2 * ADDRESS_LEN + ID_LEN..])?,
                    });
                }
            }
            iter.next();
        }
        iter.status()?;
        Ok(found)
    }
}

impl IndexBatch {
    /// Records that `holder` holds `amount` of `contract`'s token
    /// `token_id` after `block`, as the contract answered.
    pub fn put_nft_holding(
        &mut self,
        (holder, contract, token_id): (&Address, &Address, &U256),
        standard: NftStandard,
        block: u64,
        amount: &U256,
    ) {
        let mut value = vec![standard as u8];
        value.extend_from_slice(&amount.to_be_bytes_trimmed_vec());
        self.put(
            cf::NFT_HOLDING,
            holding_key(holder, contract, token_id, block),
            value,
        );
    }
}
