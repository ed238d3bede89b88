//! weiport's on-chain wallet: the indexer and the exchange as one system.
//!
//! - Every account gets its own deposit address, derived from an HD seed
//!   sealed at rest. The indexer's balance changes on those addresses are
//!   credited to the account once `confirmations` blocks deep, exactly once:
//!   deposit ids only grow and the engine refuses one not above the last.
//! - Deposit addresses are swept into the hot wallet once they hold enough,
//!   the deposit paying its own gas; a sweep is not a deposit.
//! - Withdrawals are engine commands (funds held at once); this wallet
//!   signs each one's transaction from the hot wallet, stores it before it is
//!   sent, follows it to the same depth, and settles it, completed or
//!   refunded.
//!
//! ```text
//!  indexer ──▶ storage (balance_at) ──▶ deposits ──▶ Command::Deposit ──▶ engine
//!  engine ──▶ ChainView (withdrawals pending) ──▶ withdrawals ──▶ node
//!                                     node receipts ──▶ Command::SettleWithdrawal
//! ```

#![warn(unreachable_pub)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use alloy::signers::local::PrivateKeySigner;
use alloy_primitives::{Address, U256};
use futures::future::BoxFuture;
use tokio::sync::{Notify, watch};
use weiport_access::MasterKey;
use weiport_exchange::AssetId;
use weiport_exchange::amount::Amount;
use weiport_exchange::engine::Command;
use weiport_exchange::sequencer::{Outcome, SequencerError};
use weiport_exchange::view::WithdrawalView;
use weiport_indexer::{NodeClient, NodeError};
use weiport_storage::{DepositRow, StorageError, Store, WithdrawalTxRow};

mod chain;
mod deposits;
mod keys;
mod sweeps;
mod withdrawals;

/// Describes the wallet's metrics (withdrawals not yet final, by network).
pub fn describe_metrics() {
    metrics::describe_gauge!(
        withdrawals::PROCESSING,
        "Withdrawals asked for and not yet final on chain"
    );
    metrics::describe_gauge!(
        withdrawals::OLDEST_SECONDS,
        metrics::Unit::Seconds,
        "Age of the oldest withdrawal not yet final (0: none)"
    );
}

pub use keys::{DEV_CHAIN_ID, DEV_HOT_WALLET_KEY, hot_wallet};

/// The wallet's passes (deposits, sweeps, withdrawals) so far (counter):
/// one per poll interval, or per nudge, when all is well.
pub const PASSES: &str = "weiport_wallet_passes_total";

/// Wei in one 10^-8 unit of the exchange's ETH.
pub const WEI_PER_UNIT: u64 = 10_000_000_000;

/// Why a wallet step failed.
#[derive(Debug, thiserror::Error)]
pub enum WalletError {
    /// Storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The node failed or refused.
    #[error(transparent)]
    Node(#[from] NodeError),
    /// The node's answer lacked a field or had it in a form not expected.
    #[error("malformed node answer: {0}")]
    Malformed(&'static str),
    /// The seed or a key is unusable.
    #[error("wallet keys: {0}")]
    Seed(&'static str),
    /// A transaction could not be signed.
    #[error("signing failed: {0}")]
    Signing(String),
    /// The exchange engine stopped.
    #[error(transparent)]
    Engine(#[from] SequencerError),
}

/// The exchange as the wallet uses it: commands in, the chain part of its
/// read side out.
pub trait Ledger: Send + Sync + 'static {
    /// Sequences `command` (durable once answered).
    fn submit(&self, command: Command) -> BoxFuture<'static, Result<Arc<Outcome>, SequencerError>>;
    /// The id of the last deposit the engine credited on `network` (0: none).
    fn last_deposit_id(&self, network: u64) -> u64;
    /// The withdrawals on `network` the engine holds now (requested, not
    /// yet ended), by id.
    fn pending_withdrawals(&self, network: u64) -> Vec<(u64, WithdrawalView)>;
    /// The network withdrawal `id` leaves on, if the engine knows it.
    fn withdrawal_network(&self, id: u64) -> Option<u64>;
}

/// How the wallet works.
#[derive(Debug, Clone)]
pub struct WalletConfig {
    /// The network as the exchange's ledger knows it: 0 for the first
    /// chain, else the chain's id.
    pub ledger_network: u64,
    /// The chain's id (checked against the node's).
    pub chain_id: Option<u64>,
    /// The chain's name, as the API shows it.
    pub chain_name: String,
    /// Blocks a deposit or withdrawal must be under (itself included) to be final.
    pub confirmations: u64,
    /// The exchange asset the chain's coin is (ETH).
    pub asset: AssetId,
    /// Its name and the network's, as the API shows them.
    pub coin: String,
    /// Network name.
    pub network: String,
    /// Whether deposits are credited.
    pub deposit_enable: bool,
    /// Whether withdrawals are taken.
    pub withdraw_enable: bool,
    /// Kept by the exchange per withdrawal.
    pub withdraw_fee: Amount,
    /// Smallest withdrawal.
    pub withdraw_min: Amount,
    /// Largest withdrawal.
    pub withdraw_max: Amount,
    /// A deposit address holding at least this much is swept.
    pub sweep_threshold: U256,
    /// Gas limit of a withdrawal to an address with code.
    pub contract_gas_limit: u64,
    /// A withdrawal transaction not mined after this long is replaced with higher fees.
    pub replace_after: Duration,
    /// How often the wallet looks at the index, the engine and the node.
    pub poll: Duration,
}

/// A deposit as the history shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DepositView {
    /// The row (for a pending deposit: what it will be credited as).
    pub row: DepositRow,
    /// Its confirmations so far.
    pub confirmations: u64,
    /// 0 pending, 6 credited (still on its deposit address), 1 swept into the hot wallet.
    pub status: u8,
}

pub use weiport_reserves::SignedHolding;

/// The wallet: keys, and the state its loops share with the API.
pub struct Wallet {
    store: Store,
    node: chain::Node,
    config: WalletConfig,
    keys: keys::DepositKeys,
    hot: PrivateKeySigner,
    /// Deposits seen but not final, as the last scan found them.
    pending: Mutex<Vec<DepositRow>>,
    wake: Notify,
    /// The hot wallet is a well-known dev key: usable only on a dev chain.
    dev_hot_wallet: bool,
    /// Whether the hot wallet may pay (a dev key: once the chain is a dev chain).
    hot_usable: AtomicBool,
}

impl std::fmt::Debug for Wallet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wallet")
            .field("hot", &self.hot.address())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Wallet {
    /// Opens the wallet: its seed (made and sealed with `master` on first
    /// use) and the hot wallet's key (`None`: the dev default, used only on
    /// a dev chain).
    pub fn open(
        store: Store,
        node: NodeClient,
        master: &MasterKey,
        hot: Option<PrivateKeySigner>,
        config: WalletConfig,
    ) -> Result<Self, WalletError> {
        let keys = keys::DepositKeys::load_or_create(&store, master)?;
        let dev_hot_wallet = hot.is_none();
        let hot = match hot {
            Some(hot) => hot,
            None => hot_wallet(DEV_HOT_WALLET_KEY)?,
        };
        Ok(Self {
            store,
            node: chain::Node(node),
            config,
            keys,
            hot,
            pending: Mutex::new(Vec::new()),
            wake: Notify::new(),
            dev_hot_wallet,
            hot_usable: AtomicBool::new(!dev_hot_wallet),
        })
    }

    /// The store's wallet seed as stored, sealed with `master` (made first
    /// if there is none): this process's offer when a cluster settles on one.
    pub fn sealed_seed(store: &Store, master: &MasterKey) -> Result<Vec<u8>, WalletError> {
        keys::DepositKeys::sealed(store, master)
    }

    /// Makes `settled` (a sealed seed every process of the cluster uses)
    /// the store's seed; refused if this store handed out addresses from
    /// another.
    pub fn adopt_seed(
        store: &Store,
        master: &MasterKey,
        settled: &[u8],
    ) -> Result<(), WalletError> {
        keys::DepositKeys::adopt(store, master, settled)
    }

    /// Whether withdrawals are taken now: enabled, and the hot wallet usable
    /// on this chain.
    pub fn withdrawals_open(&self) -> bool {
        self.config.withdraw_enable && self.hot_usable.load(Ordering::Acquire)
    }

    /// How it works.
    pub fn config(&self) -> &WalletConfig {
        &self.config
    }

    /// What the hot wallet and every deposit address hold on chain, by the
    /// index (Wei).
    pub fn holdings(&self) -> Result<U256, WalletError> {
        let mut total = self
            .store
            .balance(&self.hot.address())?
            .map_or(U256::ZERO, |b| b.wei);
        for (_, address) in self.store.deposit_addresses()? {
            if let Some(balance) = self.store.balance(&address)? {
                total = total.saturating_add(balance.wei);
            }
        }
        Ok(total)
    }

    /// The last block as deep as a deposit must be to be credited: one no
    /// reorganisation is expected to take back.
    pub fn final_block(&self) -> Option<u64> {
        self.final_through()
    }

    /// The id of the chain the index follows, once it knows it.
    pub fn chain_id(&self) -> Result<Option<u64>, WalletError> {
        Ok(self.store.chain_id()?)
    }

    /// The hash of block `number`, by the index.
    pub fn block_hash(&self, number: u64) -> Result<Option<alloy_primitives::B256>, WalletError> {
        Ok(self.store.block(number)?.map(|record| record.hash))
    }

    /// What the exchange controls on this chain at `block`, by the index:
    /// the hot wallet and every deposit address holding anything, each with
    /// `message(address)` signed (EIP-191, `personal_sign`) by its key.
    pub fn signed_reserves(
        &self,
        block: u64,
        message: &dyn Fn(Address) -> String,
    ) -> Result<Vec<SignedHolding>, WalletError> {
        use alloy::signers::SignerSync;
        let mut owners = vec![(None, self.hot.address())];
        owners.extend(
            self.store
                .deposit_addresses()?
                .into_iter()
                .map(|(account, address)| (Some(account), address)),
        );
        let mut holdings = Vec::new();
        for (account, address) in owners {
            let wei = self.store.balance_at(&address, block)?.unwrap_or_default();
            if wei.is_zero() {
                continue;
            }
            let signer = match account {
                None => self.hot.clone(),
                Some(account) => self.keys.signer(account)?,
            };
            let text = message(address);
            let signature = signer
                .sign_message_sync(text.as_bytes())
                .map_err(|_| WalletError::Seed("could not sign the reserves message"))?;
            holdings.push(SignedHolding {
                address,
                wei,
                message: text,
                signature: signature.as_bytes(),
            });
        }
        Ok(holdings)
    }

    /// The last block the index holds.
    pub fn indexed_head(&self) -> Option<u64> {
        self.store.indexed_head()
    }

    /// The hot wallet's address.
    pub fn hot_address(&self) -> Address {
        self.hot.address()
    }

    /// `account`'s deposit address, once recorded (by the exchange's
    /// command that assigns it, so every process of a cluster has it).
    pub fn deposit_address(&self, account: u64) -> Result<Option<Address>, WalletError> {
        Ok(self.store.deposit_address(account)?)
    }

    /// `account`'s deposit address as the seed derives it, to be assigned.
    pub fn derive_deposit_address(&self, account: u64) -> Result<Address, WalletError> {
        self.keys.address(account)
    }

    /// `account`'s deposits, credited and pending, newest first.
    pub fn deposits(&self, account: u64) -> Result<Vec<DepositView>, WalletError> {
        let head = self.store.indexed_head().unwrap_or(0);
        let confirmations = |block: u64| head.saturating_sub(block) + 1;
        let mut out: Vec<DepositView> = Vec::new();
        let address = self.store.deposit_address(account)?;
        let swept = match &address {
            Some(address) => self.store.swept_through(address)?,
            None => None,
        };
        for row in self.store.deposits(account)? {
            let status = if swept.is_some_and(|through| row.block <= through) {
                1
            } else {
                6
            };
            out.push(DepositView {
                confirmations: confirmations(row.block),
                status,
                row,
            });
        }
        let pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        for row in pending.iter().filter(|row| row.account == account) {
            if out.iter().any(|d| d.row.deposit_id == row.deposit_id) {
                continue;
            }
            out.push(DepositView {
                confirmations: confirmations(row.block),
                status: 0,
                row: row.clone(),
            });
        }
        out.sort_by_key(|d| std::cmp::Reverse(d.row.deposit_id));
        Ok(out)
    }

    /// What withdrawal `id` has done on chain.
    pub fn withdrawal_tx(&self, id: u64) -> Result<Option<WithdrawalTxRow>, WalletError> {
        Ok(self.store.withdrawal_tx(id)?)
    }

    /// Asks the loops to look now (a withdrawal was just taken).
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Runs deposits, sweeps and withdrawals until `stop`: one pass each per
    /// poll (or wake-up). A failed pass is logged and retried next time; every
    /// step it takes is durable before the next, so none is lost or doubled.
    ///
    /// Only while `leading` (this process sequences the exchange) does it
    /// credit, sweep and send; otherwise it only keeps the deposit history
    /// of this process's index, the primary's credits coming through the
    /// exchange's log. It takes up the rest when the lead moves here, from
    /// what that log recorded: a withdrawal signed elsewhere is followed.
    pub async fn run(
        self: Arc<Self>,
        ledger: Arc<dyn Ledger>,
        mut leading: watch::Receiver<bool>,
        mut stop: watch::Receiver<bool>,
    ) {
        let chain_id = loop {
            match self.node.chain_id().await {
                Ok(id) => break id,
                Err(error) => {
                    tracing::warn!(%error, "wallet: waiting for the node");
                    tokio::select! {
                        _ = tokio::time::sleep(self.config.poll.max(Duration::from_secs(1))) => {}
                        _ = stop.changed() => return,
                    }
                }
            }
        };
        if self.config.chain_id.is_some_and(|id| id != chain_id) {
            tracing::error!(
                chain_id,
                configured = self.config.chain_id,
                "wallet: the node answers another chain id; this network's wallet stays off"
            );
            return;
        }
        if self.dev_hot_wallet {
            if self.node.is_dev_node(chain_id, self.hot.address()).await {
                self.hot_usable.store(true, Ordering::Release);
            } else {
                tracing::error!(
                    chain_id,
                    "wallet.hot_wallet_key is not set and this is no dev chain: withdrawals are off"
                );
            }
        }
        tracing::info!(
            hot_wallet = %self.hot.address(),
            chain_id,
            network = %self.config.network,
            confirmations = self.config.confirmations,
            "wallet running"
        );
        let mut deposits = deposits::Scanner::default();
        let mut sweeps = sweeps::Sweeper::default();
        let mut withdrawals = withdrawals::Sender::new(chain_id);
        let mut led = false;
        // A process alone leads for good: the role's sender is gone, and a
        // closed channel answers `changed` at once, every time (the loop
        // then spun, a core's worth of passes, measured).
        let mut role_may_change = true;
        loop {
            if *stop.borrow() {
                return;
            }
            metrics::counter!(PASSES, "network" => self.config.network.clone()).increment(1);
            let leads = *leading.borrow_and_update();
            if leads && !led {
                // What another process did while it led is in the log and
                // on chain, not in this one's memory.
                sweeps = sweeps::Sweeper::default();
                withdrawals = withdrawals::Sender::new(chain_id);
            }
            led = leads;
            if self.config.deposit_enable
                && let Err(error) = deposits.pass(&self, ledger.as_ref(), leads).await
            {
                tracing::warn!(%error, network = %self.config.network, "wallet: deposit scan failed; retrying");
            }
            if leads && let Err(error) = sweeps.pass(&self, chain_id).await {
                tracing::warn!(%error, network = %self.config.network, "wallet: sweep failed; retrying");
            }
            if leads
                && self.hot_usable.load(Ordering::Acquire)
                && let Err(error) = withdrawals.pass(&self, ledger.as_ref()).await
            {
                tracing::warn!(%error, network = %self.config.network, "wallet: withdrawal step failed; retrying");
            }
            tokio::select! {
                _ = tokio::time::sleep(self.config.poll) => {}
                _ = self.wake.notified() => {}
                changed = leading.changed(), if role_may_change => {
                    role_may_change = changed.is_ok();
                }
                _ = stop.changed() => return,
            }
        }
    }

    /// The last block with `confirmations` blocks on it, by the index.
    fn final_through(&self) -> Option<u64> {
        let head = self.store.indexed_head()?;
        (head + 1).checked_sub(self.config.confirmations)
    }

    fn set_pending(&self, rows: Vec<DepositRow>) {
        *self.pending.lock().unwrap_or_else(PoisonError::into_inner) = rows;
    }
}

/// Wei as the exchange's 10^-8 units, rounded down, and the Wei left over.
pub fn wei_to_units(wei: U256) -> (u64, U256) {
    let per_unit = U256::from(WEI_PER_UNIT);
    let units = wei / per_unit;
    (u64::try_from(units).unwrap_or(u64::MAX), wei % per_unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wei_round_down_to_units_and_keep_the_rest() {
        assert_eq!(
            wei_to_units(U256::from(10u64.pow(18))),
            (100_000_000, U256::ZERO)
        );
        assert_eq!(
            wei_to_units(U256::from(25_000_000_007u64)),
            (2, U256::from(5_000_000_007u64))
        );
        assert_eq!(
            wei_to_units(U256::from(9_999_999_999u64)),
            (0, U256::from(9_999_999_999u64))
        );
    }
}
