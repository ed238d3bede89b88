use proptest::prelude::*;

use super::*;
use crate::tree;

fn leaves(owed: &[(u64, u64)]) -> Vec<Leaf> {
    owed.iter()
        .enumerate()
        .map(|(i, (eth, usdt))| Leaf {
            account: i as u64 + 1,
            salt: salt(&[7; 32], 42, i as u64 + 1),
            owed: vec![u128::from(*eth), u128::from(*usdt)],
        })
        .collect()
}

fn proof_of(tree: &SumTree, all: &[Leaf], index: usize) -> Proof {
    Proof {
        sequence: 42,
        assets: vec!["ETH".into(), "USDT".into()],
        leaf: all[index].clone(),
        path: tree.path(index).unwrap(),
        root: tree.root(),
    }
}

#[test]
fn the_root_sums_what_every_account_is_owed() {
    let all = leaves(&[(5, 100), (0, 7), (3, 0), (11, 1)]);
    let tree = SumTree::build(2, &all).unwrap();
    assert_eq!(tree.root().sums, vec![19, 108]);
    for index in 0..all.len() {
        proof_of(&tree, &all, index).verify().unwrap();
    }
}

#[test]
fn a_tampered_leaf_path_or_total_fails() {
    let all = leaves(&[(5, 100), (0, 7), (3, 0), (11, 1), (2, 2)]);
    let tree = SumTree::build(2, &all).unwrap();
    let good = proof_of(&tree, &all, 1);
    good.verify().unwrap();

    // The exchange claims it owes this account less than it does.
    let mut owed_less = good.clone();
    owed_less.leaf.owed[0] += 1;
    assert!(matches!(
        owed_less.verify(),
        Err(ReservesError::RootMismatch { .. })
    ));
    // Another account's salt: another leaf.
    let mut other_salt = good.clone();
    other_salt.leaf.salt = salt(&[7; 32], 42, 3);
    assert!(other_salt.verify().is_err());
    // A sibling's sum lowered: the hashes no longer meet.
    let mut lower_sibling = good.clone();
    lower_sibling.path[1].sibling.sums[1] -= 1;
    assert!(lower_sibling.verify().is_err());
    // A sibling swapped to the other side.
    let mut swapped = good.clone();
    swapped.path[0].side = match swapped.path[0].side {
        Side::Left => Side::Right,
        Side::Right => Side::Left,
    };
    assert!(swapped.verify().is_err());
    // Totals published lower than the tree's.
    let mut lower_total = good.clone();
    lower_total.root.sums[0] -= 1;
    assert_eq!(lower_total.verify(), Err(ReservesError::SumMismatch));
    // A path cut short.
    let mut short = good;
    short.path.pop();
    assert!(short.verify().is_err());
}

#[test]
fn the_document_round_trips_and_is_checked_after_parsing() {
    let all = leaves(&[(5, 100), (0, 7), (3, 0)]);
    let tree = SumTree::build(2, &all).unwrap();
    let proof = proof_of(&tree, &all, 2);
    let document = ProofDocument::from(&proof);
    let text = serde_json::to_string(&document).unwrap();
    let parsed: ProofDocument = serde_json::from_str(&text).unwrap();
    assert_eq!(Proof::try_from(&parsed).unwrap(), proof);

    let mut negative = parsed.clone();
    negative.owed[0] = "-1".into();
    assert!(matches!(
        Proof::try_from(&negative),
        Err(ReservesError::Malformed(_))
    ));
    let mut bad_side = parsed;
    bad_side.path[0].side = "up".into();
    assert!(Proof::try_from(&bad_side).is_err());
}

#[test]
fn no_account_and_one_account_have_roots() {
    let empty = SumTree::build(2, &[]).unwrap();
    assert_eq!(empty.root().sums, vec![0, 0]);
    assert!(empty.path(0).is_none());
    let one = leaves(&[(9, 9)]);
    let tree = SumTree::build(2, &one).unwrap();
    assert_eq!(tree.root(), one[0].node());
    proof_of(&tree, &one, 0).verify().unwrap();
}

#[test]
fn sums_that_overflow_are_refused() {
    let huge = vec![
        Leaf {
            account: 1,
            salt: [0; 32],
            owed: vec![u128::MAX],
        },
        Leaf {
            account: 2,
            salt: [0; 32],
            owed: vec![1],
        },
    ];
    assert_eq!(
        SumTree::build(1, &huge).unwrap_err(),
        ReservesError::Overflow
    );
}

#[test]
fn salts_differ_per_account_and_snapshot() {
    let secret = [1; 32];
    assert_ne!(salt(&secret, 1, 1), salt(&secret, 1, 2));
    assert_ne!(salt(&secret, 1, 1), salt(&secret, 2, 1));
    assert_ne!(salt(&secret, 1, 1), salt(&[2; 32], 1, 1));
}

proptest! {
    #[test]
    fn every_leaf_of_any_tree_proves_and_the_root_sums_all(
        owed in proptest::collection::vec((0u64..1_000_000_000, 0u64..1_000_000_000), 1..70),
        pick in any::<prop::sample::Index>(),
    ) {
        let all = leaves(&owed);
        let tree = SumTree::build(2, &all).unwrap();
        let eth: u128 = owed.iter().map(|(e, _)| u128::from(*e)).sum();
        let usdt: u128 = owed.iter().map(|(_, u)| u128::from(*u)).sum();
        prop_assert_eq!(tree.root().sums, vec![eth, usdt]);
        let index = pick.index(all.len());
        let proof = proof_of(&tree, &all, index);
        prop_assert!(proof.verify().is_ok());
        prop_assert_eq!(proof.path.len(), (all.len() as f64).log2().ceil() as usize);
    }
}

/// Runs the standard-library verifier in `tools/` on `proof`, with a
/// snapshot that lists no chain (so it asks no node): whether it passed.
fn python_verifier_accepts(proof: &ProofDocument) -> bool {
    let snapshot = serde_json::json!({
        "sequence": proof.sequence,
        "assets": proof.assets,
        "scale": 8,
        "root": proof.root,
        "totals": proof.totals,
        "chains": [],
    });
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("proof.json");
    let document = serde_json::json!({"snapshot": snapshot, "proof": proof});
    std::fs::write(&file, document.to_string()).unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tools/verify_reserves.py");
    let python = std::env::var("WEIPORT_PYTHON").unwrap_or_else(|_| "python3".into());
    let output = std::process::Command::new(python)
        .args([
            script,
            file.to_str().unwrap(),
            "--node",
            "http://127.0.0.1:9",
        ])
        .output()
        .expect("python3");
    let status = output.status.code();
    assert!(
        matches!(status, Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    status == Some(0)
}

#[test]
fn the_standard_library_verifier_agrees_with_this_one() {
    let all = leaves(&[(5, 100), (0, 7), (3, 0), (11, 1), (2, 2)]);
    let tree = SumTree::build(2, &all).unwrap();
    for index in [0, 3, 4] {
        let proof = ProofDocument::from(&proof_of(&tree, &all, index));
        assert!(python_verifier_accepts(&proof), "leaf {index}");
    }
    let good = ProofDocument::from(&proof_of(&tree, &all, 2));
    let mut owed_less = good.clone();
    owed_less.owed[0] = "2".into();
    assert!(!python_verifier_accepts(&owed_less));
    let mut lower_sibling = good.clone();
    lower_sibling.path[0].sums[1] = "0".into();
    assert!(!python_verifier_accepts(&lower_sibling));
    let mut lower_totals = good;
    lower_totals.totals[0] = "20".into();
    assert!(!python_verifier_accepts(&lower_totals));
}

fn chain_holding(wei: u128) -> ChainReserves {
    let mut chain = ChainReserves {
        chain_id: 31337,
        coin: "ETH".into(),
        block: 9,
        block_hash: format!("0x{}", "ab".repeat(32)),
        addresses: Vec::new(),
    };
    let address = format!("0x{}", "11".repeat(20));
    chain.addresses.push(Holding {
        message: Snapshot::message(5, &chain, &address),
        address,
        balance_wei: wei,
        signature: "0x00".into(),
    });
    chain
}

fn owed(account: u64, eth: u128, usdt: u128) -> Owed {
    Owed {
        account,
        amounts: vec![eth, usdt],
    }
}

#[test]
fn every_process_takes_the_same_snapshot_from_the_same_ledger() {
    let assets = || vec!["ETH".to_owned(), "USDT".to_owned()];
    let one = Snapshot::take(
        &[3; 32],
        5,
        1,
        assets(),
        vec![owed(2, 1, 2), owed(1, 3, 4), owed(7, 0, 9)],
        vec![],
    )
    .unwrap();
    let other = Snapshot::take(
        &[3; 32],
        5,
        2,
        assets(),
        vec![owed(7, 0, 9), owed(2, 1, 2), owed(1, 3, 4)],
        vec![],
    )
    .unwrap();
    assert_eq!(one.root(), other.root());
    assert_eq!(one.root().sums, vec![4, 15]);
    for account in [1, 2, 7] {
        one.proof(account).unwrap().verify().unwrap();
    }
    assert!(one.proof(3).is_none());
    // Another secret: the same sums, other leaves.
    let salted = Snapshot::take(&[4; 32], 5, 1, assets(), vec![owed(1, 3, 4)], vec![]).unwrap();
    let same = Snapshot::take(&[3; 32], 5, 1, assets(), vec![owed(1, 3, 4)], vec![]).unwrap();
    assert_ne!(salted.root_hash(), same.root_hash());
}

#[test]
fn coverage_is_reserves_over_liabilities_per_asset() {
    // 1.5 ETH owed (150,000,000 units); 3 ETH held: a ratio of 2.
    let snapshot = Snapshot::take(
        &[3; 32],
        5,
        1,
        vec!["ETH".into(), "USDT".into()],
        vec![owed(1, 100_000_000, 10), owed(2, 50_000_000, 0)],
        vec![chain_holding(3 * 10u128.pow(18))],
    )
    .unwrap();
    let coverage = snapshot.coverage().unwrap();
    assert_eq!(coverage[0].ratio_millionths, Some(2_000_000));
    assert_eq!(coverage[0].reserves_wei, Some(3 * 10u128.pow(18)));
    // No chain holds USDT: no ratio claimed.
    assert_eq!(coverage[1].ratio_millionths, None);
    assert_eq!(coverage[1].liabilities, 10);
    let document = snapshot.document().unwrap();
    assert_eq!(document.coverage[0].ratio.as_deref(), Some("2.000000"));
    assert_eq!(document.totals, vec!["150000000", "10"]);

    // A shortfall: 1.2 ETH held against 1.5 owed.
    let short = Snapshot::take(
        &[3; 32],
        5,
        1,
        vec!["ETH".into()],
        vec![Owed {
            account: 1,
            amounts: vec![150_000_000],
        }],
        vec![chain_holding(12 * 10u128.pow(17))],
    )
    .unwrap();
    let coverage = short.coverage().unwrap();
    assert_eq!(coverage[0].ratio_millionths, Some(800_000));
    assert_eq!(coverage[0].ratio(), Some(0.8));
}

#[test]
fn a_published_proof_round_trips_through_json_and_verifies() {
    let snapshot = Snapshot::take(
        &[3; 32],
        5,
        1,
        vec!["ETH".into(), "USDT".into()],
        vec![owed(1, 3, 4), owed(2, 5, 6), owed(3, 7, 8)],
        vec![chain_holding(10)],
    )
    .unwrap();
    let published = snapshot.proof_document(2).unwrap().unwrap();
    let text = serde_json::to_string(&published).unwrap();
    let read: ProofOf = serde_json::from_str(&text).unwrap();
    assert_eq!(read, published);
    Proof::try_from(&read.proof).unwrap().verify().unwrap();
    assert_eq!(read.snapshot.root, read.proof.root);
    assert_eq!(read.snapshot.chains[0].addresses[0].balance_wei, 10);
    assert!(text.contains("\"balanceWei\":\"10\""), "{text}");
}

#[test]
fn siblings_shown_smaller_than_they_are_fail() {
    // Two accounts owed 5 and 3. A root committing only to the total could
    // be published as 5 (3 vanished), each account shown its sibling as
    // 0 and 2: both paths would reach it. Committing to each child's sums
    // makes those siblings other nodes than the ones hashed.
    let all = leaves(&[(5, 0), (3, 0)]);
    let honest = SumTree::build(2, &all).unwrap();
    assert_eq!(honest.root().sums, vec![8, 0]);
    let (a, b) = (all[0].node(), all[1].node());
    let shown_to_a = Node {
        hash: b.hash,
        sums: vec![0, 0],
    };
    let shown_to_b = Node {
        hash: a.hash,
        sums: vec![2, 0],
    };
    let forged_root = tree::parent(&a, &shown_to_a).unwrap();
    assert_eq!(forged_root.sums, vec![5, 0]);
    let proof_a = Proof {
        sequence: 42,
        assets: vec!["ETH".into(), "USDT".into()],
        leaf: all[0].clone(),
        path: vec![Step {
            side: Side::Right,
            sibling: shown_to_a,
        }],
        root: forged_root.clone(),
    };
    // A's own path leads to the forged root, which the forger chose for it;
    // B's, through a sibling shown smaller, cannot reach the same root.
    proof_a.verify().unwrap();
    let proof_b = Proof {
        leaf: all[1].clone(),
        path: vec![Step {
            side: Side::Left,
            sibling: shown_to_b,
        }],
        ..proof_a
    };
    assert!(matches!(
        proof_b.verify(),
        Err(ReservesError::RootMismatch { .. })
    ));
}

#[test]
fn a_signature_recovers_to_its_signer() {
    // anvil's first dev account (its key is well known) signing "hello"
    // with personal_sign; the recovery is the address that key derives.
    let signed = "0x08f4f37e2d8f74e18c1b8fde2374d5f28402fb8ab7fd1cc5b786aa40851a70cb0065ac791cbd0faa6d1034ddb8452347ee13d26399379db31e7061c7a30d72ea1b";
    let anvil_first = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266";
    assert_eq!(signer("hello", signed).unwrap(), anvil_first);
    assert_ne!(signer("hello!", signed).unwrap(), anvil_first);
    assert!(signer("hello", "0x1234").is_err());
}
