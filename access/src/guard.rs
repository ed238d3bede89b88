//! The axum middleware both APIs put in front of their endpoints: an endpoint
//! declares its security and weight in one place; the API supplies where its
//! key travels and how a refusal looks on its wire.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;
use axum::routing::MethodRouter;

use crate::auth::{Credentials, Security, authenticate};
use crate::keystore::{ApiKey, now_ms};
use crate::limits::Usage;
use crate::params::BodyKind;
use crate::{Access, AccessError};

/// What differs between the APIs that share the guard.
pub trait Face: Clone + Send + Sync + 'static {
    /// The key id as this API carries it (a header, or a query or form parameter).
    fn api_key(&self, headers: &HeaderMap, query: &str, body: &[u8]) -> Option<String>;
    /// A refusal in this API's wire shape (status and body).
    fn reject(&self, error: &AccessError) -> Response;
    /// Adds this API's usage headers to a response.
    fn usage_headers(&self, _usage: &Usage, _headers: &mut HeaderMap) {}
}

/// How much an endpoint costs against the request-weight limits.
#[derive(Clone, Copy)]
pub enum Weight {
    /// Always the same.
    Fixed(u32),
    /// Depends on the query string (e.g. `depth` by `limit`).
    ByQuery(fn(&str) -> u32),
}

/// An endpoint's access contract.
#[derive(Clone, Copy)]
pub struct Endpoint {
    /// Who may call it.
    pub security: Security,
    /// Its request weight.
    pub weight: Weight,
    /// Whether a call counts as a new order.
    pub counts_order: bool,
    /// Whether a call counts against the query API's calls-per-second.
    pub query_call: bool,
}

impl Endpoint {
    /// An endpoint with `security` and weight 1.
    pub const fn new(security: Security) -> Self {
        Self {
            security,
            weight: Weight::Fixed(1),
            counts_order: false,
            query_call: false,
        }
    }

    /// With a fixed weight.
    pub const fn weight(mut self, weight: u32) -> Self {
        self.weight = Weight::Fixed(weight);
        self
    }

    /// With a weight computed from the query string.
    pub const fn weight_by(mut self, weight: fn(&str) -> u32) -> Self {
        self.weight = Weight::ByQuery(weight);
        self
    }

    /// Counting each call as a new order.
    pub const fn order(mut self) -> Self {
        self.counts_order = true;
        self
    }

    /// Counting each call against the query API limit.
    pub const fn query_call(mut self) -> Self {
        self.query_call = true;
        self
    }
}

/// Who is calling; in the request extensions of every guarded handler.
#[derive(Clone, Debug)]
pub struct Caller {
    /// The client's address.
    pub ip: IpAddr,
    /// The key used, on non-public endpoints.
    pub key: Option<Arc<ApiKey>>,
}

/// Wraps `route` so that every request passes `endpoint`'s checks first.
pub fn guarded<F: Face, S: Clone + Send + Sync + 'static>(
    access: &Arc<Access>,
    face: &F,
    endpoint: Endpoint,
    route: MethodRouter<S>,
) -> MethodRouter<S> {
    route.layer(axum::middleware::from_fn_with_state(
        (access.clone(), face.clone(), endpoint),
        guard::<F>,
    ))
}

async fn guard<F: Face>(
    State((access, face, endpoint)): State<(Arc<Access>, F, Endpoint)>,
    request: Request,
    next: Next,
) -> Response {
    let started_us = now_ms() * 1000;
    let now = started_us / 1000;
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    let ip = access.client_ip(peer, request.headers());
    let refuse = |error: AccessError| {
        let mut response = face.reject(&error);
        if let Some(wait) = error.retry_after() {
            let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            if let Ok(value) = HeaderValue::from_str(&secs.max(1).to_string()) {
                response.headers_mut().insert(header::RETRY_AFTER, value);
            }
        }
        response
    };
    if let Err(error) = access.limiter.check_ip(ip, now) {
        return refuse(error);
    }
    // The IP pays before the body is read or a signature checked, so a
    // request that fails authentication is not free work.
    let weight = match endpoint.weight {
        Weight::Fixed(w) => w,
        Weight::ByQuery(f) => f(request.uri().query().unwrap_or("")),
    };
    let mut usage = match access.limiter.charge_ip_weight(ip, weight, now) {
        Ok(usage) => usage,
        Err(error) => return refuse(error),
    };

    let (parts, body) = request.into_parts();
    let body: Bytes = match axum::body::to_bytes(body, access.max_body_bytes).await {
        Ok(body) => body,
        Err(error) => {
            let too_large = std::error::Error::source(&error)
                .is_some_and(|cause| cause.is::<http_body_util::LengthLimitError>());
            return refuse(if too_large {
                AccessError::BodyTooLarge
            } else {
                AccessError::BodyTimeout
            });
        }
    };
    let query = parts.uri.query().unwrap_or("");
    let api_key = face.api_key(&parts.headers, query, &body);
    let credentials = Credentials {
        api_key: api_key.as_deref(),
        query,
        body: &body,
        body_kind: BodyKind::of(&parts.headers),
    };
    let key = match authenticate(
        &access.keys,
        endpoint.security,
        &credentials,
        ip,
        started_us,
    ) {
        Ok(key) => key,
        Err(error) => {
            if error.is_bad_credential() {
                access.limiter.record_invalid_key(ip, now);
            }
            return refuse(error);
        }
    };

    if let Some(key) = &key {
        let signed = matches!(endpoint.security, Security::Signed(_));
        if let Err(error) =
            access
                .limiter
                .charge_key_weight(ip, key.limit_slot, weight, signed, now)
        {
            return refuse(error);
        }
        if endpoint.query_call
            && let Err(error) = access.limiter.charge_query(key.account, &key.tier)
        {
            return refuse(error);
        }
        if endpoint.counts_order {
            match access.limiter.charge_order(ip, key.account, now) {
                Ok(counts) => usage.orders = Some(counts),
                Err(error) => return refuse(error),
            }
        }
    }

    let mut request = Request::from_parts(parts, Body::from(body));
    request.extensions_mut().insert(Caller { ip, key });
    let mut response = next.run(request).await;
    face.usage_headers(&usage, response.headers_mut());
    response
}
