//! The OpenAPI document of the route table, with each operation's
//! WebSocket API method beside it.

use weiport_access::{Permission, Security};

use super::{SOCKET, WS_API, routes};

/// OpenAPI 3.1 description of every exchange route.
pub fn openapi() -> serde_json::Value {
    let mut paths = serde_json::Map::new();
    let mut ws_methods = serde_json::Map::new();
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
        if let Some(name) = route.ws {
            let http = (route.method != SOCKET).then(|| format!("{} {}", route.method, route.path));
            ws_methods.insert(
                name.to_owned(),
                serde_json::json!({
                    "summary": route.summary,
                    "params": parameters.iter().map(|p| p["name"].clone()).collect::<Vec<_>>(),
                    "security": security,
                    "x-weight": weight,
                    "x-counts-order": route.endpoint.counts_order,
                    "sameAs": http,
                }),
            );
        }
        if route.method == SOCKET {
            continue;
        }
        let operation = serde_json::json!({
            "summary": route.summary,
            "parameters": parameters,
            "operationId": format!("{} {}", route.method, route.path),
            "x-ws-api-method": route.ws,
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
        // The WebSocket API serves the same operations by method name: each
        // request `{"id","method","params"}` with these parameters, signed
        // with `apiKey`, `timestamp` and `signature` (over the parameters
        // sorted by name), or unsigned after `session.logon`.
        "x-ws-api": { "path": WS_API, "methods": ws_methods },
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
