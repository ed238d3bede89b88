//! The reads behind `tokennfttx`, `tokenholderlist` and
//! `getcontractcreation` in a store of 10,000 and of 1,000,000 indexed
//! ERC-721 transfers: each answer should cost about the same whatever the
//! size of what is indexed around it (one seek and a page of rows).
//!
//! Each store: one collection created by a transaction in block 1, then
//! `size` transfers of it, one a transaction, among 50 holders (so each
//! holder has `size / 25` in its list), and the ERC-20 balances of 10,000
//! holders of one token, each moved `size / 10,000` times.
//!
//! `scripts/bench.sh transfer_reads`

use std::hint::black_box;

use alloy_primitives::{Address, B256, U256};
use criterion::{Criterion, criterion_group, criterion_main};
use weiport_storage::{HistoryPage, NftTransfer, Store, TransactionRow, Transfer, TransferKind};

const PER_BLOCK: u64 = 100;
const HOLDERS: u64 = 50;
const TOKEN_HOLDERS: u64 = 10_000;

fn address(n: u64) -> Address {
    Address::from_word(B256::from(U256::from(n + 1_000_000)))
}

fn row(from: Address, to: Option<Address>, nonce: u64, block: u64) -> TransactionRow {
    TransactionRow {
        hash: B256::from(U256::from(nonce)),
        from,
        to,
        contract_address: to.is_none().then(|| Address::repeat_byte(0xc0)),
        value: U256::ZERO,
        nonce,
        gas: 80_000,
        gas_price: 1_000_000_007,
        gas_used: 60_000,
        cumulative_gas_used: 60_000,
        success: true,
        input: vec![0x23, 0xb8, 0x72, 0xdd],
        timestamp: 1_700_000_000 + block * 12,
        block_hash: B256::from(U256::from(block)),
    }
}

/// A store holding the collection's creation and `size` transfers.
fn store(dir: &std::path::Path, size: u64) -> Store {
    let store = Store::open(dir, &Default::default()).unwrap();
    let collection = Address::repeat_byte(0xc0);
    let token = Address::repeat_byte(0x70);
    let mut batch = store.index_batch();
    batch.put_transaction(1, 0, &row(address(0), None, 0, 1));
    batch.commit().unwrap();
    let mut sent = 0u64;
    let mut block = 2;
    while sent < size {
        let mut batch = store.index_batch();
        for _ in 0..100 {
            for index in 0..PER_BLOCK {
                if sent == size {
                    break;
                }
                let (from, to) = (address(sent % HOLDERS), address((sent + 1) % HOLDERS));
                sent += 1;
                batch.put_transaction(
                    block,
                    index as u32,
                    &row(from, Some(collection), sent, block),
                );
                let transfer = Transfer::Nft(NftTransfer {
                    token: collection,
                    from,
                    to,
                    token_id: U256::from(sent % 5_000),
                    value: U256::from(1),
                    operator: None,
                    log_index: index as u32,
                });
                batch.put_transfers(block, index as u32, &[transfer]);
                let holder = address(sent % TOKEN_HOLDERS);
                batch.put_token_balance(&holder, &token, block, &U256::from(sent));
            }
            block += 1;
        }
        batch.commit().unwrap();
    }
    store.flush().unwrap();
    store.compact();
    store
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("transfer_reads");
    group.sample_size(50);
    let collection = Address::repeat_byte(0xc0);
    let token = Address::repeat_byte(0x70);
    let newest = |take| HistoryPage {
        from_block: 0,
        to_block: u64::MAX,
        descending: true,
        skip: 0,
        take,
    };
    for size in [10_000u64, 1_000_000] {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path(), size);
        let label = if size >= 1_000_000 { "1M" } else { "10k" };
        group.bench_function(
            format!("tokennfttx by contract, 100 newest ({label})"),
            |b| {
                b.iter(|| {
                    let found = store
                        .address_transfers(
                            &collection,
                            TransferKind::NftContract,
                            newest(100),
                            |_| true,
                        )
                        .unwrap();
                    assert_eq!(found.len(), 100);
                    black_box(found)
                })
            },
        );
        group.bench_function(format!("tokennfttx by holder, 100 newest ({label})"), |b| {
            b.iter(|| {
                let found = store
                    .address_transfers(&address(7), TransferKind::Nft, newest(100), |_| true)
                    .unwrap();
                black_box(found)
            })
        });
        group.bench_function(format!("tokenholderlist, page of 100 ({label})"), |b| {
            b.iter(|| {
                let found = store.token_holders(&token, (0, 100)).unwrap();
                assert_eq!(found.len(), 100);
                black_box(found)
            })
        });
        // getcontractcreation: the contract's first page of transactions,
        // and its first internal creation, if any.
        group.bench_function(format!("getcontractcreation ({label})"), |b| {
            b.iter(|| {
                let oldest = HistoryPage {
                    descending: false,
                    take: 64,
                    ..newest(64)
                };
                let direct = store.address_transactions(&collection, oldest).unwrap();
                assert_eq!(direct[0].row.contract_address, Some(collection));
                let internal = store
                    .address_transfers(&collection, TransferKind::Internal, newest(1), |_| true)
                    .unwrap();
                black_box((direct, internal))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
