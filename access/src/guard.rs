//! The axum middleware both APIs put in front of their endpoints: an endpoint
//! declares its security and weight in one place; the API supplies where its
//! key travels and how a refusal looks on its wire.

use std::borrow::Cow;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::body::{Body, HttpBody};
use axum::extract::{ConnectInfo, MatchedPath, Request};
use axum::handler::Handler;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::Response;
use axum::routing::{MethodFilter, MethodRouter};
use tower::Service;

use crate::auth::{Credentials, Proof, Security, authenticate, authenticate_socket};
use crate::keystore::{ApiKey, now_ms};
use crate::limits::Charges;
use crate::limits::Usage;
use crate::params::BodyKind;
use crate::telemetry::{Answering, RouteId};
use crate::{Access, AccessError};

/// What differs between the APIs that share the guard.
pub trait Face: Clone + Send + Sync + 'static {
    /// The key id as this API carries it (a header, or a query or form parameter).
    fn api_key<'a>(
        &self,
        headers: &'a HeaderMap,
        query: &'a str,
        body: &'a [u8],
    ) -> Option<Cow<'a, str>>;
    /// The API's name in metrics (`etherscan`, `binance`, `coingecko`).
    fn name(&self) -> &'static str;
    /// A refusal in this API's wire shape (status and body).
    fn reject(&self, error: &AccessError) -> Response;
    /// Adds this API's usage headers to a response.
    fn usage_headers(&self, _usage: &Usage, _headers: &mut HeaderMap) {}
    /// Whether a refusal for a limit says when to come back (`Retry-After`).
    fn says_retry_after(&self) -> bool {
        true
    }
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
    /// The parameter names it reads, in groups (for the face's extractors).
    pub reads: &'static [&'static [&'static str]],
}

impl Endpoint {
    /// An endpoint with `security` and weight 1.
    pub const fn new(security: Security) -> Self {
        Self {
            security,
            weight: Weight::Fixed(1),
            counts_order: false,
            query_call: false,
            reads: &[],
        }
    }

    /// Reading the parameters named in `groups`.
    pub const fn reads(mut self, groups: &'static [&'static [&'static str]]) -> Self {
        self.reads = groups;
        self
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
    /// The parameter names the endpoint reads ([`Endpoint::reads`]).
    pub reads: &'static [&'static [&'static str]],
}

/// A request that came over a WebSocket API connection, not HTTP: the
/// connection's client address and how the request shows whose it is.
/// The face that turned a socket message into a request puts it in the
/// request's extensions (which never come from the wire); the guard then
/// reads the key and signature from here instead of the headers and raw
/// text, checks everything else the same way, and puts the request's
/// [`Usage`] in the answer's extensions.
#[derive(Debug, Clone)]
pub struct SocketCall {
    /// The client's address, as the connection's handshake found it.
    pub ip: IpAddr,
    /// The key and signature.
    pub proof: Proof,
}

/// `endpoint`'s checks, for a route of the API `face` describes; see [`Guarded::on`].
pub fn guard<F: Face>(access: &Arc<Access>, face: &F, endpoint: Endpoint) -> Guarded<F> {
    Guarded {
        shared: Arc::new(Shared {
            access: access.clone(),
            face: face.clone(),
            endpoint,
            route: RouteId::next(),
        }),
    }
}

/// An endpoint's checks, ready to go in front of its handler.
pub struct Guarded<F> {
    shared: Arc<Shared<F>>,
}

impl<F: Face> Guarded<F> {
    /// The route answering `methods` with `handler` over `state`: every
    /// request passes the checks first, and is counted and timed under the
    /// route's path pattern. The handler is wrapped before the router boxes
    /// it, so a request clones one boxed service and polls one route's
    /// future, where a layer over a routed handler cloned three and polled two.
    pub fn on<H, T, S>(self, methods: MethodFilter, handler: H, state: S) -> MethodRouter
    where
        H: Handler<T, S>,
        T: 'static,
        S: Clone + Send + Sync + 'static,
    {
        axum::routing::on_service(
            methods,
            GuardService {
                shared: self.shared,
                inner: handler.with_state(state),
            },
        )
    }
}

/// What one guarded route knows: the access layer, its face, its contract.
struct Shared<F> {
    access: Arc<Access>,
    face: F,
    endpoint: Endpoint,
    route: RouteId,
}

/// The checks in front of an endpoint's handler: telemetry, client
/// address, access checks and weight, in one service, so that a request
/// costs one boxed future here and nothing else.
struct GuardService<F, S> {
    shared: Arc<Shared<F>>,
    inner: S,
}

impl<F, S: Clone> Clone for GuardService<F, S> {
    fn clone(&self) -> Self {
        Self {
            shared: self.shared.clone(),
            inner: self.inner.clone(),
        }
    }
}

impl<F, S> Service<Request> for GuardService<F, S>
where
    F: Face,
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Answering;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        let shared = self.shared.clone();
        let started = Instant::now();
        let method = request.method().clone();
        let matched = request.extensions().get::<MatchedPath>().cloned();
        let socket = request.extensions().get::<SocketCall>().is_some();
        // The face's usage headers, and for a socket call the usage itself,
        // which the face renders in its own frame.
        let report = move |shared: &Shared<F>, usage: &Usage, response: &mut Response| {
            if socket {
                response.extensions_mut().insert(*usage);
            } else {
                shared.face.usage_headers(usage, response.headers_mut());
            }
        };
        let record = move |shared: &Shared<F>, response: Response| {
            let status = response.status().as_u16();
            shared
                .route
                .record(matched.as_ref(), &method, status, started);
            Ok(response)
        };
        if request.body().is_end_stream() {
            // Most reads: every check is synchronous, so the endpoint is
            // called here, on the service that was made ready.
            let checked = shared
                .admit(&request)
                .and_then(|admitted| shared.authorize(&request, &[], admitted));
            let answer = match checked {
                Ok(mut authorized) => match authorized.settle_now(&shared.access) {
                    Ok(true) => {
                        request.extensions_mut().insert(authorized.caller);
                        Ok((self.inner.call(request), authorized.usage))
                    }
                    // The shared budgets need Redis: the call waits for it.
                    Ok(false) => {
                        let fresh = self.inner.clone();
                        let mut inner = std::mem::replace(&mut self.inner, fresh);
                        return Box::pin(async move {
                            let response = match authorized.settle(&shared.access).await {
                                Ok(()) => {
                                    let usage = authorized.usage;
                                    request.extensions_mut().insert(authorized.caller);
                                    let Ok(mut response) = inner.call(request).await;
                                    report(&shared, &usage, &mut response);
                                    response
                                }
                                Err(error) => shared.refuse(error),
                            };
                            record(&shared, response)
                        });
                    }
                    Err(error) => Err(shared.refuse(error)),
                },
                Err(error) => Err(shared.refuse(error)),
            };
            return Box::pin(async move {
                let response = match answer {
                    Ok((endpoint, usage)) => {
                        let Ok(mut response) = endpoint.await;
                        report(&shared, &usage, &mut response);
                        response
                    }
                    Err(refusal) => refusal,
                };
                record(&shared, response)
            });
        }
        // A body is read first; the service made ready goes with this call
        // and a fresh clone waits for the next (tower's contract).
        let fresh = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, fresh);
        Box::pin(async move {
            let response = match shared.read_and_check(request).await {
                Ok((request, usage)) => {
                    let Ok(mut response) = inner.call(request).await;
                    report(&shared, &usage, &mut response);
                    response
                }
                Err(error) => shared.refuse(error),
            };
            record(&shared, response)
        })
    }
}

/// A request that passed the checks made before its body is read.
struct Admitted {
    ip: IpAddr,
    weight: u32,
    usage: Usage,
    now_ms: u64,
    started_us: u64,
    charges: Charges,
}

/// A request that passed every check of this process; in a cluster, the
/// shared budgets are still to be charged.
struct Authorized {
    caller: Caller,
    usage: Usage,
    charges: Charges,
    now_ms: u64,
}

impl Authorized {
    /// Charges the shared budgets from this process's slices; `Ok(false)`:
    /// Redis must be asked ([`Authorized::settle`]).
    fn settle_now(&mut self, access: &Access) -> Result<bool, AccessError> {
        let ip = self.caller.ip;
        access
            .limiter
            .settle_shared_now(&self.charges, ip, self.now_ms, &mut self.usage)
    }

    /// Charges the shared budgets, asking Redis.
    async fn settle(&mut self, access: &Access) -> Result<(), AccessError> {
        let ip = self.caller.ip;
        access
            .limiter
            .settle_shared(&self.charges, ip, self.now_ms, &mut self.usage)
            .await
    }
}

impl<F: Face> Shared<F> {
    /// A refusal in the face's shape, with `Retry-After` where it applies.
    fn refuse(&self, error: AccessError) -> Response {
        let mut response = self.face.reject(&error);
        let status = response.status().as_u16();
        if status == 429 || status == 418 {
            // A face whose clients are throttled or banned is one an
            // operator looks at: by face, and apart (418: a client that
            // kept going after 429).
            metrics::counter!(
                crate::telemetry::RATE_LIMITED,
                "face" => self.face.name(),
                "status" => if status == 429 { "429" } else { "418" }
            )
            .increment(1);
        }
        if let Some(wait) = error.retry_after().filter(|_| self.face.says_retry_after()) {
            let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs.max(1)));
        }
        response
    }

    /// The client's address, bans, and the IP's request weight. The IP
    /// pays before the body is read or a signature checked, so a request
    /// that fails authentication is not free work.
    fn admit(&self, request: &Request) -> Result<Admitted, AccessError> {
        let access = &self.access;
        let started_us = now_ms() * 1000;
        let now_ms = started_us / 1000;
        let ip = match request.extensions().get::<SocketCall>() {
            Some(call) => call.ip,
            None => {
                let peer = request
                    .extensions()
                    .get::<ConnectInfo<SocketAddr>>()
                    .map(|c| c.0.ip());
                access.client_ip(peer, request.headers())
            }
        };
        access.limiter.check_ip(ip, now_ms)?;
        let weight = match self.endpoint.weight {
            Weight::Fixed(w) => w,
            Weight::ByQuery(f) => f(request.uri().query().unwrap_or("")),
        };
        let usage = access.limiter.charge_ip_weight(ip, weight, now_ms)?;
        let mut charges = Charges::default();
        if access.limiter.is_shared() {
            charges.ip = Some((access.limiter.client_group(ip), weight));
        }
        Ok(Admitted {
            ip,
            weight,
            usage,
            now_ms,
            started_us,
            charges,
        })
    }

    /// The key and its signature, permissions and budgets: who calls.
    fn authorize(
        &self,
        request: &Request,
        body: &[u8],
        admitted: Admitted,
    ) -> Result<Authorized, AccessError> {
        let (access, endpoint) = (&self.access, self.endpoint);
        let Admitted {
            ip,
            weight,
            mut usage,
            now_ms: now,
            started_us,
            mut charges,
        } = admitted;
        let query = request.uri().query().unwrap_or("");
        let key = match request.extensions().get::<SocketCall>() {
            Some(call) => authenticate_socket(
                &access.keys,
                endpoint.security,
                &call.proof,
                query,
                ip,
                started_us,
            ),
            None => {
                let api_key = self.face.api_key(request.headers(), query, body);
                let credentials = Credentials {
                    api_key: api_key.as_deref(),
                    query,
                    body,
                    body_kind: BodyKind::of(request.headers()),
                };
                authenticate(
                    &access.keys,
                    endpoint.security,
                    &credentials,
                    ip,
                    started_us,
                )
            }
        }
        .inspect_err(|error| {
            if error.is_bad_credential() {
                access.limiter.record_invalid_key(ip, now);
            }
        })?;
        if let Some(key) = &key {
            let signed = matches!(endpoint.security, Security::Signed(_));
            let limiter = &access.limiter;
            limiter.charge_key_weight(ip, key.limit_slot, weight, signed, now)?;
            if endpoint.query_call {
                limiter.charge_query(key.account, &key.tier)?;
            }
            if endpoint.counts_order {
                let counts = limiter.charge_order(ip, key.account, now)?;
                usage.orders = Some(counts);
            }
            if limiter.is_shared() {
                charges.key = Some((key.limit_slot, weight, signed));
                if endpoint.query_call {
                    charges.query = Some((key.account, limiter.query_per_second(&key.tier)));
                }
                if endpoint.counts_order {
                    charges.order = Some(key.account);
                }
            }
        }
        let caller = Caller {
            ip,
            key,
            reads: endpoint.reads,
        };
        Ok(Authorized {
            caller,
            usage,
            charges,
            now_ms: now,
        })
    }

    /// The checks of a request with a body: admitted, its body read within
    /// the size limit, authorized; handed on whole, with its caller.
    async fn read_and_check(&self, request: Request) -> Result<(Request, Usage), AccessError> {
        let admitted = self.admit(&request)?;
        let (parts, body) = request.into_parts();
        let body = match axum::body::to_bytes(body, self.access.max_body_bytes).await {
            Ok(body) => body,
            Err(error) => {
                let too_large = std::error::Error::source(&error)
                    .is_some_and(|cause| cause.is::<http_body_util::LengthLimitError>());
                return Err(if too_large {
                    AccessError::BodyTooLarge
                } else {
                    AccessError::BodyTimeout
                });
            }
        };
        let mut request = Request::from_parts(parts, Body::from(body.clone()));
        let mut authorized = self.authorize(&request, &body, admitted)?;
        if !authorized.settle_now(&self.access)? {
            authorized.settle(&self.access).await?;
        }
        request.extensions_mut().insert(authorized.caller);
        Ok((request, authorized.usage))
    }
}
