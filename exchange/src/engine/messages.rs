//! The engine's vocabulary: the commands it takes, the events it answers
//! with, and why it refuses. Plain data: no state, no rules.

use super::{SignedTx, WithdrawalStage};
use crate::amount::Amount;
use crate::catalog::{AssetId, MarketId};
use crate::market::StpMode;
use crate::order::{NewOrder, NewOrderList, Side};

/// An account number.
pub type AccountId = u64;

/// Price levels as (price, resting quantity), best first.
pub type Levels = Vec<(Amount, Amount)>;

/// Order life-cycle states, as Binance names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum OrderStatus {
    /// Resting, nothing filled.
    New,
    /// Resting, partly filled.
    PartiallyFilled,
    /// Completely filled.
    Filled,
    /// Canceled by its owner.
    Canceled,
    /// Refused before touching the book.
    Rejected,
    /// Ended by its time in force (IOC/FOK/MARKET leftovers).
    Expired,
    /// Ended by self-trade prevention.
    ExpiredInMatch,
    /// In an order list, waiting for the list's working order to fill
    /// before it is placed.
    PendingNew,
}

impl OrderStatus {
    /// Whether the order has ended.
    pub fn is_final(self) -> bool {
        !matches!(self, Self::New | Self::PartiallyFilled | Self::PendingNew)
    }
}

/// Why a command was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reject {
    /// Unknown market.
    UnknownSymbol,
    /// Unknown asset.
    UnknownAsset,
    /// Not enough free balance.
    InsufficientBalance,
    /// A LIMIT_MAKER order would take liquidity.
    WouldTake,
    /// No such open order of this account.
    UnknownOrder,
    /// The client order id is in use by an open order of the account.
    DuplicateClientOrderId,
    /// Too many open orders on the market for this account.
    TooManyOrders,
    /// An amount would overflow.
    Overflow,
    /// A price off the market's tick or a quantity off its step (or zero).
    OffGrid,
    /// A conditional order whose stop condition the last price already meets.
    WouldTrigger,
    /// Too many conditional orders waiting on the market for this account.
    TooManyAlgoOrders,
    /// A trigger missing from a conditional order, or given to another kind
    /// (or a quote amount on a conditional order).
    BadTrigger,
    /// An order list whose orders do not fit its contingency (their number,
    /// types, sides or market).
    BadList,
    /// An amend that would raise an order's quantity.
    AmendIncrease,
    /// An amend to the quantity the order has already.
    AmendNoChange,
    /// A deposit whose id is not above the last credited one: it was
    /// credited already.
    DepositCredited,
    /// No pending withdrawal has this id (or it is paid with another nonce).
    UnknownWithdrawal,
    /// The account has its deposit address already.
    DepositAddressAssigned,
}

/// What the engine is asked to do.
#[derive(Debug, Clone)]
pub enum Command {
    /// Add funds (deposit, faucet).
    Credit {
        /// Account.
        account: AccountId,
        /// Asset.
        asset: AssetId,
        /// Amount.
        amount: Amount,
    },
    /// Remove free funds (withdrawal).
    Debit {
        /// Account.
        account: AccountId,
        /// Asset.
        asset: AssetId,
        /// Amount.
        amount: Amount,
    },
    /// Place an order.
    Place {
        /// Account.
        account: AccountId,
        /// The validated order.
        order: NewOrder,
        /// Engine time, ms.
        time_ms: u64,
    },
    /// Cancel one open order by id.
    Cancel {
        /// Account.
        account: AccountId,
        /// Market.
        market: MarketId,
        /// Order id.
        order_id: u64,
        /// The cancel request's own client id, if its client gave one
        /// (reports of what it canceled carry it).
        cancel_client_id: Option<String>,
        /// Engine time, ms.
        time_ms: u64,
    },
    /// Place an order list.
    PlaceList {
        /// Account.
        account: AccountId,
        /// The validated list (boxed: rare, and large beside the others).
        list: Box<NewOrderList>,
        /// Engine time, ms.
        time_ms: u64,
    },
    /// Cancel every open order of one order list.
    CancelList {
        /// Account.
        account: AccountId,
        /// Market.
        market: MarketId,
        /// List id.
        list_id: u64,
        /// The cancel request's own client id, if its client gave one
        /// (reports of what it canceled carry it).
        cancel_client_id: Option<String>,
        /// Engine time, ms.
        time_ms: u64,
    },
    /// Cancel an order and place another in the same step (Binance's
    /// cancel-replace). With `allow_failure`, either part may fail alone.
    Replace {
        /// Account.
        account: AccountId,
        /// Market of both orders.
        market: MarketId,
        /// The order to cancel.
        order_id: u64,
        /// The order to place (boxed: rare, and large beside the others).
        order: Box<NewOrder>,
        /// Place the new order even if the cancel fails (ALLOW_FAILURE).
        allow_failure: bool,
        /// The cancel request's own client id, if its client gave one
        /// (reports of what it canceled carry it).
        cancel_client_id: Option<String>,
        /// Engine time, ms.
        time_ms: u64,
    },
    /// Reduce an open order's quantity, keeping its place in the queue.
    Amend {
        /// Account.
        account: AccountId,
        /// Market.
        market: MarketId,
        /// Order id.
        order_id: u64,
        /// Its new quantity (filled part included), below the current one.
        quantity: Amount,
        /// Its new client order id, if it changes.
        client_order_id: Option<String>,
        /// Engine time, ms.
        time_ms: u64,
    },
    /// Credit an on-chain deposit, once: deposit ids only grow, and one not
    /// above the last credited is refused.
    Deposit {
        /// Account.
        account: AccountId,
        /// Asset.
        asset: AssetId,
        /// Amount.
        amount: Amount,
        /// The deposit's id, above every one credited before on its network.
        deposit_id: u64,
        /// The network (chain) it arrived on: 0 for the first chain, else
        /// that chain's id. Deposit ids grow per network.
        network: u64,
    },
    /// Take `amount + fee` out of the account's free funds and hold it for
    /// an on-chain withdrawal under a new id (the id of the earlier one, and
    /// nothing taken, when the account's `client_id` was used before).
    Withdraw {
        /// Account.
        account: AccountId,
        /// Asset.
        asset: AssetId,
        /// What leaves on chain.
        amount: Amount,
        /// What the exchange keeps for it.
        fee: Amount,
        /// The client's id for it, unique per account.
        client_id: Option<Box<str>>,
        /// Where it goes: a 20-byte chain address.
        destination: [u8; 20],
        /// When it was asked for, ms (not engine time: a withdrawal is a
        /// balance update, like a credit).
        requested_ms: u64,
        /// The network (chain) it leaves on: 0 for the first chain, else
        /// that chain's id.
        network: u64,
    },
    /// End a pending withdrawal: sent and final (`completed`: the amount
    /// leaves the ledger, the fee goes to the fee account), or failed (all of
    /// it goes back to the account).
    SettleWithdrawal {
        /// Its id.
        withdrawal_id: u64,
        /// Whether it reached the chain.
        completed: bool,
    },
    /// Record a signed transaction paying a pending withdrawal, before it
    /// is sent: whoever sends for the withdrawal next, this process or
    /// another after a failover, follows it and never signs with another
    /// nonce. Every transaction of one withdrawal has the same nonce.
    WithdrawalSigned {
        /// The withdrawal's id.
        withdrawal_id: u64,
        /// The hot wallet nonce.
        nonce: u64,
        /// The transaction.
        tx: SignedTx,
    },
    /// Record `account`'s deposit address (the wallet derives it), once.
    AssignDepositAddress {
        /// Account.
        account: AccountId,
        /// The address.
        address: [u8; 20],
    },
    /// Cancel every open order of the account on one market (order lists
    /// whole), oldest first.
    CancelAll {
        /// Account.
        account: AccountId,
        /// Market.
        market: MarketId,
        /// Engine time, ms.
        time_ms: u64,
    },
}

impl Command {
    /// The engine time it carries (credits and debits carry none).
    pub fn time_ms(&self) -> Option<u64> {
        match self {
            Self::Place { time_ms, .. }
            | Self::Cancel { time_ms, .. }
            | Self::CancelAll { time_ms, .. }
            | Self::PlaceList { time_ms, .. }
            | Self::CancelList { time_ms, .. }
            | Self::Replace { time_ms, .. }
            | Self::Amend { time_ms, .. } => Some(*time_ms),
            Self::Credit { .. }
            | Self::Debit { .. }
            | Self::Deposit { .. }
            | Self::Withdraw { .. }
            | Self::SettleWithdrawal { .. }
            | Self::WithdrawalSigned { .. }
            | Self::AssignDepositAddress { .. } => None,
        }
    }

    /// The client id its client gave this cancel (or the cancel part of a
    /// cancel-replace), if any.
    pub fn cancel_client_id(&self) -> Option<&str> {
        match self {
            Self::Cancel {
                cancel_client_id, ..
            }
            | Self::CancelList {
                cancel_client_id, ..
            }
            | Self::Replace {
                cancel_client_id, ..
            } => cancel_client_id.as_deref(),
            _ => None,
        }
    }

    /// Stamps it with the engine time `time_ms` (no-op for credits and debits).
    pub fn set_time(&mut self, now_ms: u64) {
        match self {
            Self::Place { time_ms, .. }
            | Self::Cancel { time_ms, .. }
            | Self::CancelAll { time_ms, .. }
            | Self::PlaceList { time_ms, .. }
            | Self::CancelList { time_ms, .. }
            | Self::Replace { time_ms, .. }
            | Self::Amend { time_ms, .. } => *time_ms = now_ms,
            Self::Credit { .. }
            | Self::Debit { .. }
            | Self::Deposit { .. }
            | Self::Withdraw { .. }
            | Self::SettleWithdrawal { .. }
            | Self::WithdrawalSigned { .. }
            | Self::AssignDepositAddress { .. } => {}
        }
    }
}

/// A fill between a resting (maker) and an incoming (taker) order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Trade {
    /// Market.
    pub market: MarketId,
    /// Per-market trade id.
    pub trade_id: u64,
    /// Maker's price.
    pub price: Amount,
    /// Base quantity.
    pub quantity: Amount,
    /// Quote quantity (price × quantity).
    pub quote_quantity: Amount,
    /// Maker order and account.
    pub maker: (u64, AccountId),
    /// Taker order and account.
    pub taker: (u64, AccountId),
    /// Taker side.
    pub taker_side: Side,
    /// Fee paid by the maker, in what it received.
    pub maker_fee: Amount,
    /// Fee paid by the taker, in what it received.
    pub taker_fee: Amount,
    /// Engine time of the trade, ms.
    pub time_ms: u64,
}

/// A match self-trade prevention stopped: the taker's mode decided, and
/// the quantities each side lost (zero for a side it left alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prevention {
    /// Market.
    pub market: MarketId,
    /// Per-market prevented-match id.
    pub id: u64,
    /// Taker order and account.
    pub taker: (u64, AccountId),
    /// Maker order and account.
    pub maker: (u64, AccountId),
    /// The maker's price.
    pub price: Amount,
    /// The taker's mode.
    pub mode: StpMode,
    /// What the taker lost: the quantity the match would have traded, the
    /// smaller of the two remainders (EXPIRE_TAKER, EXPIRE_BOTH, DECREMENT).
    pub taker_quantity: Amount,
    /// What the maker lost: its remainder (EXPIRE_MAKER, EXPIRE_BOTH), or
    /// the prevented quantity (DECREMENT).
    pub maker_quantity: Amount,
    /// Engine time, ms.
    pub time_ms: u64,
}

/// An order's state after a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrderState {
    /// Market.
    pub market: MarketId,
    /// Per-market order id.
    pub order_id: u64,
    /// Owner.
    pub account: AccountId,
    /// Status.
    pub status: OrderStatus,
    /// Filled base quantity.
    pub executed: Amount,
    /// Filled quote quantity.
    pub cumulative_quote: Amount,
    /// Engine time of this change, ms.
    pub time_ms: u64,
}

/// One execution of an order, as its owner is told of it: what happened to
/// the order, and its state right after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Execution {
    /// Market.
    pub market: MarketId,
    /// Per-market order id.
    pub order_id: u64,
    /// Owner.
    pub account: AccountId,
    /// What happened.
    pub kind: ExecutionKind,
    /// Status after it.
    pub status: OrderStatus,
    /// Filled base quantity after it.
    pub executed: Amount,
    /// Filled quote quantity after it.
    pub cumulative_quote: Amount,
    /// Engine time, ms.
    pub time_ms: u64,
}

/// What an execution was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecutionKind {
    /// The order was accepted: working at once (`working`), or waiting for
    /// its trigger or for its list's working order to fill.
    New {
        /// Whether it works (rests or matches) from its placement on.
        working: bool,
    },
    /// The order began working: its trigger fired, or its list placed it
    /// because the list's working order filled.
    Triggered,
    /// The order's quantity was amended.
    Replaced,
    /// The order filled, in part or whole.
    Trade(Fill),
    /// The order was canceled.
    Canceled,
    /// The order expired: by its time in force, or by its list.
    Expired,
    /// Self-trade prevention took quantity off the order (DECREMENT; a taker
    /// is told once, before its fills, and only if it rests) or ended it.
    Prevented(PreventedMatch),
}

/// A fill as one side of it saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fill {
    /// Per-market trade id.
    pub trade_id: u64,
    /// Price.
    pub price: Amount,
    /// Base quantity.
    pub quantity: Amount,
    /// Quote quantity.
    pub quote_quantity: Amount,
    /// Fee this side paid, in what it received.
    pub fee: Amount,
    /// The asset of the fee.
    pub fee_asset: AssetId,
    /// Whether this side was the resting order.
    pub maker: bool,
}

/// The match self-trade prevention stopped, as one order of it saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreventedMatch {
    /// Per-market prevented-match id.
    pub id: u64,
    /// What this order lost in it.
    pub quantity: Amount,
    /// The other order's id.
    pub counter_order_id: u64,
}

/// What a command did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The command was refused; nothing changed.
    Rejected(Reject),
    /// The placed order was accepted under this id (first among its events,
    /// also when it then expires untouched).
    Placed {
        /// Market.
        market: MarketId,
        /// The new order's per-market id.
        order_id: u64,
    },
    /// An order changed state (placed, filled, canceled, expired).
    Order(OrderState),
    /// A fill.
    Trade(Trade),
    /// An order executed: what its owner is told, once per thing that
    /// happened to it, in the order it happened (a taker's fills once its
    /// matching is over).
    Execution(Execution),
    /// A price level's resting quantity changed (zero: the level is gone).
    Level {
        /// Market.
        market: MarketId,
        /// Bids (buy) or asks (sell).
        side: Side,
        /// The level's price.
        price: Amount,
        /// Its resting quantity after the change.
        quantity: Amount,
    },
    /// An order began working: a conditional order's trigger fired (it
    /// works as a market or limit order from here on), or an order list's
    /// pending order is placed because the list's working order filled.
    /// Its next state follows.
    Triggered {
        /// Market.
        market: MarketId,
        /// Order id.
        order_id: u64,
    },
    /// An order list was accepted under this id (first among its events;
    /// the [`Event::Placed`] of its orders follow, working order first).
    ListPlaced {
        /// Market.
        market: MarketId,
        /// The new list's per-market id.
        list_id: u64,
    },
    /// A trailing order began tracking the price (its stop price was
    /// reached, or it was placed without one).
    Tracking {
        /// Market.
        market: MarketId,
        /// Order id.
        order_id: u64,
    },
    /// Self-trade prevention stopped a match.
    Prevented(Prevention),
    /// An order's quantity was reduced in place (its state follows).
    Amended {
        /// Market.
        market: MarketId,
        /// Order id.
        order_id: u64,
        /// Its quantity now, filled part included.
        quantity: Amount,
    },
    /// One part of a cancel-replace failed while the other stands: the
    /// cancel if it comes before the new order's events, else the new order.
    PartRefused(Reject),
    /// An on-chain deposit was credited (its balance follows).
    Deposited {
        /// Account.
        account: AccountId,
        /// Asset.
        asset: AssetId,
        /// Amount.
        amount: Amount,
        /// The deposit's id.
        deposit_id: u64,
        /// Its network (0: the first chain).
        network: u64,
    },
    /// A withdrawal was taken, repeated, completed or failed (the balances
    /// it changed follow).
    Withdrawal {
        /// Its id.
        withdrawal_id: u64,
        /// Account.
        account: AccountId,
        /// Asset.
        asset: AssetId,
        /// What leaves on chain.
        amount: Amount,
        /// What the exchange keeps for it.
        fee: Amount,
        /// What happened to it.
        stage: WithdrawalStage,
        /// Where it goes.
        destination: [u8; 20],
        /// When it was asked for, ms.
        requested_ms: u64,
        /// Its network (0: the first chain).
        network: u64,
    },
    /// A signed transaction of a pending withdrawal was recorded.
    WithdrawalSigned {
        /// The withdrawal's id.
        withdrawal_id: u64,
        /// Its nonce.
        nonce: u64,
    },
    /// An account's deposit address was recorded.
    DepositAddress {
        /// Account.
        account: AccountId,
        /// The address.
        address: [u8; 20],
    },
    /// A balance changed.
    Balance {
        /// Account.
        account: AccountId,
        /// Asset.
        asset: AssetId,
        /// Free amount after.
        free: Amount,
        /// Locked amount after.
        locked: Amount,
    },
}
