//! The wallet as a client sees it: ccxt's wallet methods and the account's
//! ETH, shared by the wallet and chain tests.

use serde_json::Value;

use crate::common::{Key, Weiport, run_client};

/// ccxt's answer to `action` as `key`.
pub async fn ccxt(weiport: &Weiport, key: &Key, action: &str, args: &[&str]) -> Value {
    let mut all = vec![
        action.to_owned(),
        weiport.url.clone(),
        key.id.clone(),
        key.secret.clone(),
    ];
    all.extend(args.iter().map(|a| a.to_string()));
    let out = run_client("wallet.py", all).await;
    serde_json::from_str(out.trim()).unwrap_or_else(|_| panic!("not JSON: {out}"))
}

/// The account's free ETH, as `/api/v3/account` shows it.
pub async fn eth_free(weiport: &Weiport, key: &Key) -> String {
    let (status, account) = weiport
        .signed(
            reqwest::Method::GET,
            "/api/v3/account",
            key,
            "omitZeroBalances=false",
        )
        .await;
    assert_eq!(status, 200, "{account}");
    account["balances"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["asset"] == "ETH")
        .map_or("0.00000000".into(), |b| {
            b["free"].as_str().unwrap().to_owned()
        })
}
