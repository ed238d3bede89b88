//! Extractors: the parameters of public and signed requests, refused beyond what the route reads (-1104).

use std::sync::Arc;

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use weiport_access::params::BodyKind;
use weiport_access::{ApiKey, Caller};
use weiport_exchange::engine::AccountId;

use crate::error::{BinanceError, Refusal};
use crate::params::Params;

/// What every signed request may carry besides the endpoint's own parameters.
pub(crate) const SIGNED: &[&str] = &["timestamp", "recvWindow"];

/// The parameter names the route reads, in groups, as the route table gave
/// them to the access guard: anything else is refused (-1104).
pub(crate) fn accepted(extensions: &axum::http::Extensions) -> &'static [&'static [&'static str]] {
    extensions
        .get::<Caller>()
        .map_or(&[], |caller| caller.reads)
}

/// The parameters of a public request (query string only).
pub(crate) struct Query(pub(crate) Params);

impl<S: Send + Sync> FromRequestParts<S> for Query {
    type Rejection = BinanceError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let query = parts.uri.query().unwrap_or("");
        // A client that signs every request may sign public ones too: the
        // signature's parameters are read (and change nothing) there.
        let own = accepted(&parts.extensions);
        Params::parse(query, b"", BodyKind::Form, &[own, &[SIGNED]]).map(Self)
    }
}

/// A request that passed the access guard with a key: the key, its
/// account, and the parameters from the query and a form or JSON body.
pub(crate) struct Signed {
    pub(crate) key: Arc<ApiKey>,
    pub(crate) account: AccountId,
    pub(crate) params: Params,
    /// The client's address, as the access guard saw it.
    pub(crate) ip: std::net::IpAddr,
}

impl<S: Send + Sync> FromRequest<S> for Signed {
    type Rejection = Response;

    async fn from_request(request: Request, _: &S) -> Result<Self, Self::Rejection> {
        let caller = request.extensions().get::<Caller>();
        let ip = caller.map_or(std::net::IpAddr::from([0, 0, 0, 0]), |c| c.ip);
        let key = caller
            .and_then(|caller| caller.key.clone())
            .ok_or_else(|| BinanceError::from(Refusal::Unauthorized).into_response())?;
        let (parts, body) = request.into_parts();
        let kind = BodyKind::of(&parts.headers);
        let own = accepted(&parts.extensions);
        // The access guard read the body already, within the size limit.
        let body = axum::body::to_bytes(body, usize::MAX)
            .await
            .map_err(|_| BinanceError::unavailable().into_response())?;
        let query = parts.uri.query().unwrap_or("");
        let params = Params::parse(query, &body, kind, &[own, &[SIGNED]])
            .map_err(IntoResponse::into_response)?;
        Ok(Self {
            account: key.account,
            key,
            params,
            ip,
        })
    }
}
