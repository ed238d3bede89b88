//! Logging and Prometheus metrics.

use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tracing_subscriber::EnvFilter;

use crate::config::{LogConfig, LogFormat};

/// Installs the global log subscriber; `RUST_LOG` overrides `log.level`.
pub fn init_logging(config: &LogConfig) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(&config.level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    let _ = match config.format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

/// Installs the global metrics recorder and returns the handle that renders it;
/// must run inside the Tokio runtime (it spawns the recorder's upkeep task).
pub fn install_metrics() -> anyhow::Result<PrometheusHandle> {
    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(
            metrics_exporter_prometheus::Matcher::Suffix("_seconds".into()),
            &[
                0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 2.5,
            ],
        )?
        .install_recorder()?;
    metrics::describe_counter!(
        "http_requests_total",
        "HTTP requests answered, by route and status"
    );
    metrics::describe_histogram!(
        "http_request_duration_seconds",
        metrics::Unit::Seconds,
        "Time to answer an HTTP request, by route"
    );
    Ok(handle)
}

/// Counts and times every request by its route pattern (bounded cardinality).
pub async fn track_http(request: Request, next: Next) -> Response {
    let started = Instant::now();
    // A matched path shares its text; cloning it allocates nothing.
    let matched = request.extensions().get::<MatchedPath>().cloned();
    let method = method_label(request.method());
    let response = next.run(request).await;
    let status = response.status().as_u16();
    let route = matched.as_ref().map_or("unmatched", MatchedPath::as_str);
    ROUTE_METRICS.with_borrow_mut(|routes| {
        if !routes.contains_key(route) {
            let duration =
                metrics::histogram!("http_request_duration_seconds", "route" => route.to_owned());
            routes.insert(
                route.to_owned(),
                RouteMetrics {
                    duration,
                    requests: Vec::new(),
                },
            );
        }
        let Some(handles) = routes.get_mut(route) else {
            return;
        };
        handles.requests(route, method, status).increment(1);
        handles.duration.record(started.elapsed().as_secs_f64());
    });
    response
}

/// The method as a metric label: the standard ones by name, anything a
/// client makes up as `other`, so no request can add a series.
fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    const KNOWN: [(Method, &str); 9] = [
        (Method::GET, "GET"),
        (Method::POST, "POST"),
        (Method::PUT, "PUT"),
        (Method::DELETE, "DELETE"),
        (Method::HEAD, "HEAD"),
        (Method::OPTIONS, "OPTIONS"),
        (Method::PATCH, "PATCH"),
        (Method::CONNECT, "CONNECT"),
        (Method::TRACE, "TRACE"),
    ];
    KNOWN
        .iter()
        .find(|(known, _)| known == method)
        .map_or("other", |(_, name)| name)
}

thread_local! {
    /// Each worker thread's handles by route: registering a labelled metric
    /// hashes and allocates its labels, too much to repeat on every request.
    static ROUTE_METRICS: std::cell::RefCell<std::collections::HashMap<String, RouteMetrics>> =
        std::cell::RefCell::default();
}

/// One route's request counters (by method and status) and latency histogram.
struct RouteMetrics {
    duration: metrics::Histogram,
    requests: Vec<(&'static str, u16, metrics::Counter)>,
}

impl RouteMetrics {
    fn requests(&mut self, route: &str, method: &'static str, status: u16) -> &metrics::Counter {
        let at = match self
            .requests
            .iter()
            .position(|(m, s, _)| *m == method && *s == status)
        {
            Some(at) => at,
            None => {
                let counter = metrics::counter!(
                    "http_requests_total",
                    "method" => method,
                    "route" => route.to_owned(),
                    "status" => status.to_string()
                );
                self.requests.push((method, status, counter));
                self.requests.len() - 1
            }
        };
        &self.requests[at].2
    }
}
