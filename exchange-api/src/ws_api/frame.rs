//! One WebSocket API message in and one out: the request's id, method and
//! parameters; the parameters as the route reads them (a query string) and
//! as the client signed them (sorted by name); the answer in Binance's
//! frame, with `rateLimits`.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::value::RawValue;
use weiport_access::{LimitsConfig, Proof, Usage};

use crate::error::{BinanceError, Refusal};

/// Parameters the WebSocket API reads itself; the route never sees them.
const SOCKET_ONLY: [&str; 3] = ["apiKey", "signature", "returnRateLimits"];

/// A request as sent: `{"id", "method", "params"}`, read in place.
pub(super) struct Request<'a> {
    /// The id as sent (JSON text), echoed in the answer byte for byte.
    pub(super) id: &'a str,
    pub(super) method: Cow<'a, str>,
    /// Each parameter sent (not null) with its value as text, sorted by
    /// name: a string's content, any other value as written, since a
    /// signature covers the text the client wrote, which a parsed number
    /// would not give back.
    params: Vec<(Cow<'a, str>, Cow<'a, str>)>,
}

/// The frame's fields, still JSON text.
#[derive(serde::Deserialize)]
struct Frame<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<&'a RawValue>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
}

/// A parameter's name, borrowed from the frame unless it has escapes.
#[derive(serde::Deserialize, PartialEq, Eq, PartialOrd, Ord)]
struct Name<'a>(#[serde(borrow)] Cow<'a, str>);

impl<'a> Request<'a> {
    /// Reads a text frame; a refusal carries the id when one could be read.
    pub(super) fn parse(text: &'a str) -> Result<Self, (String, BinanceError)> {
        // An object only (a derived struct would also read an array).
        let object = text.trim_start().starts_with('{');
        let Some(frame) = serde_json::from_str::<Frame<'a>>(text)
            .ok()
            .filter(|_| object)
        else {
            return Err(("null".into(), BinanceError::from(Refusal::NotJson)));
        };
        // Binance's ids are strings, integers or null; anything else is not
        // echoed (it could be any size).
        let id = match frame.id {
            None => "null",
            Some(id) if id_fits(id) => id.get(),
            Some(_) => return Err(("null".into(), BinanceError::mandatory("id"))),
        };
        let method = match frame.method.map(|m| m.get()) {
            Some(raw) if raw.starts_with('"') && raw.len() > 2 => text_of(raw),
            _ => return Err((id.to_owned(), BinanceError::mandatory("method"))),
        };
        let params = match frame.params.map(|p| p.get()) {
            None | Some("null") => Vec::new(),
            Some(raw) if raw.starts_with('{') => {
                match serde_json::from_str::<BTreeMap<Name<'a>, &'a RawValue>>(raw) {
                    Ok(params) => params
                        .into_iter()
                        .filter(|(_, value)| value.get() != "null")
                        .map(|(name, value)| (name.0, text_of(value.get())))
                        .collect(),
                    Err(_) => return Err((id.to_owned(), BinanceError::from(Refusal::NotJson))),
                }
            }
            Some(_) => return Err((id.to_owned(), BinanceError::from(Refusal::NotAllReadWs))),
        };
        Ok(Self { id, method, params })
    }

    /// The parameters sent.
    fn sent(&self) -> impl Iterator<Item = (&str, &str)> {
        self.params
            .iter()
            .map(|(name, value)| (name.as_ref(), value.as_ref()))
    }

    /// One parameter as text.
    pub(super) fn param(&self, name: &str) -> Option<&str> {
        self.sent()
            .find(|(sent, _)| *sent == name)
            .map(|(_, value)| value)
    }

    /// `returnRateLimits` of this request, if it says.
    pub(super) fn return_rate_limits(&self) -> Result<Option<bool>, BinanceError> {
        match self.param("returnRateLimits") {
            None => Ok(None),
            Some(value) => flag(value)
                .map(Some)
                .ok_or_else(|| BinanceError::from(Refusal::InvalidValue("returnRateLimits"))),
        }
    }

    /// The parameters as a route reads them: percent-encoded, without what
    /// the socket reads itself (`apiKey`, `signature`, `returnRateLimits`).
    pub(super) fn query(&self) -> String {
        let mut query = form_urlencoded::Serializer::new(String::with_capacity(256));
        for (name, value) in self.sent() {
            if !SOCKET_ONLY.contains(&name) {
                query.append_pair(name, value);
            }
        }
        query.finish()
    }

    /// Whose the request is: its own `apiKey` and `signature` when it has
    /// either, else the connection's logged-on key, else nobody's.
    pub(super) fn proof(&self, logged_on: Option<&str>) -> Proof {
        let (api_key, signature) = (self.param("apiKey"), self.param("signature"));
        match logged_on {
            Some(key_id) if api_key.is_none() && signature.is_none() => Proof::Session {
                key_id: key_id.to_owned(),
            },
            _ => {
                let (payload, encoded) = self.signed_payloads();
                Proof::Params {
                    api_key: api_key.map(str::to_owned),
                    payload,
                    encoded_payload: encoded,
                    signature: signature.map(str::to_owned),
                }
            }
        }
    }

    /// What the client signed: every parameter but `signature`, sorted by
    /// name, as `name=value` joined by `&`, values as written; and the same
    /// with values percent-encoded, as some clients sign it, where that
    /// differs.
    fn signed_payloads(&self) -> (Vec<u8>, Option<Vec<u8>>) {
        let signed = || self.sent().filter(|(name, _)| *name != "signature");
        let mut payload = String::with_capacity(256);
        for (name, value) in signed() {
            if !payload.is_empty() {
                payload.push('&');
            }
            payload.push_str(name);
            payload.push('=');
            payload.push_str(value);
        }
        // Form encoding leaves these bytes as they are.
        let plain = |text: &str| {
            text.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"*-._".contains(&b))
        };
        let encoded = (!signed().all(|(name, value)| plain(name) && plain(value))).then(|| {
            let mut encoded = form_urlencoded::Serializer::new(String::new());
            for (name, value) in signed() {
                encoded.append_pair(name, value);
            }
            encoded.finish().into_bytes()
        });
        (payload.into_bytes(), encoded)
    }
}

/// Ids longer than this are refused rather than echoed.
const MAX_ID: usize = 128;

fn id_fits(id: &RawValue) -> bool {
    let raw = id.get();
    match raw.as_bytes().first() {
        // The raw text bounds the content (escapes only lengthen it).
        Some(b'"') => raw.len() <= MAX_ID + 2 || text_of(raw).len() <= MAX_ID,
        Some(b'-' | b'0'..=b'9') => raw.parse::<i64>().is_ok() || raw.parse::<u64>().is_ok(),
        _ => raw == "null",
    }
}

/// A value's text: a string's content (borrowed unless it has escapes),
/// anything else as written (numbers, `true`, a `symbols` array).
fn text_of(raw: &str) -> Cow<'_, str> {
    match raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
        Some(inner) if !inner.contains('\\') => Cow::Borrowed(inner),
        Some(_) => serde_json::from_str::<String>(raw).map_or(Cow::Borrowed(raw), Cow::Owned),
        None => Cow::Borrowed(raw),
    }
}

/// `true`/`false` as a boolean parameter is written (either case).
pub(super) fn flag(text: &str) -> Option<bool> {
    if text.eq_ignore_ascii_case("true") {
        Some(true)
    } else if text.eq_ignore_ascii_case("false") {
        Some(false)
    } else {
        None
    }
}

/// Binance's `rateLimits`: the IP's weight this minute and, for a request
/// that counted an order, the account's orders in 10 s and in the day.
pub(super) fn rate_limits(limits: &LimitsConfig, usage: &Usage) -> String {
    let mut out = format!(
        r#"[{{"rateLimitType":"REQUEST_WEIGHT","interval":"MINUTE","intervalNum":1,"limit":{},"count":{}}}"#,
        limits.ip_weight_per_minute, usage.ip_weight_1m
    );
    if let Some((ten_seconds, day)) = usage.orders {
        let _ = write!(
            out,
            r#",{{"rateLimitType":"ORDERS","interval":"SECOND","intervalNum":10,"limit":{},"count":{ten_seconds}}},{{"rateLimitType":"ORDERS","interval":"DAY","intervalNum":1,"limit":{},"count":{day}}}"#,
            limits.orders_per_10s, limits.orders_per_day
        );
    }
    out.push(']');
    out
}

/// An answer frame: `result` (status 200) or `error`, each already JSON
/// text, and `rateLimits` when they are to be shown.
pub(super) fn answer(id: &str, status: u16, body: &str, rate_limits: Option<&str>) -> String {
    let field = if status == 200 {
        r#","status":200,"result":"#
    } else {
        r#","error":"#
    };
    let mut out = String::with_capacity(id.len() + body.len() + 320);
    out.push_str(r#"{"id":"#);
    out.push_str(id);
    if status != 200 {
        let _ = write!(out, r#","status":{status}"#);
    }
    out.push_str(field);
    out.push_str(body);
    if let Some(rate_limits) = rate_limits {
        out.push_str(r#","rateLimits":"#);
        out.push_str(rate_limits);
    }
    out.push('}');
    out
}

/// A refusal's `error` object: `{"code","msg"}`.
pub(super) fn error_body(error: &BinanceError) -> String {
    serde_json::json!({ "code": error.code, "msg": error.msg }).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn request(text: &str) -> Request<'_> {
        Request::parse(text).unwrap_or_else(|(_, e)| panic!("{text}: {e:?}"))
    }

    #[test]
    fn parameters_are_signed_sorted_and_read_encoded() {
        let r = request(
            r#"{"id":"a1","method":"order.place","params":{"symbol":"ETHUSDT","quantity":"0.5",
               "timestamp":1700000000000,"apiKey":"k","signature":"s","newClientOrderId":"a&b=c",
               "symbols":["A","B"],"flag":true,"gone":null,"returnRateLimits":false}}"#,
        );
        assert_eq!(r.id, r#""a1""#);
        assert_eq!(r.method, "order.place");
        let Proof::Params {
            api_key,
            payload,
            encoded_payload,
            signature,
        } = r.proof(Some("ignored"))
        else {
            panic!("a signed request proves itself");
        };
        assert_eq!(
            (api_key.as_deref(), signature.as_deref()),
            (Some("k"), Some("s"))
        );
        assert_eq!(
            String::from_utf8(payload).unwrap(),
            r#"apiKey=k&flag=true&newClientOrderId=a&b=c&quantity=0.5&returnRateLimits=false&symbol=ETHUSDT&symbols=["A","B"]&timestamp=1700000000000"#
        );
        assert_eq!(
            String::from_utf8(encoded_payload.unwrap()).unwrap(),
            "apiKey=k&flag=true&newClientOrderId=a%26b%3Dc&quantity=0.5&returnRateLimits=false&symbol=ETHUSDT&symbols=%5B%22A%22%2C%22B%22%5D&timestamp=1700000000000"
        );
        let query: Vec<(String, String)> = form_urlencoded::parse(r.query().as_bytes())
            .into_owned()
            .collect();
        let mut names: Vec<&str> = query.iter().map(|(n, _)| n.as_str()).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            [
                "flag",
                "newClientOrderId",
                "quantity",
                "symbol",
                "symbols",
                "timestamp"
            ]
        );
        assert!(query.contains(&("newClientOrderId".into(), "a&b=c".into())));
        assert!(query.contains(&("symbols".into(), r#"["A","B"]"#.into())));
        assert_eq!(r.return_rate_limits(), Ok(Some(false)));
    }

    #[test]
    fn an_unsigned_request_on_a_logged_on_connection_is_the_session_s() {
        let r = request(r#"{"id":7,"method":"account.status","params":{"timestamp":1}}"#);
        assert_eq!(r.id, "7");
        assert!(matches!(r.proof(Some("key")), Proof::Session { key_id } if key_id == "key"));
        assert!(matches!(r.proof(None), Proof::Params { api_key: None, .. }));
    }

    #[test]
    fn malformed_requests_are_refused_with_what_could_be_read() {
        let refused = |text: &str| Request::parse(text).err().map(|(id, e)| (id, e.code));
        assert_eq!(refused("not json"), Some(("null".into(), -1100)));
        assert_eq!(refused("[1,2]"), Some(("null".into(), -1100)));
        assert_eq!(
            refused(r#"{"id":{"x":1},"method":"ping"}"#),
            Some(("null".into(), -1102))
        );
        assert_eq!(
            refused(r#"{"id":1.5,"method":"ping"}"#),
            Some(("null".into(), -1102))
        );
        let long = "x".repeat(MAX_ID + 1);
        assert_eq!(
            refused(&format!(r#"{{"id":"{long}","method":"ping"}}"#)),
            Some(("null".into(), -1102))
        );
        assert_eq!(refused(r#"{"id":3}"#), Some(("3".into(), -1102)));
        assert_eq!(
            refused(r#"{"id":3,"method":"ping","params":[1]}"#),
            Some(("3".into(), -1104))
        );
        assert!(refused(r#"{"method":"ping"}"#).is_none());
        let r = request(r#"{"id":1,"method":"ping","params":{"returnRateLimits":"maybe"}}"#);
        assert_eq!(r.return_rate_limits().map_err(|e| e.code), Err(-1130));
    }

    #[test]
    fn answers_are_binance_frames() {
        let limits = LimitsConfig::default();
        let usage = Usage {
            ip_weight_1m: 7,
            orders: Some((1, 2)),
        };
        let text = answer("\"x\"", 200, "{}", Some(&rate_limits(&limits, &usage)));
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["id"], "x");
        assert_eq!(value["status"], 200);
        assert_eq!(value["result"], serde_json::json!({}));
        assert_eq!(value["rateLimits"][0]["count"], 7);
        assert_eq!(value["rateLimits"][1]["intervalNum"], 10);
        assert_eq!(value["rateLimits"][2]["count"], 2);
        let text = answer("null", 400, r#"{"code":-1,"msg":"m"}"#, None);
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["error"]["code"], -1);
        assert!(value.get("rateLimits").is_none());
    }
}
