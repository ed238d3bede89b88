//! The Binance Spot-compatible routes, each with its security and weight:
//! the table the router and the OpenAPI document are both built from.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::handler::Handler;
use axum::http::Method;
use axum::routing::{MethodFilter, MethodRouter, get};
use axum::{Extension, Json, Router};
use weiport_access::{Endpoint, Guarded, Permission, Security, guard};

use crate::error::BinanceFace;
use crate::exchange::Exchange;
use crate::ws_api::Operations;
use crate::{account, capital, lists, market_data, modify, reserves_api, sapi, ticker, trading};

/// One operation: what it answers, who may call it and what it costs, and
/// its handler; its HTTP method and path, its WebSocket API method name, or
/// both. The router, the OpenAPI document and the WebSocket API are all
/// built from the table of these, so they cannot disagree.
struct Route {
    /// The HTTP method, or [`SOCKET`] for an operation only the WebSocket
    /// API has.
    method: &'static str,
    path: &'static str,
    summary: &'static str,
    endpoint: Endpoint,
    /// The parameter names it reads; anything else is refused (-1104).
    params: &'static [&'static [&'static str]],
    handler: fn(Guarding) -> MethodRouter,
    /// Its method name on the WebSocket API.
    ws: Option<&'static str>,
}

/// The "method" of an operation only the WebSocket API has (the connection's
/// own: `session.logon`…); its path is internal.
const SOCKET: &str = "WS";

/// Where the WebSocket API is.
const WS_API: &str = "/ws-api/v3";

impl Route {
    /// Served on the WebSocket API too, as `name`.
    fn ws(mut self, name: &'static str) -> Self {
        self.ws = Some(name);
        self
    }
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

mod openapi;
mod reads;

pub use openapi::openapi;

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
        ws: None,
    };
    let socket = |name: &'static str, summary, endpoint: Endpoint, params| {
        route(SOCKET, name, summary, endpoint.weight(2), params, |g| {
            g.on(crate::ws_api::who_calls)
        })
        .ws(&name[1..])
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
            WS_API,
            "WebSocket API: every operation with a method name here, over one connection",
            public(2),
            reads::NONE,
            |g| g.on(crate::ws_api::ws_api),
        ),
        socket(
            "/session.logon",
            "Authenticate the connection with an Ed25519 key",
            Endpoint::new(Security::Signed(Permission::Read)),
            reads::NONE,
        ),
        socket(
            "/session.status",
            "The connection's key and subscriptions",
            Endpoint::new(Security::Public),
            reads::NONE,
        ),
        socket(
            "/session.logout",
            "Forget the connection's key",
            Endpoint::new(Security::Public),
            reads::NONE,
        ),
        socket(
            "/userDataStream.subscribe",
            "The logged-on account's user data events on this connection",
            Endpoint::new(Security::Key(Permission::Read)),
            reads::NONE,
        ),
        socket(
            "/userDataStream.subscribe.signature",
            "A signing key's account's user data events on this connection",
            Endpoint::new(Security::Signed(Permission::Read)),
            reads::NONE,
        ),
        socket(
            "/userDataStream.unsubscribe",
            "End one or every user data subscription",
            Endpoint::new(Security::Public),
            &[&["subscriptionId"]],
        ),
        route(
            "POST",
            "/api/v3/userDataStream",
            "Start or extend the account's user data stream (listen key)",
            Endpoint::new(Security::Key(Permission::Read)).weight(2),
            reads::NONE,
            |g| g.on(crate::stream_routes::create_listen_key),
        )
        .ws("userDataStream.start"),
        route(
            "PUT",
            "/api/v3/userDataStream",
            "Keep a listen key alive for 60 minutes",
            Endpoint::new(Security::Key(Permission::Read)).weight(2),
            reads::LISTEN_KEY,
            |g| g.on(crate::stream_routes::keep_listen_key),
        )
        .ws("userDataStream.ping"),
        route(
            "DELETE",
            "/api/v3/userDataStream",
            "Close a listen key",
            Endpoint::new(Security::Key(Permission::Read)).weight(2),
            reads::LISTEN_KEY,
            |g| g.on(crate::stream_routes::close_listen_key),
        )
        .ws("userDataStream.stop"),
        route(
            "GET",
            "/api/v3/ping",
            "Test connectivity",
            public(1),
            reads::NONE,
            |g| g.on(market_data::ping),
        )
        .ws("ping"),
        route(
            "GET",
            "/api/v3/time",
            "Server time",
            public(1),
            reads::NONE,
            |g| g.on(market_data::time),
        )
        .ws("time"),
        route(
            "GET",
            "/api/v3/exchangeInfo",
            "Markets, filters and rate limits",
            public(20),
            &[reads::SYMBOLS, &["symbolStatus"]],
            |g| g.on(market_data::exchange_info),
        )
        .ws("exchangeInfo"),
        route(
            "GET",
            "/api/v3/depth",
            "Order book",
            by_query(market_data::depth_weight),
            &[reads::SYMBOL, reads::LIMIT],
            |g| g.on(market_data::depth),
        )
        .ws("depth"),
        route(
            "GET",
            "/api/v3/trades",
            "Recent trades",
            public(25),
            &[reads::SYMBOL, reads::LIMIT],
            |g| g.on(market_data::recent_trades),
        )
        .ws("trades.recent"),
        route(
            "GET",
            "/api/v3/historicalTrades",
            "Older trades from an id",
            public(25),
            &[reads::SYMBOL, reads::LIMIT, &["fromId"]],
            |g| g.on(market_data::historical_trades),
        )
        .ws("trades.historical"),
        route(
            "GET",
            "/api/v3/aggTrades",
            "Aggregate trades",
            public(4),
            &[reads::SYMBOL, reads::WINDOW, &["fromId"]],
            |g| g.on(market_data::agg_trades),
        )
        .ws("trades.aggregate"),
        route(
            "GET",
            "/api/v3/klines",
            "Candlesticks",
            public(2),
            &[reads::SYMBOL, reads::WINDOW, &["interval", "timeZone"]],
            |g| g.on(market_data::klines),
        )
        .ws("klines"),
        route(
            "GET",
            "/api/v3/uiKlines",
            "Candlesticks (UI)",
            public(2),
            &[reads::SYMBOL, reads::WINDOW, &["interval", "timeZone"]],
            |g| g.on(market_data::klines),
        )
        .ws("uiKlines"),
        route(
            "GET",
            "/api/v3/avgPrice",
            "Five-minute average price",
            public(2),
            &[reads::SYMBOL],
            |g| g.on(ticker::avg_price),
        )
        .ws("avgPrice"),
        route(
            "GET",
            "/api/v3/ticker/24hr",
            "24-hour statistics",
            by_query(ticker::ticker_24hr_weight),
            &[reads::SYMBOLS, &["type"]],
            |g| g.on(ticker::ticker_24hr),
        )
        .ws("ticker.24hr"),
        route(
            "GET",
            "/api/v3/ticker/price",
            "Last prices",
            by_query(ticker::ticker_price_weight),
            &[reads::SYMBOLS],
            |g| g.on(ticker::ticker_price),
        )
        .ws("ticker.price"),
        route(
            "GET",
            "/api/v3/ticker/bookTicker",
            "Best bid and ask",
            by_query(ticker::ticker_price_weight),
            &[reads::SYMBOLS],
            |g| g.on(ticker::book_ticker),
        )
        .ws("ticker.book"),
        route(
            "GET",
            "/api/v3/ticker",
            "Rolling-window statistics",
            by_query(ticker::ticker_window_weight),
            &[reads::SYMBOLS, &["type", "windowSize"]],
            |g| g.on(ticker::ticker_window),
        )
        .ws("ticker"),
        route(
            "GET",
            "/api/v3/ticker/tradingDay",
            "Statistics of the current trading day in a time zone",
            by_query(ticker::ticker_window_weight),
            &[reads::SYMBOLS, &["type", "timeZone"]],
            |g| g.on(ticker::ticker_trading_day),
        )
        .ws("ticker.tradingDay"),
        route(
            "POST",
            "/api/v3/order",
            "Place an order",
            TRADE.order(),
            &[reads::ORDER],
            |g| g.on(trading::new_order),
        )
        .ws("order.place"),
        route(
            "GET",
            "/api/v3/order",
            "Query an order",
            read(4),
            &[reads::ORDER_REF],
            |g| g.on(trading::query_order),
        )
        .ws("order.status"),
        route(
            "DELETE",
            "/api/v3/order",
            "Cancel an order",
            TRADE,
            &[reads::ORDER_REF, &["newClientOrderId"]],
            |g| g.on(trading::cancel_order),
        )
        .ws("order.cancel"),
        route(
            "POST",
            "/api/v3/order/test",
            "Validate an order without placing it",
            TRADE.weight_by(trading::test_order_weight),
            &[reads::ORDER, &["computeCommissionRates"]],
            |g| g.on(trading::test_order),
        )
        .ws("order.test"),
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
        )
        .ws("order.cancelReplace"),
        route(
            "PUT",
            "/api/v3/order/amend/keepPriority",
            "Reduce an order's quantity, keeping its place in the queue",
            TRADE.weight(4),
            &[reads::ORDER_REF, &["newClientOrderId", "newQty"]],
            |g| g.on(modify::amend_order),
        )
        .ws("order.amend.keepPriority"),
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
        )
        .ws("myPreventedMatches"),
        route(
            "POST",
            "/api/v3/orderList/oco",
            "Place an OCO pair: one order above the market, one below",
            TRADE.order(),
            reads::OCO,
            |g| g.on(lists::place_oco),
        )
        .ws("orderList.place.oco"),
        route(
            "POST",
            "/api/v3/orderList/oto",
            "Place a working order and one placed once it fills",
            TRADE.order(),
            reads::OTO,
            |g| g.on(lists::place_oto),
        )
        .ws("orderList.place.oto"),
        route(
            "POST",
            "/api/v3/orderList/otoco",
            "Place a working order and an OCO pair placed once it fills",
            TRADE.order(),
            reads::OTOCO,
            |g| g.on(lists::place_otoco),
        )
        .ws("orderList.place.otoco"),
        route(
            "POST",
            "/api/v3/order/oco",
            "Place an OCO pair (legacy form: limit and stop)",
            TRADE.order(),
            reads::LEGACY_OCO,
            |g| g.on(lists::place_legacy_oco),
        )
        .ws("orderList.place"),
        route(
            "GET",
            "/api/v3/orderList",
            "Query an order list",
            read(4),
            &[reads::LIST_REF],
            |g| g.on(lists::query_list),
        )
        .ws("orderList.status"),
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
        )
        .ws("orderList.cancel"),
        route(
            "GET",
            "/api/v3/allOrderList",
            "Order list history",
            read(20),
            &[reads::WINDOW, &["fromId"]],
            |g| g.on(lists::all_lists),
        )
        .ws("allOrderLists"),
        route(
            "GET",
            "/api/v3/openOrderList",
            "Open order lists",
            read(6),
            reads::NONE,
            |g| g.on(lists::open_lists),
        )
        .ws("openOrderLists.status"),
        route(
            "GET",
            "/api/v3/openOrders",
            "Open orders",
            read_by_query(trading::open_orders_weight),
            &[reads::SYMBOL],
            |g| g.on(trading::open_orders),
        )
        .ws("openOrders.status"),
        route(
            "DELETE",
            "/api/v3/openOrders",
            "Cancel every open order on a market",
            TRADE,
            &[reads::SYMBOL],
            |g| g.on(trading::cancel_open_orders),
        )
        .ws("openOrders.cancelAll"),
        route(
            "GET",
            "/api/v3/allOrders",
            "Order history",
            read(20),
            &[reads::SYMBOL, reads::WINDOW, &["orderId"]],
            |g| g.on(account::all_orders),
        )
        .ws("allOrders"),
        route(
            "GET",
            "/api/v3/account",
            "Balances and permissions",
            read(20),
            &[&["omitZeroBalances"]],
            |g| g.on(account::account),
        )
        .ws("account.status"),
        route(
            "GET",
            "/api/v3/myTrades",
            "Own trades",
            read_by_query(account::my_trades_weight),
            &[reads::SYMBOL, reads::WINDOW, &["orderId", "fromId"]],
            |g| g.on(account::my_trades),
        )
        .ws("myTrades"),
        route(
            "GET",
            "/api/v3/rateLimit/order",
            "Order counts against the limits",
            read(40),
            reads::NONE,
            |g| g.on(account::order_rate_limit),
        )
        .ws("account.rateLimits.orders"),
        route(
            "GET",
            "/api/v3/account/commission",
            "Commission rates",
            read(20),
            &[reads::SYMBOL],
            |g| g.on(account::account_commission),
        )
        .ws("account.commission"),
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
            "/sapi/v1/reserves",
            "Proof of reserves: a snapshot (sequence, or the latest): liabilities' root and totals, each chain's signed addresses and balances at a block, reserves over liabilities per asset",
            public(1),
            &[&["sequence"]],
            |g| g.on(reserves_api::snapshot),
        ),
        route(
            "GET",
            "/sapi/v1/reserves/snapshots",
            "Proof of reserves: the kept snapshots, oldest first",
            public(1),
            reads::NONE,
            |g| g.on(reserves_api::snapshots),
        ),
        route(
            "GET",
            "/sapi/v1/reserves/proof",
            "Proof of reserves: the account's leaf, salt and path to the root of a snapshot, with the snapshot",
            read(1),
            &[&["sequence"]],
            |g| g.on(reserves_api::proof),
        ),
        route(
            "GET",
            "/sapi/v1/capital/deposit/hisrec",
            "Deposits: pending (0), credited (6), swept (1)",
            read(1),
            &[&[
                "coin",
                "network",
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
                "network",
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
    // The WebSocket API's operations: the same guarded routes, reached by
    // method name rather than from the network.
    let mut socket_paths: BTreeMap<&str, MethodRouter> = BTreeMap::new();
    let mut methods = Vec::new();
    for route in routes() {
        let endpoint = route.endpoint.reads(route.params);
        let method = match route.method {
            SOCKET => Method::GET,
            method => Method::from_bytes(method.as_bytes()).expect("a route's method"),
        };
        let guarded = (route.handler)(Guarding {
            guard: guard(&access, &BinanceFace, endpoint),
            methods: MethodFilter::try_from(method.clone()).expect("a route's method"),
            exchange: exchange.clone(),
        });
        if let Some(name) = route.ws {
            methods.push((name, method, route.path));
            add(&mut socket_paths, route.path, guarded.clone());
        }
        if route.method != SOCKET {
            add(&mut paths, route.path, guarded);
        }
    }
    let operations = Arc::new(Operations::new(methods, routed(socket_paths)));
    if let Some(ws_api) = paths.remove(WS_API) {
        paths.insert(WS_API, ws_api.layer(Extension(operations)));
    }
    let document = Arc::new(openapi());
    routed(paths).route(
        "/openapi.json",
        get(move || {
            let document = document.clone();
            async move { Json((*document).clone()) }
        }),
    )
}

/// `methods` added to what `paths` answers at `path`.
fn add<'a>(paths: &mut BTreeMap<&'a str, MethodRouter>, path: &'a str, methods: MethodRouter) {
    let merged = match paths.remove(path) {
        Some(existing) => existing.merge(methods),
        None => methods,
    };
    paths.insert(path, merged);
}

/// A router answering each path with its methods.
fn routed(paths: BTreeMap<&str, MethodRouter>) -> Router {
    paths
        .into_iter()
        .fold(Router::new(), |router, (path, methods)| {
            router.route(path, methods)
        })
}

#[cfg(test)]
mod tests;
