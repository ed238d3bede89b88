//! What the wallet asks of the node, and the transactions it signs: plain
//! EIP-1559 value transfers.

use alloy::consensus::{SignableTransaction, TxEip1559, TxEnvelope};
use alloy::eips::Encodable2718;
use alloy::signers::SignerSync;
use alloy::signers::local::PrivateKeySigner;
use alloy_primitives::{Address, B256, Bytes, TxKind, U256};
use serde_json::Value;
use weiport_indexer::{NodeClient, NodeError};

use crate::WalletError;

/// Gas of a plain value transfer to an account without code.
pub(crate) const TRANSFER_GAS: u64 = 21_000;

/// A value transfer to sign.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Transfer {
    pub(crate) chain_id: u64,
    pub(crate) nonce: u64,
    pub(crate) to: Address,
    pub(crate) value: U256,
    pub(crate) gas_limit: u64,
    pub(crate) max_fee: u128,
    pub(crate) tip: u128,
}

/// Signs `transfer`: its hash and its raw (EIP-2718) bytes.
pub(crate) fn sign(
    signer: &PrivateKeySigner,
    transfer: &Transfer,
) -> Result<(B256, Vec<u8>), WalletError> {
    let tx = TxEip1559 {
        chain_id: transfer.chain_id,
        nonce: transfer.nonce,
        gas_limit: transfer.gas_limit,
        max_fee_per_gas: transfer.max_fee,
        max_priority_fee_per_gas: transfer.tip,
        to: TxKind::Call(transfer.to),
        value: transfer.value,
        access_list: Default::default(),
        input: Bytes::new(),
    };
    let signature = signer
        .sign_hash_sync(&tx.signature_hash())
        .map_err(|e| WalletError::Signing(e.to_string()))?;
    let envelope = TxEnvelope::from(tx.into_signed(signature));
    Ok((*envelope.hash(), envelope.encoded_2718()))
}

/// The node calls the wallet makes.
#[derive(Clone)]
pub(crate) struct Node(pub(crate) NodeClient);

/// A mined transaction as its receipt tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Mined {
    pub(crate) block: u64,
    pub(crate) success: bool,
    /// What it cost its sender in gas, Wei.
    pub(crate) gas_cost: U256,
}

fn quantity(value: &Value, field: &'static str) -> Result<U256, WalletError> {
    value
        .get(field)
        .and_then(Value::as_str)
        .and_then(|s| s.parse::<U256>().ok())
        .ok_or(WalletError::Malformed(field))
}

fn small(value: U256, field: &'static str) -> Result<u64, WalletError> {
    u64::try_from(value).map_err(|_| WalletError::Malformed(field))
}

impl Node {
    pub(crate) async fn chain_id(&self) -> Result<u64, WalletError> {
        Ok(self.0.chain_id().await?)
    }

    /// Whether this is a development node the well-known dev key may pay
    /// on: anvil's or Hardhat's chain id, or a node (an anvil started with
    /// another chain id) that holds `dev_address` among its own accounts.
    pub(crate) async fn is_dev_node(&self, chain_id: u64, dev_address: Address) -> bool {
        if chain_id == crate::DEV_CHAIN_ID {
            return true;
        }
        let accounts: Result<Vec<Address>, _> = self.0.call("eth_accounts", ()).await;
        accounts.is_ok_and(|accounts| accounts.contains(&dev_address))
    }

    /// The next nonce of `address`, counting transactions still waiting.
    pub(crate) async fn pending_nonce(&self, address: Address) -> Result<u64, WalletError> {
        let count: U256 = self
            .0
            .call("eth_getTransactionCount", (address, "pending"))
            .await?;
        small(count, "nonce")
    }

    /// The next nonce of `address` counting only mined transactions.
    pub(crate) async fn mined_nonce(&self, address: Address) -> Result<u64, WalletError> {
        let count: U256 = self
            .0
            .call("eth_getTransactionCount", (address, "latest"))
            .await?;
        small(count, "nonce")
    }

    /// Fees for a transaction that should be mined soon: (max fee, tip),
    /// the max fee covering the base fee doubling twice.
    pub(crate) async fn fees(&self) -> Result<(u128, u128), WalletError> {
        let block: Value = self
            .0
            .call("eth_getBlockByNumber", ("latest", false))
            .await?;
        let base = quantity(&block, "baseFeePerGas").unwrap_or(U256::ZERO);
        let base = u128::try_from(base).map_err(|_| WalletError::Malformed("baseFeePerGas"))?;
        let tip = match self.0.call::<_, U256>("eth_maxPriorityFeePerGas", ()).await {
            Ok(tip) => u128::try_from(tip).unwrap_or(1_000_000_000),
            Err(NodeError::Unsupported { .. }) => 1_000_000_000,
            Err(error) => return Err(error.into()),
        };
        let tip = tip.max(1);
        Ok((base.saturating_mul(2).saturating_add(tip), tip))
    }

    /// Whether `address` holds code (a contract needs more than 21,000 gas).
    pub(crate) async fn has_code(&self, address: Address) -> Result<bool, WalletError> {
        let code: Bytes = self.0.call("eth_getCode", (address, "latest")).await?;
        Ok(!code.is_empty())
    }

    /// Sends a signed transaction. A node that has it already says so, which
    /// is success: sending the same bytes again is never a second payment.
    pub(crate) async fn send_raw(&self, raw: &[u8]) -> Result<(), WalletError> {
        match self
            .0
            .call::<_, B256>("eth_sendRawTransaction", (Bytes::copy_from_slice(raw),))
            .await
        {
            Ok(_) => Ok(()),
            Err(NodeError::Rpc { message, .. })
                if message.to_ascii_lowercase().contains("already known")
                    || message.to_ascii_lowercase().contains("already imported") =>
            {
                Ok(())
            }
            Err(error) => Err(error.into()),
        }
    }

    /// The receipt of `hash`, once mined.
    pub(crate) async fn receipt(&self, hash: B256) -> Result<Option<Mined>, WalletError> {
        let receipt: Option<Value> = self.0.call("eth_getTransactionReceipt", (hash,)).await?;
        let Some(receipt) = receipt else {
            return Ok(None);
        };
        if receipt.get("blockNumber").is_none_or(Value::is_null) {
            return Ok(None);
        }
        let block = small(quantity(&receipt, "blockNumber")?, "blockNumber")?;
        let success = quantity(&receipt, "status")? == U256::from(1);
        let gas_used = quantity(&receipt, "gasUsed")?;
        let price = quantity(&receipt, "effectiveGasPrice")?;
        Ok(Some(Mined {
            block,
            success,
            gas_cost: gas_used.saturating_mul(price),
        }))
    }

    /// Whether the node knows transaction `hash` (pending or mined).
    pub(crate) async fn knows(&self, hash: B256) -> Result<bool, WalletError> {
        let tx: Option<Value> = self.0.call("eth_getTransactionByHash", (hash,)).await?;
        Ok(tx.is_some_and(|tx| !tx.is_null()))
    }

    /// Block `number`'s transactions as (hash, from, to, value), and its hash.
    pub(crate) async fn block_transfers(
        &self,
        number: u64,
    ) -> Result<Option<(B256, Vec<(B256, Address, Option<Address>, U256)>)>, WalletError> {
        let block: Option<Value> = self
            .0
            .call("eth_getBlockByNumber", (U256::from(number), true))
            .await?;
        let Some(block) = block.filter(|b| !b.is_null()) else {
            return Ok(None);
        };
        let hash = block
            .get("hash")
            .and_then(Value::as_str)
            .and_then(|h| h.parse().ok())
            .ok_or(WalletError::Malformed("hash"))?;
        let mut out = Vec::new();
        for tx in block
            .get("transactions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let field = |name: &'static str| {
                tx.get(name)
                    .and_then(Value::as_str)
                    .ok_or(WalletError::Malformed(name))
            };
            let to = match tx.get("to").and_then(Value::as_str) {
                Some(to) => Some(to.parse().map_err(|_| WalletError::Malformed("to"))?),
                None => None,
            };
            out.push((
                field("hash")?
                    .parse()
                    .map_err(|_| WalletError::Malformed("hash"))?,
                field("from")?
                    .parse()
                    .map_err(|_| WalletError::Malformed("from"))?,
                to,
                quantity(tx, "value")?,
            ));
        }
        Ok(Some((hash, out)))
    }
}
