//! The Binance Spot-compatible routes, each with its security and weight:
//! the table the router and the OpenAPI document are both built from.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::handler::Handler;
use axum::http::Method;
use axum::routing::{MethodFilter, MethodRouter, get};
use axum::{Json, Router};
use weiport_access::{Endpoint, Guarded, Permission, Security, guard};

use crate::api::{self, Exchange};
use crate::error::BinanceFace;

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

/// Parameter lists of the routes (signed routes add `timestamp`, `recvWindow`).
mod reads {
    pub(super) const NONE: &[&[&str]] = &[];
    pub(super) const SYMBOL: &[&str] = &["symbol"];
    pub(super) const SYMBOLS: &[&str] = &["symbol", "symbols"];
    pub(super) const LIMIT: &[&str] = &["limit"];
    pub(super) const STREAMS: &[&[&str]] = &[&["streams", "timeUnit"]];
    pub(super) const LISTEN_KEY: &[&[&str]] = &[&["listenKey"]];
    pub(super) const WINDOW: &[&str] = &["startTime", "endTime", "limit"];
    pub(super) const ORDER: &[&str] = &[
        "symbol",
        "side",
        "type",
        "timeInForce",
        "quantity",
        "quoteOrderQty",
        "price",
        "newClientOrderId",
        "stopPrice",
        "trailingDelta",
        "icebergQty",
        "newOrderRespType",
        "selfTradePreventionMode",
    ];
    pub(super) const ORDER_REF: &[&str] = &["symbol", "orderId", "origClientOrderId"];
    /// What every order list request shares.
    pub(super) const LIST: &[&str] = &[
        "symbol",
        "listClientOrderId",
        "newOrderRespType",
        "selfTradePreventionMode",
    ];
    /// One order of a list, under a prefix (`above…`, `working…`).
    macro_rules! leg {
        ($prefix:literal) => {
            &[
                concat!($prefix, "Type"),
                concat!($prefix, "ClientOrderId"),
                concat!($prefix, "Price"),
                concat!($prefix, "StopPrice"),
                concat!($prefix, "TrailingDelta"),
                concat!($prefix, "TimeInForce"),
                concat!($prefix, "IcebergQty"),
            ]
        };
    }
    pub(super) const OCO: &[&[&str]] = &[LIST, &["side", "quantity"], leg!("above"), leg!("below")];
    pub(super) const WORKING: &[&str] = leg!("working");
    pub(super) const OTO: &[&[&str]] = &[
        LIST,
        WORKING,
        &[
            "workingSide",
            "workingQuantity",
            "pendingSide",
            "pendingQuantity",
        ],
        leg!("pending"),
    ];
    pub(super) const OTOCO: &[&[&str]] = &[
        LIST,
        WORKING,
        &[
            "workingSide",
            "workingQuantity",
            "pendingSide",
            "pendingQuantity",
        ],
        leg!("pendingAbove"),
        leg!("pendingBelow"),
    ];
    pub(super) const LEGACY_OCO: &[&[&str]] = &[
        LIST,
        &[
            "side",
            "quantity",
            "limitClientOrderId",
            "price",
            "limitIcebergQty",
            "trailingDelta",
            "stopClientOrderId",
            "stopPrice",
            "stopLimitPrice",
            "stopIcebergQty",
            "stopLimitTimeInForce",
        ],
    ];
    pub(super) const LIST_REF: &[&str] = &["orderListId", "origClientOrderId"];
}

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
            |g| g.on(crate::streams::ws_bare),
        ),
        route(
            "GET",
            "/ws/{*streams}",
            "Market streams named in the path (anything else opens an empty connection)",
            public(2),
            reads::NONE,
            |g| g.on(crate::streams::ws_path),
        ),
        route(
            "GET",
            "/stream",
            "Combined market streams, each event as {stream, data}",
            public(2),
            reads::STREAMS,
            |g| g.on(crate::streams::combined),
        ),
        route(
            "GET",
            "/ws-api/v3",
            "WebSocket API: user data stream subscriptions (userDataStream.subscribe.signature)",
            public(2),
            reads::NONE,
            |g| g.on(crate::streams::ws_api),
        ),
        route(
            "POST",
            "/api/v3/userDataStream",
            "Start or extend the account's user data stream (listen key)",
            Endpoint::new(Security::Key(Permission::Read)).weight(2),
            reads::NONE,
            |g| g.on(crate::streams::create_listen_key),
        ),
        route(
            "PUT",
            "/api/v3/userDataStream",
            "Keep a listen key alive for 60 minutes",
            Endpoint::new(Security::Key(Permission::Read)).weight(2),
            reads::LISTEN_KEY,
            |g| g.on(crate::streams::keep_listen_key),
        ),
        route(
            "DELETE",
            "/api/v3/userDataStream",
            "Close a listen key",
            Endpoint::new(Security::Key(Permission::Read)).weight(2),
            reads::LISTEN_KEY,
            |g| g.on(crate::streams::close_listen_key),
        ),
        route(
            "GET",
            "/api/v3/ping",
            "Test connectivity",
            public(1),
            reads::NONE,
            |g| g.on(api::ping),
        ),
        route(
            "GET",
            "/api/v3/time",
            "Server time",
            public(1),
            reads::NONE,
            |g| g.on(api::time),
        ),
        route(
            "GET",
            "/api/v3/exchangeInfo",
            "Markets, filters and rate limits",
            public(20),
            &[reads::SYMBOLS, &["symbolStatus"]],
            |g| g.on(api::exchange_info),
        ),
        route(
            "GET",
            "/api/v3/depth",
            "Order book",
            by_query(api::depth_weight),
            &[reads::SYMBOL, reads::LIMIT],
            |g| g.on(api::depth),
        ),
        route(
            "GET",
            "/api/v3/trades",
            "Recent trades",
            public(25),
            &[reads::SYMBOL, reads::LIMIT],
            |g| g.on(api::trades),
        ),
        route(
            "GET",
            "/api/v3/historicalTrades",
            "Older trades from an id",
            public(25),
            &[reads::SYMBOL, reads::LIMIT, &["fromId"]],
            |g| g.on(api::trades),
        ),
        route(
            "GET",
            "/api/v3/aggTrades",
            "Aggregate trades",
            public(4),
            &[reads::SYMBOL, reads::WINDOW, &["fromId"]],
            |g| g.on(api::agg_trades),
        ),
        route(
            "GET",
            "/api/v3/klines",
            "Candlesticks",
            public(2),
            &[reads::SYMBOL, reads::WINDOW, &["interval", "timeZone"]],
            |g| g.on(api::klines),
        ),
        route(
            "GET",
            "/api/v3/uiKlines",
            "Candlesticks (UI)",
            public(2),
            &[reads::SYMBOL, reads::WINDOW, &["interval", "timeZone"]],
            |g| g.on(api::klines),
        ),
        route(
            "GET",
            "/api/v3/avgPrice",
            "Five-minute average price",
            public(2),
            &[reads::SYMBOL],
            |g| g.on(api::avg_price),
        ),
        route(
            "GET",
            "/api/v3/ticker/24hr",
            "24-hour statistics",
            by_query(api::ticker_24hr_weight),
            &[reads::SYMBOLS, &["type"]],
            |g| g.on(api::ticker_24hr),
        ),
        route(
            "GET",
            "/api/v3/ticker/price",
            "Last prices",
            by_query(api::ticker_price_weight),
            &[reads::SYMBOLS],
            |g| g.on(api::ticker_price),
        ),
        route(
            "GET",
            "/api/v3/ticker/bookTicker",
            "Best bid and ask",
            by_query(api::ticker_price_weight),
            &[reads::SYMBOLS],
            |g| g.on(api::book_ticker),
        ),
        route(
            "GET",
            "/api/v3/ticker",
            "Rolling-window statistics",
            by_query(api::ticker_window_weight),
            &[reads::SYMBOLS, &["type", "windowSize"]],
            |g| g.on(api::ticker_window),
        ),
        route(
            "GET",
            "/api/v3/ticker/tradingDay",
            "Statistics of the current trading day in a time zone",
            by_query(api::ticker_window_weight),
            &[reads::SYMBOLS, &["type", "timeZone"]],
            |g| g.on(api::ticker_trading_day),
        ),
        route(
            "POST",
            "/api/v3/order",
            "Place an order",
            TRADE.order(),
            &[reads::ORDER],
            |g| g.on(api::new_order),
        ),
        route(
            "GET",
            "/api/v3/order",
            "Query an order",
            read(4),
            &[reads::ORDER_REF],
            |g| g.on(api::query_order),
        ),
        route(
            "DELETE",
            "/api/v3/order",
            "Cancel an order",
            TRADE,
            &[reads::ORDER_REF, &["newClientOrderId"]],
            |g| g.on(api::cancel_order),
        ),
        route(
            "POST",
            "/api/v3/order/test",
            "Validate an order without placing it",
            TRADE.weight_by(api::test_order_weight),
            &[reads::ORDER, &["computeCommissionRates"]],
            |g| g.on(api::test_order),
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
            |g| g.on(api::cancel_replace),
        ),
        route(
            "PUT",
            "/api/v3/order/amend/keepPriority",
            "Reduce an order's quantity, keeping its place in the queue",
            TRADE.weight(4),
            &[reads::ORDER_REF, &["newClientOrderId", "newQty"]],
            |g| g.on(api::amend_order),
        ),
        route(
            "GET",
            "/api/v3/myPreventedMatches",
            "Matches self-trade prevention stopped",
            read_by_query(api::prevented_matches_weight),
            &[
                reads::SYMBOL,
                &[
                    "preventedMatchId",
                    "orderId",
                    "fromPreventedMatchId",
                    "limit",
                ],
            ],
            |g| g.on(api::my_prevented_matches),
        ),
        route(
            "POST",
            "/api/v3/orderList/oco",
            "Place an OCO pair: one order above the market, one below",
            TRADE.order(),
            reads::OCO,
            |g| g.on(api::place_oco),
        ),
        route(
            "POST",
            "/api/v3/orderList/oto",
            "Place a working order and one placed once it fills",
            TRADE.order(),
            reads::OTO,
            |g| g.on(api::place_oto),
        ),
        route(
            "POST",
            "/api/v3/orderList/otoco",
            "Place a working order and an OCO pair placed once it fills",
            TRADE.order(),
            reads::OTOCO,
            |g| g.on(api::place_otoco),
        ),
        route(
            "POST",
            "/api/v3/order/oco",
            "Place an OCO pair (legacy form: limit and stop)",
            TRADE.order(),
            reads::LEGACY_OCO,
            |g| g.on(api::place_legacy_oco),
        ),
        route(
            "GET",
            "/api/v3/orderList",
            "Query an order list",
            read(4),
            &[reads::LIST_REF],
            |g| g.on(api::query_list),
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
            |g| g.on(api::cancel_list),
        ),
        route(
            "GET",
            "/api/v3/allOrderList",
            "Order list history",
            read(20),
            &[reads::WINDOW, &["fromId"]],
            |g| g.on(api::all_lists),
        ),
        route(
            "GET",
            "/api/v3/openOrderList",
            "Open order lists",
            read(6),
            reads::NONE,
            |g| g.on(api::open_lists),
        ),
        route(
            "GET",
            "/api/v3/openOrders",
            "Open orders",
            read_by_query(api::open_orders_weight),
            &[reads::SYMBOL],
            |g| g.on(api::open_orders),
        ),
        route(
            "DELETE",
            "/api/v3/openOrders",
            "Cancel every open order on a market",
            TRADE,
            &[reads::SYMBOL],
            |g| g.on(api::cancel_open_orders),
        ),
        route(
            "GET",
            "/api/v3/allOrders",
            "Order history",
            read(20),
            &[reads::SYMBOL, reads::WINDOW, &["orderId"]],
            |g| g.on(api::all_orders),
        ),
        route(
            "GET",
            "/api/v3/account",
            "Balances and permissions",
            read(20),
            &[&["omitZeroBalances"]],
            |g| g.on(api::account),
        ),
        route(
            "GET",
            "/api/v3/myTrades",
            "Own trades",
            read_by_query(api::my_trades_weight),
            &[reads::SYMBOL, reads::WINDOW, &["orderId", "fromId"]],
            |g| g.on(api::my_trades),
        ),
        route(
            "GET",
            "/api/v3/rateLimit/order",
            "Order counts against the limits",
            read(40),
            reads::NONE,
            |g| g.on(api::order_rate_limit),
        ),
        route(
            "GET",
            "/api/v3/account/commission",
            "Commission rates",
            read(20),
            &[reads::SYMBOL],
            |g| g.on(api::account_commission),
        ),
        route(
            "GET",
            "/sapi/v1/system/status",
            "System status (0: normal)",
            public(1),
            reads::NONE,
            |g| g.on(api::system_status),
        ),
        route(
            "GET",
            "/sapi/v1/asset/tradeFee",
            "Fee rates of one or every market",
            read(1),
            &[reads::SYMBOL],
            |g| g.on(api::trade_fee),
        ),
        route(
            "GET",
            "/sapi/v1/account/apiRestrictions",
            "The key's permissions",
            read(1),
            reads::NONE,
            |g| g.on(api::api_restrictions),
        ),
        route(
            "GET",
            "/sapi/v1/capital/config/getall",
            "Assets and balances",
            read(10),
            reads::NONE,
            |g| g.on(api::capital_config),
        ),
        route(
            "GET",
            "/sapi/v1/capital/deposit/address",
            "The account's deposit address for a coin",
            read(10),
            &[&["coin", "network", "amount"]],
            |g| g.on(api::deposit_address),
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
            |g| g.on(api::deposit_history),
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
            |g| g.on(api::withdraw),
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
            |g| g.on(api::withdraw_history),
        ),
        route(
            "GET",
            "/sapi/v1/asset/assetDetail",
            "Per asset: deposit and withdrawal status, minimum and fee",
            read(1),
            &[&["asset"]],
            |g| g.on(api::asset_detail),
        ),
        route(
            "GET",
            "/sapi/v1/margin/allPairs",
            "Cross-margin pairs (none)",
            public(1),
            &[reads::SYMBOL],
            |g| g.on(api::no_margin_pairs),
        ),
        route(
            "GET",
            "/sapi/v1/margin/isolated/allPairs",
            "Isolated-margin pairs (none)",
            read(10),
            &[reads::SYMBOL],
            |g| g.on(api::no_margin_pairs),
        ),
        route(
            "GET",
            "/fapi/v1/exchangeInfo",
            "USD-M futures (none)",
            public(1),
            reads::NONE,
            |g| g.on(api::no_futures),
        ),
        route(
            "GET",
            "/dapi/v1/exchangeInfo",
            "Coin-M futures (none)",
            public(1),
            reads::NONE,
            |g| g.on(api::no_futures),
        ),
    ]
}

/// The exchange's public routes, every one behind its access checks, and
/// `/openapi.json` describing them.
pub fn router(exchange: Arc<Exchange>) -> Router {
    // Rendered now, so that no client's first answer waits for it.
    std::sync::LazyLock::force(&crate::error::RENDERED_COUNTS);
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
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt;
    use weiport_access::{KeyStore, Limiter, LimitsConfig, MasterKey, NewKey};
    use weiport_exchange::Catalog;
    use weiport_exchange::engine::Command;
    use weiport_exchange::market::tests_support::eth_usdt;
    use weiport_storage::{Store, StoreOptions};

    /// The exchange over a store in `dir`, with one funded trading key.
    fn exchange(dir: &tempfile::TempDir) -> (Arc<Exchange>, String, String) {
        let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
        let master = MasterKey::load(None, &dir.path().join("master.key")).unwrap();
        let limiter = Limiter::new(LimitsConfig::default());
        let keys =
            KeyStore::open(store.clone(), master, limiter.tiers(), "default".into()).unwrap();
        let account = keys.create_account("test").unwrap().id;
        let created = keys
            .create_key(NewKey {
                account,
                permissions: vec![Permission::Read, Permission::Trade],
                ..NewKey::default()
            })
            .unwrap();
        let access = Arc::new(weiport_access::Access::new(keys, limiter, vec![], 65_536));
        let catalog = Arc::new(Catalog::new(vec![eth_usdt()]));
        let exchange = Arc::new(Exchange::open(store, catalog, 0, 64, access).unwrap());
        (exchange, created.info.id, created.secret.unwrap())
    }

    async fn call(
        router: &Router,
        method: &str,
        uri: &str,
        key: Option<&str>,
    ) -> (u16, serde_json::Value) {
        let mut request = Request::builder().method(method).uri(uri);
        if let Some(key) = key {
            request = request.header("X-MBX-APIKEY", key);
        }
        let response = router
            .clone()
            .oneshot(request.body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = response.status().as_u16();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        (status, serde_json::from_slice(&bytes).unwrap_or_default())
    }

    fn signed(secret: &str, params: &str) -> String {
        let payload = format!("{params}&timestamp={}", weiport_exchange::now_ms());
        let signature = weiport_access::sign_hmac_sha256(secret.as_bytes(), payload.as_bytes());
        format!("{payload}&signature={signature}")
    }

    #[tokio::test]
    async fn handlers_answer_in_process_without_a_server() {
        let dir = tempfile::tempdir().unwrap();
        let (exchange, key, secret) = exchange(&dir);
        exchange
            .sequencer
            .submit(Command::Credit {
                account: 1,
                asset: exchange.catalog.asset_id("USDT").unwrap(),
                amount: "10000".parse().unwrap(),
            })
            .await
            .unwrap();
        let router = router(exchange);

        let (status, depth) =
            call(&router, "GET", "/api/v3/depth?symbol=ETHUSDT&limit=5", None).await;
        assert_eq!(
            (status, depth["bids"].as_array().map(Vec::len)),
            (200, Some(0))
        );
        let (status, refused) =
            call(&router, "GET", "/api/v3/depth?symbol=ETHUSDT&extra=1", None).await;
        assert_eq!(status, 400);
        assert_eq!(
            refused["msg"],
            "Not all sent parameters were read; read '1' parameter(s) but was sent '2'."
        );

        let order = signed(
            &secret,
            "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=0.5&price=3000&newOrderRespType=RESULT",
        );
        let (status, placed) = call(
            &router,
            "POST",
            &format!("/api/v3/order?{order}"),
            Some(&key),
        )
        .await;
        assert_eq!(status, 200, "{placed}");
        assert_eq!(
            (placed["status"].as_str(), placed["orderId"].as_u64()),
            (Some("NEW"), Some(1))
        );
        let open = signed(&secret, "symbol=ETHUSDT");
        let (_, open) = call(
            &router,
            "GET",
            &format!("/api/v3/openOrders?{open}"),
            Some(&key),
        )
        .await;
        assert_eq!(open.as_array().map(Vec::len), Some(1));
        let (status, _) = call(&router, "GET", "/api/v3/account", None).await;
        assert_eq!(status, 401, "signed routes need a key");
    }
}
