//! A follower's link to the primary: clients' commands forwarded to the
//! lease holder's address.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::ClusterStatus;

/// The command posted to the address the lease's holder published, with
/// the cluster's token.
pub struct ForwardToPrimary {
    client: reqwest::Client,
    status: Arc<ClusterStatus>,
    token: String,
    /// The primary's address as last read from the lease, and when: read
    /// again after a lease's third, or at once after a failed forward, so
    /// an order costs no read of the lease.
    primary: Mutex<Option<(String, Instant)>>,
}

impl ForwardToPrimary {
    /// Forwards to whoever holds `status`'s lease.
    pub fn new(status: Arc<ClusterStatus>, token: String) -> Self {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .expect("an HTTP client");
        Self {
            client,
            status,
            token,
            primary: Mutex::new(None),
        }
    }

    async fn primary(&self) -> Result<String, String> {
        let fresh = self.status.lease.ttl() / 3;
        let known = self
            .primary
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some((address, read)) = known
            && read.elapsed() < fresh
        {
            return Ok(address);
        }
        let holder = self
            .status
            .lease
            .current()
            .await
            .map_err(|e| e.to_string())?
            .ok_or("no process holds the primary's lease")?;
        *self.primary.lock().unwrap_or_else(PoisonError::into_inner) =
            Some((holder.address.clone(), Instant::now()));
        Ok(holder.address)
    }

    fn forget_primary(&self) {
        *self.primary.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

impl ForwardToPrimary {
    /// Posts `command` (in the command log's layout) to the primary; its
    /// answer as `R`, or why it could not be had (the primary's address is
    /// then read again from the lease next time).
    pub async fn forward<R: serde::de::DeserializeOwned>(
        &self,
        command: Vec<u8>,
    ) -> Result<R, String> {
        let primary = self.primary().await?;
        let sent = self
            .client
            .post(format!("{primary}/internal/v1/commands"))
            .bearer_auth(&self.token)
            .body(command)
            .send()
            .await;
        let response = match sent {
            Ok(response) if response.status().is_success() => response,
            Ok(response) => {
                self.forget_primary();
                return Err(format!("the primary answered {}", response.status()));
            }
            Err(error) => {
                self.forget_primary();
                return Err(error.to_string());
            }
        };
        response.json().await.map_err(|e| e.to_string())
    }
}
