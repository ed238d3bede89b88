//! Drives a real anvil node: transfers, contract calls, reverts, mining,
//! reorganisations; and compares the index against the node's balances.

use std::collections::BTreeSet;

use alloy_primitives::{Address, B256, U256};
use serde_json::json;
use weiport_indexer::{NodeClient, NodeOptions, StateAt};
use weiport_storage::Store;

/// Creation code of a contract that forwards half of the value it receives to
/// the address in its calldata (an internal transfer), and reverts when called
/// without calldata. Hand-assembled:
/// runtime = CALLDATASIZE ISZERO PUSH1 0x17 JUMPI
///           PUSH1 0 PUSH1 0 PUSH1 0 PUSH1 0 PUSH1 2 CALLVALUE DIV
///           PUSH1 0 CALLDATALOAD GAS CALL STOP
///           JUMPDEST PUSH1 0 PUSH1 0 REVERT
/// init    = PUSH1 len PUSH1 12 PUSH1 0 CODECOPY PUSH1 len PUSH1 0 RETURN
pub const FORWARDER_INITCODE: &str =
    "0x601d600c600039601d6000f336156017576000600060006000600234046000355af1005b60006000fd";

/// One ether in wei.
pub fn ether(n: u64) -> U256 {
    U256::from(n) * U256::from(10u64).pow(U256::from(18))
}

/// A test's view of the node.
pub struct Chain {
    pub node: NodeClient,
    /// Transactions sent and not yet seen mined, for [`Chain::settled_head`].
    unsettled: std::sync::Mutex<Vec<B256>>,
}

impl Chain {
    pub fn new(url: &str) -> Self {
        Self {
            node: NodeClient::new(url, NodeOptions::default()).unwrap(),
            unsettled: std::sync::Mutex::default(),
        }
    }

    pub async fn rpc(&self, method: &'static str, params: serde_json::Value) -> serde_json::Value {
        self.node
            .call::<_, serde_json::Value>(method, params)
            .await
            .unwrap_or_else(|e| panic!("{method}: {e}"))
    }

    pub async fn accounts(&self) -> Vec<Address> {
        self.node.accounts().await.unwrap()
    }

    /// Sends a transaction from any address (auto-impersonation must be on
    /// for addresses that are not dev accounts); a fixed gas limit skips
    /// estimation so that transactions which will revert are mined too.
    pub async fn send(
        &self,
        from: Address,
        to: Option<Address>,
        value: U256,
        data: &str,
        gas: u64,
    ) -> B256 {
        let mut tx =
            json!({ "from": from, "value": value, "gas": format!("{gas:#x}"), "input": data });
        if let Some(to) = to {
            tx["to"] = json!(to);
        }
        let hash = self
            .node
            .call::<_, serde_json::Value>("eth_sendTransaction", json!([tx.clone()]))
            .await;
        let hash = hash.unwrap_or_else(|e| panic!("eth_sendTransaction {tx}: {e}"));
        let hash = serde_json::from_value(hash).unwrap();
        self.unsettled.lock().unwrap().push(hash);
        hash
    }

    pub async fn transfer(&self, from: Address, to: Address, value: U256) -> B256 {
        self.send(from, Some(to), value, "0x", 21_000).await
    }

    /// Calls the forwarder so that it sends half of `value` to `beneficiary`.
    pub async fn forward(
        &self,
        from: Address,
        forwarder: Address,
        beneficiary: Address,
        value: U256,
    ) -> B256 {
        let data = format!("0x{:0>64}", alloy_primitives::hex::encode(beneficiary));
        self.send(from, Some(forwarder), value, &data, 100_000)
            .await
    }

    pub async fn set_automine(&self, on: bool) {
        self.rpc("evm_setAutomine", json!([on])).await;
    }

    pub async fn auto_impersonate(&self) {
        self.rpc("anvil_autoImpersonateAccount", json!([true]))
            .await;
    }

    pub async fn mine(&self) {
        self.rpc("evm_mine", json!([])).await;
    }

    pub async fn mine_many(&self, blocks: u64) {
        self.rpc("anvil_mine", json!([format!("{blocks:#x}")]))
            .await;
    }

    pub async fn head(&self) -> u64 {
        self.node.block_number().await.unwrap()
    }

    /// The head once every sent transaction is mined: automine works in the
    /// background, so the head read right after sending may still move.
    /// Nodes without `txpool_status` (Hardhat) mine before answering. A
    /// transaction can leave the pool before its block is the head, so the
    /// receipt of every transaction this chain sent (and the node still
    /// knows) is awaited first.
    pub async fn settled_head(&self) -> u64 {
        let sent = std::mem::take(&mut *self.unsettled.lock().unwrap());
        for tx in sent {
            // One a reorganisation dropped is unknown now: nothing to wait for.
            let known = !self
                .rpc("eth_getTransactionByHash", json!([tx]))
                .await
                .is_null();
            if known {
                self.receipt(tx).await;
            }
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let Ok(status) = self
                .node
                .call::<_, serde_json::Value>("txpool_status", json!([]))
                .await
            else {
                return self.head().await;
            };
            let waiting = |field: &str| {
                status[field].as_str().map_or(0, |n| {
                    u64::from_str_radix(n.trim_start_matches("0x"), 16).unwrap_or(1)
                })
            };
            if waiting("pending") == 0 && waiting("queued") == 0 {
                return self.head().await;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the pool never emptied: {status}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }

    /// Waits for the transaction's receipt: even with automine the node mines
    /// in the background, so a receipt can lag the transaction hash.
    pub async fn receipt(&self, tx: B256) -> serde_json::Value {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let receipt = self.rpc("eth_getTransactionReceipt", json!([tx])).await;
            if !receipt.is_null() {
                return receipt;
            }
            if std::time::Instant::now() > deadline {
                let pending = self.rpc("eth_getTransactionByHash", json!([tx])).await;
                let pool = self.rpc("txpool_inspect", json!([])).await;
                panic!("transaction {tx} was not mined: {pending}; pool {pool}");
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }

    pub async fn receipt_status(&self, tx: B256) -> (bool, Option<Address>) {
        let receipt = self.receipt(tx).await;
        let ok = receipt["status"] == "0x1";
        let created = receipt["contractAddress"]
            .as_str()
            .map(|a| a.parse().unwrap());
        (ok, created)
    }

    pub async fn deploy_forwarder(&self, from: Address, endowment: U256) -> Address {
        let tx = self
            .send(from, None, endowment, FORWARDER_INITCODE, 200_000)
            .await;
        let (ok, created) = self.receipt_status(tx).await;
        assert!(
            ok,
            "forwarder deployment failed: {}",
            self.receipt(tx).await
        );
        created.unwrap()
    }

    /// Every address the node's blocks `1..=head` mention: senders,
    /// recipients, created contracts, coinbases. Internal-transfer targets
    /// must be added by the caller (that is the point of the test).
    pub async fn mentioned_addresses(&self, head: u64) -> BTreeSet<Address> {
        let mut seen = BTreeSet::new();
        for number in 0..=head {
            let block = self
                .rpc(
                    "eth_getBlockByNumber",
                    json!([format!("{number:#x}"), true]),
                )
                .await;
            seen.insert(block["miner"].as_str().unwrap().parse().unwrap());
            for tx in block["transactions"].as_array().unwrap() {
                seen.insert(tx["from"].as_str().unwrap().parse().unwrap());
                if let Some(to) = tx["to"].as_str() {
                    seen.insert(to.parse().unwrap());
                }
            }
        }
        seen
    }
}

/// Asserts that the index equals the node for every address at every given
/// block (an address the index never saw must hold 0: it indexes from genesis).
pub async fn assert_index_matches(
    store: &Store,
    chain: &Chain,
    addresses: &BTreeSet<Address>,
    blocks: &[u64],
) {
    let addresses: Vec<Address> = addresses.iter().copied().collect();
    let mut checked = 0;
    for &block in blocks {
        // By number: every node takes it (Ganache refuses block-hash
        // objects), and nothing is mined while the test compares.
        let node = chain
            .node
            .balances(&addresses, StateAt::Number(block))
            .await
            .unwrap();
        for (address, expected) in addresses.iter().zip(node) {
            let indexed = store
                .balance_at(address, block)
                .unwrap()
                .unwrap_or(U256::ZERO);
            if indexed != expected {
                let rows: Vec<_> = store
                    .history()
                    .map(Result::unwrap)
                    .filter(|(a, _, _)| a == address)
                    .map(|(_, b, w)| (b, w))
                    .collect();
                panic!(
                    "balance of {address} after block {block}: index {indexed}, node {expected}; history rows {rows:?}; cursor {:?}",
                    store.cursor().unwrap()
                );
            }
            checked += 1;
        }
    }
    let head = *blocks.iter().max().unwrap();
    for address in &addresses {
        let latest = store
            .balance(address)
            .unwrap()
            .map(|b| b.wei)
            .unwrap_or(U256::ZERO);
        let at_head = store
            .balance_at(address, head)
            .unwrap()
            .unwrap_or(U256::ZERO);
        assert_eq!(
            latest, at_head,
            "latest balance of {address} differs from its history at the head"
        );
    }
    assert!(checked > 0);
}

/// Waits until the index's cursor is the node's head block (same hash).
pub async fn wait_until_indexed(store: &Store, chain: &Chain, timeout: std::time::Duration) {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let head = chain
            .node
            .block(chain.settled_head().await)
            .await
            .unwrap()
            .unwrap();
        if let Some(cursor) = store.cursor().unwrap()
            && cursor.number == head.number.to::<u64>()
            && cursor.hash == head.hash
        {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "index did not reach head {} in time: cursor {:?}",
            head.number,
            store.cursor().unwrap()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
