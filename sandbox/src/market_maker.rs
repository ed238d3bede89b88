//! A market maker for the sandbox: one account quotes a ladder of
//! post-only orders around a reference price that walks at random, and a
//! second account (the taker flow) now and then takes from it, so prices,
//! depth, trades and candles move.
//!
//! The decisions are plain functions of the state they are given
//! ([`MarketMaker::requote`], [`TakerFlow::next_order`]); the driver
//! ([`run`]) only feeds them the engine's view and sends their commands.
//! The maker's base inventory cannot leave its band whatever gets filled:
//! the bids it rests never add up to more than the room left above the
//! inventory, nor the asks to more than the room below. It never trades
//! with itself: its orders are post-only (they never take), its bids are
//! always below its asks, and every ladder is withdrawn before the next.

use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use weiport_exchange::Amount;
use weiport_exchange::StpMode;
use weiport_exchange::catalog::{AssetId, Catalog, MarketId};
use weiport_exchange::engine::{AccountId, Command};
use weiport_exchange::market::Market;
use weiport_exchange::order::{NewOrder, OrderType, ResponseType, Side, TimeInForce};
use weiport_exchange::sequencer::{Sequencer, SequencerError};
use weiport_exchange::view::View;

/// How the market maker and its taker flow behave (the same for every market).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MakerSettings {
    /// Orders resting on each side.
    pub levels: u32,
    /// Distance of the best bid and ask from the mid, in basis points.
    pub spread_bps: u32,
    /// Distance between two levels of a side, in basis points.
    pub level_step_bps: u32,
    /// Quote value of one level.
    pub level_quote: Amount,
    /// The maker's holding per market, as quote value at the reference
    /// price: that much base (its inventory target) and that much quote.
    pub inventory_quote: Amount,
    /// How far the base inventory may drift from its target, in basis
    /// points of it (5000: between half and one and a half times).
    pub inventory_band_bps: u32,
    /// Standard deviation of one step of the mid's random walk, in basis points.
    pub volatility_bps: u32,
    /// Milliseconds between two ladders (one step of the walk).
    pub requote_ms: u64,
    /// Least and most milliseconds between two taker orders.
    pub flow_min_ms: u64,
    /// See `flow_min_ms`.
    pub flow_max_ms: u64,
    /// Largest quote value of one taker order.
    pub flow_quote: Amount,
}

impl Default for MakerSettings {
    fn default() -> Self {
        let amount = |text: &str| text.parse().expect("a valid default amount");
        Self {
            levels: 5,
            spread_bps: 5,
            level_step_bps: 5,
            level_quote: amount("2000"),
            inventory_quote: amount("1000000"),
            inventory_band_bps: 5000,
            volatility_bps: 8,
            requote_ms: 1000,
            flow_min_ms: 700,
            flow_max_ms: 2500,
            flow_quote: amount("1500"),
        }
    }
}

const BPS: u128 = 10_000;
const ONE: u128 = 100_000_000;

/// One market's maker: where the mid stands and the band its inventory keeps.
#[derive(Debug, Clone)]
pub struct MarketMaker {
    /// The maker's account.
    pub account: AccountId,
    /// The market it quotes.
    pub market_id: MarketId,
    market: Market,
    anchor: u128,
    mid: u128,
    /// Least base inventory.
    pub min_inventory: Amount,
    /// Most base inventory.
    pub max_inventory: Amount,
    target: u128,
    settings: MakerSettings,
}

/// What [`MarketMaker::requote`] decided: withdraw the ladder, then rest these.
#[derive(Debug, Clone)]
pub struct Ladder {
    /// Bids, best first: (price, quantity).
    pub bids: Vec<(Amount, Amount)>,
    /// Asks, best first.
    pub asks: Vec<(Amount, Amount)>,
}

impl MarketMaker {
    /// A maker for `market` around `reference`, its inventory target the
    /// base worth `settings.inventory_quote` there.
    pub fn new(
        account: AccountId,
        market_id: MarketId,
        market: &Market,
        reference: Amount,
        settings: &MakerSettings,
    ) -> Self {
        let anchor = u128::from(reference.units()).max(1);
        let target = u128::from(settings.inventory_quote.units()) * ONE / anchor;
        let band = target * u128::from(settings.inventory_band_bps.min(10_000)) / BPS;
        Self {
            account,
            market_id,
            market: market.clone(),
            anchor,
            mid: anchor,
            min_inventory: amount(target - band),
            max_inventory: amount(target + band),
            target,
            settings: settings.clone(),
        }
    }

    /// The base it starts with: its inventory target, on the market's step.
    pub fn starting_base(&self) -> Amount {
        amount(round_down(self.target, lots(&self.market)))
    }

    /// The current mid of the walk.
    pub fn mid(&self) -> Amount {
        amount(self.mid)
    }

    /// One step of the walk, pulled back towards the reference so it never
    /// wanders off (a few percent at most in practice).
    pub fn step(&mut self, rng: &mut impl Rng) {
        // Uniform on [-√3, √3]: unit variance, in millionths.
        let shock: i128 = rng.random_range(-1_732_051..=1_732_051);
        let mid = self.mid as i128;
        let moved =
            mid + mid * shock * i128::from(self.settings.volatility_bps) / 1_000_000 / 10_000;
        let pulled = moved + (self.anchor as i128 - moved) / 50;
        let floor = (self.anchor / 2).max(u128::from(self.market.min_price.units()));
        let ceiling = (self.anchor * 2).min(u128::from(self.market.max_price.units()));
        self.mid = (pulled.max(0) as u128).clamp(floor, ceiling.max(floor));
    }

    /// The ladder to rest given the maker's balances once its previous
    /// ladder is withdrawn: `base` and `quote` are what it holds.
    pub fn requote(&self, base: Amount, quote: Amount) -> Ladder {
        let s = &self.settings;
        let inventory = u128::from(base.units());
        // Leaning against the inventory: long base → lower prices, to sell.
        let band = (u128::from(self.max_inventory.units()) - self.target).max(1);
        let lean = (inventory as i128 - self.target as i128).clamp(-(band as i128), band as i128)
            * i128::from(s.spread_bps)
            / band as i128;
        let center = (self.mid as i128 - self.mid as i128 * lean / BPS as i128).max(1) as u128;
        let ticks = (self.market.min_price, self.market.tick_size);
        let mut buy_room = u128::from(self.max_inventory.units()).saturating_sub(inventory);
        let mut sell_room = inventory
            .saturating_sub(u128::from(self.min_inventory.units()))
            .min(inventory);
        let mut cash = u128::from(quote.units());
        let mut ladder = Ladder {
            bids: Vec::new(),
            asks: Vec::new(),
        };
        for level in 0..u128::from(s.levels) {
            let distance = u128::from(s.spread_bps) + level * u128::from(s.level_step_bps);
            let bid = round_down(center * (BPS - distance.min(BPS - 1)) / BPS, ticks);
            let ask = round_up(center * (BPS + distance) / BPS, ticks).max(bid + units(ticks.1));
            if let Some(quantity) = self.size(bid, buy_room.min(cash * ONE / bid.max(1))) {
                buy_room -= quantity;
                cash -= bid * quantity / ONE;
                ladder.bids.push((amount(bid), amount(quantity)));
            }
            if let Some(quantity) = self.size(ask, sell_room) {
                sell_room -= quantity;
                ladder.asks.push((amount(ask), amount(quantity)));
            }
        }
        ladder
    }

    /// One level's quantity at `price`, at most `room`, or none if what is
    /// left would not pass the market's filters.
    fn size(&self, price: u128, room: u128) -> Option<u128> {
        if price == 0 {
            return None;
        }
        let wanted = u128::from(self.settings.level_quote.units()) * ONE / price;
        let quantity = round_down(wanted.min(room), lots(&self.market));
        let fits = self.market.check_price(amount(price)).is_ok()
            && self.market.check_quantity(amount(quantity), false).is_ok()
            && self
                .market
                .check_notional(amount(price), amount(quantity))
                .is_ok();
        fits.then_some(quantity)
    }

    /// Withdraws the ladder resting now.
    pub fn withdraw(&self, time_ms: u64) -> Command {
        Command::CancelAll {
            account: self.account,
            market: self.market_id,
            time_ms,
        }
    }

    /// Rests each level of `ladder` post-only.
    pub fn orders(&self, ladder: &Ladder, time_ms: u64) -> Vec<Command> {
        let mut commands = Vec::new();
        let sides = [(Side::Buy, &ladder.bids), (Side::Sell, &ladder.asks)];
        for (side, levels) in sides {
            for &(price, quantity) in levels {
                commands.push(Command::Place {
                    account: self.account,
                    order: NewOrder {
                        market: self.market_id,
                        side,
                        order_type: OrderType::LimitMaker,
                        time_in_force: TimeInForce::Gtc,
                        quantity: Some(quantity),
                        quote_quantity: None,
                        price: Some(price),
                        client_order_id: None,
                        response_type: ResponseType::Ack,
                        stp: StpMode::ExpireBoth,
                        trigger: None,
                    },
                    time_ms,
                });
            }
        }
        commands
    }
}

/// The taker flow: market orders of random size, buying more often when it
/// holds less base than it started with and selling more often when it
/// holds more, so neither of its balances runs dry.
#[derive(Debug, Clone)]
pub struct TakerFlow {
    /// The flow's account.
    pub account: AccountId,
    market_id: MarketId,
    market: Market,
    target: u128,
    most_quote: u128,
}

impl TakerFlow {
    /// A flow on `market` that starts with `base` and spends at most
    /// `settings.flow_quote` an order.
    pub fn new(
        account: AccountId,
        market_id: MarketId,
        market: &Market,
        base: Amount,
        settings: &MakerSettings,
    ) -> Self {
        Self {
            account,
            market_id,
            market: market.clone(),
            target: u128::from(base.units()).max(1),
            most_quote: u128::from(settings.flow_quote.units()),
        }
    }

    /// The next taker order given what the flow holds and the mid, or none
    /// if no order of a valid size can be paid.
    pub fn next_order(
        &self,
        base: Amount,
        quote: Amount,
        mid: Amount,
        time_ms: u64,
        rng: &mut impl Rng,
    ) -> Option<Command> {
        let mid = u128::from(mid.units()).max(1);
        let held = u128::from(base.units());
        // 50 % at target, 10 % at double the target, 90 % when out of base.
        let lean = (held as i128 - self.target as i128) * 40 / self.target as i128;
        let buy_percent = (50 - lean).clamp(10, 90) as u32;
        let side = if rng.random_range(0..100) < buy_percent {
            Side::Buy
        } else {
            Side::Sell
        };
        // A tenth above the least notional, so rounding and a moving
        // average price never leave it below.
        let least = u128::from(self.market.min_notional.units()) * ONE / mid * 11 / 10 + 1;
        let most = (self.most_quote * ONE / mid).max(least);
        let mut quantity = rng.random_range(least..=most);
        quantity = match side {
            // Room for price moves and the fee: buy for at most 90 % of the cash.
            Side::Buy => quantity.min(u128::from(quote.units()) * 9 / 10 * ONE / mid),
            Side::Sell => quantity.min(held),
        };
        let quantity = round_down(quantity, lots(&self.market));
        let enough = match side {
            Side::Buy => quantity * mid / ONE < u128::from(quote.units()) * 9 / 10,
            Side::Sell => quantity <= held,
        };
        let valid = self.market.check_quantity(amount(quantity), true).is_ok()
            && self
                .market
                .check_notional(amount(mid), amount(quantity))
                .is_ok();
        (enough && valid).then(|| Command::Place {
            account: self.account,
            order: NewOrder {
                market: self.market_id,
                side,
                order_type: OrderType::Market,
                time_in_force: TimeInForce::Gtc,
                quantity: Some(amount(quantity)),
                quote_quantity: None,
                price: None,
                client_order_id: None,
                response_type: ResponseType::Ack,
                stp: StpMode::ExpireBoth,
                trigger: None,
            },
            time_ms,
        })
    }
}

/// What an account holds of `asset`, free and locked together.
pub fn holding(view: &View, account: AccountId, asset: AssetId) -> Amount {
    view.accounts
        .get(&account)
        .and_then(|a| a.balances.get(&asset))
        .map_or(Amount::ZERO, |(free, locked)| free.saturating_add(*locked))
}

/// Runs `maker` and `flow` against the engine behind `venue` until `stop`
/// turns true: a new ladder every `requote_ms`, a taker order every
/// `flow_min_ms`..`flow_max_ms`.
pub async fn run<V>(
    venue: Arc<V>,
    catalog: Arc<Catalog>,
    mut maker: MarketMaker,
    flow: TakerFlow,
    settings: MakerSettings,
    mut stop: watch::Receiver<bool>,
) where
    V: AsRef<Sequencer> + Send + Sync + 'static,
{
    let Some((base_asset, quote_asset)) = catalog.pair(maker.market_id) else {
        return;
    };
    let mut rng = StdRng::from_os_rng();
    let mut next_requote = tokio::time::Instant::now();
    let mut next_flow = next_requote + Duration::from_millis(settings.flow_min_ms);
    loop {
        let wake = next_requote.min(next_flow);
        tokio::select! {
            _ = stop.changed() => return,
            () = tokio::time::sleep_until(wake) => {}
        }
        if *stop.borrow() {
            return;
        }
        let sequencer: &Sequencer = (*venue).as_ref();
        let now = tokio::time::Instant::now();
        let time_ms = now_ms();
        let commands = if now >= next_requote {
            next_requote = now + Duration::from_millis(settings.requote_ms.max(1));
            maker.step(&mut rng);
            if !send(sequencer, vec![maker.withdraw(time_ms)]).await {
                return;
            }
            let (base, quote) = {
                let view = sequencer.view();
                (
                    holding(&view, maker.account, base_asset),
                    holding(&view, maker.account, quote_asset),
                )
            };
            maker.orders(&maker.requote(base, quote), time_ms)
        } else {
            let span = settings.flow_min_ms..=settings.flow_max_ms.max(settings.flow_min_ms);
            next_flow = now + Duration::from_millis(rng.random_range(span));
            let (base, quote) = {
                let view = sequencer.view();
                (
                    holding(&view, flow.account, base_asset),
                    holding(&view, flow.account, quote_asset),
                )
            };
            flow.next_order(base, quote, maker.mid(), time_ms, &mut rng)
                .into_iter()
                .collect()
        };
        if !send(sequencer, commands).await {
            return;
        }
    }
}

/// Sends `commands` in order; false once the engine has stopped. Refusals
/// (a level the book moved into, a balance too small) are expected now and
/// then and only logged. While another process leads a replicated exchange
/// its maker quotes and this one sends nothing: the maker moves with the lead.
async fn send(sequencer: &Sequencer, commands: Vec<Command>) -> bool {
    for command in commands {
        match sequencer.submit(command).await {
            Ok(outcome) => {
                if !outcome.accepted() {
                    tracing::debug!(events = ?outcome.events, "sandbox order refused");
                }
            }
            Err(SequencerError::Following | SequencerError::Deposed) => return true,
            Err(_) => return false,
        }
    }
    true
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A market's quantity grid.
fn lots(market: &Market) -> (Amount, Amount) {
    (market.min_qty, market.step_size)
}

fn units(a: Amount) -> u128 {
    u128::from(a.units())
}

fn amount(units: u128) -> Amount {
    Amount::from_units(u64::try_from(units).unwrap_or(u64::MAX))
}

/// The largest point of the grid `origin + k × step` not above `value` (0 below the grid).
fn round_down(value: u128, (origin, step): (Amount, Amount)) -> u128 {
    let (origin, step) = (units(origin), units(step).max(1));
    match value.checked_sub(origin) {
        Some(over) => origin + over / step * step,
        None => 0,
    }
}

/// The smallest point of the grid `origin + k × step` not below `value`.
fn round_up(value: u128, (origin, step): (Amount, Amount)) -> u128 {
    let (origin, step) = (units(origin), units(step).max(1));
    origin + value.saturating_sub(origin).div_ceil(step) * step
}

#[cfg(test)]
mod tests {
    use super::*;
    use weiport_exchange::engine::{Engine, Event};
    use weiport_exchange::market::tests_support::eth_usdt;

    const MAKER: AccountId = 1;
    const FLOW: AccountId = 2;

    fn a(text: &str) -> Amount {
        text.parse().unwrap()
    }

    fn maker() -> MarketMaker {
        MarketMaker::new(
            MAKER,
            MarketId(0),
            &eth_usdt(),
            a("3000"),
            &MakerSettings::default(),
        )
    }

    #[test]
    fn ladders_stay_inside_the_band_and_never_cross() {
        let maker = maker();
        let market = eth_usdt();
        let mut rng = StdRng::seed_from_u64(7);
        for _ in 0..2_000 {
            let base = Amount::from_units(rng.random_range(0..=maker.max_inventory.units() * 2));
            let quote = Amount::from_units(rng.random_range(0..=a("3000000").units()));
            let ladder = maker.requote(base, quote);
            let bought: u64 = ladder.bids.iter().map(|(_, q)| q.units()).sum();
            let sold: u64 = ladder.asks.iter().map(|(_, q)| q.units()).sum();
            assert!(base.units() + bought <= maker.max_inventory.units().max(base.units()));
            assert!(sold <= base.units().saturating_sub(maker.min_inventory.units()));
            let cost: u128 = ladder
                .bids
                .iter()
                .map(|(p, q)| units(*p) * units(*q) / ONE)
                .sum();
            assert!(cost <= units(quote));
            if let (Some(bid), Some(ask)) = (ladder.bids.first(), ladder.asks.first()) {
                assert!(bid.0 < ask.0, "{ladder:?}");
            }
            for &(price, quantity) in ladder.bids.iter().chain(&ladder.asks) {
                assert!(market.check_price(price).is_ok());
                assert!(market.check_quantity(quantity, false).is_ok());
                assert!(market.check_notional(price, quantity).is_ok());
            }
        }
        // At the target with cash, both sides are full.
        let full = maker.requote(maker.starting_base(), a("1000000"));
        assert_eq!((full.bids.len(), full.asks.len()), (5, 5));
    }

    #[test]
    fn the_walk_stays_near_its_reference() {
        let mut maker = maker();
        let mut rng = StdRng::seed_from_u64(11);
        let mut moved = false;
        for _ in 0..100_000 {
            maker.step(&mut rng);
            moved |= maker.mid() != a("3000");
            assert!(maker.mid() >= a("1500") && maker.mid() <= a("6000"));
        }
        assert!(moved);
    }

    /// Maker and flow against the real engine: first a flow that mostly
    /// sells, pushing the maker's inventory to the top of its band, then one
    /// that mostly buys, pulling it to the bottom. Every ladder order is
    /// accepted, the inventory never leaves the band, and no trade has the
    /// same account on both sides.
    #[test]
    fn maker_and_flow_trade_inside_the_band_and_never_with_themselves() {
        let catalog = Arc::new(Catalog::new(vec![eth_usdt()]));
        let (eth, usdt) = catalog.pair(MarketId(0)).unwrap();
        let mut engine = Engine::new(catalog.clone(), 0);
        let mut maker = maker();
        let settings = MakerSettings::default();
        let mut events = Vec::new();
        let funding = [
            (MAKER, eth, maker.starting_base()),
            (MAKER, usdt, settings.inventory_quote),
            (FLOW, eth, a("2000")),
            (FLOW, usdt, a("6000000")),
        ];
        for (account, asset, amount) in funding {
            let credit = Command::Credit {
                account,
                asset,
                amount,
            };
            engine.apply_into(credit, &mut events);
        }
        let held = |engine: &Engine, account, asset| {
            let (free, locked) = engine.balance(account, asset);
            free.saturating_add(locked)
        };
        let mut rng = StdRng::seed_from_u64(3);
        let (mut trades, mut lowest, mut highest) = (0, Amount::from_units(u64::MAX), Amount::ZERO);
        // A target far below what it holds makes the flow sell; far above, buy.
        for (phase, flow_target) in [a("1"), a("100000")].into_iter().enumerate() {
            let flow = TakerFlow::new(FLOW, MarketId(0), &eth_usdt(), flow_target, &settings);
            for round in 0..2_000u64 {
                let time_ms = 1_700_000_000_000 + (phase as u64 * 2_000 + round) * 1000;
                maker.step(&mut rng);
                // Withdraw first, then size the ladder on what is then held.
                events.clear();
                engine.apply_into(maker.withdraw(time_ms), &mut events);
                let ladder = maker.requote(held(&engine, MAKER, eth), held(&engine, MAKER, usdt));
                for command in maker.orders(&ladder, time_ms) {
                    events.clear();
                    engine.apply_into(command, &mut events);
                    assert!(!matches!(events[0], Event::Rejected(_)), "{events:?}");
                }
                for _ in 0..rng.random_range(0..3) {
                    let order = flow.next_order(
                        held(&engine, FLOW, eth),
                        held(&engine, FLOW, usdt),
                        maker.mid(),
                        time_ms,
                        &mut rng,
                    );
                    let Some(order) = order else { continue };
                    events.clear();
                    engine.apply_into(order, &mut events);
                    for event in &events {
                        if let Event::Trade(trade) = event {
                            trades += 1;
                            assert_ne!(trade.maker.1, trade.taker.1, "self-trade {trade:?}");
                            assert_eq!(trade.maker.1, MAKER);
                        }
                    }
                    let inventory = held(&engine, MAKER, eth);
                    assert!(
                        inventory >= maker.min_inventory && inventory <= maker.max_inventory,
                        "inventory {inventory} outside {}..{}",
                        maker.min_inventory,
                        maker.max_inventory
                    );
                    lowest = lowest.min(inventory);
                    highest = highest.max(inventory);
                }
            }
        }
        assert!(trades > 2_000, "{trades} trades");
        // Both ends of the band were reached, so the bound was what held.
        let near = a("1");
        assert!(
            highest.saturating_add(near) >= maker.max_inventory,
            "highest {highest}"
        );
        assert!(
            lowest <= maker.min_inventory.saturating_add(near),
            "lowest {lowest}"
        );
    }
}
