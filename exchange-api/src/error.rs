//! Binance's error shape, `{"code": -1121, "msg": "Invalid symbol."}`, with
//! the HTTP statuses the service promises: 401 for authentication, 429 for
//! limits, 418 for bans, 400 for bad requests.

use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use weiport_access::params::{MAX_PARAMS, ParamError};
use weiport_access::{AccessError, Face, Usage};

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
    pub fn new(status: StatusCode, code: i32, msg: impl Into<String>) -> Self {
        Self {
            status,
            code,
            msg: msg.into(),
        }
    }

    /// HTTP 400 with `code` and `msg`.
    pub fn bad(code: i32, msg: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, msg)
    }

    /// -1102 for a missing or malformed mandatory parameter.
    pub fn mandatory(name: &str) -> Self {
        Self::bad(
            -1102,
            format!("Mandatory parameter '{name}' was not sent, was empty/null, or malformed."),
        )
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

/// A count as a header value: borrowed from [`RENDERED_COUNTS`] below its
/// bound, else in one allocation of exactly its length.
fn header_value(n: u32) -> HeaderValue {
    if let Some(digits) = rendered_count(n) {
        return HeaderValue::from_static(digits);
    }
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

/// Counts rendered once, so the usage headers of a client within Binance's
/// limits (6,000 weight a minute, 100 orders in ten seconds) allocate
/// nothing: every value is a slice of one text.
const RENDERED_BELOW: u32 = 100_000;

/// `0123456789101112…99999`: each count below [`RENDERED_BELOW`] in order,
/// under half a megabyte, made when the router is built.
pub(crate) static RENDERED_COUNTS: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let mut text = Vec::with_capacity(488_890);
    // One decimal counter stepped up in place: the text is its successive
    // values, so no number is divided into digits.
    let mut count = vec![b'0'];
    for _ in 0..RENDERED_BELOW {
        text.extend_from_slice(&count);
        match count.iter().rposition(|&digit| digit != b'9') {
            Some(at) => {
                count[at] += 1;
                count[at + 1..].fill(b'0');
            }
            None => {
                count.fill(b'0');
                count.insert(0, b'1');
            }
        }
    }
    String::from_utf8(text).unwrap_or_default()
});

/// `n`'s digits within [`RENDERED_COUNTS`], when it is rendered there.
fn rendered_count(n: u32) -> Option<&'static str> {
    if n >= RENDERED_BELOW {
        return None;
    }
    // Counts of `width` digits start after every shorter count: ten of one
    // digit (0–9), then 90 of two, 900 of three, …
    let n = n as usize;
    let (mut width, mut first, mut next, mut start) = (1, 0, 10, 0);
    while n >= next {
        start += width * (next - first);
        (first, next, width) = (next, next * 10, width + 1);
    }
    let at = start + width * (n - first);
    let text: &'static str = &RENDERED_COUNTS;
    text.get(at..at + width)
}

// Names made once: a name given as text is parsed and, not being a
// standard header, copied on every answer.
const USED_WEIGHT_1M: HeaderName = HeaderName::from_static("x-mbx-used-weight-1m");
const USED_WEIGHT: HeaderName = HeaderName::from_static("x-mbx-used-weight");
const ORDER_COUNT_10S: HeaderName = HeaderName::from_static("x-mbx-order-count-10s");
const ORDER_COUNT_1D: HeaderName = HeaderName::from_static("x-mbx-order-count-1d");

impl Face for BinanceFace {
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
    fn every_count_renders_as_its_decimal_digits() {
        let probes = (0..RENDERED_BELOW + 1_000).chain([1 << 20, 999_999_999, u32::MAX]);
        for n in probes {
            assert_eq!(
                header_value(n).to_str().ok(),
                Some(n.to_string().as_str()),
                "{n}"
            );
        }
        assert_eq!(rendered_count(RENDERED_BELOW), None);
        assert_eq!(rendered_count(RENDERED_BELOW - 1), Some("99999"));
    }
}
