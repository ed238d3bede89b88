//! A trickle of transfers on a dev chain, so the indexer has something to
//! follow: the node's unlocked accounts pay each other, pay a few addresses
//! that never send anything, and pay them through a small contract that
//! forwards the value it receives (an internal transfer, visible only in
//! traces).

use std::time::Duration;

use alloy_primitives::{Address, B256, U256};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use tokio::sync::watch;
use weiport_indexer::{NodeClient, NodeError};

/// Creation code of the forwarder. Its runtime sends `msg.value` to the
/// address in the first calldata word and reverts if that call fails:
/// `CALL(gas, calldataload(0), callvalue, 0, 0, 0, 0)`, then `REVERT` on 0.
const FORWARDER_INIT: &str =
    "0x6019600c60003960196000f36000600060006000346000355af115601357005b60006000fd";

/// Addresses that only ever receive: `sandbox` then their number.
pub fn fresh_addresses(count: u8) -> Vec<Address> {
    (1..=count)
        .map(|n| {
            let mut bytes = [0u8; 20];
            bytes[..7].copy_from_slice(b"sandbox");
            bytes[19] = n;
            Address::from(bytes)
        })
        .collect()
}

/// Why the traffic could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum TrafficError {
    /// The node failed a call.
    #[error(transparent)]
    Node(#[from] NodeError),
    /// The forwarder's creation was not mined in time or failed.
    #[error("the forwarder contract was not deployed: {0}")]
    Deploy(String),
}

/// The accounts and contract the trickle uses.
#[derive(Debug, Clone)]
pub struct ChainTraffic {
    node: NodeClient,
    senders: Vec<Address>,
    recipients: Vec<Address>,
    forwarder: Address,
}

impl ChainTraffic {
    /// Deploys the forwarder from the node's first unlocked account; none
    /// when the node has no unlocked accounts (a node that is not a dev node).
    /// Accounts in `reserved` never send (another signer owns their nonces).
    pub async fn prepare(
        node: NodeClient,
        reserved: &[Address],
    ) -> Result<Option<Self>, TrafficError> {
        let mut senders = node.accounts().await?;
        senders.retain(|account| !reserved.contains(account));
        let Some(&deployer) = senders.first() else {
            return Ok(None);
        };
        let hash: B256 = node
            .call(
                "eth_sendTransaction",
                json!([{ "from": deployer, "data": FORWARDER_INIT }]),
            )
            .await?;
        let receipt = mined(&node, hash).await?;
        let forwarder = receipt
            .get("contractAddress")
            .and_then(|a| serde_json::from_value::<Address>(a.clone()).ok())
            .filter(|_| receipt.get("status").and_then(Value::as_str) == Some("0x1"))
            .ok_or_else(|| TrafficError::Deploy(receipt.to_string()))?;
        Ok(Some(Self {
            node,
            senders,
            recipients: fresh_addresses(3),
            forwarder,
        }))
    }

    /// The forwarder contract's address.
    pub fn forwarder(&self) -> Address {
        self.forwarder
    }

    /// The addresses that only receive.
    pub fn recipients(&self) -> &[Address] {
        &self.recipients
    }

    /// Sends the `round`th transfer of the cycle: account to account,
    /// account to a fresh address, account through the forwarder.
    pub async fn send(&self, round: u64, rng: &mut impl Rng) -> Result<B256, NodeError> {
        let from = self.senders[rng.random_range(0..self.senders.len())];
        let fresh = self.recipients[rng.random_range(0..self.recipients.len())];
        let wei = U256::from(rng.random_range(1_000_000_000_000_000u64..=500_000_000_000_000_000));
        let transaction = match round % 3 {
            0 => {
                let to = self.senders[rng.random_range(0..self.senders.len())];
                json!({ "from": from, "to": to, "value": wei })
            }
            1 => json!({ "from": from, "to": fresh, "value": wei }),
            _ => {
                let word = B256::left_padding_from(fresh.as_slice());
                json!({ "from": from, "to": self.forwarder, "value": wei, "data": word })
            }
        };
        self.node
            .call("eth_sendTransaction", json!([transaction]))
            .await
    }
}

/// Waits for the receipt of `hash` (a dev node mines at once, or on its
/// block time).
async fn mined(node: &NodeClient, hash: B256) -> Result<Value, TrafficError> {
    for _ in 0..300 {
        let receipt: Value = node
            .call("eth_getTransactionReceipt", json!([hash]))
            .await?;
        if !receipt.is_null() {
            return Ok(receipt);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(TrafficError::Deploy(format!("no receipt for {hash}")))
}

/// Sends one transfer every `interval` until `stop` turns true; a failed
/// send is logged and the trickle goes on.
pub async fn run(traffic: ChainTraffic, interval: Duration, mut stop: watch::Receiver<bool>) {
    let mut rng = StdRng::from_os_rng();
    let mut ticks = tokio::time::interval(interval.max(Duration::from_millis(10)));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    for round in 0u64.. {
        tokio::select! {
            _ = stop.changed() => return,
            _ = ticks.tick() => {}
        }
        if *stop.borrow() {
            return;
        }
        if let Err(error) = traffic.send(round, &mut rng).await {
            tracing::warn!(%error, "sandbox chain transfer failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwarder_code_returns_its_runtime() {
        let code = FORWARDER_INIT.trim_start_matches("0x");
        let bytes: Vec<u8> = (0..code.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&code[i..i + 2], 16).unwrap())
            .collect();
        // PUSH1 len, PUSH1 offset: the runtime is the rest of the code.
        let (len, offset) = (bytes[1] as usize, bytes[3] as usize);
        assert_eq!(offset + len, bytes.len());
        let runtime = &bytes[offset..];
        // The JUMPI target is the JUMPDEST before the revert.
        let target = runtime[16] as usize;
        assert_eq!(runtime[target], 0x5b);
        assert_eq!(&runtime[runtime.len() - 1..], &[0xfd]);
    }

    #[test]
    fn fresh_addresses_are_distinct_and_spell_sandbox() {
        let addresses = fresh_addresses(3);
        assert_eq!(addresses.len(), 3);
        assert!(addresses[0] != addresses[1] && addresses[1] != addresses[2]);
        assert!(
            addresses[2]
                .to_string()
                .to_lowercase()
                .starts_with("0x73616e64626f78")
        );
    }
}
