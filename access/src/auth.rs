//! Request authentication exactly as Binance does it: `X-MBX-APIKEY`,
//! `timestamp` + `recvWindow`, and a signature over the raw bytes as sent.

use std::borrow::Cow;
use std::net::IpAddr;
use std::sync::Arc;

use crate::keys::{Permission, is_key_id_shaped};
use crate::keystore::{ApiKey, KeyStore};
use crate::params::BodyKind;
use crate::{AccessError, SignatureError, SignedPayload};

/// What an endpoint demands of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Security {
    /// Anyone.
    Public,
    /// A valid key with this permission; no signature (Binance USER_STREAM, the query API).
    Key(Permission),
    /// Anyone; a key, when one is given, must be valid with this permission (CoinGecko).
    OptionalKey(Permission),
    /// A valid key with this permission and a signed, fresh request (Binance USER_DATA, TRADE).
    Signed(Permission),
}

impl Security {
    /// The permission required, if any.
    pub fn permission(self) -> Option<Permission> {
        match self {
            Self::Public => None,
            Self::Key(p) | Self::OptionalKey(p) | Self::Signed(p) => Some(p),
        }
    }
}

/// The parts of a request that authentication reads.
#[derive(Debug, Clone, Copy)]
pub struct Credentials<'a> {
    /// The key id sent (header or parameter, per API).
    pub api_key: Option<&'a str>,
    /// Raw query string, still percent-encoded.
    pub query: &'a str,
    /// Raw body.
    pub body: &'a [u8],
    /// How the body carries parameters: a form (whose `signature` counts)
    /// or JSON (signed as its raw text).
    pub body_kind: BodyKind,
}

/// Largest `recvWindow`, in milliseconds.
pub const MAX_RECV_WINDOW_MS: u64 = 60_000;
/// `recvWindow` when the request has none.
pub const DEFAULT_RECV_WINDOW_MS: u64 = 5_000;

/// The values of `names` among the request's parameters (query, then form
/// or JSON body), empty ones as absent; a name sent twice is an error.
fn params<'a, const N: usize>(
    credentials: &Credentials<'a>,
    names: [&str; N],
) -> Result<[Option<Cow<'a, str>>; N], AccessError> {
    let mut found = [const { None }; N];
    let mut repeated = false;
    crate::params::select(
        credentials.query,
        credentials.body,
        credentials.body_kind,
        &names,
        |i, value| match found[i] {
            Some(_) => repeated = true,
            None => found[i] = Some(value),
        },
    )
    .map_err(AccessError::MalformedRequest)?;
    if repeated {
        return Err(AccessError::DuplicateParameter);
    }
    Ok(found.map(|value| value.filter(|v| !v.is_empty())))
}

/// Parses a millisecond `recvWindow` with up to three decimals into microseconds.
fn parse_recv_window_us(text: &str) -> Option<u64> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if whole.is_empty()
        || fraction.len() > 3
        || !whole
            .bytes()
            .chain(fraction.bytes())
            .all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let whole: u64 = whole.parse().ok()?;
    let fraction: u64 = if fraction.is_empty() {
        0
    } else {
        format!("{fraction:0<3}").parse().ok()?
    };
    whole.checked_mul(1000)?.checked_add(fraction)
}

/// Checks `timestamp` and `recvWindow` against `now_us`.
pub fn check_freshness(credentials: &Credentials<'_>, now_us: u64) -> Result<(), AccessError> {
    let [timestamp, recv_window] = params(credentials, ["timestamp", "recvWindow"])?;
    let timestamp = timestamp.ok_or(AccessError::MissingParameter("timestamp"))?;
    let timestamp: u64 = timestamp
        .parse()
        .map_err(|_| AccessError::MalformedParameter("timestamp"))?;
    // Binance accepts milliseconds or microseconds; 16 digits are microseconds.
    let timestamp_us = if timestamp >= 1_000_000_000_000_000 {
        timestamp
    } else {
        timestamp.saturating_mul(1000)
    };
    let window_us = match recv_window {
        Some(text) => {
            parse_recv_window_us(&text).ok_or(AccessError::MalformedParameter("recvWindow"))?
        }
        None => DEFAULT_RECV_WINDOW_MS * 1000,
    };
    if window_us > MAX_RECV_WINDOW_MS * 1000 {
        return Err(AccessError::RecvWindowTooLarge);
    }
    if timestamp_us >= now_us + 1_000_000 {
        return Err(AccessError::TimestampAhead);
    }
    if now_us.saturating_sub(timestamp_us) > window_us {
        return Err(AccessError::TimestampOutsideRecvWindow);
    }
    Ok(())
}

/// Authenticates a request for an endpoint of `security`. Returns the key
/// used, or `None` on public endpoints.
pub fn authenticate(
    keys: &KeyStore,
    security: Security,
    credentials: &Credentials<'_>,
    ip: IpAddr,
    now_us: u64,
) -> Result<Option<Arc<ApiKey>>, AccessError> {
    let Some(key) = named_key(keys, security, credentials.api_key)? else {
        return Ok(None);
    };
    if let Security::Signed(_) = security {
        let signed = SignedPayload::from_request(
            credentials.query,
            credentials.body,
            credentials.body_kind == BodyKind::Form,
        )
        .map_err(signature_refusal)?;
        check_freshness(credentials, now_us)?;
        key.verify(&signed, now_us / 1000)
            .map_err(|_| AccessError::InvalidSignature)?;
    }
    usable(key, security, ip)
}

/// How a WebSocket API request shows whose it is.
#[derive(Debug, Clone)]
pub enum Proof {
    /// Its own parameters: `apiKey`, and `signature` over the others sorted
    /// by name as `name=value&…` (`payload`), as Binance signs them there.
    Params {
        /// `apiKey`, if sent.
        api_key: Option<String>,
        /// Every parameter but `signature`, sorted by name, joined, values
        /// as written.
        payload: Vec<u8>,
        /// The same with values percent-encoded (as some clients sign),
        /// where that differs.
        encoded_payload: Option<Vec<u8>>,
        /// `signature`, if sent.
        signature: Option<String>,
    },
    /// The key the connection logged on with (`session.logon`): no key or
    /// signature in the request, which is still timed (`timestamp`).
    Session {
        /// The logged-on key's id, looked up again on every request so
        /// that a revocation applies at once.
        key_id: String,
    },
}

/// Authenticates a WebSocket API request for an endpoint of `security`:
/// like [`authenticate`], with the key and signature as `proof` gives
/// them; `query` holds the request's other parameters (`timestamp`,
/// `recvWindow`) percent-encoded.
pub fn authenticate_socket(
    keys: &KeyStore,
    security: Security,
    proof: &Proof,
    query: &str,
    ip: IpAddr,
    now_us: u64,
) -> Result<Option<Arc<ApiKey>>, AccessError> {
    let timing = Credentials {
        api_key: None,
        query,
        body: b"",
        body_kind: BodyKind::Form,
    };
    let key = match proof {
        Proof::Params {
            api_key,
            payload,
            encoded_payload,
            signature,
        } => {
            let Some(key) = named_key(keys, security, api_key.as_deref())? else {
                return Ok(None);
            };
            if let Security::Signed(_) = security {
                let signature = signature
                    .as_deref()
                    .filter(|s| !s.is_empty())
                    .ok_or(AccessError::MissingParameter("signature"))?;
                check_freshness(&timing, now_us)?;
                let verifies = |payload: &[u8]| {
                    let signed = SignedPayload {
                        payload: payload.into(),
                        signature,
                    };
                    key.verify(&signed, now_us / 1000).is_ok()
                };
                if !verifies(payload) && !encoded_payload.as_deref().is_some_and(verifies) {
                    return Err(AccessError::InvalidSignature);
                }
            }
            key
        }
        Proof::Session { key_id } => {
            let Some(key) = named_key(keys, security, Some(key_id))? else {
                return Ok(None);
            };
            if let Security::Signed(_) = security {
                check_freshness(&timing, now_us)?;
            }
            key
        }
    };
    usable(key, security, ip)
}

/// The live key `api_key` names, for an endpoint of `security`; `None`
/// where no key is needed (public, or an optional key not sent).
fn named_key(
    keys: &KeyStore,
    security: Security,
    api_key: Option<&str>,
) -> Result<Option<Arc<ApiKey>>, AccessError> {
    if security.permission().is_none() {
        return Ok(None);
    }
    let Some(key_id) = api_key.filter(|k| !k.is_empty()) else {
        return match security {
            Security::OptionalKey(_) => Ok(None),
            _ => Err(AccessError::MissingApiKey),
        };
    };
    if !is_key_id_shaped(key_id) {
        return Err(AccessError::MalformedApiKey);
    }
    keys.get(key_id)
        .filter(|k| k.revoked_ms.is_none())
        .ok_or(AccessError::InvalidApiKey)
        .map(Some)
}

fn signature_refusal(error: SignatureError) -> AccessError {
    match error {
        SignatureError::Missing => AccessError::MissingParameter("signature"),
        SignatureError::Duplicate => AccessError::DuplicateParameter,
        SignatureError::Invalid => AccessError::InvalidSignature,
    }
}

/// `key`, if it may be used from `ip` for an endpoint of `security`.
fn usable(
    key: Arc<ApiKey>,
    security: Security,
    ip: IpAddr,
) -> Result<Option<Arc<ApiKey>>, AccessError> {
    if !key.allows_ip(ip) {
        return Err(AccessError::IpNotAllowed);
    }
    if let Some(permission) = security.permission()
        && !key.permissions.allows(permission)
    {
        return Err(AccessError::PermissionDenied(permission));
    }
    Ok(Some(key))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn creds<'a>(query: &'a str, body: &'a str) -> Credentials<'a> {
        Credentials {
            api_key: None,
            query,
            body: body.as_bytes(),
            body_kind: BodyKind::Form,
        }
    }

    const NOW_MS: u64 = 1_700_000_000_000;

    #[test]
    fn freshness_follows_binance_rules() {
        let now_us = NOW_MS * 1000;
        let ok = |q: &str| check_freshness(&creds(q, ""), now_us);
        ok(&format!("timestamp={NOW_MS}")).unwrap();
        ok(&format!("timestamp={}", NOW_MS - 5_000)).unwrap();
        assert_eq!(
            ok(&format!("timestamp={}", NOW_MS - 5_001)),
            Err(AccessError::TimestampOutsideRecvWindow)
        );
        ok(&format!("timestamp={}&recvWindow=60000", NOW_MS - 59_000)).unwrap();
        ok(&format!("timestamp={}&recvWindow=6000.346", NOW_MS - 6_000)).unwrap();
        assert_eq!(
            ok(&format!("timestamp={NOW_MS}&recvWindow=60001")),
            Err(AccessError::RecvWindowTooLarge)
        );
        ok(&format!("timestamp={}", NOW_MS + 999)).unwrap();
        assert_eq!(
            ok(&format!("timestamp={}", NOW_MS + 1_000)),
            Err(AccessError::TimestampAhead)
        );
        ok(&format!("timestamp={}", NOW_MS * 1000 - 2)).unwrap();
        assert_eq!(ok(""), Err(AccessError::MissingParameter("timestamp")));
        assert_eq!(
            ok("timestamp="),
            Err(AccessError::MissingParameter("timestamp"))
        );
        assert_eq!(
            ok("timestamp=abc"),
            Err(AccessError::MalformedParameter("timestamp"))
        );
        assert_eq!(
            ok(&format!("timestamp={NOW_MS}&recvWindow=1e3")),
            Err(AccessError::MalformedParameter("recvWindow"))
        );
        assert_eq!(
            ok(&format!("timestamp={NOW_MS}&timestamp={NOW_MS}")),
            Err(AccessError::DuplicateParameter)
        );
        check_freshness(&creds("", &format!("timestamp={NOW_MS}")), now_us).unwrap();
        let json = format!(r#"{{"symbol":"ETHUSDT","timestamp":{NOW_MS}}}"#);
        let json_creds = Credentials {
            api_key: None,
            query: "",
            body: json.as_bytes(),
            body_kind: BodyKind::Json,
        };
        check_freshness(&json_creds, now_us).unwrap();
    }
}
