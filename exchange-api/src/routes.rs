//! The Binance Spot-compatible routes, each with its security and weight:
//! the table the router and the OpenAPI document are both built from.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::handler::Handler;
use axum::http::Method;
use axum::routing::{MethodFilter, MethodRouter, get};
use axum::{Json, Router};
use weiport_access::{Endpoint, Guarded, Permission, Security, guard};

use crate::error::BinanceFace;
use crate::exchange::Exchange;
use crate::{account, capital, lists, market_data, modify, sapi, ticker, trading};

/// One route: what it answers, who may call it and what it costs, and its
/// handler. The router and the OpenAPI document are both built from the
/// table of these, so they cannot disagree.
struct Route {
    method: &'static str,
    path: &'static str,
    summary: &'static str,
    endpoint: Endpoint,
    /// The parameter names it reads; anything else is refused (-1104).
    params: &'static [&'static [&'static str]],
    handler: fn(Guarding) -> MethodRouter,
}

/// A route's checks, its method, and the exchange its handler answers from.
struct Guarding {
    guard: Guarded<BinanceFace>,
    methods: MethodFilter,
    exchange: Arc<Exchange>,
}

impl Guarding {
    /// The route answering with `handler`, behind the checks.
    fn on<H: Handler<T, Arc<Exchange>>, T: 'static>(self, handler: H) -> MethodRouter {
        self.guard.on(self.methods, handler, self.exchange)
    }
}

mod reads;

const fn public(weight: u32) -> Endpoint {
    Endpoint::new(Security::Public).weight(weight)
}

const fn read(weight: u32) -> Endpoint {
    Endpoint::new(Security::Signed(Permission::Read)).weight(weight)
}

const TRADE: Endpoint = Endpoint::new(Security::Signed(Permission::Trade));

fn routes() -> Vec<Route> {
    let route = |method, path, summary, endpoint, params, handler| Route {
        method,
        path,
        summary,
        endpoint,
        params,
        handler,
    };
    let by_query = |weight| Endpoint::new(Security::Public).weight_by(weight);
    let read_by_query =
        |weight| Endpoint::new(Security::Signed(Permission::Read)).weight_by(weight);
    vec![
        // WebSocket market streams: each connection attempt costs IP weight,
        // so attempts per address are limited before the upgrade.
        route(
            "GET",
            "/ws",
            "Market streams, subscribed by message",
            public(2),
            reads::NONE,
            |g| g.on(crate::stream_routes::ws_bare),
        ),
        route(
            "GET",
            "/ws/{*streams}",
            "Market streams named in the path (anything else opens an empty connection)",
            public(2),
            reads::NONE,
            |g| g.on(crate::stream_routes::ws_path),
        ),
        route(
            "GET",
            "/stream",
            "Combined market streams, each event as {stream, data}",
            public(2),
            reads::STREAMS,
            |g| g.on(crate::stream_routes::combined),
        ),
        route(
            "GET",
            "/ws-api/v3",
            "WebSocket API: user data stream subscriptions (userDataStream.subscribe.signature)",
            public(2),
            reads::NONE,
            |g| g.on(crate::stream_routes::ws_api),
        ),
        route(
            "POST",
            "/api/v3/userDataStream",
            "Start or extend the account's user data stream (listen key)",
            Endpoint::new(Security::Key(Permission::Read)).weight(2),
            reads::NONE,
            |g| g.on(crate::stream_routes::create_listen_key),
        ),
        route(
            "PUT",
            "/api/v3/userDataStream",
            "Keep a listen key alive for 60 minutes",
            Endpoint::new(Security::Key(Permission::Read)).weight(2),
            reads::LISTEN_KEY,
            |g| g.on(crate::stream_routes::keep_listen_key),
        ),
        route(
            "DELETE",
            "/api/v3/userDataStream",
            "Close a listen key",
            Endpoint::new(Security::Key(Permission::Read)).weight(2),
            reads::LISTEN_KEY,
            |g| g.on(crate::stream_routes::close_listen_key),
        ),
        route(
            "GET",
            "/api/v3/ping",
            "Test connectivity",
            public(1),
            reads::NONE,
            |g| g.on(market_data::ping),
        ),
        route(
            "GET",
            "/api/v3/time",
            "Server time",
            public(1),
            reads::NONE,
            |g| g.on(market_data::time),
        ),
        route(
            "GET",
            "/api/v3/exchangeInfo",
            "Markets, filters and rate limits",
            public(20),
            &[reads::SYMBOLS, &["symbolStatus"]],
            |g| g.on(market_data::exchange_info),
        ),
        route(
            "GET",
            "/api/v3/depth",
            "Order book",
            by_query(market_data::depth_weight),
            &[reads::SYMBOL, reads::LIMIT],
            |g| g.on(market_data::depth),
        ),
        route(
            "GET",
            "/api/v3/trades",
            "Recent trades",
            public(25),
            &[reads::SYMBOL, reads::LIMIT],
            |g| g.on(market_data::trades),
        ),
        route(
            "GET",
            "/api/v3/historicalTrades",
            "Older trades from an id",
            public(25),
            &[reads::SYMBOL, reads::LIMIT, &["fromId"]],
            |g| g.on(market_data::trades),
        ),
        route(
            "GET",
            "/api/v3/aggTrades",
            "Aggregate trades",
            public(4),
            &[reads::SYMBOL, reads::WINDOW, &["fromId"]],
            |g| g.on(market_data::agg_trades),
        ),
        route(
            "GET",
            "/api/v3/klines",
            "Candlesticks",
            public(2),
            &[reads::SYMBOL, reads::WINDOW, &["interval", "timeZone"]],
            |g| g.on(market_data::klines),
        ),
        route(
            "GET",
            "/api/v3/uiKlines",
            "Candlesticks (UI)",
            public(2),
            &[reads::SYMBOL, reads::WINDOW, &["interval", "timeZone"]],
            |g| g.on(market_data::klines),
        ),
        route(
            "GET",
            "/api/v3/avgPrice",
            "Five-minute average price",
            public(2),
            &[reads::SYMBOL],
            |g| g.on(ticker::avg_price),
        ),
        route(
            "GET",
            "/api/v3/ticker/24hr",
            "24-hour statistics",
            by_query(ticker::ticker_24hr_weight),
            &[reads::SYMBOLS, &["type"]],
            |g| g.on(ticker::ticker_24hr),
        ),
        route(
            "GET",
            "/api/v3/ticker/price",
            "Last prices",
            by_query(ticker::ticker_price_weight),
            &[reads::SYMBOLS],
            |g| g.on(ticker::ticker_price),
        ),
        route(
            "GET",
            "/api/v3/ticker/bookTicker",
            "Best bid and ask",
            by_query(ticker::ticker_price_weight),
            &[reads::SYMBOLS],
            |g| g.on(ticker::book_ticker),
        ),
        route(
            "GET",
            "/api/v3/ticker",
            "Rolling-window statistics",
            by_query(ticker::ticker_window_weight),
            &[reads::SYMBOLS, &["type", "windowSize"]],
            |g| g.on(ticker::ticker_window),
        ),
        route(
            "GET",
            "/api/v3/ticker/tradingDay",
            "Statistics of the current trading day in a time zone",
            by_query(ticker::ticker_window_weight),
            &[reads::SYMBOLS, &["type", "timeZone"]],
            |g| g.on(ticker::ticker_trading_day),
        ),
        route(
            "POST",
            "/api/v3/order",
            "Place an order",
            TRADE.order(),
            &[reads::ORDER],
            |g| g.on(trading::new_order),
        ),
        route(
            "GET",
            "/api/v3/order",
            "Query an order",
            read(4),
            &[reads::ORDER_REF],
            |g| g.on(trading::query_order),
        ),
        route(
            "DELETE",
            "/api/v3/order",
            "Cancel an order",
            TRADE,
            &[reads::ORDER_REF, &["newClientOrderId"]],
            |g| g.on(trading::cancel_order),
        ),
        route(
            "POST",
            "/api/v3/order/test",
            "Validate an order without placing it",
            TRADE.weight_by(trading::test_order_weight),
            &[reads::ORDER, &["computeCommissionRates"]],
            |g| g.on(trading::test_order),
        ),
        route(
            "POST",
            "/api/v3/order/cancelReplace",
            "Cancel an order and place another in one step",
            TRADE,
            &[
                reads::ORDER,
                &[
                    "cancelReplaceMode",
                    "cancelOrderId",
                    "cancelOrigClientOrderId",
                    "cancelNewClientOrderId",
                    "cancelRestrictions",
                    "orderRateLimitExceededMode",
                ],
            ],
            |g| g.on(modify::cancel_replace),
        ),
        route(
            "PUT",
            "/api/v3/order/amend/keepPriority",
            "Reduce an order's quantity, keeping its place in the queue",
            TRADE.weight(4),
            &[reads::ORDER_REF, &["newClientOrderId", "newQty"]],
            |g| g.on(modify::amend_order),
        ),
        route(
            "GET",
            "/api/v3/myPreventedMatches",
            "Matches self-trade prevention stopped",
            read_by_query(account::prevented_matches_weight),
            &[
                reads::SYMBOL,
                &[
                    "preventedMatchId",
                    "orderId",
                    "fromPreventedMatchId",
                    "limit",
                ],
            ],
            |g| g.on(account::my_prevented_matches),
        ),
        route(
            "POST",
            "/api/v3/orderList/oco",
            "Place an OCO pair: one order above the market, one below",
            TRADE.order(),
            reads::OCO,
            |g| g.on(lists::place_oco),
        ),
        route(
            "POST",
            "/api/v3/orderList/oto",
            "Place a working order and one placed once it fills",
            TRADE.order(),
            reads::OTO,
            |g| g.on(lists::place_oto),
        ),
        route(
            "POST",
            "/api/v3/orderList/otoco",
            "Place a working order and an OCO pair placed once it fills",
            TRADE.order(),
            reads::OTOCO,
            |g| g.on(lists::place_otoco),
        ),
        route(
            "POST",
            "/api/v3/order/oco",
            "Place an OCO pair (legacy form: limit and stop)",
            TRADE.order(),
            reads::LEGACY_OCO,
            |g| g.on(lists::place_legacy_oco),
        ),
        route(
            "GET",
            "/api/v3/orderList",
            "Query an order list",
            read(4),
            &[reads::LIST_REF],
            |g| g.on(lists::query_list),
        ),
        route(
            "DELETE",
            "/api/v3/orderList",
            "Cancel an order list",
            TRADE,
            &[&[
                "symbol",
                "orderListId",
                "listClientOrderId",
                "newClientOrderId",
            ]],
            |g| g.on(lists::cancel_list),
        ),
        route(
            "GET",
            "/api/v3/allOrderList",
            "Order list history",
            read(20),
            &[reads::WINDOW, &["fromId"]],
            |g| g.on(lists::all_lists),
        ),
        route(
            "GET",
            "/api/v3/openOrderList",
            "Open order lists",
            read(6),
            reads::NONE,
            |g| g.on(lists::open_lists),
        ),
        route(
            "GET",
            "/api/v3/openOrders",
            "Open orders",
            read_by_query(trading::open_orders_weight),
            &[reads::SYMBOL],
            |g| g.on(trading::open_orders),
        ),
        route(
            "DELETE",
            "/api/v3/openOrders",
            "Cancel every open order on a market",
            TRADE,
            &[reads::SYMBOL],
            |g| g.on(trading::cancel_open_orders),
        ),
        route(
            "GET",
            "/api/v3/allOrders",
            "Order history",
            read(20),
            &[reads::SYMBOL, reads::WINDOW, &["orderId"]],
            |g| g.on(account::all_orders),
        ),
        route(
            "GET",
            "/api/v3/account",
            "Balances and permissions",
            read(20),
            &[&["omitZeroBalances"]],
            |g| g.on(account::account),
        ),
        route(
            "GET",
            "/api/v3/myTrades",
            "Own trades",
            read_by_query(account::my_trades_weight),
            &[reads::SYMBOL, reads::WINDOW, &["orderId", "fromId"]],
            |g| g.on(account::my_trades),
        ),
        route(
            "GET",
            "/api/v3/rateLimit/order",
            "Order counts against the limits",
            read(40),
            reads::NONE,
            |g| g.on(account::order_rate_limit),
        ),
        route(
            "GET",
            "/api/v3/account/commission",
            "Commission rates",
            read(20),
            &[reads::SYMBOL],
            |g| g.on(account::account_commission),
        ),
        route(
            "GET",
            "/sapi/v1/system/status",
            "System status (0: normal)",
            public(1),
            reads::NONE,
            |g| g.on(sapi::system_status),
        ),
        route(
            "GET",
            "/sapi/v1/asset/tradeFee",
            "Fee rates of one or every market",
            read(1),
            &[reads::SYMBOL],
            |g| g.on(sapi::trade_fee),
        ),
        route(
            "GET",
            "/sapi/v1/account/apiRestrictions",
            "The key's permissions",
            read(1),
            reads::NONE,
            |g| g.on(sapi::api_restrictions),
        ),
        route(
            "GET",
            "/sapi/v1/capital/config/getall",
            "Assets and balances",
            read(10),
            reads::NONE,
            |g| g.on(sapi::capital_config),
        ),
        route(
            "GET",
            "/sapi/v1/capital/deposit/address",
            "The account's deposit address for a coin",
            read(10),
            &[&["coin", "network", "amount"]],
            |g| g.on(capital::deposit_address),
        ),
        route(
            "GET",
            "/sapi/v1/capital/deposit/hisrec",
            "Deposits: pending (0), credited (6), swept (1)",
            read(1),
            &[&[
                "coin",
                "status",
                "startTime",
                "endTime",
                "offset",
                "limit",
                "txId",
                "includeSource",
            ]],
            |g| g.on(capital::deposit_history),
        ),
        route(
            "POST",
            "/sapi/v1/capital/withdraw/apply",
            "Withdraw on chain (withdraw permission and an IP allow-list on the key)",
            // Binance weighs it against a per-user budget this limiter does
            // not keep; against the key's and address's budgets it costs 1.
            Endpoint::new(Security::Signed(Permission::Withdraw)).weight(1),
            &[&[
                "coin",
                "withdrawOrderId",
                "network",
                "address",
                "addressTag",
                "amount",
                "transactionFeeFlag",
                "name",
                "walletType",
            ]],
            |g| g.on(capital::withdraw),
        ),
        route(
            "GET",
            "/sapi/v1/capital/withdraw/history",
            "Withdrawals: processing (4), failed and refunded (5), completed (6)",
            read(1),
            &[&[
                "coin",
                "withdrawOrderId",
                "status",
                "offset",
                "limit",
                "idList",
                "startTime",
                "endTime",
            ]],
            |g| g.on(capital::withdraw_history),
        ),
        route(
            "GET",
            "/sapi/v1/asset/assetDetail",
            "Per asset: deposit and withdrawal status, minimum and fee",
            read(1),
            &[&["asset"]],
            |g| g.on(capital::asset_detail),
        ),
        route(
            "GET",
            "/sapi/v1/margin/allPairs",
            "Cross-margin pairs (none)",
            public(1),
            &[reads::SYMBOL],
            |g| g.on(sapi::no_margin_pairs),
        ),
        route(
            "GET",
            "/sapi/v1/margin/isolated/allPairs",
            "Isolated-margin pairs (none)",
            read(10),
            &[reads::SYMBOL],
            |g| g.on(sapi::no_margin_pairs),
        ),
        route(
            "GET",
            "/fapi/v1/exchangeInfo",
            "USD-M futures (none)",
            public(1),
            reads::NONE,
            |g| g.on(sapi::no_futures),
        ),
        route(
            "GET",
            "/dapi/v1/exchangeInfo",
            "Coin-M futures (none)",
            public(1),
            reads::NONE,
            |g| g.on(sapi::no_futures),
        ),
    ]
}

/// The exchange's public routes, every one behind its access checks, and
/// `/openapi.json` describing them.
pub fn router(exchange: Arc<Exchange>) -> Router {
    let access = exchange.access.clone();
    let mut paths: BTreeMap<&str, MethodRouter> = BTreeMap::new();
    for route in routes() {
        let endpoint = route.endpoint.reads(route.params);
        let method = Method::from_bytes(route.method.as_bytes()).expect("a route's method");
        let guarded = (route.handler)(Guarding {
            guard: guard(&access, &BinanceFace, endpoint),
            methods: MethodFilter::try_from(method).expect("a route's method"),
            exchange: exchange.clone(),
        });
        let merged = match paths.remove(route.path) {
            Some(existing) => existing.merge(guarded),
            None => guarded,
        };
        paths.insert(route.path, merged);
    }
    let document = Arc::new(openapi());
    paths
        .into_iter()
        .fold(Router::new(), |router, (path, methods)| {
            router.route(path, methods)
        })
        .route(
            "/openapi.json",
            get(move || {
                let document = document.clone();
                async move { Json((*document).clone()) }
            }),
        )
}

/// OpenAPI 3.1 description of every exchange route.
pub fn openapi() -> serde_json::Value {
    let mut paths = serde_json::Map::new();
    for route in routes() {
        let (security, tag) = match route.endpoint.security {
            Security::Public => (serde_json::json!([]), "market"),
            Security::OptionalKey(_) => (serde_json::json!([{}, { "apiKey": [] }]), "market"),
            Security::Key(_) => (serde_json::json!([{ "apiKey": [] }]), "account"),
            Security::Signed(Permission::Trade) => (
                serde_json::json!([{ "apiKey": [], "signature": [] }]),
                "trade",
            ),
            Security::Signed(_) => (
                serde_json::json!([{ "apiKey": [], "signature": [] }]),
                "account",
            ),
        };
        let weight = match route.endpoint.weight {
            weiport_access::Weight::Fixed(weight) => serde_json::json!(weight),
            weiport_access::Weight::ByQuery(_) => serde_json::json!("by parameters"),
        };
        let signed = matches!(route.endpoint.security, Security::Signed(_));
        let names = route.params.iter().copied().flatten().copied();
        let names = names.chain(
            ["timestamp", "recvWindow", "signature"]
                .into_iter()
                .filter(|_| signed),
        );
        let parameters: Vec<serde_json::Value> = names
            .map(|name| {
                let required = ["timestamp", "signature"].contains(&name);
                serde_json::json!({
                    "name": name,
                    "in": "query",
                    "required": required,
                    "schema": { "type": "string" },
                })
            })
            .collect();
        let operation = serde_json::json!({
            "summary": route.summary,
            "parameters": parameters,
            "operationId": format!("{} {}", route.method, route.path),
            "tags": [tag],
            "security": security,
            "x-weight": weight,
            "x-counts-order": route.endpoint.counts_order,
            "responses": {
                "200": { "description": "Binance-compatible JSON answer" },
                "400": { "$ref": "#/components/responses/Error" },
                "401": { "$ref": "#/components/responses/Error" },
                "418": { "$ref": "#/components/responses/Error" },
                "429": { "$ref": "#/components/responses/Error" },
            },
        });
        paths
            .entry(route.path)
            .or_insert_with(|| serde_json::json!({}))[route.method.to_lowercase()] = operation;
    }
    serde_json::json!({
        "openapi": "3.1.0",
        "info": {
            "title": "weiport exchange API",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Binance Spot-compatible REST API. Signed endpoints take `timestamp`, optional `recvWindow` and `signature` (HMAC-SHA256 hex or Ed25519 base64 over the raw query string followed by the raw body).",
        },
        "paths": paths,
        "components": {
            "securitySchemes": {
                "apiKey": { "type": "apiKey", "in": "header", "name": "X-MBX-APIKEY" },
                "signature": { "type": "apiKey", "in": "query", "name": "signature" },
            },
            "responses": {
                "Error": {
                    "description": "Binance error",
                    "content": { "application/json": { "schema": {
                        "type": "object",
                        "required": ["code", "msg"],
                        "properties": { "code": { "type": "integer" }, "msg": { "type": "string" } },
                    } } },
                },
            },
        },
    })
}

#[cfg(test)]
mod tests;
