//! Request counters and latency per route, for every face and the
//! operational routes alike. A route's metric handles are registered once
//! per worker thread and found again by the route's number: registering a
//! labelled metric hashes and allocates its labels, too much for every
//! request.

use std::cell::RefCell;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::Method;
use axum::response::Response;
use axum::routing::MethodRouter;
use tower::{Layer, Service};

/// The future of a counted route's answer (boxed: one allocation a request).
pub(crate) type Answering = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

/// Name of the request counter (labels `method`, `route`, `status`).
pub const REQUESTS: &str = "http_requests_total";
/// Name of the latency histogram (label `route`).
pub const DURATION: &str = "http_request_duration_seconds";
/// Requests refused for a rate limit (429) or a ban (418), by face (counter).
pub const RATE_LIMITED: &str = "weiport_rate_limited_total";

/// Describes the request metrics, and shows each of `faces`' refusals at
/// zero from the start (an alert on their increase needs a series before
/// the first refusal).
pub fn describe(faces: &[&'static str]) {
    metrics::describe_counter!(REQUESTS, "HTTP requests answered, by route and status");
    metrics::describe_histogram!(
        DURATION,
        metrics::Unit::Seconds,
        "Time to answer an HTTP request, by route"
    );
    metrics::describe_counter!(
        RATE_LIMITED,
        "Requests refused for a rate limit (429) or a ban (418), by face"
    );
    for face in faces {
        for status in ["429", "418"] {
            metrics::counter!(RATE_LIMITED, "face" => *face, "status" => status).absolute(0);
        }
    }
}

/// One route's place in each worker thread's table of metric handles.
#[derive(Debug, Clone, Copy)]
pub struct RouteId(usize);

impl RouteId {
    /// A number no other route has.
    pub fn next() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        Self(NEXT.fetch_add(1, Ordering::Relaxed))
    }

    /// Counts one answer of this route and its time since `started`. The
    /// label is the matched path pattern of `request`'s route (bounded
    /// cardinality), else `unmatched`.
    pub fn record(
        self,
        route: Option<&MatchedPath>,
        method: &Method,
        status: u16,
        started: Instant,
    ) {
        let method = method_label(method);
        let seconds = started.elapsed().as_secs_f64();
        HANDLES.with_borrow_mut(|handles| {
            if handles.len() <= self.0 {
                handles.resize_with(self.0 + 1, || None);
            }
            let label = route.map_or("unmatched", MatchedPath::as_str);
            let route = handles[self.0].get_or_insert_with(|| RouteHandles {
                label: label.to_owned(),
                duration: metrics::histogram!(DURATION, "route" => label.to_owned()),
                requests: Vec::new(),
            });
            route.requests(method, status).increment(1);
            route.duration.record(seconds);
        });
    }
}

thread_local! {
    static HANDLES: RefCell<Vec<Option<RouteHandles>>> = const { RefCell::new(Vec::new()) };
}

/// One route's latency histogram and request counters (by method and status).
struct RouteHandles {
    label: String,
    duration: metrics::Histogram,
    requests: Vec<(&'static str, u16, metrics::Counter)>,
}

impl RouteHandles {
    fn requests(&mut self, method: &'static str, status: u16) -> &metrics::Counter {
        let at = match self
            .requests
            .iter()
            .position(|(m, s, _)| *m == method && *s == status)
        {
            Some(at) => at,
            None => {
                let counter = metrics::counter!(
                    REQUESTS,
                    "method" => method,
                    "route" => self.label.clone(),
                    "status" => status.to_string()
                );
                self.requests.push((method, status, counter));
                self.requests.len() - 1
            }
        };
        &self.requests[at].2
    }
}

/// The method as a metric label: the standard ones by name, anything a
/// client makes up as `other`, so no request can add a series.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::PATCH => "PATCH",
        Method::CONNECT => "CONNECT",
        Method::TRACE => "TRACE",
        _ => "other",
    }
}

/// Counts and times `route`'s requests: for routes without the access
/// guard (which counts its own), and for the fallback of unmatched paths.
pub fn tracked<S: Clone + Send + Sync + 'static>(route: MethodRouter<S>) -> MethodRouter<S> {
    route.layer(Tracked(RouteId::next()))
}

/// The layer of [`tracked`].
#[derive(Clone, Copy)]
pub struct Tracked(RouteId);

impl Tracked {
    /// A layer counting under a route number of its own.
    pub fn new() -> Self {
        Self(RouteId::next())
    }
}

impl Default for Tracked {
    fn default() -> Self {
        Self::new()
    }
}

impl<S> Layer<S> for Tracked {
    type Service = TrackedService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        TrackedService { id: self.0, inner }
    }
}

/// The service of [`Tracked`].
#[derive(Clone)]
pub struct TrackedService<S> {
    id: RouteId,
    inner: S,
}

impl<S> Service<Request> for TrackedService<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Answering;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let started = Instant::now();
        let route = request.extensions().get::<MatchedPath>().cloned();
        let method = request.method().clone();
        let answer = self.inner.call(request);
        let id = self.id;
        Box::pin(async move {
            let response = answer.await?;
            id.record(route.as_ref(), &method, response.status().as_u16(), started);
            Ok(response)
        })
    }
}
