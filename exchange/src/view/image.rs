//! The read side as a snapshot keeps it: everything but its open orders,
//! which are the recorder's own as well and come back from it. Copied on
//! the engine thread; the copy is the only pause a snapshot costs.

use std::collections::{BTreeMap, VecDeque};

use weiport_storage::CandleRow;

use super::{AccountView, ChainView, MarketView, View};
use crate::amount::Amount;
use crate::catalog::AssetId;
use crate::engine::{AccountId, Trade};
use crate::history::OrderView;

/// A [`View`] without its open orders.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub struct ViewImage {
    markets: Vec<MarketImage>,
    /// In the map's order when copied, written in the order of the accounts.
    #[serde(serialize_with = "by_account")]
    accounts: Vec<AccountImage>,
    sequence: u64,
    chain: ChainView,
}

#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct MarketImage {
    bids: BTreeMap<Amount, Amount>,
    asks: BTreeMap<Amount, Amount>,
    update_id: u64,
    last_trade: Option<Trade>,
    last_agg: u64,
    candles: VecDeque<CandleRow>,
}

#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct AccountImage {
    account: AccountId,
    balances: BTreeMap<AssetId, (Amount, Amount)>,
    update_ms: u64,
}

impl View {
    /// A copy of all of it but its open orders.
    pub fn image(&self) -> ViewImage {
        ViewImage {
            markets: self
                .markets
                .iter()
                .map(|market| MarketImage {
                    bids: market.bids.clone(),
                    asks: market.asks.clone(),
                    update_id: market.update_id,
                    last_trade: market.last_trade,
                    last_agg: market.last_agg,
                    candles: market.candles.clone(),
                })
                .collect(),
            accounts: self
                .accounts
                .iter()
                .map(|(account, view)| AccountImage {
                    account: *account,
                    balances: view.balances.clone(),
                    update_ms: view.update_ms,
                })
                .collect(),
            sequence: self.sequence,
            chain: self.chain.clone(),
        }
    }

    /// The view `image` was taken of, whose open orders were `open`.
    /// `None` when an order names a market the image has not.
    pub fn from_image<'a>(
        image: ViewImage,
        open: impl IntoIterator<Item = &'a OrderView>,
    ) -> Option<Self> {
        let mut view = Self {
            markets: image
                .markets
                .into_iter()
                .map(|market| MarketView {
                    open: Default::default(),
                    bids: market.bids,
                    asks: market.asks,
                    update_id: market.update_id,
                    last_trade: market.last_trade,
                    last_agg: market.last_agg,
                    candles: market.candles,
                    book: Default::default(),
                })
                .collect(),
            accounts: image
                .accounts
                .into_iter()
                .map(|account| {
                    let view = AccountView {
                        balances: account.balances,
                        open: Default::default(),
                        update_ms: account.update_ms,
                    };
                    (account.account, view)
                })
                .collect(),
            sequence: image.sequence,
            chain: image.chain,
        };
        for order in open {
            let market = view.markets.get_mut(usize::from(order.market.0))?;
            market.open.insert(order.order_id, order.clone());
            view.accounts
                .entry(order.account)
                .or_default()
                .open
                .insert((order.market, order.order_id));
        }
        Some(view)
    }
}

fn by_account<S: serde::Serializer>(
    accounts: &[AccountImage],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let mut sorted: Vec<&AccountImage> = accounts.iter().collect();
    sorted.sort_unstable_by_key(|image| image.account);
    serializer.collect_seq(sorted)
}
