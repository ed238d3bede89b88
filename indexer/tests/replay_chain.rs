//! The indexer over a mainnet-shaped chain served by the replay node
//! (`examples/mainnet_scale`) on a real socket: every account's ether, every
//! holder's token balances and the busy account's histories equal the
//! recording's. Also the JSON-RPC batch limit: the 60,000 genesis accounts
//! are checked in batches a geth-like node accepts.

#[allow(dead_code)]
#[path = "../examples/mainnet_scale/chain.rs"]
mod chain;
#[allow(dead_code)]
#[path = "../examples/mainnet_scale/replay.rs"]
mod replay;

use std::sync::Arc;

use alloy_primitives::{Address, U256};
use chain::{BUSY, Chain, Kind, address};
use weiport_indexer::{Indexer, IndexerConfig, NodeClient, NodeOptions};
use weiport_storage::{HistoryPage, Store, StoreOptions, TransferKind};

const TRANSACTIONS: u64 = 3_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mainnet_shaped_chain_is_indexed_exactly() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let app = replay::router(Arc::new(replay::Replay::new(Chain::generate(TRANSACTIONS))));
    tokio::spawn(async move { axum::serve(listener, app).await });
    // The same recording (the generator is deterministic), to check against.
    let chain = Chain::generate(TRANSACTIONS);

    let dir = tempfile::tempdir().unwrap();
    let genesis = dir.path().join("genesis.json");
    let alloc: serde_json::Map<String, serde_json::Value> = (0..chain::FUNDED)
        .map(|id| {
            let balance = format!("{:#x}", chain::GENESIS_WEI);
            (
                Address::from(address(id)).to_string(),
                serde_json::json!({ "balance": balance }),
            )
        })
        .collect();
    std::fs::write(&genesis, serde_json::json!({ "alloc": alloc }).to_string()).unwrap();
    let store = Store::open(dir.path().join("db"), &StoreOptions::default()).unwrap();
    let config = IndexerConfig {
        genesis_file: Some(genesis),
        until: Some(chain.head()),
        ..IndexerConfig::default()
    };
    let node = NodeClient::new(&url, NodeOptions::default()).unwrap();
    let (_stop, stop) = tokio::sync::watch::channel(false);
    Indexer::new(node, store.clone(), config)
        .run(stop)
        .await
        .unwrap();
    assert_eq!(store.cursor().unwrap().unwrap().number, chain.head());

    for id in 0..chain.accounts {
        let indexed = store
            .balance(&address(id).into())
            .unwrap()
            .map_or(U256::ZERO, |b| b.wei);
        assert_eq!(
            indexed,
            U256::from(chain.final_wei[id as usize]),
            "account {id}"
        );
    }
    assert!(!chain.final_tokens.is_empty());
    for ((token, holder), balance) in &chain.final_tokens {
        let indexed = store
            .token_balance(&address(*holder).into(), &address(*token).into(), None)
            .unwrap()
            .expect("a holder a transfer touched has a balance")
            .balance;
        assert_eq!(
            indexed,
            U256::from(*balance),
            "holder {holder} of token {token}"
        );
    }

    let txs = || chain.blocks.iter().flat_map(|b| &b.txs);
    let named = txs().filter(|t| t.from == BUSY || t.to == BUSY).count();
    let token_transfers = txs()
        .map(|t| match t.kind {
            // One row to an address, even when it pays itself.
            Kind::Token { to, .. } => usize::from(t.from == BUSY || to == BUSY),
            Kind::Swap { .. } => 2 * usize::from(t.from == BUSY),
            _ => 0,
        })
        .sum::<usize>();
    let forwarded = txs()
        .filter(|t| matches!(t.kind, Kind::Forward { to } if to == BUSY))
        .count();
    let everything = HistoryPage {
        from_block: 0,
        to_block: u64::MAX,
        descending: false,
        skip: 0,
        take: usize::MAX,
    };
    let busy = Address::from(address(BUSY));
    assert!(named > 0 && token_transfers > 0 && forwarded > 0);
    assert_eq!(
        store.address_transactions(&busy, everything).unwrap().len(),
        named
    );
    let listed = |kind| {
        store
            .address_transfers(&busy, kind, everything, |_| true)
            .unwrap()
            .len()
    };
    assert_eq!(listed(TransferKind::Token), token_transfers);
    assert_eq!(listed(TransferKind::Internal), forwarded);
}
