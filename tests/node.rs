//! The project's node client against a real anvil node.

mod common;

use alloy_primitives::U256;
use weiport_indexer::{NodeClient, NodeOptions, StateAt};

#[tokio::test]
async fn node_client_talks_json_rpc_to_a_real_anvil() {
    let anvil = common::Anvil::start(&["--accounts", "4", "--balance", "123"]);
    let client = NodeClient::new(&anvil.url, NodeOptions::default()).unwrap();

    assert_eq!(client.chain_id().await.unwrap(), 31337);
    assert_eq!(client.block_number().await.unwrap(), 0);

    let accounts = client.accounts().await.unwrap();
    assert_eq!(accounts.len(), 4);
    let balances = client.balances(&accounts, StateAt::Latest).await.unwrap();
    let expected = U256::from(123u64) * U256::from(10u64).pow(U256::from(18u64));
    assert_eq!(balances, vec![expected; 4]);

    let genesis = client.block(0).await.unwrap().expect("genesis exists");
    assert_eq!(genesis.number.to::<u64>(), 0);
    assert_eq!(
        client
            .balance(accounts[0], StateAt::Hash(genesis.hash))
            .await
            .unwrap(),
        expected,
        "EIP-1898 block-hash state query"
    );
    assert!(
        client.block(1).await.unwrap().is_none(),
        "no block above the head"
    );
}
