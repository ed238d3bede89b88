//! The deployment files in `deploy/`, checked by the tools that read them:
//! the systemd unit by `systemd-analyze verify`, the NATS server's
//! configuration by the pinned `nats-server -t`, the alerting rules by
//! `promtool`, and every metric the rules and the Grafana dashboard read
//! against a live server's `/metrics`.

mod common;

use std::process::Command;

#[test]
fn the_service_unit_verifies_clean() {
    let unit =
        std::fs::read_to_string(common::repo_path("deploy/systemd/weiport.service")).unwrap();
    // The unit names the installed binary; verify runs it from the build.
    assert!(unit.contains("ExecStart=/usr/local/bin/weiport "));
    let unit = unit.replace("/usr/local/bin/weiport", env!("CARGO_BIN_EXE_weiport"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weiport.service");
    std::fs::write(&path, unit).unwrap();
    let output = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&path)
        .output()
        .expect("systemd-analyze (scripts/setup.sh installs systemd)");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    // Anything it says about the unit itself is a finding.
    let findings: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("weiport.service"))
        .collect();
    assert!(findings.is_empty(), "{findings:#?}");
}

#[test]
fn the_nats_configuration_parses_and_syncs_before_it_acknowledges() {
    let path = common::repo_path("deploy/nats/nats-server.conf");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.lines()
            .any(|line| line.trim() == "sync_interval: always"),
        "{text}"
    );
    let output = Command::new(weiport_journal::testing::binary())
        .arg("-t")
        .arg("-c")
        .arg(&path)
        .output()
        .expect("the pinned nats-server (scripts/setup.sh installs it)");
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The metric names `expr` reads (not the rules' own recorded series).
fn metrics_in(expr: &str, names: &mut std::collections::BTreeSet<String>) {
    for word in expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':')) {
        let ours = ["weiport_", "http_", "process_"]
            .iter()
            .any(|prefix| word.starts_with(prefix));
        if ours && !word.contains(':') {
            names.insert(word.to_owned());
        }
    }
}

/// The metric names the expressions of `deploy/prometheus/weiport.rules.yml` read.
fn rule_metrics() -> std::collections::BTreeSet<String> {
    let rules =
        std::fs::read_to_string(common::repo_path("deploy/prometheus/weiport.rules.yml")).unwrap();
    let mut names = std::collections::BTreeSet::new();
    for line in rules.lines() {
        let line = line.trim_start();
        // An expression's first line, or the lines it continues on.
        let expr = line
            .strip_prefix("expr:")
            .or_else(|| (!line.contains(':') || line.starts_with('/')).then_some(line));
        if let Some(expr) = expr {
            metrics_in(expr, &mut names);
        }
    }
    names
}

/// The metric names the panels of `deploy/grafana/weiport.json` query.
fn dashboard_metrics() -> std::collections::BTreeSet<String> {
    let text = std::fs::read_to_string(common::repo_path("deploy/grafana/weiport.json")).unwrap();
    let dashboard: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut names = std::collections::BTreeSet::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            metrics_in(target["expr"].as_str().unwrap(), &mut names);
        }
    }
    names
}

#[test]
fn the_prometheus_rules_pass_their_promtool_tests() {
    let dir = common::repo_path("deploy/prometheus");
    for args in [
        ["check", "rules", "weiport.rules.yml"],
        ["test", "rules", "weiport.rules.test.yml"],
    ] {
        let output = Command::new("promtool")
            .args(args)
            .current_dir(&dir)
            .output()
            .expect("promtool (scripts/setup.sh installs prometheus)");
        assert!(
            output.status.success(),
            "promtool {args:?}: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// Every metric the rules and the dashboard read is one a live server
/// exports: a renamed metric would leave an alert silent, a panel empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_metric_the_rules_and_the_dashboard_read_is_on_a_live_servers_metrics() {
    let anvil = common::Anvil::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let weiport = common::Weiport::serve(dir.path(), &common::history_env(&anvil.url, &[]));
    let (maker, _) = weiport.two_traders().await;
    common::order(
        &weiport,
        &maker,
        "symbol=ETHUSDT&side=SELL&type=LIMIT&timeInForce=GTC&quantity=0.01&price=3000",
    )
    .await;
    let (rules, dashboard) = (rule_metrics(), dashboard_metrics());
    assert!(
        rules.len() >= 10 && dashboard.len() >= 14,
        "{rules:?} {dashboard:?}"
    );
    // Exported by a process in a cluster only: tests/replicated.rs checks
    // them on a follower's /metrics.
    const IN_A_CLUSTER: [&str; 3] = [
        "weiport_journal_lag_entries",
        "weiport_cluster_redis_up",
        "weiport_cluster_lease_holder",
    ];
    let wanted: std::collections::BTreeSet<String> = rules
        .union(&dashboard)
        .filter(|name| !IN_A_CLUSTER.contains(&name.as_str()))
        .cloned()
        .collect();
    let mut missing = wanted.clone();
    for _ in 0..100 {
        let text = weiport.metrics().await;
        missing.retain(|name| {
            !text.lines().any(|line| {
                line.starts_with(&format!("{name}{{")) || line.starts_with(&format!("{name} "))
            })
        });
        if missing.is_empty() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("not on /metrics: {missing:?}");
}
