//! The WebSocket API's methods, each one an operation of the route table:
//! a method's request becomes the route's request (its parameters in the
//! query string, its key and signature beside it for the access guard) and
//! goes through the same guard and handler as over HTTP.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Body;
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json, Router};
use tower::ServiceExt;
use weiport_access::{ApiKey, Caller, SocketCall};

use crate::error::BinanceError;
use crate::extract::Query;

/// Method names → the routes that answer them.
pub(crate) struct Operations {
    by_name: HashMap<&'static str, Operation>,
    /// Every operation's guarded route (the HTTP routes' own handlers).
    router: Router,
}

/// Where one method's route is.
struct Operation {
    method: Method,
    path: &'static str,
}

impl Operations {
    /// `methods` (name, HTTP method, path) served by `router`.
    pub(crate) fn new(
        methods: impl IntoIterator<Item = (&'static str, Method, &'static str)>,
        router: Router,
    ) -> Self {
        let by_name = methods
            .into_iter()
            .map(|(name, method, path)| (name, Operation { method, path }))
            .collect();
        Self { by_name, router }
    }

    /// Whether `name` is a method.
    pub(crate) fn knows(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// Calls the route of method `name` with `query` as `call` proves it;
    /// `None` for a method there is not.
    pub(crate) async fn call(&self, name: &str, query: &str, call: SocketCall) -> Option<Response> {
        let operation = self.by_name.get(name)?;
        let mut uri = String::with_capacity(operation.path.len() + 1 + query.len());
        uri.push_str(operation.path);
        if !query.is_empty() {
            uri.push('?');
            uri.push_str(query);
        }
        let mut request = match axum::http::Request::builder()
            .method(operation.method.clone())
            .uri(uri)
            .body(Body::empty())
        {
            Ok(request) => request,
            // The query is percent-encoded: this is not expected, and is a
            // refusal, not a failure, if it happens.
            Err(_) => return Some(BinanceError::mandatory("params").into_response()),
        };
        request.extensions_mut().insert(call);
        let Ok(response) = self.router.clone().oneshot(request).await;
        Some(response)
    }
}

/// The handler of the connection's own methods (`session.logon`,
/// `userDataStream.subscribe`…): the guard has checked the request as the
/// table says, and a parameter the method does not read is refused here
/// (-1104) as on any route; the answer carries the key it was made with,
/// for the connection to act on.
pub(crate) async fn who_calls(Extension(caller): Extension<Caller>, _read: Query) -> Response {
    let mut response = Json(serde_json::json!({})).into_response();
    if let Some(key) = caller.key {
        response.extensions_mut().insert::<Arc<ApiKey>>(key);
    }
    response
}
