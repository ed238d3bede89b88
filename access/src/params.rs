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
    for fragment in Fragments::new(raw, std::str::from_utf8(raw).ok()) {
        let Some(value) = fragment.value.filter(|_| !fragment.name.bytes.is_empty()) else {
            return Err(ParamError::Nameless);
        };
        let name = fragment.name.decode();
        // A base64 signature may arrive with its padding unencoded; it is
        // taken out of the payload before verification, so it moves nothing.
        if fragment.raw_equals && name != "signature" {
            return Err(ParamError::RawEquals(name.into_owned()));
        }
        *count += 1;
        if *count > MAX_PARAMS {
            return Err(ParamError::TooMany(*count));
        }
        each(name, value);
    }
    Ok(())
}

/// The non-empty `&`-separated fragments of a form, each found in one pass
/// over its bytes: where it starts and ends, its first `=`, whether its
/// name or value holds an escape, whether its value holds a raw `=`
/// (ordinary bytes skipped by [`next_special`]).
struct Fragments<'a> {
    raw: &'a [u8],
    /// `raw` as text, when it is valid UTF-8: every piece split at an
    /// ASCII `&` or `=` of valid text is valid text, so none is checked again.
    text: Option<&'a str>,
    /// Where the next fragment starts; past the end once the last is taken.
    at: usize,
}

/// One fragment of a form, as [`Fragments`] finds it.
struct Fragment<'a> {
    name: Sent<'a>,
    /// What follows the first `=`; `None` when the fragment has no `=`.
    value: Option<Sent<'a>>,
    /// Whether the value holds another `=`.
    raw_equals: bool,
}

impl<'a> Fragments<'a> {
    fn new(raw: &'a [u8], text: Option<&'a str>) -> Self {
        Self { raw, text, at: 0 }
    }

    fn piece(&self, from: usize, to: usize, escaped: bool) -> Sent<'a> {
        Sent {
            bytes: &self.raw[from..to],
            text: self.text.map(|text| &text[from..to]),
            escaped,
        }
    }
}

impl<'a> Iterator for Fragments<'a> {
    type Item = Fragment<'a>;

    // Inlined into each walk, where it was a call per fragment.
    #[inline(always)]
    fn next(&mut self) -> Option<Fragment<'a>> {
        let raw = self.raw;
        while self.at <= raw.len() {
            let start = self.at;
            let mut at = start;
            let mut equals = None;
            let (mut name_escaped, mut value_escaped, mut raw_equals) = (false, false, false);
            loop {
                at = next_special(raw, at);
                match raw.get(at) {
                    None | Some(b'&') => break,
                    Some(b'=') if equals.is_none() => equals = Some(at),
                    Some(b'=') => raw_equals = true,
                    Some(_) if equals.is_none() => name_escaped = true,
                    Some(_) => value_escaped = true,
                }
                at += 1;
            }
            self.at = at + 1;
            if at > start {
                return Some(Fragment {
                    name: self.piece(start, equals.unwrap_or(at), name_escaped),
                    value: equals.map(|equals| self.piece(equals + 1, at, value_escaped)),
                    raw_equals,
                });
            }
        }
        None
    }
}

/// Where the first byte a form walk stops at ([`FORM_SPECIAL`]) lies, from
/// `at` on; the length of `raw` when none does. Eight bytes a step, since
/// most of a signed request is long runs of ordinary bytes (keys,
/// signatures, addresses): XOR with one of the four bytes leaves a zero
/// byte where it was, and subtracting one from every byte flags each zero
/// (exactly at the lowest: a borrow only flags bytes above a true zero).
fn next_special(raw: &[u8], mut at: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    while let Some(chunk) = raw.get(at..at + 8) {
        let mut word = [0; 8];
        word.copy_from_slice(chunk);
        let word = u64::from_le_bytes(word);
        let zeros = |byte: u8| {
            let xored = word ^ (ONES * u64::from(byte));
            xored.wrapping_sub(ONES) & !xored & HIGHS
        };
        let found = zeros(b'&') | zeros(b'=') | zeros(b'%') | zeros(b'+');
        if found != 0 {
            return at + (found.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    while at < raw.len() && !FORM_SPECIAL[usize::from(raw[at])] {
        at += 1;
    }
    at
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
    lenient(raw.as_bytes(), Some(raw))
}

/// The first value of `name` among [`lenient_pairs`], decoding only what
/// the search needs: names are compared as sent unless they hold escapes.
pub fn lenient_value<'a>(raw: &'a str, name: &str) -> Option<Cow<'a, str>> {
    lenient_find(raw, name, false)
}

/// The first non-empty value of `name` among [`lenient_pairs`] (a pair
/// sent empty is passed over), decoding only that value.
pub fn lenient_filled<'a>(raw: &'a str, name: &str) -> Option<Cow<'a, str>> {
    lenient_find(raw, name, true)
}

fn lenient_find<'a>(raw: &'a str, name: &str, skip_empty: bool) -> Option<Cow<'a, str>> {
    Fragments::new(raw.as_bytes(), Some(raw)).find_map(|fragment| {
        // Decoding keeps an empty value empty and a sent one non-empty.
        if skip_empty && fragment.value.as_ref().is_none_or(|v| v.bytes.is_empty()) {
            return None;
        }
        let named = if fragment.name.escaped {
            fragment.name.decode() == name
        } else {
            fragment.name.bytes == name.as_bytes()
        };
        named.then(|| fragment.value.map_or(Cow::Borrowed(""), Sent::decode))
    })
}

/// Form pairs of a body that may not be UTF-8, as [`lenient_pairs`] reads
/// text: borrowed where valid and unescaped, a piece that is not valid
/// UTF-8 read lossily (`&` and `=` are ASCII, so no sequence spans them).
pub fn lenient_body_pairs(body: &[u8]) -> Vec<Param<'_>> {
    lenient(body, std::str::from_utf8(body).ok()).collect()
}

/// The lenient reading of `raw` (`text` when it is valid UTF-8).
fn lenient<'a>(raw: &'a [u8], text: Option<&'a str>) -> impl Iterator<Item = Param<'a>> {
    Fragments::new(raw, text).map(|fragment| {
        let value = fragment.value.map_or(Cow::Borrowed(""), Sent::decode);
        (fragment.name.decode(), value)
    })
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
                b"ab=&%+23ACx\xc3\xa9\xff".to_vec()), 0..80),
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

        #[test]
        fn the_eight_byte_search_stops_where_a_byte_by_byte_one_does(
            raw in proptest::collection::vec(proptest::num::u8::ANY, 0..64),
            from in 0usize..64,
        ) {
            let from = from.min(raw.len());
            let by_byte = raw[from..]
                .iter()
                .position(|b| FORM_SPECIAL[usize::from(*b)])
                .map_or(raw.len(), |i| from + i);
            proptest::prop_assert_eq!(next_special(&raw, from), by_byte);
        }

        #[test]
        fn the_lenient_walk_reads_as_form_urlencoded_does(
            raw in proptest::collection::vec(proptest::sample::select(
                vec!['a', 'b', '=', '&', '%', '+', '2', '3', 'A', '\u{e9}']), 0..80),
            name in proptest::sample::select(vec!["a", "b", "ab", "a b", "", "\u{e9}"]),
        ) {
            let raw: String = raw.into_iter().collect();
            let theirs: Vec<(String, String)> =
                form_urlencoded::parse(raw.as_bytes()).into_owned().collect();
            let ours: Vec<(String, String)> = lenient_pairs(&raw)
                .map(|(name, value)| (name.into_owned(), value.into_owned()))
                .collect();
            proptest::prop_assert_eq!(&ours, &theirs, "{:?}", raw);
            let first = theirs.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
            proptest::prop_assert_eq!(lenient_value(&raw, name).map(Cow::into_owned), first, "{:?}", raw);
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
