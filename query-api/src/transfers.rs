//! Value moved inside transactions, Etherscan's way: `txlistinternal` (by
//! address or by transaction hash), `tokentx` (by address and/or token),
//! `tokenbalance` and `addresstokenbalance`.

use std::collections::HashMap;
use std::fmt::Write;

use alloy_primitives::{Address, B256};
use axum::response::Response;
use weiport_storage::{HistoryIndex, IndexedTransfer, Store, TokenInfo, Transfer, TransferKind};

use crate::envelope::{decimal, empty, list, method_id, ok_string};
use crate::error::{MSG_BAD_ADDRESS, QueryError, unavailable};
use crate::params::{Params, number, parse_address};
use crate::range::{Indexed, indexed_from, paging};

const MSG_BAD_CONTRACT: &str = "Error! Invalid contractaddress format";
const MSG_BAD_HASH: &str = "Error! Invalid transaction hash";
const NO_TRANSACTIONS: &str = "No transactions found";

fn optional_address(
    params: &Params,
    name: &str,
    refusal: &str,
) -> Result<Option<Address>, QueryError> {
    match params.get(name) {
        None | Some("") => Ok(None),
        Some(text) => parse_address(text)
            .map(Some)
            .map_err(|_| QueryError::bad(refusal)),
    }
}

fn text(address: Option<Address>) -> String {
    address.map(|a| format!("{a:#x}")).unwrap_or_default()
}

/// `module=account&action=txlistinternal`.
pub(crate) fn txlistinternal(
    store: &Store,
    params: &Params,
    indexed: &Indexed,
) -> Result<Response, QueryError> {
    if let Some(hash) = params.get("txhash").filter(|h| !h.is_empty()) {
        return by_transaction(store, hash);
    }
    let address = match params.get("address") {
        // Without an address: every internal transfer of the block range.
        None | Some("") => None,
        Some(text) => Some(parse_address(text).map_err(|_| QueryError::bad(MSG_BAD_ADDRESS))?),
    };
    let page = match paging(params, indexed, store, HistoryIndex::Internal)? {
        Ok(page) => page,
        Err(window) => return Ok(window),
    };
    let found = match address {
        Some(address) => store.address_transfers(&address, TransferKind::Internal, page, |_| true),
        None => store.transfers_in_blocks(TransferKind::Internal, page),
    }
    .map_err(unavailable)?;
    if found.is_empty() {
        return Ok(empty(NO_TRANSACTIONS, "[]"));
    }
    Ok(list(&found, |out, entry| {
        if let Transfer::Internal(internal) = &entry.transfer {
            write_internal(out, entry, internal, true);
        }
    }))
}

/// The internal transfers of one transaction: Etherscan leaves out the hash
/// and trace id there.
fn by_transaction(store: &Store, hash: &str) -> Result<Response, QueryError> {
    let hash: B256 = hash
        .strip_prefix("0x")
        .filter(|h| h.len() == 64)
        .and_then(|h| h.parse().ok())
        .ok_or_else(|| QueryError::bad(MSG_BAD_HASH))?;
    // Refused when the history is off, like the by-address form.
    indexed_from(store, HistoryIndex::Internal)?;
    let Some((block, tx_index)) = store.transaction_position(&hash).map_err(unavailable)? else {
        return Ok(empty(NO_TRANSACTIONS, "[]"));
    };
    let transfers = store
        .transaction_transfers(block, tx_index, TransferKind::Internal)
        .map_err(unavailable)?;
    let transaction = store
        .transactions_at(std::iter::once((block, tx_index)))
        .map_err(unavailable)?
        .pop()
        .flatten();
    let (Some(transaction), false) = (transaction, transfers.is_empty()) else {
        return Ok(empty(NO_TRANSACTIONS, "[]"));
    };
    let entries: Vec<IndexedTransfer> = transfers
        .into_iter()
        .map(|transfer| IndexedTransfer {
            block,
            tx_index,
            transaction: transaction.clone(),
            transfer,
        })
        .collect();
    Ok(list(&entries, |out, entry| {
        if let Transfer::Internal(internal) = &entry.transfer {
            write_internal(out, entry, internal, false);
        }
    }))
}

/// One `txlistinternal` entry in Etherscan's field order.
fn write_internal(
    out: &mut String,
    entry: &IndexedTransfer,
    internal: &weiport_storage::InternalTransfer,
    with_hash: bool,
) {
    let _ = write!(
        out,
        r#"{{"blockNumber":"{}","timeStamp":"{}","#,
        entry.block, entry.transaction.timestamp
    );
    if with_hash {
        let _ = write!(out, r#""hash":"{:#x}","#, entry.transaction.hash);
    }
    let _ = write!(
        out,
        r#""from":"{:#x}","to":"{}","value":"{}","contractAddress":"{}","input":"","type":"{}","gas":"{}","gasUsed":"{}","#,
        internal.from,
        text(internal.to),
        internal.value,
        text(internal.contract_address),
        internal.call_type,
        internal.gas,
        internal.gas_used,
    );
    if with_hash {
        let _ = write!(out, r#""traceId":"{}","#, internal.trace_id);
    }
    let error = internal.error.as_deref().unwrap_or("");
    let _ = write!(
        out,
        r#""isError":"{}","errCode":{}}}"#,
        u8::from(internal.error.is_some()),
        serde_json::Value::from(error),
    );
}

/// `module=account&action=getminedblocks` (`blocktype=blocks`; uncles,
/// which a proof-of-stake chain has none of, list nothing) and
/// `txsBeaconWithdrawal`: rows of whole blocks listed under the address.
pub(crate) fn block_rows(
    store: &Store,
    params: &Params,
    indexed: &Indexed,
    withdrawals: bool,
) -> Result<Response, QueryError> {
    let address = parse_address(params.get("address").unwrap_or(""))
        .map_err(|_| QueryError::bad(MSG_BAD_ADDRESS))?;
    if !withdrawals {
        match params.get("blocktype") {
            None | Some("") | Some("blocks") => {}
            Some("uncles") => return Ok(empty(NO_TRANSACTIONS, "[]")),
            Some(_) => return Err(QueryError::bad("Error! Invalid blocktype")),
        }
    }
    let page = match paging(params, indexed, store, HistoryIndex::Blocks)? {
        Ok(page) => page,
        Err(window) => return Ok(window),
    };
    let listing = if withdrawals {
        TransferKind::Withdrawal
    } else {
        TransferKind::Mined
    };
    let found = store
        .address_listing(&address, listing, page, |_| true)
        .map_err(unavailable)?;
    if found.is_empty() {
        return Ok(empty(NO_TRANSACTIONS, "[]"));
    }
    Ok(list(&found, |out, (block, _, row)| match row {
        Transfer::Mined(_, mined) => {
            let reward = mined.reward.map(|r| r.to_string()).unwrap_or_default();
            let _ = write!(
                out,
                r#"{{"blockNumber":"{block}","timeStamp":"{}","blockReward":"{reward}"}}"#,
                mined.timestamp
            );
        }
        Transfer::Withdrawal(to, w) => {
            let _ = write!(
                out,
                r#"{{"withdrawalIndex":"{}","validatorIndex":"{}","address":"{to:#x}","amount":"{}","blockNumber":"{block}","timestamp":"{}"}}"#,
                w.index, w.validator, w.amount_gwei, w.timestamp
            );
        }
        _ => {}
    }))
}

/// `module=account&action=addresstokennftbalance` (each ERC-721 collection
/// the address holds tokens of, and how many) and `addresstokennftinventory`
/// (the ids it holds of one collection): from what `ownerOf` answered after
/// each block that moved a token; `page` and `offset` (100 by default, at
/// most 1,000).
pub(crate) fn nft_holdings(
    store: &Store,
    params: &Params,
    inventory: bool,
) -> Result<Response, QueryError> {
    let holder = parse_address(params.get("address").unwrap_or(""))
        .map_err(|_| QueryError::bad(MSG_BAD_ADDRESS))?;
    let contract = if inventory {
        Some(
            optional_address(params, "contractaddress", MSG_BAD_CONTRACT)?
                .ok_or_else(|| QueryError::bad(MSG_BAD_CONTRACT))?,
        )
    } else {
        None
    };
    indexed_from(store, HistoryIndex::Nfts)?;
    let page = number(params, "page", 1)?.max(1);
    let offset = number(params, "offset", 100)?.clamp(1, 1_000) as usize;
    let skip = usize::try_from(page - 1)
        .unwrap_or(usize::MAX)
        .saturating_mul(offset);
    let standard = weiport_storage::NftStandard::Erc721;
    if inventory {
        let held = store
            .nft_holdings(&holder, contract.as_ref(), standard, (skip, offset))
            .map_err(unavailable)?;
        return Ok(list(&held, |out, holding| {
            let _ = write!(
                out,
                r#"{{"TokenAddress":"{:#x}","TokenId":"{}"}}"#,
                holding.contract, holding.token_id
            );
        }));
    }
    // Per collection: how many of its tokens are held, by contract address.
    let mut counts: Vec<(Address, u64)> = Vec::new();
    for holding in store
        .nft_holdings(&holder, None, standard, (0, 100_000))
        .map_err(unavailable)?
    {
        match counts.last_mut() {
            Some((contract, count)) if *contract == holding.contract => *count += 1,
            _ => counts.push((holding.contract, 1)),
        }
    }
    let mut infos = TokenInfos::new(store);
    let mut entries = Vec::new();
    for (contract, count) in counts.into_iter().skip(skip).take(offset) {
        entries.push((contract, count, infos.get(&contract)?));
    }
    Ok(list(&entries, |out, (contract, count, info)| {
        let _ = write!(
            out,
            r#"{{"TokenAddress":"{contract:#x}","TokenName":{},"TokenSymbol":{},"TokenQuantity":"{count}"}}"#,
            serde_json::Value::from(info.name.as_str()),
            serde_json::Value::from(info.symbol.as_str()),
        );
    }))
}

/// A page of token transfers of one standard by `address`, by contract
/// (`contractaddress`), or both: the address's list (`by_address`) kept to
/// that contract, or the contract's own list (`by_contract`).
fn token_page(
    store: &Store,
    params: &Params,
    indexed: &Indexed,
    (history, by_address, by_contract): (HistoryIndex, TransferKind, TransferKind),
) -> Result<Result<Vec<IndexedTransfer>, Response>, QueryError> {
    let address = optional_address(params, "address", MSG_BAD_ADDRESS)?;
    let token = optional_address(params, "contractaddress", MSG_BAD_CONTRACT)?;
    let page = match paging(params, indexed, store, history)? {
        Ok(page) => page,
        Err(window) => return Ok(Err(window)),
    };
    let contract_of = |t: &Transfer| match t {
        Transfer::Token(t) => Some(t.token),
        Transfer::Nft(t) | Transfer::MultiToken(t) => Some(t.token),
        _ => None,
    };
    let found = match (address, token) {
        (Some(address), token) => store.address_transfers(&address, by_address, page, |t| {
            token.is_none_or(|token| contract_of(t) == Some(token))
        }),
        (None, Some(token)) => store.address_transfers(&token, by_contract, page, |_| true),
        (None, None) => return Err(QueryError::bad(MSG_BAD_ADDRESS)),
    }
    .map_err(unavailable)?;
    if found.is_empty() {
        return Ok(Err(empty(NO_TRANSACTIONS, "[]")));
    }
    Ok(Ok(found))
}

/// `module=account&action=tokennfttx` (ERC-721, `nft = true`) and
/// `token1155tx`: by address, by contract, or both.
pub(crate) fn nft_transfers(
    store: &Store,
    params: &Params,
    indexed: &Indexed,
    multi_token: bool,
) -> Result<Response, QueryError> {
    let kinds = if multi_token {
        (
            HistoryIndex::Nfts,
            TransferKind::MultiToken,
            TransferKind::MultiTokenContract,
        )
    } else {
        (
            HistoryIndex::Nfts,
            TransferKind::Nft,
            TransferKind::NftContract,
        )
    };
    let found = match token_page(store, params, indexed, kinds)? {
        Ok(found) => found,
        Err(answer) => return Ok(answer),
    };
    let entries = described(store, &found, |t| match t {
        Transfer::Nft(t) | Transfer::MultiToken(t) => Some((t, t.token)),
        _ => None,
    })?;
    Ok(list(&entries, |out, (entry, transfer, info)| {
        let row = &entry.transaction;
        let _ = write!(
            out,
            r#"{{"blockNumber":"{}","timeStamp":"{}","hash":"{:#x}","nonce":"{}","blockHash":"{:#x}","from":"{:#x}","contractAddress":"{:#x}","to":"{:#x}","tokenID":"{}","#,
            entry.block,
            row.timestamp,
            row.hash,
            row.nonce,
            row.block_hash,
            transfer.from,
            transfer.token,
            transfer.to,
            transfer.token_id,
        );
        if multi_token {
            let _ = write!(out, r#""tokenValue":"{}","#, transfer.value);
        }
        let _ = write!(
            out,
            r#""tokenName":{},"tokenSymbol":{},"#,
            serde_json::Value::from(info.name.as_str()),
            serde_json::Value::from(info.symbol.as_str()),
        );
        if !multi_token {
            out.push_str(r#""tokenDecimal":"0","#);
        }
        let _ = write!(
            out,
            r#""transactionIndex":"{}","gas":"{}","gasPrice":"{}","gasUsed":"{}","cumulativeGasUsed":"{}","input":"deprecated","methodId":"{}","functionName":"","confirmations":"{}"}}"#,
            entry.tx_index,
            row.gas,
            row.gas_price,
            row.gas_used,
            row.cumulative_gas_used,
            method_id(&row.input),
            indexed.head.saturating_sub(entry.block) + 1,
        );
    }))
}

/// `module=account&action=tokentx`: by address, by token, or both.
pub(crate) fn tokentx(
    store: &Store,
    params: &Params,
    indexed: &Indexed,
) -> Result<Response, QueryError> {
    let kinds = (
        HistoryIndex::Tokens,
        TransferKind::Token,
        TransferKind::TokenContract,
    );
    let found = match token_page(store, params, indexed, kinds)? {
        Ok(found) => found,
        Err(answer) => return Ok(answer),
    };
    let entries = described(store, &found, |t| match t {
        Transfer::Token(t) => Some((t, t.token)),
        _ => None,
    })?;
    Ok(list(&entries, |out, (entry, transfer, info)| {
        let row = &entry.transaction;
        let _ = write!(
            out,
            r#"{{"blockNumber":"{}","timeStamp":"{}","hash":"{:#x}","nonce":"{}","blockHash":"{:#x}","from":"{:#x}","contractAddress":"{:#x}","to":"{:#x}","value":"{}","tokenName":{},"tokenSymbol":{},"tokenDecimal":"{}","transactionIndex":"{}","gas":"{}","gasPrice":"{}","gasUsed":"{}","cumulativeGasUsed":"{}","input":"deprecated","methodId":"{}","functionName":"","confirmations":"{}"}}"#,
            entry.block,
            row.timestamp,
            row.hash,
            row.nonce,
            row.block_hash,
            transfer.from,
            transfer.token,
            transfer.to,
            transfer.value,
            serde_json::Value::from(info.name.as_str()),
            serde_json::Value::from(info.symbol.as_str()),
            info.decimals.map(|d| d.to_string()).unwrap_or_default(),
            entry.tx_index,
            row.gas,
            row.gas_price,
            row.gas_used,
            row.cumulative_gas_used,
            method_id(&row.input),
            indexed.head.saturating_sub(entry.block) + 1,
        );
    }))
}

/// Each found transfer `pick` takes (its row and its token), with the
/// token's description.
fn described<'a, T>(
    store: &Store,
    found: &'a [IndexedTransfer],
    pick: impl Fn(&'a Transfer) -> Option<(&'a T, Address)>,
) -> Result<Vec<(&'a IndexedTransfer, &'a T, TokenInfo)>, QueryError> {
    let mut infos = TokenInfos::new(store);
    let mut entries = Vec::with_capacity(found.len());
    for entry in found {
        if let Some((transfer, token)) = pick(&entry.transfer) {
            entries.push((entry, transfer, infos.get(&token)?));
        }
    }
    Ok(entries)
}

/// Token descriptions, each read once a request.
struct TokenInfos<'a> {
    store: &'a Store,
    known: HashMap<Address, TokenInfo>,
}

impl<'a> TokenInfos<'a> {
    fn new(store: &'a Store) -> Self {
        Self {
            store,
            known: HashMap::new(),
        }
    }

    fn get(&mut self, token: &Address) -> Result<TokenInfo, QueryError> {
        if let Some(info) = self.known.get(token) {
            return Ok(info.clone());
        }
        let info = self
            .store
            .token_info(token)
            .map_err(unavailable)?
            .unwrap_or_default();
        self.known.insert(*token, info.clone());
        Ok(info)
    }
}

/// `module=account&action=tokenbalance`: the holder's balance as the token
/// reported it after the newest block that moved it; "0" when none did.
pub(crate) fn tokenbalance(store: &Store, params: &Params) -> Result<Response, QueryError> {
    let token = optional_address(params, "contractaddress", MSG_BAD_CONTRACT)?
        .ok_or_else(|| QueryError::bad(MSG_BAD_CONTRACT))?;
    let holder = parse_address(params.get("address").unwrap_or(""))
        .map_err(|_| QueryError::bad(MSG_BAD_ADDRESS))?;
    indexed_from(store, HistoryIndex::Tokens)?;
    let held = store
        .token_balance(&holder, &token, None)
        .map_err(unavailable)?;
    Ok(ok_string(&decimal(
        &held.map(|h| h.balance).unwrap_or_default(),
    )))
}

/// `module=account&action=addresstokenbalance`: every token the holder
/// holds (non-zero), paged by `page` and `offset` (100 by default); none
/// is an empty list.
pub(crate) fn addresstokenbalance(store: &Store, params: &Params) -> Result<Response, QueryError> {
    let holder = parse_address(params.get("address").unwrap_or(""))
        .map_err(|_| QueryError::bad(MSG_BAD_ADDRESS))?;
    indexed_from(store, HistoryIndex::Tokens)?;
    let page = number(params, "page", 1)?.max(1);
    let offset = number(params, "offset", 100)?.clamp(1, 10_000);
    let held: Vec<_> = store
        .holder_tokens(&holder, usize::MAX)
        .map_err(unavailable)?
        .into_iter()
        .filter(|h| !h.balance.is_zero())
        .skip(((page - 1) * offset) as usize)
        .take(offset as usize)
        .collect();
    // An empty holding is an answer, not a failed search: "OK" and [].
    let mut infos = TokenInfos::new(store);
    let mut entries = Vec::with_capacity(held.len());
    for holding in held {
        let info = infos.get(&holding.token)?;
        entries.push((holding, info));
    }
    Ok(list(&entries, |out, (holding, info)| {
        let _ = write!(
            out,
            r#"{{"TokenAddress":"{:#x}","TokenName":{},"TokenSymbol":{},"TokenQuantity":"{}","TokenDivisor":"{}","TokenPriceUSD":"0.000000000"}}"#,
            holding.token,
            serde_json::Value::from(info.name.as_str()),
            serde_json::Value::from(info.symbol.as_str()),
            holding.balance,
            info.decimals.map(|d| d.to_string()).unwrap_or_default(),
        );
    }))
}
