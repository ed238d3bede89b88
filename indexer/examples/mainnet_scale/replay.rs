//! The replay node: serves the recorded chain over HTTP JSON-RPC, answering
//! exactly what the indexer asks of an archive node (geth or reth with
//! `debug` tracing), rendered straight from memory.

use std::collections::HashMap;
use std::fmt::Write;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::chain::{
    self, Block, Chain, Kind, NOBODY, Tx, address, block_hash, block_of_hash, transaction_hash,
    word,
};

/// `keccak256("Transfer(address,address,uint256)")`.
const TRANSFER: &str = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
/// `keccak256("Swap(address,uint256,uint256,uint256,uint256,address)")`.
const SWAP: &str = "0xd78ad95fa46c994b6551d0da85fc275fe613ce37657fb8d5e3d130840159d822";

/// The chain and the map from its addresses back to accounts.
pub struct Replay {
    chain: Chain,
    accounts: HashMap<[u8; 20], u32>,
}

impl Replay {
    /// Serves `chain`.
    pub fn new(chain: Chain) -> Self {
        let accounts = chain::address_book(chain.accounts);
        Self { chain, accounts }
    }
}

/// The HTTP JSON-RPC service.
pub fn router(replay: Arc<Replay>) -> axum::Router {
    axum::Router::new()
        .route("/", post(serve))
        .layer(axum::extract::DefaultBodyLimit::max(32 << 20))
        .with_state(replay)
}

#[derive(Deserialize)]
struct Request<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    method: &'a str,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
}

async fn serve(State(replay): State<Arc<Replay>>, body: Bytes) -> axum::response::Response {
    let text = std::str::from_utf8(&body).unwrap_or("");
    let mut out = String::with_capacity(64 * 1024);
    if text.trim_start().starts_with('[') {
        match serde_json::from_str::<Vec<Request<'_>>>(text) {
            Ok(requests) if requests.len() > weiport_indexer::node::MAX_BATCH => {
                // As geth answers a batch over its limit.
                envelope_error(&mut out, "null", -32600, "batch too large");
            }
            Ok(requests) => {
                out.push('[');
                for (n, request) in requests.iter().enumerate() {
                    if n > 0 {
                        out.push(',');
                    }
                    replay.answer(request, &mut out);
                }
                out.push(']');
            }
            Err(error) => envelope_error(&mut out, "null", -32700, &error.to_string()),
        }
    } else {
        match serde_json::from_str::<Request<'_>>(text) {
            Ok(request) => replay.answer(&request, &mut out),
            Err(error) => envelope_error(&mut out, "null", -32700, &error.to_string()),
        }
    }
    axum::response::IntoResponse::into_response((
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        out,
    ))
}

fn envelope_error(out: &mut String, id: &str, code: i64, message: &str) {
    let message = serde_json::to_string(message).expect("a string serialises");
    let _ = write!(
        out,
        r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":{code},"message":{message}}}}}"#
    );
}

/// Where state is read: a block number, or none for an unknown hash.
fn state_block(chain: &Chain, at: &serde_json::Value) -> Option<u64> {
    match at {
        serde_json::Value::String(tag) => number_tag(chain, tag),
        serde_json::Value::Object(map) => {
            let hash = map.get("blockHash")?.as_str()?;
            block_of_hash(&parse_fixed::<32>(hash)?)
        }
        _ => None,
    }
}

fn number_tag(chain: &Chain, tag: &str) -> Option<u64> {
    match tag {
        "latest" | "safe" | "finalized" | "pending" => Some(chain.head()),
        "earliest" => Some(0),
        hex => u64::from_str_radix(hex.strip_prefix("0x")?, 16).ok(),
    }
}

fn parse_fixed<const N: usize>(text: &str) -> Option<[u8; N]> {
    let hex = text.strip_prefix("0x")?;
    let mut out = [0u8; N];
    alloy_primitives::hex::decode_to_slice(hex, &mut out).ok()?;
    Some(out)
}

fn parse_bytes(text: &str) -> Option<Vec<u8>> {
    alloy_primitives::hex::decode(text.strip_prefix("0x")?).ok()
}

/// Why a request got no result.
struct Refused(i64, String);

fn refused(message: impl Into<String>) -> Refused {
    Refused(-32000, message.into())
}

impl Replay {
    fn answer(&self, request: &Request<'_>, out: &mut String) {
        let id = request.id.map_or("null", RawValue::get);
        let start = out.len();
        let _ = write!(out, r#"{{"jsonrpc":"2.0","id":{id},"result":"#);
        let params = request.params.map_or("[]", RawValue::get);
        match self.result(request.method, params, out) {
            Ok(()) => out.push('}'),
            Err(Refused(code, message)) => {
                out.truncate(start);
                envelope_error(out, id, code, &message);
            }
        }
    }

    fn result(&self, method: &str, params: &str, out: &mut String) -> Result<(), Refused> {
        let bad = |e: serde_json::Error| Refused(-32602, format!("invalid params: {e}"));
        let chain = &self.chain;
        match method {
            "eth_chainId" | "net_version" => {
                out.push_str(if method == "eth_chainId" {
                    "\"0x1\""
                } else {
                    "\"1\""
                });
            }
            "web3_clientVersion" => out.push_str("\"weiport-replay/1.0\""),
            "eth_blockNumber" => quantity(out, u128::from(chain.head())),
            "eth_accounts" => out.push_str("[]"),
            "replay_stats" => {
                let _ = write!(
                    out,
                    r#"{{"head":{},"transactions":{}}}"#,
                    chain.head(),
                    chain.transactions
                );
            }
            "replay_blockAfterTransactions" => {
                let (n,): (u64,) = serde_json::from_str(params).map_err(bad)?;
                let _ = write!(out, "{}", chain.block_after_transactions(n));
            }
            "replay_transactionsThrough" => {
                let (block,): (u64,) = serde_json::from_str(params).map_err(bad)?;
                let _ = write!(out, "{}", chain.transactions_through(block));
            }
            "eth_getBlockByNumber" => {
                let (tag, full): (String, bool) = serde_json::from_str(params).map_err(bad)?;
                match number_tag(chain, &tag).filter(|n| *n <= chain.head()) {
                    Some(number) => self.render_block(number, full, out),
                    None => out.push_str("null"),
                }
            }
            "eth_getBlockReceipts" => {
                let (tag,): (serde_json::Value,) = serde_json::from_str(params).map_err(bad)?;
                match state_block(chain, &tag).and_then(|n| Some((n, chain.block(n)?))) {
                    Some((number, block)) => render_receipts(number, block, out),
                    None => out.push_str("null"),
                }
            }
            "debug_traceBlockByNumber" => {
                let (tag, options): (String, serde_json::Value) =
                    serde_json::from_str(params).map_err(bad)?;
                let number = number_tag(chain, &tag)
                    .filter(|n| *n <= chain.head())
                    .ok_or_else(|| refused(format!("block {tag} not found")))?;
                let txs = chain.block(number).map_or(&[][..], |b| &b.txs[..]);
                match options["tracer"].as_str() {
                    Some("prestateTracer") if options["tracerConfig"]["diffMode"] == true => {
                        render_prestate(number, txs, out);
                    }
                    Some("callTracer") => render_calls(number, txs, out),
                    other => {
                        return Err(refused(format!("tracer {other:?} is not recorded")));
                    }
                }
            }
            "eth_getBalance" => {
                let (who, at): (String, serde_json::Value) =
                    serde_json::from_str(params).map_err(bad)?;
                let who = parse_fixed::<20>(&who).ok_or_else(|| refused("bad address"))?;
                let number = state_block(chain, &at).ok_or_else(|| refused("unknown block"))?;
                quantity(out, self.balance(who, number)?);
            }
            "eth_call" => {
                let (call, at): (serde_json::Value, serde_json::Value) =
                    serde_json::from_str(params).map_err(bad)?;
                let number = state_block(chain, &at).ok_or_else(|| refused("unknown block"))?;
                let to = call["to"].as_str().and_then(parse_fixed::<20>);
                let input = call["input"]
                    .as_str()
                    .or(call["data"].as_str())
                    .and_then(parse_bytes)
                    .unwrap_or_default();
                let answer = self.call(to, &input, number)?;
                out.push('"');
                hex(out, &answer);
                out.push('"');
            }
            other => {
                return Err(Refused(
                    -32601,
                    format!("the method {other} does not exist/is not available"),
                ));
            }
        }
        Ok(())
    }

    /// Ether of `who` after block `number`, where the recording knows it:
    /// at genesis, at the head, or a withdrawal's recipient at its block.
    fn balance(&self, who: [u8; 20], number: u64) -> Result<u128, Refused> {
        let chain = &self.chain;
        let Some(&id) = self.accounts.get(&who) else {
            return Ok(0);
        };
        if number == 0 {
            return Ok(if id < chain::FUNDED {
                chain::GENESIS_WEI
            } else {
                0
            });
        }
        if number == chain.head() {
            return Ok(chain.final_wei[id as usize]);
        }
        let block = chain
            .block(number)
            .ok_or_else(|| refused("unknown block"))?;
        block
            .withdrawals
            .iter()
            .zip(&block.withdrawn_after)
            .rev()
            .find(|((_, account, _), _)| *account == id)
            .map(|(_, wei)| *wei)
            .ok_or_else(|| refused(format!("balance of account {id} at {number} not recorded")))
    }

    /// `balanceOf(holder)`, `name()`, `symbol()`, `decimals()` of a token.
    fn call(&self, to: Option<[u8; 20]>, input: &[u8], number: u64) -> Result<Vec<u8>, Refused> {
        let token = to
            .and_then(|to| self.accounts.get(&to).copied())
            .filter(|id| chain::is_token(*id))
            .ok_or_else(|| Refused(3, "execution reverted".into()))?;
        let uint = |value: u128| {
            let mut out = vec![0u8; 32];
            out[16..].copy_from_slice(&value.to_be_bytes());
            out
        };
        match input.get(..4) {
            Some([0x70, 0xa0, 0x82, 0x31]) if input.len() == 36 => {
                let holder = input[16..36].try_into().expect("20 bytes");
                let holder = self.accounts.get::<[u8; 20]>(&holder).copied();
                let balance = match holder {
                    None => 0,
                    Some(holder) if number == self.chain.head() => self
                        .chain
                        .final_tokens
                        .get(&(token, holder))
                        .copied()
                        .unwrap_or(0),
                    Some(holder) => {
                        let block = self
                            .chain
                            .block(number)
                            .ok_or_else(|| refused("unknown block"))?;
                        let at = block
                            .tokens_after
                            .binary_search_by(|(t, h, _)| (*t, *h).cmp(&(token, holder)))
                            .map_err(|_| refused("token balance not recorded at that block"))?;
                        block.tokens_after[at].2
                    }
                };
                Ok(uint(balance))
            }
            Some([0x31, 0x3c, 0xe5, 0x67]) => Ok(uint(18)),
            Some([0x06, 0xfd, 0xde, 0x03] | [0x95, 0xd8, 0x9b, 0x41]) => {
                let text = if input[0] == 0x06 {
                    format!("Token {token}")
                } else {
                    format!("T{token}")
                };
                let mut out = uint(32);
                out.extend(uint(text.len() as u128));
                let mut padded = text.into_bytes();
                padded.resize(32, 0);
                out.extend(padded);
                Ok(out)
            }
            _ => Err(Refused(3, "execution reverted".into())),
        }
    }

    fn render_block(&self, number: u64, full: bool, out: &mut String) {
        let empty = Block {
            timestamp: 1_700_000_000,
            base_fee: 7,
            builder: chain::NOBODY,
            txs: Vec::new(),
            withdrawals: Vec::new(),
            withdrawn_after: Vec::new(),
            tokens_after: Vec::new(),
        };
        let block = self.chain.block(number).unwrap_or(&empty);
        let hash = block_hash(number);
        let gas_used: u64 = block.txs.iter().map(|t| u64::from(t.gas_used)).sum();
        out.push_str("{\"number\":");
        quantity(out, u128::from(number));
        field_bytes(out, "hash", &hash);
        field_bytes(
            out,
            "parentHash",
            &if number == 0 {
                [0; 32]
            } else {
                block_hash(number - 1)
            },
        );
        out.push_str(r#","nonce":"0x0000000000000000","sha3Uncles":"0x1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347""#);
        field_bytes(out, "logsBloom", &bloom(number, 0));
        field_bytes(out, "transactionsRoot", &word(10, number, 0));
        field_bytes(out, "stateRoot", &word(11, number, 0));
        field_bytes(out, "receiptsRoot", &word(12, number, 0));
        field_bytes(
            out,
            "miner",
            &if block.builder == NOBODY {
                [0; 20]
            } else {
                address(block.builder)
            },
        );
        out.push_str(r#","difficulty":"0x0","totalDifficulty":"0xc70d815d562d3cfa955","extraData":"0x6265617665726275696c642e6f7267","size":"#);
        quantity(out, 1_000 + 600 * block.txs.len() as u128);
        out.push_str(r#","gasLimit":"0x1c9c380","gasUsed":"#);
        quantity(out, u128::from(gas_used));
        out.push_str(r#","timestamp":"#);
        quantity(out, u128::from(block.timestamp));
        field_bytes(out, "mixHash", &word(13, number, 0));
        out.push_str(r#","baseFeePerGas":"#);
        quantity(out, u128::from(block.base_fee));
        field_bytes(out, "withdrawalsRoot", &word(14, number, 0));
        out.push_str(r#","blobGasUsed":"0x0","excessBlobGas":"0x0""#);
        field_bytes(out, "parentBeaconBlockRoot", &word(15, number, 0));
        out.push_str(r#","uncles":[],"withdrawals":["#);
        let first = if number == 0 {
            0
        } else {
            Block::first_withdrawal(number)
        };
        for (n, (validator, account, gwei)) in block.withdrawals.iter().enumerate() {
            if n > 0 {
                out.push(',');
            }
            out.push_str("{\"index\":");
            quantity(out, u128::from(first + n as u64));
            out.push_str(",\"validatorIndex\":");
            quantity(out, u128::from(*validator));
            field_bytes(out, "address", &address(*account));
            out.push_str(",\"amount\":");
            quantity(out, u128::from(*gwei));
            out.push('}');
        }
        out.push_str("],\"transactions\":[");
        for (index, tx) in block.txs.iter().enumerate() {
            if index > 0 {
                out.push(',');
            }
            if full {
                render_body(number, index, tx, block.base_fee, out);
            } else {
                out.push('"');
                hex(out, &transaction_hash(number, index));
                out.push('"');
            }
        }
        out.push_str("]}");
    }
}

fn render_body(number: u64, index: usize, tx: &Tx, base_fee: u64, out: &mut String) {
    field_bytes_first(out, "blockHash", &block_hash(number));
    out.push_str(",\"blockNumber\":");
    quantity(out, u128::from(number));
    field_bytes(out, "from", &address(tx.from));
    out.push_str(",\"gas\":");
    quantity(out, u128::from(tx.gas_limit()));
    out.push_str(",\"gasPrice\":");
    quantity(out, u128::from(base_fee) + u128::from(tx.tip));
    out.push_str(",\"maxFeePerGas\":");
    quantity(out, 2 * u128::from(base_fee) + u128::from(tx.tip));
    out.push_str(",\"maxPriorityFeePerGas\":");
    quantity(out, u128::from(tx.tip));
    field_bytes(out, "hash", &transaction_hash(number, index));
    field_bytes(out, "input", &input(number, index, tx));
    out.push_str(",\"nonce\":");
    quantity(out, u128::from(tx.nonce));
    if tx.to == NOBODY {
        out.push_str(",\"to\":null");
    } else {
        field_bytes(out, "to", &address(tx.to));
    }
    out.push_str(",\"transactionIndex\":");
    quantity(out, index as u128);
    out.push_str(",\"value\":");
    quantity(out, tx.value);
    out.push_str(r#","type":"0x2","accessList":[],"chainId":"0x1","v":"0x1","yParity":"0x1""#);
    let signature = word(20, number, index as u64);
    field_bytes(out, "r", &signature);
    field_bytes(out, "s", &word(21, number, index as u64));
    out.push('}');
}

/// The call data a transaction carried.
fn input(number: u64, index: usize, tx: &Tx) -> Vec<u8> {
    let pad = |bytes: &[u8]| {
        let mut word = [0u8; 32];
        word[32 - bytes.len()..].copy_from_slice(bytes);
        word
    };
    let mut data = Vec::new();
    match tx.kind {
        Kind::Plain => {}
        Kind::Token { to, amount, .. } => {
            data.extend([0xa9, 0x05, 0x9c, 0xbb]);
            data.extend(pad(&address(to)));
            data.extend(pad(&amount.to_be_bytes()));
        }
        Kind::Reverted => {
            data.extend([0xa9, 0x05, 0x9c, 0xbb]);
            data.extend(pad(&address(tx.from)));
            data.extend([0xff; 32]);
        }
        Kind::Forward { to } => {
            data.extend([0x3c, 0xcf, 0xd6, 0x0b]);
            data.extend(pad(&address(to)));
        }
        Kind::Swap {
            amount_in,
            amount_out,
            ..
        } => {
            data.extend([0x02, 0x2c, 0x0d, 0x9f]);
            data.extend(pad(&amount_in.to_be_bytes()));
            data.extend(pad(&amount_out.to_be_bytes()));
            data.extend(pad(&address(tx.from)));
            data.extend(pad(&[0x80]));
            data.extend([0u8; 32]);
        }
        Kind::Create { .. } => {
            // About a kilobyte of init code, as typical deployments carry.
            for n in 0..32 {
                data.extend(word(22, number, (index as u64) << 8 | n));
            }
        }
    }
    data
}

fn render_receipts(number: u64, block: &Block, out: &mut String) {
    out.push('[');
    let mut cumulative = 0u128;
    let mut log_index = 0u128;
    let hash = block_hash(number);
    for (index, tx) in block.txs.iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        cumulative += u128::from(tx.gas_used);
        let tx_hash = transaction_hash(number, index);
        out.push_str(r#"{"type":"0x2","status":"#);
        out.push_str(if matches!(tx.kind, Kind::Reverted) {
            "\"0x0\""
        } else {
            "\"0x1\""
        });
        out.push_str(",\"cumulativeGasUsed\":");
        quantity(out, cumulative);
        out.push_str(",\"logs\":[");
        let mut log = |out: &mut String, token: u32, topics: &[&[u8]], data: &[u8], first: bool| {
            if !first {
                out.push(',');
            }
            field_bytes_first(out, "address", &address(token));
            out.push_str(",\"topics\":[");
            for (n, topic) in topics.iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                out.push('"');
                if topic.len() == 32 {
                    hex(out, topic);
                } else {
                    out.push_str("0x000000000000000000000000");
                    hex_digits(out, topic);
                }
                out.push('"');
            }
            out.push(']');
            field_bytes(out, "data", data);
            out.push_str(",\"blockNumber\":");
            quantity(out, u128::from(number));
            field_bytes(out, "transactionHash", &tx_hash);
            out.push_str(",\"transactionIndex\":");
            quantity(out, index as u128);
            field_bytes(out, "blockHash", &hash);
            out.push_str(",\"logIndex\":");
            quantity(out, log_index);
            out.push_str(",\"removed\":false}");
            log_index += 1;
        };
        let transfer = parse_fixed::<32>(TRANSFER).expect("topic");
        let amount = |v: u128| {
            let mut word = [0u8; 32];
            word[16..].copy_from_slice(&v.to_be_bytes());
            word
        };
        match tx.kind {
            Kind::Token {
                token,
                to,
                amount: value,
            } => log(
                out,
                token,
                &[&transfer, &address(tx.from), &address(to)],
                &amount(value),
                true,
            ),
            Kind::Swap {
                token_in,
                token_out,
                amount_in,
                amount_out,
            } => {
                log(
                    out,
                    token_in,
                    &[&transfer, &address(tx.from), &address(tx.to)],
                    &amount(amount_in),
                    true,
                );
                log(
                    out,
                    token_out,
                    &[&transfer, &address(tx.to), &address(tx.from)],
                    &amount(amount_out),
                    false,
                );
                let swap = parse_fixed::<32>(SWAP).expect("topic");
                let mut data = Vec::with_capacity(128);
                data.extend(amount(amount_in));
                data.extend(amount(0));
                data.extend(amount(0));
                data.extend(amount(amount_out));
                log(
                    out,
                    tx.to,
                    &[&swap, &address(tx.from), &address(tx.from)],
                    &data,
                    false,
                );
            }
            _ => {}
        }
        out.push(']');
        field_bytes(out, "logsBloom", &bloom(number, index as u64 + 1));
        field_bytes(out, "transactionHash", &tx_hash);
        out.push_str(",\"transactionIndex\":");
        quantity(out, index as u128);
        field_bytes(out, "blockHash", &hash);
        out.push_str(",\"blockNumber\":");
        quantity(out, u128::from(number));
        out.push_str(",\"gasUsed\":");
        quantity(out, u128::from(tx.gas_used));
        out.push_str(",\"effectiveGasPrice\":");
        quantity(out, u128::from(block.base_fee) + u128::from(tx.tip));
        field_bytes(out, "from", &address(tx.from));
        if tx.to == NOBODY {
            out.push_str(",\"to\":null");
        } else {
            field_bytes(out, "to", &address(tx.to));
        }
        match tx.kind {
            Kind::Create { created } => field_bytes(out, "contractAddress", &address(created)),
            _ => out.push_str(",\"contractAddress\":null"),
        }
        out.push('}');
    }
    out.push(']');
}

fn render_prestate(number: u64, txs: &[Tx], out: &mut String) {
    out.push('[');
    for (index, tx) in txs.iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        field_bytes_first(out, "txHash", &transaction_hash(number, index));
        out.push_str(",\"result\":{\"pre\":{");
        let storage_of = |tx: &Tx| -> Option<u32> {
            match tx.kind {
                Kind::Token { token, .. } => Some(token),
                Kind::Swap { .. } => Some(tx.to),
                _ => None,
            }
        };
        for (n, (account, before, _)) in tx.changes.iter().enumerate() {
            if n > 0 {
                out.push(',');
            }
            out.push('"');
            hex(out, &address(*account));
            out.push_str("\":{\"balance\":");
            quantity(out, *before);
            if *account == tx.from {
                out.push_str(",\"nonce\":");
                let _ = write!(out, "{}", tx.nonce);
            }
            out.push('}');
        }
        if let Some(contract) = storage_of(tx) {
            out.push_str(",\"");
            hex(out, &address(contract));
            out.push_str("\":{\"balance\":\"0x0\",\"nonce\":1,\"storage\":{");
            storage_slots(out, number, index, 0);
            out.push_str("}}");
        }
        out.push_str("},\"post\":{");
        for (n, (account, _, after)) in tx.changes.iter().enumerate() {
            if n > 0 {
                out.push(',');
            }
            out.push('"');
            hex(out, &address(*account));
            out.push_str("\":{\"balance\":");
            quantity(out, *after);
            if *account == tx.from {
                out.push_str(",\"nonce\":");
                let _ = write!(out, "{}", tx.nonce + 1);
            }
            out.push('}');
        }
        if let Some(contract) = storage_of(tx) {
            out.push_str(",\"");
            hex(out, &address(contract));
            out.push_str("\":{\"storage\":{");
            storage_slots(out, number, index, 1);
            out.push_str("}}");
        }
        if let Kind::Create { created } = tx.kind {
            out.push_str(",\"");
            hex(out, &address(created));
            out.push_str("\":{\"balance\":\"0x0\",\"nonce\":1,\"code\":\"");
            let mut code = Vec::with_capacity(512);
            for n in 0..16 {
                code.extend(word(23, number, (index as u64) << 8 | n));
            }
            hex(out, &code);
            out.push_str("\"}");
        }
        out.push_str("}}}");
    }
    out.push(']');
}

fn storage_slots(out: &mut String, number: u64, index: usize, side: u64) {
    for slot in 0..2u64 {
        if slot > 0 {
            out.push(',');
        }
        out.push('"');
        hex(out, &word(24, number, (index as u64) << 4 | slot));
        out.push_str("\":\"");
        hex(
            out,
            &word(25, number, (index as u64) << 4 | slot << 1 | side),
        );
        out.push('"');
    }
}

fn render_calls(number: u64, txs: &[Tx], out: &mut String) {
    out.push('[');
    for (index, tx) in txs.iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        field_bytes_first(out, "txHash", &transaction_hash(number, index));
        out.push_str(",\"result\":");
        let kind = if matches!(tx.kind, Kind::Create { .. }) {
            "CREATE"
        } else {
            "CALL"
        };
        let to = match tx.kind {
            Kind::Create { created } => created,
            _ => tx.to,
        };
        frame(
            out,
            (kind, tx.from, to),
            (tx.gas_limit(), u64::from(tx.gas_used)),
            &input(number, index, tx),
            tx.value,
        );
        match tx.kind {
            Kind::Reverted => out.push_str(
                r#","error":"execution reverted","output":"0x08c379a00000000000000000000000000000000000000000000000000000000000000020""#,
            ),
            Kind::Forward { to: end } => {
                out.push_str(",\"output\":\"0x\",\"calls\":[");
                frame(out, ("CALL", tx.to, end), (2_300, 0), &[], tx.value);
                out.push_str("}]");
            }
            Kind::Swap {
                token_in,
                token_out,
                ..
            } => {
                out.push_str(",\"output\":\"0x\",\"calls\":[");
                frame(out, ("CALL", tx.to, token_out), (60_000, 30_000), &[0xa9, 0x05, 0x9c, 0xbb], 0);
                out.push_str("},");
                frame(out, ("STATICCALL", tx.to, token_in), (10_000, 2_600), &[0x70, 0xa0, 0x82, 0x31], 0);
                out.push_str("},");
                frame(out, ("STATICCALL", tx.to, token_out), (10_000, 2_600), &[0x70, 0xa0, 0x82, 0x31], 0);
                out.push_str("}]");
            }
            _ => out.push_str(
                r#","output":"0x0000000000000000000000000000000000000000000000000000000000000001""#,
            ),
        }
        out.push_str("}}");
    }
    out.push(']');
}

/// Opens a call frame (left open for its output and children).
fn frame(
    out: &mut String,
    (kind, from, to): (&str, u32, u32),
    (gas, used): (u64, u64),
    input: &[u8],
    value: u128,
) {
    field_bytes_first(out, "from", &address(from));
    out.push_str(",\"gas\":");
    quantity(out, u128::from(gas));
    out.push_str(",\"gasUsed\":");
    quantity(out, u128::from(used));
    field_bytes(out, "to", &address(to));
    field_bytes(out, "input", input);
    out.push_str(",\"value\":");
    quantity(out, value);
    let _ = write!(out, ",\"type\":\"{kind}\"");
}

/// A 256-byte logs bloom: mostly zero, a few bits set, as a block's is.
fn bloom(number: u64, salt: u64) -> [u8; 256] {
    let mut bloom = [0u8; 256];
    let bits = word(30, number, salt);
    for pair in bits.chunks(2) {
        let bit = u16::from_le_bytes([pair[0], pair[1]]) as usize % 2048;
        bloom[bit / 8] |= 1 << (bit % 8);
    }
    bloom
}

const DIGITS: &[u8; 16] = b"0123456789abcdef";

fn hex_digits(out: &mut String, bytes: &[u8]) {
    for byte in bytes {
        out.push(DIGITS[usize::from(byte >> 4)] as char);
        out.push(DIGITS[usize::from(byte & 15)] as char);
    }
}

fn hex(out: &mut String, bytes: &[u8]) {
    out.push_str("0x");
    hex_digits(out, bytes);
}

fn field_bytes_first(out: &mut String, name: &str, bytes: &[u8]) {
    let _ = write!(out, "{{\"{name}\":\"");
    hex(out, bytes);
    out.push('"');
}

fn field_bytes(out: &mut String, name: &str, bytes: &[u8]) {
    let _ = write!(out, ",\"{name}\":\"");
    hex(out, bytes);
    out.push('"');
}

fn quantity(out: &mut String, value: u128) {
    let _ = write!(out, "\"{value:#x}\"");
}
