//! `/status` on the admin listener: one page rendered here, no build chain
//! and no script, with each chain's index lag, requests a second by face and
//! orders a second drawn as inline SVG over the time the samples span (up
//! to an hour), and the state of each part (every chain's indexer, the
//! markets with their last price, each wallet against the books).

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use weiport_access::keystore::now_ms;

use crate::{Figures, Operator};

/// How often a sample is taken, and how many are kept (an hour).
const EVERY: Duration = Duration::from_secs(10);
const KEPT: usize = 360;
/// The longest and the shortest time a chart spans, ms.
const LONGEST_MS: u64 = 3_600_000;
const SHORTEST_MS: u64 = 60_000;

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

/// One moment: each chain's index lag and the running totals the rates
/// come from.
#[derive(Clone, Default)]
struct Sample {
    at_ms: u64,
    /// Each chain's name and lag (none while its indexer is off).
    lags: Vec<(String, Option<u64>)>,
    requests: [f64; 3],
    orders: f64,
}

/// What the page shows, shared with its sampler.
#[derive(Clone)]
pub(crate) struct Status {
    operator: Operator,
    samples: Arc<Mutex<VecDeque<Sample>>>,
}

impl Status {
    /// The page's state; starts its sampler on the current runtime.
    pub(crate) fn start(operator: Operator) -> Self {
        let status = Self {
            operator,
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
    pub(crate) fn router(self) -> Router {
        Router::new().route("/status", get(page)).with_state(self)
    }

    fn sample(&self) {
        let figures = self.operator.figures.as_ref();
        let mut sample = Sample {
            at_ms: now_ms(),
            lags: figures
                .chains()
                .into_iter()
                .map(|chain| (chain.name, chain.indexer.map(|i| i.lag)))
                .collect(),
            ..Sample::default()
        };
        // The running totals, from the same figures /metrics shows.
        for line in self.operator.prometheus.render().lines() {
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
    // A sample of its own only when the sampler's last is half a period
    // old: rates over a few milliseconds would draw noise at the right edge.
    let newest = status
        .samples
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .back()
        .map(|s| s.at_ms);
    if newest.is_none_or(|at| now_ms().saturating_sub(at) >= EVERY.as_millis() as u64 / 2) {
        status.sample();
    }
    let samples: Vec<Sample> = status
        .samples
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .cloned()
        .collect();
    let html = render(status.operator.figures.as_ref(), &samples, now_ms());
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

/// The time the charts span: from the oldest sample to `now`, at least a
/// minute and at most an hour, so a new process's few samples fill the
/// width rather than a sliver at its right edge.
fn span_ms(samples: &[Sample], now: u64) -> u64 {
    let oldest = samples.first().map_or(now, |s| s.at_ms);
    now.saturating_sub(oldest).clamp(SHORTEST_MS, LONGEST_MS)
}

/// "the last 7 min", "the last hour".
fn span_name(span: u64) -> String {
    match span.div_ceil(60_000) {
        60.. => "last hour".to_owned(),
        minutes => format!("last {minutes} min"),
    }
}

const COLOURS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
];

/// A chart of the `span` ms before `now`: one line per series, its axis
/// from 0 to the largest value, minute ticks along the bottom.
fn chart(title: &str, series: &[(String, Vec<(u64, f64)>)], now: u64, span: u64) -> String {
    // The lines are drawn between `top_y` and `bottom_y`; the minute
    // labels sit below, apart from a line at zero.
    let (width, height, top_y, bottom_y) = (640.0, 150.0, 22.0, 130.0);
    let start = now.saturating_sub(span);
    let top = series
        .iter()
        .flat_map(|(_, points)| points.iter().map(|(_, v)| *v))
        .fold(1.0_f64, f64::max);
    let x_of = |at: u64| at.saturating_sub(start) as f64 / span as f64 * width;
    let mut svg = format!(
        r##"<figure><figcaption>{title} <small>({}, top {top:.1})</small></figcaption><svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{title}"><rect width="{width}" height="{height}" fill="#fafafa" stroke="#ccc"/>"##,
        span_name(span)
    );
    // A tick a minute (every ten past half an hour), minutes before now;
    // none so near an edge that its label would be cut.
    let step = if span > 1_800_000 { 600_000 } else { 60_000 };
    let mut back = step;
    while back < span {
        let x = x_of(now - back);
        if x >= 16.0 {
            let _ = write!(
                svg,
                r##"<line x1="{x:.1}" y1="{bottom_y}" x2="{x:.1}" y2="{}" stroke="#bbb"/><text x="{x:.1}" y="{}" font-size="10" fill="#888" text-anchor="middle">-{}m</text>"##,
                bottom_y + 5.0,
                height - 4.0,
                back / 60_000
            );
        }
        back += step;
    }
    for (n, (name, points)) in series.iter().enumerate() {
        let path: Vec<(f64, f64)> = points
            .iter()
            .filter(|(at, _)| *at >= start)
            .map(|(at, v)| (x_of(*at), bottom_y - v / top * (bottom_y - top_y)))
            .collect();
        let colour = COLOURS[n % COLOURS.len()];
        let joined: Vec<String> = path.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
        let _ = write!(
            svg,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"/><text x="{}" y="14" fill="{colour}" font-size="12">{}</text>"#,
            joined.join(" "),
            8 + n * 130,
            escape(name)
        );
        // Each sample as a dot too: the first minutes have too few for a line.
        for (x, y) in &path {
            let _ = write!(
                svg,
                r#"<circle cx="{x:.1}" cy="{y:.1}" r="3" fill="{colour}"/>"#
            );
        }
    }
    svg.push_str("</svg></figure>");
    svg
}

/// Text safe inside HTML (names come from configuration).
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn render(figures: &dyn Figures, samples: &[Sample], now: u64) -> String {
    let mut parts = String::new();
    for chain in figures.chains() {
        let name = match chain.id {
            Some(id) => format!("{} ({id})", escape(&chain.name)),
            None => escape(&chain.name),
        };
        let state = match &chain.indexer {
            None => "indexer off".to_owned(),
            Some(indexer) => {
                let doing = match (&indexer.problem, indexer.following) {
                    (Some(problem), _) => format!("unavailable ({})", escape(problem)),
                    (None, true) => "following".to_owned(),
                    (None, false) => "catching up".to_owned(),
                };
                format!(
                    "{doing}: node head {}, indexed {}, lag {} blocks",
                    indexer.head, indexer.indexed, indexer.lag
                )
            }
        };
        let _ = write!(parts, "<tr><th>Chain {name}</th><td>{state}</td></tr>");
    }
    match figures.exchange() {
        None => parts.push_str("<tr><th>Exchange</th><td>served by another process</td></tr>"),
        Some(exchange) => {
            let _ = write!(
                parts,
                "<tr><th>Exchange</th><td>{} commands logged</td></tr>",
                exchange.commands
            );
            for (symbol, last) in &exchange.markets {
                let last = last.as_deref().unwrap_or("no trade yet");
                let _ = write!(
                    parts,
                    "<tr><th>{}</th><td>last price {}</td></tr>",
                    escape(symbol),
                    escape(last)
                );
            }
            if exchange.wallets.is_empty() {
                parts.push_str("<tr><th>Wallet</th><td>off</td></tr>");
            }
            for asset in &exchange.reserves {
                let held = match (&asset.reserves, &asset.ratio) {
                    (Some(held), Some(ratio)) => format!(
                        "reserves {} over liabilities {}: {}",
                        escape(held),
                        escape(&asset.liabilities),
                        escape(ratio)
                    ),
                    (Some(held), None) => format!("reserves {}, nothing owed", escape(held)),
                    (None, _) => format!(
                        "liabilities {}; no reserves on a chain",
                        escape(&asset.liabilities)
                    ),
                };
                let _ = write!(
                    parts,
                    "<tr><th>Reserves {}</th><td>{held} (snapshot at sequence {})</td></tr>",
                    escape(&asset.asset),
                    asset.sequence
                );
            }
            for wallet in &exchange.wallets {
                let chain = match &wallet.on_chain {
                    Ok(held) => escape(held),
                    Err(error) => format!("unknown ({})", escape(error)),
                };
                // The books hold a coin once, whatever network it came by.
                let _ = write!(
                    parts,
                    "<tr><th>Wallet {coin} on {}</th><td>{chain} on chain (hot wallet and deposit addresses); the accounts' books hold {} {coin} on all networks together</td></tr>",
                    escape(&wallet.network),
                    escape(&wallet.books),
                    coin = escape(&wallet.coin),
                );
            }
        }
    }
    if let Some(cluster) = figures.cluster() {
        let role = if cluster.leading {
            "primary"
        } else {
            "follower"
        };
        let _ = write!(
            parts,
            "<tr><th>Cluster</th><td>{} is {role}; lease held by {}; journal entry {} applied of {}; Redis {}</td></tr>",
            escape(&cluster.node),
            escape(cluster.lease_holder.as_deref().unwrap_or("nobody")),
            cluster.applied_entry,
            cluster.journal_entry,
            if cluster.redis_reachable {
                "reachable"
            } else {
                "unreachable"
            },
        );
    }
    // One lag line per chain any sample saw, in the order first seen.
    let mut names: Vec<&str> = Vec::new();
    for sample in samples {
        for (name, _) in &sample.lags {
            if !names.contains(&name.as_str()) {
                names.push(name);
            }
        }
    }
    let lags: Vec<(String, Vec<(u64, f64)>)> = names
        .iter()
        .map(|name| {
            let points = samples
                .iter()
                .filter_map(|s| {
                    let lag = s.lags.iter().find(|(n, _)| n == name)?.1?;
                    Some((s.at_ms, lag as f64))
                })
                .collect();
            ((*name).to_owned(), points)
        })
        .collect();
    let faces: Vec<(String, Vec<(u64, f64)>)> = FACES
        .iter()
        .enumerate()
        .map(|(n, name)| ((*name).to_owned(), rates(samples, |s| s.requests[n])))
        .collect();
    let orders = vec![("orders".to_owned(), rates(samples, |s| s.orders))];
    let span = span_ms(samples, now);
    format!(
        r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><title>weiport status</title>
<style>body{{font-family:sans-serif;margin:24px;color:#222}}table{{border-collapse:collapse;margin-bottom:16px}}th,td{{text-align:left;padding:4px 12px;border-bottom:1px solid #eee}}figure{{margin:0 0 16px 0}}figcaption{{font-weight:bold;margin-bottom:4px}}</style></head>
<body><h1>weiport</h1><table>{parts}</table>{}{}{}</body></html>"#,
        chart("Index lag by chain (blocks)", &lags, now, span),
        chart("Requests a second by face", &faces, now, span),
        chart("Orders a second", &orders, now, span),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Fixed;
    use crate::{ChainFigures, IndexerFigures};

    #[test]
    fn routes_are_told_apart_by_face() {
        assert_eq!(face_of("/api"), Some(0));
        assert_eq!(face_of("/v2/api"), Some(0));
        assert_eq!(face_of("/api/v3/order"), Some(1));
        assert_eq!(face_of("/ws-api/v3"), Some(1));
        assert_eq!(face_of("/api/v3/simple/price"), Some(2));
        assert_eq!(face_of("/healthz"), None);
    }

    fn at(seconds: u64, orders: f64) -> Sample {
        Sample {
            at_ms: seconds * 1000,
            orders,
            ..Sample::default()
        }
    }

    #[test]
    fn rates_are_per_second_between_samples() {
        let samples = [at(0, 0.0), at(10, 50.0), at(20, 50.0)];
        assert_eq!(
            rates(&samples, |s| s.orders),
            vec![(10_000, 5.0), (20_000, 0.0)]
        );
    }

    #[test]
    fn the_time_axis_spans_the_samples_held_within_a_minute_and_an_hour() {
        let now = 10_000_000;
        assert_eq!(span_ms(&[], now), SHORTEST_MS);
        assert_eq!(span_ms(&[at(now / 1000 - 5, 0.0)], now), SHORTEST_MS);
        assert_eq!(span_ms(&[at(now / 1000 - 420, 0.0)], now), 420_000);
        assert_eq!(span_ms(&[at(1, 0.0)], now), LONGEST_MS);
        assert_eq!(span_name(420_000), "last 7 min");
        assert_eq!(span_name(LONGEST_MS), "last hour");
        // The oldest of seven minutes' samples sits at the left edge.
        let samples: Vec<Sample> = (0..=42)
            .map(|n| at(now / 1000 - 420 + n * 10, 0.0))
            .collect();
        let svg = chart(
            "t",
            &[("s".into(), vec![(samples[0].at_ms, 1.0)])],
            now,
            span_ms(&samples, now),
        );
        assert!(svg.contains(r#"<circle cx="0.0""#), "{svg}");
        assert!(svg.contains("last 7 min") && svg.contains(">-6m<"), "{svg}");
    }

    #[test]
    fn every_chain_is_shown_and_drawn() {
        let chain = |id: u64, name: &str, lag: u64| ChainFigures {
            id: Some(id),
            name: name.into(),
            indexer: Some(IndexerFigures {
                head: 100,
                indexed: 100 - lag,
                lag,
                following: true,
                problem: None,
            }),
        };
        let figures = Fixed {
            chains: vec![chain(1, "Main <net>", 2), chain(10, "Side", 5)],
            ..Fixed::default()
        };
        let samples = vec![
            Sample {
                at_ms: 1_000,
                lags: vec![("Main <net>".into(), Some(3)), ("Side".into(), Some(9))],
                ..Sample::default()
            },
            Sample {
                at_ms: 11_000,
                lags: vec![("Main <net>".into(), Some(2)), ("Side".into(), Some(5))],
                ..Sample::default()
            },
        ];
        let page = render(&figures, &samples, 12_000);
        assert!(page.contains("<th>Chain Main &lt;net&gt; (1)</th><td>following: node head 100, indexed 98, lag 2 blocks"), "{page}");
        assert!(page.contains("<th>Chain Side (10)</th>"), "{page}");
        let lag_chart = page.split("<figure>").nth(1).unwrap();
        assert_eq!(lag_chart.matches("<polyline").count(), 2, "{lag_chart}");
        assert!(lag_chart.contains(">Side</text>"));
        assert_eq!(page.matches("<svg").count(), 3);
        assert!(!page.contains("<script"));
    }
}
