//! `/status` on the admin listener: one page rendered here, no build chain
//! and no script, with the last hour's index lag, requests a second by face
//! and orders a second drawn as inline SVG, and the state of each part (the
//! indexer, the markets with their last price, the wallet against the books).

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use alloy_primitives::U256;
use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use metrics_exporter_prometheus::PrometheusHandle;
use weiport_exchange_api::Exchange;
use weiport_indexer::Progress;

/// How often a sample is taken, and how many are kept (an hour).
const EVERY: Duration = Duration::from_secs(10);
const KEPT: usize = 360;

/// The faces requests are counted by, and how a route pattern tells them.
const FACES: [&str; 3] = ["Etherscan", "Binance", "CoinGecko"];

fn face_of(route: &str) -> Option<usize> {
    if route == "/api" || route == "/v2/api" {
        Some(0)
    } else if route.starts_with("/api/v3/simple") || route.starts_with("/api/v3/coins") {
        Some(2)
    } else if ["/api/v3", "/sapi", "/ws", "/stream", "/fapi", "/dapi"]
        .iter()
        .any(|prefix| route.starts_with(prefix))
    {
        Some(1)
    } else {
        None
    }
}

/// One moment: the index lag and the running totals the rates come from.
#[derive(Clone, Copy, Default)]
struct Sample {
    at_ms: u64,
    lag: u64,
    requests: [f64; 3],
    orders: f64,
}

/// What the page shows, shared with its sampler.
#[derive(Clone)]
pub struct Status {
    exchange: Arc<Exchange>,
    indexer: Option<Arc<Progress>>,
    metrics: PrometheusHandle,
    samples: Arc<Mutex<VecDeque<Sample>>>,
}

impl Status {
    /// The page's state; starts its sampler on the current runtime.
    pub fn start(
        exchange: Arc<Exchange>,
        indexer: Option<Arc<Progress>>,
        metrics: PrometheusHandle,
    ) -> Self {
        let status = Self {
            exchange,
            indexer,
            metrics,
            samples: Arc::default(),
        };
        let sampler = status.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(EVERY);
            loop {
                tick.tick().await;
                sampler.sample();
            }
        });
        status
    }

    /// The route.
    pub fn router(self) -> Router {
        Router::new().route("/status", get(page)).with_state(self)
    }

    fn sample(&self) {
        let mut sample = Sample {
            at_ms: weiport_exchange_api::now_ms(),
            lag: self.indexer.as_ref().map_or(0, |p| p.lag()),
            ..Sample::default()
        };
        // The running totals, from the same figures /metrics shows.
        for line in self.metrics.render().lines() {
            let value = || line.rsplit(' ').next()?.parse::<f64>().ok();
            if let Some(labels) = line.strip_prefix("http_requests_total{") {
                let route = labels
                    .split("route=\"")
                    .nth(1)
                    .and_then(|rest| rest.split('"').next());
                if let (Some(face), Some(value)) = (route.and_then(face_of), value()) {
                    sample.requests[face] += value;
                }
            } else if line.starts_with("weiport_exchange_orders_total")
                && let Some(value) = value()
            {
                sample.orders += value;
            }
        }
        let mut samples = self.samples.lock().unwrap_or_else(PoisonError::into_inner);
        if samples.len() == KEPT {
            samples.pop_front();
        }
        samples.push_back(sample);
    }
}

async fn page(State(status): State<Status>) -> Response {
    status.sample();
    let samples: Vec<Sample> = status
        .samples
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .copied()
        .collect();
    let html = render(&status, &samples);
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response()
}

/// Per second between consecutive samples, of what `total` picks.
fn rates(samples: &[Sample], total: impl Fn(&Sample) -> f64) -> Vec<(u64, f64)> {
    samples
        .windows(2)
        .map(|pair| {
            let seconds = (pair[1].at_ms.saturating_sub(pair[0].at_ms)) as f64 / 1000.0;
            let rate = (total(&pair[1]) - total(&pair[0])).max(0.0) / seconds.max(0.001);
            (pair[1].at_ms, rate)
        })
        .collect()
}

const COLOURS: [&str; 3] = ["#1f77b4", "#d62728", "#2ca02c"];

/// A chart of the last hour: one line per series, its axis from 0 to the
/// largest value.
fn chart(title: &str, series: &[(&str, Vec<(u64, f64)>)]) -> String {
    let (width, height) = (640.0, 140.0);
    let now = weiport_exchange_api::now_ms();
    let start = now.saturating_sub(3_600_000);
    let top = series
        .iter()
        .flat_map(|(_, points)| points.iter().map(|(_, v)| *v))
        .fold(1.0_f64, f64::max);
    let mut svg = format!(
        r##"<figure><figcaption>{title} <small>(last hour, top {top:.1})</small></figcaption><svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{title}"><rect width="{width}" height="{height}" fill="#fafafa" stroke="#ccc"/>"##
    );
    for (n, (name, points)) in series.iter().enumerate() {
        let path: Vec<String> = points
            .iter()
            .filter(|(at, _)| *at >= start)
            .map(|(at, v)| {
                let x = (at - start) as f64 / 3_600_000.0 * width;
                let y = height - v / top * (height - 10.0) - 5.0;
                format!("{x:.1},{y:.1}")
            })
            .collect();
        let colour = COLOURS[n % COLOURS.len()];
        let _ = write!(
            svg,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"/><text x="{}" y="14" fill="{colour}" font-size="12">{name}</text>"#,
            path.join(" "),
            8 + n * 110
        );
        // Each sample as a dot too: the first minutes have too few for a line.
        for point in &path {
            let (x, y) = point.split_once(',').unwrap_or(("0", "0"));
            let _ = write!(svg, r#"<circle cx="{x}" cy="{y}" r="3" fill="{colour}"/>"#);
        }
    }
    svg.push_str("</svg></figure>");
    svg
}

/// Wei as ETH with up to 8 decimals.
fn ether(wei: U256) -> String {
    let unit = U256::from(10u64).pow(U256::from(10u64));
    let units = wei / unit; // 1e-8 ETH
    let whole = units / U256::from(100_000_000u64);
    let fraction = units % U256::from(100_000_000u64);
    format!("{whole}.{:08}", fraction.to::<u64>())
}

fn render(status: &Status, samples: &[Sample]) -> String {
    let exchange = &status.exchange;
    let view = exchange.sequencer.view();
    let mut parts = String::new();
    match &status.indexer {
        Some(progress) => {
            let state = if progress.is_following() {
                "following"
            } else {
                "catching up"
            };
            let _ = write!(
                parts,
                "<tr><th>Indexer</th><td>{state}: node head {}, indexed {}, lag {} blocks</td></tr>",
                progress.head(),
                progress.indexed(),
                progress.lag()
            );
        }
        None => parts.push_str("<tr><th>Indexer</th><td>off</td></tr>"),
    }
    let _ = write!(
        parts,
        "<tr><th>Exchange</th><td>{} commands logged</td></tr>",
        view.sequence
    );
    for (id, market) in exchange.catalog.markets() {
        let last = view
            .markets
            .get(usize::from(id.0))
            .and_then(|m| m.last_trade.as_ref())
            .map_or_else(|| "no trade yet".to_owned(), |t| t.price.to_string());
        let _ = write!(
            parts,
            "<tr><th>{}</th><td>last price {last}</td></tr>",
            market.symbol
        );
    }
    if let Some(wallet) = exchange.wallets.first() {
        let coin = wallet.coin();
        let books = view
            .accounts
            .values()
            .filter_map(|a| a.balances.get(&coin.asset))
            .fold(weiport_exchange::Amount::ZERO, |sum, (free, locked)| {
                sum.checked_add(*free)
                    .and_then(|s| s.checked_add(*locked))
                    .unwrap_or(sum)
            });
        let chain = wallet
            .holdings()
            .map_or_else(|error| format!("unknown ({error})"), ether);
        let _ = write!(
            parts,
            "<tr><th>Wallet</th><td>{} on chain (hot wallet and deposit addresses) against {books} in the accounts' books</td></tr>",
            chain
        );
    } else {
        parts.push_str("<tr><th>Wallet</th><td>off</td></tr>");
    }
    let lag: Vec<(u64, f64)> = samples.iter().map(|s| (s.at_ms, s.lag as f64)).collect();
    let faces: Vec<(&str, Vec<(u64, f64)>)> = FACES
        .iter()
        .enumerate()
        .map(|(n, name)| (*name, rates(samples, |s| s.requests[n])))
        .collect();
    let orders = rates(samples, |s| s.orders);
    format!(
        r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><title>weiport status</title>
<style>body{{font-family:sans-serif;margin:24px;color:#222}}table{{border-collapse:collapse;margin-bottom:16px}}th,td{{text-align:left;padding:4px 12px;border-bottom:1px solid #eee}}figure{{margin:0 0 16px 0}}figcaption{{font-weight:bold;margin-bottom:4px}}</style></head>
<body><h1>weiport</h1><table>{parts}</table>{}{}{}</body></html>"#,
        chart("Index lag (blocks)", &[("lag", lag)]),
        chart("Requests a second by face", &faces),
        chart("Orders a second", &[("orders", orders)]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_are_told_apart_by_face() {
        assert_eq!(face_of("/api"), Some(0));
        assert_eq!(face_of("/v2/api"), Some(0));
        assert_eq!(face_of("/api/v3/order"), Some(1));
        assert_eq!(face_of("/ws-api/v3"), Some(1));
        assert_eq!(face_of("/api/v3/simple/price"), Some(2));
        assert_eq!(face_of("/healthz"), None);
        assert_eq!(
            ether(U256::from(1_234_500_000_000_000_000u64)),
            "1.23450000"
        );
    }

    #[test]
    fn rates_are_per_second_between_samples() {
        let at = |s: u64, orders: f64| Sample {
            at_ms: s * 1000,
            orders,
            ..Sample::default()
        };
        let samples = [at(0, 0.0), at(10, 50.0), at(20, 50.0)];
        assert_eq!(
            rates(&samples, |s| s.orders),
            vec![(10_000, 5.0), (20_000, 0.0)]
        );
    }
}
