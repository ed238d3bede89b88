//! What a block adds to address histories besides balances: its
//! transactions, the internal transfers of their call traces, and the ERC-20
//! `Transfer` logs of their receipts with the holders' balances re-read from
//! the token contracts after the block (so fee-on-transfer and rebasing
//! tokens stay exact: the logs are not summed).

use std::collections::BTreeSet;

use alloy_primitives::{Address, B256, Bytes, U64, U256, b256};
use serde::Deserialize;
use weiport_storage::{
    BLOCK_LEVEL, BeaconWithdrawal, Cursor, HistoryIndex, IndexBatch, InternalTransfer, MinedBlock,
    NftStandard, NftTransfer, StorageError, Store, TokenInfo, TokenTransfer, TransactionRow,
    Transfer,
};

use crate::node::{BlockSummary, NodeClient, NodeError};
use crate::plan::NodePlan;
use crate::reads::{Receipt, check_coverage, malformed, read_at_block};

/// `keccak256("Transfer(address,address,uint256)")`: ERC-20's (the amount in
/// the data) and ERC-721's (the token id a fourth topic).
const TRANSFER_TOPIC: B256 =
    b256!("ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef");
/// `keccak256("TransferSingle(address,address,address,uint256,uint256)")`.
const TRANSFER_SINGLE_TOPIC: B256 =
    b256!("c3d58168c5ae7397731d063d5bbf3d657854427343f4c083240f7aacaa2d0f62");
/// `keccak256("TransferBatch(address,address,address,uint256[],uint256[])")`.
const TRANSFER_BATCH_TOPIC: B256 =
    b256!("4a39dc06d4c0dbc64b70af90fd698a233a518aa5d07e595d983b8c0526c8f7fb");
/// `balanceOf(address)`, `name()`, `symbol()`, `decimals()`.
const BALANCE_OF: [u8; 4] = [0x70, 0xa0, 0x82, 0x31];
const NAME: [u8; 4] = [0x06, 0xfd, 0xde, 0x03];
const SYMBOL: [u8; 4] = [0x95, 0xd8, 0x9b, 0x41];
const DECIMALS: [u8; 4] = [0x31, 0x3c, 0xe5, 0x67];

/// Which histories the indexer keeps besides balances.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Histories {
    /// Each address's transactions (`txlist`).
    pub transactions: bool,
    /// Internal transfers from call traces (`txlistinternal`).
    pub internal: bool,
    /// ERC-20 transfers and balances (`tokentx`, `tokenbalance`).
    pub tokens: bool,
}

impl Histories {
    fn any(self) -> bool {
        self.transactions || self.internal || self.tokens
    }
}

/// The writes that record from which block each kept history begins: the
/// index's start for a new index, the block after the cursor when a history
/// was turned on for an existing one. A history turned off loses its mark,
/// so turning it on later never claims the blocks indexed meanwhile. None
/// when every mark is as it should be.
pub(crate) fn history_marks(
    store: &Store,
    cursor: &Cursor,
    histories: Histories,
) -> Result<Option<IndexBatch>, StorageError> {
    let start = store.index_start()?.unwrap_or(0);
    // A new index holds no block past its start yet; the start block's own
    // transactions are not fetched (its state is read whole), so a history
    // begins after it, or at genesis.
    let from = if cursor.number > start {
        cursor.number + 1
    } else if start == 0 {
        0
    } else {
        start + 1
    };
    let mut batch = store.index_batch();
    let mut changed = false;
    for index in HistoryIndex::ALL {
        let kept = match index {
            HistoryIndex::Transactions => histories.transactions,
            HistoryIndex::Internal => histories.internal,
            HistoryIndex::Tokens | HistoryIndex::Nfts => histories.tokens,
            HistoryIndex::Blocks => true,
        };
        match (kept, store.history_indexed_from(index)?) {
            (true, None) => {
                batch.set_history_indexed_from(index, Some(from));
                tracing::info!(?index, from, "history kept from this block");
            }
            (false, Some(_)) => {
                batch.set_history_indexed_from(index, None);
                tracing::info!(?index, "history off: its queries answer nothing");
            }
            _ => continue,
        }
        changed = true;
    }
    Ok(changed.then_some(batch))
}

/// One block's additions to the histories, written with its balances.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BlockHistory {
    /// Its transactions with their outcomes, by position.
    pub transactions: Vec<TransactionRow>,
    /// Transfers by the position of the transaction that carried them.
    pub transfers: Vec<(u32, Vec<Transfer>)>,
    /// `(holder, token, balance)` after the block, for every holder a
    /// transfer touched.
    pub token_balances: Vec<(Address, Address, U256)>,
    /// Descriptions of tokens first seen in this block.
    pub token_infos: Vec<(Address, TokenInfo)>,
    /// Rows of the block itself: its miner's fees, its beacon withdrawals.
    pub block_level: Vec<Transfer>,
    /// `(holder, contract, token id, standard, amount)` after the block,
    /// for every holder an ERC-721 or ERC-1155 transfer touched.
    pub nft_holdings: Vec<(Address, Address, U256, NftStandard, U256)>,
}

impl BlockHistory {
    /// Adds this history of `block` to `batch`.
    pub fn write(&self, batch: &mut IndexBatch, block: u64) {
        for (index, transaction) in self.transactions.iter().enumerate() {
            let index = u32::try_from(index).expect("fewer than 2^32 transactions a block");
            batch.put_transaction(block, index, transaction);
        }
        for (index, transfers) in &self.transfers {
            batch.put_transfers(block, *index, transfers);
        }
        batch.put_transfers(block, BLOCK_LEVEL, &self.block_level);
        for (holder, token, balance) in &self.token_balances {
            batch.put_token_balance(holder, token, block, balance);
        }
        for (holder, contract, id, standard, amount) in &self.nft_holdings {
            batch.put_nft_holding((holder, contract, id), *standard, block, amount);
        }
        for (token, info) in &self.token_infos {
            batch.put_token_info(token, info);
        }
    }
}

/// The histories `block` adds, as `histories` asks.
pub(crate) async fn block_history(
    node: &NodeClient,
    plan: &NodePlan,
    block: &BlockSummary,
    histories: Histories,
    store: &Store,
) -> Result<BlockHistory, NodeError> {
    let block_level = |transactions: Option<&[TransactionRow]>| {
        let timestamp = block.timestamp.to::<u64>();
        // What the miner got: each transaction's tip (effective price over
        // the base fee); known only with the transactions.
        let base_fee = block.base_fee_per_gas.unwrap_or(U256::ZERO);
        let reward = transactions.map(|rows| {
            rows.iter().fold(U256::ZERO, |sum, row| {
                let tip = U256::from(row.gas_price).saturating_sub(base_fee);
                sum.saturating_add(tip.saturating_mul(U256::from(row.gas_used)))
            })
        });
        let mut rows = vec![Transfer::Mined(
            block.miner,
            MinedBlock { timestamp, reward },
        )];
        for w in block.withdrawals.iter().flatten() {
            rows.push(Transfer::Withdrawal(
                w.address,
                BeaconWithdrawal {
                    index: w.index.to::<u64>(),
                    validator: w.validator_index.to::<u64>(),
                    amount_gwei: w.amount.to::<u64>(),
                    timestamp,
                },
            ));
        }
        rows
    };
    if !histories.any() || block.transactions.is_empty() {
        let known = (histories.transactions || block.transactions.is_empty()).then_some(&[][..]);
        return Ok(BlockHistory {
            block_level: block_level(known),
            ..BlockHistory::default()
        });
    }
    let (transactions, receipts) =
        crate::transactions::block_transactions(node, plan, block).await?;
    let mut history = BlockHistory {
        block_level: block_level(Some(&transactions)),
        transactions,
        ..BlockHistory::default()
    };
    let mut transfers: Vec<Vec<Transfer>> = vec![Vec::new(); receipts.len()];
    if histories.internal {
        for (index, internal) in internal_transfers(node, block)
            .await?
            .into_iter()
            .enumerate()
        {
            transfers[index].extend(internal.into_iter().map(Transfer::Internal));
        }
    }
    if histories.tokens {
        let logged = token_transfers(&receipts);
        let mut touched = BTreeSet::new();
        for (index, token) in logged {
            for holder in [token.from, token.to] {
                if holder != Address::ZERO {
                    touched.insert((holder, token.token));
                }
            }
            transfers[index].push(Transfer::Token(token));
        }
        let mut collections = BTreeSet::new();
        let mut held = BTreeSet::new();
        for (index, nft) in nft_transfers(&receipts) {
            let (t, standard) = match &nft {
                Transfer::Nft(t) => (t, NftStandard::Erc721),
                Transfer::MultiToken(t) => (t, NftStandard::Erc1155),
                _ => continue,
            };
            collections.insert(t.token);
            for holder in [t.from, t.to] {
                if holder != Address::ZERO {
                    held.insert((holder, t.token, t.token_id, standard as u8));
                }
            }
            transfers[index].push(nft);
        }
        let at = (block.number.to::<u64>(), block.hash);
        history.token_balances = token_balances(node, plan, at, &touched).await?;
        history.nft_holdings = nft_holdings(node, plan, at, &held).await?;
        let mut tokens: BTreeSet<Address> = touched.iter().map(|(_, token)| *token).collect();
        // An NFT contract's name and symbol are read the same way (its
        // decimals, which it has none of, stay none).
        tokens.extend(collections);
        for token in tokens {
            if store.token_info(&token).ok().flatten().is_none() {
                let info = token_info(node, plan, at, token).await?;
                history.token_infos.push((token, info));
            }
        }
    }
    history.transfers = transfers
        .into_iter()
        .enumerate()
        .filter(|(_, t)| !t.is_empty())
        .map(|(index, t)| {
            (
                u32::try_from(index).expect("fewer than 2^32 transactions"),
                t,
            )
        })
        .collect();
    Ok(history)
}

/// A `callTracer` frame.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CallFrame {
    #[serde(rename = "type")]
    kind: String,
    from: Address,
    #[serde(default)]
    to: Option<Address>,
    #[serde(default)]
    value: Option<U256>,
    #[serde(default)]
    gas: Option<U64>,
    #[serde(default)]
    gas_used: Option<U64>,
    #[serde(default)]
    input: Bytes,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    calls: Vec<CallFrame>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CallTrace {
    tx_hash: Option<B256>,
    result: Option<CallFrame>,
    error: Option<String>,
}

/// The internal transfers of each of `block`'s transactions.
async fn internal_transfers(
    node: &NodeClient,
    block: &BlockSummary,
) -> Result<Vec<Vec<InternalTransfer>>, NodeError> {
    const METHOD: &str = "debug_traceBlockByNumber";
    let number = block.number.to::<u64>();
    let traces: Vec<CallTrace> = node
        .call(
            METHOD,
            (
                crate::node::StateAt::Number(number),
                serde_json::json!({ "tracer": "callTracer" }),
            ),
        )
        .await?;
    check_coverage(METHOD, block, traces.iter().map(|t| t.tx_hash))?;
    traces
        .into_iter()
        .map(|trace| {
            if let Some(error) = trace.error {
                return Err(NodeError::from_rpc_error(
                    METHOD,
                    0,
                    format!("block {number}: {error}"),
                ));
            }
            let top = trace
                .result
                .ok_or_else(|| malformed(METHOD, format!("block {number}: no call frame")))?;
            let mut found = Vec::new();
            collect_frames(&top, &mut Vec::new(), top.error.as_deref(), &mut found);
            Ok(found)
        })
        .collect()
}

/// Appends the frames below `frame` that move value or create a contract,
/// depth first, with Etherscan's trace ids (the path of child indices).
/// A frame inside a failed one failed too: its value never moved.
fn collect_frames(
    frame: &CallFrame,
    path: &mut Vec<usize>,
    failed_above: Option<&str>,
    found: &mut Vec<InternalTransfer>,
) {
    for (index, child) in frame.calls.iter().enumerate() {
        path.push(index);
        let failure = child.error.as_deref().or(failed_above);
        let kind = child.kind.to_ascii_lowercase();
        let value = child.value.unwrap_or_default();
        let creates = kind == "create" || kind == "create2";
        let moves_value = !value.is_zero() && (kind == "call" || kind == "selfdestruct");
        if creates || moves_value {
            found.push(InternalTransfer {
                from: child.from,
                to: if creates { None } else { child.to },
                value,
                contract_address: if creates { child.to } else { None },
                input: child.input.to_vec(),
                call_type: kind,
                gas: child.gas.map_or(0, |g| g.to::<u64>()),
                gas_used: child.gas_used.map_or(0, |g| g.to::<u64>()),
                trace_id: path
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join("_"),
                error: failure.map(str::to_owned),
            });
        }
        collect_frames(child, path, failure, found);
        path.pop();
    }
}

/// ERC-20 `Transfer` logs (three topics and a 32-byte amount: ERC-721's
/// have four) with the position of the transaction that logged them.
fn token_transfers(receipts: &[Receipt]) -> Vec<(usize, TokenTransfer)> {
    let mut found = Vec::new();
    for (index, receipt) in receipts.iter().enumerate() {
        for (position, log) in receipt.logs.iter().enumerate() {
            if log.topics.len() != 3 || log.topics[0] != TRANSFER_TOPIC || log.data.len() != 32 {
                continue;
            }
            let topic_address = |topic: &B256| Address::from_slice(&topic[12..]);
            found.push((
                index,
                TokenTransfer {
                    token: log.address,
                    from: topic_address(&log.topics[1]),
                    to: topic_address(&log.topics[2]),
                    value: U256::from_be_slice(&log.data),
                    log_index: log
                        .log_index
                        .map_or(position as u32, |i| i.to::<u64>() as u32),
                },
            ));
        }
    }
    found
}

/// ERC-721 `Transfer` logs (the token id a fourth topic, no data) and every
/// item of ERC-1155 `TransferSingle` and `TransferBatch` logs, with the
/// position of the transaction that logged them. A log that does not
/// decode as its standard says is not a transfer of it, and is skipped.
fn nft_transfers(receipts: &[Receipt]) -> Vec<(usize, Transfer)> {
    let topic_address = |topic: &B256| Address::from_slice(&topic[12..]);
    let mut found = Vec::new();
    for (index, receipt) in receipts.iter().enumerate() {
        for (position, log) in receipt.logs.iter().enumerate() {
            let log_index = log
                .log_index
                .map_or(position as u32, |i| i.to::<u64>() as u32);
            let Some(topic) = log.topics.first() else {
                continue;
            };
            if *topic == TRANSFER_TOPIC && log.topics.len() == 4 && log.data.is_empty() {
                found.push((
                    index,
                    Transfer::Nft(NftTransfer {
                        token: log.address,
                        from: topic_address(&log.topics[1]),
                        to: topic_address(&log.topics[2]),
                        token_id: U256::from_be_bytes(log.topics[3].0),
                        value: U256::from(1),
                        operator: None,
                        log_index,
                    }),
                ));
                continue;
            }
            let single = *topic == TRANSFER_SINGLE_TOPIC;
            if !(single || *topic == TRANSFER_BATCH_TOPIC) || log.topics.len() != 4 {
                continue;
            }
            let items = if single {
                (log.data.len() == 64).then(|| {
                    vec![(
                        U256::from_be_slice(&log.data[..32]),
                        U256::from_be_slice(&log.data[32..]),
                    )]
                })
            } else {
                batch_items(&log.data)
            };
            for (token_id, value) in items.unwrap_or_default() {
                found.push((
                    index,
                    Transfer::MultiToken(NftTransfer {
                        token: log.address,
                        from: topic_address(&log.topics[2]),
                        to: topic_address(&log.topics[3]),
                        token_id,
                        value,
                        operator: Some(topic_address(&log.topics[1])),
                        log_index,
                    }),
                ));
            }
        }
    }
    found
}

/// The `(id, value)` pairs of a `TransferBatch`'s data: two ABI-encoded
/// `uint256[]` of one length; none if it is not that.
fn batch_items(data: &[u8]) -> Option<Vec<(U256, U256)>> {
    let word = |at: usize| -> Option<usize> {
        let bytes = data.get(at..at.checked_add(32)?)?;
        usize::try_from(U256::from_be_slice(bytes)).ok()
    };
    let array = |offset: usize| -> Option<Vec<U256>> {
        let length = word(offset)?;
        // Each item takes a word: a length beyond the data is malformed.
        if length > data.len() / 32 {
            return None;
        }
        (0..length)
            .map(|i| {
                let at = offset.checked_add(32)?.checked_add(i.checked_mul(32)?)?;
                Some(U256::from_be_slice(data.get(at..at.checked_add(32)?)?))
            })
            .collect()
    };
    let ids = array(word(0)?)?;
    let values = array(word(32)?)?;
    (ids.len() == values.len()).then(|| ids.into_iter().zip(values).collect())
}

#[derive(Debug, Clone, serde::Serialize)]
struct CallRequest {
    to: Address,
    input: Bytes,
}

fn call_data(selector: [u8; 4], holder: Option<Address>) -> Bytes {
    let mut data = selector.to_vec();
    if let Some(holder) = holder {
        data.extend_from_slice(&[0u8; 12]);
        data.extend_from_slice(holder.as_slice());
    }
    data.into()
}

/// Runs `calls` against the state after the block, one answer each: a
/// contract that reverts or answers nothing gives `None`.
async fn calls_at(
    node: &NodeClient,
    plan: &NodePlan,
    at: (u64, B256),
    calls: Vec<CallRequest>,
) -> Result<Vec<Option<Bytes>>, NodeError> {
    let answers = read_at_block(node, plan, at, "eth_call", |state| async move {
        let params: Vec<(CallRequest, crate::node::StateAt)> =
            calls.into_iter().map(|call| (call, state)).collect();
        node.call_batch_each::<_, Bytes>("eth_call", &params).await
    })
    .await?;
    Ok(answers.into_iter().map(Result::ok).collect())
}

/// Each holder's balance of its token after the block, as `balanceOf`
/// answers; holders whose token answers nothing are left out.
async fn token_balances(
    node: &NodeClient,
    plan: &NodePlan,
    at: (u64, B256),
    touched: &BTreeSet<(Address, Address)>,
) -> Result<Vec<(Address, Address, U256)>, NodeError> {
    let calls = touched
        .iter()
        .map(|(holder, token)| CallRequest {
            to: *token,
            input: call_data(BALANCE_OF, Some(*holder)),
        })
        .collect();
    let answers = calls_at(node, plan, at, calls).await?;
    Ok(touched
        .iter()
        .zip(answers)
        .filter_map(|((holder, token), answer)| {
            let answer = answer.filter(|a| a.len() >= 32)?;
            Some((*holder, *token, U256::from_be_slice(&answer[..32])))
        })
        .collect())
}

/// What each holder holds of each token a transfer of the block touched,
/// after it: ERC-721's `ownerOf(id)` (1 when it is the holder; 0 when it is
/// another or the token is burnt) and ERC-1155's `balanceOf(holder, id)`.
async fn nft_holdings(
    node: &NodeClient,
    plan: &NodePlan,
    at: (u64, B256),
    held: &BTreeSet<(Address, Address, U256, u8)>,
) -> Result<Vec<(Address, Address, U256, NftStandard, U256)>, NodeError> {
    const OWNER_OF: [u8; 4] = [0x63, 0x52, 0x21, 0x1e];
    const BALANCE_OF_ID: [u8; 4] = [0x00, 0xfd, 0xd5, 0x8e];
    let calls = held
        .iter()
        .map(|(holder, contract, id, standard)| {
            let mut input = if *standard == NftStandard::Erc721 as u8 {
                OWNER_OF.to_vec()
            } else {
                let mut input = BALANCE_OF_ID.to_vec();
                input.extend_from_slice(&[0u8; 12]);
                input.extend_from_slice(holder.as_slice());
                input
            };
            input.extend_from_slice(&id.to_be_bytes::<32>());
            CallRequest {
                to: *contract,
                input: input.into(),
            }
        })
        .collect();
    let answers = calls_at(node, plan, at, calls).await?;
    Ok(held
        .iter()
        .zip(answers)
        .filter_map(|((holder, contract, id, standard), answer)| {
            if *standard == NftStandard::Erc721 as u8 {
                // A burnt token's ownerOf reverts: nobody holds it.
                let owner = answer
                    .filter(|a| a.len() >= 32)
                    .map(|a| Address::from_slice(&a[12..32]));
                let amount = U256::from(u8::from(owner == Some(*holder)));
                Some((*holder, *contract, *id, NftStandard::Erc721, amount))
            } else {
                let answer = answer.filter(|a| a.len() >= 32)?;
                let amount = U256::from_be_slice(&answer[..32]);
                Some((*holder, *contract, *id, NftStandard::Erc1155, amount))
            }
        })
        .collect())
}

/// `name()`, `symbol()` and `decimals()` of `token`, each empty when the
/// contract does not answer it.
async fn token_info(
    node: &NodeClient,
    plan: &NodePlan,
    at: (u64, B256),
    token: Address,
) -> Result<TokenInfo, NodeError> {
    let calls = [NAME, SYMBOL, DECIMALS]
        .into_iter()
        .map(|selector| CallRequest {
            to: token,
            input: call_data(selector, None),
        })
        .collect();
    let answers = calls_at(node, plan, at, calls).await?;
    let text = |answer: &Option<Bytes>| answer.as_deref().map(|a| abi_text(a)).unwrap_or_default();
    let decimals = answers[2]
        .as_deref()
        .filter(|a| a.len() == 32 && a[..31].iter().all(|b| *b == 0))
        .map(|a| a[31]);
    Ok(TokenInfo {
        name: text(&answers[0]),
        symbol: text(&answers[1]),
        decimals,
    })
}

/// An ABI-encoded `string` answer, or a `bytes32` one (older tokens),
/// as text; anything else is empty.
fn abi_text(answer: &[u8]) -> String {
    let word = |at: usize| -> Option<usize> {
        let bytes = answer.get(at..at + 32)?;
        bytes[..24]
            .iter()
            .all(|b| *b == 0)
            .then(|| u64::from_be_bytes(bytes[24..].try_into().expect("8 bytes")) as usize)
    };
    let raw: &[u8] = match (word(0), answer.len()) {
        (Some(offset), _) if answer.len() >= 64 => {
            let Some(len) = word(offset) else {
                return String::new();
            };
            let start = offset + 32;
            answer.get(start..start.saturating_add(len)).unwrap_or(&[])
        }
        (_, 32) => {
            let end = answer.iter().position(|b| *b == 0).unwrap_or(32);
            &answer[..end]
        }
        _ => &[],
    };
    String::from_utf8_lossy(raw)
        .chars()
        .filter(|c| !c.is_control())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_transfers_decode_item_by_item_and_malformed_ones_not_at_all() {
        let word = |n: u64| U256::from(n).to_be_bytes::<32>().to_vec();
        // ids at 0x40: [7, 8]; values at 0xa0: [1, 2].
        let data: Vec<u8> = [64, 160, 2, 7, 8, 2, 1, 2]
            .iter()
            .flat_map(|n| word(*n))
            .collect();
        assert_eq!(
            batch_items(&data),
            Some(vec![
                (U256::from(7), U256::from(1)),
                (U256::from(8), U256::from(2))
            ])
        );
        assert_eq!(batch_items(&data[..data.len() - 1]), None, "cut short");
        let uneven: Vec<u8> = [64, 160, 2, 7, 8, 1, 1]
            .iter()
            .flat_map(|n| word(*n))
            .collect();
        assert_eq!(
            batch_items(&uneven),
            None,
            "ids and values differ in length"
        );
        let huge: Vec<u8> = [64, 96, u64::MAX].iter().flat_map(|n| word(*n)).collect();
        assert_eq!(batch_items(&huge), None, "a length beyond the data");
        assert_eq!(batch_items(&[]), None);
    }

    #[test]
    fn token_texts_decode_as_strings_or_bytes32() {
        let mut string = vec![0u8; 96];
        string[31] = 32;
        string[63] = 4;
        string[64..68].copy_from_slice(b"WETH");
        assert_eq!(abi_text(&string), "WETH");
        let mut fixed = [0u8; 32];
        fixed[..3].copy_from_slice(b"MKR");
        assert_eq!(abi_text(&fixed), "MKR");
        assert_eq!(abi_text(&[1, 2, 3]), "");
        let mut lying = string.clone();
        lying[63] = 200;
        assert_eq!(abi_text(&lying), "");
    }

    #[test]
    fn frames_below_the_top_that_move_value_or_create_are_listed_with_paths() {
        let frames: CallFrame = serde_json::from_value(serde_json::json!({
            "type": "CALL", "from": "0x1111111111111111111111111111111111111111",
            "to": "0x2222222222222222222222222222222222222222", "value": "0x5",
            "calls": [
                { "type": "STATICCALL", "from": "0x2222222222222222222222222222222222222222",
                  "to": "0x3333333333333333333333333333333333333333" },
                { "type": "CALL", "from": "0x2222222222222222222222222222222222222222",
                  "to": "0x3333333333333333333333333333333333333333", "value": "0x3",
                  "gas": "0x8fc", "gasUsed": "0x0", "error": "execution reverted",
                  "calls": [
                    { "type": "CREATE2", "from": "0x3333333333333333333333333333333333333333",
                      "to": "0x4444444444444444444444444444444444444444", "value": "0x0",
                      "input": "0x6080" }
                  ] },
                { "type": "CALL", "from": "0x2222222222222222222222222222222222222222",
                  "to": "0x5555555555555555555555555555555555555555", "value": "0x0" }
            ]
        }))
        .unwrap();
        let mut found = Vec::new();
        collect_frames(&frames, &mut Vec::new(), None, &mut found);
        let ids: Vec<&str> = found.iter().map(|t| t.trace_id.as_str()).collect();
        assert_eq!(ids, ["1", "1_0"]);
        assert_eq!(found[0].value, U256::from(3));
        assert_eq!(found[0].gas, 0x8fc);
        assert_eq!(found[1].call_type, "create2");
        assert_eq!(found[1].to, None);
        assert_eq!(found[1].contract_address, Some(Address::repeat_byte(0x44)));
        // Created inside a reverted call: it failed with it.
        assert_eq!(found[1].error.as_deref(), Some("execution reverted"));
    }
}
