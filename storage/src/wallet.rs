//! The exchange wallet's rows: its sealed seed, each account's deposit
//! address, deposits credited, what each withdrawal sent on chain, and how far
//! sweeps have emptied the deposit addresses. One column family, keys
//! prefixed by kind:
//!
//! ```text
//! b"seed"                              → sealed seed (opaque)
//! b'a' ‖ account(8)                    → deposit address (20)
//! b'd' ‖ account(8) ‖ deposit id(8)    → DepositRow
//! b'w' ‖ withdrawal id(8)              → WithdrawalTxRow
//! b's' ‖ address(20)                   → last block a final sweep covered (8)
//! b"r"                                 → last block whose deposits are all recorded (8)
//! ```

use alloy_primitives::{Address, B256, U256};
use rocksdb::{Direction, IteratorMode};

use crate::record::{Reader, Writer};
use crate::{StorageError, Store, cf, codec};

const SEED: &[u8] = b"seed";
const ADDRESS: u8 = b'a';
const DEPOSIT: u8 = b'd';
const WITHDRAWAL: u8 = b'w';
const SWEPT: u8 = b's';
const RECORDED: &[u8] = b"r";

/// A deposit credited to an account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DepositRow {
    /// Its id (the engine credits ids in increasing order).
    pub deposit_id: u64,
    /// Account credited.
    pub account: u64,
    /// The deposit address it reached.
    pub address: Address,
    /// The block it arrived in.
    pub block: u64,
    /// The transaction that sent it to the address, if one did directly.
    pub tx_hash: Option<B256>,
    /// Wei received.
    pub wei: U256,
    /// Credited, in 10^-8 units (Wei rounded down).
    pub amount: u64,
    /// When it was credited, ms.
    pub time_ms: u64,
}

/// One signed transaction of a withdrawal, kept before it is sent.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SentTx {
    /// Its hash.
    pub hash: B256,
    /// Its max fee per gas, Wei.
    pub max_fee: u128,
    /// Its priority fee per gas, Wei.
    pub tip: u128,
    /// The signed transaction, as sent.
    pub raw: Vec<u8>,
}

/// What a withdrawal has done on chain.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct WithdrawalTxRow {
    /// The hot wallet nonce it uses (every attempt shares it).
    pub nonce: u64,
    /// Every signed attempt, oldest first (later ones replace earlier ones).
    pub sent: Vec<SentTx>,
    /// The mined attempt: its hash, block, and whether it succeeded.
    pub mined: Option<(B256, u64, bool)>,
    /// Why it failed before reaching the chain, if it did.
    pub refused: Option<String>,
}

impl DepositRow {
    fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u64(self.deposit_id);
        w.u64(self.account);
        w.bytes(self.address.as_slice());
        w.u64(self.block);
        w.bytes(self.tx_hash.as_ref().map_or(&[][..], |h| h.as_slice()));
        w.bytes(&codec::encode_wei(&self.wei));
        w.u64(self.amount);
        w.u64(self.time_ms);
        w.0
    }

    fn decode(bytes: &[u8]) -> Result<Self, StorageError> {
        let mut r = Reader::new(bytes, "deposit row")?;
        let deposit_id = r.u64()?;
        let account = r.u64()?;
        let address = fixed::<20>(&mut r)?.into();
        let block = r.u64()?;
        let hash = r.bytes()?;
        let tx_hash = match hash.len() {
            0 => None,
            32 => Some(B256::from_slice(&hash)),
            _ => return Err(r.corrupt()),
        };
        let wei = codec::decode_wei(&r.bytes()?)?;
        let row = Self {
            deposit_id,
            account,
            address,
            block,
            tx_hash,
            wei,
            amount: r.u64()?,
            time_ms: r.u64()?,
        };
        r.finish()?;
        Ok(row)
    }
}

fn fixed<const N: usize>(r: &mut Reader<'_>) -> Result<[u8; N], StorageError> {
    let bytes = r.bytes()?;
    bytes.try_into().map_err(|_| r.corrupt())
}

fn u128_bytes(w: &mut Writer, v: u128) {
    w.bytes(&v.to_be_bytes());
}

fn read_u128(r: &mut Reader<'_>) -> Result<u128, StorageError> {
    Ok(u128::from_be_bytes(fixed::<16>(r)?))
}

impl SentTx {
    pub(crate) fn write(&self, w: &mut Writer) {
        w.bytes(self.hash.as_slice());
        u128_bytes(w, self.max_fee);
        u128_bytes(w, self.tip);
        w.bytes(&self.raw);
    }

    pub(crate) fn read(r: &mut Reader<'_>) -> Result<Self, StorageError> {
        Ok(Self {
            hash: fixed::<32>(r)?.into(),
            max_fee: read_u128(r)?,
            tip: read_u128(r)?,
            raw: r.bytes()?,
        })
    }
}

impl WithdrawalTxRow {
    fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u64(self.nonce);
        w.u64(self.sent.len() as u64);
        for tx in &self.sent {
            tx.write(&mut w);
        }
        match &self.mined {
            Some((hash, block, success)) => {
                w.u8(1);
                w.bytes(hash.as_slice());
                w.u64(*block);
                w.u8(u8::from(*success));
            }
            None => w.u8(0),
        }
        match &self.refused {
            Some(reason) => {
                w.u8(1);
                w.bytes(reason.as_bytes());
            }
            None => w.u8(0),
        }
        w.0
    }

    fn decode(bytes: &[u8]) -> Result<Self, StorageError> {
        let mut r = Reader::new(bytes, "withdrawal transaction row")?;
        let nonce = r.u64()?;
        let count = r.u64()?;
        let mut sent = Vec::new();
        for _ in 0..count {
            sent.push(SentTx::read(&mut r)?);
        }
        let mined = match r.u8()? {
            0 => None,
            _ => Some((fixed::<32>(&mut r)?.into(), r.u64()?, r.u8()? != 0)),
        };
        let refused = match r.u8()? {
            0 => None,
            _ => Some(r.string()?),
        };
        r.finish()?;
        Ok(Self {
            nonce,
            sent,
            mined,
            refused,
        })
    }
}

/// The key of `account`'s deposit address row.
pub(crate) fn deposit_address_key(account: u64) -> Vec<u8> {
    key(ADDRESS, &[&account.to_be_bytes()])
}

/// The key and value of withdrawal `id`'s chain record.
pub(crate) fn withdrawal_tx_row(id: u64, row: &WithdrawalTxRow) -> (Vec<u8>, Vec<u8>) {
    (key(WITHDRAWAL, &[&id.to_be_bytes()]), row.encode())
}

fn key(kind: u8, parts: &[&[u8]]) -> Vec<u8> {
    let mut key = vec![kind];
    for part in parts {
        key.extend_from_slice(part);
    }
    key
}

impl Store {
    fn wallet_put(&self, key: &[u8], value: &[u8]) -> Result<(), StorageError> {
        self.db
            .put_cf_opt(self.cf(cf::WALLET), key, value, &Self::synced())?;
        Ok(())
    }

    /// A row of this store's chain's own wallet rows, durably.
    fn chain_wallet_put(&self, key: &[u8], value: &[u8]) -> Result<(), StorageError> {
        self.db
            .put_cf_opt(self.cf(cf::CHAIN_WALLET), key, value, &Self::synced())?;
        Ok(())
    }

    /// Shared wallet rows whose key starts with `prefix`, in key order.
    fn wallet_scan<T>(
        &self,
        prefix: &[u8],
        decode: impl Fn(&[u8], &[u8]) -> Result<T, StorageError>,
    ) -> Result<Vec<T>, StorageError> {
        self.wallet_scan_in(cf::WALLET, prefix, decode)
    }

    /// Rows of wallet family `family` whose key starts with `prefix`.
    fn wallet_scan_in<T>(
        &self,
        family: &str,
        prefix: &[u8],
        decode: impl Fn(&[u8], &[u8]) -> Result<T, StorageError>,
    ) -> Result<Vec<T>, StorageError> {
        let mut out = Vec::new();
        for item in self.db.iterator_cf(
            self.cf(family),
            IteratorMode::From(prefix, Direction::Forward),
        ) {
            let (key, value) = item?;
            if !key.starts_with(prefix) {
                break;
            }
            out.push(decode(&key, &value)?);
        }
        Ok(out)
    }

    /// The wallet's sealed seed, if one was made.
    pub fn wallet_seed(&self) -> Result<Option<Vec<u8>>, StorageError> {
        Ok(self.db.get_cf(self.cf(cf::WALLET), SEED)?)
    }

    /// Stores the wallet's sealed seed, durably.
    pub fn put_wallet_seed(&self, sealed: &[u8]) -> Result<(), StorageError> {
        self.wallet_put(SEED, sealed)
    }

    /// The deposit address given to `account`.
    pub fn deposit_address(&self, account: u64) -> Result<Option<Address>, StorageError> {
        let value = self
            .db
            .get_cf(self.cf(cf::WALLET), key(ADDRESS, &[&account.to_be_bytes()]))?;
        value
            .map(|v| {
                <[u8; 20]>::try_from(v.as_slice())
                    .map(Address::from)
                    .map_err(|_| StorageError::Corrupt {
                        what: "deposit address",
                        len: v.len(),
                    })
            })
            .transpose()
    }

    /// Records `account`'s deposit address, durably.
    pub fn put_deposit_address(&self, account: u64, address: &Address) -> Result<(), StorageError> {
        self.wallet_put(&deposit_address_key(account), address.as_slice())
    }

    /// Every deposit address, by account.
    pub fn deposit_addresses(&self) -> Result<Vec<(u64, Address)>, StorageError> {
        self.wallet_scan(&[ADDRESS], |key, value| {
            let corrupt = || StorageError::Corrupt {
                what: "deposit address row",
                len: key.len() + value.len(),
            };
            let account = codec::decode_block_number(key.get(1..).ok_or_else(corrupt)?)?;
            let address = <[u8; 20]>::try_from(value).map_err(|_| corrupt())?;
            Ok((account, Address::from(address)))
        })
    }

    /// Records a credited deposit of this store's chain, durably.
    pub fn put_deposit(&self, row: &DepositRow) -> Result<(), StorageError> {
        self.chain_wallet_put(
            &key(
                DEPOSIT,
                &[&row.account.to_be_bytes(), &row.deposit_id.to_be_bytes()],
            ),
            &row.encode(),
        )
    }

    /// `account`'s credited deposits on this store's chain, oldest first.
    pub fn deposits(&self, account: u64) -> Result<Vec<DepositRow>, StorageError> {
        self.wallet_scan_in(
            cf::CHAIN_WALLET,
            &key(DEPOSIT, &[&account.to_be_bytes()]),
            |_, value| DepositRow::decode(value),
        )
    }

    /// What withdrawal `id` has done on chain.
    pub fn withdrawal_tx(&self, id: u64) -> Result<Option<WithdrawalTxRow>, StorageError> {
        self.read(
            self.cf(cf::WALLET),
            key(WITHDRAWAL, &[&id.to_be_bytes()]),
            WithdrawalTxRow::decode,
        )
    }

    /// Records what withdrawal `id` has done on chain, durably (before a
    /// signed transaction is sent, so a restart tracks it instead of
    /// signing another).
    pub fn put_withdrawal_tx(&self, id: u64, row: &WithdrawalTxRow) -> Result<(), StorageError> {
        let (key, value) = withdrawal_tx_row(id, row);
        self.wallet_put(&key, &value)
    }

    /// Every withdrawal's chain record, by id.
    pub fn withdrawal_txs(&self) -> Result<Vec<(u64, WithdrawalTxRow)>, StorageError> {
        self.wallet_scan(&[WITHDRAWAL], |key, value| {
            let id = codec::decode_block_number(key.get(1..).unwrap_or_default())?;
            Ok((id, WithdrawalTxRow::decode(value)?))
        })
    }

    /// The last block whose deposits to `address` a final sweep covered.
    pub fn swept_through(&self, address: &Address) -> Result<Option<u64>, StorageError> {
        self.read(
            self.cf(cf::CHAIN_WALLET),
            key(SWEPT, &[address.as_slice()]),
            codec::decode_block_number,
        )
    }

    /// The last block through which every final deposit of this store's
    /// chain has its row here (the deposit scan starts after it).
    pub fn deposits_recorded_through(&self) -> Result<Option<u64>, StorageError> {
        self.read(
            self.cf(cf::CHAIN_WALLET),
            RECORDED,
            codec::decode_block_number,
        )
    }

    /// Records that every final deposit through `block` has its row here.
    pub fn put_deposits_recorded_through(&self, block: u64) -> Result<(), StorageError> {
        self.chain_wallet_put(RECORDED, &codec::encode_block_number(block))
    }

    /// Records that a final sweep covered `address`'s deposits through `block`.
    pub fn put_swept_through(&self, address: &Address, block: u64) -> Result<(), StorageError> {
        self.chain_wallet_put(
            &key(SWEPT, &[address.as_slice()]),
            &codec::encode_block_number(block),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_round_trip_and_list_by_account() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &Default::default()).unwrap();
        let address = Address::repeat_byte(7);
        store.put_deposit_address(3, &address).unwrap();
        store
            .put_deposit_address(4, &Address::repeat_byte(8))
            .unwrap();
        assert_eq!(store.deposit_address(3).unwrap(), Some(address));
        assert_eq!(store.deposit_addresses().unwrap().len(), 2);
        let deposit = DepositRow {
            deposit_id: 5 << 16,
            account: 3,
            address,
            block: 5,
            tx_hash: Some(B256::repeat_byte(1)),
            wei: U256::from(10_000_000_001u64),
            amount: 1,
            time_ms: 9,
        };
        store.put_deposit(&deposit).unwrap();
        store
            .put_deposit(&DepositRow {
                deposit_id: 6 << 16,
                tx_hash: None,
                ..deposit.clone()
            })
            .unwrap();
        let listed = store.deposits(3).unwrap();
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0], deposit);
        assert!(store.deposits(4).unwrap().is_empty());
        let tx = WithdrawalTxRow {
            nonce: 4,
            sent: vec![SentTx {
                hash: B256::repeat_byte(2),
                max_fee: 3,
                tip: 1,
                raw: vec![1, 2, 3],
            }],
            mined: Some((B256::repeat_byte(2), 12, false)),
            refused: None,
        };
        store.put_withdrawal_tx(1, &tx).unwrap();
        assert_eq!(store.withdrawal_tx(1).unwrap(), Some(tx.clone()));
        assert_eq!(store.withdrawal_txs().unwrap(), vec![(1, tx)]);
        store.put_swept_through(&address, 40).unwrap();
        assert_eq!(store.swept_through(&address).unwrap(), Some(40));
        assert_eq!(store.swept_through(&Address::ZERO).unwrap(), None);
    }
}
