//! The query API's refusal: Etherscan's `{"status":"0","message":"NOTOK",
//! "result":…}` with its HTTP status, and the texts refusals share.

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use weiport_access::AccessError;

pub(crate) const MSG_MISSING_KEY: &str = "Missing/Invalid API Key";
pub(crate) const MSG_INVALID_KEY: &str = "Invalid API Key";
pub(crate) const MSG_BAD_MODULE: &str = "Error! Missing Or invalid Module name";
pub(crate) const MSG_BAD_ACTION: &str = "Error! Missing Or invalid Action name";
pub(crate) const MSG_BAD_ADDRESS: &str = "Error! Invalid address format";
pub(crate) const MSG_BAD_MULTI: &str = "Error! Invalid multi address format";
pub(crate) const MSG_BAD_CHAIN: &str = "Missing or unsupported chainid parameter (required for v2 api), please see https://api.etherscan.io/v2/chainlist for the list of supported chainids";

/// An Etherscan-shaped refusal: the reason travels in `result`, the kind
/// sets the HTTP status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// The request as sent cannot be answered (HTTP 400).
    #[error("{0}")]
    Bad(String),
    /// The request cannot be answered now: the index or the node is not
    /// ready (HTTP 503).
    #[error("{0}")]
    Unavailable(String),
    /// The access guard refused the caller (its key, its rate, its body).
    #[error("{reason}")]
    Refused {
        /// The HTTP status Etherscan answers it with.
        status: StatusCode,
        /// Etherscan's words for it.
        reason: String,
    },
}

impl QueryError {
    /// A refusal of the request as sent: HTTP 400.
    pub(crate) fn bad(result: impl Into<String>) -> Self {
        Self::Bad(result.into())
    }

    /// A request that cannot be answered now: HTTP 503.
    pub(crate) fn unavailable(result: impl Into<String>) -> Self {
        Self::Unavailable(result.into())
    }

    /// Whether the server, not the request, is at fault (503).
    pub(crate) fn is_unavailable(&self) -> bool {
        matches!(self, Self::Unavailable(_))
    }

    fn status(&self) -> StatusCode {
        match self {
            Self::Bad(_) => StatusCode::BAD_REQUEST,
            Self::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::Refused { status, .. } => *status,
        }
    }

    /// The access guard's refusal, in Etherscan's words.
    pub(crate) fn from_access(error: &AccessError) -> Self {
        let (status, reason) = match error {
            AccessError::MissingApiKey => (StatusCode::UNAUTHORIZED, MSG_MISSING_KEY.to_owned()),
            AccessError::TooManyCalls { per_second, .. } => (
                StatusCode::TOO_MANY_REQUESTS,
                format!("Max calls per sec rate limit reached ({per_second}/sec)"),
            ),
            AccessError::TooManyInvalidKeys { .. } => (
                StatusCode::TOO_MANY_REQUESTS,
                "Too many invalid api key attempts, please try again later".to_owned(),
            ),
            AccessError::TooMuchWeight { .. }
            | AccessError::TooManyOrders { .. }
            | AccessError::Banned { .. } => (
                StatusCode::TOO_MANY_REQUESTS,
                "Max rate limit reached".to_owned(),
            ),
            AccessError::BodyTooLarge => (
                StatusCode::PAYLOAD_TOO_LARGE,
                "Request body too large".to_owned(),
            ),
            AccessError::BodyTimeout => (
                StatusCode::REQUEST_TIMEOUT,
                "Request body not received in time".to_owned(),
            ),
            _ => (StatusCode::UNAUTHORIZED, MSG_INVALID_KEY.to_owned()),
        };
        Self::Refused { status, reason }
    }

    /// The reason alone, for answers that carry it in another envelope.
    pub(crate) fn into_reason(self) -> String {
        match self {
            Self::Bad(reason) | Self::Unavailable(reason) | Self::Refused { reason, .. } => reason,
        }
    }

    /// The answer: with this error's status, or with 200 when `http_200`
    /// (Etherscan's own habit).
    pub(crate) fn into_response(self, http_200: bool) -> Response {
        let status = if http_200 {
            StatusCode::OK
        } else {
            self.status()
        };
        let body =
            serde_json::json!({ "status": "0", "message": "NOTOK", "result": self.into_reason() });
        (
            status,
            [(header::CONTENT_TYPE, weiport_access::JSON)],
            body.to_string(),
        )
            .into_response()
    }
}

/// A storage failure, as the query API reports it.
pub(crate) fn unavailable(error: weiport_storage::StorageError) -> QueryError {
    QueryError::unavailable(format!("Error! Index unavailable: {error}"))
}
