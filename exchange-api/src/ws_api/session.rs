//! What a WebSocket API connection knows of itself: the key it logged on
//! with (`session.logon`, Ed25519 only) and its user data subscriptions
//! (`userDataStream.subscribe` on the logged-on key,
//! `userDataStream.subscribe.signature` on any signed key).

use std::sync::Arc;

use serde_json::{Value, json};
use weiport_access::ApiKey;
use weiport_access::keys::KeyKind;
use weiport_exchange::engine::AccountId;
use weiport_exchange::now_ms;

use crate::error::{BinanceError, Refusal};
use crate::streams::{Connection, StreamHub, event_in_microseconds, now_us, user_stream};

/// The methods that act on the connection rather than on the exchange.
pub(super) const METHODS: [&str; 6] = [
    "session.logon",
    "session.status",
    "session.logout",
    "userDataStream.subscribe",
    "userDataStream.subscribe.signature",
    "userDataStream.unsubscribe",
];

/// One user data subscription of a connection.
pub(super) struct Subscription {
    pub(super) id: u64,
    pub(super) stream: String,
    /// Made by `userDataStream.subscribe` on the logged-on key: ends at logout.
    by_logon: bool,
}

/// The logged-on key.
struct Logon {
    key_id: String,
    account: AccountId,
    since_ms: u64,
}

/// A connection's session: its logon and its subscriptions.
pub(super) struct Session {
    hub: Arc<StreamHub>,
    connection_id: u64,
    pub(super) me: Arc<Connection>,
    connected_ms: u64,
    /// Whether answers carry `rateLimits` unless a request says otherwise.
    pub(super) return_rate_limits: bool,
    logon: Option<Logon>,
    pub(super) subscriptions: Vec<Subscription>,
    next_subscription: u64,
}

impl Session {
    pub(super) fn new(hub: Arc<StreamHub>, me: Arc<Connection>, return_rate_limits: bool) -> Self {
        let connection_id = hub
            .next_connection
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Self {
            hub,
            connection_id,
            me,
            connected_ms: now_ms(),
            return_rate_limits,
            logon: None,
            subscriptions: Vec::new(),
            next_subscription: 0,
        }
    }

    /// The logged-on key's id.
    pub(super) fn logged_on(&self) -> Option<&str> {
        self.logon.as_ref().map(|logon| logon.key_id.as_str())
    }

    /// Refuses what cannot be asked of this session at all, before the
    /// request is checked and charged like any other.
    pub(super) fn precheck(&self, method: &str) -> Result<(), BinanceError> {
        if method == "userDataStream.subscribe" && self.logon.is_none() {
            return Err(Refusal::NotAuthorized.into());
        }
        Ok(())
    }

    /// Carries out `method`, which the access guard let through with `key`
    /// (if any); events to send before the answer go to `events`.
    pub(super) fn act(
        &mut self,
        method: &str,
        subscription: Option<&str>,
        key: Option<&Arc<ApiKey>>,
        events: &mut Vec<Value>,
    ) -> Result<Value, BinanceError> {
        let unauthorized = || BinanceError::from(Refusal::Unauthorized);
        match method {
            "session.logon" => {
                let key = key.ok_or_else(unauthorized)?;
                if key.kind != KeyKind::Ed25519 {
                    return Err(Refusal::HmacSession.into());
                }
                if self
                    .logon
                    .as_ref()
                    .is_some_and(|previous| previous.account != key.account)
                {
                    events.extend(self.end(|s| s.by_logon));
                }
                self.logon = Some(Logon {
                    key_id: key.id.clone(),
                    account: key.account,
                    since_ms: now_ms(),
                });
                Ok(self.status())
            }
            "session.status" => Ok(self.status()),
            "session.logout" => {
                events.extend(self.end(|s| s.by_logon));
                self.logon = None;
                Ok(self.status())
            }
            "userDataStream.subscribe" => {
                let key = key.ok_or_else(unauthorized)?;
                Ok(self.subscribe(key.account, true))
            }
            "userDataStream.subscribe.signature" => {
                let key = key.ok_or_else(unauthorized)?;
                Ok(self.subscribe(key.account, false))
            }
            "userDataStream.unsubscribe" => {
                let only = subscription.map(subscription_id).transpose()?;
                events.extend(self.end(|s| only.is_none_or(|o| o == s.id)));
                Ok(json!({}))
            }
            _ => Err(Refusal::Unsupported.into()),
        }
    }

    fn status(&self) -> Value {
        let (api_key, since) = match &self.logon {
            Some(logon) => (json!(logon.key_id), json!(logon.since_ms)),
            None => (Value::Null, Value::Null),
        };
        json!({
            "apiKey": api_key, "authorizedSince": since, "connectedSince": self.connected_ms,
            "returnRateLimits": self.return_rate_limits, "serverTime": now_ms(),
            "userDataStream": !self.subscriptions.is_empty(),
        })
    }

    fn subscribe(&mut self, account: AccountId, by_logon: bool) -> Value {
        let stream = user_stream(account);
        if self.subscriptions.iter().all(|s| s.stream != stream) {
            self.hub.subscribe(self.connection_id, &self.me, &stream);
        }
        let id = self.next_subscription;
        self.next_subscription += 1;
        self.subscriptions.push(Subscription {
            id,
            stream,
            by_logon,
        });
        json!({ "subscriptionId": id })
    }

    /// Ends the subscriptions `ending` picks; returns the
    /// `eventStreamTerminated` events to send.
    fn end(&mut self, ending: impl Fn(&Subscription) -> bool) -> Vec<Value> {
        let (gone, kept): (Vec<_>, Vec<_>) = self.subscriptions.drain(..).partition(ending);
        self.subscriptions = kept;
        let now_us = now_us();
        gone.iter()
            .map(|subscription| {
                if self
                    .subscriptions
                    .iter()
                    .all(|s| s.stream != subscription.stream)
                {
                    self.hub
                        .unsubscribe(self.connection_id, &subscription.stream);
                }
                let mut event = json!({ "e": "eventStreamTerminated", "E": now_us / 1000 });
                if self.me.microseconds {
                    event = event_in_microseconds(&event, now_us);
                }
                json!({ "subscriptionId": subscription.id, "event": event })
            })
            .collect()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        for subscription in &self.subscriptions {
            self.hub
                .unsubscribe(self.connection_id, &subscription.stream);
        }
    }
}

/// `subscriptionId`: an integer (or its digits as a string).
fn subscription_id(text: &str) -> Result<u64, BinanceError> {
    text.parse()
        .map_err(|_| BinanceError::mandatory("subscriptionId"))
}
