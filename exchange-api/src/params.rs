//! New-order parameters as Binance clients send them (query, form or JSON
//! body), checked against the market's filters with Binance's exact errors.

use weiport_access::params::{self, BodyKind};
use weiport_exchange::amount::{Amount, AmountError};
use weiport_exchange::catalog::Catalog;
use weiport_exchange::market::{FilterFailure, Market, StpMode};
use weiport_exchange::order::{NewOrder, OrderType, ResponseType, Side, TimeInForce, Trigger};

use crate::error::BinanceError;

/// Request parameters by name, from the query string and the body.
pub struct Params {
    /// Every kept name and value, decoded, one after another: one buffer
    /// however many parameters a request carries, checked text once.
    text: Text,
    /// Where each name and value ends in `text`; a name starts where the
    /// previous value ended.
    ends: smallvec::SmallVec<[Ends; 16]>,
    /// A bit per kept name's [`name_bit`]: most names an endpoint asks for
    /// were not sent, and are answered without a walk.
    names: u64,
}

/// A name's bit in [`Params::names`], from its length and its last byte.
fn name_bit(name: &str) -> u64 {
    let last = name.as_bytes().last().copied().unwrap_or(0);
    1 << ((name.len() * 7 + usize::from(last)) % 64)
}

/// Room for the text of nearly every request (an order with a client
/// order id holds about 160 bytes) without an allocation.
const INLINE_TEXT: usize = 192;

/// Text kept inline up to [`INLINE_TEXT`] bytes, on the heap beyond.
enum Text {
    Inline(arrayvec::ArrayString<INLINE_TEXT>),
    Heap(String),
}

impl Text {
    fn push(&mut self, more: &str) {
        match self {
            Self::Inline(inline) => {
                if inline.try_push_str(more).is_err() {
                    let mut heap = String::with_capacity(2 * (inline.len() + more.len()));
                    heap.push_str(inline);
                    heap.push_str(more);
                    *self = Self::Heap(heap);
                }
            }
            Self::Heap(heap) => heap.push_str(more),
        }
    }

    fn as_str(&self) -> &str {
        match self {
            Self::Inline(inline) => inline,
            Self::Heap(heap) => heap,
        }
    }
}

/// The ends of one parameter's name and value in [`Params::text`].
#[derive(Clone, Copy)]
struct Ends {
    name: usize,
    value: usize,
}

impl Params {
    /// Collects parameters from a raw query and a form or JSON body. A
    /// parameter sent twice is refused (-1101), and so is one the endpoint
    /// does not read (-1104, Binance's rule): a signature then covers
    /// exactly what is acted on, and nothing is silently ignored. `accepted`
    /// lists the names the endpoint reads, as lists of groups (`signature`
    /// is always read).
    pub fn parse(
        query: &str,
        body: &[u8],
        kind: BodyKind,
        accepted: &[&[&[&str]]],
    ) -> Result<Self, BinanceError> {
        let mut params = Self {
            text: Text::Inline(arrayvec::ArrayString::new()),
            ends: smallvec::SmallVec::new(),
            names: 0,
        };
        let (mut count, mut unread) = (0, 0);
        let mut duplicate = false;
        params::visit(query, body, kind, |name, value| {
            count += 1;
            // A refusal of the walk itself, later in the text, still wins.
            if duplicate {
                return;
            }
            if params.sent(&name).is_some() || (name == "signature" && value.is_empty()) {
                duplicate = true;
                return;
            }
            if name == "signature" {
                return;
            }
            if !accepted
                .iter()
                .flat_map(|groups| groups.iter())
                .any(|group| group.contains(&&*name))
            {
                unread += 1;
            }
            params.names |= name_bit(&name);
            params.text.push(&name);
            let name = params.text.as_str().len();
            params.text.push(&value);
            params.ends.push(Ends {
                name,
                value: params.text.as_str().len(),
            });
        })
        .map_err(|e| BinanceError::from(&e))?;
        if duplicate {
            return Err(BinanceError::bad(
                -1101,
                "Duplicate values for a parameter detected.",
            ));
        }
        if unread > 0 {
            return Err(BinanceError::bad(
                -1104,
                format!(
                    "Not all sent parameters were read; read '{}' parameter(s) but was sent '{count}'.",
                    count - unread
                ),
            ));
        }
        Ok(params)
    }

    /// Every kept parameter, in the order sent.
    #[cfg(test)]
    fn pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        let text = self.text.as_str();
        let mut start = 0;
        self.ends.iter().map(move |ends| {
            let name = &text[start..ends.name];
            start = ends.value;
            (name, &text[ends.name..ends.value])
        })
    }

    /// Parameters of a query string without checking which are read (tests).
    #[cfg(test)]
    pub(crate) fn unchecked(query: &str) -> Result<Self, BinanceError> {
        let names: Vec<String> = params::parse(query, b"", BodyKind::Form)
            .map_err(|e| BinanceError::from(&e))?
            .into_iter()
            .map(|(name, _)| name.into_owned())
            .collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        Self::parse(query, b"", BodyKind::Form, &[&[&names]])
    }

    /// A parameter's value; empty counts as absent.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.sent(name).filter(|v| !v.is_empty())
    }

    /// A parameter's value as sent, empty or not. Names are compared as
    /// bytes: only the value found is cut out of the text.
    fn sent(&self, name: &str) -> Option<&str> {
        if self.names & name_bit(name) == 0 {
            return None;
        }
        let text = self.text.as_str();
        let mut start = 0;
        for ends in &self.ends {
            if text.as_bytes()[start..ends.name] == *name.as_bytes() {
                return Some(&text[ends.name..ends.value]);
            }
            start = ends.value;
        }
        None
    }

    pub(crate) fn required(&self, name: &str) -> Result<&str, BinanceError> {
        self.get(name).ok_or_else(|| BinanceError::mandatory(name))
    }

    pub(crate) fn amount(&self, name: &str) -> Result<Option<Amount>, BinanceError> {
        let Some(text) = self.get(name) else {
            return Ok(None);
        };
        text.parse().map(Some).map_err(|e| match e {
            AmountError::TooPrecise => BinanceError::bad(-1111, format!("Parameter '{name}' has too much precision.")),
            AmountError::Overflow => BinanceError::bad(-1108, format!("Parameter '{name}' overflowed.")),
            AmountError::Syntax => BinanceError::bad(
                -1100,
                format!("Illegal characters found in parameter '{name}'; legal range is '^([0-9]{{1,20}})(\\.[0-9]{{1,20}})?$'."),
            ),
        })
    }

    fn not_required(&self, name: &str) -> Result<(), BinanceError> {
        match self.get(name) {
            Some(_) => Err(BinanceError::bad(
                -1106,
                format!("Parameter '{name}' sent when not required."),
            )),
            None => Ok(()),
        }
    }

    /// Validates a new order against the catalog's markets and filters.
    #[cfg(test)]
    pub fn new_order(&self, catalog: &Catalog) -> Result<NewOrder, BinanceError> {
        self.order_named(catalog, &OrderNames::SINGLE, None)
    }

    /// Validates one order of a request, its fields read under `names`
    /// (an order list's prefixed ones); `fixed` is its type when the request
    /// implies it instead of naming it.
    pub fn order_named(
        &self,
        catalog: &Catalog,
        names: &OrderNames,
        fixed: Option<OrderType>,
    ) -> Result<NewOrder, BinanceError> {
        let symbol = self.required("symbol")?;
        let (market_id, market) = catalog
            .market_id(symbol)
            .and_then(|id| Some((id, catalog.market(id)?)))
            .ok_or_else(|| BinanceError::bad(-1121, "Invalid symbol."))?;
        let side = match self.required(names.side)? {
            "BUY" => Side::Buy,
            "SELL" => Side::Sell,
            _ => return Err(BinanceError::bad(-1117, "Invalid side.")),
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
                _ => return Err(BinanceError::bad(-1115, "Invalid timeInForce.")),
            },
            (_, Some(_)) => {
                return Err(BinanceError::bad(
                    -1114,
                    "TimeInForce parameter sent when not required.",
                ));
            }
            (_, None) => TimeInForce::Gtc,
        };
        let quantity = self.amount(names.quantity)?;
        let quote_quantity = self.amount(names.quote_quantity)?;
        let price = self.amount(names.price)?;
        match (order_type, working) {
            (OrderType::Market, _) => {
                self.not_required("price")?;
                match (quantity, quote_quantity) {
                    (None, None) => {
                        return Err(BinanceError::bad(
                            -1102,
                            "Param 'quantity' or 'quoteOrderQty' must be sent, but both were empty/null!",
                        ));
                    }
                    (Some(_), Some(_)) => {
                        return Err(BinanceError::bad(
                            -1106,
                            "Parameter 'quoteOrderQty' sent when not required.",
                        ));
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
                return Err(BinanceError::bad(
                    -1130,
                    "Data sent for parameter 'newOrderRespType' is not valid.",
                ));
            }
        };
        let stp = stp(market, self.get("selfTradePreventionMode"))?;
        let client_order_id = match self.get(names.client_order_id) {
            Some(id)
                if id.len() > 36
                    || !id
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)) =>
            {
                return Err(BinanceError::bad(
                    -1100,
                    format!(
                        "Illegal characters found in parameter '{}'; legal range is '^[\\.A-Z\\:/a-z0-9_-]{{1,36}}$'.",
                        names.client_order_id
                    ),
                ));
            }
            id => id.map(str::to_owned),
        };
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
                    BinanceError::bad(
                        -1100,
                        format!(
                            "Illegal characters found in parameter '{}'; legal range is '^[0-9]{{1,20}}$'.",
                            names.trailing_delta
                        ),
                    )
                })?;
                market.check_trailing_delta(delta).map_err(filter_failure)?;
                Some(delta)
            }
        };
        if stop_price.is_none() && trailing_delta.is_none() {
            return Err(BinanceError::bad(
                -1102,
                format!(
                    "Param '{}' or '{}' must be sent, but both were empty/null!",
                    names.stop_price, names.trailing_delta
                ),
            ));
        }
        Ok(Some(Trigger {
            stop_price,
            trailing_delta,
        }))
    }
}

/// Where a request keeps one order's fields: plain names for a single order,
/// prefixed ones (`aboveType`, `workingPrice`, …) for an order list's. An
/// empty name is a field the request cannot carry.
pub struct OrderNames {
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
    pub const SINGLE: Self = Self {
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
    pub const ABOVE: Self = leg_names!("above", "side", "quantity");
    /// An OCO's order below the market.
    pub const BELOW: Self = leg_names!("below", "side", "quantity");
    /// OTO / OTOCO: the working order.
    pub const WORKING: Self = leg_names!("working", "workingSide", "workingQuantity");
    /// OTO: the pending order.
    pub const PENDING: Self = leg_names!("pending", "pendingSide", "pendingQuantity");
    /// OTOCO: the pending pair's order above the market.
    pub const PENDING_ABOVE: Self = leg_names!("pendingAbove", "pendingSide", "pendingQuantity");
    /// OTOCO: the pending pair's order below the market.
    pub const PENDING_BELOW: Self = leg_names!("pendingBelow", "pendingSide", "pendingQuantity");
    /// Legacy `POST /api/v3/order/oco`: the limit (post-only) order.
    pub const LEGACY_LIMIT: Self = Self {
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
    pub const LEGACY_STOP: Self = Self {
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
        _ => return Err(BinanceError::bad(-1116, "Invalid orderType.")),
    })
}

/// -1013 `Filter failure: <FILTER>`, Binance's answer to a failed filter.
pub(crate) fn filter_failure(failure: FilterFailure) -> BinanceError {
    BinanceError::bad(-1013, format!("Filter failure: {failure}"))
}

fn stp(market: &Market, requested: Option<&str>) -> Result<StpMode, BinanceError> {
    let Some(text) = requested else {
        return Ok(market.default_stp);
    };
    let mode = StpMode::parse(text).ok_or_else(|| {
        BinanceError::bad(
            -1130,
            "Data sent for parameter 'selfTradePreventionMode' is not valid.",
        )
    })?;
    if !market.allowed_stp.contains(&mode) {
        return Err(BinanceError::bad(
            -1013,
            "This symbol does not allow the specified self-trade prevention mode.",
        ));
    }
    Ok(mode)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exchange() -> Catalog {
        Catalog::new(vec![weiport_exchange::market::tests_support::eth_usdt()])
    }

    fn order(query: &str) -> Result<NewOrder, (i32, String)> {
        Params::unchecked(query)
            .and_then(|p| p.new_order(&exchange()))
            .map_err(|e| (e.code, e.msg))
    }

    #[test]
    fn every_parameter_reads_back_from_query_and_body_alike() {
        let long = "x".repeat(120);
        let query = format!("symbol=ETHUSDT&newClientOrderId={long}&empty=&a%20b=c%2Bd+e");
        let body = "side=SELL&quantity=0.5&recvWindow=5000&n%C3%A9=%C3%A9t%C3%A9&signature=ab";
        let names: &[&str] = &[
            "symbol",
            "newClientOrderId",
            "empty",
            "a b",
            "side",
            "quantity",
            "recvWindow",
            "n\u{e9}",
        ];
        let params = Params::parse(&query, body.as_bytes(), BodyKind::Form, &[&[names]]).unwrap();
        let read: Vec<_> = params.pairs().collect();
        assert_eq!(
            read,
            [
                ("symbol", "ETHUSDT"),
                ("newClientOrderId", long.as_str()),
                ("empty", ""),
                ("a b", "c+d e"),
                ("side", "SELL"),
                ("quantity", "0.5"),
                ("recvWindow", "5000"),
                ("n\u{e9}", "\u{e9}t\u{e9}"),
            ]
        );
        assert_eq!(params.get("a b"), Some("c+d e"));
        assert_eq!(params.get("empty"), None, "empty counts as absent");
        assert_eq!(
            params.get("signature"),
            None,
            "the signature is not a parameter"
        );
        assert_eq!(params.get("missing"), None);
        let json = r#"{"symbol":"ETHUSDT","quantity":"0.5","recvWindow":5000}"#;
        let params = Params::parse("", json.as_bytes(), BodyKind::Json, &[&[names]]).unwrap();
        assert_eq!(params.get("quantity"), Some("0.5"));
        assert_eq!(params.get("recvWindow"), Some("5000"));
        assert_eq!(params.get("symbol"), Some("ETHUSDT"));
    }

    #[test]
    fn a_refused_text_wins_over_a_duplicate_or_unread_parameter_before_it() {
        let names: &[&str] = &["a"];
        let code = |query: &str, body: &str, kind| {
            Params::parse(query, body.as_bytes(), kind, &[&[names]])
                .err()
                .map(|error| (error.code, error.msg))
        };
        let nameless = Some((-1100, "Illegal characters found in a parameter.".into()));
        assert_eq!(code("a=1&a=2&=5", "", BodyKind::Form), nameless);
        assert_eq!(code("a=1&a=2", "b=1&x", BodyKind::Form), nameless);
        assert_eq!(code("a=1&b=2", "=5", BodyKind::Form), nameless);
        assert_eq!(code("a=1", r#"{"a":"#, BodyKind::Json).unwrap().0, -1135);
        assert_eq!(code("a=1&a=2", "b=1", BodyKind::Form).unwrap().0, -1101);
        assert_eq!(code("a=1", r#"{"a":2}"#, BodyKind::Json).unwrap().0, -1101);
        assert_eq!(
            code("a=1&b=2", "c=3&signature=ab", BodyKind::Form),
            Some((
                -1104,
                "Not all sent parameters were read; read '2' parameter(s) but was sent '4'.".into()
            ))
        );
        let many = "a=1&".repeat(params::MAX_PARAMS);
        let too_many = Some((
            -1101,
            format!(
                "Too many parameters; expected '{}' and received '65'.",
                params::MAX_PARAMS
            ),
        ));
        assert_eq!(code(&many, "a=2", BodyKind::Form), too_many);
        assert_eq!(code(&many, r#"{"b":1}"#, BodyKind::Json), too_many);
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
        let maker = Params::parse("timestamp=1", json, BodyKind::Json, &[&[names]])
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
