//! Byte layouts of every key and value this crate writes.
//!
//! Integers are big-endian so that RocksDB's bytewise key order is numeric order.

use alloy_primitives::{Address, B256, U256};

use crate::StorageError;

/// Length of an encoded address.
pub const ADDRESS_LEN: usize = 20;
/// Length of an encoded block number.
pub const BLOCK_NUMBER_LEN: usize = 8;
/// Length of an encoded Wei amount.
pub const WEI_LEN: usize = 32;
/// Length of an encoded hash.
pub const HASH_LEN: usize = 32;

fn corrupt(what: &'static str, len: usize) -> StorageError {
    StorageError::Corrupt { what, len }
}

fn array<const N: usize>(bytes: &[u8], what: &'static str) -> Result<[u8; N], StorageError> {
    bytes.try_into().map_err(|_| corrupt(what, bytes.len()))
}

/// Encodes a block number as 8 big-endian bytes.
pub fn encode_block_number(number: u64) -> [u8; BLOCK_NUMBER_LEN] {
    number.to_be_bytes()
}

/// Decodes a block number written by [`encode_block_number`].
pub fn decode_block_number(bytes: &[u8]) -> Result<u64, StorageError> {
    Ok(u64::from_be_bytes(array(bytes, "block number")?))
}

/// Key of the `balance_at` column family: `address ‖ block`.
pub fn balance_at_key(address: &Address, block: u64) -> [u8; ADDRESS_LEN + BLOCK_NUMBER_LEN] {
    let mut key = [0u8; ADDRESS_LEN + BLOCK_NUMBER_LEN];
    key[..ADDRESS_LEN].copy_from_slice(address.as_slice());
    key[ADDRESS_LEN..].copy_from_slice(&block.to_be_bytes());
    key
}

/// Splits a `balance_at` key into its address and block number.
pub fn decode_balance_at_key(key: &[u8]) -> Result<(Address, u64), StorageError> {
    let key: [u8; ADDRESS_LEN + BLOCK_NUMBER_LEN] = array(key, "balance_at key")?;
    let address = Address::from_slice(&key[..ADDRESS_LEN]);
    Ok((address, decode_block_number(&key[ADDRESS_LEN..])?))
}

/// Encodes a Wei amount as 32 big-endian bytes.
pub fn encode_wei(wei: &U256) -> [u8; WEI_LEN] {
    wei.to_be_bytes()
}

/// Decodes a Wei amount written by [`encode_wei`].
pub fn decode_wei(bytes: &[u8]) -> Result<U256, StorageError> {
    Ok(U256::from_be_bytes(array::<WEI_LEN>(bytes, "wei")?))
}

/// The latest indexed balance of an address and the block that set it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LatestBalance {
    /// Balance in Wei after `block`.
    pub wei: U256,
    /// The block whose execution produced this balance.
    pub block: u64,
}

impl LatestBalance {
    /// `wei(32) ‖ block(8)`.
    pub fn encode(&self) -> [u8; WEI_LEN + BLOCK_NUMBER_LEN] {
        let mut out = [0u8; WEI_LEN + BLOCK_NUMBER_LEN];
        out[..WEI_LEN].copy_from_slice(&encode_wei(&self.wei));
        out[WEI_LEN..].copy_from_slice(&self.block.to_be_bytes());
        out
    }

    /// Inverse of [`LatestBalance::encode`].
    pub fn decode(bytes: &[u8]) -> Result<Self, StorageError> {
        if bytes.len() != WEI_LEN + BLOCK_NUMBER_LEN {
            return Err(corrupt("latest balance", bytes.len()));
        }
        Ok(Self {
            wei: decode_wei(&bytes[..WEI_LEN])?,
            block: decode_block_number(&bytes[WEI_LEN..])?,
        })
    }
}

/// What the index remembers of one block: its identity and, inside the reorg
/// window, which addresses it changed (the undo list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockRecord {
    /// The block's hash.
    pub hash: B256,
    /// Its parent's hash.
    pub parent_hash: B256,
    /// Addresses whose balance this block changed; empty once pruned.
    pub touched: Vec<Address>,
}

impl BlockRecord {
    /// `hash(32) ‖ parent(32) ‖ address(20)*`.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(2 * HASH_LEN + self.touched.len() * ADDRESS_LEN);
        out.extend_from_slice(self.hash.as_slice());
        out.extend_from_slice(self.parent_hash.as_slice());
        for address in &self.touched {
            out.extend_from_slice(address.as_slice());
        }
        out
    }

    /// Inverse of [`BlockRecord::encode`].
    pub fn decode(bytes: &[u8]) -> Result<Self, StorageError> {
        if bytes.len() < 2 * HASH_LEN || !(bytes.len() - 2 * HASH_LEN).is_multiple_of(ADDRESS_LEN) {
            return Err(corrupt("block record", bytes.len()));
        }
        Ok(Self {
            hash: B256::from_slice(&bytes[..HASH_LEN]),
            parent_hash: B256::from_slice(&bytes[HASH_LEN..2 * HASH_LEN]),
            touched: bytes[2 * HASH_LEN..]
                .chunks_exact(ADDRESS_LEN)
                .map(Address::from_slice)
                .collect(),
        })
    }
}

/// The indexer's position: the last block whose effects are fully stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    /// Number of the last indexed block.
    pub number: u64,
    /// Its hash, to detect a reorganisation below the cursor on restart.
    pub hash: B256,
}

impl Cursor {
    /// `number(8) ‖ hash(32)`.
    pub fn encode(&self) -> [u8; BLOCK_NUMBER_LEN + HASH_LEN] {
        let mut out = [0u8; BLOCK_NUMBER_LEN + HASH_LEN];
        out[..BLOCK_NUMBER_LEN].copy_from_slice(&self.number.to_be_bytes());
        out[BLOCK_NUMBER_LEN..].copy_from_slice(self.hash.as_slice());
        out
    }

    /// Inverse of [`Cursor::encode`].
    pub fn decode(bytes: &[u8]) -> Result<Self, StorageError> {
        let bytes: [u8; BLOCK_NUMBER_LEN + HASH_LEN] = array(bytes, "cursor")?;
        Ok(Self {
            number: decode_block_number(&bytes[..BLOCK_NUMBER_LEN])?,
            hash: B256::from_slice(&bytes[BLOCK_NUMBER_LEN..]),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_numbers_sort_numerically_as_bytes() {
        let numbers = [
            0u64,
            1,
            9,
            10,
            255,
            256,
            65_535,
            65_536,
            u64::MAX - 1,
            u64::MAX,
        ];
        let mut encoded: Vec<_> = numbers.iter().map(|n| encode_block_number(*n)).collect();
        encoded.sort();
        let decoded: Vec<u64> = encoded
            .iter()
            .map(|b| decode_block_number(b).unwrap())
            .collect();
        assert_eq!(decoded, numbers);
    }

    #[test]
    fn balance_at_keys_group_by_address_then_block() {
        let a = Address::repeat_byte(0x11);
        let b = Address::repeat_byte(0x12);
        let mut keys = [
            balance_at_key(&b, 1),
            balance_at_key(&a, 300),
            balance_at_key(&a, 2),
            balance_at_key(&b, 0),
        ];
        keys.sort();
        let decoded: Vec<_> = keys
            .iter()
            .map(|k| decode_balance_at_key(k).unwrap())
            .collect();
        assert_eq!(decoded, vec![(a, 2), (a, 300), (b, 0), (b, 1)]);
    }

    #[test]
    fn wei_round_trips_at_the_extremes() {
        for wei in [
            U256::ZERO,
            U256::from(1u8),
            U256::from(10u64).pow(U256::from(24u8)),
            U256::MAX,
        ] {
            assert_eq!(decode_wei(&encode_wei(&wei)).unwrap(), wei);
        }
    }

    #[test]
    fn latest_balance_round_trips() {
        let value = LatestBalance {
            wei: U256::from(123_456_789u64),
            block: 42,
        };
        assert_eq!(LatestBalance::decode(&value.encode()).unwrap(), value);
    }

    #[test]
    fn block_record_round_trips_with_and_without_touched() {
        let mut record = BlockRecord {
            hash: B256::repeat_byte(1),
            parent_hash: B256::repeat_byte(2),
            touched: vec![],
        };
        assert_eq!(BlockRecord::decode(&record.encode()).unwrap(), record);
        record.touched = vec![Address::repeat_byte(3), Address::repeat_byte(4)];
        assert_eq!(BlockRecord::decode(&record.encode()).unwrap(), record);
    }

    #[test]
    fn cursor_round_trips() {
        let cursor = Cursor {
            number: 7,
            hash: B256::repeat_byte(9),
        };
        assert_eq!(Cursor::decode(&cursor.encode()).unwrap(), cursor);
    }

    #[test]
    fn truncated_values_are_reported_not_panicked() {
        assert!(matches!(
            LatestBalance::decode(&[0u8; 39]),
            Err(StorageError::Corrupt {
                what: "latest balance",
                len: 39
            })
        ));
        assert!(BlockRecord::decode(&[0u8; 64 + 19]).is_err());
        assert!(Cursor::decode(&[]).is_err());
        assert!(decode_wei(&[0u8; 31]).is_err());
        assert!(decode_balance_at_key(&[0u8; 27]).is_err());
    }
}
