//! Cost of the access checks on one signed request: key lookup, freshness,
//! HMAC verification over the raw payload, IP and permission checks, and the
//! shared limiter; against the bare HMAC computation as the baseline.

use std::hint::black_box;
use std::net::IpAddr;

use criterion::{Criterion, criterion_group, criterion_main};
use weiport_access::auth::{Credentials, authenticate};
use weiport_access::keystore::now_ms;
use weiport_access::{
    KeyStore, Limiter, LimitsConfig, MasterKey, NewKey, Permission, Security, sign_hmac_sha256,
};

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let store = weiport_storage::Store::open(dir.path(), &Default::default()).unwrap();
    let keys = KeyStore::open(
        store,
        MasterKey::from_bytes(&[1; 32]),
        vec!["default".into()],
        "default".into(),
    )
    .unwrap();
    let account = keys.create_account("bench").unwrap();
    let created = keys
        .create_key(NewKey {
            account: account.id,
            permissions: vec![Permission::Read, Permission::Trade],
            ..NewKey::default()
        })
        .unwrap();
    let secret = created.secret.unwrap();
    let limiter = Limiter::new(LimitsConfig {
        ip_weight_per_minute: u32::MAX / 2,
        key_weight_per_minute: u32::MAX / 2,
        ..LimitsConfig::default()
    });
    let query = format!(
        "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=1.00000000&price=3000.00000000&recvWindow=60000&timestamp={}",
        now_ms()
    );
    let signature = sign_hmac_sha256(secret.as_bytes(), query.as_bytes());
    let signed_query = format!("{query}&signature={signature}");
    let credentials = Credentials {
        api_key: Some(&created.info.id),
        query: &signed_query,
        body: b"",
        body_kind: weiport_access::params::BodyKind::Form,
    };
    let ip: IpAddr = [127, 0, 0, 1].into();

    let mut group = c.benchmark_group("access");
    // The floor of any HMAC check: hashing the payload with a prepared key.
    let prepared =
        <hmac::Hmac<sha2::Sha256> as hmac::KeyInit>::new_from_slice(secret.as_bytes()).unwrap();
    group.bench_function("baseline: HMAC-SHA256 of the payload", |b| {
        b.iter(|| {
            let mut mac = prepared.clone();
            hmac::Mac::update(&mut mac, black_box(query.as_bytes()));
            black_box(hmac::Mac::finalize(mac))
        })
    });
    group.bench_function("authenticate signed request", |b| {
        b.iter(|| {
            let now_us = now_ms() * 1000;
            black_box(
                authenticate(
                    &keys,
                    Security::Signed(Permission::Trade),
                    black_box(&credentials),
                    ip,
                    now_us,
                )
                .unwrap(),
            )
        })
    });
    group.bench_function("authenticate + limiter (IP and key weight)", |b| {
        b.iter(|| {
            let now = now_ms();
            let key = authenticate(
                &keys,
                Security::Signed(Permission::Trade),
                black_box(&credentials),
                ip,
                now * 1000,
            )
            .unwrap()
            .unwrap();
            black_box(
                limiter
                    .charge_weight(ip, Some(key.limit_slot), 1, now)
                    .unwrap(),
            );
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
