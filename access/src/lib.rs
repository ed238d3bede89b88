//! weiport's access control, shared by the query API and the exchange: API
//! keys, request signatures, permissions, IP allow-lists and one rate limiter.

#![warn(unreachable_pub)]

pub mod admin;
pub mod auth;
mod clock;
pub mod cluster;
mod error;
mod follow;
pub mod guard;
pub mod keys;
pub mod keystore;
pub mod limits;
pub mod params;
pub mod sealing;
pub mod signature;
pub mod telemetry;
#[cfg(test)]
mod timing;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::http::HeaderMap;

pub use auth::{Proof, Security};
pub use error::AccessError;
pub use guard::{Caller, Endpoint, Face, Guarded, SocketCall, Weight, guard};
pub use keys::{IpRule, KeyKind, Permission, Permissions};
pub use keystore::{ApiKey, CreatedKey, KeyInfo, KeyStore, KeyStoreError, NewKey};
pub use limits::{Limiter, LimitsConfig, Usage};
pub use sealing::{MasterKey, SealingError};
pub use signature::{SignatureError, SignedPayload, sign_hmac_sha256};

/// `Content-Type: application/json`, ready made: a header value parsed from
/// text on every answer would be an allocation each time.
pub const JSON: axum::http::HeaderValue = axum::http::HeaderValue::from_static("application/json");

/// Keys, limiter and client-address rules, shared by every face.
pub struct Access {
    /// The key store.
    pub keys: KeyStore,
    /// The one rate limiter.
    pub limiter: Limiter,
    trusted_proxies: Vec<IpRule>,
    max_body_bytes: usize,
    cluster: Option<Arc<cluster::Redis>>,
}

impl Access {
    /// Combines a key store and a limiter. `X-Forwarded-For` is believed only
    /// from `trusted_proxies`.
    pub fn new(
        keys: KeyStore,
        limiter: Limiter,
        trusted_proxies: Vec<IpRule>,
        max_body_bytes: usize,
    ) -> Self {
        Self {
            keys,
            limiter,
            trusted_proxies,
            max_body_bytes,
            cluster: None,
        }
    }

    /// Shares keys, accounts, budgets and bans with every process using
    /// `redis`; start following the others with [`Access::follow_cluster`].
    pub fn in_cluster(mut self, redis: Arc<cluster::Redis>) -> Self {
        self.keys.share(redis.clone());
        self.limiter.share(redis.clone());
        self.cluster = Some(redis);
        self
    }

    /// Follows the other processes of the cluster (if in one) until
    /// `self` is dropped: their changes to keys and accounts, their bans.
    pub fn follow_cluster(self: &Arc<Self>) {
        follow::spawn(self);
    }

    /// The cluster's Redis, when in one.
    pub fn cluster(&self) -> Option<&Arc<cluster::Redis>> {
        self.cluster.as_ref()
    }

    /// The client's address: the socket peer, or, behind a trusted proxy, the
    /// right-most `X-Forwarded-For` entry that is not itself a trusted proxy.
    pub fn client_ip(&self, peer: Option<IpAddr>, headers: &HeaderMap) -> IpAddr {
        client_ip(&self.trusted_proxies, peer, headers)
    }

    /// Leaves the cluster at a graceful stop: the unspent rest of every
    /// budget slice this process leased goes back to its clients, and the
    /// others stop counting this process among the live ones.
    pub async fn leave_cluster(&self) {
        let Some(budgets) = self.limiter.budgets() else {
            return;
        };
        match budgets.leave(keystore::now_ms()).await {
            Ok(given_back) => tracing::info!(
                given_back,
                "left the cluster: unspent budget slices given back"
            ),
            Err(error) => {
                tracing::warn!(%error, "could not give the unspent budget slices back; the others reclaim them when this process's heartbeat lapses")
            }
        }
    }

    /// Prunes idle limiter state every `every` until the runtime stops.
    pub fn spawn_housekeeping(self: &Arc<Self>, every: Duration) {
        let access = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tick.tick().await;
                let Some(access) = access.upgrade() else {
                    break;
                };
                access.limiter.housekeeping(keystore::now_ms());
            }
        });
    }
}

/// See [`Access::client_ip`].
fn client_ip(trusted_proxies: &[IpRule], peer: Option<IpAddr>, headers: &HeaderMap) -> IpAddr {
    let peer = peer.unwrap_or(IpAddr::from([0, 0, 0, 0]));
    let trusted = |ip: IpAddr| trusted_proxies.iter().any(|rule| rule.contains(ip));
    if !trusted(peer) {
        return peer;
    }
    let forwarded: Vec<IpAddr> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|part| part.trim().parse().ok())
        .collect();
    forwarded
        .into_iter()
        .rev()
        .find(|ip| !trusted(*ip))
        .unwrap_or(peer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwarded_for_is_believed_only_from_trusted_proxies() {
        let proxies: Vec<IpRule> = vec!["10.0.0.0/8".parse().unwrap()];
        let mut headers = HeaderMap::new();
        headers.insert(
            "x-forwarded-for",
            "203.0.113.9, 198.51.100.7, 10.0.0.3".parse().unwrap(),
        );
        let proxy = IpAddr::from([10, 0, 0, 2]);
        let stranger = IpAddr::from([192, 0, 2, 1]);
        // The right-most address not itself a trusted proxy is the client.
        assert_eq!(
            client_ip(&proxies, Some(proxy), &headers),
            IpAddr::from([198, 51, 100, 7])
        );
        // Anyone else's header is ignored: it could say anything.
        assert_eq!(client_ip(&proxies, Some(stranger), &headers), stranger);
        assert_eq!(client_ip(&[], Some(proxy), &headers), proxy);
        assert_eq!(client_ip(&proxies, Some(proxy), &HeaderMap::new()), proxy);
    }
}
