//! Command logs written straight into a data dir, as a long-running
//! exchange would have left them.

use weiport_storage::{CommandRecord, OrderRecord, Store, StoreOptions};

use super::now_ms;

/// Writes a command log of `pairs` crossing orders between accounts 1 and 2,
/// one trade a second ending a minute ago, as the engine would have logged
/// it; the server replays it and writes the history rows on start.
pub fn write_trading_log(dir: &std::path::Path, pairs: u64) -> (u64, u64) {
    let store = Store::open(dir, &StoreOptions::default()).unwrap();
    let first_ms = now_ms() - 60_000 - pairs * 1000;
    let mut batch = store.exchange_batch();
    let mut sequence = 0;
    let mut append = |batch: &mut weiport_storage::ExchangeBatch, record: CommandRecord| {
        sequence += 1;
        batch.append_command(sequence, &record);
    };
    // Enough for every pair to trade: 30 USDT and 0.01 ETH each.
    let (usdt, eth) = (10_000_000.max(pairs * 30), 10_000.max(pairs / 100));
    for (account, asset, amount) in [(1, "USDT", usdt), (2, "ETH", eth)] {
        append(
            &mut batch,
            CommandRecord::Credit {
                account,
                asset: asset.into(),
                amount: amount * 100_000_000,
            },
        );
    }
    let order = |side: u8| OrderRecord {
        symbol: "ETHUSDT".into(),
        side,
        order_type: 0,
        time_in_force: 0,
        quantity: Some(1_000_000),
        quote_quantity: None,
        price: Some(3000 * 100_000_000),
        client_order_id: None,
        response_type: 0,
        stp: 0,
        stop_price: None,
        trailing_delta: None,
    };
    for i in 0..pairs {
        let time_ms = first_ms + i * 1000;
        append(
            &mut batch,
            CommandRecord::Place {
                account: 2,
                time_ms,
                order: order(1),
            },
        );
        append(
            &mut batch,
            CommandRecord::Place {
                account: 1,
                time_ms,
                order: order(0),
            },
        );
        if i % 10_000 == 9_999 {
            std::mem::replace(&mut batch, store.exchange_batch())
                .commit()
                .unwrap();
        }
    }
    batch.commit().unwrap();
    (first_ms, first_ms + (pairs - 1) * 1000)
}
