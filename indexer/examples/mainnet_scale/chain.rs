//! A generated chain shaped like Ethereum mainnet today, recorded once in
//! memory: every block's transactions with their fees, balance changes,
//! token transfers and call frames, and the state a node would answer for
//! the reads the indexer makes after each block.
//!
//! The chain is produced by a model of the state transitions rather than
//! executed by an EVM: a dev node traces under a thousand transactions a
//! second here, which would make a ten-million-transaction chain a day's
//! work. The model keeps every balance exact, so the index it produces can
//! be checked against it.

use std::collections::HashMap;

/// Externally owned accounts that send and receive.
pub const PEOPLE: u32 = 300_000;
/// Of those, the ones funded at genesis (the senders).
pub const FUNDED: u32 = 60_000;
/// ERC-20 contracts.
pub const TOKENS: u32 = 400;
/// Contracts that forward the value they are sent (routers, wallets).
pub const ROUTERS: u32 = 60;
/// Exchange pools: a swap moves two tokens.
pub const POOLS: u32 = 200;
/// Block builders (fee recipients).
pub const BUILDERS: u32 = 8;
/// Validators' withdrawal addresses.
pub const VALIDATORS: u32 = 2_000;
/// Withdrawals a block, as on mainnet.
pub const WITHDRAWALS: usize = 16;
/// What every funded account holds at genesis: enough that the busiest
/// senders of a ten-million-transaction run never run dry.
pub const GENESIS_WEI: u128 = 1_000_000 * ETHER;
/// What every holder is deemed to hold of a token before its first
/// transfer: large enough that no transfer in the run underflows it.
pub const TOKEN_FLOAT: u128 = 10u128.pow(30);
const ETHER: u128 = 10u128.pow(18);
const GWEI: u128 = 10u128.pow(9);
/// The account that takes part in about one transaction in fifty: an
/// exchange's hot wallet, the address whose history pages are measured.
pub const BUSY: u32 = 0;

/// Where each kind of account starts in the id space.
const TOKEN_BASE: u32 = PEOPLE;
const ROUTER_BASE: u32 = TOKEN_BASE + TOKENS;
const POOL_BASE: u32 = ROUTER_BASE + ROUTERS;
const BUILDER_BASE: u32 = POOL_BASE + POOLS;
const VALIDATOR_BASE: u32 = BUILDER_BASE + BUILDERS;
/// Contracts created during the run take ids from here on.
pub const CREATED_BASE: u32 = VALIDATOR_BASE + VALIDATORS;
/// No account (a creation's recipient).
pub const NOBODY: u32 = u32::MAX;

/// A deterministic 64-bit mix (splitmix64).
pub fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// 32 pseudo-random bytes named by `(domain, a, b)`.
pub fn word(domain: u64, a: u64, b: u64) -> [u8; 32] {
    let mut out = [0u8; 32];
    let mut state = mix(domain ^ mix(a ^ mix(b)));
    for chunk in out.chunks_mut(8) {
        state = mix(state);
        chunk.copy_from_slice(&state.to_le_bytes());
    }
    out
}

/// The address of account `id`.
pub fn address(id: u32) -> [u8; 20] {
    let mut out = [0u8; 20];
    out.copy_from_slice(&word(1, u64::from(id), 0)[..20]);
    out
}

/// The hash of block `number`: pseudo-random, with the number in its last
/// eight bytes so that a read by hash finds its block without a map.
pub fn block_hash(number: u64) -> [u8; 32] {
    let mut hash = word(2, number, 0);
    hash[24..].copy_from_slice(&number.to_be_bytes());
    hash
}

/// The block a hash names, if it is one of this chain's.
pub fn block_of_hash(hash: &[u8; 32]) -> Option<u64> {
    let number = u64::from_be_bytes(hash[24..].try_into().expect("8 bytes"));
    (block_hash(number) == *hash).then_some(number)
}

/// The hash of transaction `index` of block `number`.
pub fn transaction_hash(number: u64, index: usize) -> [u8; 32] {
    word(3, number, index as u64)
}

/// What a transaction does.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// Ether from one account to another.
    Plain,
    /// An ERC-20 `transfer(to, amount)` sent to `token`.
    Token { token: u32, to: u32, amount: u128 },
    /// A call that forwards its value to `to` (an internal transfer).
    Forward { to: u32 },
    /// A swap at a pool: `amount_in` of `token_in` from the sender to the
    /// pool, `amount_out` of `token_out` back.
    Swap {
        token_in: u32,
        token_out: u32,
        amount_in: u128,
        amount_out: u128,
    },
    /// A contract creation: the new contract's id.
    Create { created: u32 },
    /// A token transfer that reverted: only the fee moved.
    Reverted,
}

/// One transaction and what it changed.
#[derive(Debug, Clone)]
pub struct Tx {
    /// Sender.
    pub from: u32,
    /// Recipient (`NOBODY` for a creation).
    pub to: u32,
    /// What it does.
    pub kind: Kind,
    /// Ether sent with it.
    pub value: u128,
    /// The sender's nonce.
    pub nonce: u32,
    /// Gas it used.
    pub gas_used: u32,
    /// Priority fee per gas, in Wei.
    pub tip: u32,
    /// `(account, balance before, balance after)` for every account whose
    /// ether it changed, sender first.
    pub changes: Box<[(u32, u128, u128)]>,
}

impl Tx {
    /// The gas limit it was sent with.
    pub fn gas_limit(&self) -> u64 {
        u64::from(self.gas_used) * 5 / 4 + 1_000
    }
}

/// One block.
#[derive(Debug, Clone)]
pub struct Block {
    /// Seconds since the epoch.
    pub timestamp: u64,
    /// Base fee per gas, in Wei.
    pub base_fee: u64,
    /// The fee recipient.
    pub builder: u32,
    /// Its transactions.
    pub txs: Vec<Tx>,
    /// `(validator index, account, gwei)` credited after the transactions.
    pub withdrawals: Vec<(u32, u32, u64)>,
    /// The withdrawal accounts' balances after the block, by withdrawal.
    pub withdrawn_after: Vec<u128>,
    /// `(token, holder, balance)` after the block for every pair its
    /// transfers touched, sorted.
    pub tokens_after: Vec<(u32, u32, u128)>,
}

impl Block {
    /// The first withdrawal index of the block (they count up through the chain).
    pub fn first_withdrawal(number: u64) -> u64 {
        (number - 1) * WITHDRAWALS as u64
    }
}

/// The recorded chain.
pub struct Chain {
    /// Blocks 1..; genesis has none of its own.
    pub blocks: Vec<Block>,
    /// Every account's ether at the end.
    pub final_wei: Vec<u128>,
    /// Every (token, holder) balance at the end.
    pub final_tokens: HashMap<(u32, u32), u128>,
    /// Accounts in use (ids below this one exist).
    pub accounts: u32,
    /// Transactions in all.
    pub transactions: u64,
}

/// A small, fast pseudo-random stream.
struct Dice(u64);

impl Dice {
    fn next(&mut self) -> u64 {
        self.0 = mix(self.0);
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// Skewed towards small ids: a few accounts and tokens are busy, most
    /// are quiet, as on mainnet.
    fn skewed(&mut self, n: u32) -> u32 {
        let unit = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        ((unit * unit * unit) * f64::from(n)) as u32 % n
    }
}

impl Chain {
    /// Records a chain of about `transactions` transactions, 150 to 200 a block.
    pub fn generate(transactions: u64) -> Self {
        let mut dice = Dice(0x5eed);
        let mut wei: Vec<u128> = (0..CREATED_BASE)
            .map(|id| if id < FUNDED { GENESIS_WEI } else { 0 })
            .collect();
        let mut nonces: Vec<u32> = vec![0; CREATED_BASE as usize];
        let mut tokens: HashMap<(u32, u32), u128> = HashMap::new();
        let mut blocks = Vec::new();
        let mut made = 0u64;
        let mut accounts = CREATED_BASE;
        let mut timestamp = 1_700_000_000u64;
        while made < transactions {
            timestamp += 12;
            let base_fee = 8 * GWEI as u64 + dice.below(20 * GWEI as u64);
            let builder = BUILDER_BASE + dice.skewed(BUILDERS);
            let count = 150 + dice.below(51) as usize;
            let mut txs = Vec::with_capacity(count);
            let mut touched_tokens: Vec<(u32, u32)> = Vec::new();
            for _ in 0..count {
                // One sender in fifty is the busy account; the rest are
                // funded accounts, busy ones more often.
                let from = if dice.below(50) == 0 {
                    BUSY
                } else {
                    1 + dice.skewed(FUNDED - 1)
                };
                let recipient = |dice: &mut Dice| {
                    if dice.below(50) == 0 {
                        BUSY
                    } else {
                        dice.below(u64::from(PEOPLE)) as u32
                    }
                };
                let roll = dice.below(1000);
                let (kind, to, value, gas_used) = match roll {
                    0..330 => {
                        let token = TOKEN_BASE + dice.skewed(TOKENS);
                        let to = recipient(&mut dice);
                        let amount = u128::from(dice.next() % 1_000_000) * 10u128.pow(15);
                        (Kind::Token { token, to, amount }, token, 0, 52_000)
                    }
                    330..450 => {
                        let router = ROUTER_BASE + dice.skewed(ROUTERS);
                        let to = recipient(&mut dice);
                        let value = u128::from(dice.next() % 50_000) * 10u128.pow(11) + 1;
                        (Kind::Forward { to }, router, value, 38_000)
                    }
                    450..530 => {
                        let pool = POOL_BASE + dice.skewed(POOLS);
                        let token_in = TOKEN_BASE + dice.skewed(TOKENS);
                        let token_out = TOKEN_BASE + (token_in - TOKEN_BASE + 1) % TOKENS;
                        let amount_in = u128::from(dice.next() % 1_000_000) * 10u128.pow(14);
                        let amount_out = amount_in / 3 + 1;
                        let kind = Kind::Swap {
                            token_in,
                            token_out,
                            amount_in,
                            amount_out,
                        };
                        (kind, pool, 0, 140_000)
                    }
                    530..540 => {
                        let created = accounts;
                        accounts += 1;
                        wei.push(0);
                        nonces.push(0);
                        (Kind::Create { created }, NOBODY, 0, 600_000)
                    }
                    540..560 => {
                        let token = TOKEN_BASE + dice.skewed(TOKENS);
                        (Kind::Reverted, token, 0, 30_000)
                    }
                    _ => {
                        let to = recipient(&mut dice);
                        let value = u128::from(dice.next() % 100_000) * 10u128.pow(11) + 1;
                        (Kind::Plain, to, value, 21_000)
                    }
                };
                let tip = (GWEI as u64 / 10 + dice.below(2 * GWEI as u64)) as u32;
                let fee = u128::from(gas_used) * (u128::from(base_fee) + u128::from(tip));
                let nonce = nonces[from as usize];
                nonces[from as usize] += 1;
                let mut changes: Vec<(u32, u128, u128)> = Vec::with_capacity(3);
                let mut move_wei = |id: u32, delta: i128, changes: &mut Vec<(u32, u128, u128)>| {
                    let before = wei[id as usize];
                    let after = before
                        .checked_add_signed(delta)
                        .expect("no account overdrawn");
                    wei[id as usize] = after;
                    match changes.iter_mut().find(|(a, _, _)| *a == id) {
                        Some(change) => change.2 = after,
                        None => changes.push((id, before, after)),
                    }
                };
                move_wei(from, -((fee + value) as i128), &mut changes);
                match kind {
                    Kind::Plain => move_wei(to, value as i128, &mut changes),
                    Kind::Forward { to: end } => move_wei(end, value as i128, &mut changes),
                    _ => {}
                }
                move_wei(
                    builder,
                    (u128::from(gas_used) * u128::from(tip)) as i128,
                    &mut changes,
                );
                changes.retain(|(_, before, after)| before != after);
                let mut move_token = |token: u32, from: u32, to: u32, amount: u128| {
                    *tokens.entry((token, from)).or_insert(TOKEN_FLOAT) -= amount;
                    *tokens.entry((token, to)).or_insert(TOKEN_FLOAT) += amount;
                    touched_tokens.push((token, from));
                    touched_tokens.push((token, to));
                };
                match kind {
                    Kind::Token { token, to, amount } => move_token(token, from, to, amount),
                    Kind::Swap {
                        token_in,
                        token_out,
                        amount_in,
                        amount_out,
                    } => {
                        move_token(token_in, from, to, amount_in);
                        move_token(token_out, to, from, amount_out);
                    }
                    _ => {}
                }
                txs.push(Tx {
                    from,
                    to,
                    kind,
                    value,
                    nonce,
                    gas_used,
                    tip,
                    changes: changes.into_boxed_slice(),
                });
            }
            let mut withdrawals = Vec::with_capacity(WITHDRAWALS);
            let mut withdrawn_after = Vec::with_capacity(WITHDRAWALS);
            for _ in 0..WITHDRAWALS {
                let validator = dice.below(u64::from(VALIDATORS)) as u32;
                let gwei = 10_000_000 + dice.below(40_000_000);
                let account = VALIDATOR_BASE + validator;
                wei[account as usize] += u128::from(gwei) * GWEI;
                withdrawals.push((validator, account, gwei));
            }
            for (_, account, _) in &withdrawals {
                withdrawn_after.push(wei[*account as usize]);
            }
            touched_tokens.sort_unstable();
            touched_tokens.dedup();
            let tokens_after = touched_tokens
                .into_iter()
                .map(|(token, holder)| (token, holder, tokens[&(token, holder)]))
                .collect();
            made += txs.len() as u64;
            blocks.push(Block {
                timestamp,
                base_fee,
                builder,
                txs,
                withdrawals,
                withdrawn_after,
                tokens_after,
            });
        }
        Self {
            blocks,
            final_wei: wei,
            final_tokens: tokens,
            accounts,
            transactions: made,
        }
    }

    /// The highest block.
    pub fn head(&self) -> u64 {
        self.blocks.len() as u64
    }

    /// Block `number` (1..=head).
    pub fn block(&self, number: u64) -> Option<&Block> {
        let index = usize::try_from(number.checked_sub(1)?).ok()?;
        self.blocks.get(index)
    }

    /// Transactions in blocks 1..=`block`.
    pub fn transactions_through(&self, block: u64) -> u64 {
        self.blocks
            .iter()
            .take(usize::try_from(block).unwrap_or(usize::MAX))
            .map(|b| b.txs.len() as u64)
            .sum()
    }

    /// The block that holds transaction number `n` (counted from the first
    /// block's first): where an index of `n` transactions ends.
    pub fn block_after_transactions(&self, n: u64) -> u64 {
        let mut seen = 0u64;
        for (index, block) in self.blocks.iter().enumerate() {
            seen += block.txs.len() as u64;
            if seen >= n {
                return index as u64 + 1;
            }
        }
        self.head()
    }
}

/// Whether account `id` is a token contract.
pub fn is_token(id: u32) -> bool {
    (TOKEN_BASE..TOKEN_BASE + TOKENS).contains(&id)
}

/// The account with this address, among the first `accounts` ids. Built
/// once: a map over every address of the chain.
pub fn address_book(accounts: u32) -> HashMap<[u8; 20], u32> {
    (0..accounts).map(|id| (address(id), id)).collect()
}
