//! Why access was refused. Each API maps these once to its own wire shape.

use std::time::Duration;

/// A refused request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AccessError {
    /// The endpoint needs a key and none was sent.
    #[error("API key missing")]
    MissingApiKey,
    /// The key is not of a key's shape.
    #[error("API key format invalid")]
    MalformedApiKey,
    /// Unknown or revoked key.
    #[error("API key unknown or revoked")]
    InvalidApiKey,
    /// The key is locked to other IP addresses.
    #[error("request IP not on the key's allow-list")]
    IpNotAllowed,
    /// The key lacks the permission the endpoint needs.
    #[error("API key lacks the {0:?} permission")]
    PermissionDenied(crate::Permission),
    /// A mandatory security parameter is absent.
    #[error("mandatory parameter '{0}' was not sent")]
    MissingParameter(&'static str),
    /// A security parameter does not parse.
    #[error("parameter '{0}' is malformed")]
    MalformedParameter(&'static str),
    /// The parameters cannot be read unambiguously.
    #[error("{0}")]
    MalformedRequest(crate::params::ParamError),
    /// The body exceeds the configured size.
    #[error("request body too large")]
    BodyTooLarge,
    /// The body did not arrive within the configured time.
    #[error("request body not received in time")]
    BodyTimeout,
    /// A security parameter appears twice.
    #[error("duplicate values for a parameter")]
    DuplicateParameter,
    /// `recvWindow` above 60000.
    #[error("recvWindow above 60000")]
    RecvWindowTooLarge,
    /// The request is older than its `recvWindow`.
    #[error("timestamp outside the recvWindow")]
    TimestampOutsideRecvWindow,
    /// The request is dated 1000 ms or more into the future.
    #[error("timestamp ahead of the server's time")]
    TimestampAhead,
    /// The signature does not match.
    #[error("signature invalid")]
    InvalidSignature,
    /// Request weight over the per-minute limit.
    #[error("request weight limit {limit}/min exceeded")]
    TooMuchWeight {
        /// The limit.
        limit: u32,
        /// When to retry.
        retry_after: Duration,
    },
    /// Order count over a limit.
    #[error("order limit {limit} per {interval} exceeded")]
    TooManyOrders {
        /// The limit.
        limit: u32,
        /// `10 SECOND` or `1 DAY`.
        interval: &'static str,
        /// When to retry.
        retry_after: Duration,
    },
    /// Query calls over the key's per-second limit.
    #[error("query limit {per_second}/s exceeded")]
    TooManyCalls {
        /// The limit.
        per_second: u32,
        /// When to retry.
        retry_after: Duration,
    },
    /// Banned after ignoring 429 answers.
    #[error("banned until {until_ms}")]
    Banned {
        /// Ban end, Unix milliseconds.
        until_ms: u64,
        /// Time left.
        retry_after: Duration,
    },
    /// Too many requests with bad keys from this IP.
    #[error("too many invalid API key attempts")]
    TooManyInvalidKeys {
        /// When to retry.
        retry_after: Duration,
    },
}

impl AccessError {
    /// How long the client should wait, for refusals that are about rate.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::TooMuchWeight { retry_after, .. }
            | Self::TooManyOrders { retry_after, .. }
            | Self::TooManyCalls { retry_after, .. }
            | Self::Banned { retry_after, .. }
            | Self::TooManyInvalidKeys { retry_after } => Some(*retry_after),
            _ => None,
        }
    }

    /// Whether the failure is a bad credential: an unknown key, or a known
    /// key with a wrong signature or from a disallowed address. Each counts
    /// against the sending IP's budget of failed authentications.
    pub fn is_bad_credential(&self) -> bool {
        matches!(
            self,
            Self::MalformedApiKey
                | Self::InvalidApiKey
                | Self::InvalidSignature
                | Self::IpNotAllowed
        )
    }
}
