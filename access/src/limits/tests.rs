//! The limiter alone: budgets, bans, blocks and their housekeeping.

use super::*;

fn ip(n: u8) -> IpAddr {
    IpAddr::from([10, 0, 0, n])
}

fn small() -> LimitsConfig {
    LimitsConfig {
        ip_weight_per_minute: 10,
        key_weight_per_minute: 1000,
        orders_per_10s: 3,
        orders_per_day: 1000,
        query_tiers: HashMap::from([("default".into(), 2)]),
        ban_after_rejections: 3,
        ban_initial: Duration::from_secs(2),
        ban_max: Duration::from_secs(5),
        ..LimitsConfig::default()
    }
}

#[test]
fn weight_over_the_limit_is_refused_and_reported() {
    let limiter = Limiter::new(small());
    let now = 60_000 * 1000;
    assert_eq!(
        limiter
            .charge_weight(ip(1), None, 4, now)
            .unwrap()
            .ip_weight_1m,
        4
    );
    assert_eq!(
        limiter
            .charge_weight(ip(1), None, 6, now)
            .unwrap()
            .ip_weight_1m,
        10
    );
    let refused = limiter.charge_weight(ip(1), None, 1, now).unwrap_err();
    assert!(
        matches!(refused, AccessError::TooMuchWeight { limit: 10, .. }),
        "{refused:?}"
    );
    assert!(refused.retry_after().unwrap() >= Duration::from_secs(1));
    limiter.charge_weight(ip(2), None, 10, now).unwrap();
}

#[test]
fn hammering_after_429_bans_with_escalation() {
    let limiter = Limiter::new(small());
    let now = 1_000_000;
    limiter.charge_weight(ip(3), None, 10, now).unwrap();
    for _ in 0..3 {
        assert!(matches!(
            limiter.charge_weight(ip(3), None, 1, now),
            Err(AccessError::TooMuchWeight { .. })
        ));
    }
    assert!(matches!(
        limiter.charge_weight(ip(3), None, 1, now),
        Err(AccessError::Banned { .. })
    ));
    let Err(AccessError::Banned { until_ms, .. }) = limiter.check_ip(ip(3), now + 1) else {
        panic!("banned")
    };
    assert_eq!(until_ms, now + 2_000);
    limiter.check_ip(ip(3), now + 2_001).unwrap();
    limiter.check_ip(ip(4), now).unwrap();
}

#[test]
fn bans_and_blocks_of_several_ips_each_end_on_their_own() {
    let limiter = Limiter::new(LimitsConfig {
        invalid_keys_per_30s: 1,
        invalid_key_block: Duration::from_secs(30),
        ..small()
    });
    let now = 3_000_000;
    limiter.check_ip(ip(7), now).unwrap();
    // ip 7: blocked for bad keys until now + 30 s.
    limiter.record_invalid_key(ip(7), now);
    limiter.record_invalid_key(ip(7), now);
    // ip 8: banned for 2 s, set later but ending sooner.
    limiter.charge_weight(ip(8), None, 10, now + 1).unwrap();
    for _ in 0..4 {
        let _ = limiter.charge_weight(ip(8), None, 1, now + 1);
    }
    let refused = |n, t| limiter.check_ip(ip(n), t).is_err();
    assert!(refused(7, now + 1) && refused(8, now + 1));
    assert!(!refused(9, now + 1), "an IP never refused passes");
    assert!(refused(7, now + 2_002) && !refused(8, now + 2_002));
    assert!(refused(7, now + 29_999));
    assert!(!refused(7, now + 30_000) && !refused(8, now + 30_000));
}

#[test]
fn orders_and_query_calls_are_limited_per_account() {
    let limiter = Limiter::new(small());
    let now = 10_000 * 7;
    assert_eq!(limiter.charge_order(ip(1), 1, now).unwrap(), (1, 1));
    limiter.charge_order(ip(1), 1, now).unwrap();
    assert_eq!(limiter.charge_order(ip(1), 1, now).unwrap(), (3, 3));
    assert!(matches!(
        limiter.charge_order(ip(1), 1, now),
        Err(AccessError::TooManyOrders {
            interval: "10 SECOND",
            ..
        })
    ));
    limiter.charge_order(ip(1), 2, now).unwrap();
    limiter.charge_query(1, "default").unwrap();
    limiter.charge_query(1, "default").unwrap();
    assert!(matches!(
        limiter.charge_query(1, "default"),
        Err(AccessError::TooManyCalls { per_second: 2, .. })
    ));
}

#[test]
fn a_drained_shared_budget_never_bans_the_ip_that_hit_it() {
    let limiter = Limiter::new(small());
    let now = 5_000_000;
    for _ in 0..20 {
        let _ = limiter.charge_query(9, "default");
        let _ = limiter.charge_key_weight(ip(6), 9, 2_000, false, now);
    }
    limiter.check_ip(ip(6), now).unwrap();
    // A signed sender's own excess does count.
    for _ in 0..5 {
        let _ = limiter.charge_key_weight(ip(6), 9, 2_000, true, now);
    }
    assert!(matches!(
        limiter.check_ip(ip(6), now),
        Err(AccessError::Banned { .. })
    ));
}

#[test]
fn ipv6_clients_share_the_budget_of_their_network() {
    let limiter = Limiter::new(small());
    let now = 60_000 * 3;
    let host = |n: u16| IpAddr::from([0x2001, 0xdb8, 0, 7, 0, 0, 0, n]);
    for n in 0..10 {
        limiter.charge_ip_weight(host(n), 1, now).unwrap();
    }
    assert!(limiter.charge_ip_weight(host(99), 1, now).is_err());
    limiter
        .charge_ip_weight(IpAddr::from([0x2001, 0xdb8, 0, 8, 0, 0, 0, 1]), 1, now)
        .unwrap();
    assert_eq!(
        client_group("::ffff:192.0.2.1".parse().unwrap(), 64),
        IpAddr::from([192, 0, 2, 1])
    );
    assert_eq!(
        client_group("2001:db8:1:2:3:4:5:6".parse().unwrap(), 48),
        "2001:db8:1::".parse::<IpAddr>().unwrap()
    );
    assert_eq!(
        client_group("2001:db8::1".parse().unwrap(), 128),
        "2001:db8::1".parse::<IpAddr>().unwrap()
    );
    assert_eq!(
        client_group("2001:db8::1".parse().unwrap(), 0),
        "::".parse::<IpAddr>().unwrap()
    );
}

#[test]
fn a_burst_of_invalid_keys_blocks_the_ip() {
    let limiter = Limiter::new(small());
    let now = 30_000 * 9;
    for _ in 0..5 {
        limiter.record_invalid_key(ip(5), now);
    }
    limiter.check_ip(ip(5), now).unwrap();
    limiter.record_invalid_key(ip(5), now);
    assert!(matches!(
        limiter.check_ip(ip(5), now),
        Err(AccessError::TooManyInvalidKeys { .. })
    ));
    limiter.check_ip(ip(5), now + 30_001).unwrap();
}

#[test]
fn housekeeping_bounds_memory() {
    let limiter = Limiter::new(small());
    for n in 0..200u8 {
        limiter.charge_weight(ip(n), None, 1, 0).unwrap();
    }
    assert!(limiter.tracked() >= 200);
    limiter.housekeeping(10 * 60_000);
    assert!(
        limiter.tracked() < 200 * 2,
        "window maps pruned: {}",
        limiter.tracked()
    );
    assert_eq!(limiter.ip_windows.len(), 0);
}
