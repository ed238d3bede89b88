//! Value that moves inside transactions: internal transfers from call
//! traces and ERC-20 `Transfer` logs, each listed under the addresses it
//! names, and token balances as the token contracts report them after each
//! block. Written in the indexer's batches with the balances of the same
//! blocks, and undone with them on a reorganisation.
//!
//! Layout:
//! - `transfer`: `block ‖ tx index ‖ kind ‖ sequence` → the transfer.
//! - `address_transfer`: `address ‖ kind ‖ block ‖ tx index ‖ sequence` →
//!   nothing. Kinds: internal (sender, recipient, created contract), token
//!   (sender and recipient of the tokens), token contract (every transfer of
//!   that token, for `tokentx` by contract alone), and the same two for
//!   ERC-721 and for ERC-1155 transfers (each item of a batch its own row).
//! - `token_balance`: `holder ‖ token ‖ block` → balance after that block.
//! - `token_holder`: `token ‖ holder ‖ block` → the same, by token.
//! - `token`: `token` → name, symbol and decimals, read once.

use alloy_primitives::{Address, U256};
use rocksdb::{Direction, IteratorMode, ReadOptions};

use crate::codec::{ADDRESS_LEN, BLOCK_NUMBER_LEN, decode_block_number, encode_block_number};
use crate::record::{Reader, Writer};
use crate::store::meta_key;
use crate::{HistoryPage, IndexBatch, StorageError, Store, TransactionRow, cf};

/// Length of a transfer's place: block, transaction index, kind, sequence.
const PLACE_LEN: usize = BLOCK_NUMBER_LEN + 4 + 1 + 4;

mod holdings;
mod rows;

pub use holdings::{NftHolding, NftStandard};
pub use rows::{
    BLOCK_LEVEL, BeaconWithdrawal, InternalTransfer, MinedBlock, NftTransfer, TokenTransfer,
    Transfer, TransferKind,
};

/// A stored transfer with its key.
type PlacedTransfer = (Box<[u8]>, Transfer);

/// Where a transfer is: block, transaction, kind, order within both.
fn place(block: u64, tx_index: u32, kind: u8, sequence: u32) -> [u8; PLACE_LEN] {
    let mut key = [0u8; PLACE_LEN];
    key[..BLOCK_NUMBER_LEN].copy_from_slice(&encode_block_number(block));
    key[BLOCK_NUMBER_LEN..BLOCK_NUMBER_LEN + 4].copy_from_slice(&tx_index.to_be_bytes());
    key[BLOCK_NUMBER_LEN + 4] = kind;
    key[BLOCK_NUMBER_LEN + 5..].copy_from_slice(&sequence.to_be_bytes());
    key
}

fn decode_place(bytes: &[u8]) -> Result<(u64, u32, u8, u32), StorageError> {
    let bytes: [u8; PLACE_LEN] = bytes.try_into().map_err(|_| StorageError::Corrupt {
        what: "transfer place",
        len: bytes.len(),
    })?;
    let word =
        |at: usize| u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    Ok((
        decode_block_number(&bytes[..BLOCK_NUMBER_LEN])?,
        word(BLOCK_NUMBER_LEN),
        bytes[BLOCK_NUMBER_LEN + 4],
        word(BLOCK_NUMBER_LEN + 5),
    ))
}

/// `address ‖ listing kind ‖ block ‖ tx index ‖ sequence`: the place of the
/// row is the key's tail with the listing kind replaced by the row's kind.
fn listing_key(
    address: &Address,
    listing: TransferKind,
    block: u64,
    tx_index: u32,
    sequence: u32,
) -> Vec<u8> {
    let mut key = Vec::with_capacity(ADDRESS_LEN + 1 + PLACE_LEN);
    key.extend_from_slice(address.as_slice());
    key.push(listing as u8);
    key.extend_from_slice(&place(block, tx_index, listing.row_kind(), sequence));
    key
}

fn balance_key(
    holder: &Address,
    token: &Address,
    block: u64,
) -> [u8; 2 * ADDRESS_LEN + BLOCK_NUMBER_LEN] {
    let mut key = [0u8; 2 * ADDRESS_LEN + BLOCK_NUMBER_LEN];
    key[..ADDRESS_LEN].copy_from_slice(holder.as_slice());
    key[ADDRESS_LEN..2 * ADDRESS_LEN].copy_from_slice(token.as_slice());
    key[2 * ADDRESS_LEN..].copy_from_slice(&encode_block_number(block));
    key
}

/// An indexed transfer with the transaction that carried it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexedTransfer {
    /// Block number.
    pub block: u64,
    /// Position of the transaction in the block.
    pub tx_index: u32,
    /// The transaction (from the transaction index).
    pub transaction: TransactionRow,
    /// The transfer.
    pub transfer: Transfer,
}

/// A token's own description, as its contract answered once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokenInfo {
    /// `name()`, empty when it has none.
    pub name: String,
    /// `symbol()`, empty when it has none.
    pub symbol: String,
    /// `decimals()`, none when it has none.
    pub decimals: Option<u8>,
}

impl TokenInfo {
    fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.bytes(self.name.as_bytes());
        w.bytes(self.symbol.as_bytes());
        w.opt_u64(self.decimals.map(u64::from));
        w.0
    }

    fn decode(bytes: &[u8]) -> Result<Self, StorageError> {
        let mut r = Reader::new(bytes, "token info")?;
        let name = r.string()?;
        let symbol = r.string()?;
        let decimals = r
            .opt_u64()?
            .map(|d| u8::try_from(d).map_err(|_| r.corrupt()))
            .transpose()?;
        r.finish()?;
        Ok(Self {
            name,
            symbol,
            decimals,
        })
    }
}

/// A holder's balance of one token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenHolding {
    /// The token contract.
    pub token: Address,
    /// The balance `balanceOf` reported.
    pub balance: U256,
    /// The block after which it was read.
    pub block: u64,
}

/// An address history the indexer can keep besides balances, each turned
/// on and off on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistoryIndex {
    /// Transactions (`indexer.transactions`).
    Transactions,
    /// Internal transfers (`indexer.internal_transactions`).
    Internal,
    /// Token transfers and balances (`indexer.tokens`).
    Tokens,
    /// ERC-721 and ERC-1155 transfers (`indexer.tokens`; kept from the
    /// first block a build that reads them indexed).
    Nfts,
    /// Blocks mined and beacon withdrawals, by address (always kept).
    Blocks,
}

impl HistoryIndex {
    /// Every history.
    pub const ALL: [Self; 5] = [
        Self::Transactions,
        Self::Internal,
        Self::Tokens,
        Self::Nfts,
        Self::Blocks,
    ];

    fn meta_key(self) -> &'static [u8] {
        match self {
            Self::Transactions => meta_key::TRANSACTIONS_FROM,
            Self::Internal => meta_key::INTERNAL_FROM,
            Self::Tokens => meta_key::TOKENS_FROM,
            Self::Nfts => meta_key::NFTS_FROM,
            Self::Blocks => meta_key::BLOCKS_FROM,
        }
    }
}

impl Store {
    /// The first block whose transfers of `index` are indexed, once any are.
    pub fn history_indexed_from(&self, index: HistoryIndex) -> Result<Option<u64>, StorageError> {
        self.chain_meta(index.meta_key())?
            .map(|b| decode_block_number(&b))
            .transpose()
    }

    /// A page of the transfers listed under `address` as `listing`, in block
    /// order, keeping only those `keep` accepts (skip and take count those).
    pub fn address_transfers(
        &self,
        address: &Address,
        listing: TransferKind,
        page: HistoryPage,
        keep: impl Fn(&Transfer) -> bool,
    ) -> Result<Vec<IndexedTransfer>, StorageError> {
        let found = self.address_listing(address, listing, page, keep)?;
        let transactions = self.transactions_at(found.iter().map(|(b, i, _)| (*b, *i)))?;
        found
            .into_iter()
            .zip(transactions)
            .map(|((block, tx_index, transfer), transaction)| {
                Ok(IndexedTransfer {
                    block,
                    tx_index,
                    transaction: transaction.ok_or(StorageError::Corrupt {
                        what: "transfer without its transaction",
                        len: 0,
                    })?,
                    transfer,
                })
            })
            .collect()
    }

    /// A page of the rows listed under `address` as `listing` with their
    /// block and transaction index, without the transactions (block-level
    /// rows have none).
    pub fn address_listing(
        &self,
        address: &Address,
        listing: TransferKind,
        page: HistoryPage,
        keep: impl Fn(&Transfer) -> bool,
    ) -> Result<Vec<(u64, u32, Transfer)>, StorageError> {
        if page.from_block > page.to_block || page.take == 0 {
            return Ok(Vec::new());
        }
        let lower = listing_key(address, listing, page.from_block, 0, 0);
        let upper = listing_key(address, listing, page.to_block, u32::MAX, u32::MAX);
        let mut read = ReadOptions::default();
        read.set_prefix_same_as_start(true);
        let mut iter = self
            .db
            .raw_iterator_cf_opt(self.cf(cf::ADDRESS_TRANSFER), read);
        if page.descending {
            iter.seek_for_prev(&upper);
        } else {
            iter.seek(&lower);
        }
        let mut found = Vec::with_capacity(page.take.min(1024));
        let mut skipped = 0;
        while iter.valid() && found.len() < page.take {
            let Some(key) = iter.key() else { break };
            if key < &lower[..] || key > &upper[..] {
                break;
            }
            let place = &key[ADDRESS_LEN + 1..];
            let (block, tx_index, kind, _) = decode_place(place)?;
            let transfer = self
                .read(self.cf(cf::TRANSFER), place, |row| {
                    Transfer::decode(kind, row)
                })?
                .ok_or(StorageError::Corrupt {
                    what: "missing transfer row",
                    len: 0,
                })?;
            if keep(&transfer) {
                if skipped < page.skip {
                    skipped += 1;
                } else {
                    found.push((block, tx_index, transfer));
                }
            }
            if page.descending {
                iter.prev();
            } else {
                iter.next();
            }
        }
        iter.status()?;
        Ok(found)
    }

    /// A page of every transfer of one row kind in the page's blocks (all
    /// addresses), in block order, with the transactions that carried them.
    pub fn transfers_in_blocks(
        &self,
        kind: TransferKind,
        page: HistoryPage,
    ) -> Result<Vec<IndexedTransfer>, StorageError> {
        if page.from_block > page.to_block || page.take == 0 {
            return Ok(Vec::new());
        }
        let row_kind = kind.row_kind();
        let lower = place(page.from_block, 0, 0, 0);
        let upper = place(page.to_block, u32::MAX, u8::MAX, u32::MAX);
        let mut iter = self.db.raw_iterator_cf(self.cf(cf::TRANSFER));
        if page.descending {
            iter.seek_for_prev(upper);
        } else {
            iter.seek(lower);
        }
        let (mut found, mut skipped) = (Vec::new(), 0);
        while iter.valid() && found.len() < page.take {
            let (Some(key), Some(value)) = (iter.key(), iter.value()) else {
                break;
            };
            if key < &lower[..] || key > &upper[..] {
                break;
            }
            let (block, tx_index, row, _) = decode_place(key)?;
            if row == row_kind && tx_index != BLOCK_LEVEL {
                if skipped < page.skip {
                    skipped += 1;
                } else {
                    found.push((block, tx_index, Transfer::decode(row, value)?));
                }
            }
            if page.descending {
                iter.prev();
            } else {
                iter.next();
            }
        }
        iter.status()?;
        let transactions = self.transactions_at(found.iter().map(|(b, i, _)| (*b, *i)))?;
        found
            .into_iter()
            .zip(transactions)
            .filter_map(|((block, tx_index, transfer), transaction)| {
                Some(IndexedTransfer {
                    block,
                    tx_index,
                    transaction: transaction?,
                    transfer,
                })
            })
            .map(Ok)
            .collect()
    }

    /// The transfers of one kind carried by transaction `tx_index` of `block`.
    pub fn transaction_transfers(
        &self,
        block: u64,
        tx_index: u32,
        kind: TransferKind,
    ) -> Result<Vec<Transfer>, StorageError> {
        let prefix = place(block, tx_index, kind.row_kind(), 0);
        let prefix = &prefix[..PLACE_LEN - 4];
        self.db
            .iterator_cf(
                self.cf(cf::TRANSFER),
                IteratorMode::From(prefix, Direction::Forward),
            )
            .take_while(|item| item.as_ref().is_ok_and(|(key, _)| key.starts_with(prefix)))
            .map(|item| {
                let (key, value) = item?;
                Transfer::decode(decode_place(&key)?.2, &value)
            })
            .collect()
    }

    /// `block`'s transfers with their keys in `transfer`.
    fn block_transfers(&self, block: u64) -> Result<Vec<PlacedTransfer>, StorageError> {
        let prefix = encode_block_number(block);
        self.db
            .iterator_cf(
                self.cf(cf::TRANSFER),
                IteratorMode::From(&prefix, Direction::Forward),
            )
            .take_while(|item| item.as_ref().is_ok_and(|(key, _)| key.starts_with(&prefix)))
            .map(|item| {
                let (key, value) = item?;
                let kind = decode_place(&key)?.2;
                Ok((key, Transfer::decode(kind, &value)?))
            })
            .collect()
    }

    /// `holder`'s balance of `token` after block `at` (the latest indexed
    /// when none), if any transfer of it ever touched the holder.
    pub fn token_balance(
        &self,
        holder: &Address,
        token: &Address,
        at: Option<u64>,
    ) -> Result<Option<TokenHolding>, StorageError> {
        let key = balance_key(holder, token, at.unwrap_or(u64::MAX));
        let mut read = ReadOptions::default();
        read.set_prefix_same_as_start(true);
        let mut iter = self
            .db
            .raw_iterator_cf_opt(self.cf(cf::TOKEN_BALANCE), read);
        iter.seek_for_prev(key);
        let found = match (iter.key(), iter.value()) {
            (Some(k), Some(v)) if k.starts_with(&key[..2 * ADDRESS_LEN]) => Some(TokenHolding {
                token: *token,
                balance: decode_amount(v)?,
                block: decode_block_number(&k[2 * ADDRESS_LEN..])?,
            }),
            _ => None,
        };
        iter.status()?;
        Ok(found)
    }

    /// Every token `holder` has held, with its latest balance, by token
    /// address; at most `limit`.
    pub fn holder_tokens(
        &self,
        holder: &Address,
        limit: usize,
    ) -> Result<Vec<TokenHolding>, StorageError> {
        self.latest_by_pair(cf::TOKEN_BALANCE, holder, (0, limit), |_| true)
    }

    /// `token`'s holders with a balance (`TokenHolding::token` is the
    /// holder), by address: `skip` of them passed, at most `take`. Each
    /// holder costs one seek, however many blocks moved its balance.
    pub fn token_holders(
        &self,
        token: &Address,
        (skip, take): (usize, usize),
    ) -> Result<Vec<TokenHolding>, StorageError> {
        self.latest_by_pair(cf::TOKEN_HOLDER, token, (skip, take), |b| !b.is_zero())
    }

    /// The newest row of each `first ‖ second` pair of `family` (keys
    /// `first ‖ second ‖ block`), by `second`, kept by `keep`, paged.
    fn latest_by_pair(
        &self,
        family: &str,
        first: &Address,
        (mut skip, take): (usize, usize),
        keep: impl Fn(&U256) -> bool,
    ) -> Result<Vec<TokenHolding>, StorageError> {
        let mut read = ReadOptions::default();
        read.set_prefix_same_as_start(true);
        let mut iter = self.db.raw_iterator_cf_opt(self.cf(family), read);
        let mut found = Vec::new();
        iter.seek(first.as_slice());
        while found.len() < take {
            let Some(key) = iter.key() else { break };
            if !key.starts_with(first.as_slice()) || key.len() != 2 * ADDRESS_LEN + BLOCK_NUMBER_LEN
            {
                break;
            }
            let second = Address::from_slice(&key[ADDRESS_LEN..2 * ADDRESS_LEN]);
            // The pair's newest row is the last before the next pair.
            iter.seek_for_prev(balance_key(first, &second, u64::MAX));
            let (Some(key), Some(value)) = (iter.key(), iter.value()) else {
                break;
            };
            let balance = decode_amount(value)?;
            if keep(&balance) {
                if skip > 0 {
                    skip -= 1;
                } else {
                    found.push(TokenHolding {
                        token: second,
                        balance,
                        block: decode_block_number(&key[2 * ADDRESS_LEN..])?,
                    });
                }
            }
            iter.next();
        }
        iter.status()?;
        Ok(found)
    }

    /// How many holders of `token` hold a balance now: one seek each.
    pub fn token_holder_count(&self, token: &Address) -> Result<u64, StorageError> {
        Ok(self.token_holders(token, (0, usize::MAX))?.len() as u64)
    }

    /// Fills `token_holder` from `token_balance` once, for an index written
    /// before it existed; every later balance is written to both.
    pub(crate) fn build_token_holders(&self) -> Result<(), StorageError> {
        if self.chain_meta(meta_key::TOKEN_HOLDERS_BUILT)?.is_some() {
            return Ok(());
        }
        let mut batch = rocksdb::WriteBatch::default();
        let (balances, holders) = (self.cf(cf::TOKEN_BALANCE), self.cf(cf::TOKEN_HOLDER));
        for item in self.db.iterator_cf(balances, IteratorMode::Start) {
            let (key, value) = item?;
            if key.len() != 2 * ADDRESS_LEN + BLOCK_NUMBER_LEN {
                continue;
            }
            let mut mirrored = key.to_vec();
            mirrored[..ADDRESS_LEN].copy_from_slice(&key[ADDRESS_LEN..2 * ADDRESS_LEN]);
            mirrored[ADDRESS_LEN..2 * ADDRESS_LEN].copy_from_slice(&key[..ADDRESS_LEN]);
            batch.put_cf(holders, mirrored, value);
        }
        batch.put_cf(
            self.cf(cf::CHAIN_META),
            meta_key::TOKEN_HOLDERS_BUILT,
            [1u8],
        );
        self.db.write_opt(batch, &Self::synced())?;
        Ok(())
    }

    /// What the token at `token` said of itself, once read.
    pub fn token_info(&self, token: &Address) -> Result<Option<TokenInfo>, StorageError> {
        self.read(self.cf(cf::TOKEN), token.as_slice(), TokenInfo::decode)
    }
}

fn decode_amount(bytes: &[u8]) -> Result<U256, StorageError> {
    U256::try_from_be_slice(bytes).ok_or(StorageError::Corrupt {
        what: "token balance",
        len: bytes.len(),
    })
}

impl IndexBatch {
    /// Records `transfers` of transaction `tx_index` of `block`, in order,
    /// and lists each under its addresses.
    pub fn put_transfers(&mut self, block: u64, tx_index: u32, transfers: &[Transfer]) {
        // One sequence per row kind.
        let mut sequences = [0u32; TransferKind::Withdrawal as usize + 1];
        for transfer in transfers {
            let kind = transfer.kind();
            let sequence = sequences[usize::from(kind)];
            sequences[usize::from(kind)] += 1;
            for (address, listing) in transfer.listings() {
                self.put(
                    cf::ADDRESS_TRANSFER,
                    listing_key(&address, listing, block, tx_index, sequence),
                    [],
                );
            }
            self.put(
                cf::TRANSFER,
                place(block, tx_index, kind, sequence),
                transfer.encode(),
            );
        }
    }

    /// Records `holder`'s balance of `token` after `block`.
    pub fn put_token_balance(
        &mut self,
        holder: &Address,
        token: &Address,
        block: u64,
        balance: &U256,
    ) {
        self.put(
            cf::TOKEN_BALANCE,
            balance_key(holder, token, block),
            balance.to_be_bytes_trimmed_vec(),
        );
        self.put(
            cf::TOKEN_HOLDER,
            balance_key(token, holder, block),
            balance.to_be_bytes_trimmed_vec(),
        );
    }

    /// Records what a token said of itself.
    pub fn put_token_info(&mut self, token: &Address, info: &TokenInfo) {
        self.put(cf::TOKEN, token.as_slice(), info.encode());
    }

    /// Removes `block`'s transfers, their listings and the token balances
    /// read after it (a reorganisation dropped the block). Reads committed
    /// data.
    pub fn delete_block_transfers(&mut self, block: u64) -> Result<(), StorageError> {
        let placed = self.store().block_transfers(block)?;
        for (place, transfer) in placed {
            let (_, tx_index, _, sequence) = decode_place(&place)?;
            for (address, listing) in transfer.listings() {
                self.delete(
                    cf::ADDRESS_TRANSFER,
                    listing_key(&address, listing, block, tx_index, sequence),
                );
            }
            if let Transfer::Nft(t) | Transfer::MultiToken(t) = &transfer {
                for holder in [t.from, t.to] {
                    let key = holdings::holding_key(&holder, &t.token, &t.token_id, block);
                    self.delete(cf::NFT_HOLDING, key);
                }
            }
            if let Transfer::Token(t) = &transfer {
                for holder in [t.from, t.to] {
                    self.delete(cf::TOKEN_BALANCE, balance_key(&holder, &t.token, block));
                    self.delete(cf::TOKEN_HOLDER, balance_key(&t.token, &holder, block));
                }
            }
            self.delete(cf::TRANSFER, place);
        }
        Ok(())
    }

    /// Records the first block `index` covers, or forgets it (the history
    /// is off, so turning it on later never claims blocks indexed meanwhile).
    pub fn set_history_indexed_from(&mut self, index: HistoryIndex, block: Option<u64>) {
        match block {
            Some(block) => self.put(cf::CHAIN_META, index.meta_key(), encode_block_number(block)),
            None => self.delete(cf::CHAIN_META, index.meta_key()),
        }
    }
}

#[cfg(test)]
mod tests;
