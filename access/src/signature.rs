//! Binance-style request signatures: the signed payload is the raw query
//! string followed directly by the raw body, exactly as sent, without the
//! `signature` parameter.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// Why a signature was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// No `signature` parameter in the query or the body.
    #[error("mandatory parameter 'signature' was not sent")]
    Missing,
    /// More than one `signature` parameter.
    #[error("parameter 'signature' was sent more than once")]
    Duplicate,
    /// The signature does not match the payload.
    #[error("signature for this request is not valid")]
    Invalid,
}

/// A request's signed payload with the signature taken out of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedPayload<'a> {
    /// Query string and body concatenated, minus the `signature` parameter.
    pub payload: std::borrow::Cow<'a, [u8]>,
    /// The signature's value as sent (still percent-encoded).
    pub signature: &'a str,
}

/// Finds the single `signature=` parameter in `params` and returns the raw
/// bytes without it (and without one `&` joining it to its neighbours), plus
/// its value. Everything else stays byte for byte as sent.
fn take_signature(params: &[u8]) -> Result<(Vec<u8>, Option<&str>), SignatureError> {
    let mut found: Option<(usize, usize)> = None;
    let mut start = 0;
    let ends = memchr::memchr_iter(b'&', params).chain(std::iter::once(params.len()));
    for end in ends {
        if params[start..end].starts_with(b"signature=") {
            if found.is_some() {
                return Err(SignatureError::Duplicate);
            }
            found = Some((start, end));
        }
        start = end + 1;
    }
    let Some((start, end)) = found else {
        return Ok((params.to_vec(), None));
    };
    let value = std::str::from_utf8(&params[start + "signature=".len()..end])
        .map_err(|_| SignatureError::Invalid)?;
    let (cut_from, cut_to) = if start > 0 {
        (start - 1, end)
    } else if end < params.len() {
        (start, end + 1)
    } else {
        (start, end)
    };
    let rest = [&params[..cut_from], &params[cut_to..]].concat();
    Ok((rest, Some(value)))
}

impl<'a> SignedPayload<'a> {
    /// Splits a request's raw query string and raw body into payload and signature.
    /// A JSON body (signed as its raw text) must carry the signature in the query.
    pub fn from_request(
        query: &'a str,
        body: &'a [u8],
        body_is_form: bool,
    ) -> Result<Self, SignatureError> {
        let (mut payload, in_query) = take_signature(query.as_bytes())?;
        let in_body = if body_is_form {
            let (body_rest, in_body) = take_signature(body)?;
            payload.extend_from_slice(&body_rest);
            in_body
        } else {
            payload.extend_from_slice(body);
            None
        };
        match (in_query, in_body) {
            (Some(_), Some(_)) => Err(SignatureError::Duplicate),
            (Some(signature), None) | (None, Some(signature)) => Ok(Self {
                payload: payload.into(),
                signature,
            }),
            (None, None) => Err(SignatureError::Missing),
        }
    }

    /// Checks a base64 Ed25519 signature (percent-encoded on the wire).
    pub fn verify_ed25519(&self, key: &ed25519_dalek::VerifyingKey) -> Result<(), SignatureError> {
        use base64::Engine;
        let text = percent_decode(self.signature).ok_or(SignatureError::Invalid)?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.as_bytes())
            .map_err(|_| SignatureError::Invalid)?;
        let signature =
            ed25519_dalek::Signature::from_slice(&bytes).map_err(|_| SignatureError::Invalid)?;
        key.verify_strict(&self.payload, &signature)
            .map_err(|_| SignatureError::Invalid)
    }

    /// Checks a hex HMAC-SHA256 signature (either letter case) in constant time.
    pub fn verify_hmac_sha256(&self, secret: &[u8]) -> Result<(), SignatureError> {
        self.verify_hmac(&HmacKey::new(secret))
    }

    /// Like [`SignedPayload::verify_hmac_sha256`] with a key prepared once.
    pub fn verify_hmac(&self, key: &HmacKey) -> Result<(), SignatureError> {
        let mut expected = [0u8; 32];
        decode_hex(self.signature.as_bytes(), &mut expected)?;
        let mut mac = key.0.clone();
        mac.update(&self.payload);
        mac.verify_slice(&expected)
            .map_err(|_| SignatureError::Invalid)
    }
}

/// An HMAC-SHA256 key with its padded blocks already hashed, so verifying a
/// request costs only the payload's hashing.
#[derive(Clone)]
pub struct HmacKey(Hmac<Sha256>);

impl HmacKey {
    /// Prepares `secret`.
    pub fn new(secret: &[u8]) -> Self {
        Self(Hmac::<Sha256>::new_from_slice(secret).expect("HMAC accepts keys of any length"))
    }
}

impl std::fmt::Debug for HmacKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HmacKey(..)")
    }
}

/// Decodes `%XX` escapes; a literal `+` stays `+` (it is base64, not a space).
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn decode_hex(text: &[u8], out: &mut [u8; 32]) -> Result<(), SignatureError> {
    if text.len() != 64 {
        return Err(SignatureError::Invalid);
    }
    fn nibble(c: u8) -> Result<u8, SignatureError> {
        match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            b'A'..=b'F' => Ok(c - b'A' + 10),
            _ => Err(SignatureError::Invalid),
        }
    }
    for (byte, pair) in out.iter_mut().zip(text.chunks_exact(2)) {
        *byte = nibble(pair[0])? << 4 | nibble(pair[1])?;
    }
    Ok(())
}

/// Hex HMAC-SHA256 of `payload`: what a client sends as `signature`.
pub fn sign_hmac_sha256(secret: &[u8], payload: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC accepts keys of any length");
    mac.update(payload);
    mac.finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"NhqPtmdSJYdKjVHjA7PZj4Mge3R5YNiP1e3UZjInClVN65XAbvqqM6A7H5fATj0j";
    const PARAMS: &str = "symbol=LTCBTC&side=BUY&type=LIMIT&timeInForce=GTC&quantity=1&price=0.1&recvWindow=5000&timestamp=1499827319559";
    const PARAMS_SIG: &str = "c8db56825ae71d6d79447849e617115f4a920fa2acdcab2b053c4b2838bd6b71";

    fn verify(query: &str, body: &str) -> Result<(), SignatureError> {
        SignedPayload::from_request(query, body.as_bytes(), true)?.verify_hmac_sha256(SECRET)
    }

    #[test]
    fn documented_vector_all_in_query() {
        assert_eq!(sign_hmac_sha256(SECRET, PARAMS.as_bytes()), PARAMS_SIG);
        verify(&format!("{PARAMS}&signature={PARAMS_SIG}"), "").unwrap();
    }

    #[test]
    fn documented_vector_all_in_body_and_upper_case_hex() {
        verify(
            "",
            &format!("{PARAMS}&signature={}", PARAMS_SIG.to_uppercase()),
        )
        .unwrap();
    }

    #[test]
    fn documented_vector_mixed_query_and_body() {
        let query = "symbol=LTCBTC&side=BUY&type=LIMIT&timeInForce=GTC";
        let body = "quantity=1&price=0.1&recvWindow=5000&timestamp=1499827319559";
        let signature = "0fd168b8ddb4876a0358a8d14d0c9f3da0e9b20c5d52b2a00fcf7d1c602f9a77";
        verify(&format!("{query}&signature={signature}"), body).unwrap();
        verify(query, &format!("{body}&signature={signature}")).unwrap();
    }

    #[test]
    fn documented_vector_percent_encoded_non_ascii() {
        let query = "symbol=%EF%BC%91%EF%BC%92%EF%BC%93%EF%BC%94%EF%BC%95%EF%BC%96&side=BUY&type=LIMIT&timeInForce=GTC&quantity=1&price=0.1&recvWindow=5000&timestamp=1499827319559";
        let signature = "e1353ec6b14d888f1164ae9af8228a3dbd508bc82eb867db8ab6046442f33ef3";
        verify(&format!("{query}&signature={signature}"), "").unwrap();
    }

    #[test]
    fn signature_first_or_in_the_middle_is_removed_cleanly() {
        verify(&format!("signature={PARAMS_SIG}&{PARAMS}"), "").unwrap();
        let (head, tail) = PARAMS.split_at(PARAMS.find("&quantity").unwrap());
        verify(&format!("{head}&signature={PARAMS_SIG}{tail}"), "").unwrap();
    }

    #[test]
    fn a_json_body_is_signed_as_raw_text() {
        let body =
            r#"{"symbol":"ETHUSDT","side":"BUY","type":"LIMIT","quantity":"1","price":"10"}"#;
        let query = "timestamp=1700000000000";
        let signature = sign_hmac_sha256(SECRET, format!("{query}{body}").as_bytes());
        SignedPayload::from_request(
            &format!("{query}&signature={signature}"),
            body.as_bytes(),
            false,
        )
        .unwrap()
        .verify_hmac_sha256(SECRET)
        .unwrap();
    }

    #[test]
    fn ed25519_signatures_in_base64_percent_encoded() {
        use base64::Engine;
        use ed25519_dalek::Signer;
        let signing = ed25519_dalek::SigningKey::from_bytes(&[42u8; 32]);
        let signature = signing.sign(PARAMS.as_bytes()).to_bytes();
        let b64 = base64::engine::general_purpose::STANDARD.encode(signature);
        let encoded = b64
            .replace('+', "%2B")
            .replace('/', "%2F")
            .replace('=', "%3D");
        let request = format!("{PARAMS}&signature={encoded}");
        let signed = SignedPayload::from_request(&request, b"", true).unwrap();
        signed.verify_ed25519(&signing.verifying_key()).unwrap();
        let other = ed25519_dalek::SigningKey::from_bytes(&[43u8; 32]).verifying_key();
        assert_eq!(signed.verify_ed25519(&other), Err(SignatureError::Invalid));
        let garbage = SignedPayload::from_request("a=1&signature=%ZZ", b"", true).unwrap();
        assert_eq!(garbage.verify_ed25519(&other), Err(SignatureError::Invalid));
    }

    proptest::proptest! {
        #[test]
        fn any_single_byte_change_breaks_the_signature(
            query in "[a-zA-Z0-9=&%._-]{0,80}",
            body in "[a-zA-Z0-9=&%._-]{0,80}",
            in_body: bool,
            position in 0usize..160,
            replacement: u8,
        ) {
            let signature = sign_hmac_sha256(SECRET, format!("{query}{body}").as_bytes());
            let signed_query = format!("{query}&signature={signature}");
            let signed = |q: &[u8], b: &[u8]| {
                let q = String::from_utf8_lossy(q);
                SignedPayload::from_request(&q, b, false).and_then(|s| s.verify_hmac_sha256(SECRET))
            };
            proptest::prop_assert!(signed(signed_query.as_bytes(), body.as_bytes()).is_ok());
            let mut q = query.clone().into_bytes();
            let mut b = body.clone().into_bytes();
            let target = if in_body { &mut b } else { &mut q };
            proptest::prop_assume!(!target.is_empty());
            let at = position % target.len();
            proptest::prop_assume!(target[at] != replacement && replacement.is_ascii_graphic() && replacement != b'&');
            target[at] = replacement;
            let tampered_query = format!("{}&signature={signature}", String::from_utf8_lossy(&q));
            proptest::prop_assert!(signed(tampered_query.as_bytes(), &b).is_err());
        }
    }

    #[test]
    fn refusals() {
        assert_eq!(verify(PARAMS, ""), Err(SignatureError::Missing));
        assert_eq!(
            verify(
                &format!("{PARAMS}&signature={PARAMS_SIG}"),
                &format!("signature={PARAMS_SIG}")
            ),
            Err(SignatureError::Duplicate)
        );
        assert_eq!(
            verify(&format!("{PARAMS}&signature=zz"), ""),
            Err(SignatureError::Invalid)
        );
        let mut wrong = PARAMS_SIG.to_owned();
        wrong.replace_range(0..1, "d");
        assert_eq!(
            verify(&format!("{PARAMS}&signature={wrong}"), ""),
            Err(SignatureError::Invalid)
        );
        // Decoded-and-re-encoded payloads are not the bytes that were signed.
        assert_eq!(
            verify(
                &format!("{}&signature={PARAMS_SIG}", PARAMS.replace("0.1", "0%2E1")),
                ""
            ),
            Err(SignatureError::Invalid)
        );
    }
}
