use alloy_primitives::B256;

use super::*;

fn transaction(from: u8, nonce: u64) -> TransactionRow {
    TransactionRow {
        hash: B256::repeat_byte(nonce as u8),
        from: Address::repeat_byte(from),
        to: Some(Address::repeat_byte(0xee)),
        contract_address: None,
        value: U256::ZERO,
        nonce,
        gas: 90_000,
        gas_price: 7,
        gas_used: 50_000,
        cumulative_gas_used: 50_000,
        success: true,
        input: vec![0xa9, 0x05, 0x9c, 0xbb],
        timestamp: 1_700_000_000,
        block_hash: B256::repeat_byte(0xbb),
    }
}

fn token(from: u8, to: u8, value: u64, log_index: u32) -> Transfer {
    Transfer::Token(TokenTransfer {
        token: Address::repeat_byte(0xee),
        from: Address::repeat_byte(from),
        to: Address::repeat_byte(to),
        value: U256::from(value),
        log_index,
    })
}

fn internal(from: u8, to: u8, value: u64, trace_id: &str) -> Transfer {
    Transfer::Internal(InternalTransfer {
        from: Address::repeat_byte(from),
        to: Some(Address::repeat_byte(to)),
        value: U256::from(value),
        contract_address: None,
        input: vec![],
        call_type: "call".into(),
        gas: 2300,
        gas_used: 0,
        trace_id: trace_id.into(),
        error: Some("out of gas".into()),
    })
}

fn all() -> HistoryPage {
    HistoryPage {
        from_block: 0,
        to_block: u64::MAX,
        descending: false,
        skip: 0,
        take: usize::MAX,
    }
}

#[test]
fn transfers_list_under_their_addresses_and_undo_with_their_block() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), &Default::default()).unwrap();
    let (one, two, three, tkn) = (
        Address::repeat_byte(1),
        Address::repeat_byte(2),
        Address::repeat_byte(3),
        Address::repeat_byte(0xee),
    );
    let mut batch = store.index_batch();
    batch.put_transaction(1, 0, &transaction(1, 0));
    batch.put_transfers(1, 0, &[token(1, 2, 10, 0), internal(0xee, 3, 5, "0")]);
    batch.put_token_balance(&one, &tkn, 1, &U256::from(90));
    batch.put_token_balance(&two, &tkn, 1, &U256::from(10));
    batch.put_transaction(2, 0, &transaction(2, 1));
    let nft = |standard: u8, to: u8, id: u64, value: u64| {
        let transfer = NftTransfer {
            token: Address::repeat_byte(0xaa),
            from: Address::ZERO,
            to: Address::repeat_byte(to),
            token_id: U256::from(id),
            value: U256::from(value),
            operator: (standard == 2).then(|| Address::repeat_byte(9)),
            log_index: 7,
        };
        match standard {
            1 => Transfer::Nft(transfer),
            _ => Transfer::MultiToken(transfer),
        }
    };
    batch.put_transfers(
        2,
        BLOCK_LEVEL,
        &[
            Transfer::Mined(
                three,
                MinedBlock {
                    timestamp: 12,
                    reward: Some(U256::from(33)),
                },
            ),
            Transfer::Withdrawal(
                two,
                BeaconWithdrawal {
                    index: 1,
                    validator: 2,
                    amount_gwei: 44,
                    timestamp: 12,
                },
            ),
        ],
    );
    batch.put_transfers(
        2,
        0,
        &[
            token(2, 1, 4, 0),
            token(2, 3, 1, 1),
            nft(1, 3, 42, 1),
            nft(2, 3, 7, 5),
            nft(2, 1, 8, 6),
        ],
    );
    batch.put_token_balance(&one, &tkn, 2, &U256::from(94));
    batch.put_token_balance(&two, &tkn, 2, &U256::from(5));
    batch.put_token_balance(&three, &tkn, 2, &U256::from(1));
    batch.commit().unwrap();

    let values = |address: &Address, listing, page| -> Vec<(u64, U256)> {
        store
            .address_transfers(address, listing, page, |_| true)
            .unwrap()
            .into_iter()
            .map(|t| match t.transfer {
                Transfer::Token(token) => (t.block, token.value),
                Transfer::Internal(internal) => (t.block, internal.value),
                Transfer::Nft(nft) | Transfer::MultiToken(nft) => (t.block, nft.token_id),
                Transfer::Mined(_, mined) => (t.block, mined.reward.unwrap_or_default()),
                Transfer::Withdrawal(_, w) => (t.block, U256::from(w.amount_gwei)),
            })
            .collect()
    };
    let u = |v: u64| U256::from(v);
    assert_eq!(
        values(&one, TransferKind::Token, all()),
        [(1, u(10)), (2, u(4))]
    );
    assert_eq!(
        values(&tkn, TransferKind::TokenContract, all()),
        [(1, u(10)), (2, u(4)), (2, u(1))]
    );
    assert_eq!(values(&three, TransferKind::Internal, all()), [(1, u(5))]);
    // ERC-721 and ERC-1155 rows (listed by token id here) apart from ERC-20's.
    let collection = Address::repeat_byte(0xaa);
    assert_eq!(values(&three, TransferKind::Nft, all()), [(2, u(42))]);
    assert_eq!(values(&three, TransferKind::MultiToken, all()), [(2, u(7))]);
    assert_eq!(values(&one, TransferKind::MultiToken, all()), [(2, u(8))]);
    assert_eq!(
        values(&collection, TransferKind::MultiTokenContract, all()),
        [(2, u(7)), (2, u(8))]
    );
    assert_eq!(
        values(&collection, TransferKind::NftContract, all()),
        [(2, u(42))]
    );
    let block_rows = |address: &Address, listing| -> Vec<(u64, u32)> {
        store
            .address_listing(address, listing, all(), |_| true)
            .unwrap()
            .into_iter()
            .map(|(block, index, _)| (block, index))
            .collect()
    };
    assert_eq!(block_rows(&three, TransferKind::Mined), [(2, BLOCK_LEVEL)]);
    assert_eq!(
        block_rows(&two, TransferKind::Withdrawal),
        [(2, BLOCK_LEVEL)]
    );
    assert_eq!(
        values(&three, TransferKind::Token, all()),
        [(2, u(1))],
        "an address's ERC-20 list holds only ERC-20 rows"
    );
    assert!(
        values(
            &three,
            TransferKind::Token,
            HistoryPage {
                to_block: 1,
                ..all()
            }
        )
        .is_empty()
    );
    let newest_first = HistoryPage {
        descending: true,
        skip: 1,
        take: 1,
        ..all()
    };
    assert_eq!(
        values(&tkn, TransferKind::TokenContract, newest_first),
        [(2, u(4))]
    );
    let carried = store
        .address_transfers(&two, TransferKind::Token, all(), |_| true)
        .unwrap();
    assert_eq!(carried[1].transaction.nonce, 1);
    assert_eq!(
        store
            .transaction_transfers(1, 0, TransferKind::Internal)
            .unwrap(),
        [internal(0xee, 3, 5, "0")]
    );

    let balance = |holder: &Address, at| {
        store
            .token_balance(holder, &tkn, at)
            .unwrap()
            .map(|h| h.balance)
    };
    assert_eq!(balance(&one, None), Some(u(94)));
    assert_eq!(balance(&one, Some(1)), Some(u(90)));
    assert_eq!(balance(&three, Some(1)), None);
    assert_eq!(store.holder_tokens(&two, 10).unwrap()[0].balance, u(5));
    let holders = |page| -> Vec<(Address, U256)> {
        store
            .token_holders(&tkn, page)
            .unwrap()
            .into_iter()
            .map(|h| (h.token, h.balance))
            .collect()
    };
    assert_eq!(holders((0, 10)), [(one, u(94)), (two, u(5)), (three, u(1))]);
    assert_eq!(holders((1, 1)), [(two, u(5))]);
    assert_eq!(store.token_holder_count(&tkn).unwrap(), 3);

    let mut undo = store.index_batch();
    undo.delete_block_transfers(2).unwrap();
    undo.delete_block_transactions(2).unwrap();
    undo.commit().unwrap();
    assert_eq!(values(&one, TransferKind::Token, all()), [(1, u(10))]);
    assert!(values(&three, TransferKind::Nft, all()).is_empty());
    assert!(block_rows(&three, TransferKind::Mined).is_empty());
    assert!(block_rows(&two, TransferKind::Withdrawal).is_empty());
    assert!(values(&collection, TransferKind::MultiTokenContract, all()).is_empty());
    assert_eq!(balance(&one, None), Some(u(90)));
    assert_eq!(balance(&three, None), None);
    assert!(store.holder_tokens(&three, 10).unwrap().is_empty());
    assert_eq!(holders((0, 10)), [(one, u(90)), (two, u(10))]);
}

#[test]
fn token_info_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), &Default::default()).unwrap();
    let info = TokenInfo {
        name: "Wrapped Ether".into(),
        symbol: "WETH".into(),
        decimals: Some(18),
    };
    let mut batch = store.index_batch();
    batch.put_token_info(&Address::repeat_byte(9), &info);
    batch.commit().unwrap();
    assert_eq!(
        store.token_info(&Address::repeat_byte(9)).unwrap(),
        Some(info)
    );
    assert_eq!(store.token_info(&Address::repeat_byte(8)).unwrap(), None);
}
