//! Command records round trip, and their tags keep their numbers.

use super::*;

#[test]
fn every_command_round_trips() {
    let order = OrderRecord {
        symbol: "ETHUSDT".into(),
        side: 1,
        order_type: 2,
        time_in_force: 0,
        quantity: Some(5),
        quote_quantity: None,
        price: Some(300_000_000_000),
        client_order_id: Some("abc".into()),
        response_type: 2,
        stp: 3,
        stop_price: None,
        trailing_delta: None,
    };
    let conditional = OrderRecord {
        order_type: 5,
        stop_price: Some(290_000_000_000),
        trailing_delta: Some(250),
        ..order.clone()
    };
    let records = [
        CommandRecord::Credit {
            account: 1,
            asset: "USDT".into(),
            amount: 9,
        },
        CommandRecord::Debit {
            account: 2,
            asset: "ETH".into(),
            amount: 1,
        },
        CommandRecord::Deposit {
            account: 2,
            asset: "ETH".into(),
            amount: 12,
            deposit_id: 1 << 40,
            network: 0,
        },
        CommandRecord::Deposit {
            account: 2,
            asset: "ETH".into(),
            amount: 12,
            deposit_id: 3 << 16,
            network: 42161,
        },
        CommandRecord::Withdraw {
            account: 2,
            asset: "ETH".into(),
            amount: 12,
            fee: 3,
            client_id: Some("w-1".into()),
            destination: [9; 20],
            requested_ms: 77,
            network: 8453,
        },
        CommandRecord::Withdraw {
            account: 2,
            asset: "ETH".into(),
            amount: 12,
            fee: 0,
            client_id: None,
            destination: [0; 20],
            requested_ms: 0,
            network: 0,
        },
        CommandRecord::SettleWithdrawal {
            withdrawal_id: 4,
            completed: true,
        },
        CommandRecord::WithdrawalSigned {
            withdrawal_id: 4,
            nonce: 17,
            tx: crate::SentTx {
                hash: [7; 32].into(),
                max_fee: 30_000_000_000,
                tip: 1_000_000_000,
                raw: vec![2, 0xf8, 0x6c],
            },
        },
        CommandRecord::DepositAddress {
            account: 5,
            address: [0xab; 20],
        },
        CommandRecord::Place {
            account: 3,
            time_ms: 7,
            order: order.clone(),
        },
        CommandRecord::Place {
            account: 3,
            time_ms: 7,
            order: OrderRecord {
                client_order_id: None,
                quantity: None,
                ..order.clone()
            },
        },
        CommandRecord::Place {
            account: 3,
            time_ms: 7,
            order: conditional.clone(),
        },
        CommandRecord::PlaceList {
            account: 3,
            time_ms: 9,
            contingency: 2,
            list_client_id: Some("list".into()),
            working: Some(order.clone()),
            pending: vec![conditional.clone(), order.clone()],
        },
        CommandRecord::PlaceList {
            account: 3,
            time_ms: 9,
            contingency: 0,
            list_client_id: None,
            working: None,
            pending: vec![conditional.clone(), conditional.clone()],
        },
        CommandRecord::CancelList {
            account: 4,
            time_ms: 8,
            symbol: "ETHUSDT".into(),
            list_id: 2,
            cancel_client_id: Some("cancel-list".into()),
        },
        CommandRecord::Amend {
            account: 4,
            time_ms: 8,
            symbol: "ETHUSDT".into(),
            order_id: 3,
            quantity: 100,
            client_order_id: Some("renamed".into()),
        },
        CommandRecord::Replace {
            account: 4,
            time_ms: 8,
            order_id: 12,
            allow_failure: true,
            order: conditional.clone(),
            cancel_client_id: Some("cancel-part".into()),
        },
        CommandRecord::Cancel {
            account: 4,
            time_ms: 8,
            symbol: "ETHUSDT".into(),
            order_id: 11,
            cancel_client_id: Some("cancel".into()),
        },
        CommandRecord::Cancel {
            account: 4,
            time_ms: 8,
            symbol: "ETHUSDT".into(),
            order_id: 11,
            cancel_client_id: None,
        },
        CommandRecord::CancelAll {
            account: 5,
            time_ms: 9,
            symbol: "ETHBTC".into(),
        },
    ];
    // A record of a conditional order cut just before its trigger is a
    // record of the same order from before triggers existed.
    let without_trigger = CommandRecord::Place {
        account: 3,
        time_ms: 7,
        order,
    }
    .encode()
    .len();
    assert!(
        CommandTag::ALL
            .iter()
            .all(|tag| records.iter().any(|record| record.tag() == *tag)),
        "a record of every command"
    );
    for record in records {
        let bytes = record.encode();
        assert_eq!(bytes[1], record.tag() as u8);
        assert_eq!(CommandRecord::decode(&bytes).unwrap(), record);
        for cut in 0..bytes.len() {
            let older = (cut == without_trigger
                && matches!(&record, CommandRecord::Place { order, .. } if order.stop_price.is_some()))
                // The network, appended last, is left out of older records.
                || (cut == bytes.len() - 8
                    && matches!(&record, CommandRecord::Deposit { network, .. }
                        | CommandRecord::Withdraw { network, .. } if *network != 0))
                // So is a cancel's own client id.
                || record_cancel_id(&record).is_some_and(|id| cut == bytes.len() - 4 - id.len());
            assert_eq!(CommandRecord::decode(&bytes[..cut]).is_err(), !older);
        }
    }
}

fn record_cancel_id(record: &CommandRecord) -> Option<&str> {
    match record {
        CommandRecord::Cancel {
            cancel_client_id, ..
        }
        | CommandRecord::CancelList {
            cancel_client_id, ..
        }
        | CommandRecord::Replace {
            cancel_client_id, ..
        } => cancel_client_id.as_deref(),
        _ => None,
    }
}

#[test]
fn a_deposit_or_withdrawal_written_before_networks_reads_as_the_first_chain() {
    let deposit = CommandRecord::Deposit {
        account: 2,
        asset: "ETH".into(),
        amount: 12,
        deposit_id: 5,
        network: 0,
    };
    // A record of the first chain is written as before: without the field.
    let bytes = deposit.encode();
    let with_network = CommandRecord::Deposit {
        account: 2,
        asset: "ETH".into(),
        amount: 12,
        deposit_id: 5,
        network: 10,
    }
    .encode();
    assert_eq!(with_network.len(), bytes.len() + 8);
    assert_eq!(CommandRecord::decode(&bytes).unwrap(), deposit);
}

#[test]
fn every_command_tag_keeps_its_stored_number() {
    use CommandTag::*;
    let pinned = [
        (Credit, 0),
        (Debit, 1),
        (Place, 2),
        (Cancel, 3),
        (CancelAll, 4),
        (PlaceList, 5),
        (CancelList, 6),
        (Replace, 7),
        (Amend, 8),
        (Deposit, 9),
        (Withdraw, 10),
        (SettleWithdrawal, 11),
        (WithdrawalSigned, 12),
        (DepositAddress, 13),
    ];
    assert_eq!(pinned.len(), CommandTag::ALL.len());
    for (tag, number) in pinned {
        assert_eq!(tag as u8, number);
        assert_eq!(CommandTag::try_from(number), Ok(tag));
    }
    for number in 14..=u8::MAX {
        assert_eq!(CommandTag::try_from(number), Err(UnknownCommandTag(number)));
    }
}
