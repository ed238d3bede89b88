//! The engine's tests: shared fixtures, the random command generator other
//! modules' property tests use, and the engine's own property tests; scenario
//! tests of placing and matching are in `tests/orders.rs`.

use super::*;
use crate::market::tests_support::{eth_btc, eth_usdt};
use crate::order::ResponseType;

pub(crate) const FEES: AccountId = 999;
pub(crate) const ETHUSDT: MarketId = MarketId(0);
pub(crate) const ETHBTC: MarketId = MarketId(1);
pub(crate) const ETH: AssetId = AssetId(0);
pub(crate) const USDT: AssetId = AssetId(1);
pub(crate) const BTC: AssetId = AssetId(2);

/// ETHUSDT and ETHBTC: assets ETH, USDT, BTC.
pub(crate) fn two_markets() -> Arc<Catalog> {
    Arc::new(Catalog::new(vec![eth_usdt(), eth_btc()]))
}

pub(crate) fn a(text: &str) -> Amount {
    text.parse().unwrap()
}

pub(crate) fn engine() -> Engine {
    let mut engine = Engine::new(two_markets(), FEES);
    for account in [1, 2] {
        engine.apply(Command::Credit {
            account,
            asset: USDT,
            amount: a("100000"),
        });
        engine.apply(Command::Credit {
            account,
            asset: ETH,
            amount: a("100"),
        });
    }
    engine
}

pub(crate) fn order(
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
        client_order_id: None,
        response_type: ResponseType::Full,
        stp: StpMode::None,
        trigger: None,
    }
}

pub(crate) fn place(engine: &mut Engine, account: AccountId, order: NewOrder) -> Vec<Event> {
    engine.apply(Command::Place {
        account,
        order,
        time_ms: 0,
    })
}

pub(crate) fn limit(side: Side, quantity: &str, price: &str) -> NewOrder {
    order(
        side,
        OrderType::Limit,
        TimeInForce::Gtc,
        quantity,
        Some(price),
    )
}

/// Accounts 5 and 6 trade 0.01 ETH at `price` with each other.
pub(crate) fn trade_at(engine: &mut Engine, price: &str) -> Vec<Event> {
    for (account, asset, amount) in [(5, USDT, "100000"), (6, ETH, "100")] {
        engine.apply(Command::Credit {
            account,
            asset,
            amount: a(amount),
        });
    }
    place(engine, 5, limit(Side::Buy, "0.01", price));
    place(engine, 6, limit(Side::Sell, "0.01", price))
}

pub(crate) fn status(events: &[Event], order_id: u64) -> OrderStatus {
    events
        .iter()
        .rev()
        .find_map(|e| match e {
            Event::Order(o) if o.order_id == order_id => Some(o.status),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no state for order {order_id} in {events:?}"))
}

pub(crate) fn trades(events: &[Event]) -> Vec<&Trade> {
    events
        .iter()
        .filter_map(|e| {
            if let Event::Trade(t) = e {
                Some(t)
            } else {
                None
            }
        })
        .collect()
}

mod orders;

/// A random but always well-formed command over two markets and three accounts.
pub(crate) fn command_strategy() -> impl proptest::strategy::Strategy<Value = Command> {
    use proptest::prelude::*;
    (
        0u8..9,
        1u64..4,
        any::<bool>(),
        1u64..40,
        0u64..20,
        0u8..4,
        any::<bool>(),
    )
        .prop_map(
            |(kind, account, buy, quantity, tick, extra, second_market)| {
                let (market, price, quote) = if second_market {
                    (ETHBTC, Amount::from_units(5_000_000 + tick * 1_000), BTC)
                } else {
                    (
                        ETHUSDT,
                        Amount::from_units((2990 + tick) * 100_000_000),
                        USDT,
                    )
                };
                let quantity = Amount::from_units(quantity * 1_000_000);
                let side = if buy { Side::Buy } else { Side::Sell };
                let stp = [
                    StpMode::None,
                    StpMode::ExpireTaker,
                    StpMode::ExpireMaker,
                    StpMode::ExpireBoth,
                ][extra as usize];
                let mut new = order(side, OrderType::Limit, TimeInForce::Gtc, "1", None);
                new.market = market;
                new.quantity = Some(quantity);
                new.price = Some(price);
                new.stp = stp;
                let asset = [quote, ETH][extra as usize % 2];
                match kind {
                    0 => Command::Credit {
                        account,
                        asset,
                        amount: Amount::from_units(quantity.units() * 5_000),
                    },
                    1 => Command::Debit {
                        account,
                        asset,
                        amount: quantity,
                    },
                    2 | 3 => {
                        new.time_in_force = [TimeInForce::Gtc, TimeInForce::Ioc, TimeInForce::Fok]
                            [extra as usize % 3];
                        Command::Place {
                            account,
                            order: new,
                            time_ms: 0,
                        }
                    }
                    4 => {
                        new.order_type = OrderType::Market;
                        new.price = None;
                        Command::Place {
                            account,
                            order: new,
                            time_ms: 0,
                        }
                    }
                    5 => {
                        new.order_type = OrderType::LimitMaker;
                        Command::Place {
                            account,
                            order: new,
                            time_ms: 0,
                        }
                    }
                    6 if extra == 0 => Command::CancelAll {
                        account,
                        market,
                        time_ms: 0,
                    },
                    6 => Command::Cancel {
                        account,
                        market,
                        order_id: quantity.units() / 1_000_000,
                        cancel_client_id: None,
                        time_ms: 0,
                    },
                    8 => {
                        // Conditional: the four types, stop prices on
                        // either side of the traded range, and trailing.
                        new.order_type = [
                            OrderType::StopLoss,
                            OrderType::StopLossLimit,
                            OrderType::TakeProfit,
                            OrderType::TakeProfitLimit,
                        ][extra as usize];
                        if !new.order_type.has_price() {
                            new.price = None;
                        }
                        let stop = Amount::from_units(
                            price.units() - price.units() / 400 * u64::from(buy)
                                + price.units() / 400 * u64::from(!buy),
                        );
                        let tick = if second_market { 1_000 } else { 1_000_000 };
                        let stop = Amount::from_units(stop.units() - stop.units() % tick);
                        new.trigger = Some(Trigger {
                            stop_price: (tick % 3 != 1).then_some(stop),
                            trailing_delta: (tick % 3 != 0).then_some(10 + tick as u32 * 20),
                        });
                        Command::Place {
                            account,
                            order: new,
                            time_ms: 0,
                        }
                    }
                    _ => {
                        new.order_type = OrderType::Market;
                        new.price = None;
                        new.quantity = None;
                        new.quote_quantity = Some(Amount::from_units(quantity.units() / 2));
                        Command::Place {
                            account,
                            order: new,
                            time_ms: 0,
                        }
                    }
                }
            },
        )
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
    #[test]
    fn random_commands_keep_every_invariant(commands in proptest::collection::vec(command_strategy(), 1..100)) {
        let mut engine = Engine::new(two_markets(), FEES);
        // Preallocated memory changes where orders live, never what happens.
        let mut preallocated = Engine::with_capacity(two_markets(), FEES, 4);
        for command in commands {
            let events = engine.apply(command.clone());
            proptest::prop_assert_eq!(engine.check_invariants(), Ok(()));
            proptest::prop_assert_eq!(executions_agree(&events), Ok(()));
            proptest::prop_assert_eq!(preallocated.apply(command), events);
        }
        proptest::prop_assert_eq!(engine.snapshot(), preallocated.snapshot());
    }
}

/// Whether a command's executions state what its other events do: each
/// order it changed has executions, the last showing the status and filled
/// amounts of its last `Order` event (but for a FILLED that filled nothing
/// more), and each trade is told to both sides.
pub(crate) fn executions_agree(events: &[Event]) -> Result<(), String> {
    use std::collections::BTreeMap;
    let (mut states, mut told) = (BTreeMap::new(), BTreeMap::new());
    let (mut trades, mut fills) = (0, 0);
    for event in events {
        match event {
            Event::Order(s) => {
                states.insert(
                    (s.market, s.order_id),
                    (s.status, s.executed, s.cumulative_quote),
                );
            }
            Event::Execution(e) => {
                told.insert(
                    (e.market, e.order_id),
                    (e.status, e.executed, e.cumulative_quote),
                );
                fills += usize::from(matches!(e.kind, ExecutionKind::Trade(_)));
            }
            Event::Trade(_) => trades += 1,
            _ => {}
        }
    }
    if fills != 2 * trades {
        return Err(format!("{fills} fills told of {trades} trades"));
    }
    if states.keys().ne(told.keys()) {
        return Err(format!("states {states:?}, told {told:?}"));
    }
    for (key, state) in &states {
        let last = told[key];
        // An order for a quote amount that buys no whole step is FILLED
        // with nothing filled, and told nothing more than its acceptance.
        let quietly_filled =
            state.0 == OrderStatus::Filled && (last.1, last.2) == (state.1, state.2);
        if last != *state && !quietly_filled {
            return Err(format!("order {key:?}: state {state:?}, told {last:?}"));
        }
    }
    Ok(())
}

fn trades_in(events: &[Event]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, Event::Trade(_)))
        .count()
}

#[test]
fn the_random_command_generator_produces_trades() {
    use proptest::strategy::{Strategy, ValueTree};
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let mut engine = Engine::new(two_markets(), FEES);
    let mut trades = 0;
    for _ in 0..3000 {
        let command = command_strategy().new_tree(&mut runner).unwrap().current();
        trades += trades_in(&engine.apply(command));
    }
    assert!(trades > 50, "only {trades} trades in 3000 random commands");
}
