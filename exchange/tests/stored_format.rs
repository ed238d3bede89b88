//! A data directory written by an earlier build must open and serve the same
//! state. The fixture in `tests/fixtures/exchange-v1` was written by the
//! build of 2026-11-21 (commit 34534fd, before hour and day candles and
//! before the exchange was split in two crates) running the commands below;
//! `write_the_fixture` writes the same with this build, for a future format
//! version's fixture (run with `--ignored`, into a new directory).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use weiport_exchange::engine::{Command, OrderStatus};
use weiport_exchange::history::History;
use weiport_exchange::market::tests_support::eth_usdt;
use weiport_exchange::order::{NewOrder, OrderType, ResponseType, Side, TimeInForce};
use weiport_exchange::sequencer::Sequencer;
use weiport_exchange::{Amount, AssetId, Catalog, MarketId, StpMode};
use weiport_storage::{ScanDirection, Store, StoreOptions};

const ETHUSDT: MarketId = MarketId(0);
const ETH: AssetId = AssetId(0);
const USDT: AssetId = AssetId(1);

/// The runner's `CARGO_MANIFEST_DIR` first: a test binary reused from a shared
/// target dir may have been compiled in another checkout.
fn fixture() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
        .join("tests/fixtures/exchange-v1")
}

fn new_fixture() -> PathBuf {
    std::env::temp_dir().join("weiport-exchange-fixture")
}

fn catalog() -> Arc<Catalog> {
    Arc::new(Catalog::new(vec![eth_usdt()]))
}

fn a(text: &str) -> Amount {
    text.parse().unwrap()
}

fn order(
    side: Side,
    order_type: OrderType,
    tif: TimeInForce,
    quantity: &str,
    price: Option<&str>,
) -> NewOrder {
    NewOrder {
        market: ETHUSDT,
        side,
        order_type,
        time_in_force: tif,
        quantity: Some(a(quantity)),
        quote_quantity: None,
        price: price.map(a),
        client_order_id: Some(format!("fixture-{side:?}-{quantity}")),
        response_type: ResponseType::Full,
        stp: StpMode::ExpireMaker,
        trigger: None,
    }
}

/// Credits, a resting bid, a sell that fills part of it, a canceled order,
/// an IOC that expires and a market buy for a quote amount.
fn commands() -> Vec<Command> {
    let place = |account, order| Command::Place {
        account,
        order,
        time_ms: 0,
    };
    let mut by_quote = order(Side::Buy, OrderType::Market, TimeInForce::Gtc, "1", None);
    by_quote.quantity = None;
    by_quote.quote_quantity = Some(a("100"));
    by_quote.client_order_id = Some("fixture-by-quote".into());
    vec![
        Command::Credit {
            account: 1,
            asset: USDT,
            amount: a("10000"),
        },
        Command::Credit {
            account: 2,
            asset: ETH,
            amount: a("5"),
        },
        place(
            1,
            order(
                Side::Buy,
                OrderType::Limit,
                TimeInForce::Gtc,
                "2",
                Some("3000"),
            ),
        ),
        place(
            2,
            order(
                Side::Sell,
                OrderType::Limit,
                TimeInForce::Gtc,
                "0.5",
                Some("2990"),
            ),
        ),
        place(
            2,
            order(
                Side::Sell,
                OrderType::Limit,
                TimeInForce::Gtc,
                "1",
                Some("3100"),
            ),
        ),
        Command::Cancel {
            account: 2,
            market: ETHUSDT,
            order_id: 3,
            cancel_client_id: None,
            time_ms: 0,
        },
        place(
            1,
            order(
                Side::Buy,
                OrderType::Limit,
                TimeInForce::Ioc,
                "0.1",
                Some("2000"),
            ),
        ),
        place(
            2,
            order(
                Side::Sell,
                OrderType::Limit,
                TimeInForce::Gtc,
                "0.2",
                Some("3200"),
            ),
        ),
        place(1, by_quote),
    ]
}

#[tokio::test]
#[ignore = "writes a new fixture; run only for a new format version"]
async fn write_the_fixture() {
    let dir = new_fixture();
    let _ = std::fs::remove_dir_all(&dir);
    let store = Store::open(&dir, &StoreOptions::default()).unwrap();
    let sequencer = Sequencer::start(store.clone(), catalog(), 0, 16).unwrap();
    for command in commands() {
        sequencer.submit(command).await.unwrap();
    }
    sequencer.shutdown();
    store.flush().unwrap();
    drop(store);
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("LOG") || name == "LOCK" {
            std::fs::remove_file(path).unwrap();
        }
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

#[tokio::test]
async fn a_data_dir_of_the_first_format_serves_the_same_state() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture(), dir.path());
    let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
    let catalog = catalog();
    let sequencer = Sequencer::start(store.clone(), catalog.clone(), 0, 16).unwrap();
    let history = History::new(store.clone(), catalog.clone());

    let statuses: Vec<(u64, OrderStatus, Amount)> = (1..=6)
        .map(|id| {
            let order = history.order(ETHUSDT, id).unwrap().unwrap();
            (id, order.status, order.executed)
        })
        .collect();
    assert_eq!(
        statuses,
        vec![
            (1, OrderStatus::PartiallyFilled, a("0.5")),
            (2, OrderStatus::Filled, a("0.5")),
            (3, OrderStatus::Canceled, a("0")),
            (4, OrderStatus::Expired, a("0")),
            (5, OrderStatus::PartiallyFilled, a("0.0312")),
            // 100 USDT buy 0.0312 at 3200 (99.84); the rest buys no whole step.
            (6, OrderStatus::Expired, a("0.0312")),
        ]
    );
    let by_client = history
        .find_order(1, ETHUSDT, None, Some("fixture-by-quote"))
        .unwrap()
        .unwrap();
    assert_eq!(
        (by_client.order_id, by_client.order_type),
        (6, OrderType::Market)
    );
    let trades: Vec<(Amount, Amount)> = history
        .trades(ETHUSDT, 1, ScanDirection::Forward)
        .map(|t| t.map(|t| (t.price, t.quantity)))
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        trades,
        vec![(a("3000"), a("0.5")), (a("3200"), a("0.0312"))]
    );

    let view = sequencer.view();
    let balances = |account: u64| view.accounts[&account].balances.clone();
    // Buyer: 1.5 ETH at 3000 still reserved; 0.5 and 0.0312 bought, each
    // less the 0.1 % fee in ETH; 1500 + 99.84 USDT paid.
    assert_eq!(balances(1)[&USDT], (a("3900.16"), a("4500")));
    assert_eq!(balances(1)[&ETH], (a("0.5306688"), a("0")));
    // Seller: 0.1688 still resting at 3200; 1500 and 99.84 received less fees.
    assert_eq!(balances(2)[&ETH], (a("4.3"), a("0.1688")));
    assert_eq!(balances(2)[&USDT], (a("1598.24016"), a("0")));
    // Hour and day candles, which that build did not store, were summed on open.
    let day = history
        .candles(
            ETHUSDT,
            weiport_storage::CandleSpan::Day,
            0,
            ScanDirection::Forward,
        )
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    assert_eq!(day.iter().map(|c| c.trades()).sum::<u64>(), 2);
    assert_eq!(view.sequence, 9);
}
