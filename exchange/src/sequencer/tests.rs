//! The sequencer: replay, history rows, answers after the runtime is gone.

use super::*;
use crate::amount::Amount;
use crate::catalog::MarketId;
use crate::engine::{OrderStatus, Trade};
use crate::history::{History, OrderView};
use crate::market::StpMode;
use crate::market::tests_support::eth_usdt;
use crate::order::NewOrder;
use crate::order::{OrderType, ResponseType, Side, TimeInForce};
use weiport_storage::ScanDirection;

/// Fees to account 99, a queue of 64, no snapshots.
fn settings() -> EngineSettings {
    EngineSettings {
        fee_account: 99,
        capacity: 64,
        snapshot_every: 0,
    }
}

fn amount(text: &str) -> Amount {
    text.parse().unwrap()
}

fn place(account: u64, side: Side, quantity: &str, price: &str) -> Command {
    Command::Place {
        account,
        time_ms: 1,
        order: NewOrder {
            market: crate::catalog::MarketId(0),
            side,
            order_type: OrderType::Limit,
            time_in_force: TimeInForce::Gtc,
            quantity: Some(amount(quantity)),
            quote_quantity: None,
            price: Some(amount(price)),
            client_order_id: None,
            response_type: ResponseType::Full,
            stp: StpMode::None,
            trigger: None,
        },
    }
}

#[test]
fn callers_are_answered_after_the_runtime_that_started_it_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), &Default::default()).unwrap();
    let catalog = Arc::new(Catalog::new(vec![eth_usdt()]));
    let starting = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let sequencer = starting
        .block_on(async { Sequencer::start(store, catalog.clone(), 99, 64) })
        .unwrap();
    drop(starting);
    let credit = Command::Credit {
        account: 1,
        asset: catalog.asset_id("USDT").unwrap(),
        amount: amount("10"),
    };
    let later = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let outcome = later.block_on(sequencer.submit(credit)).unwrap();
    assert!(outcome.accepted());
    assert_eq!(outcome.sequence, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_replays_the_log_into_an_identical_engine() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), &Default::default()).unwrap();
    let catalog = Arc::new(Catalog::new(vec![eth_usdt()]));
    let sequencer = Sequencer::start(store.clone(), catalog.clone(), 99, 64).unwrap();
    let mut published = sequencer.subscribe();
    for account in [1, 2] {
        for asset in ["USDT", "ETH"] {
            sequencer
                .submit(Command::Credit {
                    account,
                    asset: catalog.asset_id(asset).unwrap(),
                    amount: amount("10000"),
                })
                .await
                .unwrap();
        }
    }
    let mut submissions = Vec::new();
    for i in 0..40u64 {
        let side = if i % 2 == 0 { Side::Buy } else { Side::Sell };
        let price = format!("{}", 2990 + (i * 7) % 20);
        submissions.push(place(1 + i % 2, side, "0.5", &price));
    }
    submissions.push(Command::Cancel {
        account: 1,
        market: crate::catalog::MarketId(0),
        order_id: 1,
        cancel_client_id: Some("cancel-1".into()),
        time_ms: 2,
    });
    submissions.push(place(1, Side::Buy, "100000", "3000")); // refused: not logged
    // Concurrent submitters share group commits.
    let sequencer = Arc::new(sequencer);
    let handles: Vec<_> = submissions
        .into_iter()
        .map(|command| {
            let sequencer = sequencer.clone();
            tokio::spawn(async move { sequencer.submit(command).await.unwrap() })
        })
        .collect();
    for handle in handles {
        handle.await.unwrap();
    }
    assert!(published.recv().await.is_ok(), "events are published");
    let before = Arc::into_inner(sequencer).unwrap().shutdown().unwrap();
    before.check_invariants().unwrap();

    let after = Sequencer::start(store, catalog, 99, 64)
        .unwrap()
        .shutdown()
        .unwrap();
    assert_eq!(before.snapshot(), after.snapshot());
    assert!(!before.snapshot().is_empty());
}

/// Orders and trades as the history reads them, per market.
fn recorded(store: &Store, catalog: &Arc<Catalog>) -> Vec<(Vec<OrderView>, Vec<Trade>)> {
    let history = History::new(store.clone(), catalog.clone());
    catalog
        .markets()
        .map(|(id, _)| {
            let trades = history
                .trades(id, 0, ScanDirection::Forward)
                .collect::<Result<Vec<_>, _>>()
                .unwrap();
            let orders = (1..)
                .map_while(|order_id| history.order(id, order_id).unwrap())
                .collect();
            (orders, trades)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_rows_are_written_with_their_commands_and_backfilled_for_older_logs() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), &Default::default()).unwrap();
    let catalog = Arc::new(Catalog::new(vec![eth_usdt()]));
    let sequencer = Sequencer::start(store.clone(), catalog.clone(), 99, 64).unwrap();
    for account in [1, 2] {
        for asset in ["USDT", "ETH"] {
            let credit = Command::Credit {
                account,
                asset: catalog.asset_id(asset).unwrap(),
                amount: amount("10000"),
            };
            sequencer.submit(credit).await.unwrap();
        }
    }
    for i in 0..6u64 {
        let price = format!("{}", 3000 + i);
        sequencer
            .submit(place(1, Side::Sell, "0.5", &price))
            .await
            .unwrap();
    }
    let taker = sequencer
        .submit(place(2, Side::Buy, "2", "3003"))
        .await
        .unwrap();
    let placed = taker.changes.placed().unwrap();
    assert_eq!((placed.order_id, placed.status), (7, OrderStatus::Filled));
    assert_eq!(taker.changes.trades.len(), 4);
    assert_eq!(taker.changes.aggs.len(), 4, "one per price level");
    drop(sequencer);

    let written = recorded(&store, &catalog);
    let (orders, trades) = &written[0];
    assert_eq!(orders.len(), 7);
    assert_eq!(
        trades.iter().map(|t| t.trade_id).collect::<Vec<_>>(),
        [1, 2, 3, 4]
    );
    let statuses: Vec<_> = orders.iter().map(|o| o.status).collect();
    assert_eq!(statuses[..4], [OrderStatus::Filled; 4]);
    assert_eq!(statuses[4..6], [OrderStatus::New; 2]);
    assert_eq!(store.exchange_history_sequence().unwrap(), 11);

    // The same log without its history rows, as an older build wrote it.
    let old_dir = tempfile::tempdir().unwrap();
    let old = Store::open(old_dir.path(), &Default::default()).unwrap();
    let mut batch = old.exchange_batch();
    for item in store.commands() {
        let (sequence, record) = item.unwrap();
        batch.append_command(sequence, &record);
    }
    batch.commit().unwrap();
    assert_eq!(old.exchange_history_sequence().unwrap(), 0);
    let restarted = Sequencer::start(old.clone(), catalog.clone(), 99, 64).unwrap();
    assert_eq!(restarted.view().market(MarketId(0)).unwrap().open.len(), 2);
    drop(restarted);
    assert_eq!(recorded(&old, &catalog), written);
    assert_eq!(old.exchange_history_sequence().unwrap(), 11);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(8))]
    #[test]
    fn replaying_the_log_rebuilds_the_same_engine(
        commands in proptest::collection::vec(crate::engine::tests::command_strategy(), 1..120)
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), &Default::default()).unwrap();
        let markets = crate::engine::tests::two_markets;
        let sequencer = Sequencer::start(store.clone(), markets(), 99, 16).unwrap();
        runtime.block_on(async {
            for command in commands {
                sequencer.submit(command).await.unwrap();
            }
        });
        let before = sequencer.shutdown().unwrap().snapshot();
        let after = Sequencer::start(store, markets(), 99, 16).unwrap().shutdown().unwrap().snapshot();
        proptest::prop_assert_eq!(before, after);
    }
}

/// A journal that takes `accepts` entries, then finds another writer ahead.
struct JournalTaking {
    accepts: usize,
    taken: Arc<std::sync::Mutex<Vec<JournalEntry>>>,
}

impl Replication for JournalTaking {
    fn replicate(&mut self, entry: &JournalEntry) -> Result<(), Deposed> {
        let mut taken = self.taken.lock().unwrap();
        if taken.len() == self.accepts {
            return Err(Deposed);
        }
        taken.push(entry.clone());
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_role_applies_only_its_own_commands_and_a_deposed_primary_follows() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), &Default::default()).unwrap();
    let catalog = Arc::new(Catalog::new(vec![eth_usdt()]));
    let taken = Arc::new(std::sync::Mutex::new(Vec::new()));
    let journal = JournalTaking {
        accepts: 1,
        taken: taken.clone(),
    };
    let role = Role::Leads(Box::new(journal));
    let sequencer =
        Sequencer::start_replicated(store.clone(), catalog.clone(), settings(), vec![], role)
            .unwrap();
    let usdt = catalog.asset_id("USDT").unwrap();
    let credit = |account| Command::Credit {
        account,
        asset: usdt,
        amount: amount("10"),
    };

    // Leading: a client's command goes to the journal, then the log.
    let first = sequencer.submit(credit(1)).await.unwrap();
    assert_eq!(first.sequence, 1);
    assert_eq!(taken.lock().unwrap()[0].first_sequence, 1);
    // A journal entry is not for a primary to apply.
    let entry = JournalEntry {
        first_sequence: 2,
        commands: vec![to_record(&catalog, &credit(2))],
    };
    let refused = sequencer.apply_sequenced(entry.clone()).await;
    assert!(
        matches!(refused, Err(SequencerError::Leading)),
        "{refused:?}"
    );

    // Another writer got ahead: the command is applied nowhere, and the
    // engine follows from then on, saying so.
    let fenced = sequencer.submit(credit(3)).await;
    assert!(matches!(fenced, Err(SequencerError::Deposed)), "{fenced:?}");
    tokio::time::timeout(Duration::from_secs(5), sequencer.deposed())
        .await
        .expect("the deposed engine says so");
    assert!(sequencer.is_following());
    assert_eq!(store.last_command_sequence().unwrap(), 1);
    let refused = sequencer.submit(credit(3)).await;
    assert!(
        matches!(refused, Err(SequencerError::Following)),
        "{refused:?}"
    );

    // Following, it applies the journal's entries where they fall.
    sequencer.apply_sequenced(entry).await.unwrap();
    assert_eq!(store.last_command_sequence().unwrap(), 2);
    let balance = sequencer.view().accounts[&2].balances[&usdt];
    assert_eq!(balance, (amount("10"), Amount::ZERO));
}

/// The read side as data, to compare whole.
fn view_of(sequencer: &Sequencer) -> serde_json::Value {
    serde_json::to_value(&*sequencer.view()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_reads_the_snapshot_and_replays_only_the_commands_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), &Default::default()).unwrap();
    let catalog = Arc::new(Catalog::new(vec![eth_usdt()]));
    let sequencer = Sequencer::start(store.clone(), catalog.clone(), 99, 64).unwrap();
    sequencer.snapshot_every(10);
    for account in [1, 2] {
        for asset in ["USDT", "ETH"] {
            let credit = Command::Credit {
                account,
                asset: catalog.asset_id(asset).unwrap(),
                amount: amount("10000"),
            };
            sequencer.submit(credit).await.unwrap();
        }
    }
    // One at a time: one command a batch, a snapshot due after each tenth.
    for i in 0..33u64 {
        let side = if i % 3 == 0 { Side::Buy } else { Side::Sell };
        let price = format!("{}", 2990 + (i * 7) % 20);
        let outcome = sequencer
            .submit(place(1 + i % 2, side, "0.5", &price))
            .await;
        assert!(outcome.unwrap().accepted());
    }
    let (view, history) = (view_of(&sequencer), recorded(&store, &catalog));
    sequencer.shutdown().unwrap();
    let (format, at, _) = store
        .exchange_snapshot_header()
        .unwrap()
        .expect("a snapshot written");
    // Due every ten commands, and put off while the one before is still
    // being written: the last one lies after the tenth command.
    assert_eq!(format, snapshot::FORMAT);
    assert!((10..=37).contains(&at), "the last snapshot at {at}");

    // Restarted from the snapshot: the same engine, read side and history,
    // and it goes on from there.
    let restarted = Sequencer::start(store.clone(), catalog.clone(), 99, 64).unwrap();
    assert_eq!(restarted.started_from(), at);
    assert_eq!(view_of(&restarted), view);
    assert_eq!(recorded(&store, &catalog), history);
    let next = restarted
        .submit(place(2, Side::Sell, "0.5", "2999"))
        .await
        .unwrap();
    assert_eq!(next.sequence, 38);
    let went_on = view_of(&restarted);
    let engine = restarted.shutdown().unwrap().snapshot();

    // Without it, the whole log gives the same.
    store.drop_exchange_snapshot().unwrap();
    let replayed = Sequencer::start(store.clone(), catalog.clone(), 99, 64).unwrap();
    assert_eq!(replayed.started_from(), 0);
    assert_eq!(view_of(&replayed), went_on);
    assert_eq!(replayed.shutdown().unwrap().snapshot(), engine);
}
