//! Random command sequences, how much of the rules they reach, and the
//! engine against the model on them.

use super::*;

/// The engine tests' random commands, widened where they leave rules
/// untried: client order ids and engine times, an unknown market or
/// asset, off-grid and zero amounts, amounts near the type's limit, the
/// fee account trading, larger USDT deposits (orders there cost
/// thousands) and quote amounts that meet the book on both markets.
fn commands() -> impl Strategy<Value = Command> {
    (command_strategy(), 0u8..4, 0u64..3, 0u8..48, 0u64..20).prop_map(
        |(mut command, client, time_ms, twist, tick)| {
            command.set_time(time_ms);
            match &mut command {
                Command::Credit {
                    account,
                    asset,
                    amount,
                } => match twist {
                    0 => *asset = AssetId(3),
                    1 | 2 => *amount = Amount::from_units(u64::MAX / 4),
                    3 => *account = FEES,
                    _ if *asset == USDT => *amount = Amount::from_units(amount.units() * 20),
                    _ => {}
                },
                Command::Debit { asset, .. } if twist == 0 => *asset = AssetId(3),
                Command::Cancel { market, .. } | Command::CancelAll { market, .. }
                    if twist == 0 =>
                {
                    *market = MarketId(2)
                }
                Command::Place { account, order, .. } => {
                    order.client_order_id =
                        [None, None, Some("a"), Some("b")][usize::from(client)].map(String::from);
                    let price = if order.market == ETHBTC {
                        Amount::from_units(5_000_000 + tick * 1_000)
                    } else {
                        Amount::from_units((2990 + tick) * 100_000_000)
                    };
                    if let Some(quote) = &mut order.quote_quantity {
                        // The strategy's amounts buy nothing on ETHUSDT; these
                        // meet the book, some exactly at one price level.
                        let base = Amount::from_units(quote.units() * 2);
                        let at_level = mul(price, base);
                        match twist % 3 {
                            0 => {}
                            1 => *quote = at_level,
                            _ => *quote = sum(at_level, Amount::from_units(at_level.units() / 7)),
                        }
                    }
                    let nudge = |v: &mut Option<Amount>| {
                        if let Some(v) = v {
                            *v = Amount::from_units(v.units() + 1);
                        }
                    };
                    match twist {
                        0 => order.market = MarketId(2),
                        1 if order.price.is_some() => nudge(&mut order.price),
                        1 => nudge(&mut order.quantity),
                        2 if order.quantity.is_some() => order.quantity = Some(Amount::ZERO),
                        2 => order.price = order.price.map(|_| Amount::ZERO),
                        // At ETHUSDT prices 4e7 ETH is worth an amount; 1e8 ETH is not.
                        3 if order.quantity.is_some() => {
                            order.quantity = Some(Amount::from_units(4_000_000_000_000_000));
                        }
                        4 if order.quantity.is_some() => {
                            order.quantity = Some(Amount::from_units(10_000_000_000_000_000));
                        }
                        5 => *account = FEES,
                        6..=13 => make_conditional(order, twist, tick),
                        27..=31 => order.stp = StpMode::Decrement,
                        _ => {}
                    }
                }
                _ => {}
            }
            if let Command::Place {
                account,
                order,
                time_ms,
            } = &command
                && (14..=26).contains(&twist)
            {
                if twist >= 24 {
                    // Amends: mostly down, sometimes up or to the same.
                    let quantity = order.quantity.unwrap_or(Amount::from_units(1_000_000));
                    let quantity = match twist {
                        24 => Amount::from_units(quantity.units() / 2),
                        25 => Amount::from_units(1_000_000),
                        _ => quantity,
                    };
                    return Command::Amend {
                        account: *account,
                        market: order.market,
                        order_id: 1 + tick % 8,
                        quantity,
                        client_order_id: order.client_order_id.clone(),
                        time_ms: *time_ms,
                    };
                }
                if twist >= 21 {
                    return Command::Replace {
                        account: *account,
                        market: order.market,
                        order_id: 1 + tick % 6,
                        order: Box::new(order.clone()),
                        allow_failure: twist == 22,
                        cancel_client_id: None,
                        time_ms: *time_ms,
                    };
                }
                return Command::PlaceList {
                    account: *account,
                    list: Box::new(make_list(order, twist, tick)),
                    time_ms: *time_ms,
                };
            }
            command
        },
    )
}

/// Turns `order` into a conditional one: each of the four types, with a
/// stop price near the traded prices (so some would trigger at once), a
/// trailing delta of 0.1–2 %, or both; or gives a limit order a trigger
/// it may not have.
fn make_conditional(order: &mut NewOrder, twist: u8, tick: u64) {
    let stop = if order.market == ETHBTC {
        Amount::from_units(5_000_000 + ((tick * 7) % 20) * 1_000)
    } else {
        Amount::from_units((2990 + (tick * 7) % 20) * 100_000_000)
    };
    let delta = 10 + 10 * u32::try_from(tick).expect("small") * 10;
    let (stop_price, trailing_delta) = match twist % 3 {
        0 => (Some(stop), None),
        1 => (None, Some(delta)),
        _ => (Some(stop), Some(delta)),
    };
    order.trigger = Some(Trigger {
        stop_price,
        trailing_delta,
    });
    if twist == 13 {
        order.order_type = OrderType::Limit;
        return;
    }
    order.order_type = [
        OrderType::StopLoss,
        OrderType::StopLossLimit,
        OrderType::TakeProfit,
        OrderType::TakeProfitLimit,
    ][usize::from(twist % 4)];
    if order.quantity.is_none() {
        order.quantity = Some(Amount::from_units(1_000_000));
        order.quote_quantity = None;
    }
    if order.order_type.has_price() {
        order.price.get_or_insert(stop);
    } else {
        order.price = None;
    }
    order.time_in_force = TimeInForce::Gtc;
}

/// An order list around `order`'s market, side and quantity: an OCO
/// pair (post-only on the far side of the market, a stop on the near
/// side, or two stops), an OTO or an OTOCO whose working order is a
/// limit order at the traded prices; twist 20 mixes the pair's sides.
fn make_list(order: &NewOrder, twist: u8, tick: u64) -> NewOrderList {
    let (unit, base) = if order.market == ETHBTC {
        (1_000, 5_000_000)
    } else {
        (100_000_000, 2990 * 100_000_000)
    };
    let at = |ticks: u64| Amount::from_units(base + ticks * unit);
    let quantity = order.quantity.unwrap_or(Amount::from_units(1_000_000));
    let leg =
        |side: Side, order_type: OrderType, price: Option<Amount>, stop: Option<Amount>| NewOrder {
            side,
            order_type,
            quantity: Some(quantity),
            quote_quantity: None,
            price,
            time_in_force: TimeInForce::Gtc,
            trigger: stop.map(|stop| Trigger {
                stop_price: Some(stop),
                trailing_delta: (tick % 4 == 3).then_some(50),
            }),
            client_order_id: None,
            ..order.clone()
        };
    let side = order.side;
    // The pair's post-only order is where this side does not trade at
    // once (asks high, bids low); its stop on the other side.
    let (far, near) = if side == Side::Sell {
        (at(10 + tick % 10), at(tick % 10))
    } else {
        (at(tick % 10), at(10 + tick % 10))
    };
    let stop_type = if tick.is_multiple_of(2) {
        OrderType::StopLoss
    } else {
        OrderType::StopLossLimit
    };
    let stop_price = (stop_type == OrderType::StopLossLimit).then_some(near);
    let mut pair = vec![
        leg(side, OrderType::LimitMaker, Some(far), None),
        leg(side, stop_type, stop_price, Some(near)),
    ];
    if tick % 5 == 4 {
        // Two conditional orders: a take-profit where the post-only one was.
        pair[0] = leg(side, OrderType::TakeProfit, None, Some(far));
    }
    if twist == 20 {
        pair[1].side = if side == Side::Buy {
            Side::Sell
        } else {
            Side::Buy
        };
    }
    let working = NewOrder {
        order_type: OrderType::Limit,
        price: Some(order.price.unwrap_or(at(10))),
        quote_quantity: None,
        quantity: Some(quantity),
        trigger: None,
        ..order.clone()
    };
    let opposite = if side == Side::Buy {
        Side::Sell
    } else {
        Side::Buy
    };
    let flip = |mut o: NewOrder| {
        o.side = opposite;
        o
    };
    let (contingency, working, pending) = match twist {
        14 | 15 | 20 => (Contingency::Oco, None, pair),
        16 | 17 => (
            Contingency::Oto,
            Some(working),
            vec![leg(
                opposite,
                OrderType::LimitMaker,
                Some(at(5 + tick % 15)),
                None,
            )],
        ),
        _ => (
            Contingency::Otoco,
            Some(working),
            pair.into_iter().map(flip).collect(),
        ),
    };
    NewOrderList {
        market: order.market,
        contingency,
        working,
        pending,
        list_client_id: None,
    }
}

/// Random command sequences after deposits for accounts 1 and 2 and some
/// ETH for the fee account (account 3 starts empty), so that more orders
/// trade.
fn sequences() -> impl Strategy<Value = Vec<Command>> {
    let deposit = |account, asset, amount| Command::Credit {
        account,
        asset,
        amount: a(amount),
    };
    let mut deposits = vec![deposit(FEES, ETH, "1")];
    for account in [1, 2] {
        for (asset, amount) in [(USDT, "20000"), (ETH, "20"), (BTC, "1")] {
            deposits.push(deposit(account, asset, amount));
        }
    }
    proptest::collection::vec(commands(), 1..100)
        .prop_map(move |commands| deposits.iter().cloned().chain(commands).collect())
}

/// The account and order of a command that places one order.
fn single_order(command: &Command) -> Option<(&AccountId, &NewOrder)> {
    match command {
        Command::Place { account, order, .. } => Some((account, order)),
        Command::Replace { account, order, .. } => Some((account, order)),
        _ => None,
    }
}

/// Names what a placed order's outcome shows, for the coverage test.
fn kinds(order: &NewOrder, outcome: &Outcome, id: Option<u64>) -> Vec<String> {
    let taker = id.map(|id| outcome.orders[&(order.market, id)].status);
    let shape = format!(
        "{:?} {:?} {:?} by quote {}",
        order.order_type,
        order.side,
        order.time_in_force,
        order.quote_quantity.is_some()
    );
    let mut kinds = vec![format!("{shape}: {taker:?}")];
    if !outcome.trades.is_empty() {
        kinds.push(format!("{shape}: {taker:?} after trading"));
        kinds.push(format!(
            "{:?} {:?} either side: {taker:?} after trading",
            order.order_type, order.time_in_force
        ));
        kinds.push(format!("trades on {:?}", order.market));
    }
    kinds
}

#[test]
fn the_random_commands_reach_every_refusal_and_every_outcome() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    // A new refusal must be added here (and reached) before this compiles.
    let refusal = |reject: Reject| match reject {
        Reject::UnknownSymbol
        | Reject::UnknownAsset
        | Reject::InsufficientBalance
        | Reject::WouldTake
        | Reject::UnknownOrder
        | Reject::DuplicateClientOrderId
        | Reject::TooManyOrders
        | Reject::Overflow
        | Reject::OffGrid
        | Reject::WouldTrigger
        | Reject::TooManyAlgoOrders
        | Reject::BadTrigger
        | Reject::BadList
        | Reject::AmendIncrease
        | Reject::AmendNoChange => format!("{reject:?}"),
        // Chain deposits and withdrawals are no order commands: the engine's
        // own tests reach these (engine/chain.rs), the model never sees them.
        Reject::DepositCredited | Reject::UnknownWithdrawal | Reject::DepositAddressAssigned => {
            unreachable!("model: chain commands are not generated")
        }
    };
    let mut seen: BTreeMap<String, u32> = BTreeMap::new();
    let mut runner = TestRunner::deterministic();
    let sequences = sequences();
    for _ in 0..700 {
        let mut model = Model::new(catalog(), FEES);
        for command in sequences.new_tree(&mut runner).unwrap().current() {
            let next_id = match single_order(&command) {
                Some((_, order)) => model
                    .books
                    .get(usize::from(order.market.0))
                    .map(|b| b.next_order),
                None => None,
            };
            let outcome = model.apply(&command);
            let mut kinds: Vec<String> = outcome.rejected.map(refusal).into_iter().collect();
            for state in outcome.orders.values() {
                kinds.push(format!("{:?}", state.status));
            }
            let states: Vec<OrderStatus> = outcome.orders.values().map(|o| o.status).collect();
            if let Command::PlaceList { .. } | Command::Place { .. } = &command
                && states.contains(&OrderStatus::Filled)
                && states.contains(&OrderStatus::Expired)
                && outcome.trades.len() < 4
            {
                kinds.push("an OCO order fills and its partner expires".into());
            }
            let pending_placed = model.books.iter().any(|b| {
                b.lists.iter().any(|l| {
                    l.working.is_none()
                        && l.deferred.is_empty()
                        && l.pair.is_none()
                        && l.orders.len() == 2
                })
            });
            if pending_placed {
                kinds.push("an OTO places its pending orders".into());
            }
            if outcome
                .orders
                .values()
                .any(|o| o.status == OrderStatus::Expired && o.executed.is_zero())
                && matches!(&command, Command::PlaceList { list, .. } if list.contingency != Contingency::Oco)
            {
                kinds.push("an OTO's pending orders expire".into());
            }
            for prevention in &outcome.prevented {
                if prevention.mode == StpMode::Decrement {
                    let taker_ended = outcome
                        .orders
                        .get(&(prevention.market, prevention.taker.0))
                        .is_some_and(|o| o.status == OrderStatus::ExpiredInMatch);
                    kinds.push(
                        if taker_ended {
                            "DECREMENT ends the taker"
                        } else {
                            "DECREMENT takes from both and one goes on"
                        }
                        .into(),
                    );
                }
            }
            if !outcome.amended.is_empty() {
                kinds.push("an order is amended".into());
            }
            if outcome.part_refused.is_some() {
                kinds.push("a cancel-replace fails in part".into());
            }
            if !outcome.tracking.is_empty() {
                kinds.push("a trailing order tracks".into());
            }
            if outcome.triggered.len() > 1 {
                kinds.push("a trigger sets off another".into());
            }
            for key in &outcome.triggered {
                kinds.push("a stop triggers".into());
                kinds.push(
                    match outcome.orders[key].status {
                        OrderStatus::Filled => "a triggered order fills",
                        OrderStatus::New | OrderStatus::PartiallyFilled => {
                            "a triggered order rests"
                        }
                        _ => "a triggered order expires",
                    }
                    .into(),
                );
            }
            if let Some((account, order)) = single_order(&command)
                && outcome.rejected.is_none()
                && outcome
                    .orders
                    .contains_key(&(order.market, next_id.unwrap_or(0)))
            {
                kinds.extend(self::kinds(order, &outcome, next_id));
                if *account == FEES && !outcome.trades.is_empty() {
                    kinds.push("the fee account trades".into());
                }
            }
            for kind in kinds {
                *seen.entry(kind).or_default() += 1;
            }
        }
    }
    let mut wanted: Vec<String> = [
        "UnknownSymbol",
        "UnknownAsset",
        "InsufficientBalance",
        "WouldTake",
        "UnknownOrder",
        "DuplicateClientOrderId",
        "TooManyOrders",
        "Overflow",
        "OffGrid",
        "WouldTrigger",
        "TooManyAlgoOrders",
        "BadTrigger",
        "a stop triggers",
        "a trailing order tracks",
        "a triggered order fills",
        "a triggered order rests",
        "a triggered order expires",
        "a trigger sets off another",
        "BadList",
        "a cancel-replace fails in part",
        "AmendIncrease",
        "AmendNoChange",
        "an order is amended",
        "an OCO order fills and its partner expires",
        "an OTO places its pending orders",
        "an OTO's pending orders expire",
        "New",
        "PartiallyFilled",
        "Filled",
        "Canceled",
        "Expired",
        "ExpiredInMatch",
        "Limit Buy Fok by quote false: Some(Filled) after trading",
        "Limit Sell Fok by quote false: Some(Expired)",
        "Limit Buy Ioc by quote false: Some(Expired) after trading",
        "Limit Sell Gtc by quote false: Some(PartiallyFilled) after trading",
        "Limit Gtc either side: Some(ExpiredInMatch) after trading",
        "Market Buy Gtc by quote false: Some(Filled) after trading",
        "Market Sell Gtc by quote false: Some(Expired) after trading",
        "Market Buy Gtc by quote true: Some(Filled) after trading",
        "Market Buy Gtc by quote true: Some(Expired) after trading",
        "Market Sell Gtc by quote true: Some(Filled) after trading",
        "Market Sell Gtc by quote true: Some(Expired) after trading",
        "Market Sell Gtc by quote true: Some(ExpiredInMatch)",
        "trades on MarketId(0)",
        "trades on MarketId(1)",
        "the fee account trades",
    ]
    .map(String::from)
    .into();
    wanted.retain(|kind| !seen.contains_key(kind));
    assert!(
        wanted.is_empty(),
        "never reached: {wanted:?}\nreached: {seen:#?}"
    );
}

/// Applies `commands` to the engine and the model alike and fails at the
/// first command they disagree on.
pub(super) fn agree(commands: &[Command]) -> Result<(), TestCaseError> {
    let catalog = catalog();
    let mut engine = Engine::new(catalog.clone(), FEES);
    let mut model = Model::new(catalog.clone(), FEES);
    for (step, command) in commands.iter().enumerate() {
        let predicted = model.apply(command);
        model.check();
        let before = engine.snapshot();
        let events = engine.apply(command.clone());
        prop_assert_eq!(executions_agree(&events), Ok(()), "command {}", step);
        let happened = Outcome::of(&events);
        if happened.rejected.is_some() {
            prop_assert_eq!(&engine.snapshot(), &before, "a refusal changed the engine");
        }
        prop_assert_eq!(&happened, &predicted, "command {}: {:?}", step, command);
        let mut accounts = model.accounts();
        accounts.extend([1, 2, 3, FEES]);
        for account in accounts {
            for (asset, _) in catalog.assets() {
                prop_assert_eq!(
                    engine.balance(account, asset),
                    model.balance(account, asset),
                    "after command {}: account {} asset {:?}",
                    step,
                    account,
                    asset
                );
            }
        }
        for (market, _) in catalog.markets() {
            prop_assert_eq!(engine.depth(market), model.depth(market));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn the_engine_does_what_the_model_predicts(commands in sequences()) {
        agree(&commands)?;
    }

    /// An engine written out at any point and read back goes on exactly
    /// as the one that was never written: same events, same state; and so
    /// does one whose image was copied into the memory of an earlier image.
    #[test]
    fn an_engine_read_back_from_its_image_goes_on_as_the_original(
        commands in sequences(),
        cut in any::<proptest::sample::Index>(),
        earlier in any::<proptest::sample::Index>(),
    ) {
        let catalog = catalog();
        let mut engine = Engine::new(catalog.clone(), FEES);
        let at = cut.index(commands.len() + 1);
        let spare_at = earlier.index(at + 1);
        let mut spare = None;
        for (step, command) in commands[..at].iter().enumerate() {
            if step == spare_at {
                spare = Some(engine.image(None));
            }
            engine.apply(command.clone());
        }
        let written = postcard::to_stdvec(&engine.image(spare)).unwrap();
        let stored = postcard::from_bytes(&written).unwrap();
        let mut restored = Engine::from_image(catalog.clone(), FEES, stored).unwrap();
        prop_assert_eq!(restored.snapshot(), engine.snapshot());
        for (step, command) in commands[at..].iter().enumerate() {
            let (ours, theirs) = (restored.apply(command.clone()), engine.apply(command.clone()));
            prop_assert_eq!(ours, theirs, "command {} after the image", step);
        }
        prop_assert_eq!(restored.snapshot(), engine.snapshot());
    }

    /// Needs no model: the events must report every balance a command
    /// changes, with its value after the command, or the views fed by
    /// them drift from the engine.
    #[test]
    fn balance_events_report_every_balance_a_command_changes(commands in sequences()) {
        let catalog = catalog();
        let mut engine = Engine::new(catalog.clone(), FEES);
        let balances = |engine: &Engine| {
            let mut all = BTreeMap::new();
            for account in [1, 2, 3, FEES] {
                for (asset, _) in catalog.assets() {
                    all.insert((account, asset), engine.balance(account, asset));
                }
            }
            all
        };
        for (step, command) in commands.into_iter().enumerate() {
            let before = balances(&engine);
            let reported = reported_balances(&engine.apply(command.clone()));
            for (key, after) in balances(&engine) {
                if after != before[&key] {
                    prop_assert!(
                        reported.contains_key(&key),
                        "command {} changes {:?} without reporting it: {:?}", step, key, command
                    );
                }
            }
            for (&(account, asset), &value) in &reported {
                prop_assert_eq!(
                    value,
                    engine.balance(account, asset),
                    "command {} reports a stale {:?} of account {}: {:?}",
                    step, asset, account, command
                );
            }
        }
    }
}
