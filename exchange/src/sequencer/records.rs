//! Commands as the command log stores them, and back: markets by symbol,
//! enums by their stored tags, so a log outlives a reordering of either.

use weiport_storage::{CommandRecord, OrderRecord};

use super::SequencerError;
use crate::amount::Amount;
use crate::catalog::Catalog;
use crate::engine::{Command, SignedTx};
use crate::history::{CONTINGENCIES, RESPONSES, SIDES, STPS, TIFS, TYPES, tag, untag};
use crate::order::{NewOrder, NewOrderList, Trigger};

fn untag_logged<T: Copy>(tag: u8, all: &[(T, u8)], sequence: u64) -> Result<T, SequencerError> {
    untag(tag, all).ok_or(SequencerError::Corrupt {
        sequence,
        reason: "unknown enum tag",
    })
}

/// The log's form of an order.
fn order_record(catalog: &Catalog, order: &NewOrder) -> OrderRecord {
    OrderRecord {
        symbol: catalog.symbol(order.market).to_owned(),
        side: tag(order.side, &SIDES),
        order_type: tag(order.order_type, &TYPES),
        time_in_force: tag(order.time_in_force, &TIFS),
        quantity: order.quantity.map(Amount::units),
        quote_quantity: order.quote_quantity.map(Amount::units),
        price: order.price.map(Amount::units),
        client_order_id: order.client_order_id.clone(),
        response_type: tag(order.response_type, &RESPONSES),
        stp: tag(order.stp, &STPS),
        stop_price: order.trigger.and_then(|t| t.stop_price).map(Amount::units),
        trailing_delta: order.trigger.and_then(|t| t.trailing_delta).map(u64::from),
    }
}

/// The engine's form of a logged order (command `sequence`).
fn logged_order(
    catalog: &Catalog,
    sequence: u64,
    order: OrderRecord,
) -> Result<NewOrder, SequencerError> {
    let corrupt = |reason| SequencerError::Corrupt { sequence, reason };
    Ok(NewOrder {
        market: catalog
            .market_id(&order.symbol)
            .ok_or_else(|| corrupt("a market no longer configured"))?,
        side: untag_logged(order.side, &SIDES, sequence)?,
        order_type: untag_logged(order.order_type, &TYPES, sequence)?,
        time_in_force: untag_logged(order.time_in_force, &TIFS, sequence)?,
        quantity: order.quantity.map(Amount::from_units),
        quote_quantity: order.quote_quantity.map(Amount::from_units),
        price: order.price.map(Amount::from_units),
        client_order_id: order.client_order_id,
        response_type: untag_logged(order.response_type, &RESPONSES, sequence)?,
        stp: untag_logged(order.stp, &STPS, sequence)?,
        trigger: match (order.stop_price, order.trailing_delta) {
            (None, None) => None,
            (stop_price, trailing_delta) => Some(Trigger {
                stop_price: stop_price.map(Amount::from_units),
                trailing_delta: match trailing_delta {
                    Some(delta) => Some(
                        u32::try_from(delta)
                            .map_err(|_| corrupt("a trailing delta out of range"))?,
                    ),
                    None => None,
                },
            }),
        },
    })
}

/// The log's form of a command: markets and assets by name, so a log
/// survives markets being added to the configuration. Commands in the order
/// of their stored tags ([`weiport_storage::exchange::CommandTag`]), here,
/// in [`from_record`] and in the record's encoding.
pub(super) fn to_record(catalog: &Catalog, command: &Command) -> CommandRecord {
    match command {
        Command::Credit {
            account,
            asset,
            amount,
        } => CommandRecord::Credit {
            account: *account,
            asset: catalog.asset(*asset).to_owned(),
            amount: amount.units(),
        },
        Command::Debit {
            account,
            asset,
            amount,
        } => CommandRecord::Debit {
            account: *account,
            asset: catalog.asset(*asset).to_owned(),
            amount: amount.units(),
        },
        Command::Place {
            account,
            order,
            time_ms,
        } => CommandRecord::Place {
            account: *account,
            time_ms: *time_ms,
            order: order_record(catalog, order),
        },
        Command::Cancel {
            account,
            market,
            order_id,
            cancel_client_id,
            time_ms,
        } => CommandRecord::Cancel {
            account: *account,
            time_ms: *time_ms,
            symbol: catalog.symbol(*market).to_owned(),
            order_id: *order_id,
            cancel_client_id: cancel_client_id.clone(),
        },
        Command::CancelAll {
            account,
            market,
            time_ms,
        } => CommandRecord::CancelAll {
            account: *account,
            time_ms: *time_ms,
            symbol: catalog.symbol(*market).to_owned(),
        },
        Command::PlaceList {
            account,
            list,
            time_ms,
        } => CommandRecord::PlaceList {
            account: *account,
            time_ms: *time_ms,
            contingency: tag(list.contingency, &CONTINGENCIES),
            list_client_id: list.list_client_id.clone(),
            working: list.working.as_ref().map(|o| order_record(catalog, o)),
            pending: list
                .pending
                .iter()
                .map(|o| order_record(catalog, o))
                .collect(),
        },
        Command::CancelList {
            account,
            market,
            list_id,
            cancel_client_id,
            time_ms,
        } => CommandRecord::CancelList {
            account: *account,
            time_ms: *time_ms,
            symbol: catalog.symbol(*market).to_owned(),
            list_id: *list_id,
            cancel_client_id: cancel_client_id.clone(),
        },
        Command::Replace {
            account,
            market: _,
            order_id,
            order,
            allow_failure,
            cancel_client_id,
            time_ms,
        } => CommandRecord::Replace {
            account: *account,
            time_ms: *time_ms,
            order_id: *order_id,
            allow_failure: *allow_failure,
            order: order_record(catalog, order),
            cancel_client_id: cancel_client_id.clone(),
        },
        Command::Amend {
            account,
            market,
            order_id,
            quantity,
            client_order_id,
            time_ms,
        } => CommandRecord::Amend {
            account: *account,
            time_ms: *time_ms,
            symbol: catalog.symbol(*market).to_owned(),
            order_id: *order_id,
            quantity: quantity.units(),
            client_order_id: client_order_id.clone(),
        },
        Command::Deposit {
            account,
            asset,
            amount,
            deposit_id,
            network,
        } => CommandRecord::Deposit {
            account: *account,
            asset: catalog.asset(*asset).to_owned(),
            amount: amount.units(),
            deposit_id: *deposit_id,
            network: *network,
        },
        Command::Withdraw {
            account,
            asset,
            amount,
            fee,
            client_id,
            destination,
            requested_ms,
            network,
        } => CommandRecord::Withdraw {
            account: *account,
            asset: catalog.asset(*asset).to_owned(),
            amount: amount.units(),
            fee: fee.units(),
            client_id: client_id.as_deref().map(str::to_owned),
            destination: *destination,
            requested_ms: *requested_ms,
            network: *network,
        },
        Command::SettleWithdrawal {
            withdrawal_id,
            completed,
        } => CommandRecord::SettleWithdrawal {
            withdrawal_id: *withdrawal_id,
            completed: *completed,
        },
        Command::WithdrawalSigned {
            withdrawal_id,
            nonce,
            tx,
        } => CommandRecord::WithdrawalSigned {
            withdrawal_id: *withdrawal_id,
            nonce: *nonce,
            tx: weiport_storage::SentTx {
                hash: tx.hash.into(),
                max_fee: tx.max_fee,
                tip: tx.tip,
                raw: tx.raw.to_vec(),
            },
        },
        Command::AssignDepositAddress { account, address } => CommandRecord::DepositAddress {
            account: *account,
            address: *address,
        },
    }
}

/// The engine's form of a logged command.
pub(super) fn from_record(
    catalog: &Catalog,
    sequence: u64,
    record: CommandRecord,
) -> Result<Command, SequencerError> {
    let corrupt = |reason| SequencerError::Corrupt { sequence, reason };
    let market = |symbol: &str| {
        catalog
            .market_id(symbol)
            .ok_or_else(|| corrupt("a market no longer configured"))
    };
    let asset = |name: &str| {
        catalog
            .asset_id(name)
            .ok_or_else(|| corrupt("an asset no longer traded"))
    };
    Ok(match record {
        CommandRecord::Credit {
            account,
            asset: name,
            amount,
        } => Command::Credit {
            account,
            asset: asset(&name)?,
            amount: Amount::from_units(amount),
        },
        CommandRecord::Debit {
            account,
            asset: name,
            amount,
        } => Command::Debit {
            account,
            asset: asset(&name)?,
            amount: Amount::from_units(amount),
        },
        CommandRecord::Place {
            account,
            time_ms,
            order,
        } => Command::Place {
            account,
            time_ms,
            order: logged_order(catalog, sequence, order)?,
        },
        CommandRecord::Cancel {
            account,
            time_ms,
            symbol,
            order_id,
            cancel_client_id,
        } => Command::Cancel {
            account,
            market: market(&symbol)?,
            order_id,
            cancel_client_id,
            time_ms,
        },
        CommandRecord::CancelAll {
            account,
            time_ms,
            symbol,
        } => Command::CancelAll {
            account,
            market: market(&symbol)?,
            time_ms,
        },
        CommandRecord::PlaceList {
            account,
            time_ms,
            contingency,
            list_client_id,
            working,
            pending,
        } => {
            let working = working
                .map(|o| logged_order(catalog, sequence, o))
                .transpose()?;
            let pending = pending
                .into_iter()
                .map(|o| logged_order(catalog, sequence, o))
                .collect::<Result<Vec<_>, _>>()?;
            let market = match working.iter().chain(&pending).next() {
                Some(order) => order.market,
                None => return Err(corrupt("an order list without orders")),
            };
            Command::PlaceList {
                account,
                time_ms,
                list: Box::new(NewOrderList {
                    market,
                    contingency: untag_logged(contingency, &CONTINGENCIES, sequence)?,
                    working,
                    pending,
                    list_client_id,
                }),
            }
        }
        CommandRecord::CancelList {
            account,
            time_ms,
            symbol,
            list_id,
            cancel_client_id,
        } => Command::CancelList {
            account,
            market: market(&symbol)?,
            list_id,
            cancel_client_id,
            time_ms,
        },
        CommandRecord::Replace {
            account,
            time_ms,
            order_id,
            allow_failure,
            order,
            cancel_client_id,
        } => {
            let order = logged_order(catalog, sequence, order)?;
            Command::Replace {
                account,
                market: order.market,
                order_id,
                order: Box::new(order),
                allow_failure,
                cancel_client_id,
                time_ms,
            }
        }
        CommandRecord::Amend {
            account,
            time_ms,
            symbol,
            order_id,
            quantity,
            client_order_id,
        } => Command::Amend {
            account,
            market: market(&symbol)?,
            order_id,
            quantity: Amount::from_units(quantity),
            client_order_id,
            time_ms,
        },
        CommandRecord::Deposit {
            account,
            asset: name,
            amount,
            deposit_id,
            network,
        } => Command::Deposit {
            account,
            asset: asset(&name)?,
            amount: Amount::from_units(amount),
            deposit_id,
            network,
        },
        CommandRecord::Withdraw {
            account,
            asset: name,
            amount,
            fee,
            client_id,
            destination,
            requested_ms,
            network,
        } => Command::Withdraw {
            account,
            asset: asset(&name)?,
            amount: Amount::from_units(amount),
            fee: Amount::from_units(fee),
            client_id: client_id.map(String::into_boxed_str),
            destination,
            requested_ms,
            network,
        },
        CommandRecord::SettleWithdrawal {
            withdrawal_id,
            completed,
        } => Command::SettleWithdrawal {
            withdrawal_id,
            completed,
        },
        CommandRecord::WithdrawalSigned {
            withdrawal_id,
            nonce,
            tx,
        } => Command::WithdrawalSigned {
            withdrawal_id,
            nonce,
            tx: SignedTx {
                hash: tx.hash.0,
                max_fee: tx.max_fee,
                tip: tx.tip,
                raw: tx.raw.into_boxed_slice(),
            },
        },
        CommandRecord::DepositAddress { account, address } => {
            Command::AssignDepositAddress { account, address }
        }
    })
}
