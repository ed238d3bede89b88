//! weiport's storage: one RocksDB database, its column families, and the typed
//! reads and atomic write batches the other crates use. Every byte layout lives
//! in [`codec`]; nothing outside this crate sees raw keys.

#![warn(unreachable_pub)]

pub mod access;
pub mod backup;
pub mod codec;
pub mod exchange;
mod history;
mod record;
mod snapshot;
mod store;
mod transactions;
mod transfers;
mod wallet;

pub use access::{AccountRecord, ApiKeyRecord};
pub use backup::BackupManifest;
pub use codec::{BlockRecord, Cursor, LatestBalance};
pub use exchange::{CommandRecord, JournalEntry, OrderRecord};
pub use history::{
    AggTradeRow, CandleRow, CandleSpan, ConditionalRow, ExchangeBatch, ListRow, OrderRow,
    PreventedRow, ScanDirection, TradeRow,
};
pub use store::{EngineFigures, IndexBatch, Store, StoreOptions};
pub use transactions::{HistoryPage, IndexedTransaction, TransactionRow};
pub use transfers::{
    BLOCK_LEVEL, BeaconWithdrawal, HistoryIndex, IndexedTransfer, InternalTransfer, MinedBlock,
    NftHolding, NftStandard, NftTransfer, TokenHolding, TokenInfo, TokenTransfer, Transfer,
    TransferKind,
};
pub use wallet::{DepositRow, SentTx, WithdrawalTxRow};

/// Column families, in the order they are opened.
pub mod cf {
    /// Schema version, chain id, genesis hash, indexer cursor.
    pub const META: &str = "meta";
    /// `address` → latest balance and the block that set it.
    pub const BALANCE: &str = "balance";
    /// `address ‖ block` → balance after each block that changed it.
    pub const BALANCE_AT: &str = "balance_at";
    /// `number` → block hash, parent hash and touched addresses.
    pub const BLOCK: &str = "block";
    /// `block ‖ index` → a transaction and its receipt's outcome.
    pub const TX: &str = "tx";
    /// `address ‖ block ‖ index` → nothing: an address's transactions.
    pub const ADDRESS_TX: &str = "address_tx";
    /// `transaction hash` → `block ‖ index`.
    pub const TX_HASH: &str = "tx_hash";
    /// `block ‖ tx index ‖ kind ‖ sequence` → an internal or token transfer.
    pub const TRANSFER: &str = "transfer";
    /// `address ‖ kind ‖ block ‖ tx index ‖ sequence` → nothing: an
    /// address's transfers of one kind.
    pub const ADDRESS_TRANSFER: &str = "address_transfer";
    /// `holder ‖ token ‖ block` → the holder's token balance after the block.
    pub const TOKEN_BALANCE: &str = "token_balance";
    /// `token` → its name, symbol and decimals.
    pub const TOKEN: &str = "token";
    /// `token ‖ holder ‖ block` → the holder's balance after the block: the
    /// token balances again, by token (its holders).
    pub const TOKEN_HOLDER: &str = "token_holder";
    /// `holder ‖ contract ‖ token id ‖ block` → the ERC-721 or ERC-1155
    /// amount the holder held after the block.
    pub const NFT_HOLDING: &str = "nft_holding";
    /// `account id` → account record.
    pub const ACCOUNT: &str = "account";
    /// `key id` → API key record (secrets sealed).
    pub const API_KEY: &str = "api_key";
    /// `sequence` → exchange command, in the order the engine applied them.
    pub const COMMAND_LOG: &str = "command_log";
    /// `symbol ‖ order id` → order row.
    pub const EX_ORDER: &str = "ex_order";
    /// `account ‖ symbol ‖ order id` → nothing: an account's orders.
    pub const EX_ACCOUNT_ORDER: &str = "ex_account_order";
    /// `account ‖ symbol ‖ client order id` → the latest order id using it.
    pub const EX_CLIENT_ORDER: &str = "ex_client_order";
    /// `symbol ‖ trade id` → trade row.
    pub const EX_TRADE: &str = "ex_trade";
    /// `account ‖ symbol ‖ trade id` → nothing: an account's trades.
    pub const EX_ACCOUNT_TRADE: &str = "ex_account_trade";
    /// `symbol ‖ aggregate id` → aggregate trade row.
    pub const EX_AGG_TRADE: &str = "ex_agg_trade";
    /// `symbol ‖ minute open time` → one-minute candle.
    pub const EX_CANDLE: &str = "ex_candle";
    /// `symbol ‖ hour open time` → one-hour candle (UTC hours).
    pub const EX_CANDLE_HOUR: &str = "ex_candle_hour";
    /// `symbol ‖ day open time` → one-day candle (UTC days).
    pub const EX_CANDLE_DAY: &str = "ex_candle_day";
    /// `list id` → order list row (list ids span every market).
    pub const EX_ORDER_LIST: &str = "ex_order_list";
    /// `account ‖ list id` → nothing: an account's order lists.
    pub const EX_ACCOUNT_LIST: &str = "ex_account_list";
    /// `account ‖ list client id` → the latest list id using it.
    pub const EX_CLIENT_LIST: &str = "ex_client_list";
    /// `symbol ‖ prevented-match id` → a match self-trade prevention stopped.
    pub const EX_PREVENTED: &str = "ex_prevented";
    /// `symbol ‖ order id ‖ prevented-match id` → nothing: an order's prevented matches.
    pub const EX_ORDER_PREVENTED: &str = "ex_order_prevented";

    /// The exchange wallet: sealed seed, deposit addresses, deposits
    /// credited, withdrawal transactions, sweeps.
    pub const WALLET: &str = "wallet";

    /// Logical name of a chain's own metadata (cursor, chain id, genesis
    /// hash, start marks): [`META`] for the first chain, `meta@<id>` for
    /// each further one.
    pub const CHAIN_META: &str = "chain_meta";
    /// Logical name of a chain's own wallet rows (deposits credited, sweeps):
    /// [`WALLET`] for the first chain, `wallet@<id>` for each further one.
    pub const CHAIN_WALLET: &str = "chain_wallet";

    /// The families each further chain has its own copy of, named
    /// `<family>@<chain id>`; every other family is shared by all chains.
    pub const PER_CHAIN: &[&str] = &[
        BALANCE,
        BALANCE_AT,
        BLOCK,
        TX,
        ADDRESS_TX,
        TX_HASH,
        TRANSFER,
        ADDRESS_TRANSFER,
        TOKEN_BALANCE,
        TOKEN,
        TOKEN_HOLDER,
        NFT_HOLDING,
        CHAIN_META,
        CHAIN_WALLET,
    ];

    /// The name a further chain's copy of `family` has on disk.
    pub fn of_chain(family: &str, chain_id: u64) -> String {
        let base = match family {
            CHAIN_META => META,
            CHAIN_WALLET => WALLET,
            other => other,
        };
        format!("{base}@{chain_id}")
    }

    /// The family a name on disk is a copy of (itself for a shared one).
    pub fn base(name: &str) -> &str {
        name.split('@').next().unwrap_or(name)
    }

    /// Every column family of the current schema.
    pub const ALL: &[&str] = &[
        META,
        BALANCE,
        BALANCE_AT,
        BLOCK,
        TX,
        ADDRESS_TX,
        TX_HASH,
        TRANSFER,
        ADDRESS_TRANSFER,
        TOKEN_BALANCE,
        TOKEN,
        TOKEN_HOLDER,
        NFT_HOLDING,
        ACCOUNT,
        API_KEY,
        COMMAND_LOG,
        EX_ORDER,
        EX_ACCOUNT_ORDER,
        EX_CLIENT_ORDER,
        EX_TRADE,
        EX_ACCOUNT_TRADE,
        EX_AGG_TRADE,
        EX_CANDLE,
        EX_CANDLE_HOUR,
        EX_CANDLE_DAY,
        EX_ORDER_LIST,
        EX_ACCOUNT_LIST,
        EX_CLIENT_LIST,
        EX_PREVENTED,
        EX_ORDER_PREVENTED,
        WALLET,
    ];
}

/// The on-disk layout version this build reads and writes.
pub const SCHEMA_VERSION: u32 = 1;

/// Everything that can go wrong below the storage API.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// The data directory could not be created or is not writable.
    #[error("data directory {path} is not usable: {source}")]
    DataDir {
        /// The directory.
        path: std::path::PathBuf,
        /// What the file system said.
        source: std::io::Error,
    },
    /// RocksDB refused an operation.
    #[error("rocksdb: {0}")]
    Rocks(#[from] rocksdb::Error),
    /// The database was written by a build with another layout.
    #[error("data directory has schema version {found}; this build reads only version {supported}")]
    UnknownSchema {
        /// Version found on disk.
        found: u32,
        /// Version this build knows.
        supported: u32,
    },
    /// A backup could not be written, read or restored.
    #[error("backup {path}: {what}")]
    Backup {
        /// The file or directory concerned.
        path: std::path::PathBuf,
        /// What went wrong.
        what: String,
    },
    /// A stored value does not have the length its layout requires.
    #[error("corrupt {what} in the database ({len} bytes)")]
    Corrupt {
        /// Which layout failed to decode.
        what: &'static str,
        /// The length found.
        len: usize,
    },
}

impl StorageError {
    /// A failure of the disk under the store (full, or refusing I/O) rather
    /// than of the data: RocksDB refuses writes until it recovers, which it
    /// does by itself once space returns, so a writer can wait and retry.
    pub fn is_unavailable(&self) -> bool {
        use rocksdb::ErrorKind;
        match self {
            Self::Rocks(error) => matches!(
                error.kind(),
                ErrorKind::IOError | ErrorKind::Busy | ErrorKind::TimedOut | ErrorKind::TryAgain
            ),
            Self::DataDir { .. } => true,
            _ => false,
        }
    }
}
