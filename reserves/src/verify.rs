//! The verifier: a published proof checked against nodes of the client's
//! choosing, trusting nothing of the exchange but the document (the same
//! checks as `tools/verify_reserves.py`; `weiport verify-reserves`).

use std::collections::BTreeMap;

use alloy_primitives::{Address, U256};
use weiport_indexer::{NodeClient, NodeOptions, StateAt};

use crate::check::{check_proof, check_signatures};
use crate::snapshot::ProofOf;

/// Why a proof could not be checked at all (what fails a check is in the
/// [`Verdict`]).
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// The document is not a proof of reserves.
    #[error("not a proof of reserves: {0}")]
    Document(#[from] serde_json::Error),
    /// A node could not be asked.
    #[error("node {url}: {error}")]
    Node {
        /// The node.
        url: String,
        /// What failed.
        error: String,
    },
}

/// What the check found: lines to show, and every failure.
#[derive(Debug, Default)]
pub struct Verdict {
    /// What holds, and the ratio per asset.
    pub lines: Vec<String>,
    /// What failed; empty: the proof holds and reserves cover liabilities.
    pub failures: Vec<String>,
}

/// Which node answers for which chain: `URL` for every chain, or
/// `CHAIN_ID=URL`.
fn node_for(nodes: &[String], chain_id: u64) -> Option<&str> {
    let mut any = None;
    for given in nodes {
        match given.split_once('=') {
            Some((id, url)) if !id.contains(':') => {
                if id.trim().parse() == Ok(chain_id) {
                    return Some(url);
                }
            }
            _ => any = Some(given.as_str()),
        }
    }
    any
}

/// Checks the proof `text` (what `GET /sapi/v1/reserves/proof` answered)
/// against `nodes` (`URL` for every chain, or `CHAIN_ID=URL`).
pub async fn verify(text: &str, nodes: &[String]) -> Result<Verdict, VerifyError> {
    let document: ProofOf = serde_json::from_str(text)?;
    let snapshot = &document.snapshot;
    let mut verdict = Verdict::default();
    let (lines, failures) = (&mut verdict.lines, &mut verdict.failures);
    match check_proof(&document) {
        Ok(()) => lines.push(format!(
            "leaf of account {} owed {:?} {:?}: in root {}",
            document.proof.account, document.proof.owed, snapshot.assets, snapshot.root
        )),
        Err(error) => failures.push(format!("the proof: {error}")),
    }
    failures.extend(check_signatures(&document));

    let mut reserves: BTreeMap<&str, U256> = BTreeMap::new();
    for chain in &snapshot.chains {
        let Some(url) = node_for(nodes, chain.chain_id) else {
            failures.push(format!("no --node given for chain {}", chain.chain_id));
            continue;
        };
        let failed = |error: weiport_indexer::NodeError| VerifyError::Node {
            url: url.to_owned(),
            error: error.to_string(),
        };
        let node = NodeClient::new(url, NodeOptions::default()).map_err(failed)?;
        let chain_id = node.chain_id().await.map_err(failed)?;
        if chain_id != chain.chain_id {
            failures.push(format!("{url} is chain {chain_id}, not {}", chain.chain_id));
            continue;
        }
        let block = node.block(chain.block).await.map_err(failed)?;
        let named = chain.block_hash.to_lowercase();
        let Some(block) = block.filter(|b| format!("{:#x}", b.hash) == named) else {
            failures.push(format!("block {} is not {named} on {url}", chain.block));
            continue;
        };
        for holding in &chain.addresses {
            let Ok(address) = holding.address.parse::<Address>() else {
                failures.push(format!("{}: not an address", holding.address));
                continue;
            };
            let balance = node
                .balance(address, StateAt::Hash(block.hash))
                .await
                .map_err(failed)?;
            if balance != U256::from(holding.balance_wei) {
                failures.push(format!(
                    "{}: the node says {balance} wei at block {}, the exchange {}",
                    holding.address, chain.block, holding.balance_wei
                ));
            }
            *reserves.entry(chain.coin.as_str()).or_default() += balance;
        }
    }

    let wei_per_unit = U256::from(crate::WEI_PER_UNIT);
    for (asset, total) in snapshot.assets.iter().zip(&snapshot.totals) {
        let Ok(owed) = total.parse::<u128>() else {
            failures.push(format!("{asset}: the total {total:?} is not an amount"));
            continue;
        };
        let Some(held) = reserves.get(asset.as_str()) else {
            lines.push(format!(
                "{asset}: liabilities {owed} units; no reserves on a chain listed"
            ));
            continue;
        };
        if owed == 0 {
            lines.push(format!("{asset}: reserves {held} wei; nothing owed"));
            continue;
        }
        let owed_wei = U256::from(owed) * wei_per_unit;
        let millionths = *held * U256::from(1_000_000u64) / owed_wei;
        let million = U256::from(1_000_000u64);
        lines.push(format!(
            "{asset}: reserves {held} wei / liabilities {owed_wei} wei = {}.{:06}",
            millionths / million,
            millionths % million
        ));
        if *held < owed_wei {
            failures.push(format!("{asset}: reserves do not cover liabilities"));
        }
    }
    Ok(verdict)
}
