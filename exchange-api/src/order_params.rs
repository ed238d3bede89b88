//! A new order's parameters, single or a list's leg (`aboveType`,
//! `workingPrice`, …), read and checked against the market's filters with
//! Binance's exact errors.

use weiport_exchange::catalog::Catalog;
use weiport_exchange::market::{FilterFailure, Market, StpMode};
use weiport_exchange::now_ms;
use weiport_exchange::order::{NewOrder, OrderType, ResponseType, Side, TimeInForce, Trigger};

use crate::error::{BinanceError, Refusal};
use crate::exchange::Exchange;
use crate::params::{CLIENT_ID_RANGE, INTEGER_RANGE, Params};
use crate::ticker::five_minute_price;

impl Params {
    /// The client id sent as `name`, if any: at most 36 letters, digits,
    /// `.`, `_` and `-`, as Binance allows.
    pub(crate) fn client_id(&self, name: &'static str) -> Result<Option<String>, BinanceError> {
        match self.get(name) {
            Some(id)
                if id.len() > 36
                    || !id
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)) =>
            {
                Err(Refusal::IllegalCharacters {
                    name,
                    range: CLIENT_ID_RANGE,
                }
                .into())
            }
            id => Ok(id.map(str::to_owned)),
        }
    }

    fn not_required(&self, name: &str) -> Result<(), BinanceError> {
        match self.get(name) {
            Some(_) => Err(Refusal::NotRequired(name).into()),
            None => Ok(()),
        }
    }

    /// Validates a new order against the catalog's markets and filters.
    #[cfg(test)]
    pub(crate) fn new_order(&self, catalog: &Catalog) -> Result<NewOrder, BinanceError> {
        self.order_named(catalog, &OrderNames::SINGLE, None)
    }

    /// Validates one order of a request, its fields read under `names`
    /// (an order list's prefixed ones); `fixed` is its type when the request
    /// implies it instead of naming it.
    pub(crate) fn order_named(
        &self,
        catalog: &Catalog,
        names: &OrderNames,
        fixed: Option<OrderType>,
    ) -> Result<NewOrder, BinanceError> {
        let symbol = self.required("symbol")?;
        let (market_id, market) = catalog
            .market_id(symbol)
            .and_then(|id| Some((id, catalog.market(id)?)))
            .ok_or(Refusal::InvalidSymbol)?;
        let side = match self.required(names.side)? {
            "BUY" => Side::Buy,
            "SELL" => Side::Sell,
            _ => return Err(Refusal::InvalidSide.into()),
        };
        let order_type = match fixed {
            Some(order_type) => order_type,
            None => parse_type(self.required(names.order_type)?)?,
        };
        // Binance reads these on other order types; on these they are refused.
        self.not_required(names.iceberg)?;
        let trigger = self.trigger(order_type, market, names)?;
        let working = order_type.working();
        let time_in_force = match (working, self.get(names.time_in_force)) {
            (OrderType::Limit, None) => return Err(BinanceError::mandatory(names.time_in_force)),
            (OrderType::Limit, Some(tif)) => match tif {
                "GTC" => TimeInForce::Gtc,
                "IOC" => TimeInForce::Ioc,
                "FOK" => TimeInForce::Fok,
                _ => return Err(Refusal::InvalidTimeInForce.into()),
            },
            (_, Some(_)) => {
                return Err(Refusal::TimeInForceNotRequired.into());
            }
            (_, None) => TimeInForce::Gtc,
        };
        let quantity = self.amount(names.quantity)?;
        let quote_quantity = self.amount(names.quote_quantity)?;
        let price = self.amount(names.price)?;
        match (order_type, working) {
            (OrderType::Market, _) => {
                self.not_required(names.price)?;
                match (quantity, quote_quantity) {
                    (None, None) => {
                        return Err(Refusal::EitherOf("quantity", "quoteOrderQty").into());
                    }
                    (Some(_), Some(_)) => {
                        return Err(Refusal::NotRequired("quoteOrderQty").into());
                    }
                    (Some(q), None) => market.check_quantity(q, true).map_err(filter_failure)?,
                    (None, Some(quote)) => {
                        if quote.is_zero() {
                            return Err(filter_failure(FilterFailure::Notional));
                        }
                    }
                }
            }
            (_, OrderType::Market) => {
                // STOP_LOSS / TAKE_PROFIT: a quantity, worth the minimum at its stop.
                self.not_required(names.price)?;
                self.not_required(names.quote_quantity)?;
                let quantity = quantity.ok_or_else(|| BinanceError::mandatory(names.quantity))?;
                market
                    .check_quantity(quantity, true)
                    .map_err(filter_failure)?;
                if let Some(stop) = trigger.and_then(|t| t.stop_price) {
                    market
                        .check_notional(stop, quantity)
                        .map_err(filter_failure)?;
                }
            }
            _ => {
                self.not_required(names.quote_quantity)?;
                let quantity = quantity.ok_or_else(|| BinanceError::mandatory(names.quantity))?;
                let price = price.ok_or_else(|| BinanceError::mandatory(names.price))?;
                market.check_price(price).map_err(filter_failure)?;
                market
                    .check_quantity(quantity, false)
                    .map_err(filter_failure)?;
                market
                    .check_notional(price, quantity)
                    .map_err(filter_failure)?;
            }
        }
        let response_type = match self.get("newOrderRespType") {
            // Binance's default: FULL for MARKET and LIMIT, ACK for the rest.
            None if !matches!(order_type, OrderType::Market | OrderType::Limit) => {
                ResponseType::Ack
            }
            None => ResponseType::Full,
            Some("ACK") => ResponseType::Ack,
            Some("RESULT") => ResponseType::Result,
            Some("FULL") => ResponseType::Full,
            Some(_) => {
                return Err(Refusal::InvalidValue("newOrderRespType").into());
            }
        };
        let stp = stp(market, self.get("selfTradePreventionMode"))?;
        let client_order_id = self.client_id(names.client_order_id)?;
        Ok(NewOrder {
            market: market_id,
            side,
            order_type,
            time_in_force,
            quantity,
            quote_quantity,
            price,
            client_order_id,
            response_type,
            stp,
            trigger,
        })
    }

    /// The trigger of a conditional order: `stopPrice` (on the price grid),
    /// `trailingDelta` (within TRAILING_DELTA, one range for Binance's
    /// "above" and "below" alike), or both; refused on any other order type.
    fn trigger(
        &self,
        order_type: OrderType,
        market: &Market,
        names: &OrderNames,
    ) -> Result<Option<Trigger>, BinanceError> {
        if !order_type.is_conditional() {
            self.not_required(names.stop_price)?;
            self.not_required(names.trailing_delta)?;
            return Ok(None);
        }
        let stop_price = self.amount(names.stop_price)?;
        if let Some(stop) = stop_price {
            market.check_price(stop).map_err(filter_failure)?;
        }
        let trailing_delta = match self.get(names.trailing_delta) {
            None => None,
            Some(text) => {
                // SDKs that hold numbers as floats send "100.0".
                let whole = text.strip_suffix(".0").unwrap_or(text);
                let delta: u32 = whole.parse().map_err(|_| {
                    BinanceError::from(Refusal::IllegalCharacters {
                        name: names.trailing_delta,
                        range: INTEGER_RANGE,
                    })
                })?;
                market.check_trailing_delta(delta).map_err(filter_failure)?;
                Some(delta)
            }
        };
        if stop_price.is_none() && trailing_delta.is_none() {
            return Err(Refusal::EitherOf(names.stop_price, names.trailing_delta).into());
        }
        Ok(Some(Trigger {
            stop_price,
            trailing_delta,
        }))
    }
}

/// A new order from `params`, checked against every filter: NOTIONAL for
/// market orders included (`applyMinToMarket`: their quote amount, or their
/// quantity at the five-minute average price, as Binance does), and
/// PERCENT_PRICE_BY_SIDE for limit prices against that average.
pub(crate) fn validated_order(
    exchange: &Exchange,
    params: &Params,
) -> Result<NewOrder, BinanceError> {
    validated_order_named(exchange, params, &OrderNames::SINGLE, None)
}

/// [`validated_order`] for one order of a request, under `names` (see
/// [`Params::order_named`]).
pub(crate) fn validated_order_named(
    exchange: &Exchange,
    params: &Params,
    names: &OrderNames,
    fixed: Option<OrderType>,
) -> Result<NewOrder, BinanceError> {
    let order = params.order_named(&exchange.catalog, names, fixed)?;
    let market = exchange
        .catalog
        .market(order.market)
        .ok_or(Refusal::InvalidSymbol)?;
    let average = || five_minute_price(&exchange.sequencer.view(), order.market, now_ms()).0;
    if order.order_type == OrderType::Market {
        let notional = match (order.quote_quantity, order.quantity) {
            (Some(quote), _) => Some(quote),
            (None, Some(quantity)) => average().and_then(|price| price.checked_mul(quantity)),
            (None, None) => None,
        };
        if notional.is_some_and(|n| n < market.min_notional) {
            return Err(filter_failure(FilterFailure::Notional));
        }
    } else if let Some(price) = order.price {
        market
            .check_percent_price(price, average())
            .map_err(filter_failure)?;
    }
    Ok(order)
}

/// Where a request keeps one order's fields: plain names for a single order,
/// prefixed ones (`aboveType`, `workingPrice`, …) for an order list's. An
/// empty name is a field the request cannot carry.
pub(crate) struct OrderNames {
    /// BUY or SELL.
    pub side: &'static str,
    /// The order type.
    pub order_type: &'static str,
    /// Time in force.
    pub time_in_force: &'static str,
    /// Base quantity.
    pub quantity: &'static str,
    /// Quote quantity (MARKET only).
    pub quote_quantity: &'static str,
    /// Limit price.
    pub price: &'static str,
    /// Stop price.
    pub stop_price: &'static str,
    /// Trailing delta.
    pub trailing_delta: &'static str,
    /// Client order id.
    pub client_order_id: &'static str,
    /// Iceberg quantity (refused).
    pub iceberg: &'static str,
}

/// An order list leg's names: `prefix` + the capitalized field, e.g.
/// `names!("above")` → `aboveType`, `abovePrice`; `side` and `quantity` as
/// given (a pair shares them).
macro_rules! leg_names {
    ($prefix:literal, $side:literal, $quantity:literal) => {
        OrderNames {
            side: $side,
            order_type: concat!($prefix, "Type"),
            time_in_force: concat!($prefix, "TimeInForce"),
            quantity: $quantity,
            quote_quantity: "",
            price: concat!($prefix, "Price"),
            stop_price: concat!($prefix, "StopPrice"),
            trailing_delta: concat!($prefix, "TrailingDelta"),
            client_order_id: concat!($prefix, "ClientOrderId"),
            iceberg: concat!($prefix, "IcebergQty"),
        }
    };
}

impl OrderNames {
    /// `POST /api/v3/order`.
    pub(crate) const SINGLE: Self = Self {
        side: "side",
        order_type: "type",
        time_in_force: "timeInForce",
        quantity: "quantity",
        quote_quantity: "quoteOrderQty",
        price: "price",
        stop_price: "stopPrice",
        trailing_delta: "trailingDelta",
        client_order_id: "newClientOrderId",
        iceberg: "icebergQty",
    };
    /// An OCO's order above the market.
    pub(crate) const ABOVE: Self = leg_names!("above", "side", "quantity");
    /// An OCO's order below the market.
    pub(crate) const BELOW: Self = leg_names!("below", "side", "quantity");
    /// OTO / OTOCO: the working order.
    pub(crate) const WORKING: Self = leg_names!("working", "workingSide", "workingQuantity");
    /// OTO: the pending order.
    pub(crate) const PENDING: Self = leg_names!("pending", "pendingSide", "pendingQuantity");
    /// OTOCO: the pending pair's order above the market.
    pub(crate) const PENDING_ABOVE: Self =
        leg_names!("pendingAbove", "pendingSide", "pendingQuantity");
    /// OTOCO: the pending pair's order below the market.
    pub(crate) const PENDING_BELOW: Self =
        leg_names!("pendingBelow", "pendingSide", "pendingQuantity");
    /// Legacy `POST /api/v3/order/oco`: the limit (post-only) order.
    pub(crate) const LEGACY_LIMIT: Self = Self {
        side: "side",
        order_type: "",
        time_in_force: "",
        quantity: "quantity",
        quote_quantity: "",
        price: "price",
        stop_price: "",
        trailing_delta: "",
        client_order_id: "limitClientOrderId",
        iceberg: "limitIcebergQty",
    };
    /// Legacy `POST /api/v3/order/oco`: the stop order.
    pub(crate) const LEGACY_STOP: Self = Self {
        side: "side",
        order_type: "",
        time_in_force: "stopLimitTimeInForce",
        quantity: "quantity",
        quote_quantity: "",
        price: "stopLimitPrice",
        stop_price: "stopPrice",
        trailing_delta: "trailingDelta",
        client_order_id: "stopClientOrderId",
        iceberg: "stopIcebergQty",
    };
}

fn parse_type(text: &str) -> Result<OrderType, BinanceError> {
    Ok(match text {
        "LIMIT" => OrderType::Limit,
        "MARKET" => OrderType::Market,
        "LIMIT_MAKER" => OrderType::LimitMaker,
        "STOP_LOSS" => OrderType::StopLoss,
        "STOP_LOSS_LIMIT" => OrderType::StopLossLimit,
        "TAKE_PROFIT" => OrderType::TakeProfit,
        "TAKE_PROFIT_LIMIT" => OrderType::TakeProfitLimit,
        _ => return Err(Refusal::InvalidOrderType.into()),
    })
}

/// -1013 `Filter failure: <FILTER>`, Binance's answer to a failed filter.
pub(crate) fn filter_failure(failure: FilterFailure) -> BinanceError {
    Refusal::Filter(&failure).into()
}

fn stp(market: &Market, requested: Option<&str>) -> Result<StpMode, BinanceError> {
    let Some(text) = requested else {
        return Ok(market.default_stp);
    };
    let mode = StpMode::parse(text)
        .ok_or_else(|| BinanceError::from(Refusal::InvalidValue("selfTradePreventionMode")))?;
    if !market.allowed_stp.contains(&mode) {
        return Err(Refusal::StpNotAllowed.into());
    }
    Ok(mode)
}

#[cfg(test)]
mod tests {
    use super::*;
    use weiport_access::params::BodyKind;

    fn exchange() -> Catalog {
        Catalog::new(vec![weiport_exchange::market::tests_support::eth_usdt()])
    }

    fn order(query: &str) -> Result<NewOrder, (i32, String)> {
        Params::unchecked(query)
            .and_then(|p| p.new_order(&exchange()))
            .map_err(|e| (e.code, e.msg))
    }

    #[test]
    fn valid_orders_in_query_form_and_json() {
        let limit =
            order("symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=0.5&price=3000")
                .unwrap();
        assert_eq!(
            (limit.side, limit.order_type, limit.response_type),
            (Side::Buy, OrderType::Limit, ResponseType::Full)
        );
        assert_eq!(limit.stp, StpMode::ExpireMaker);
        let market = order("symbol=ETHUSDT&side=SELL&type=MARKET&quantity=1").unwrap();
        assert_eq!(
            (market.time_in_force, market.price),
            (TimeInForce::Gtc, None)
        );
        order("symbol=ETHUSDT&side=BUY&type=MARKET&quoteOrderQty=100").unwrap();
        let json = br#"{"symbol":"ETHUSDT","side":"SELL","type":"LIMIT_MAKER","quantity":"0.01","price":"3100.5"}"#;
        let names: &[&str] = &["symbol", "side", "type", "quantity", "price", "timestamp"];
        let maker = Params::collect("timestamp=1", json, BodyKind::Json, &[&[names]])
            .unwrap()
            .new_order(&exchange())
            .unwrap();
        assert_eq!(
            (maker.order_type, maker.response_type),
            (OrderType::LimitMaker, ResponseType::Ack)
        );
    }

    #[test]
    fn conditional_orders_carry_their_trigger_and_default_to_ack() {
        let stop = order(
            "symbol=ETHUSDT&side=SELL&type=STOP_LOSS_LIMIT&timeInForce=GTC&quantity=1&price=2900&stopPrice=2950&trailingDelta=250",
        )
        .unwrap();
        assert_eq!(
            (stop.order_type, stop.response_type, stop.price),
            (
                OrderType::StopLossLimit,
                ResponseType::Ack,
                Some("2900".parse().unwrap())
            )
        );
        assert_eq!(
            stop.trigger,
            Some(Trigger {
                stop_price: Some("2950".parse().unwrap()),
                trailing_delta: Some(250),
            })
        );
        let trailing =
            order("symbol=ETHUSDT&side=BUY&type=TAKE_PROFIT&quantity=1&trailingDelta=100").unwrap();
        assert_eq!(
            (trailing.price, trailing.trigger.unwrap().stop_price),
            (None, None)
        );
    }

    #[test]
    fn refusals_carry_binance_codes() {
        let cases = [
            (
                "side=BUY",
                -1102,
                "Mandatory parameter 'symbol' was not sent, was empty/null, or malformed.",
            ),
            (
                "symbol=BTCUSDT&side=BUY&type=LIMIT",
                -1121,
                "Invalid symbol.",
            ),
            ("symbol=ETHUSDT&side=UP&type=LIMIT", -1117, "Invalid side."),
            (
                "symbol=ETHUSDT&side=BUY&type=ICEBERG",
                -1116,
                "Invalid orderType.",
            ),
            (
                "symbol=ETHUSDT&side=BUY&type=LIMIT&quantity=1&price=3000",
                -1102,
                "Mandatory parameter 'timeInForce' was not sent, was empty/null, or malformed.",
            ),
            (
                "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=DAY&quantity=1&price=3000",
                -1115,
                "Invalid timeInForce.",
            ),
            (
                "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&price=3000",
                -1102,
                "Mandatory parameter 'quantity' was not sent, was empty/null, or malformed.",
            ),
            (
                "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=1",
                -1102,
                "Mandatory parameter 'price' was not sent, was empty/null, or malformed.",
            ),
            (
                "symbol=ETHUSDT&side=BUY&type=MARKET",
                -1102,
                "Param 'quantity' or 'quoteOrderQty' must be sent, but both were empty/null!",
            ),
            (
                "symbol=ETHUSDT&side=BUY&type=MARKET&quantity=1&price=3",
                -1106,
                "Parameter 'price' sent when not required.",
            ),
            (
                "symbol=ETHUSDT&side=BUY&type=MARKET&quantity=1&timeInForce=GTC",
                -1114,
                "TimeInForce parameter sent when not required.",
            ),
            (
                "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=1&price=3000.001",
                -1013,
                "Filter failure: PRICE_FILTER",
            ),
            (
                "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=0.00005&price=3000",
                -1013,
                "Filter failure: LOT_SIZE",
            ),
            (
                "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=0.001&price=3000",
                -1013,
                "Filter failure: NOTIONAL",
            ),
            (
                "symbol=ETHUSDT&side=BUY&type=MARKET&quantity=2000",
                -1013,
                "Filter failure: MARKET_LOT_SIZE",
            ),
            (
                "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=1.000000001&price=3000",
                -1111,
                "Parameter 'quantity' has too much precision.",
            ),
            (
                "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=1e3&price=3000",
                -1100,
                "Illegal characters found in parameter 'quantity'; legal range is '^([0-9]{1,20})(\\.[0-9]{1,20})?$'.",
            ),
            (
                "symbol=ETHUSDT&side=BUY&type=STOP_LOSS&quantity=1",
                -1102,
                "Param 'stopPrice' or 'trailingDelta' must be sent, but both were empty/null!",
            ),
            (
                "symbol=ETHUSDT&side=BUY&type=TAKE_PROFIT_LIMIT&quantity=1&stopPrice=3000",
                -1102,
                "Mandatory parameter 'timeInForce' was not sent, was empty/null, or malformed.",
            ),
            (
                "symbol=ETHUSDT&side=BUY&type=STOP_LOSS&quantity=1&stopPrice=3000&price=3000",
                -1106,
                "Parameter 'price' sent when not required.",
            ),
            (
                "symbol=ETHUSDT&side=SELL&type=STOP_LOSS_LIMIT&timeInForce=GTC&quantity=1&price=3000&trailingDelta=5",
                -1013,
                "Filter failure: TRAILING_DELTA",
            ),
            (
                "symbol=ETHUSDT&side=SELL&type=STOP_LOSS_LIMIT&timeInForce=GTC&quantity=1&price=3000&trailingDelta=1.5",
                -1100,
                "Illegal characters found in parameter 'trailingDelta'; legal range is '^[0-9]{1,20}$'.",
            ),
            (
                "symbol=ETHUSDT&side=SELL&type=STOP_LOSS&quantity=1&stopPrice=3000.001",
                -1013,
                "Filter failure: PRICE_FILTER",
            ),
            (
                "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=1&price=3000&stopPrice=2900",
                -1106,
                "Parameter 'stopPrice' sent when not required.",
            ),
            (
                "symbol=ETHUSDT&side=BUY&type=MARKET&quantity=1&selfTradePreventionMode=TRANSFER",
                -1130,
                "Data sent for parameter 'selfTradePreventionMode' is not valid.",
            ),
            (
                "symbol=ETHUSDT&symbol=ETHUSDT&side=BUY",
                -1101,
                "Duplicate values for a parameter detected.",
            ),
        ];
        for (query, code, msg) in cases {
            assert_eq!(order(query), Err((code, msg.to_owned())), "{query}");
        }
    }
}
