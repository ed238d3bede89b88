//! What the indexer asks of the node: where balance changes and receipts
//! come from and how state at a block is read, chosen once by probing it.

use alloy_primitives::B256;
use serde::Deserialize;

use crate::node::StateAt;

/// How balance changes are obtained from the node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BalanceSource {
    /// `debug_traceBlockByNumber` with `prestateTracer` in diff mode.
    Prestate,
    /// `trace_replayBlockTransactions` with `stateDiff`.
    StateDiff,
    /// `debug_traceTransaction` struct logs (the default tracer, which every
    /// dev node has): every address a transaction can move value to or from
    /// (value calls, creations, self-destruct beneficiaries, sender,
    /// recipient, coinbase) re-read at the block. Exact: the numbers are
    /// the node's own.
    StructLogs,
    /// Re-read the balances of addresses seen in receipts, the coinbase and
    /// withdrawals. Misses internal transfers to otherwise untouched addresses.
    Touched,
}

impl std::fmt::Display for BalanceSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Prestate => "debug_traceBlockByNumber prestateTracer (diff mode)",
            Self::StateDiff => "trace_replayBlockTransactions stateDiff",
            Self::StructLogs => {
                "debug_traceTransaction struct logs, value-moving addresses re-read"
            }
            Self::Touched => "touched addresses re-read with eth_getBalance (degraded)",
        })
    }
}

/// Where a block's receipts come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReceiptSource {
    /// `eth_getBlockReceipts`, one call a block.
    Block,
    /// `eth_getTransactionReceipt` for each transaction, in one batch.
    PerTransaction,
}

/// How state at a block is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateReads {
    /// By block hash (EIP-1898): immune to a reorganisation.
    ByHash,
    /// By number, with the block's hash checked before and after the reads,
    /// so a reorganisation in between is seen and the block fetched again.
    ByNumber,
}

/// What the indexer asks of the node, chosen once by probing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodePlan {
    /// Where balance changes come from.
    pub balances: BalanceSource,
    /// Where receipts come from.
    pub receipts: ReceiptSource,
    /// How state at a block is read.
    pub state: StateReads,
    /// Whether `debug_traceBlockByNumber` takes `callTracer` (internal
    /// transfers for `txlistinternal`).
    pub call_traces: bool,
}

impl NodePlan {
    /// The reference to state at `block`, as this node takes it.
    pub fn state_at(&self, number: u64, hash: B256) -> StateAt {
        match self.state {
            StateReads::ByHash => StateAt::Hash(hash),
            StateReads::ByNumber => StateAt::Number(number),
        }
    }
}

impl std::fmt::Display for NodePlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let receipts = match self.receipts {
            ReceiptSource::Block => "eth_getBlockReceipts",
            ReceiptSource::PerTransaction => "eth_getTransactionReceipt per transaction",
        };
        let state = match self.state {
            StateReads::ByHash => "by block hash (EIP-1898)",
            StateReads::ByNumber => "by block number, hash checked before and after",
        };
        let calls = if self.call_traces {
            "callTracer"
        } else {
            "none (no internal transfers)"
        };
        write!(
            f,
            "balances: {}; receipts: {receipts}; state: {state}; call traces: {calls}",
            self.balances
        )
    }
}
