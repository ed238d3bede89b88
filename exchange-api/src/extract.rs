//! Extractors: the parameters of public and signed requests, refused beyond what the route reads (-1104).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use weiport_access::params::BodyKind;
use weiport_access::{ApiKey, Caller};

use crate::api::*;
use crate::error::BinanceError;
use crate::params::Params;
use weiport_exchange::engine::AccountId;

/// The parameter names a route reads, in groups; set on each route by the
/// route table, read by the extractors to refuse anything else (-1104).
#[derive(Clone, Copy)]
pub(crate) struct Accepted(pub(crate) &'static [&'static [&'static str]]);

/// What every signed request may carry besides the endpoint's own parameters.
pub(crate) const SIGNED: &[&str] = &["timestamp", "recvWindow"];

pub(crate) fn accepted(extensions: &axum::http::Extensions) -> &'static [&'static [&'static str]] {
    extensions
        .get::<Accepted>()
        .map_or(&[], |accepted| accepted.0)
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
        let mut groups: Vec<&[&str]> = Vec::with_capacity(own.len() + 1);
        groups.extend_from_slice(own);
        groups.push(SIGNED);
        Params::parse(query, b"", BodyKind::Form, &groups).map(Self)
    }
}

/// A request that passed the access guard with a key: the key, its
/// account, and the parameters from the query and a form or JSON body.
pub(crate) struct Signed {
    pub(crate) key: Arc<ApiKey>,
    pub(crate) account: AccountId,
    pub(crate) params: Params,
}

impl<S: Send + Sync> FromRequest<S> for Signed {
    type Rejection = Response;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let key = request
            .extensions()
            .get::<Caller>()
            .and_then(|caller| caller.key.clone())
            .ok_or_else(|| unauthorized().into_response())?;
        let query = request.uri().query().unwrap_or("").to_owned();
        let kind = BodyKind::of(request.headers());
        let own = accepted(request.extensions());
        let body = Bytes::from_request(request, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let mut groups: Vec<&[&str]> = Vec::with_capacity(own.len() + 1);
        groups.extend_from_slice(own);
        groups.push(SIGNED);
        let params =
            Params::parse(&query, &body, kind, &groups).map_err(IntoResponse::into_response)?;
        Ok(Self {
            account: key.account,
            key,
            params,
        })
    }
}
