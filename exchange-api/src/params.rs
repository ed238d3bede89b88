//! Request parameters as Binance clients send them (query, form or JSON
//! body): refused beyond what the route reads, and read as integers,
//! amounts, flags and markets with Binance's exact errors.

use weiport_access::params::{self, BodyKind};
use weiport_exchange::amount::{Amount, AmountError};
use weiport_exchange::catalog::{Catalog, MarketId};
use weiport_exchange::market::Market;

use crate::error::{BinanceError, Refusal};

/// Request parameters by name, from the query string and the body.
pub(crate) struct Params {
    /// Every kept name and value, decoded, one after another: one buffer
    /// however many parameters a request carries.
    text: String,
    /// Where each name and value ends in `text`; a name starts where the
    /// previous value ended.
    ends: smallvec::SmallVec<[Ends; 16]>,
    /// The names the route lists, kept in debug builds: a handler reading a
    /// name its route does not list is a bug that -1104 hides (a client
    /// sending it is refused before the handler runs), so every test that
    /// reaches such a read fails. None: any name (tests' own parameters).
    #[cfg(debug_assertions)]
    listed: Option<smallvec::SmallVec<[Listed; 2]>>,
}

/// A route's parameter lists, as the route table holds them.
#[cfg(debug_assertions)]
type Listed = &'static [&'static [&'static str]];

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
    pub(crate) fn parse(
        query: &str,
        body: &[u8],
        kind: BodyKind,
        accepted: &[&'static [&'static [&'static str]]],
    ) -> Result<Self, BinanceError> {
        #[allow(unused_mut)]
        let mut params = Self::collect(query, body, kind, accepted)?;
        #[cfg(debug_assertions)]
        {
            params.listed = Some(accepted.iter().copied().collect());
        }
        Ok(params)
    }

    /// [`Params::parse`] for lists of any lifetime, without the debug
    /// check of what is read (tests' own lists).
    pub(crate) fn collect(
        query: &str,
        body: &[u8],
        kind: BodyKind,
        accepted: &[&[&[&str]]],
    ) -> Result<Self, BinanceError> {
        // Decoded text is at most as long as the raw text (percent escapes and
        // JSON escapes shrink): one allocation holds nearly every request.
        let mut params = Self {
            text: String::with_capacity(query.len() + body.len()),
            ends: smallvec::SmallVec::new(),
            #[cfg(debug_assertions)]
            listed: None,
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
            params.text.push_str(&name);
            let name = params.text.len();
            params.text.push_str(&value);
            params.ends.push(Ends {
                name,
                value: params.text.len(),
            });
        })
        .map_err(|e| BinanceError::from(&e))?;
        if duplicate {
            return Err(Refusal::Duplicate.into());
        }
        if unread > 0 {
            return Err(Refusal::NotAllRead {
                read: count - unread,
                sent: count,
            }
            .into());
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
        Self::collect(query, b"", BodyKind::Form, &[&[&names]])
    }

    /// A parameter's value; empty counts as absent.
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        // An order list's leg without a field reads the empty name.
        #[cfg(debug_assertions)]
        if let Some(listed) = &self.listed {
            assert!(
                name.is_empty()
                    || listed
                        .iter()
                        .flat_map(|groups| groups.iter())
                        .any(|group| group.contains(&name)),
                "a handler reads `{name}`, which its route does not list (a client sending it is refused -1104); listed: {listed:?}"
            );
        }
        self.sent(name).filter(|v| !v.is_empty())
    }

    /// A parameter's value as sent, empty or not. Names are compared as
    /// bytes: only the value found is cut out of the text.
    fn sent(&self, name: &str) -> Option<&str> {
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
            AmountError::TooPrecise => Refusal::TooPrecise(name).into(),
            AmountError::Overflow => Refusal::Overflowed(name).into(),
            AmountError::Syntax => Refusal::IllegalCharacters {
                name,
                range: DECIMAL_RANGE,
            }
            .into(),
        })
    }
}

/// Binance's legal range of an integer parameter.
pub(crate) const INTEGER_RANGE: &str = "^[0-9]{1,20}$";

/// Binance's legal range of a decimal parameter.
const DECIMAL_RANGE: &str = "^([0-9]{1,20})(\\.[0-9]{1,20})?$";

/// Binance's legal range of a client's order or list id.
pub(crate) const CLIENT_ID_RANGE: &str = "^[\\.A-Z\\:/a-z0-9_-]{1,36}$";

/// Binance's legal range of `symbols` (a JSON array of names).
const SYMBOLS_RANGE: &str = "^\\[(\"[A-Z0-9-_.]{1,20}\"(,\"[A-Z0-9-_.]{1,20}\"){0,}){0,1}\\]$";

pub(crate) fn market<'a>(
    catalog: &'a Catalog,
    params: &Params,
) -> Result<(MarketId, &'a Market), BinanceError> {
    let symbol = params.required("symbol")?;
    let id = catalog.market_id(symbol).ok_or(Refusal::InvalidSymbol)?;
    Ok((id, catalog.market(id).ok_or(Refusal::InvalidSymbol)?))
}

/// Markets a request names, held inline for the usual few.
pub(crate) type MarketIds = smallvec::SmallVec<[MarketId; 8]>;

/// `symbol`, `symbols` (a JSON array) or neither (every market).
pub(crate) fn markets(
    catalog: &Catalog,
    params: &Params,
) -> Result<(MarketIds, bool), BinanceError> {
    match (params.get("symbol"), params.get("symbols")) {
        (Some(_), Some(_)) => Err(Refusal::BadCombination.into()),
        (Some(symbol), None) => Ok((
            smallvec::smallvec![catalog.market_id(symbol).ok_or(Refusal::InvalidSymbol)?],
            true,
        )),
        (None, Some(list)) => {
            let names: Vec<String> =
                serde_json::from_str(list).map_err(|_| Refusal::IllegalCharacters {
                    name: "symbols",
                    range: SYMBOLS_RANGE,
                })?;
            if names.is_empty() {
                return Err(BinanceError::mandatory("symbols"));
            }
            let mut ids = MarketIds::new();
            for name in names {
                let id = catalog.market_id(&name).ok_or(Refusal::InvalidSymbol)?;
                if ids.contains(&id) {
                    return Err(Refusal::SymbolTwice.into());
                }
                ids.push(id);
            }
            Ok((ids, false))
        }
        (None, None) => Ok((catalog.markets().map(|(id, _)| id).collect(), false)),
    }
}

pub(crate) fn integer(params: &Params, name: &str) -> Result<Option<u64>, BinanceError> {
    params
        .get(name)
        .map(|text| {
            text.parse::<u64>().map_err(|_| {
                Refusal::IllegalCharacters {
                    name,
                    range: INTEGER_RANGE,
                }
                .into()
            })
        })
        .transpose()
}

pub(crate) fn limit(params: &Params, default: usize, max: usize) -> Result<usize, BinanceError> {
    Ok(match integer(params, "limit")? {
        None => default,
        Some(0) => default,
        Some(n) => (n as usize).min(max),
    })
}

pub(crate) fn boolean(params: &Params, name: &str) -> bool {
    params.get(name) == Some("true")
}

/// Whether the query names `name` with a value (without copying it).
pub(crate) fn query_has(query: &str, name: &str) -> bool {
    query_value(query, name).is_some()
}

/// The first non-empty value of `name` in a raw query string, read as a
/// form would be (borrowed unless it holds an escape), for the weight
/// functions, which run before the request's parameters are parsed.
pub(crate) fn query_value<'a>(query: &'a str, name: &str) -> Option<std::borrow::Cow<'a, str>> {
    weiport_access::params::lenient_filled(query, name)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let params = Params::collect(&query, body.as_bytes(), BodyKind::Form, &[&[names]]).unwrap();
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
        let params = Params::collect("", json.as_bytes(), BodyKind::Json, &[&[names]]).unwrap();
        assert_eq!(params.get("quantity"), Some("0.5"));
        assert_eq!(params.get("recvWindow"), Some("5000"));
        assert_eq!(params.get("symbol"), Some("ETHUSDT"));
    }

    #[test]
    fn a_refused_text_wins_over_a_duplicate_or_unread_parameter_before_it() {
        let names: &[&str] = &["a"];
        let code = |query: &str, body: &str, kind| {
            Params::collect(query, body.as_bytes(), kind, &[&[names]])
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

    /// What `form_urlencoded` finds: the first pair named `name` with a value.
    fn as_forms_read(query: &str, name: &str) -> Option<String> {
        form_urlencoded::parse(query.as_bytes())
            .find(|(sent, value)| sent == name && !value.is_empty())
            .map(|(_, value)| value.into_owned())
    }

    #[test]
    fn the_weight_functions_read_a_query_as_a_form_does() {
        let queries = [
            "symbol=ETHUSDT",
            "symbol=&symbol=BTCUSDT",
            "symbols=%5B%22ETHUSDT%22%5D",
            "sym%62ol=ETH%55SDT&limit=5",
            "symbol",
            "&&symbol=a+b&",
            "orderId=1=2",
            "limit=100&symbol=%E2%82%AC",
            "symbol=%zz",
            "",
        ];
        for query in queries {
            for name in ["symbol", "symbols", "limit", "orderId"] {
                assert_eq!(
                    query_value(query, name).map(std::borrow::Cow::into_owned),
                    as_forms_read(query, name),
                    "{name} in {query:?}"
                );
                assert_eq!(query_has(query, name), as_forms_read(query, name).is_some());
            }
        }
    }
}
