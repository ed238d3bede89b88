//! The exchange's command log: every command the engine applied, in
//! sequence order. Replaying it rebuilds books, balances and counters exactly.

use rocksdb::IteratorMode;

use crate::record::{Reader, Writer};
use crate::{StorageError, Store, cf, codec};

/// An order as logged; enums are small integers the exchange defines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderRecord {
    /// Market symbol.
    pub symbol: String,
    /// Side tag.
    pub side: u8,
    /// Order type tag.
    pub order_type: u8,
    /// Time-in-force tag.
    pub time_in_force: u8,
    /// Base quantity in 10^-8 units.
    pub quantity: Option<u64>,
    /// Quote quantity in 10^-8 units.
    pub quote_quantity: Option<u64>,
    /// Price in 10^-8 units.
    pub price: Option<u64>,
    /// Client order id.
    pub client_order_id: Option<String>,
    /// Response type tag.
    pub response_type: u8,
    /// Self-trade prevention tag.
    pub stp: u8,
    /// Conditional orders: stop price in 10^-8 units.
    pub stop_price: Option<u64>,
    /// Conditional orders: trailing delta in basis points.
    pub trailing_delta: Option<u64>,
}

/// One logged engine command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandRecord {
    /// Funds added.
    Credit {
        /// Account.
        account: u64,
        /// Asset.
        asset: String,
        /// Amount in 10^-8 units.
        amount: u64,
    },
    /// Funds removed.
    Debit {
        /// Account.
        account: u64,
        /// Asset.
        asset: String,
        /// Amount in 10^-8 units.
        amount: u64,
    },
    /// An on-chain deposit credited (ids only grow).
    Deposit {
        /// Account.
        account: u64,
        /// Asset.
        asset: String,
        /// Amount in 10^-8 units.
        amount: u64,
        /// The deposit's id.
        deposit_id: u64,
        /// Its network: 0 for the first chain, else its chain id (absent
        /// from records written before there were several).
        network: u64,
    },
    /// A withdrawal asked for: amount and fee held from the account.
    Withdraw {
        /// Account.
        account: u64,
        /// Asset.
        asset: String,
        /// Amount in 10^-8 units.
        amount: u64,
        /// Fee in 10^-8 units.
        fee: u64,
        /// The client's id for it.
        client_id: Option<String>,
        /// Where it goes (20 bytes).
        destination: [u8; 20],
        /// When it was asked for, ms.
        requested_ms: u64,
        /// Its network: 0 for the first chain, else its chain id.
        network: u64,
    },
    /// A withdrawal ended: completed on chain, or failed and refunded.
    SettleWithdrawal {
        /// Its id.
        withdrawal_id: u64,
        /// Whether it completed.
        completed: bool,
    },
    /// A signed transaction paying a pending withdrawal, recorded before it is sent.
    WithdrawalSigned {
        /// The withdrawal's id.
        withdrawal_id: u64,
        /// The hot wallet nonce it uses.
        nonce: u64,
        /// The transaction.
        tx: crate::SentTx,
    },
    /// An account's deposit address, assigned once.
    DepositAddress {
        /// Account.
        account: u64,
        /// The address (20 bytes).
        address: [u8; 20],
    },
    /// An order placed.
    Place {
        /// Account.
        account: u64,
        /// Engine time, ms.
        time_ms: u64,
        /// The order.
        order: OrderRecord,
    },
    /// An order canceled.
    Cancel {
        /// Account.
        account: u64,
        /// Engine time, ms.
        time_ms: u64,
        /// Market.
        symbol: String,
        /// Order id.
        order_id: u64,
        /// The cancel request's own client id, if its client gave one.
        cancel_client_id: Option<String>,
    },
    /// An order list placed.
    PlaceList {
        /// Account.
        account: u64,
        /// Engine time, ms.
        time_ms: u64,
        /// Contingency tag.
        contingency: u8,
        /// The list's client id.
        list_client_id: Option<String>,
        /// OTO and OTOCO: the working order.
        working: Option<OrderRecord>,
        /// The other orders.
        pending: Vec<OrderRecord>,
    },
    /// An order canceled and another placed in one step.
    Replace {
        /// Account.
        account: u64,
        /// Engine time, ms.
        time_ms: u64,
        /// The order canceled.
        order_id: u64,
        /// Whether the new order goes in even if the cancel fails.
        allow_failure: bool,
        /// The order placed.
        order: OrderRecord,
        /// The cancel request's own client id, if its client gave one.
        cancel_client_id: Option<String>,
    },
    /// An order's quantity reduced in place.
    Amend {
        /// Account.
        account: u64,
        /// Engine time, ms.
        time_ms: u64,
        /// Market.
        symbol: String,
        /// Order id.
        order_id: u64,
        /// Its new quantity in 10^-8 units.
        quantity: u64,
        /// Its new client order id.
        client_order_id: Option<String>,
    },
    /// An order list canceled.
    CancelList {
        /// Account.
        account: u64,
        /// Engine time, ms.
        time_ms: u64,
        /// Market.
        symbol: String,
        /// List id.
        list_id: u64,
        /// The cancel request's own client id, if its client gave one.
        cancel_client_id: Option<String>,
    },
    /// Every open order of an account on one market canceled.
    CancelAll {
        /// Account.
        account: u64,
        /// Engine time, ms.
        time_ms: u64,
        /// Market.
        symbol: String,
    },
}

/// A cancel's own client id, appended only when given: records from before
/// cancels carried one, and cancels without one, stay byte for byte the same.
fn write_cancel_client_id(w: &mut Writer, id: Option<&str>) {
    if let Some(id) = id {
        w.bytes(id.as_bytes());
    }
}

/// What [`write_cancel_client_id`] appended, if anything.
fn read_cancel_client_id(r: &mut Reader<'_>) -> Result<Option<String>, StorageError> {
    if r.at_end() {
        return Ok(None);
    }
    r.string().map(Some)
}

fn write_opt_string(w: &mut Writer, text: Option<&str>) {
    match text {
        Some(text) => {
            w.u8(1);
            w.bytes(text.as_bytes());
        }
        None => w.u8(0),
    }
}

fn read_opt_string(r: &mut Reader<'_>) -> Result<Option<String>, StorageError> {
    Ok(match r.u8()? {
        0 => None,
        _ => Some(r.string()?),
    })
}

/// A field appended after the rest; records written before it existed end
/// without it and read as 0.
fn trailing_u64(r: &mut Reader<'_>) -> Result<u64, StorageError> {
    if r.at_end() { Ok(0) } else { r.u64() }
}

/// An order without its trigger, which goes last in a single order's record.
fn write_order(w: &mut Writer, order: &OrderRecord) {
    w.bytes(order.symbol.as_bytes());
    for tag in [
        order.side,
        order.order_type,
        order.time_in_force,
        order.response_type,
        order.stp,
    ] {
        w.u8(tag);
    }
    w.opt_u64(order.quantity);
    w.opt_u64(order.quote_quantity);
    w.opt_u64(order.price);
    write_opt_string(w, order.client_order_id.as_deref());
}

fn write_trigger(w: &mut Writer, order: &OrderRecord) {
    w.opt_u64(order.stop_price);
    w.opt_u64(order.trailing_delta);
}

fn read_order(r: &mut Reader<'_>) -> Result<OrderRecord, StorageError> {
    let symbol = r.string()?;
    let (side, order_type, time_in_force, response_type, stp) =
        (r.u8()?, r.u8()?, r.u8()?, r.u8()?, r.u8()?);
    let (quantity, quote_quantity, price) = (r.opt_u64()?, r.opt_u64()?, r.opt_u64()?);
    Ok(OrderRecord {
        symbol,
        side,
        order_type,
        time_in_force,
        quantity,
        quote_quantity,
        price,
        client_order_id: read_opt_string(r)?,
        response_type,
        stp,
        stop_price: None,
        trailing_delta: None,
    })
}

fn read_trigger(r: &mut Reader<'_>, order: &mut OrderRecord) -> Result<(), StorageError> {
    order.stop_price = r.opt_u64()?;
    order.trailing_delta = r.opt_u64()?;
    Ok(())
}

/// Which command a record holds: the byte after the record's version.
/// Every command log entry stores one, so each number is fixed for good: a
/// new command takes the next number, and none is reused or renumbered.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandTag {
    /// [`CommandRecord::Credit`].
    Credit = 0,
    /// [`CommandRecord::Debit`].
    Debit = 1,
    /// [`CommandRecord::Place`].
    Place = 2,
    /// [`CommandRecord::Cancel`].
    Cancel = 3,
    /// [`CommandRecord::CancelAll`].
    CancelAll = 4,
    /// [`CommandRecord::PlaceList`].
    PlaceList = 5,
    /// [`CommandRecord::CancelList`].
    CancelList = 6,
    /// [`CommandRecord::Replace`].
    Replace = 7,
    /// [`CommandRecord::Amend`].
    Amend = 8,
    /// [`CommandRecord::Deposit`].
    Deposit = 9,
    /// [`CommandRecord::Withdraw`].
    Withdraw = 10,
    /// [`CommandRecord::SettleWithdrawal`].
    SettleWithdrawal = 11,
    /// [`CommandRecord::WithdrawalSigned`].
    WithdrawalSigned = 12,
    /// [`CommandRecord::DepositAddress`].
    DepositAddress = 13,
}

impl CommandTag {
    /// Every tag, each at the index of its number.
    pub const ALL: [Self; 14] = [
        Self::Credit,
        Self::Debit,
        Self::Place,
        Self::Cancel,
        Self::CancelAll,
        Self::PlaceList,
        Self::CancelList,
        Self::Replace,
        Self::Amend,
        Self::Deposit,
        Self::Withdraw,
        Self::SettleWithdrawal,
        Self::WithdrawalSigned,
        Self::DepositAddress,
    ];
}

// Numbers without gaps, each tag at its own index in `ALL`: what reading a
// tag relies on.
const _: () = {
    let mut index = 0;
    while index < CommandTag::ALL.len() {
        assert!(CommandTag::ALL[index] as usize == index);
        index += 1;
    }
};

/// A byte that is no command's tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("no command has tag {0}")]
pub struct UnknownCommandTag(pub u8);

impl TryFrom<u8> for CommandTag {
    type Error = UnknownCommandTag;

    fn try_from(byte: u8) -> Result<Self, Self::Error> {
        Self::ALL
            .get(usize::from(byte))
            .copied()
            .ok_or(UnknownCommandTag(byte))
    }
}

impl CommandRecord {
    /// Which command it is.
    pub fn tag(&self) -> CommandTag {
        match self {
            Self::Credit { .. } => CommandTag::Credit,
            Self::Debit { .. } => CommandTag::Debit,
            Self::Place { .. } => CommandTag::Place,
            Self::Cancel { .. } => CommandTag::Cancel,
            Self::CancelAll { .. } => CommandTag::CancelAll,
            Self::PlaceList { .. } => CommandTag::PlaceList,
            Self::CancelList { .. } => CommandTag::CancelList,
            Self::Replace { .. } => CommandTag::Replace,
            Self::Amend { .. } => CommandTag::Amend,
            Self::Deposit { .. } => CommandTag::Deposit,
            Self::Withdraw { .. } => CommandTag::Withdraw,
            Self::SettleWithdrawal { .. } => CommandTag::SettleWithdrawal,
            Self::WithdrawalSigned { .. } => CommandTag::WithdrawalSigned,
            Self::DepositAddress { .. } => CommandTag::DepositAddress,
        }
    }

    /// Version byte, tag, then the fields (commands in tag order here and
    /// in [`CommandRecord::decode`]).
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u8(self.tag() as u8);
        match self {
            Self::Credit {
                account,
                asset,
                amount,
            }
            | Self::Debit {
                account,
                asset,
                amount,
            } => {
                w.u64(*account);
                w.bytes(asset.as_bytes());
                w.u64(*amount);
            }
            Self::Place {
                account,
                time_ms,
                order,
            } => {
                w.u64(*account);
                w.u64(*time_ms);
                write_order(&mut w, order);
                // Appended, so that records from before conditional orders
                // read as orders without a trigger.
                if order.stop_price.is_some() || order.trailing_delta.is_some() {
                    write_trigger(&mut w, order);
                }
            }
            Self::Cancel {
                account,
                time_ms,
                symbol,
                order_id,
                cancel_client_id,
            } => {
                w.u64(*account);
                w.u64(*time_ms);
                w.bytes(symbol.as_bytes());
                w.u64(*order_id);
                write_cancel_client_id(&mut w, cancel_client_id.as_deref());
            }
            Self::CancelAll {
                account,
                time_ms,
                symbol,
            } => {
                w.u64(*account);
                w.u64(*time_ms);
                w.bytes(symbol.as_bytes());
            }
            Self::PlaceList {
                account,
                time_ms,
                contingency,
                list_client_id,
                working,
                pending,
            } => {
                w.u64(*account);
                w.u64(*time_ms);
                w.u8(*contingency);
                write_opt_string(&mut w, list_client_id.as_deref());
                w.u8(u8::from(working.is_some()));
                w.u8(pending.len() as u8);
                for order in working.iter().chain(pending) {
                    write_order(&mut w, order);
                    write_trigger(&mut w, order);
                }
            }
            Self::CancelList {
                account,
                time_ms,
                symbol,
                list_id,
                cancel_client_id,
            } => {
                w.u64(*account);
                w.u64(*time_ms);
                w.bytes(symbol.as_bytes());
                w.u64(*list_id);
                write_cancel_client_id(&mut w, cancel_client_id.as_deref());
            }
            Self::Replace {
                account,
                time_ms,
                order_id,
                allow_failure,
                order,
                cancel_client_id,
            } => {
                w.u64(*account);
                w.u64(*time_ms);
                w.u64(*order_id);
                w.u8(u8::from(*allow_failure));
                write_order(&mut w, order);
                write_trigger(&mut w, order);
                write_cancel_client_id(&mut w, cancel_client_id.as_deref());
            }
            Self::Amend {
                account,
                time_ms,
                symbol,
                order_id,
                quantity,
                client_order_id,
            } => {
                w.u64(*account);
                w.u64(*time_ms);
                w.bytes(symbol.as_bytes());
                w.u64(*order_id);
                w.u64(*quantity);
                write_opt_string(&mut w, client_order_id.as_deref());
            }
            Self::Deposit {
                account,
                asset,
                amount,
                deposit_id,
                network,
            } => {
                w.u64(*account);
                w.bytes(asset.as_bytes());
                w.u64(*amount);
                w.u64(*deposit_id);
                if *network != 0 {
                    w.u64(*network);
                }
            }
            Self::Withdraw {
                account,
                asset,
                amount,
                fee,
                client_id,
                destination,
                requested_ms,
                network,
            } => {
                w.u64(*account);
                w.bytes(asset.as_bytes());
                w.u64(*amount);
                w.u64(*fee);
                write_opt_string(&mut w, client_id.as_deref());
                w.bytes(destination);
                w.u64(*requested_ms);
                if *network != 0 {
                    w.u64(*network);
                }
            }
            Self::SettleWithdrawal {
                withdrawal_id,
                completed,
            } => {
                w.u64(*withdrawal_id);
                w.u8(u8::from(*completed));
            }
            Self::WithdrawalSigned {
                withdrawal_id,
                nonce,
                tx,
            } => {
                w.u64(*withdrawal_id);
                w.u64(*nonce);
                tx.write(&mut w);
            }
            Self::DepositAddress { account, address } => {
                w.u64(*account);
                w.bytes(address);
            }
        }
        w.0
    }

    /// Inverse of [`CommandRecord::encode`].
    pub fn decode(bytes: &[u8]) -> Result<Self, StorageError> {
        let mut r = Reader::new(bytes, "command record")?;
        let tag = CommandTag::try_from(r.u8()?).map_err(|_| r.corrupt())?;
        let record = match tag {
            CommandTag::Credit | CommandTag::Debit => {
                let (account, asset, amount) = (r.u64()?, r.string()?, r.u64()?);
                if tag == CommandTag::Credit {
                    Self::Credit {
                        account,
                        asset,
                        amount,
                    }
                } else {
                    Self::Debit {
                        account,
                        asset,
                        amount,
                    }
                }
            }
            CommandTag::Place => {
                let account = r.u64()?;
                let time_ms = r.u64()?;
                let mut order = read_order(&mut r)?;
                if !r.at_end() {
                    read_trigger(&mut r, &mut order)?;
                }
                Self::Place {
                    account,
                    time_ms,
                    order,
                }
            }
            CommandTag::Cancel => Self::Cancel {
                account: r.u64()?,
                time_ms: r.u64()?,
                symbol: r.string()?,
                order_id: r.u64()?,
                cancel_client_id: read_cancel_client_id(&mut r)?,
            },
            CommandTag::CancelAll => Self::CancelAll {
                account: r.u64()?,
                time_ms: r.u64()?,
                symbol: r.string()?,
            },
            CommandTag::PlaceList => {
                let (account, time_ms, contingency) = (r.u64()?, r.u64()?, r.u8()?);
                let list_client_id = read_opt_string(&mut r)?;
                let (has_working, pending_count) = (r.u8()?, r.u8()?);
                let read_leg = |r: &mut Reader<'_>| -> Result<OrderRecord, StorageError> {
                    let mut order = read_order(r)?;
                    read_trigger(r, &mut order)?;
                    Ok(order)
                };
                let working = match has_working {
                    0 => None,
                    _ => Some(read_leg(&mut r)?),
                };
                let pending = (0..pending_count)
                    .map(|_| read_leg(&mut r))
                    .collect::<Result<_, _>>()?;
                Self::PlaceList {
                    account,
                    time_ms,
                    contingency,
                    list_client_id,
                    working,
                    pending,
                }
            }
            CommandTag::CancelList => Self::CancelList {
                account: r.u64()?,
                time_ms: r.u64()?,
                symbol: r.string()?,
                list_id: r.u64()?,
                cancel_client_id: read_cancel_client_id(&mut r)?,
            },
            CommandTag::Replace => {
                let (account, time_ms, order_id) = (r.u64()?, r.u64()?, r.u64()?);
                let allow_failure = r.u8()? != 0;
                let mut order = read_order(&mut r)?;
                read_trigger(&mut r, &mut order)?;
                Self::Replace {
                    account,
                    time_ms,
                    order_id,
                    allow_failure,
                    order,
                    cancel_client_id: read_cancel_client_id(&mut r)?,
                }
            }
            CommandTag::Amend => Self::Amend {
                account: r.u64()?,
                time_ms: r.u64()?,
                symbol: r.string()?,
                order_id: r.u64()?,
                quantity: r.u64()?,
                client_order_id: read_opt_string(&mut r)?,
            },
            CommandTag::Deposit => Self::Deposit {
                account: r.u64()?,
                asset: r.string()?,
                amount: r.u64()?,
                deposit_id: r.u64()?,
                network: trailing_u64(&mut r)?,
            },
            CommandTag::Withdraw => Self::Withdraw {
                account: r.u64()?,
                asset: r.string()?,
                amount: r.u64()?,
                fee: r.u64()?,
                client_id: read_opt_string(&mut r)?,
                destination: r.bytes()?.try_into().map_err(|_| r.corrupt())?,
                requested_ms: r.u64()?,
                network: trailing_u64(&mut r)?,
            },
            CommandTag::SettleWithdrawal => Self::SettleWithdrawal {
                withdrawal_id: r.u64()?,
                completed: match r.u8()? {
                    0 => false,
                    1 => true,
                    _ => return Err(r.corrupt()),
                },
            },
            CommandTag::WithdrawalSigned => Self::WithdrawalSigned {
                withdrawal_id: r.u64()?,
                nonce: r.u64()?,
                tx: crate::SentTx::read(&mut r)?,
            },
            CommandTag::DepositAddress => Self::DepositAddress {
                account: r.u64()?,
                address: r.bytes()?.try_into().map_err(|_| r.corrupt())?,
            },
        };
        r.finish()?;
        Ok(record)
    }
}

/// One entry of the replicated journal: a group-commit batch of the command
/// log, its commands numbered from `first_sequence` on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalEntry {
    /// The command-log sequence of the first command.
    pub first_sequence: u64,
    /// The batch's commands, in order.
    pub commands: Vec<CommandRecord>,
}

impl JournalEntry {
    /// `version ‖ first_sequence ‖ count ‖ (length ‖ command)*`.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u64(self.first_sequence);
        w.u64(self.commands.len() as u64);
        for command in &self.commands {
            w.bytes(&command.encode());
        }
        w.0
    }

    /// Inverse of [`JournalEntry::encode`].
    pub fn decode(bytes: &[u8]) -> Result<Self, StorageError> {
        let mut r = Reader::new(bytes, "journal entry")?;
        let first_sequence = r.u64()?;
        let count = r.u64()?;
        // A command takes a few bytes at least: a count beyond the entry's
        // length is corruption, not an allocation to attempt.
        if count > bytes.len() as u64 {
            return Err(r.corrupt());
        }
        let commands = (0..count)
            .map(|_| CommandRecord::decode(&r.bytes()?))
            .collect::<Result<_, _>>()?;
        r.finish()?;
        Ok(Self {
            first_sequence,
            commands,
        })
    }
}

impl Store {
    /// The exchange's command log in sequence order: `(sequence, command)`.
    pub fn commands(
        &self,
    ) -> impl Iterator<Item = Result<(u64, CommandRecord), StorageError>> + '_ {
        self.commands_after(0)
    }

    /// The sequence of the last command in the log (0: none).
    pub fn last_command_sequence(&self) -> Result<u64, StorageError> {
        match self
            .db
            .iterator_cf(self.cf(cf::COMMAND_LOG), IteratorMode::End)
            .next()
        {
            Some(item) => codec::decode_block_number(&item?.0),
            None => Ok(0),
        }
    }

    /// Appends commands another process made durable (the replicated
    /// journal's) to the log, durably; the history is written from them on
    /// the next replay, as for any log entry newer than the history.
    pub fn append_replicated(&self, entry: &JournalEntry) -> Result<(), StorageError> {
        let mut batch = rocksdb::WriteBatch::default();
        for (offset, command) in entry.commands.iter().enumerate() {
            batch.put_cf(
                self.cf(cf::COMMAND_LOG),
                codec::encode_block_number(entry.first_sequence + offset as u64),
                command.encode(),
            );
        }
        self.db.write_opt(batch, &Self::synced())?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
