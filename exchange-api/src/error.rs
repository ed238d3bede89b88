//! Binance's error shape, `{"code": -1121, "msg": "Invalid symbol."}`, with
//! the HTTP statuses the service promises: 401 for authentication, 429 for
//! limits, 418 for bans, 400 for bad requests.

use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use weiport_access::params::{MAX_PARAMS, ParamError};
use weiport_access::{AccessError, Face, Usage};
use weiport_exchange::engine::Reject;

/// A handler's answer: the response, or a refusal in Binance's shape.
pub(crate) type Answer = Result<Response, BinanceError>;

/// A Binance-shaped refusal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BinanceError {
    /// HTTP status.
    pub status: StatusCode,
    /// Binance error code.
    pub code: i32,
    /// Binance message.
    pub msg: String,
}

impl BinanceError {
    /// A refusal with `status`, `code` and `msg`.
    fn new(status: StatusCode, code: i32, msg: impl Into<String>) -> Self {
        Self {
            status,
            code,
            msg: msg.into(),
        }
    }

    /// HTTP 400 with `code` and `msg`.
    fn bad(code: i32, msg: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, msg)
    }

    /// -1102 for a missing or malformed mandatory parameter.
    pub(crate) fn mandatory(name: &str) -> Self {
        Refusal::Mandatory(name).into()
    }

    /// 503 -1001: the engine or storage failed (logged where it happened).
    pub(crate) fn unavailable() -> Self {
        Refusal::Unavailable.into()
    }
}

/// Every refusal the Binance face gives of its own, by what was wrong: the
/// one table of their codes, statuses and messages (the access layer's and
/// the engine's refusals are mapped below, the parameter walk's in
/// [`From<&ParamError>`]).
#[derive(Clone, Copy)]
pub(crate) enum Refusal<'a> {
    /// 401 -2015: no key, a key without the permission, or an address off its list.
    Unauthorized,
    /// 401 -1002: the WebSocket API's session is not authenticated.
    NotAuthorized,
    /// 503 -1001: the server could not do its part (engine or storage).
    Unavailable,
    /// -1000: an unknown error (a plain HTTP request on a WebSocket route).
    Unknown(&'a str),
    /// -1020: the server does not offer this (no wallet, unknown method).
    Unsupported,
    /// -1100: a parameter's text is outside its legal range.
    IllegalCharacters {
        /// The parameter.
        name: &'a str,
        /// Its legal range, as Binance writes it.
        range: &'static str,
    },
    /// -1100: a WebSocket API request that is not JSON.
    NotJson,
    /// -1101: a parameter sent twice.
    Duplicate,
    /// -1102: a mandatory parameter missing, empty or malformed.
    Mandatory(&'a str),
    /// -1102: neither of two alternative parameters sent.
    EitherOf(&'a str, &'a str),
    /// -1104: parameters the endpoint does not read.
    NotAllRead {
        /// Parameters read.
        read: usize,
        /// Parameters sent.
        sent: usize,
    },
    /// -1104: parameters a WebSocket API method does not read.
    NotAllReadWs,
    /// -1106: a parameter sent that the order's type does not take.
    NotRequired(&'a str),
    /// -1108: a number too large.
    Overflowed(&'a str),
    /// -1111: an amount with more decimals than the market takes.
    TooPrecise(&'a str),
    /// -1114: `timeInForce` for an order type that has none.
    TimeInForceNotRequired,
    /// -1115: an unknown `timeInForce`.
    InvalidTimeInForce,
    /// -1116: an unknown order type.
    InvalidOrderType,
    /// -1117: an unknown side.
    InvalidSide,
    /// -1120: an unknown kline interval.
    InvalidInterval,
    /// -1121: an unknown symbol.
    InvalidSymbol,
    /// -1125: an unknown or expired listen key.
    UnknownListenKey,
    /// -1127: a window of more than a day.
    WindowOverDay,
    /// -1128: optional parameters that may not be combined.
    BadCombination,
    /// -1130: a parameter's value is not one it takes.
    InvalidValue(&'a str),
    /// -1139: an unknown ticker type.
    InvalidTickerType,
    /// -1145: an unknown `cancelRestrictions`.
    InvalidCancelRestrictions,
    /// -1151: a symbol listed twice.
    SymbolTwice,
    /// -1194: a `timeUnit` other than MICROSECOND or MILLISECOND.
    InvalidTimeUnit,
    /// -1013: a market filter failed.
    Filter(&'a dyn std::fmt::Display),
    /// -1013: a self-trade prevention mode the market does not allow.
    StpNotAllowed,
    /// -1013: a withdrawal outside the coin's minimum and maximum.
    WithdrawalAmount {
        /// Smallest withdrawal.
        min: &'a dyn std::fmt::Display,
        /// Largest withdrawal.
        max: &'a dyn std::fmt::Display,
    },
    /// -1014: an order list of an unsupported shape.
    UnsupportedCombination,
    /// -2010: an order list's prices in the wrong order.
    ListPrices,
    /// -2011: no open order matches (cancel).
    UnknownOrder,
    /// -2011: the cancel's restrictions kept the order.
    CancelRestricted,
    /// -2013: no order matches (query).
    NoSuchOrder,
    /// -2013: no order list matches.
    NoSuchOrderList,
    /// -1130: no kept snapshot of reserves has the sequence asked for (or
    /// none was taken yet).
    NoSuchSnapshot,
    /// -2038: no open order matches (amend).
    UnknownOrderToAmend,
    /// -2038: amending one order of an OCO pair.
    AmendInPair,
    /// -4056: an HMAC key where the WebSocket API's session needs Ed25519.
    HmacSession,
}

impl From<Refusal<'_>> for BinanceError {
    fn from(refusal: Refusal<'_>) -> Self {
        use Refusal as R;
        match refusal {
            R::Unauthorized => Self::new(
                StatusCode::UNAUTHORIZED,
                -2015,
                "Invalid API-key, IP, or permissions for action.",
            ),
            R::NotAuthorized => Self::new(
                StatusCode::UNAUTHORIZED,
                -1002,
                "You are not authorized to execute this request.",
            ),
            R::Unavailable => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                -1001,
                "Internal error; unable to process your request. Please try again.",
            ),
            R::Unknown(msg) => Self::bad(-1000, msg),
            R::Unsupported => Self::bad(-1020, "This operation is not supported."),
            R::IllegalCharacters { name, range } => Self::bad(
                -1100,
                format!(
                    "Illegal characters found in parameter '{name}'; legal range is '{range}'."
                ),
            ),
            R::NotJson => Self::bad(-1100, "Malformed request: not JSON."),
            R::Duplicate => Self::bad(-1101, "Duplicate values for a parameter detected."),
            R::Mandatory(name) => Self::bad(
                -1102,
                format!("Mandatory parameter '{name}' was not sent, was empty/null, or malformed."),
            ),
            R::EitherOf(first, second) => Self::bad(
                -1102,
                format!("Param '{first}' or '{second}' must be sent, but both were empty/null!"),
            ),
            R::NotAllRead { read, sent } => Self::bad(
                -1104,
                format!(
                    "Not all sent parameters were read; read '{read}' parameter(s) but was sent '{sent}'."
                ),
            ),
            R::NotAllReadWs => Self::bad(-1104, "Not all sent parameters were read."),
            R::NotRequired(name) => {
                Self::bad(-1106, format!("Parameter '{name}' sent when not required."))
            }
            R::Overflowed(name) => Self::bad(-1108, format!("Parameter '{name}' overflowed.")),
            R::TooPrecise(name) => {
                Self::bad(-1111, format!("Parameter '{name}' has too much precision."))
            }
            R::TimeInForceNotRequired => {
                Self::bad(-1114, "TimeInForce parameter sent when not required.")
            }
            R::InvalidTimeInForce => Self::bad(-1115, "Invalid timeInForce."),
            R::InvalidOrderType => Self::bad(-1116, "Invalid orderType."),
            R::InvalidSide => Self::bad(-1117, "Invalid side."),
            R::InvalidInterval => Self::bad(-1120, "Invalid interval."),
            R::InvalidSymbol => Self::bad(-1121, "Invalid symbol."),
            R::UnknownListenKey => Self::bad(-1125, "This listenKey does not exist."),
            R::WindowOverDay => {
                Self::bad(-1127, "More than 24 hours between startTime and endTime.")
            }
            R::BadCombination => Self::bad(-1128, "Combination of optional parameters invalid."),
            R::InvalidValue(name) => Self::bad(
                -1130,
                format!("Data sent for parameter '{name}' is not valid."),
            ),
            R::InvalidTickerType => Self::bad(-1139, "Invalid ticker type."),
            R::InvalidCancelRestrictions => Self::bad(-1145, "Invalid cancelRestrictions"),
            R::SymbolTwice => Self::bad(-1151, "Symbol is present multiple times in the list."),
            R::InvalidTimeUnit => Self::bad(
                -1194,
                "Invalid value for time unit; expected either MICROSECOND or MILLISECOND.",
            ),
            R::Filter(failure) => Self::bad(-1013, format!("Filter failure: {failure}")),
            R::StpNotAllowed => Self::bad(
                -1013,
                "This symbol does not allow the specified self-trade prevention mode.",
            ),
            R::WithdrawalAmount { min, max } => Self::bad(
                -1013,
                format!("The withdrawal amount must be between {min} and {max}."),
            ),
            R::UnsupportedCombination => Self::bad(-1014, "Unsupported order combination."),
            R::ListPrices => Self::bad(
                -2010,
                "The relationship of the prices for the orders is not correct.",
            ),
            R::UnknownOrder => Self::bad(-2011, "Unknown order sent."),
            R::CancelRestricted => {
                Self::bad(-2011, "Order was not canceled due to cancel restrictions.")
            }
            R::NoSuchOrder => Self::bad(-2013, "Order does not exist."),
            R::NoSuchOrderList => Self::bad(-2013, "Order list does not exist."),
            R::NoSuchSnapshot => Self::bad(
                -1130,
                "No snapshot of reserves is kept for this sequence (or none was taken yet).",
            ),
            R::UnknownOrderToAmend => Self::bad(-2038, "Unknown order sent."),
            R::AmendInPair => Self::bad(
                -2038,
                "Order amend of one order of an OCO pair is not supported.",
            ),
            R::HmacSession => Self::bad(-4056, "HMAC_SHA256 API key is not supported."),
        }
    }
}

/// The engine's refusals as Binance words them.
impl From<Reject> for BinanceError {
    fn from(reject: Reject) -> Self {
        let (code, msg) = match reject {
            Reject::UnknownSymbol => (-1121, "Invalid symbol."),
            Reject::UnknownAsset => (-1130, "Data sent for parameter 'asset' is not valid."),
            Reject::InsufficientBalance => (
                -2010,
                "Account has insufficient balance for requested action.",
            ),
            Reject::WouldTake => (-2010, "Order would immediately match and take."),
            Reject::UnknownOrder => (-2011, "Unknown order sent."),
            Reject::DuplicateClientOrderId => (-2010, "Duplicate order sent."),
            Reject::TooManyOrders => (-2010, "Filter failure: MAX_NUM_ORDERS"),
            Reject::Overflow => (-1108, "Parameter 'quantity' overflowed."),
            Reject::OffGrid => (-1013, "Filter failure: LOT_SIZE"),
            Reject::WouldTrigger => (-2010, "Order would trigger immediately."),
            Reject::TooManyAlgoOrders => (-2010, "Filter failure: MAX_NUM_ALGO_ORDERS"),
            Reject::BadList => (-1014, "Unsupported order combination."),
            Reject::AmendIncrease => (-2038, "Order amend (quantity increase) is not supported."),
            Reject::AmendNoChange => (
                -2038,
                "The requested action would change no state; rejecting",
            ),
            Reject::BadTrigger => (
                -1102,
                "Mandatory parameter 'stopPrice' was not sent, was empty/null, or malformed.",
            ),
            // Chain commands come from the wallet, never from a request's
            // parameters; a refusal of one is the server's own state.
            Reject::DepositCredited
            | Reject::UnknownWithdrawal
            | Reject::DepositAddressAssigned => (
                -1000,
                "An unknown error occurred while processing the request.",
            ),
        };
        Self::bad(code, msg)
    }
}

impl From<&AccessError> for BinanceError {
    fn from(error: &AccessError) -> Self {
        use AccessError as E;
        let unauthorized = StatusCode::UNAUTHORIZED;
        match error {
            E::MissingApiKey | E::MalformedApiKey => {
                Self::new(unauthorized, -2014, "API-key format invalid.")
            }
            E::InvalidApiKey | E::IpNotAllowed | E::PermissionDenied(_) => Self::new(
                unauthorized,
                -2015,
                "Invalid API-key, IP, or permissions for action.",
            ),
            E::InvalidSignature => Self::new(
                unauthorized,
                -1022,
                "Signature for this request is not valid.",
            ),
            E::MissingParameter(name) | E::MalformedParameter(name) => Self::mandatory(name),
            E::DuplicateParameter => Self::bad(-1101, "Duplicate values for a parameter detected."),
            E::MalformedRequest(error) => Self::from(error),
            E::BodyTooLarge => Self::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                -1000,
                "The request body is too large.",
            ),
            E::BodyTimeout => Self::new(
                StatusCode::REQUEST_TIMEOUT,
                -1007,
                "Timeout waiting for the request body.",
            ),
            E::RecvWindowTooLarge => Self::bad(-1131, "recvWindow must be less than 60000"),
            E::TimestampOutsideRecvWindow => Self::bad(
                -1021,
                "Timestamp for this request is outside of the recvWindow.",
            ),
            E::TimestampAhead => Self::bad(
                -1021,
                "Timestamp for this request was 1000ms ahead of the server's time.",
            ),
            E::TooMuchWeight { limit, .. } => Self::new(
                StatusCode::TOO_MANY_REQUESTS,
                -1003,
                format!(
                    "Too much request weight used; current limit is {limit} request weight per 1 MINUTE. Please use WebSocket Streams for live updates to avoid polling the API."
                ),
            ),
            E::TooManyOrders {
                limit, interval, ..
            } => Self::new(
                StatusCode::TOO_MANY_REQUESTS,
                -1015,
                format!("Too many new orders; current limit is {limit} orders per {interval}."),
            ),
            E::TooManyCalls { per_second, .. } => Self::new(
                StatusCode::TOO_MANY_REQUESTS,
                -1003,
                format!("Too many requests; current limit is {per_second} requests per 1 SECOND."),
            ),
            E::Banned { until_ms, .. } => Self::new(
                StatusCode::IM_A_TEAPOT,
                -1003,
                format!(
                    "Way too much request weight used; IP banned until {until_ms}. Please use WebSocket Streams for live updates to avoid bans."
                ),
            ),
            E::TooManyInvalidKeys { .. } => Self::new(
                StatusCode::TOO_MANY_REQUESTS,
                -1003,
                "Too many requests with invalid API-keys; please try again later.",
            ),
        }
    }
}

impl From<&ParamError> for BinanceError {
    fn from(error: &ParamError) -> Self {
        match error {
            ParamError::Nameless => Self::bad(-1100, "Illegal characters found in a parameter."),
            ParamError::RawEquals(name) => Self::bad(
                -1100,
                format!(
                    "Illegal characters found in parameter '{name}'; an '=' inside a value must be sent as %3D."
                ),
            ),
            ParamError::InvalidJson => {
                Self::bad(-1135, "JSON sent for parameter 'body' is not valid")
            }
            ParamError::TooMany(sent) => Self::bad(
                -1101,
                format!("Too many parameters; expected '{MAX_PARAMS}' and received '{sent}'."),
            ),
        }
    }
}

impl IntoResponse for BinanceError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "code": self.code, "msg": self.msg });
        (
            self.status,
            [(header::CONTENT_TYPE, weiport_access::JSON)],
            body.to_string(),
        )
            .into_response()
    }
}

/// The guard's view of the exchange: `X-MBX-APIKEY`, Binance bodies and
/// usage headers.
#[derive(Clone, Copy, Debug, Default)]
pub struct BinanceFace;

/// A count as a header value: its digits copied into one allocation of
/// exactly their length.
fn header_value(n: u32) -> HeaderValue {
    let mut digits = [0u8; 10];
    let mut at = digits.len();
    let mut rest = n;
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    HeaderValue::from_bytes(&digits[at..]).unwrap_or(HeaderValue::from_static("0"))
}

// Names made once: a name given as text is parsed and, not being a
// standard header, copied on every answer.
const USED_WEIGHT_1M: HeaderName = HeaderName::from_static("x-mbx-used-weight-1m");
const USED_WEIGHT: HeaderName = HeaderName::from_static("x-mbx-used-weight");
const ORDER_COUNT_10S: HeaderName = HeaderName::from_static("x-mbx-order-count-10s");
const ORDER_COUNT_1D: HeaderName = HeaderName::from_static("x-mbx-order-count-1d");

impl Face for BinanceFace {
    fn name(&self) -> &'static str {
        "binance"
    }

    fn api_key<'a>(
        &self,
        headers: &'a HeaderMap,
        _query: &'a str,
        _body: &'a [u8],
    ) -> Option<std::borrow::Cow<'a, str>> {
        headers
            .get("x-mbx-apikey")
            .and_then(|v| v.to_str().ok())
            .map(|v| v.trim().into())
    }

    fn reject(&self, error: &AccessError) -> Response {
        BinanceError::from(error).into_response()
    }

    fn usage_headers(&self, usage: &Usage, headers: &mut HeaderMap) {
        headers.insert(USED_WEIGHT_1M, header_value(usage.ip_weight_1m));
        headers.insert(USED_WEIGHT, header_value(usage.ip_weight_1m));
        if let Some((ten_seconds, day)) = usage.orders {
            headers.insert(ORDER_COUNT_10S, header_value(ten_seconds));
            headers.insert(ORDER_COUNT_1D, header_value(day));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_render_as_their_decimal_digits() {
        for n in (0..10_000).chain([99_999, 100_000, 1 << 20, 999_999_999, u32::MAX]) {
            assert_eq!(
                header_value(n).to_str().ok(),
                Some(n.to_string().as_str()),
                "{n}"
            );
        }
    }
}
