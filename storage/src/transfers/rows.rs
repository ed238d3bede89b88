//! The rows of the transfer index: what moved (internal calls, ERC-20,
//! ERC-721 and ERC-1155 transfers, a block's fees and withdrawals), their
//! bytes, and the lists each row appears in.

use alloy_primitives::{Address, U256};

use crate::StorageError;
use crate::record::{Reader, Writer};

/// What a listing under an address holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum TransferKind {
    /// Internal transfers the address sent, received or was created by.
    Internal = 0,
    /// Token transfers the address sent or received.
    Token = 1,
    /// Every transfer of the token at that address.
    TokenContract = 2,
    /// ERC-721 transfers the address sent or received.
    Nft = 3,
    /// ERC-1155 transfers the address sent or received.
    MultiToken = 4,
    /// Every ERC-721 transfer of the collection at that address.
    NftContract = 5,
    /// Every ERC-1155 transfer of the contract at that address.
    MultiTokenContract = 6,
    /// The blocks the address mined (received the fees of).
    Mined = 7,
    /// The beacon chain withdrawals credited to the address.
    Withdrawal = 8,
}

/// Rows of a whole block rather than of one of its transactions stand at
/// this transaction index.
pub const BLOCK_LEVEL: u32 = u32::MAX;

/// A block an address mined, as `getminedblocks` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MinedBlock {
    /// The block's time, seconds.
    pub timestamp: u64,
    /// The priority fees it paid its miner; none when the transactions
    /// (and so their fees) are not indexed.
    pub reward: Option<U256>,
}

/// An EIP-4895 withdrawal from the beacon chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BeaconWithdrawal {
    /// Its index.
    pub index: u64,
    /// The validator's index.
    pub validator: u64,
    /// Amount in Gwei.
    pub amount_gwei: u64,
    /// The block's time, seconds.
    pub timestamp: u64,
}

impl TransferKind {
    /// The kind of the stored row (a contract's list holds its own rows).
    pub(super) fn row_kind(self) -> u8 {
        match self {
            Self::Internal => Self::Internal as u8,
            Self::Token | Self::TokenContract => Self::Token as u8,
            Self::Nft | Self::NftContract => Self::Nft as u8,
            Self::MultiToken | Self::MultiTokenContract => Self::MultiToken as u8,
            Self::Mined => Self::Mined as u8,
            Self::Withdrawal => Self::Withdrawal as u8,
        }
    }
}

/// An ERC-721 `Transfer` or an item of an ERC-1155 `TransferSingle` or
/// `TransferBatch`, as logged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NftTransfer {
    /// The contract that logged it.
    pub token: Address,
    /// Sender (zero for a mint).
    pub from: Address,
    /// Recipient (zero for a burn).
    pub to: Address,
    /// The token's id.
    pub token_id: U256,
    /// How many (1 for ERC-721).
    pub value: U256,
    /// Who moved them (ERC-1155's operator; none for ERC-721).
    pub operator: Option<Address>,
    /// Position of the log in the block.
    pub log_index: u32,
}

/// A call frame of a transaction (not its top frame), as `txlistinternal`
/// shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InternalTransfer {
    /// Calling contract.
    pub from: Address,
    /// Callee; none for a creation.
    pub to: Option<Address>,
    /// Value moved, in Wei.
    pub value: U256,
    /// The contract a creation made.
    pub contract_address: Option<Address>,
    /// Call data (creation code for a creation).
    pub input: Vec<u8>,
    /// `call`, `create`, `create2`, `selfdestruct`… lowercased.
    pub call_type: String,
    /// Gas given to the frame.
    pub gas: u64,
    /// Gas the frame used.
    pub gas_used: u64,
    /// Etherscan's trace id: the frame's path of child indices, `0_1_0`.
    pub trace_id: String,
    /// Why the frame (or a frame around it) failed; its value did not move.
    pub error: Option<String>,
}

/// An ERC-20 `Transfer` log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenTransfer {
    /// The token contract that logged it.
    pub token: Address,
    /// Sender of the tokens.
    pub from: Address,
    /// Recipient of the tokens.
    pub to: Address,
    /// Amount in the token's smallest unit, as logged.
    pub value: U256,
    /// Position of the log in the block.
    pub log_index: u32,
}

/// A transfer of either kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transfer {
    /// From a call trace.
    Internal(InternalTransfer),
    /// From a `Transfer` log.
    Token(TokenTransfer),
    /// From an ERC-721 `Transfer` log.
    Nft(NftTransfer),
    /// From an ERC-1155 `TransferSingle` or `TransferBatch` log.
    MultiToken(NftTransfer),
    /// A block's fees to its miner (at [`BLOCK_LEVEL`], listed under the
    /// miner).
    Mined(Address, MinedBlock),
    /// A beacon chain withdrawal (at [`BLOCK_LEVEL`], listed under its
    /// recipient).
    Withdrawal(Address, BeaconWithdrawal),
}

impl Transfer {
    pub(super) fn kind(&self) -> u8 {
        match self {
            Self::Internal(_) => TransferKind::Internal as u8,
            Self::Token(_) => TransferKind::Token as u8,
            Self::Nft(_) => TransferKind::Nft as u8,
            Self::MultiToken(_) => TransferKind::MultiToken as u8,
            Self::Mined(..) => TransferKind::Mined as u8,
            Self::Withdrawal(..) => TransferKind::Withdrawal as u8,
        }
    }

    pub(super) fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        match self {
            Self::Internal(t) => {
                w.bytes(t.from.as_slice());
                w.opt_address(t.to.as_ref());
                w.bytes(&t.value.to_be_bytes_trimmed_vec());
                w.opt_address(t.contract_address.as_ref());
                w.bytes(&t.input);
                w.bytes(t.call_type.as_bytes());
                w.u64(t.gas);
                w.u64(t.gas_used);
                w.bytes(t.trace_id.as_bytes());
                match &t.error {
                    Some(error) => {
                        w.u8(1);
                        w.bytes(error.as_bytes());
                    }
                    None => w.u8(0),
                }
            }
            Self::Token(t) => {
                w.bytes(t.token.as_slice());
                w.bytes(t.from.as_slice());
                w.bytes(t.to.as_slice());
                w.bytes(&t.value.to_be_bytes_trimmed_vec());
                w.u64(u64::from(t.log_index));
            }
            Self::Nft(t) | Self::MultiToken(t) => {
                w.bytes(t.token.as_slice());
                w.bytes(t.from.as_slice());
                w.bytes(t.to.as_slice());
                w.bytes(&t.token_id.to_be_bytes_trimmed_vec());
                w.bytes(&t.value.to_be_bytes_trimmed_vec());
                w.opt_address(t.operator.as_ref());
                w.u64(u64::from(t.log_index));
            }
            Self::Mined(miner, block) => {
                w.bytes(miner.as_slice());
                w.u64(block.timestamp);
                match &block.reward {
                    Some(reward) => {
                        w.u8(1);
                        w.bytes(&reward.to_be_bytes_trimmed_vec());
                    }
                    None => w.u8(0),
                }
            }
            Self::Withdrawal(to, withdrawal) => {
                w.bytes(to.as_slice());
                w.u64(withdrawal.index);
                w.u64(withdrawal.validator);
                w.u64(withdrawal.amount_gwei);
                w.u64(withdrawal.timestamp);
            }
        }
        w.0
    }

    pub(super) fn decode(kind: u8, bytes: &[u8]) -> Result<Self, StorageError> {
        let mut r = Reader::new(bytes, "transfer row")?;
        let amount = |r: &mut Reader<'_>| -> Result<U256, StorageError> {
            U256::try_from_be_slice(&r.bytes()?).ok_or_else(|| r.corrupt())
        };
        let transfer = if kind == TransferKind::Internal as u8 {
            let from = r.address()?;
            let to = r.opt_address()?;
            let value = amount(&mut r)?;
            let contract_address = r.opt_address()?;
            let input = r.bytes()?;
            let call_type = r.string()?;
            let gas = r.u64()?;
            let gas_used = r.u64()?;
            let trace_id = r.string()?;
            let error = match r.u8()? {
                0 => None,
                _ => Some(r.string()?),
            };
            Self::Internal(InternalTransfer {
                from,
                to,
                value,
                contract_address,
                input,
                call_type,
                gas,
                gas_used,
                trace_id,
                error,
            })
        } else if kind == TransferKind::Mined as u8 {
            let miner = r.address()?;
            let timestamp = r.u64()?;
            let reward = match r.u8()? {
                0 => None,
                _ => Some(amount(&mut r)?),
            };
            Self::Mined(miner, MinedBlock { timestamp, reward })
        } else if kind == TransferKind::Withdrawal as u8 {
            Self::Withdrawal(
                r.address()?,
                BeaconWithdrawal {
                    index: r.u64()?,
                    validator: r.u64()?,
                    amount_gwei: r.u64()?,
                    timestamp: r.u64()?,
                },
            )
        } else if kind == TransferKind::Nft as u8 || kind == TransferKind::MultiToken as u8 {
            let transfer = NftTransfer {
                token: r.address()?,
                from: r.address()?,
                to: r.address()?,
                token_id: amount(&mut r)?,
                value: amount(&mut r)?,
                operator: r.opt_address()?,
                log_index: u32::try_from(r.u64()?).map_err(|_| r.corrupt())?,
            };
            if kind == TransferKind::Nft as u8 {
                Self::Nft(transfer)
            } else {
                Self::MultiToken(transfer)
            }
        } else {
            let token = r.address()?;
            let from = r.address()?;
            let to = r.address()?;
            let value = amount(&mut r)?;
            let log_index = u32::try_from(r.u64()?).map_err(|_| r.corrupt())?;
            Self::Token(TokenTransfer {
                token,
                from,
                to,
                value,
                log_index,
            })
        };
        r.finish()?;
        Ok(transfer)
    }

    /// The lists this transfer appears in, each once.
    pub(super) fn listings(&self) -> Vec<(Address, TransferKind)> {
        let mut listings = Vec::with_capacity(3);
        let mut add = |address: Address, kind: TransferKind| {
            if !listings.contains(&(address, kind)) {
                listings.push((address, kind));
            }
        };
        match self {
            Self::Internal(t) => {
                add(t.from, TransferKind::Internal);
                for address in [t.to, t.contract_address].into_iter().flatten() {
                    add(address, TransferKind::Internal);
                }
            }
            Self::Token(t) => {
                add(t.from, TransferKind::Token);
                add(t.to, TransferKind::Token);
                add(t.token, TransferKind::TokenContract);
            }
            Self::Nft(t) => {
                add(t.from, TransferKind::Nft);
                add(t.to, TransferKind::Nft);
                add(t.token, TransferKind::NftContract);
            }
            Self::MultiToken(t) => {
                add(t.from, TransferKind::MultiToken);
                add(t.to, TransferKind::MultiToken);
                add(t.token, TransferKind::MultiTokenContract);
            }
            Self::Mined(miner, _) => add(*miner, TransferKind::Mined),
            Self::Withdrawal(to, _) => add(*to, TransferKind::Withdrawal),
        }
        listings
    }
}
