//! The on-chain wallet as the Binance face calls it: what the capital and
//! admin endpoints read and ask of it. The face declares it; the server
//! wires the wallet behind it once, at start.

use alloy_primitives::{Address, B256, U256};
use weiport_exchange::amount::Amount;
use weiport_exchange::catalog::AssetId;
use weiport_storage::{DepositRow, WithdrawalTxRow};

/// A failure of the wallet's own storage or keys: logged by the face and
/// answered as Binance's internal error.
pub type WalletFailure = Box<dyn std::error::Error + Send + Sync>;

/// The coin the wallet moves on chain, as the capital endpoints show it.
#[derive(Debug, Clone)]
pub struct CoinSettings {
    /// The exchange asset the chain's coin is.
    pub asset: AssetId,
    /// The coin's name.
    pub coin: String,
    /// The network's name (Binance's, e.g. ETH, ARBITRUM).
    pub network: String,
    /// The network as the ledger knows it: 0 for the first chain, else its id.
    pub ledger_network: u64,
    /// The chain's name, as `networkList` shows it.
    pub chain_name: String,
    /// Blocks a deposit or withdrawal must be under (itself included) to be final.
    pub confirmations: u64,
    /// Whether deposits are credited.
    pub deposit_enable: bool,
    /// Kept by the exchange per withdrawal.
    pub withdraw_fee: Amount,
    /// Smallest withdrawal.
    pub withdraw_min: Amount,
    /// Largest withdrawal.
    pub withdraw_max: Amount,
}

/// A deposit as the history shows it.
#[derive(Debug, Clone)]
pub struct Deposit {
    /// The row (for a pending deposit: what it will be credited as).
    pub row: DepositRow,
    /// Its confirmations so far.
    pub confirmations: u64,
    /// 0 pending, 6 credited (still on its deposit address), 1 swept into the hot wallet.
    pub status: u8,
}

/// The on-chain wallet's side of deposits and withdrawals.
pub trait ChainWallet: Send + Sync + 'static {
    /// The coin and its limits.
    fn coin(&self) -> &CoinSettings;
    /// Whether withdrawals are taken now (enabled, and the hot wallet usable).
    fn withdrawals_open(&self) -> bool;
    /// `account`'s deposit address, once recorded.
    fn deposit_address(&self, account: u64) -> Result<Option<Address>, WalletFailure>;
    /// `account`'s deposit address as the wallet's seed derives it.
    fn derive_deposit_address(&self, account: u64) -> Result<Address, WalletFailure>;
    /// `account`'s deposits, credited and pending, newest first.
    fn deposits(&self, account: u64) -> Result<Vec<Deposit>, WalletFailure>;
    /// What withdrawal `id` has done on chain.
    fn withdrawal_tx(&self, id: u64) -> Result<Option<WithdrawalTxRow>, WalletFailure>;
    /// The last block the index holds.
    fn indexed_head(&self) -> Option<u64>;
    /// Asks the wallet to look now (a withdrawal was just taken).
    fn wake(&self);
    /// What the hot wallet and every deposit address hold on chain (Wei).
    fn holdings(&self) -> Result<U256, WalletFailure>;
    /// The hot wallet's address.
    fn hot_address(&self) -> Address;
    /// The id of the chain the index follows, once known.
    fn chain_id(&self) -> Result<Option<u64>, WalletFailure>;
    /// The last block no reorganisation is expected to take back.
    fn final_block(&self) -> Option<u64>;
    /// The hash of block `number`, by the index.
    fn block_hash(&self, number: u64) -> Result<Option<B256>, WalletFailure>;
    /// Every address the exchange controls holding anything at `block`,
    /// each with `message(address)` signed by its key.
    fn signed_reserves(
        &self,
        block: u64,
        message: &dyn Fn(Address) -> String,
    ) -> Result<Vec<weiport_reserves::SignedHolding>, WalletFailure>;
}
