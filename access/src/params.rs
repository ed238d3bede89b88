//! Request parameters as Binance-style APIs carry them: a query string and a
//! form-encoded or JSON body. Parsed strictly, so that a signed payload has
//! exactly one reading: moving the query/body boundary of a captured request
//! always leaves a fragment without a name, which is refused.

use std::borrow::Cow;

use axum::http::{HeaderMap, header};

/// How a request body carries its parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    /// `application/x-www-form-urlencoded`, or any non-JSON type: `a=1&b=2`.
    Form,
    /// `application/json`: one object, signed as its raw text.
    Json,
}

impl BodyKind {
    /// The kind a request's `Content-Type` announces.
    pub fn of(headers: &HeaderMap) -> Self {
        let json = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                v.get(..16)
                    .is_some_and(|t| t.eq_ignore_ascii_case("application/json"))
            });
        if json { Self::Json } else { Self::Form }
    }
}

/// Most parameters one request may carry: more than any endpoint reads.
pub const MAX_PARAMS: usize = 64;

/// Why a request's parameters cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamError {
    /// A fragment without `name=` (`000`, `=5`).
    #[error("a parameter without a name was sent")]
    Nameless,
    /// A value holding a raw `=`, which could be read as two parameters.
    #[error("parameter '{0}' holds an unencoded '='")]
    RawEquals(String),
    /// The JSON body is not one object of names to scalars or arrays.
    #[error("the JSON body is not valid")]
    InvalidJson,
    /// More than [`MAX_PARAMS`] parameters.
    #[error("too many parameters: {0}")]
    TooMany(usize),
}

/// One parameter: its name and its decoded value.
pub type Param<'a> = (Cow<'a, str>, Cow<'a, str>);

/// A request's parameters, held inline up to a count no endpoint exceeds.
pub type ParamList<'a> = smallvec::SmallVec<[Param<'a>; 16]>;

/// Every parameter of the query string and the body, in the order sent. A
/// name may repeat: what a repeat means is the caller's decision.
pub fn parse<'a>(
    query: &'a str,
    body: &'a [u8],
    kind: BodyKind,
) -> Result<ParamList<'a>, ParamError> {
    let mut params = ParamList::new();
    visit(query, body, kind, |name, value| params.push((name, value)))?;
    Ok(params)
}

/// Every parameter [`parse`] would list, handed to `each` in the order sent
/// without building the list (a form's pairs are decoded as they are
/// walked); refused as [`parse`] refuses, though `each` may have seen the
/// pairs before the refusal.
pub fn visit<'a>(
    query: &'a str,
    body: &'a [u8],
    kind: BodyKind,
    mut each: impl FnMut(Cow<'a, str>, Cow<'a, str>),
) -> Result<(), ParamError> {
    let mut count = 0;
    let mut decoded = |name, value: Sent<'a>| each(name, value.decode());
    form_pairs(query.as_bytes(), &mut count, &mut decoded)?;
    match kind {
        BodyKind::Form => form_pairs(body, &mut count, &mut decoded),
        BodyKind::Json if body.iter().all(u8::is_ascii_whitespace) => Ok(()),
        BodyKind::Json => {
            let mut fields = ParamList::new();
            json(body, count, &mut fields)?;
            fields
                .into_iter()
                .for_each(|(name, value)| each(name, value));
            Ok(())
        }
    }
}

/// The parameters named in `names`, each handed to `found` with its index
/// in `names` and its decoded value, in the order sent; every other
/// parameter is checked as [`parse`] checks it but not decoded. What
/// authentication reads of every signed request, without building the list.
pub fn select<'a>(
    query: &'a str,
    body: &'a [u8],
    kind: BodyKind,
    names: &[&str],
    mut found: impl FnMut(usize, Cow<'a, str>),
) -> Result<(), ParamError> {
    let wanted = |name: &str| names.iter().position(|wanted| *wanted == name);
    if kind == BodyKind::Json {
        // Rare, and its values are decoded whole anyway.
        for (name, value) in parse(query, body, kind)? {
            if let Some(i) = wanted(&name) {
                found(i, value);
            }
        }
        return Ok(());
    }
    let mut each = |name: Cow<'a, str>, value: Sent<'a>| {
        if let Some(i) = wanted(&name) {
            found(i, value.decode());
        }
    };
    let mut count = 0;
    form_pairs(query.as_bytes(), &mut count, &mut each)?;
    form_pairs(body, &mut count, &mut each)
}

/// Walks form-encoded `name=value` pairs; `each` gets the decoded name and
/// the value as sent. Empty fragments (`a=1&&b=2`) carry nothing and are
/// skipped, as forms define; a fragment without a name (`000`, `=5`) is
/// refused, where `form_urlencoded` would accept it. `count` carries the
/// parameters seen so far, for [`MAX_PARAMS`].
fn form_pairs<'a>(
    raw: &'a [u8],
    count: &mut usize,
    mut each: impl FnMut(Cow<'a, str>, Sent<'a>),
) -> Result<(), ParamError> {
    // Checked once: every piece split at an ASCII `&` or `=` of valid text
    // is valid text, so no piece is checked again.
    let text = std::str::from_utf8(raw).ok();
    let piece = |from: usize, to: usize, escaped: bool| Sent {
        bytes: &raw[from..to],
        text: text.map(|text| &text[from..to]),
        escaped,
    };
    // One pass over the bytes: where each fragment starts, its first `=`,
    // whether its name or value holds an escape, whether its value holds
    // a raw `=`; the end of the text closes the last fragment. Ordinary
    // bytes are skipped by a table look-up.
    let mut start = 0;
    let mut equals = None;
    let (mut name_escaped, mut value_escaped, mut raw_equals) = (false, false, false);
    let mut at = 0;
    loop {
        while at < raw.len() && !FORM_SPECIAL[usize::from(raw[at])] {
            at += 1;
        }
        match raw.get(at).copied().unwrap_or(b'&') {
            b'&' => {
                if at > start {
                    let Some(equals) = equals.filter(|equals| *equals > start) else {
                        return Err(ParamError::Nameless);
                    };
                    let name = piece(start, equals, name_escaped).decode();
                    // A base64 signature may arrive with its padding
                    // unencoded; it is taken out of the payload before
                    // verification, so it moves nothing.
                    if raw_equals && name != "signature" {
                        return Err(ParamError::RawEquals(name.into_owned()));
                    }
                    *count += 1;
                    if *count > MAX_PARAMS {
                        return Err(ParamError::TooMany(*count));
                    }
                    each(name, piece(equals + 1, at, value_escaped));
                }
                start = at + 1;
                equals = None;
                (name_escaped, value_escaped, raw_equals) = (false, false, false);
            }
            b'=' if equals.is_none() => equals = Some(at),
            b'=' => raw_equals = true,
            _ if equals.is_none() => name_escaped = true,
            _ => value_escaped = true,
        }
        if at >= raw.len() {
            break;
        }
        at += 1;
    }
    Ok(())
}

/// The bytes a form walk stops at: `&`, `=`, and the escapes `%` and `+`.
static FORM_SPECIAL: [bool; 256] = {
    let mut special = [false; 256];
    special[b'&' as usize] = true;
    special[b'=' as usize] = true;
    special[b'%' as usize] = true;
    special[b'+' as usize] = true;
    special
};

/// A name or value as sent, with its text when the whole it came from was
/// valid UTF-8.
#[derive(Clone, Copy)]
struct Sent<'a> {
    bytes: &'a [u8],
    text: Option<&'a str>,
    /// Whether it holds a `%` or `+` to decode.
    escaped: bool,
}

impl<'a> Sent<'a> {
    /// Percent- and `+`-decoding, as `application/x-www-form-urlencoded`
    /// defines; borrowed when nothing needs decoding and the text is valid.
    fn decode(self) -> Cow<'a, str> {
        let raw = self.bytes;
        if !self.escaped {
            return match self.text.map_or_else(|| std::str::from_utf8(raw), Ok) {
                Ok(text) => Cow::Borrowed(text),
                Err(_) => String::from_utf8_lossy(raw),
            };
        }
        // `form_urlencoded` decodes whole pairs only: one `x=<raw>` pair
        // decodes the text exactly as it would inside a query.
        let mut owned = Vec::with_capacity(raw.len() + 2);
        owned.extend_from_slice(b"x=");
        owned.extend_from_slice(raw);
        let value = form_urlencoded::parse(&owned)
            .next()
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default();
        Cow::Owned(value)
    }
}

/// Form-encoded pairs read as `form_urlencoded::parse` reads them (empty
/// fragments skipped, a fragment without `=` is a name with an empty
/// value, the first `=` splits), for APIs that accept anything a browser
/// form would send; borrowed unless a percent escape or `+` had to be
/// decoded. Text, not bytes: a query string is already UTF-8, so nothing
/// is validated again.
pub fn lenient_pairs(raw: &str) -> impl Iterator<Item = Param<'_>> {
    raw.split('&')
        .filter(|fragment| !fragment.is_empty())
        .map(|fragment| {
            let (name, value) = fragment.split_once('=').unwrap_or((fragment, ""));
            (decode_text(name), decode_text(value))
        })
}

/// The first value of `name` among [`lenient_pairs`], decoding only what
/// the search needs: names are compared as sent unless they hold escapes.
pub fn lenient_value<'a>(raw: &'a str, name: &str) -> Option<Cow<'a, str>> {
    raw.split('&').find_map(|fragment| {
        let (sent, value) = fragment.split_once('=').unwrap_or((fragment, ""));
        let named = if needs_decoding(sent) {
            decode_text(sent) == name
        } else {
            sent == name
        };
        (named && !fragment.is_empty()).then(|| decode_text(value))
    })
}

/// Form pairs of a body that may not be UTF-8: as text when it is (the
/// usual case, borrowed), else read from its lossy conversion, owned.
pub fn lenient_body_pairs(body: &[u8]) -> Vec<Param<'_>> {
    match std::str::from_utf8(body) {
        Ok(text) => lenient_pairs(text).collect(),
        Err(_) => lenient_pairs(&String::from_utf8_lossy(body))
            .map(|(name, value)| {
                (
                    Cow::Owned(name.into_owned()),
                    Cow::Owned(value.into_owned()),
                )
            })
            .collect(),
    }
}

fn needs_decoding(text: &str) -> bool {
    text.bytes().any(|b| b == b'%' || b == b'+')
}

fn decode_text(raw: &str) -> Cow<'_, str> {
    if needs_decoding(raw) {
        Sent {
            bytes: raw.as_bytes(),
            text: Some(raw),
            escaped: true,
        }
        .decode()
    } else {
        Cow::Borrowed(raw)
    }
}

/// The top-level fields of a JSON object, each value as its exact text:
/// strings unquoted, numbers as written (never through a float), arrays
/// and `true`/`false` as their JSON text; `null` as empty (absent).
/// `before` counts the parameters of the query, for [`MAX_PARAMS`].
fn json<'a>(raw: &'a [u8], before: usize, out: &mut ParamList<'a>) -> Result<(), ParamError> {
    let fields: Fields = serde_json::from_slice(raw).map_err(|_| ParamError::InvalidJson)?;
    for (name, value) in fields.0 {
        if name.is_empty() {
            return Err(ParamError::Nameless);
        }
        let text = value.get();
        let value = match text.as_bytes().first() {
            Some(b'"') => {
                serde_json::from_str::<String>(text).map_err(|_| ParamError::InvalidJson)?
            }
            Some(b'{') => return Err(ParamError::InvalidJson),
            _ if text == "null" => String::new(),
            _ => text.to_owned(),
        };
        out.push((Cow::Owned(name), Cow::Owned(value)));
        if before + out.len() > MAX_PARAMS {
            return Err(ParamError::TooMany(before + out.len()));
        }
    }
    Ok(())
}

/// A JSON object's fields in the order written, repeats kept.
struct Fields(Vec<(String, Box<serde_json::value::RawValue>)>);

impl<'de> serde::Deserialize<'de> for Fields {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Fields;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Fields, A::Error> {
                let mut fields = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    fields.push(entry);
                    if fields.len() > MAX_PARAMS {
                        return Err(serde::de::Error::custom("too many fields"));
                    }
                }
                Ok(Fields(fields))
            }
        }
        deserializer.deserialize_map(Visit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn select_reads_and_refuses_as_parse_does() {
        let many = "a=1&".repeat(MAX_PARAMS);
        for (query, body) in [
            ("timestamp=1&recvWindow=5", "symbol=X&signature=ab=="),
            ("", "timestamp=%31%32&x=1&timestamp=3"),
            ("a=1", "=5"),
            ("a=1", "b=1=2"),
            ("t%69mestamp=7", "recvWindow"),
            (many.as_str(), "timestamp=1"),
            ("timestamp=", "&&recvWindow=+9&"),
        ] {
            let names = ["timestamp", "recvWindow"];
            let expected = parse(query, body.as_bytes(), BodyKind::Form).map(|all| {
                all.into_iter()
                    .filter_map(|(name, value)| {
                        let i = names.iter().position(|n| *n == name)?;
                        Some((i, value.into_owned()))
                    })
                    .collect::<Vec<_>>()
            });
            let mut selected = Vec::new();
            let result = select(
                query,
                body.as_bytes(),
                BodyKind::Form,
                &names,
                |i, value| selected.push((i, value.into_owned())),
            )
            .map(|()| selected);
            assert_eq!(result, expected, "{query:?} / {body:?}");
        }
    }

    #[test]
    fn lenient_pairs_read_as_form_urlencoded_does() {
        for raw in [
            "a=1&b=2",
            "&&a=1&&",
            "name",
            "=5&x=",
            "a=1=2",
            "sp+ace=%41%42+c&%F0%9F%A6%80=%zz",
            "bad=%FF%FE&k=\u{e9}",
            "a=&b=1&a=2&a=3",
            "%61=&a=+",
            "",
        ] {
            let ours: Vec<(String, String)> = lenient_pairs(raw)
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect();
            let theirs: Vec<(String, String)> = form_urlencoded::parse(raw.as_bytes())
                .into_owned()
                .collect();
            assert_eq!(ours, theirs, "{raw:?}");
            let from_body: Vec<(String, String)> = lenient_body_pairs(raw.as_bytes())
                .into_iter()
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect();
            assert_eq!(from_body, theirs, "{raw:?} as a body");
            for (name, _) in &theirs {
                let first = theirs
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, v)| v.clone());
                assert_eq!(
                    lenient_value(raw, name).map(Cow::into_owned),
                    first,
                    "{raw:?}: {name}"
                );
            }
            assert_eq!(lenient_value(raw, "absent"), None);
        }
        let not_utf8: &[u8] = b"a=\xff\xfe&b=%41&\xc3=x";
        let from_body: Vec<(String, String)> = lenient_body_pairs(not_utf8)
            .into_iter()
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        let theirs: Vec<(String, String)> = form_urlencoded::parse(not_utf8).into_owned().collect();
        assert_eq!(from_body, theirs, "a body that is not UTF-8");
    }

    fn names(query: &str, body: &str, kind: BodyKind) -> Result<Vec<(String, String)>, ParamError> {
        parse(query, body.as_bytes(), kind).map(|params| {
            params
                .into_iter()
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect()
        })
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn query_and_form_body_decode_like_urlencoded_forms() {
        assert_eq!(
            names("a=1&b=x%20y+z", "c=%E2%82%AC&d=", BodyKind::Form),
            Ok(pairs(&[("a", "1"), ("b", "x y z"), ("c", "€"), ("d", "")]))
        );
        assert_eq!(names("", "", BodyKind::Form), Ok(vec![]));
        assert_eq!(
            names("a=1&a=2", "", BodyKind::Form),
            Ok(pairs(&[("a", "1"), ("a", "2")]))
        );
    }

    /// The form reading written the plain way (split, search, decode each
    /// piece): what the one-pass walk must equal.
    fn form_by_splitting(raw: &[u8]) -> Result<Vec<(String, String)>, ParamError> {
        let decode = |piece: &[u8]| {
            form_urlencoded::parse(&[b"x=", piece].concat())
                .next()
                .map(|(_, value)| value.into_owned())
                .unwrap_or_default()
        };
        let mut out = Vec::new();
        for fragment in raw.split(|b| *b == b'&').filter(|f| !f.is_empty()) {
            let equals = fragment.iter().position(|b| *b == b'=');
            let Some(equals) = equals.filter(|at| *at > 0) else {
                return Err(ParamError::Nameless);
            };
            let name = decode(&fragment[..equals]);
            let value = &fragment[equals + 1..];
            if value.contains(&b'=') && name != "signature" {
                return Err(ParamError::RawEquals(name));
            }
            if out.len() == MAX_PARAMS {
                return Err(ParamError::TooMany(MAX_PARAMS + 1));
            }
            out.push((name, decode(value)));
        }
        Ok(out)
    }

    proptest::proptest! {
        #[test]
        fn the_one_pass_walk_reads_as_splitting_does(
            raw in proptest::collection::vec(proptest::sample::select(
                b"ab=&%+23ACx\xc3\xa9\xff".to_vec()), 0..40),
            signature in proptest::bool::ANY,
        ) {
            let mut raw = raw;
            if signature {
                raw.extend_from_slice(b"&signature=ab==");
            }
            let read = parse("", &raw, BodyKind::Form).map(|pairs| {
                pairs
                    .into_iter()
                    .map(|(name, value)| (name.into_owned(), value.into_owned()))
                    .collect::<Vec<_>>()
            });
            proptest::prop_assert_eq!(read, form_by_splitting(&raw), "{:?}", String::from_utf8_lossy(&raw));
        }
    }

    #[test]
    fn a_body_that_is_not_utf8_is_read_piece_by_piece() {
        let body = b"a=\xff\xfe&b=caf%C3%A9&c=\xc3\xa9t\xc3\xa9&n\xe9=1";
        let read: Vec<_> = parse("q=1", body, BodyKind::Form)
            .unwrap()
            .into_iter()
            .map(|(name, value)| (name.into_owned(), value.into_owned()))
            .collect();
        let expected = [
            ("q", "1"),
            ("a", "\u{fffd}\u{fffd}"),
            ("b", "caf\u{e9}"),
            ("c", "\u{e9}t\u{e9}"),
            ("n\u{fffd}", "1"),
        ];
        let expected: Vec<_> = expected
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect();
        assert_eq!(read, expected);
    }

    #[test]
    fn fragments_without_a_name_are_refused() {
        for (query, body) in [
            ("price=3&signature=S", "000&timestamp=1"),
            ("=5", ""),
            ("a=1&=5", ""),
            ("pri", "ce=3000"),
            ("price", "=3000"),
        ] {
            assert_eq!(
                names(query, body, BodyKind::Form),
                Err(ParamError::Nameless),
                "{query} | {body}"
            );
        }
    }

    #[test]
    fn empty_fragments_carry_nothing() {
        for (query, body, count) in [("a=1&&b=2", "", 2), ("a=1&", "", 1), ("&a=1", "&b=2", 2)] {
            let params = names(query, body, BodyKind::Form).unwrap();
            assert_eq!(params.len(), count, "{query} | {body}");
        }
    }

    #[test]
    fn raw_equals_in_a_value_is_refused_except_in_the_signature() {
        assert_eq!(
            names("x=ab=cd", "", BodyKind::Form),
            Err(ParamError::RawEquals("x".into()))
        );
        assert_eq!(
            names("signature=abc%2B==", "", BodyKind::Form),
            Ok(pairs(&[("signature", "abc+==")]))
        );
    }

    #[test]
    fn json_numbers_keep_their_exact_text() {
        let body = r#"{"price": 3000.123456789, "quantity": "0.5", "flag": true, "symbols": ["A","B"], "x": null, "big": 123456789012345678901234567890}"#;
        assert_eq!(
            names("timestamp=1", body, BodyKind::Json),
            Ok(pairs(&[
                ("timestamp", "1"),
                ("price", "3000.123456789"),
                ("quantity", "0.5"),
                ("flag", "true"),
                ("symbols", r#"["A","B"]"#),
                ("x", ""),
                ("big", "123456789012345678901234567890"),
            ]))
        );
        assert_eq!(
            names("", r#"{"a":1,"a":2}"#, BodyKind::Json),
            Ok(pairs(&[("a", "1"), ("a", "2")]))
        );
        for bad in ["000", "[1]", r#"{"a":{"b":1}}"#, r#"{"":1}"#, "{"] {
            assert!(names("", bad, BodyKind::Json).is_err(), "{bad}");
        }
        assert_eq!(names("", "  ", BodyKind::Json), Ok(vec![]));
    }

    #[test]
    fn parameter_count_is_bounded() {
        let query: Vec<String> = (0..=MAX_PARAMS).map(|i| format!("p{i}=1")).collect();
        assert_eq!(
            names(&query.join("&"), "", BodyKind::Form),
            Err(ParamError::TooMany(MAX_PARAMS + 1))
        );
    }
}
