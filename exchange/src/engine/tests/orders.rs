//! Placing, matching and canceling, case by case.

use super::*;

#[test]
fn credits_debits_and_refused_debits() {
    let mut engine = engine();
    assert_eq!(engine.balance(1, USDT), (a("100000"), Amount::ZERO));
    engine.apply(Command::Debit {
        account: 1,
        asset: USDT,
        amount: a("1"),
    });
    let refused = engine.apply(Command::Debit {
        account: 1,
        asset: USDT,
        amount: a("100000"),
    });
    assert_eq!(refused, vec![Event::Rejected(Reject::InsufficientBalance)]);
    assert_eq!(engine.balance(1, USDT), (a("99999"), Amount::ZERO));
}

#[test]
fn a_resting_buy_locks_quote_and_cancel_releases_it() {
    let mut engine = engine();
    let events = place(&mut engine, 1, limit(Side::Buy, "2", "3000"));
    assert_eq!(status(&events, 1), OrderStatus::New);
    assert_eq!(engine.balance(1, USDT), (a("94000"), a("6000")));
    let events = engine.apply(Command::Cancel {
        account: 1,
        market: ETHUSDT,
        order_id: 1,
        cancel_client_id: None,
        time_ms: 0,
    });
    assert_eq!(status(&events, 1), OrderStatus::Canceled);
    assert_eq!(engine.balance(1, USDT), (a("100000"), Amount::ZERO));
    let again = engine.apply(Command::Cancel {
        account: 1,
        market: ETHUSDT,
        order_id: 1,
        cancel_client_id: None,
        time_ms: 0,
    });
    assert_eq!(again, vec![Event::Rejected(Reject::UnknownOrder)]);
}

#[test]
fn a_crossing_buy_fills_at_the_makers_price_with_fees_in_the_received_asset() {
    let mut engine = engine();
    place(&mut engine, 1, limit(Side::Sell, "1", "2990"));
    let events = place(&mut engine, 2, limit(Side::Buy, "1", "3000"));
    assert_eq!(
        (status(&events, 1), status(&events, 2)),
        (OrderStatus::Filled, OrderStatus::Filled)
    );
    let fills = trades(&events);
    assert_eq!(
        (fills[0].price, fills[0].quantity, fills[0].quote_quantity),
        (a("2990"), a("1"), a("2990"))
    );
    // Buyer (taker) pays 2990, gets 1 ETH minus 0.1 % fee; the price improvement comes back.
    assert_eq!(engine.balance(2, USDT), (a("97010"), Amount::ZERO));
    assert_eq!(engine.balance(2, ETH), (a("100.999"), Amount::ZERO));
    // Seller (maker) gets 2990 USDT minus 0.1 %.
    assert_eq!(engine.balance(1, USDT), (a("102987.01"), Amount::ZERO));
    assert_eq!(engine.balance(1, ETH), (a("99"), Amount::ZERO));
    assert_eq!(engine.balance(FEES, ETH).0, a("0.001"));
    assert_eq!(engine.balance(FEES, USDT).0, a("2.99"));
}

#[test]
fn partial_fills_walk_price_levels_and_the_rest_rests() {
    let mut engine = engine();
    place(&mut engine, 1, limit(Side::Sell, "1", "3000"));
    place(&mut engine, 1, limit(Side::Sell, "1", "3001"));
    place(&mut engine, 1, limit(Side::Sell, "1", "3005"));
    let events = place(&mut engine, 2, limit(Side::Buy, "3", "3001"));
    let fills = trades(&events);
    assert_eq!(
        fills.iter().map(|t| t.price).collect::<Vec<_>>(),
        vec![a("3000"), a("3001")]
    );
    assert_eq!(status(&events, 4), OrderStatus::PartiallyFilled);
    assert_eq!(
        engine.balance(2, USDT),
        (
            a("100000")
                .checked_sub(a("6001"))
                .unwrap()
                .checked_sub(a("3001"))
                .unwrap(),
            a("3001")
        )
    );
    // Cancel of a partially filled order releases only what is left.
    let events = engine.apply(Command::Cancel {
        account: 2,
        market: ETHUSDT,
        order_id: 4,
        cancel_client_id: None,
        time_ms: 0,
    });
    assert_eq!(status(&events, 4), OrderStatus::Canceled);
    assert_eq!(engine.balance(2, USDT), (a("93999"), Amount::ZERO));
}

#[test]
fn ioc_leftovers_expire_and_fok_that_cannot_fill_expires_untouched() {
    let mut engine = engine();
    place(&mut engine, 1, limit(Side::Sell, "1", "3000"));
    let ioc = place(
        &mut engine,
        2,
        order(
            Side::Buy,
            OrderType::Limit,
            TimeInForce::Ioc,
            "2",
            Some("3000"),
        ),
    );
    assert_eq!(status(&ioc, 2), OrderStatus::Expired);
    assert_eq!(trades(&ioc).len(), 1);
    assert_eq!(
        engine.balance(2, USDT).1,
        Amount::ZERO,
        "nothing stays locked"
    );
    place(&mut engine, 1, limit(Side::Sell, "1", "3000"));
    let fok = place(
        &mut engine,
        2,
        order(
            Side::Buy,
            OrderType::Limit,
            TimeInForce::Fok,
            "2",
            Some("3000"),
        ),
    );
    assert_eq!(status(&fok, 4), OrderStatus::Expired);
    assert!(trades(&fok).is_empty());
    let fok = place(
        &mut engine,
        2,
        order(
            Side::Buy,
            OrderType::Limit,
            TimeInForce::Fok,
            "1",
            Some("3000"),
        ),
    );
    assert_eq!(status(&fok, 5), OrderStatus::Filled);
}

#[test]
fn market_orders_by_quantity_and_by_quote_and_into_an_empty_book() {
    let mut engine = engine();
    let empty = place(
        &mut engine,
        2,
        order(Side::Buy, OrderType::Market, TimeInForce::Gtc, "1", None),
    );
    assert_eq!(status(&empty, 1), OrderStatus::Expired);
    assert_eq!(engine.balance(2, USDT), (a("100000"), Amount::ZERO));
    place(&mut engine, 1, limit(Side::Sell, "1", "3000"));
    place(&mut engine, 1, limit(Side::Sell, "1", "3100"));
    let by_quantity = place(
        &mut engine,
        2,
        order(Side::Buy, OrderType::Market, TimeInForce::Gtc, "1.5", None),
    );
    assert_eq!(status(&by_quantity, 4), OrderStatus::Filled);
    assert_eq!(engine.balance(2, USDT), (a("95450"), Amount::ZERO));
    let mut by_quote = order(Side::Buy, OrderType::Market, TimeInForce::Gtc, "1", None);
    by_quote.quantity = None;
    by_quote.quote_quantity = Some(a("310"));
    let events = place(&mut engine, 2, by_quote);
    assert_eq!(status(&events, 5), OrderStatus::Filled);
    assert_eq!(trades(&events)[0].quantity, a("0.1"));
    let sell = place(
        &mut engine,
        1,
        order(Side::Sell, OrderType::Market, TimeInForce::Gtc, "1", None),
    );
    assert_eq!(status(&sell, 6), OrderStatus::Expired, "no bids");
}

#[test]
fn a_market_sell_for_a_quote_amount_sells_what_the_book_needs() {
    let mut engine = engine();
    place(&mut engine, 2, limit(Side::Buy, "0.1", "3000"));
    place(&mut engine, 2, limit(Side::Buy, "1", "2900"));
    let mut for_quote = order(Side::Sell, OrderType::Market, TimeInForce::Gtc, "1", None);
    for_quote.quantity = None;
    for_quote.quote_quantity = Some(a("590"));
    let events = place(&mut engine, 1, for_quote.clone());
    let fills: Vec<(Amount, Amount)> = trades(&events)
        .iter()
        .map(|t| (t.price, t.quote_quantity))
        .collect();
    // 0.1 at 3000 pays 300; the remaining 290 buys exactly 0.1 at 2900.
    assert_eq!(fills, vec![(a("3000"), a("300")), (a("2900"), a("290"))]);
    assert_eq!(status(&events, 3), OrderStatus::Filled);
    // Nothing stays locked; the seller holds the quote net of the taker fee.
    let (eth, locked) = engine.balance(1, ETH);
    assert_eq!((eth, locked), (a("99.8"), Amount::ZERO));
    // More quote than the book can pay: what it can, then expired.
    for_quote.quote_quantity = Some(a("100000"));
    let events = place(&mut engine, 1, for_quote.clone());
    assert_eq!(status(&events, 4), OrderStatus::Expired);
    assert_eq!(trades(&events).len(), 1);
    assert_eq!(engine.balance(1, ETH).1, Amount::ZERO);
    // An empty book: expired untouched.
    let events = place(&mut engine, 1, for_quote.clone());
    assert_eq!(status(&events, 5), OrderStatus::Expired);
    assert!(trades(&events).is_empty());
}

#[test]
fn limit_maker_that_would_cross_is_rejected() {
    let mut engine = engine();
    place(&mut engine, 1, limit(Side::Sell, "1", "3000"));
    let maker = order(
        Side::Buy,
        OrderType::LimitMaker,
        TimeInForce::Gtc,
        "1",
        Some("3000"),
    );
    assert_eq!(
        place(&mut engine, 2, maker),
        vec![Event::Rejected(Reject::WouldTake)]
    );
    let maker = order(
        Side::Buy,
        OrderType::LimitMaker,
        TimeInForce::Gtc,
        "1",
        Some("2999.99"),
    );
    assert_eq!(status(&place(&mut engine, 2, maker), 2), OrderStatus::New);
}

#[test]
fn self_trade_prevention_modes() {
    for (mode, taker, maker, fills) in [
        (StpMode::None, OrderStatus::Filled, OrderStatus::Filled, 1),
        (
            StpMode::ExpireTaker,
            OrderStatus::ExpiredInMatch,
            OrderStatus::New,
            0,
        ),
        (
            StpMode::ExpireMaker,
            OrderStatus::Expired,
            OrderStatus::ExpiredInMatch,
            0,
        ),
        (
            StpMode::ExpireBoth,
            OrderStatus::ExpiredInMatch,
            OrderStatus::ExpiredInMatch,
            0,
        ),
    ] {
        let mut engine = engine();
        let first = place(&mut engine, 1, limit(Side::Sell, "1", "3000"));
        let mut own = order(
            Side::Buy,
            OrderType::Limit,
            TimeInForce::Ioc,
            "1",
            Some("3000"),
        );
        own.stp = mode;
        let events = place(&mut engine, 1, own);
        assert_eq!(status(&events, 2), taker, "{mode:?} taker");
        let maker_state = if maker == OrderStatus::New {
            status(&first, 1)
        } else {
            status(&events, 1)
        };
        assert_eq!(maker_state, maker, "{mode:?} maker");
        assert_eq!(trades(&events).len(), fills, "{mode:?}");
    }
}

#[test]
fn decrement_takes_the_prevented_quantity_off_both_and_ends_the_smaller() {
    let mut engine = engine();
    place(&mut engine, 1, limit(Side::Buy, "6", "3000"));
    let mut sell = limit(Side::Sell, "2", "3000");
    sell.stp = StpMode::Decrement;
    let events = place(&mut engine, 1, sell);
    assert_eq!(status(&events, 2), OrderStatus::ExpiredInMatch);
    assert_eq!(status(&events, 1), OrderStatus::New);
    assert!(trades(&events).is_empty(), "nothing trades");
    let prevented: Vec<Prevention> = events
        .iter()
        .filter_map(|e| match e {
            Event::Prevented(p) => Some(*p),
            _ => None,
        })
        .collect();
    assert_eq!(prevented.len(), 1);
    assert_eq!(
        (
            prevented[0].id,
            prevented[0].taker.0,
            prevented[0].maker.0,
            prevented[0].taker_quantity,
            prevented[0].maker_quantity
        ),
        (1, 2, 1, a("2"), a("2"))
    );
    // The bid is 4 now, its lock with it; the sell locks nothing.
    assert_eq!(engine.depth(ETHUSDT).0, vec![(a("3000"), a("4"))]);
    assert_eq!(engine.balance(1, USDT), (a("88000"), a("12000")));
    assert_eq!(engine.balance(1, ETH), (a("100"), Amount::ZERO));
    // A larger taker: the maker ends, the taker goes on to trade with others.
    place(&mut engine, 2, limit(Side::Buy, "1", "2990"));
    let mut big = limit(Side::Sell, "5", "2990");
    big.stp = StpMode::Decrement;
    let events = place(&mut engine, 1, big);
    assert_eq!(status(&events, 1), OrderStatus::ExpiredInMatch);
    assert_eq!(trades(&events)[0].quantity, a("1"), "4 prevented, 1 traded");
    assert_eq!(engine.check_invariants(), Ok(()));
}

#[test]
fn fill_or_kill_counts_only_liquidity_that_self_trade_prevention_leaves() {
    for (mode, expected) in [
        (StpMode::ExpireMaker, OrderStatus::Expired),
        (StpMode::ExpireTaker, OrderStatus::Expired),
        (StpMode::None, OrderStatus::Filled),
    ] {
        let mut engine = engine();
        place(&mut engine, 2, limit(Side::Sell, "1", "3000"));
        place(&mut engine, 1, limit(Side::Sell, "1", "3000"));
        place(&mut engine, 2, limit(Side::Sell, "1", "3001"));
        let mut fok = order(
            Side::Buy,
            OrderType::Limit,
            TimeInForce::Fok,
            "3",
            Some("3001"),
        );
        fok.stp = mode;
        let events = place(&mut engine, 1, fok);
        assert_eq!(status(&events, 4), expected, "{mode:?}");
        let filled = trades(&events)
            .iter()
            .fold(Amount::ZERO, |sum, t| sum.checked_add(t.quantity).unwrap());
        assert!(
            filled.is_zero() || filled == a("3"),
            "{mode:?}: a fill-or-kill never fills in part ({filled})"
        );
    }
}

#[test]
fn a_quote_budget_never_buys_base_for_nothing() {
    // 0.05001 BTC does not divide 1e-8 BTC evenly: an unrounded budget of
    // one unit would "afford" 19 units of ETH for a quote rounding to 0.
    let mut engine = Engine::new(two_markets(), FEES);
    for (account, asset) in [(1, ETH), (2, BTC)] {
        engine.apply(Command::Credit {
            account,
            asset,
            amount: a("100"),
        });
    }
    let mut sell = limit(Side::Sell, "10", "0.05001");
    sell.market = ETHBTC;
    place(&mut engine, 1, sell);
    let mut buy = order(Side::Buy, OrderType::Market, TimeInForce::Gtc, "1", None);
    buy.market = ETHBTC;
    buy.quantity = None;
    buy.quote_quantity = Some(a("0.005"));
    let events = place(&mut engine, 2, buy);
    let fills = trades(&events);
    assert_eq!(fills.len(), 1);
    assert_eq!(
        (fills[0].quantity, fills[0].quote_quantity),
        (a("0.099"), a("0.00495099"))
    );
    assert_eq!(
        engine.balance(2, BTC),
        (a("99.99504901"), Amount::ZERO),
        "the unspent budget comes back"
    );
    let off_grid = limit(Side::Sell, "0.00001", "3000");
    assert_eq!(
        place(&mut engine, 1, off_grid),
        vec![Event::Rejected(Reject::OffGrid)]
    );
}

#[test]
fn insufficient_funds_and_duplicate_client_ids_change_nothing() {
    let mut engine = engine();
    let too_big = limit(Side::Buy, "100", "3000");
    assert_eq!(
        place(&mut engine, 1, too_big),
        vec![Event::Rejected(Reject::InsufficientBalance)]
    );
    let mut named = limit(Side::Buy, "1", "3000");
    named.client_order_id = Some("mine".into());
    place(&mut engine, 1, named.clone());
    assert_eq!(
        place(&mut engine, 1, named.clone()),
        vec![Event::Rejected(Reject::DuplicateClientOrderId)]
    );
    assert_eq!(
        status(&place(&mut engine, 2, named), 2),
        OrderStatus::New,
        "ids are per account"
    );
    assert_eq!(engine.balance(1, USDT), (a("97000"), a("3000")));
}

#[test]
fn every_order_type_time_in_force_and_self_trade_mode() {
    use OrderStatus::{Expired, ExpiredInMatch, Filled, New, PartiallyFilled};
    use OrderType::{Limit, LimitMaker, Market};
    use StpMode::{ExpireBoth, ExpireMaker, ExpireTaker, None as Off};
    use TimeInForce::{Fok, Gtc, Ioc};
    // Book: account 1 sells 1 @ 3000 (order 1), account 2 sells 1 @ 3001
    // (order 2). Account 1 then buys 2 (up to 3001): its own order is met first.
    // (type, tif, stp, taker status, trades, own maker's status after)
    let cases = [
        (Limit, Gtc, Off, Some(Filled), 2, Filled),
        (Limit, Gtc, ExpireTaker, Some(ExpiredInMatch), 0, New),
        (
            Limit,
            Gtc,
            ExpireMaker,
            Some(PartiallyFilled),
            1,
            ExpiredInMatch,
        ),
        (
            Limit,
            Gtc,
            ExpireBoth,
            Some(ExpiredInMatch),
            0,
            ExpiredInMatch,
        ),
        (Limit, Ioc, Off, Some(Filled), 2, Filled),
        (Limit, Ioc, ExpireTaker, Some(ExpiredInMatch), 0, New),
        (Limit, Ioc, ExpireMaker, Some(Expired), 1, ExpiredInMatch),
        (
            Limit,
            Ioc,
            ExpireBoth,
            Some(ExpiredInMatch),
            0,
            ExpiredInMatch,
        ),
        (Limit, Fok, Off, Some(Filled), 2, Filled),
        (Limit, Fok, ExpireTaker, Some(Expired), 0, New),
        (Limit, Fok, ExpireMaker, Some(Expired), 0, New),
        (Limit, Fok, ExpireBoth, Some(Expired), 0, New),
        (Market, Gtc, Off, Some(Filled), 2, Filled),
        (Market, Gtc, ExpireTaker, Some(ExpiredInMatch), 0, New),
        (Market, Gtc, ExpireMaker, Some(Expired), 1, ExpiredInMatch),
        (
            Market,
            Gtc,
            ExpireBoth,
            Some(ExpiredInMatch),
            0,
            ExpiredInMatch,
        ),
        (LimitMaker, Gtc, Off, None, 0, New),
        (LimitMaker, Gtc, ExpireTaker, None, 0, New),
        (LimitMaker, Gtc, ExpireMaker, None, 0, New),
        (LimitMaker, Gtc, ExpireBoth, None, 0, New),
    ];
    for (order_type, tif, stp, expected, fills, maker_after) in cases {
        let case = format!("{order_type:?} {tif:?} {stp:?}");
        let mut engine = engine();
        let first = place(&mut engine, 1, limit(Side::Sell, "1", "3000"));
        place(&mut engine, 2, limit(Side::Sell, "1", "3001"));
        let price = (order_type != Market).then_some("3001");
        let mut buy = order(Side::Buy, order_type, tif, "2", price);
        buy.stp = stp;
        let events = place(&mut engine, 1, buy);
        match expected {
            Some(expected) => assert_eq!(status(&events, 3), expected, "{case}"),
            None => assert_eq!(events, vec![Event::Rejected(Reject::WouldTake)], "{case}"),
        }
        assert_eq!(trades(&events).len(), fills, "{case}");
        let maker = if maker_after == New {
            status(&first, 1)
        } else {
            status(&events, 1)
        };
        assert_eq!(maker, maker_after, "{case}: own resting order");
        assert_eq!(engine.check_invariants(), Ok(()), "{case}");
        // Own maker if untouched, account 2's order if nothing traded, the taker if it rests.
        let resting = usize::from(maker_after == New)
            + usize::from(fills == 0)
            + usize::from(expected == Some(PartiallyFilled));
        assert_eq!(engine.resting_orders(ETHUSDT), resting, "{case}: resting");
    }
}

#[test]
fn cancel_all_ends_every_open_order_of_the_account_on_that_market_only() {
    let mut engine = engine();
    place(&mut engine, 1, limit(Side::Buy, "1", "2990"));
    place(&mut engine, 2, limit(Side::Buy, "1", "2991"));
    place(&mut engine, 1, limit(Side::Sell, "1", "3010"));
    place(&mut engine, 1, limit(Side::Sell, "2", "3000"));
    place(&mut engine, 2, limit(Side::Buy, "1", "3000")); // fills half of #4
    let events = engine.apply(Command::CancelAll {
        account: 1,
        market: ETHUSDT,
        time_ms: 5,
    });
    let canceled: Vec<u64> = events
        .iter()
        .filter_map(|e| match e {
            Event::Order(o) if o.status == OrderStatus::Canceled => Some(o.order_id),
            _ => None,
        })
        .collect();
    assert_eq!(canceled, vec![1, 3, 4], "oldest first");
    assert_eq!(engine.balance(1, USDT).1, Amount::ZERO);
    assert_eq!(engine.balance(1, ETH).1, Amount::ZERO);
    assert_eq!(engine.resting_orders(ETHUSDT), 1, "account 2's order stays");
    assert_eq!(
        engine.apply(Command::CancelAll {
            account: 1,
            market: ETHUSDT,
            time_ms: 6,
        }),
        vec![Event::Rejected(Reject::UnknownOrder)]
    );
    assert_eq!(
        engine.apply(Command::CancelAll {
            account: 1,
            market: MarketId(7),
            time_ms: 6,
        }),
        vec![Event::Rejected(Reject::UnknownSymbol)]
    );
}

/// The executions `events` tell of order `order_id`, with its state after each.
fn told(events: &[Event], order_id: u64) -> Vec<(ExecutionKind, OrderStatus, Amount, Amount)> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::Execution(e) if e.order_id == order_id => {
                Some((e.kind, e.status, e.executed, e.cumulative_quote))
            }
            _ => None,
        })
        .collect()
}

/// A fill of one ETH at `price` on ETHUSDT.
fn one_eth(
    trade_id: u64,
    price: &str,
    fee: &str,
    fee_asset: AssetId,
    maker: bool,
) -> ExecutionKind {
    ExecutionKind::Trade(Fill {
        trade_id,
        price: a(price),
        quantity: a("1"),
        quote_quantity: a(price),
        fee: a(fee),
        fee_asset,
        maker,
    })
}

#[test]
fn each_order_is_told_its_executions_with_its_state_after_each() {
    use OrderStatus::{Expired, Filled, New, PartiallyFilled};
    let mut engine = engine();
    place(&mut engine, 2, limit(Side::Sell, "1", "3000"));
    place(&mut engine, 2, limit(Side::Sell, "1", "3001"));
    let ioc = order(
        Side::Buy,
        OrderType::Limit,
        TimeInForce::Ioc,
        "3",
        Some("3001"),
    );
    let events = place(&mut engine, 1, ioc);
    let zero = Amount::ZERO;
    assert_eq!(
        told(&events, 3),
        vec![
            (ExecutionKind::New { working: true }, New, zero, zero),
            (
                one_eth(1, "3000", "0.001", ETH, false),
                PartiallyFilled,
                a("1"),
                a("3000")
            ),
            // The last fill of an order that then expires leaves it partly filled.
            (
                one_eth(2, "3001", "0.001", ETH, false),
                PartiallyFilled,
                a("2"),
                a("6001")
            ),
            (ExecutionKind::Expired, Expired, a("2"), a("6001")),
        ]
    );
    // Each side pays its fee in what it receives: the sellers in USDT.
    assert_eq!(
        told(&events, 1),
        vec![(
            one_eth(1, "3000", "3", USDT, true),
            Filled,
            a("1"),
            a("3000")
        )]
    );
    assert_eq!(
        told(&events, 2),
        vec![(
            one_eth(2, "3001", "3.001", USDT, true),
            Filled,
            a("1"),
            a("3001")
        )]
    );
}

#[test]
fn a_taker_that_decrement_reduced_and_that_rests_is_told_so_once_before_its_fills() {
    use OrderStatus::{ExpiredInMatch, PartiallyFilled};
    let mut engine = engine();
    place(&mut engine, 1, limit(Side::Buy, "1", "3000"));
    place(&mut engine, 2, limit(Side::Buy, "1", "3000"));
    let mut sell = limit(Side::Sell, "3", "3000");
    sell.stp = StpMode::Decrement;
    let events = place(&mut engine, 1, sell);
    let prevented = |counter_order_id| {
        ExecutionKind::Prevented(PreventedMatch {
            id: 1,
            quantity: a("1"),
            counter_order_id,
        })
    };
    let zero = Amount::ZERO;
    assert_eq!(
        told(&events, 3),
        vec![
            (
                ExecutionKind::New { working: true },
                OrderStatus::New,
                zero,
                zero
            ),
            (prevented(1), PartiallyFilled, a("1"), a("3000")),
            (
                one_eth(1, "3000", "3", USDT, false),
                PartiallyFilled,
                a("1"),
                a("3000")
            ),
        ]
    );
    assert_eq!(
        told(&events, 1),
        vec![(prevented(3), ExpiredInMatch, zero, zero)]
    );
}
