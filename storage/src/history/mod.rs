//! The exchange's history: orders, trades, aggregate trades and one-minute
//! candles, with per-account indexes. Rows are written in the same synced
//! batch as the commands that produced them, so the history always ends
//! exactly where the command log does.

use rocksdb::{ColumnFamily, ReadOptions, WriteBatch};

use crate::store::meta_key;
use crate::{CommandRecord, StorageError, Store, cf, codec};

mod rows;

pub use rows::{AggTradeRow, CandleRow, ConditionalRow, ListRow, OrderRow, PreventedRow, TradeRow};

/// `len ‖ symbol`: symbols are short, and the length keeps one symbol's
/// keys from running into a longer symbol's that starts the same.
fn symbol_prefix(symbol: &str) -> Vec<u8> {
    let bytes = &symbol.as_bytes()[..symbol.len().min(255)];
    let mut key = Vec::with_capacity(bytes.len() + 17);
    key.push(bytes.len() as u8);
    key.extend_from_slice(bytes);
    key
}

fn account_prefix(account: u64, symbol: &str) -> Vec<u8> {
    let mut key = account.to_be_bytes().to_vec();
    key.extend_from_slice(&symbol_prefix(symbol));
    key
}

fn with_id(mut prefix: Vec<u8>, id: u64) -> Vec<u8> {
    prefix.extend_from_slice(&id.to_be_bytes());
    prefix
}

fn id_suffix(key: &[u8]) -> Result<u64, StorageError> {
    key.len()
        .checked_sub(8)
        .map(|at| codec::decode_block_number(&key[at..]))
        .unwrap_or(Err(StorageError::Corrupt {
            what: "history key",
            len: key.len(),
        }))
}

/// Which way a history scan walks its ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanDirection {
    /// Ascending from the given id.
    Forward,
    /// Descending from the given id.
    Backward,
}

/// The lengths candles are stored at: minutes from trades, hours and days
/// summed from them, so that a long kline reads a few rows, not thousands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CandleSpan {
    /// One minute.
    Minute,
    /// One UTC hour.
    Hour,
    /// One UTC day.
    Day,
}

impl CandleSpan {
    /// Every span, shortest first.
    pub const ALL: [Self; 3] = [Self::Minute, Self::Hour, Self::Day];

    /// Its length in milliseconds.
    pub const fn millis(self) -> u64 {
        match self {
            Self::Minute => 60_000,
            Self::Hour => 3_600_000,
            Self::Day => 86_400_000,
        }
    }

    fn column(self) -> &'static str {
        match self {
            Self::Minute => cf::EX_CANDLE,
            Self::Hour => cf::EX_CANDLE_HOUR,
            Self::Day => cf::EX_CANDLE_DAY,
        }
    }
}

impl Store {
    /// A batch of command-log and history writes, committed all together.
    pub fn exchange_batch(&self) -> ExchangeBatch {
        ExchangeBatch {
            store: self.clone(),
            batch: WriteBatch::default(),
        }
    }

    /// Whether hour and day candles have been summed from the minute
    /// candles of a history written before they existed.
    pub fn coarse_candles_built(&self) -> Result<bool, StorageError> {
        Ok(self.meta(meta_key::COARSE_CANDLES)?.is_some())
    }

    /// The last command whose history rows are stored (0 before any).
    pub fn exchange_history_sequence(&self) -> Result<u64, StorageError> {
        self.meta(meta_key::EXCHANGE_HISTORY)?
            .map_or(Ok(0), |b| codec::decode_block_number(&b))
    }

    /// The order `order_id` of `symbol`.
    pub fn order(&self, symbol: &str, order_id: u64) -> Result<Option<OrderRow>, StorageError> {
        self.read(
            self.cf(cf::EX_ORDER),
            with_id(symbol_prefix(symbol), order_id),
            OrderRow::decode,
        )
    }

    /// The latest order of `account` on `symbol` placed with `client_order_id`.
    pub fn order_by_client_id(
        &self,
        account: u64,
        symbol: &str,
        client_order_id: &str,
    ) -> Result<Option<u64>, StorageError> {
        let mut key = account_prefix(account, symbol);
        key.extend_from_slice(client_order_id.as_bytes());
        self.read(
            self.cf(cf::EX_CLIENT_ORDER),
            key,
            codec::decode_block_number,
        )
    }

    /// Trade `trade_id` of `symbol`.
    pub fn trade(&self, symbol: &str, trade_id: u64) -> Result<Option<TradeRow>, StorageError> {
        self.read(
            self.cf(cf::EX_TRADE),
            with_id(symbol_prefix(symbol), trade_id),
            TradeRow::decode,
        )
    }

    /// Aggregate trade `id` of `symbol`.
    pub fn agg_trade(&self, symbol: &str, id: u64) -> Result<Option<AggTradeRow>, StorageError> {
        self.read(
            self.cf(cf::EX_AGG_TRADE),
            with_id(symbol_prefix(symbol), id),
            AggTradeRow::decode,
        )
    }

    /// Prevented match `id` of `symbol`.
    pub fn prevented(&self, symbol: &str, id: u64) -> Result<Option<PreventedRow>, StorageError> {
        self.read(
            self.cf(cf::EX_PREVENTED),
            with_id(symbol_prefix(symbol), id),
            PreventedRow::decode,
        )
    }

    /// Prevented matches of order `order_id` of `symbol` from `id` on.
    pub fn order_prevented<'a>(
        &'a self,
        symbol: &'a str,
        order_id: u64,
        id: u64,
    ) -> impl Iterator<Item = Result<PreventedRow, StorageError>> + 'a {
        self.scan(
            cf::EX_ORDER_PREVENTED,
            with_id(symbol_prefix(symbol), order_id),
            id,
            ScanDirection::Forward,
        )
        .map(move |id| {
            self.prevented(symbol, id?)?.ok_or(StorageError::Corrupt {
                what: "order prevented-match index",
                len: 0,
            })
        })
    }

    /// Order list `list_id`.
    pub fn order_list(&self, list_id: u64) -> Result<Option<ListRow>, StorageError> {
        self.read(
            self.cf(cf::EX_ORDER_LIST),
            list_id.to_be_bytes(),
            ListRow::decode,
        )
    }

    /// The latest order list of `account` with client id `client_id`.
    pub fn order_list_by_client_id(
        &self,
        account: u64,
        client_id: &str,
    ) -> Result<Option<ListRow>, StorageError> {
        let mut key = account.to_be_bytes().to_vec();
        key.extend_from_slice(client_id.as_bytes());
        match self.db.get_cf(self.cf(cf::EX_CLIENT_LIST), key)? {
            Some(id) => self.order_list(codec::decode_block_number(&id)?),
            None => Ok(None),
        }
    }

    /// Order lists of `account` from `list_id` on, in `direction`.
    pub fn account_order_lists(
        &self,
        account: u64,
        list_id: u64,
        direction: ScanDirection,
    ) -> impl Iterator<Item = Result<ListRow, StorageError>> + '_ {
        self.scan(
            cf::EX_ACCOUNT_LIST,
            account.to_be_bytes().to_vec(),
            list_id,
            direction,
        )
        .map(move |id| {
            self.order_list(id?)?.ok_or(StorageError::Corrupt {
                what: "account order list index",
                len: 0,
            })
        })
    }

    /// Orders of `account` on `symbol` from `order_id` on, in `direction`.
    pub fn account_orders<'a>(
        &'a self,
        account: u64,
        symbol: &'a str,
        order_id: u64,
        direction: ScanDirection,
    ) -> impl Iterator<Item = Result<OrderRow, StorageError>> + 'a {
        self.scan(
            cf::EX_ACCOUNT_ORDER,
            account_prefix(account, symbol),
            order_id,
            direction,
        )
        .map(move |id| {
            self.order(symbol, id?)?.ok_or(StorageError::Corrupt {
                what: "account order index",
                len: 0,
            })
        })
    }

    /// Trades of `account` on `symbol` from `trade_id` on, in `direction`.
    pub fn account_trades<'a>(
        &'a self,
        account: u64,
        symbol: &'a str,
        trade_id: u64,
        direction: ScanDirection,
    ) -> impl Iterator<Item = Result<TradeRow, StorageError>> + 'a {
        self.scan(
            cf::EX_ACCOUNT_TRADE,
            account_prefix(account, symbol),
            trade_id,
            direction,
        )
        .map(move |id| {
            self.trade(symbol, id?)?.ok_or(StorageError::Corrupt {
                what: "account trade index",
                len: 0,
            })
        })
    }

    /// Trades of `symbol` from `trade_id` on, in `direction`.
    pub fn trades<'a>(
        &'a self,
        symbol: &str,
        trade_id: u64,
        direction: ScanDirection,
    ) -> impl Iterator<Item = Result<TradeRow, StorageError>> + 'a {
        self.scan_rows(
            cf::EX_TRADE,
            symbol_prefix(symbol),
            trade_id,
            direction,
            TradeRow::decode,
        )
    }

    /// Aggregate trades of `symbol` from `id` on, in `direction`.
    pub fn agg_trades<'a>(
        &'a self,
        symbol: &str,
        id: u64,
        direction: ScanDirection,
    ) -> impl Iterator<Item = Result<AggTradeRow, StorageError>> + 'a {
        self.scan_rows(
            cf::EX_AGG_TRADE,
            symbol_prefix(symbol),
            id,
            direction,
            AggTradeRow::decode,
        )
    }

    /// Candles of `span` of `symbol` from the one opening at `open_time`, in `direction`.
    pub fn candles<'a>(
        &'a self,
        symbol: &str,
        span: CandleSpan,
        open_time: u64,
        direction: ScanDirection,
    ) -> impl Iterator<Item = Result<CandleRow, StorageError>> + 'a {
        self.scan_rows(
            span.column(),
            symbol_prefix(symbol),
            open_time,
            direction,
            CandleRow::decode,
        )
    }

    fn scan_rows<'a, T: 'a>(
        &'a self,
        name: &'static str,
        prefix: Vec<u8>,
        from: u64,
        direction: ScanDirection,
        decode: fn(&[u8]) -> Result<T, StorageError>,
    ) -> impl Iterator<Item = Result<T, StorageError>> + 'a {
        self.walk(name, prefix, from, direction, move |_, value| decode(value))
    }

    /// Ids (the keys' last 8 bytes) under `prefix`.
    fn scan(
        &self,
        name: &'static str,
        prefix: Vec<u8>,
        from: u64,
        direction: ScanDirection,
    ) -> impl Iterator<Item = Result<u64, StorageError>> + '_ {
        self.walk(name, prefix, from, direction, |key, _| id_suffix(key))
    }

    /// Entries under `prefix` from `prefix ‖ from` on, in `direction`.
    fn walk<'a, T: 'a>(
        &'a self,
        name: &'static str,
        prefix: Vec<u8>,
        from: u64,
        direction: ScanDirection,
        read: impl Fn(&[u8], &[u8]) -> Result<T, StorageError> + 'a,
    ) -> impl Iterator<Item = Result<T, StorageError>> + 'a {
        let mut options = ReadOptions::default();
        options.set_iterate_lower_bound(prefix.clone());
        // Every key under the prefix is `prefix ‖ 8 bytes`, below `prefix ‖ 9 × FF`.
        let mut upper = prefix.clone();
        upper.extend_from_slice(&[0xFF; 9]);
        options.set_iterate_upper_bound(upper);
        let column: &ColumnFamily = self.cf(name);
        let mut iter = self.db.raw_iterator_cf_opt(column, options);
        let start = with_id(prefix, from);
        match direction {
            ScanDirection::Forward => iter.seek(&start),
            ScanDirection::Backward => iter.seek_for_prev(&start),
        }
        let mut failed = false;
        std::iter::from_fn(move || {
            if failed {
                return None;
            }
            if !iter.valid() {
                return iter.status().err().map(|e| {
                    failed = true;
                    Err(e.into())
                });
            }
            let item = read(iter.key()?, iter.value()?);
            failed = item.is_err();
            match direction {
                ScanDirection::Forward => iter.next(),
                ScanDirection::Backward => iter.prev(),
            }
            Some(item)
        })
    }
}

/// Command-log entries and the history rows they produced, written as one
/// synced batch.
pub struct ExchangeBatch {
    store: Store,
    batch: WriteBatch,
}

impl ExchangeBatch {
    /// Appends a command to the log under `sequence`.
    pub fn append_command(&mut self, sequence: u64, command: &CommandRecord) {
        self.batch.put_cf(
            self.store.cf(cf::COMMAND_LOG),
            codec::encode_block_number(sequence),
            command.encode(),
        );
    }

    /// Records `account`'s deposit address with the command that assigned it.
    pub fn put_deposit_address(&mut self, account: u64, address: &[u8; 20]) {
        self.batch.put_cf(
            self.store.cf(cf::WALLET),
            crate::wallet::deposit_address_key(account),
            address,
        );
    }

    /// Records withdrawal `id`'s signed transactions with the command that
    /// recorded the latest.
    pub fn put_withdrawal_tx(&mut self, id: u64, row: &crate::WithdrawalTxRow) {
        let (key, value) = crate::wallet::withdrawal_tx_row(id, row);
        self.batch.put_cf(self.store.cf(cf::WALLET), key, value);
    }

    /// Stores an order's current state; a `placed` order also enters the
    /// account's order index and takes over its client order id.
    pub fn put_order(&mut self, symbol: &str, order: &OrderRow, placed: bool) {
        let key = with_id(symbol_prefix(symbol), order.order_id);
        self.batch
            .put_cf(self.store.cf(cf::EX_ORDER), &key, order.encode());
        if placed {
            let account = account_prefix(order.account, symbol);
            self.batch.put_cf(
                self.store.cf(cf::EX_ACCOUNT_ORDER),
                with_id(account.clone(), order.order_id),
                [],
            );
            let mut client = account;
            client.extend_from_slice(order.client_order_id.as_bytes());
            self.batch.put_cf(
                self.store.cf(cf::EX_CLIENT_ORDER),
                client,
                codec::encode_block_number(order.order_id),
            );
        }
    }

    /// Stores a prevented match under its id and both its orders.
    pub fn put_prevented(&mut self, symbol: &str, row: &PreventedRow) {
        self.batch.put_cf(
            self.store.cf(cf::EX_PREVENTED),
            with_id(symbol_prefix(symbol), row.id),
            row.encode(),
        );
        for order in [row.taker.0, row.maker.0] {
            self.batch.put_cf(
                self.store.cf(cf::EX_ORDER_PREVENTED),
                with_id(with_id(symbol_prefix(symbol), order), row.id),
                [],
            );
        }
    }

    /// Stores a new order list under its id, its account and its client id.
    pub fn put_order_list(&mut self, list: &ListRow) {
        self.batch.put_cf(
            self.store.cf(cf::EX_ORDER_LIST),
            list.list_id.to_be_bytes(),
            list.encode(),
        );
        let account = list.account.to_be_bytes().to_vec();
        self.batch.put_cf(
            self.store.cf(cf::EX_ACCOUNT_LIST),
            with_id(account.clone(), list.list_id),
            [],
        );
        let mut client = account;
        client.extend_from_slice(list.list_client_id.as_bytes());
        self.batch.put_cf(
            self.store.cf(cf::EX_CLIENT_LIST),
            client,
            codec::encode_block_number(list.list_id),
        );
    }

    /// Stores a trade and lists it under both accounts (once for a self-trade).
    pub fn put_trade(&mut self, symbol: &str, trade: &TradeRow) {
        self.batch.put_cf(
            self.store.cf(cf::EX_TRADE),
            with_id(symbol_prefix(symbol), trade.trade_id),
            trade.encode(),
        );
        for account in [trade.maker.1, trade.taker.1] {
            self.batch.put_cf(
                self.store.cf(cf::EX_ACCOUNT_TRADE),
                with_id(account_prefix(account, symbol), trade.trade_id),
                [],
            );
        }
    }

    /// Stores an aggregate trade's current state.
    pub fn put_agg_trade(&mut self, symbol: &str, agg: &AggTradeRow) {
        self.batch.put_cf(
            self.store.cf(cf::EX_AGG_TRADE),
            with_id(symbol_prefix(symbol), agg.id),
            agg.encode(),
        );
    }

    /// Stores a candle's current state.
    pub fn put_candle(&mut self, symbol: &str, span: CandleSpan, candle: &CandleRow) {
        self.batch.put_cf(
            self.store.cf(span.column()),
            with_id(symbol_prefix(symbol), candle.open_time),
            candle.encode(),
        );
    }

    /// Records that hour and day candles exist for the whole history.
    pub fn set_coarse_candles_built(&mut self) {
        self.batch
            .put_cf(self.store.cf(cf::META), meta_key::COARSE_CANDLES, [1u8]);
    }

    /// Records that the history holds every row up to command `sequence`.
    pub fn set_history_sequence(&mut self, sequence: u64) {
        self.batch.put_cf(
            self.store.cf(cf::META),
            meta_key::EXCHANGE_HISTORY,
            codec::encode_block_number(sequence),
        );
    }

    /// Writes everything atomically with the WAL synced.
    pub fn commit(self) -> Result<(), StorageError> {
        self.store.db.write_opt(self.batch, &Store::synced())?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(id: u64, account: u64, client: &str) -> OrderRow {
        OrderRow {
            order_id: id,
            account,
            client_order_id: client.into(),
            side: 1,
            order_type: 0,
            time_in_force: 2,
            stp: 3,
            status: 4,
            price: 5,
            orig_qty: 6,
            orig_quote_qty: 7,
            executed: 8,
            cumulative_quote: 9,
            time_ms: 10 + id,
            update_ms: 11 + id,
            conditional: id.is_multiple_of(3).then_some(ConditionalRow {
                stop_price: Some(12),
                trailing_delta: None,
                working_ms: Some(13 + id),
                trailing_ms: None,
            }),
            order_list_id: id.is_multiple_of(2).then_some(id / 2),
        }
    }

    fn trade(id: u64, maker: u64, taker: u64) -> TradeRow {
        TradeRow {
            trade_id: id,
            price: 1,
            quantity: 2,
            quote_quantity: 3,
            maker: (id * 2, maker),
            taker: (id * 2 + 1, taker),
            taker_buys: id.is_multiple_of(2),
            maker_fee: 4,
            taker_fee: 5,
            time_ms: 100 + id,
        }
    }

    #[test]
    fn rows_round_trip_and_refuse_truncation() {
        let candle = CandleRow {
            open_time: 60_000,
            open: 1,
            high: 2,
            low: 3,
            close: 4,
            volume: 5,
            quote_volume: 6,
            taker_buy_volume: 7,
            taker_buy_quote_volume: 8,
            first_trade: 9,
            last_trade: 10,
        };
        let agg = AggTradeRow {
            id: 1,
            price: 2,
            quantity: 3,
            first_trade: 4,
            last_trade: 5,
            time_ms: 6,
            buyer_is_maker: true,
            taker_order: 7,
        };
        // Order 3 is conditional; its row ends in the appended part, so a
        // prefix without it is a valid older row.
        let conditional = order(3, 4, "cid");
        assert!(conditional.conditional.is_some());
        assert_eq!(
            OrderRow::decode(&conditional.encode()).unwrap(),
            conditional
        );
        let listed = order(6, 4, "cid");
        assert!(listed.order_list_id.is_some() && listed.conditional.is_some());
        assert_eq!(OrderRow::decode(&listed.encode()).unwrap(), listed);
        let list = ListRow {
            list_id: 3,
            account: 4,
            symbol: "ETHUSDT".into(),
            contingency: 2,
            list_client_id: "list-1".into(),
            order_ids: vec![7, 8, 9],
            time_ms: 10,
        };
        assert_eq!(ListRow::decode(&list.encode()).unwrap(), list);
        let encoded = [
            order(5, 4, "cid").encode(),
            trade(5, 6, 7).encode(),
            agg.encode(),
            candle.encode(),
        ];
        assert_eq!(OrderRow::decode(&encoded[0]).unwrap(), order(5, 4, "cid"));
        assert_eq!(TradeRow::decode(&encoded[1]).unwrap(), trade(5, 6, 7));
        assert_eq!(AggTradeRow::decode(&encoded[2]).unwrap(), agg);
        assert_eq!(CandleRow::decode(&encoded[3]).unwrap(), candle);
        let decoders: [fn(&[u8]) -> bool; 4] = [
            |b| OrderRow::decode(b).is_ok(),
            |b| TradeRow::decode(b).is_ok(),
            |b| AggTradeRow::decode(b).is_ok(),
            |b| CandleRow::decode(b).is_ok(),
        ];
        for (bytes, decodes) in encoded.iter().zip(decoders) {
            for cut in 0..bytes.len() {
                assert!(!decodes(&bytes[..cut]), "a {cut}-byte prefix decoded");
            }
        }
    }

    #[test]
    fn history_scans_stay_within_account_and_symbol() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &Default::default()).unwrap();
        let mut batch = store.exchange_batch();
        // "ETHUSDT" and "ETHUSDTX" share a prefix; accounts 1 and 2 interleave.
        for id in 1..=6 {
            batch.put_order("ETHUSDT", &order(id, 1 + id % 2, &format!("c{id}")), true);
            batch.put_order("ETHUSDTX", &order(id, 1, "x"), true);
            batch.put_trade("ETHUSDT", &trade(id, 1 + id % 2, 2));
            batch.put_trade("ETHUSDTX", &trade(id, 1, 1));
        }
        batch.set_history_sequence(9);
        batch.commit().unwrap();

        let ids = |rows: Vec<Result<OrderRow, StorageError>>| -> Vec<u64> {
            rows.into_iter().map(|r| r.unwrap().order_id).collect()
        };
        let forward = store.account_orders(2, "ETHUSDT", 0, ScanDirection::Forward);
        assert_eq!(ids(forward.collect()), vec![1, 3, 5]);
        let backward = store.account_orders(2, "ETHUSDT", u64::MAX, ScanDirection::Backward);
        assert_eq!(ids(backward.collect()), vec![5, 3, 1]);
        let from = store.account_orders(1, "ETHUSDT", 3, ScanDirection::Forward);
        assert_eq!(ids(from.collect()), vec![4, 6]);
        assert_eq!(
            store
                .account_orders(1, "ETHUSDTX", 0, ScanDirection::Forward)
                .count(),
            6
        );
        assert_eq!(
            store
                .account_orders(3, "ETHUSDT", 0, ScanDirection::Forward)
                .count(),
            0
        );
        // Account 2 takes every trade and makes the odd ones: each listed once.
        let trades: Vec<u64> = store
            .account_trades(2, "ETHUSDT", 0, ScanDirection::Forward)
            .map(|t| t.unwrap().trade_id)
            .collect();
        assert_eq!(trades, vec![1, 2, 3, 4, 5, 6]);
        let recent: Vec<u64> = store
            .trades("ETHUSDT", 4, ScanDirection::Backward)
            .map(|t| t.unwrap().trade_id)
            .collect();
        assert_eq!(recent, vec![4, 3, 2, 1]);
        assert_eq!(
            store.order_by_client_id(2, "ETHUSDT", "c3").unwrap(),
            Some(3)
        );
        assert_eq!(store.order_by_client_id(1, "ETHUSDT", "c3").unwrap(), None);
        assert_eq!(store.exchange_history_sequence().unwrap(), 9);
    }
}
