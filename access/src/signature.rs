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
    pub payload: Vec<u8>,
    /// The signature's value as sent (still percent-encoded).
    pub signature: &'a str,
}

/// Finds the single `signature=` parameter in `params` and returns the
/// parameters without it, plus its value.
fn take_signature(params: &[u8]) -> Result<(Vec<u8>, Option<&str>), SignatureError> {
    let mut rest = Vec::with_capacity(params.len());
    let mut signature = None;
    for part in params.split(|b| *b == b'&') {
        if let Some(value) = part.strip_prefix(b"signature=") {
            if signature.is_some() {
                return Err(SignatureError::Duplicate);
            }
            signature = Some(std::str::from_utf8(value).map_err(|_| SignatureError::Invalid)?);
            continue;
        }
        if !rest.is_empty() {
            rest.push(b'&');
        }
        rest.extend_from_slice(part);
    }
    Ok((rest, signature))
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
            (Some(signature), None) | (None, Some(signature)) => Ok(Self { payload, signature }),
            (None, None) => Err(SignatureError::Missing),
        }
    }

    /// Checks a hex HMAC-SHA256 signature (either letter case) in constant time.
    pub fn verify_hmac_sha256(&self, secret: &[u8]) -> Result<(), SignatureError> {
        let mut expected = [0u8; 32];
        decode_hex(self.signature.as_bytes(), &mut expected)?;
        let mut mac =
            Hmac::<Sha256>::new_from_slice(secret).map_err(|_| SignatureError::Invalid)?;
        mac.update(&self.payload);
        mac.verify_slice(&expected)
            .map_err(|_| SignatureError::Invalid)
    }
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
