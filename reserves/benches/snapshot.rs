//! A proof-of-reserves snapshot of many accounts: the time to build the
//! liabilities' tree against the time to copy what it is built from (the
//! part taken under the read side's lock), the memory it holds, and the
//! size and check time of one account's proof.
//! `cargo bench -p weiport-reserves --bench snapshot` (env BENCH_ACCOUNTS,
//! default 1,000,000).

use std::time::Instant;

use weiport_reserves::{Owed, Proof, ProofDocument, Snapshot};

/// Peak resident memory of this process so far, in MiB.
fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<f64>()
                .ok()
        })
        .map_or(0.0, |kib| kib / 1024.0)
}

fn main() {
    let accounts: u64 = std::env::var("BENCH_ACCOUNTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000);
    let assets = vec!["ETH".to_owned(), "USDT".to_owned()];
    let owed: Vec<Owed> = (1..=accounts)
        .map(|account| Owed {
            account,
            amounts: vec![
                u128::from(account % 997) * 1_000_000,
                u128::from(account % 10_007) * 100_000_000,
            ],
        })
        .collect();
    let before = peak_rss_mib();

    // What the read side's lock is held for: copying every account's claims.
    let started = Instant::now();
    let copied = owed.clone();
    let copy = started.elapsed();

    let started = Instant::now();
    let snapshot = Snapshot::take(&[7; 32], 1, 0, assets, copied, Vec::new()).unwrap();
    let build = started.elapsed();
    let rss = peak_rss_mib() - before;

    let account = accounts / 2 + 1;
    let started = Instant::now();
    let proof = snapshot.proof(account).unwrap();
    let answer = started.elapsed();
    let document = serde_json::to_string(&ProofDocument::from(&proof)).unwrap();
    let started = Instant::now();
    Proof::try_from(&serde_json::from_str::<ProofDocument>(&document).unwrap())
        .unwrap()
        .verify()
        .unwrap();
    let check = started.elapsed();

    println!("accounts {accounts}, 2 assets");
    println!(
        "copy of the claims (under the read lock): {:.1} ms; tree built (off the lock): {:.1} ms ({:.2}x the copy)",
        copy.as_secs_f64() * 1e3,
        build.as_secs_f64() * 1e3,
        build.as_secs_f64() / copy.as_secs_f64()
    );
    println!(
        "tree and leaves held: {:.1} MiB ({:.0} bytes an account); peak resident growth {rss:.1} MiB",
        snapshot.heap_bytes() as f64 / (1024.0 * 1024.0),
        snapshot.heap_bytes() as f64 / accounts as f64
    );
    println!(
        "a proof: {} steps (log2 of the accounts, rounded up: {}), {} bytes of JSON; answered in {:.1} us, checked in {:.1} us",
        proof.path.len(),
        (accounts as f64).log2().ceil(),
        document.len(),
        answer.as_secs_f64() * 1e6,
        check.as_secs_f64() * 1e6
    );
}
