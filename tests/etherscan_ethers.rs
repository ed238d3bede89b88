//! The Etherscan face through ethers v6's `EtherscanProvider`, a dApp
//! backend's common client, with only its base URL changed: revert reasons
//! decoded from the node's error data (a reason string, a panic code, a
//! custom error), a token transfer estimated and called from its holder,
//! a storage slot asked in decimal, and sixteen calls at once on a key
//! allowed five a second, each retried until answered.

mod common;

use alloy_primitives::U256;
use common::chain::Chain;
use common::tokens::{call, deploy, reverts_code, token_code, transfer_call};
use common::{Anvil, Weiport, history_env, json_rpc, repo_path};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ethers_etherscan_provider_reads_reverts_estimates_storage_and_waits_out_throttles() {
    // ethers' EtherscanProvider serves the networks Etherscan lists: the
    // node is a chain with mainnet's id.
    let anvil = Anvil::start(&["--chain-id", "1"]);
    let chain = Chain::new(&anvil.url);
    let dev = chain.accounts().await;
    let (holder, recipient) = (dev[3], dev[4]);
    let token = deploy(&chain, holder, &token_code().0).await;
    let reverts = deploy(&chain, dev[2], reverts_code()).await;

    let dir = tempfile::tempdir().unwrap();
    // Default-tier keys: five calls a second, as Etherscan's free tier.
    let env = history_env(&anvil.url, &[("WEIPORT_ACCESS__QUERY_TIERS__DEFAULT", "5")]);
    let weiport = Weiport::serve(dir.path(), &env);
    let key = weiport.create_key(json!({})).await;
    let input = json!({
        "base": format!("{}/v2/api", weiport.url),
        "apikey": key["id"],
        "reverts": format!("{reverts:#x}"),
        "token": format!("{token:#x}"),
        "holder": format!("{holder:#x}"),
        "recipient": format!("{recipient:#x}"),
    });
    let output = tokio::process::Command::new("node")
        .arg(repo_path("tests/clients/etherscan_ethers.js"))
        .arg(repo_path("tools"))
        .arg(input.to_string())
        .output()
        .await
        .expect("node (scripts/setup.sh installs Node.js and ethers)");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let seen: Value = serde_json::from_slice(&output.stdout).unwrap();

    // Error(string), Panic(uint256) and a custom error, decoded by ethers.
    assert_eq!(seen["reason"]["code"], "CALL_EXCEPTION", "{seen}");
    assert_eq!(seen["reason"]["reason"], "allowance", "{seen}");
    assert_eq!(seen["allowance"]["reason"], "allowance", "{seen}");
    assert_eq!(seen["panic"]["revert"]["name"], "Panic", "{seen}");
    assert_eq!(seen["panic"]["revert"]["args"], json!(["50"]), "{seen}");
    assert_eq!(seen["custom"]["revert"]["name"], "Shortfall", "{seen}");
    assert_eq!(
        seen["custom"]["revert"]["args"],
        json!(["5", "3"]),
        "{seen}"
    );

    // The estimate and the call were the holder's: the node's own figures.
    let transfer = transfer_call(recipient, U256::from(1000));
    let node_estimate = chain
        .rpc(
            "eth_estimateGas",
            json!([{ "from": format!("{holder:#x}"), "to": format!("{token:#x}"), "data": transfer }]),
        )
        .await;
    let node_estimate =
        u64::from_str_radix(node_estimate.as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
    assert_eq!(seen["estimate"], node_estimate.to_string(), "{seen}");
    assert_eq!(seen["called"], true, "{seen}");

    // Slot 0, asked in decimal.
    let slot = chain
        .rpc(
            "eth_getStorageAt",
            json!([format!("{token:#x}"), "0x0", "latest"]),
        )
        .await;
    assert_eq!(seen["storage"], slot, "{seen}");

    // Throttled, and every call answered all the same.
    assert_eq!(seen["throttled"]["answered"], 16, "{seen}");
    println!(
        "ethers: 16 calls on a 5-a-second key answered in {} s",
        seen["throttled"]["seconds"]
    );

    // The answer's own shape, raw: every field of the node's error kept.
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
    let data = call("withReason()", &[]);
    let answer = weiport
        .etherscan(&format!(
            "module=proxy&action=eth_call&to={reverts:#x}&data={data}&apikey={}",
            key["id"].as_str().unwrap()
        ))
        .await;
    let call = json!([{ "to": format!("{reverts:#x}"), "data": data }, "latest"]);
    let node = json_rpc(&anvil.url, "eth_call", call).await;
    let node = &node["error"];
    assert_eq!(&answer["error"], node, "{answer}");
    assert!(
        node["data"]
            .as_str()
            .is_some_and(|d| d.starts_with("0x08c379a0")),
        "{node}"
    );
}
