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
    },
    /// A withdrawal ended: completed on chain, or failed and refunded.
    SettleWithdrawal {
        /// Its id.
        withdrawal_id: u64,
        /// Whether it completed.
        completed: bool,
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

impl CommandRecord {
    /// Version byte, tag, then the fields.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
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
                w.u8(if matches!(self, Self::Credit { .. }) {
                    0
                } else {
                    1
                });
                w.u64(*account);
                w.bytes(asset.as_bytes());
                w.u64(*amount);
            }
            Self::Deposit {
                account,
                asset,
                amount,
                deposit_id,
            } => {
                w.u8(9);
                w.u64(*account);
                w.bytes(asset.as_bytes());
                w.u64(*amount);
                w.u64(*deposit_id);
            }
            Self::Withdraw {
                account,
                asset,
                amount,
                fee,
                client_id,
                destination,
                requested_ms,
            } => {
                w.u8(10);
                w.u64(*account);
                w.bytes(asset.as_bytes());
                w.u64(*amount);
                w.u64(*fee);
                write_opt_string(&mut w, client_id.as_deref());
                w.bytes(destination);
                w.u64(*requested_ms);
            }
            Self::SettleWithdrawal {
                withdrawal_id,
                completed,
            } => {
                w.u8(11);
                w.u64(*withdrawal_id);
                w.u8(u8::from(*completed));
            }
            Self::Place {
                account,
                time_ms,
                order,
            } => {
                w.u8(2);
                w.u64(*account);
                w.u64(*time_ms);
                write_order(&mut w, order);
                // Appended, so that records from before conditional orders
                // read as orders without a trigger.
                if order.stop_price.is_some() || order.trailing_delta.is_some() {
                    write_trigger(&mut w, order);
                }
            }
            Self::PlaceList {
                account,
                time_ms,
                contingency,
                list_client_id,
                working,
                pending,
            } => {
                w.u8(5);
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
            Self::Replace {
                account,
                time_ms,
                order_id,
                allow_failure,
                order,
            } => {
                w.u8(7);
                w.u64(*account);
                w.u64(*time_ms);
                w.u64(*order_id);
                w.u8(u8::from(*allow_failure));
                write_order(&mut w, order);
                write_trigger(&mut w, order);
            }
            Self::Amend {
                account,
                time_ms,
                symbol,
                order_id,
                quantity,
                client_order_id,
            } => {
                w.u8(8);
                w.u64(*account);
                w.u64(*time_ms);
                w.bytes(symbol.as_bytes());
                w.u64(*order_id);
                w.u64(*quantity);
                write_opt_string(&mut w, client_order_id.as_deref());
            }
            Self::CancelList {
                account,
                time_ms,
                symbol,
                list_id,
            } => {
                w.u8(6);
                w.u64(*account);
                w.u64(*time_ms);
                w.bytes(symbol.as_bytes());
                w.u64(*list_id);
            }
            Self::Cancel {
                account,
                time_ms,
                symbol,
                order_id,
            } => {
                w.u8(3);
                w.u64(*account);
                w.u64(*time_ms);
                w.bytes(symbol.as_bytes());
                w.u64(*order_id);
            }
            Self::CancelAll {
                account,
                time_ms,
                symbol,
            } => {
                w.u8(4);
                w.u64(*account);
                w.u64(*time_ms);
                w.bytes(symbol.as_bytes());
            }
        }
        w.0
    }

    /// Inverse of [`CommandRecord::encode`].
    pub fn decode(bytes: &[u8]) -> Result<Self, StorageError> {
        let mut r = Reader::new(bytes, "command record")?;
        let record = match r.u8()? {
            tag @ (0 | 1) => {
                let (account, asset, amount) = (r.u64()?, r.string()?, r.u64()?);
                if tag == 0 {
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
            2 => {
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
            5 => {
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
            7 => {
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
                }
            }
            9 => Self::Deposit {
                account: r.u64()?,
                asset: r.string()?,
                amount: r.u64()?,
                deposit_id: r.u64()?,
            },
            10 => Self::Withdraw {
                account: r.u64()?,
                asset: r.string()?,
                amount: r.u64()?,
                fee: r.u64()?,
                client_id: read_opt_string(&mut r)?,
                destination: r.bytes()?.try_into().map_err(|_| r.corrupt())?,
                requested_ms: r.u64()?,
            },
            11 => Self::SettleWithdrawal {
                withdrawal_id: r.u64()?,
                completed: match r.u8()? {
                    0 => false,
                    1 => true,
                    _ => return Err(r.corrupt()),
                },
            },
            8 => Self::Amend {
                account: r.u64()?,
                time_ms: r.u64()?,
                symbol: r.string()?,
                order_id: r.u64()?,
                quantity: r.u64()?,
                client_order_id: read_opt_string(&mut r)?,
            },
            6 => Self::CancelList {
                account: r.u64()?,
                time_ms: r.u64()?,
                symbol: r.string()?,
                list_id: r.u64()?,
            },
            3 => Self::Cancel {
                account: r.u64()?,
                time_ms: r.u64()?,
                symbol: r.string()?,
                order_id: r.u64()?,
            },
            4 => Self::CancelAll {
                account: r.u64()?,
                time_ms: r.u64()?,
                symbol: r.string()?,
            },
            _ => return Err(r.corrupt()),
        };
        r.finish()?;
        Ok(record)
    }
}

impl Store {
    /// The exchange's command log in sequence order: `(sequence, command)`.
    pub fn commands(
        &self,
    ) -> impl Iterator<Item = Result<(u64, CommandRecord), StorageError>> + '_ {
        self.db
            .iterator_cf(self.cf(cf::COMMAND_LOG), IteratorMode::Start)
            .map(|item| {
                let (key, value) = item?;
                Ok((
                    codec::decode_block_number(&key)?,
                    CommandRecord::decode(&value)?,
                ))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_round_trips() {
        let order = OrderRecord {
            symbol: "ETHUSDT".into(),
            side: 1,
            order_type: 2,
            time_in_force: 0,
            quantity: Some(5),
            quote_quantity: None,
            price: Some(300_000_000_000),
            client_order_id: Some("abc".into()),
            response_type: 2,
            stp: 3,
            stop_price: None,
            trailing_delta: None,
        };
        let conditional = OrderRecord {
            order_type: 5,
            stop_price: Some(290_000_000_000),
            trailing_delta: Some(250),
            ..order.clone()
        };
        let records = [
            CommandRecord::Credit {
                account: 1,
                asset: "USDT".into(),
                amount: 9,
            },
            CommandRecord::Debit {
                account: 2,
                asset: "ETH".into(),
                amount: 1,
            },
            CommandRecord::Deposit {
                account: 2,
                asset: "ETH".into(),
                amount: 12,
                deposit_id: 1 << 40,
            },
            CommandRecord::Withdraw {
                account: 2,
                asset: "ETH".into(),
                amount: 12,
                fee: 3,
                client_id: Some("w-1".into()),
                destination: [9; 20],
                requested_ms: 77,
            },
            CommandRecord::Withdraw {
                account: 2,
                asset: "ETH".into(),
                amount: 12,
                fee: 0,
                client_id: None,
                destination: [0; 20],
                requested_ms: 0,
            },
            CommandRecord::SettleWithdrawal {
                withdrawal_id: 4,
                completed: true,
            },
            CommandRecord::Place {
                account: 3,
                time_ms: 7,
                order: order.clone(),
            },
            CommandRecord::Place {
                account: 3,
                time_ms: 7,
                order: OrderRecord {
                    client_order_id: None,
                    quantity: None,
                    ..order.clone()
                },
            },
            CommandRecord::Place {
                account: 3,
                time_ms: 7,
                order: conditional.clone(),
            },
            CommandRecord::PlaceList {
                account: 3,
                time_ms: 9,
                contingency: 2,
                list_client_id: Some("list".into()),
                working: Some(order.clone()),
                pending: vec![conditional.clone(), order.clone()],
            },
            CommandRecord::PlaceList {
                account: 3,
                time_ms: 9,
                contingency: 0,
                list_client_id: None,
                working: None,
                pending: vec![conditional.clone(), conditional.clone()],
            },
            CommandRecord::CancelList {
                account: 4,
                time_ms: 8,
                symbol: "ETHUSDT".into(),
                list_id: 2,
            },
            CommandRecord::Amend {
                account: 4,
                time_ms: 8,
                symbol: "ETHUSDT".into(),
                order_id: 3,
                quantity: 100,
                client_order_id: Some("renamed".into()),
            },
            CommandRecord::Replace {
                account: 4,
                time_ms: 8,
                order_id: 12,
                allow_failure: true,
                order: conditional.clone(),
            },
            CommandRecord::Cancel {
                account: 4,
                time_ms: 8,
                symbol: "ETHUSDT".into(),
                order_id: 11,
            },
            CommandRecord::CancelAll {
                account: 5,
                time_ms: 9,
                symbol: "ETHBTC".into(),
            },
        ];
        // A record of a conditional order cut just before its trigger is a
        // record of the same order from before triggers existed.
        let without_trigger = CommandRecord::Place {
            account: 3,
            time_ms: 7,
            order,
        }
        .encode()
        .len();
        for record in records {
            let bytes = record.encode();
            assert_eq!(CommandRecord::decode(&bytes).unwrap(), record);
            for cut in 0..bytes.len() {
                let older = cut == without_trigger
                    && matches!(&record, CommandRecord::Place { order, .. } if order.stop_price.is_some());
                assert_eq!(CommandRecord::decode(&bytes[..cut]).is_err(), !older);
            }
        }
    }
}
