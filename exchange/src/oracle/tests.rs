//! The engine against the model, command by command.

use proptest::prelude::*;

use super::*;
use crate::engine::Engine;
use crate::engine::tests::{command_strategy, executions_agree};
use crate::market::tests_support::{eth_btc, eth_usdt};
use crate::order::ResponseType;

mod random;

use random::agree;

const FEES: AccountId = 999;
const ETHUSDT: MarketId = MarketId(0);
const ETHBTC: MarketId = MarketId(1);
const ETH: AssetId = AssetId(0);
const USDT: AssetId = AssetId(1);
const BTC: AssetId = AssetId(2);

/// ETHUSDT and ETHBTC numbered as the engine's tests number them, with
/// room for only three open orders per account on ETHBTC, so random
/// commands reach that limit too.
fn catalog() -> Arc<Catalog> {
    let eth_btc = Market {
        max_num_orders: 3,
        ..eth_btc()
    };
    let eth_usdt = Market {
        max_num_algo_orders: 3,
        ..eth_usdt()
    };
    Arc::new(Catalog::new(vec![eth_usdt, eth_btc]))
}

fn a(text: &str) -> Amount {
    text.parse().unwrap()
}

/// Accounts 1 and 2 with 100000 USDT and 100 ETH each.
fn funded() -> Model {
    let mut model = Model::new(catalog(), FEES);
    for account in [1, 2] {
        for (asset, amount) in [(USDT, "100000"), (ETH, "100")] {
            let credit = Command::Credit {
                account,
                asset,
                amount: a(amount),
            };
            assert_eq!(model.apply(&credit), Outcome::default());
        }
    }
    model
}

fn order(side: Side, order_type: OrderType, quantity: &str, price: Option<&str>) -> NewOrder {
    NewOrder {
        market: ETHUSDT,
        side,
        order_type,
        time_in_force: TimeInForce::Gtc,
        quantity: Some(a(quantity)),
        quote_quantity: None,
        price: price.map(a),
        client_order_id: None,
        response_type: ResponseType::Ack,
        stp: StpMode::None,
        trigger: None,
    }
}

fn limit(side: Side, quantity: &str, price: &str) -> NewOrder {
    order(side, OrderType::Limit, quantity, Some(price))
}

fn for_quote(side: Side, amount: &str) -> NewOrder {
    NewOrder {
        quantity: None,
        quote_quantity: Some(a(amount)),
        ..order(side, OrderType::Market, "1", None)
    }
}

fn place(model: &mut Model, account: AccountId, order: NewOrder) -> Outcome {
    let outcome = model.apply(&Command::Place {
        account,
        order,
        time_ms: 7,
    });
    model.check();
    outcome
}

/// (status, executed, cumulative quote) of order `id` on ETHUSDT.
fn state(outcome: &Outcome, id: u64) -> (OrderStatus, Amount, Amount) {
    let s = outcome.orders[&(ETHUSDT, id)];
    (s.status, s.executed, s.cumulative_quote)
}

#[test]
fn a_crossing_buy_fills_at_the_makers_price_with_fees_from_what_each_receives() {
    let mut model = funded();
    place(&mut model, 1, limit(Side::Sell, "1", "3000"));
    let outcome = place(&mut model, 2, limit(Side::Buy, "0.4", "3100"));
    assert_eq!(outcome.trades.len(), 1);
    let trade = outcome.trades[0];
    // ETHUSDT charges 0.1 % both ways.
    assert_eq!(
        (trade.price, trade.quantity, trade.quote_quantity),
        (a("3000"), a("0.4"), a("1200"))
    );
    assert_eq!((trade.taker_fee, trade.maker_fee), (a("0.0004"), a("1.2")));
    assert_eq!(
        (state(&outcome, 1).0, state(&outcome, 2).0),
        (OrderStatus::PartiallyFilled, OrderStatus::Filled)
    );
    // The buyer reserved 1240 at its limit and got the 40 back.
    assert_eq!(model.balance(2, USDT), (a("98800"), Amount::ZERO));
    assert_eq!(model.balance(2, ETH), (a("100.3996"), Amount::ZERO));
    assert_eq!(model.balance(1, USDT), (a("101198.8"), Amount::ZERO));
    assert_eq!(model.balance(1, ETH), (a("99"), a("0.6")));
    assert_eq!(model.balance(FEES, USDT), (a("1.2"), Amount::ZERO));
    assert_eq!(model.balance(FEES, ETH), (a("0.0004"), Amount::ZERO));
}

#[test]
fn a_resting_buy_keeps_its_remainder_locked_at_its_own_price() {
    let mut model = funded();
    place(&mut model, 1, limit(Side::Sell, "1", "3000"));
    let outcome = place(&mut model, 2, limit(Side::Buy, "2", "3100"));
    assert_eq!(
        state(&outcome, 2),
        (OrderStatus::PartiallyFilled, a("1"), a("3000"))
    );
    // 6200 reserved; 3000 paid, 100 of price improvement back, 3100 still held.
    assert_eq!(model.balance(2, USDT), (a("93900"), a("3100")));
    let cancel = Command::CancelAll {
        account: 2,
        market: ETHUSDT,
        time_ms: 8,
    };
    let outcome = model.apply(&cancel);
    assert_eq!(outcome.orders[&(ETHUSDT, 2)].status, OrderStatus::Canceled);
    assert_eq!(outcome.orders[&(ETHUSDT, 2)].time_ms, 8);
    assert_eq!(model.balance(2, USDT), (a("97000"), Amount::ZERO));
    assert_eq!(
        model.apply(&cancel).rejected,
        Some(Reject::UnknownOrder),
        "nothing left to cancel"
    );
}

#[test]
fn refusals_name_the_rule_broken_and_change_nothing() {
    let mut model = funded();
    place(&mut model, 1, limit(Side::Sell, "1", "3000"));
    let named = NewOrder {
        client_order_id: Some("x".into()),
        ..limit(Side::Buy, "1", "2000")
    };
    place(&mut model, 2, named.clone());
    let before = model.balances.clone();
    let mut btc = limit(Side::Buy, "1", "0.05");
    btc.market = ETHBTC;
    let cases = [
        (
            limit(Side::Buy, "1000", "3000"),
            Reject::InsufficientBalance,
        ),
        (limit(Side::Buy, "1", "3000.001"), Reject::OffGrid),
        (limit(Side::Buy, "0.00001", "3000"), Reject::OffGrid),
        (limit(Side::Buy, "0", "3000"), Reject::OffGrid),
        (named, Reject::DuplicateClientOrderId),
        (
            order(Side::Buy, OrderType::LimitMaker, "1", Some("3000")),
            Reject::WouldTake,
        ),
        (
            NewOrder {
                market: MarketId(9),
                ..limit(Side::Buy, "1", "3000")
            },
            Reject::UnknownSymbol,
        ),
        (btc, Reject::InsufficientBalance),
    ];
    for (order, reject) in cases {
        let outcome = place(&mut model, 2, order.clone());
        assert_eq!(outcome.rejected, Some(reject), "{order:?}");
        assert_eq!(model.balances, before, "{order:?}");
    }
    let debit = Command::Debit {
        account: 3,
        asset: BTC,
        amount: a("1"),
    };
    assert_eq!(
        model.apply(&debit).rejected,
        Some(Reject::InsufficientBalance)
    );
    let credit = Command::Credit {
        account: 3,
        asset: AssetId(3),
        amount: a("1"),
    };
    assert_eq!(model.apply(&credit).rejected, Some(Reject::UnknownAsset));
    // A refused order takes no id: the next one gets 3.
    let outcome = place(&mut model, 2, limit(Side::Buy, "1", "2000"));
    assert_eq!(state(&outcome, 3).0, OrderStatus::New);
}

#[test]
fn open_orders_are_limited_per_account_and_market_except_for_market_orders() {
    let mut model = funded();
    let mut buy = limit(Side::Buy, "0.1", "0.05");
    buy.market = ETHBTC;
    let credit = Command::Credit {
        account: 1,
        asset: BTC,
        amount: a("10"),
    };
    model.apply(&credit);
    for _ in 0..3 {
        assert_eq!(place(&mut model, 1, buy.clone()).rejected, None);
    }
    assert_eq!(
        place(&mut model, 1, buy.clone()).rejected,
        Some(Reject::TooManyOrders)
    );
    let sell = NewOrder {
        market: ETHBTC,
        ..order(Side::Sell, OrderType::Market, "0.1", None)
    };
    let outcome = place(&mut model, 1, sell);
    assert_eq!(outcome.rejected, None);
    assert_eq!(outcome.trades.len(), 1, "a self-trade, as STP is NONE");
}

#[test]
fn fill_or_kill_expires_untouched_but_takes_an_id() {
    let mut model = funded();
    place(&mut model, 1, limit(Side::Sell, "1", "3000"));
    let fok = NewOrder {
        time_in_force: TimeInForce::Fok,
        ..limit(Side::Buy, "2", "3000")
    };
    let outcome = place(&mut model, 2, fok.clone());
    assert_eq!(
        state(&outcome, 2),
        (OrderStatus::Expired, Amount::ZERO, Amount::ZERO)
    );
    assert!(outcome.trades.is_empty());
    assert_eq!(model.balance(2, USDT), (a("100000"), Amount::ZERO));
    let outcome = place(
        &mut model,
        2,
        NewOrder {
            quantity: Some(a("1")),
            ..fok
        },
    );
    assert_eq!(state(&outcome, 3), (OrderStatus::Filled, a("1"), a("3000")));
}

#[test]
fn self_trade_prevention_follows_the_takers_mode() {
    use OrderStatus::{Expired, ExpiredInMatch, Filled, New};
    // Account 1 rests 1 @ 3000 (order 1), account 2 1 @ 3001 (order 2);
    // account 1 then buys 2 up to 3001, IOC, and meets its own order first.
    // (mode, taker, own resting order, fills)
    for (mode, taker, own, fills) in [
        (StpMode::None, Filled, Filled, 2),
        (StpMode::ExpireTaker, ExpiredInMatch, New, 0),
        (StpMode::ExpireMaker, Expired, ExpiredInMatch, 1),
        (StpMode::ExpireBoth, ExpiredInMatch, ExpiredInMatch, 0),
    ] {
        let mut model = funded();
        place(&mut model, 1, limit(Side::Sell, "1", "3000"));
        place(&mut model, 2, limit(Side::Sell, "1", "3001"));
        let buy = NewOrder {
            time_in_force: TimeInForce::Ioc,
            stp: mode,
            trigger: None,
            ..limit(Side::Buy, "2", "3001")
        };
        let outcome = place(&mut model, 1, buy);
        assert_eq!(state(&outcome, 3).0, taker, "{mode:?}");
        let own_after = outcome.orders.get(&(ETHUSDT, 1)).map_or(New, |s| s.status);
        assert_eq!(own_after, own, "{mode:?}");
        assert_eq!(outcome.trades.len(), fills, "{mode:?}");
    }
}

#[test]
fn a_market_buy_by_quantity_must_afford_what_the_book_would_fill() {
    let mut model = funded();
    place(&mut model, 1, limit(Side::Sell, "1", "3000"));
    place(&mut model, 1, limit(Side::Sell, "1", "3100"));
    let credit = Command::Credit {
        account: 3,
        asset: USDT,
        amount: a("4549.99"),
    };
    model.apply(&credit);
    let buy = order(Side::Buy, OrderType::Market, "1.5", None);
    let outcome = place(&mut model, 3, buy.clone());
    assert_eq!(outcome.rejected, Some(Reject::InsufficientBalance));
    model.apply(&Command::Credit {
        account: 3,
        asset: USDT,
        amount: a("0.01"),
    });
    let outcome = place(&mut model, 3, buy);
    assert_eq!(
        state(&outcome, 3),
        (OrderStatus::Filled, a("1.5"), a("4550"))
    );
    assert_eq!(model.balance(3, USDT), (Amount::ZERO, Amount::ZERO));
    assert_eq!(model.balance(3, ETH), (a("1.4985"), Amount::ZERO));
}

#[test]
fn a_market_sell_for_a_quote_amount_sells_the_base_the_book_needs() {
    let mut model = funded();
    place(&mut model, 2, limit(Side::Buy, "0.1", "3000"));
    place(&mut model, 2, limit(Side::Buy, "1", "2900"));
    // 0.1 at 3000 pays 300; the remaining 290 is exactly 0.1 at 2900.
    let outcome = place(&mut model, 1, for_quote(Side::Sell, "590"));
    let fills: Vec<_> = outcome
        .trades
        .iter()
        .map(|t| (t.price, t.quantity))
        .collect();
    assert_eq!(fills, [(a("3000"), a("0.1")), (a("2900"), a("0.1"))]);
    assert_eq!(
        state(&outcome, 3),
        (OrderStatus::Filled, a("0.2"), a("590"))
    );
    assert_eq!(model.balance(1, ETH), (a("99.8"), Amount::ZERO));
    assert_eq!(model.balance(1, USDT), (a("100589.41"), Amount::ZERO));
    // 100 buys no whole step exactly: 0.0344 at 2900 receives 99.76, and
    // the 0.24 left is less than one step: filled, as Binance reports it.
    let outcome = place(&mut model, 1, for_quote(Side::Sell, "100"));
    assert_eq!(
        state(&outcome, 4),
        (OrderStatus::Filled, a("0.0344"), a("99.76"))
    );
    // More than the book pays: all it has, then expired; nothing stays locked.
    let outcome = place(&mut model, 1, for_quote(Side::Sell, "100000"));
    assert_eq!(
        state(&outcome, 5),
        (OrderStatus::Expired, a("0.8656"), a("2510.24"))
    );
    assert_eq!(model.balance(1, ETH), (a("98.9"), Amount::ZERO));
    let outcome = place(&mut model, 1, for_quote(Side::Sell, "1"));
    assert_eq!(
        state(&outcome, 6),
        (OrderStatus::Expired, Amount::ZERO, Amount::ZERO)
    );
}

#[test]
fn a_market_buy_for_a_quote_amount_gets_back_what_it_did_not_spend() {
    let mut model = funded();
    place(&mut model, 1, limit(Side::Sell, "0.5", "3000"));
    let outcome = place(&mut model, 2, for_quote(Side::Buy, "1000"));
    // 1000 / 3000 = 0.3333 in whole steps, for 999.9; the 0.1 left buys
    // no step: filled.
    assert_eq!(
        state(&outcome, 2),
        (OrderStatus::Filled, a("0.3333"), a("999.9"))
    );
    assert_eq!(model.balance(2, USDT), (a("99000.1"), Amount::ZERO));
    let outcome = place(&mut model, 2, for_quote(Side::Buy, "300"));
    assert_eq!(
        state(&outcome, 3),
        (OrderStatus::Filled, a("0.1"), a("300"))
    );
    // The 0.0667 left costs 200.1: all of it, then expired.
    let outcome = place(&mut model, 2, for_quote(Side::Buy, "1000"));
    assert_eq!(
        state(&outcome, 4),
        (OrderStatus::Expired, a("0.0667"), a("200.1"))
    );
}

fn placed(account: AccountId, order: NewOrder) -> Command {
    Command::Place {
        account,
        order,
        time_ms: 7,
    }
}

fn credit(account: AccountId, asset: AssetId, amount: Amount) -> Command {
    Command::Credit {
        account,
        asset,
        amount,
    }
}

#[test]
fn a_sell_for_a_quote_amount_meets_its_own_orders_like_any_order() {
    // Account 1's own bid is the best: the sell meets it first, with nothing to sell.
    for (stp, taker, own) in [
        (
            StpMode::ExpireMaker,
            OrderStatus::Expired,
            Some(OrderStatus::ExpiredInMatch),
        ),
        (StpMode::ExpireTaker, OrderStatus::ExpiredInMatch, None),
    ] {
        let mut model = Model::new(catalog(), FEES);
        model.apply(&credit(1, USDT, a("10000")));
        place(&mut model, 1, limit(Side::Buy, "1", "3000"));
        let outcome = place(
            &mut model,
            1,
            NewOrder {
                stp,
                ..for_quote(Side::Sell, "300")
            },
        );
        assert_eq!(state(&outcome, 2).0, taker, "{stp:?}");
        assert_eq!(
            outcome.orders.get(&(ETHUSDT, 1)).map(|s| s.status),
            own,
            "{stp:?}"
        );
        let commands = [
            credit(1, USDT, a("10000")),
            placed(1, limit(Side::Buy, "1", "3000")),
            placed(
                1,
                NewOrder {
                    stp,
                    ..for_quote(Side::Sell, "300")
                },
            ),
        ];
        agree(&commands).unwrap();
    }
}

#[test]
fn a_market_buy_costing_more_than_any_amount_is_refused_not_cut_short() {
    // Two asks of 4e7 ETH at 3000 cost 2.4e11 USDT together, more than
    // an amount holds (1.8e11); the buyer has 1.4e11.
    let quarter = Amount::from_units(u64::MAX / 4);
    let mut commands = vec![
        credit(1, ETH, quarter),
        credit(2, ETH, quarter),
        placed(1, limit(Side::Sell, "40000000", "3000")),
        placed(2, limit(Side::Sell, "40000000", "3000")),
    ];
    commands.extend([
        credit(3, USDT, quarter),
        credit(3, USDT, quarter),
        credit(3, USDT, quarter),
    ]);
    let buy = placed(3, order(Side::Buy, OrderType::Market, "80000000", None));
    let mut model = Model::new(catalog(), FEES);
    for command in &commands {
        assert_eq!(model.apply(command).rejected, None);
    }
    assert_eq!(model.apply(&buy).rejected, Some(Reject::Overflow));
    commands.push(buy);
    agree(&commands).unwrap();
}
