//! The traits each face declares for what it needs, implemented over the
//! parts that provide it: the price face over the exchange's market data,
//! the Binance face over the on-chain wallet, the wallet over the engine.

use std::sync::Arc;

use alloy_primitives::{Address, B256, U256};
use futures::future::BoxFuture;
use weiport_exchange::engine::Command;
use weiport_exchange::sequencer::{Outcome, Sequencer, SequencerError};
use weiport_exchange::view::WithdrawalView;
use weiport_exchange_api::{ChainWallet, CoinSettings, Deposit, Exchange, WalletFailure};
use weiport_reserves::SignedHolding;
use weiport_storage::WithdrawalTxRow;
use weiport_wallet::Wallet;

/// The exchange's market data, as the price face reads it.
pub struct ExchangeMarkets(pub Arc<Exchange>);

impl weiport_coingecko_api::Markets for ExchangeMarkets {
    fn catalog(&self) -> &weiport_exchange::Catalog {
        &self.0.catalog
    }

    fn view(&self) -> std::sync::RwLockReadGuard<'_, weiport_exchange::view::View> {
        self.0.sequencer.view()
    }

    fn history(&self) -> &weiport_exchange::history::History {
        &self.0.history
    }
}

/// The exchange's last trades of the chain's coin, as the Etherscan face's
/// `ethprice` reads them.
pub struct CoinPricesOf {
    /// The exchange.
    pub exchange: Arc<Exchange>,
    /// The chain's coin (ETH).
    pub coin: String,
}

impl weiport_query_api::CoinPrices for CoinPricesOf {
    fn last_price(&self, quote: &str) -> Option<(String, u64)> {
        let quotes: &[&str] = match quote {
            "USD" => &["USDT", "USDC", "USD", "DAI", "FDUSD"],
            other => &[other],
        };
        let catalog = &self.exchange.catalog;
        let view = self.exchange.sequencer.view();
        let trade = catalog
            .markets()
            .filter_map(|(id, _)| {
                let (base, quoted) = catalog.pair(id)?;
                let wanted =
                    catalog.asset(base) == self.coin && quotes.contains(&catalog.asset(quoted));
                wanted.then(|| view.market(id)?.last_trade)?
            })
            .max_by_key(|trade| trade.time_ms)?;
        let price = trade.price.to_string();
        let price = match price.split_once('.') {
            Some((whole, fraction)) if fraction.trim_end_matches('0').is_empty() => {
                whole.to_owned()
            }
            Some(_) => price.trim_end_matches('0').to_owned(),
            None => price,
        };
        Some((price, trade.time_ms / 1000))
    }
}

/// The engine as the wallet drives it: commands through the sequencer, and
/// the chain part of its read side. It holds the sequencer, so the engine
/// thread runs until the wallet's loop has ended too.
pub struct EngineLedger(pub Arc<Sequencer>);

impl weiport_wallet::Ledger for EngineLedger {
    fn submit(&self, command: Command) -> BoxFuture<'static, Result<Arc<Outcome>, SequencerError>> {
        let sequencer = self.0.clone();
        Box::pin(async move { sequencer.submit(command).await })
    }

    fn last_deposit_id(&self, network: u64) -> u64 {
        let view = self.0.view();
        view.chain
            .last_deposit_ids
            .get(&network)
            .copied()
            .unwrap_or(0)
    }

    fn pending_withdrawals(&self, network: u64) -> Vec<(u64, WithdrawalView)> {
        let view = self.0.view();
        view.chain
            .pending()
            .filter(|(_, withdrawal)| withdrawal.network == network)
            .map(|(id, withdrawal)| (id, withdrawal.clone()))
            .collect()
    }

    fn withdrawal_network(&self, id: u64) -> Option<u64> {
        self.0.view().chain.withdrawals.get(&id).map(|w| w.network)
    }
}

/// The on-chain wallet, as the Binance face's capital endpoints call it.
pub struct WalletFace {
    wallet: Arc<Wallet>,
    coin: CoinSettings,
}

impl WalletFace {
    /// The face's view of `wallet`, its coin settings read once (they are
    /// fixed at start).
    pub fn new(wallet: Arc<Wallet>) -> Self {
        let config = wallet.config();
        let coin = CoinSettings {
            asset: config.asset,
            coin: config.coin.clone(),
            network: config.network.clone(),
            ledger_network: config.ledger_network,
            chain_name: config.chain_name.clone(),
            confirmations: config.confirmations,
            deposit_enable: config.deposit_enable,
            withdraw_fee: config.withdraw_fee,
            withdraw_min: config.withdraw_min,
            withdraw_max: config.withdraw_max,
        };
        Self { wallet, coin }
    }
}

impl ChainWallet for WalletFace {
    fn coin(&self) -> &CoinSettings {
        &self.coin
    }

    fn withdrawals_open(&self) -> bool {
        self.wallet.withdrawals_open()
    }

    fn deposit_address(&self, account: u64) -> Result<Option<Address>, WalletFailure> {
        Ok(self.wallet.deposit_address(account)?)
    }

    fn derive_deposit_address(&self, account: u64) -> Result<Address, WalletFailure> {
        Ok(self.wallet.derive_deposit_address(account)?)
    }

    fn deposits(&self, account: u64) -> Result<Vec<Deposit>, WalletFailure> {
        Ok(self
            .wallet
            .deposits(account)?
            .into_iter()
            .map(|deposit| Deposit {
                row: deposit.row,
                confirmations: deposit.confirmations,
                status: deposit.status,
            })
            .collect())
    }

    fn withdrawal_tx(&self, id: u64) -> Result<Option<WithdrawalTxRow>, WalletFailure> {
        Ok(self.wallet.withdrawal_tx(id)?)
    }

    fn indexed_head(&self) -> Option<u64> {
        self.wallet.indexed_head()
    }

    fn wake(&self) {
        self.wallet.wake();
    }

    fn holdings(&self) -> Result<U256, WalletFailure> {
        Ok(self.wallet.holdings()?)
    }

    fn hot_address(&self) -> Address {
        self.wallet.hot_address()
    }

    fn chain_id(&self) -> Result<Option<u64>, WalletFailure> {
        Ok(self.wallet.chain_id()?)
    }

    fn final_block(&self) -> Option<u64> {
        self.wallet.final_block()
    }

    fn block_hash(&self, number: u64) -> Result<Option<B256>, WalletFailure> {
        Ok(self.wallet.block_hash(number)?)
    }

    fn signed_reserves(
        &self,
        block: u64,
        message: &dyn Fn(Address) -> String,
    ) -> Result<Vec<SignedHolding>, WalletFailure> {
        Ok(self.wallet.signed_reserves(block, message)?)
    }
}

/// The node behind Etherscan's proxy module.
pub struct ProxiedNode(pub weiport_indexer::NodeClient);

impl weiport_query_api::NodeProxy for ProxiedNode {
    fn call<'a>(
        &'a self,
        method: &'static str,
        params: serde_json::Value,
    ) -> std::pin::Pin<
        Box<
            dyn std::future::Future<
                    Output = Result<serde_json::Value, weiport_query_api::ProxyFailure>,
                > + Send
                + 'a,
        >,
    > {
        use weiport_indexer::NodeError;
        use weiport_query_api::ProxyFailure;
        Box::pin(async move {
            self.0
                .call::<_, serde_json::Value>(method, params)
                .await
                .map_err(|error| match error {
                    NodeError::Rpc {
                        code,
                        message,
                        data,
                        ..
                    } => ProxyFailure::Refused {
                        code,
                        message,
                        data: data.and_then(|raw| serde_json::from_str(&raw).ok()),
                    },
                    NodeError::Unsupported { message, .. } => ProxyFailure::Refused {
                        code: -32601,
                        message,
                        data: None,
                    },
                    NodeError::StateUnavailable { message, .. } => ProxyFailure::Refused {
                        code: -32000,
                        message,
                        data: None,
                    },
                    other => ProxyFailure::Unreachable(other.to_string()),
                })
        })
    }
}

/// The Binance face's way to the primary: the replication's forwarding.
pub struct PrimaryOf(pub weiport_replication::ForwardToPrimary);

impl weiport_exchange_api::PrimaryLink for PrimaryOf {
    fn forward(
        &self,
        command: Vec<u8>,
    ) -> std::pin::Pin<
        Box<
            dyn std::future::Future<Output = Result<weiport_exchange_api::Forwarded, String>>
                + Send
                + '_,
        >,
    > {
        Box::pin(self.0.forward(command))
    }
}

/// What the operator endpoints show, read from the parts this process wired.
pub struct OperatorFigures {
    /// The data dir's store.
    pub store: weiport_storage::Store,
    /// Every chain served.
    pub chains: Arc<Vec<crate::chains::ChainRun>>,
    /// The exchange, unless another process serves it.
    pub exchange: Option<Arc<Exchange>>,
    /// This process's part in a cluster, when in one.
    pub cluster: Option<Arc<weiport_replication::ClusterStatus>>,
    /// Keys and limits (the cluster's Redis).
    pub access: Arc<weiport_access::Access>,
}

impl weiport_operator::Figures for OperatorFigures {
    fn database(&self) -> Result<u32, String> {
        self.store.schema_version().map_err(|e| e.to_string())
    }

    fn engine(&self) -> weiport_storage::EngineFigures {
        self.store.figures()
    }

    fn chains(&self) -> Vec<weiport_operator::ChainFigures> {
        self.chains
            .iter()
            .map(|run| weiport_operator::ChainFigures {
                id: run.chain_id(),
                name: run.chain.name.clone(),
                indexer: run
                    .indexer
                    .as_ref()
                    .map(|indexer| weiport_operator::IndexerFigures {
                        head: indexer.progress.head(),
                        indexed: indexer.progress.indexed(),
                        lag: indexer.progress.lag(),
                        following: indexer.progress.is_following(),
                        problem: indexer.problem(),
                    }),
            })
            .collect()
    }

    fn commands(&self) -> Option<u64> {
        Some(self.exchange.as_ref()?.sequencer.view().sequence)
    }

    fn exchange(&self) -> Option<weiport_operator::ExchangeFigures> {
        let exchange = self.exchange.as_ref()?;
        let view = exchange.sequencer.view();
        let markets = exchange
            .catalog
            .markets()
            .map(|(id, market)| {
                let last = view
                    .markets
                    .get(usize::from(id.0))
                    .and_then(|m| m.last_trade.as_ref())
                    .map(|t| t.price.to_string());
                (market.symbol.clone(), last)
            })
            .collect();
        let wallets = exchange
            .wallets
            .iter()
            .map(|wallet| {
                let coin = wallet.coin();
                let books = view
                    .accounts
                    .values()
                    .filter_map(|a| a.balances.get(&coin.asset))
                    .fold(weiport_exchange::Amount::ZERO, |sum, (free, locked)| {
                        sum.checked_add(*free)
                            .and_then(|s| s.checked_add(*locked))
                            .unwrap_or(sum)
                    });
                weiport_operator::WalletFigures {
                    network: coin.network.clone(),
                    coin: coin.coin.clone(),
                    on_chain: wallet
                        .holdings()
                        .map(|wei| {
                            let (units, _) = weiport_wallet::wei_to_units(wei);
                            weiport_exchange::Amount::from_units(units).to_string()
                        })
                        .map_err(|e| e.to_string()),
                    books: books.to_string(),
                }
            })
            .collect();
        let commands = view.sequence;
        drop(view);
        let reserves = exchange
            .reserves()
            .and_then(|keeper| keeper.latest())
            .and_then(|snapshot| {
                let coverage = snapshot.coverage().ok()?;
                Some((snapshot.sequence, coverage))
            })
            .map(|(sequence, coverage)| {
                coverage
                    .into_iter()
                    .map(|asset| weiport_operator::ReservesFigures {
                        sequence,
                        liabilities: asset.liabilities_in_coins(),
                        reserves: asset.reserves_in_coins(),
                        ratio: asset.ratio_text(),
                        asset: asset.asset,
                    })
                    .collect()
            })
            .unwrap_or_default();
        Some(weiport_operator::ExchangeFigures {
            commands,
            markets,
            wallets,
            reserves,
        })
    }

    fn cluster(&self) -> Option<weiport_operator::ClusterFigures> {
        let status = self.cluster.as_ref()?;
        let (lease_holder, journal_entry) = status.observed();
        let redis = self.access.cluster();
        Some(weiport_operator::ClusterFigures {
            node: status.node.clone(),
            leading: !status.following(),
            lease_holder,
            applied_entry: status.applied_entry(),
            journal_entry,
            redis_reachable: redis.is_some_and(|r| r.is_up()),
            processes: redis.map_or(1, |r| r.nodes()),
        })
    }
}
