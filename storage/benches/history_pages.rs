//! `txlist` pages of an address with 100,000 transactions: the storage read
//! behind each page (iterator over the address's list, batched point reads
//! of the rows), against the latest-balance point read behind Etherscan's
//! `balance` in the same store as the baseline.
//!
//! `scripts/bench.sh history_pages`

use std::hint::black_box;

use alloy_primitives::{Address, B256, U256};
use criterion::{Criterion, criterion_group, criterion_main};
use weiport_storage::{HistoryPage, Store, TransactionRow};

const BUSY_TRANSACTIONS: u64 = 100_000;
const PER_BLOCK: u64 = 20;

fn row(from: Address, to: Address, nonce: u64, block: u64) -> TransactionRow {
    TransactionRow {
        hash: B256::from(U256::from(nonce)),
        from,
        to: Some(to),
        contract_address: None,
        value: U256::from(nonce) * U256::from(1_000_000_007u64),
        nonce,
        gas: 21_000,
        gas_price: 1_000_000_007,
        gas_used: 21_000,
        cumulative_gas_used: 21_000 * (nonce % PER_BLOCK + 1),
        success: true,
        input: Vec::new(),
        timestamp: 1_700_000_000 + block * 12,
        block_hash: B256::from(U256::from(block)),
    }
}

/// A store where `busy` sends every other transaction of each block (so
/// 100,000 in all) and 100,000 other addresses send the rest.
fn store(dir: &std::path::Path, busy: Address) -> Store {
    let store = Store::open(dir, &Default::default()).unwrap();
    let blocks = BUSY_TRANSACTIONS * 2 / PER_BLOCK;
    let mut nonce = 0;
    let mut block = 1;
    while block <= blocks {
        let mut batch = store.index_batch();
        for _ in 0..500 {
            for index in 0..PER_BLOCK {
                let other = Address::from_word(B256::from(U256::from(block * PER_BLOCK + index)));
                let (from, to) = if index % 2 == 0 {
                    (busy, other)
                } else {
                    (other, Address::repeat_byte(7))
                };
                nonce += 1;
                batch.put_transaction(block, index as u32, &row(from, to, nonce, block));
            }
            batch.set_balance(&busy, block, &U256::from(block));
            block += 1;
        }
        batch.commit().unwrap();
    }
    store.flush().unwrap();
    store.compact();
    store
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let busy = Address::repeat_byte(0xb5);
    let store = store(dir.path(), busy);
    let page = |descending: bool, skip: usize, take: usize| HistoryPage {
        from_block: 0,
        to_block: u64::MAX,
        descending,
        skip,
        take,
    };
    let all = store
        .address_transactions(&busy, page(false, 0, usize::MAX))
        .unwrap();
    assert_eq!(all.len() as u64, BUSY_TRANSACTIONS);
    let mut group = c.benchmark_group("history_pages");
    group.bench_function("balance (baseline)", |b| {
        b.iter(|| black_box(store.balance(black_box(&busy)).unwrap()))
    });
    for (name, descending, skip, take) in [
        ("txlist 100, oldest first", false, 0, 100),
        ("txlist 100, newest first", true, 0, 100),
        ("txlist page 100 of 100 (skips 9,900)", false, 9_900, 100),
        ("txlist 10,000 (the whole window)", false, 0, 10_000),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let found = store
                    .address_transactions(black_box(&busy), page(descending, skip, take))
                    .unwrap();
                assert_eq!(found.len(), take);
                black_box(found)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
