//! Parameter lists of the routes (signed routes add `timestamp`, `recvWindow`).

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
