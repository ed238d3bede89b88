//! `weiport serve` as a process: health, metrics, graceful shutdown, refusals.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use common::{Weiport, weiport_command};

const NO_INDEXER: &[(&str, &str)] = &[("WEIPORT_INDEXER__ENABLED", "false")];

fn get(url: &str) -> (u16, String, String) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let response = reqwest::get(url).await.unwrap();
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        (status, content_type, response.text().await.unwrap())
    })
}

#[test]
fn serves_health_and_metrics_then_exits_cleanly_on_sigint() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Weiport::serve(dir.path(), NO_INDEXER);

    let (status, _, body) = get(&format!("{}/healthz", server.url));
    assert_eq!((status, body.as_str()), (200, "ok"));
    let (status, _, body) = get(&format!("{}/readyz", server.url));
    assert_eq!(status, 200, "{body}");
    let ready: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(ready["status"], "ready");

    let (status, content_type, body) = get(&format!("{}/metrics", server.url));
    assert_eq!(status, 200);
    assert!(content_type.starts_with("text/plain"), "{content_type}");
    // The two requests above are counted, by route pattern.
    let healthz = body
        .lines()
        .find(|l| l.starts_with("http_requests_total{") && l.contains("route=\"/healthz\""))
        .unwrap_or_else(|| panic!("no healthz counter in:\n{body}"));
    assert!(healthz.ends_with(" 1"), "{healthz}");
    assert!(
        body.contains("# TYPE http_request_duration_seconds histogram"),
        "{body}"
    );
    // The process, the build, the database engine and the role, read at
    // the scrape.
    let value = |series: &str| -> f64 {
        body.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .unwrap_or_else(|| panic!("no {series} in:\n{body}"))
            .parse()
            .unwrap()
    };
    for series in [
        "process_resident_memory_bytes",
        "process_virtual_memory_bytes",
        "process_open_fds",
        "process_max_fds",
        "process_start_time_seconds",
        "process_threads",
    ] {
        assert!(value(series) > 0.0, "{series}");
    }
    // A new store's rows are still in memory: no table file to measure yet.
    for series in [
        r#"weiport_rocksdb_live_data_bytes{family="meta"}"#,
        "weiport_rocksdb_block_cache_bytes",
        "process_cpu_seconds_total",
        "weiport_rocksdb_pending_compaction_bytes",
        "weiport_rocksdb_stall_microseconds_total",
        "weiport_rocksdb_block_cache_hits_total",
        "weiport_rocksdb_block_cache_misses_total",
    ] {
        assert!(value(series) >= 0.0, "{series}");
    }
    assert_eq!(value("weiport_rocksdb_writes_stopped"), 0.0);
    assert_eq!(value(r#"weiport_cluster_role{role="alone"}"#), 1.0);
    assert_eq!(value(r#"weiport_cluster_role{role="primary"}"#), 0.0);
    let build = body
        .lines()
        .find(|l| l.starts_with("weiport_build_info{"))
        .unwrap_or_else(|| panic!("no build info in:\n{body}"));
    assert!(
        build.contains(&format!("version=\"{}\"", env!("CARGO_PKG_VERSION")))
            && build.ends_with(" 1"),
        "{build}"
    );

    let (status, _, _) = get(&format!("{}/no/such/route", server.url));
    assert_eq!(status, 404);

    let started = Instant::now();
    let exit = server
        .stop("INT", Duration::from_secs(5))
        .expect("exits within 5 s of SIGINT");
    assert!(exit.success(), "{exit:?}: {:#?}", server.drain_log());
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(
        server
            .read_log_to_end()
            .iter()
            .any(|l| l.contains("stopped")),
        "{:#?}",
        server.log
    );
}

#[test]
fn sigterm_also_shuts_down_gracefully_and_data_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = Weiport::serve(dir.path(), NO_INDEXER);
    assert!(
        first
            .stop("TERM", Duration::from_secs(5))
            .unwrap()
            .success()
    );
    // A token file left readable by others is narrowed to its owner.
    let token = dir.path().join("admin.token");
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut second = Weiport::serve(dir.path(), NO_INDEXER);
    let (status, _, _) = get(&format!("{}/readyz", second.url));
    assert_eq!(status, 200);
    let mode = std::fs::metadata(&token).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    // `weiport config` shows that a token is set, never the token.
    let printed = weiport_command(&["config"], &[("WEIPORT_ADMIN__TOKEN", "s3cret-token")])
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&printed.stdout);
    assert!(
        printed.contains("[admin]") && !printed.contains("s3cret-token"),
        "{printed}"
    );
    assert!(
        second
            .stop("TERM", Duration::from_secs(5))
            .unwrap()
            .success()
    );
}

fn refused(args: &[&str], env: &[(&str, &str)]) -> String {
    let output = weiport_command(args, env).output().unwrap();
    assert!(!output.status.success(), "should have failed: {output:?}");
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(
        stderr.trim_end().lines().count(),
        1,
        "one line expected: {stderr}"
    );
    stderr
}

#[test]
fn a_bad_config_value_exits_with_one_line_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    std::fs::write(&file, "[server]\nlisten = \"nonsense\"\n").unwrap();
    let stderr = refused(&["--config", file.to_str().unwrap(), "serve"], &[]);
    assert!(stderr.contains("server.listen"), "{stderr}");

    let stderr = refused(&["serve"], &[("WEIPORT_STORAGE__BLOCK_CACHE_MB", "lots")]);
    assert!(stderr.contains("storage.block_cache_mb"), "{stderr}");
}

#[test]
fn an_unwritable_data_dir_is_refused() {
    let stderr = refused(
        &["serve"],
        &[
            ("WEIPORT_DATA_DIR", "/proc/weiport"),
            ("WEIPORT_SERVER__LISTEN", "127.0.0.1:0"),
        ],
    );
    assert!(stderr.contains("/proc/weiport"), "{stderr}");
}

#[test]
fn a_database_of_an_unknown_schema_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    {
        // Write a future schema version the way a newer build would.
        let mut options = rocksdb::Options::default();
        options.create_if_missing(true);
        options.create_missing_column_families(true);
        let db = rocksdb::DB::open_cf(&options, dir.path(), weiport_storage::cf::ALL).unwrap();
        let meta = db.cf_handle(weiport_storage::cf::META).unwrap();
        db.put_cf(meta, b"schema_version", 999u32.to_be_bytes())
            .unwrap();
    }
    let stderr = refused(
        &["serve"],
        &[
            ("WEIPORT_DATA_DIR", dir.path().to_str().unwrap()),
            ("WEIPORT_SERVER__LISTEN", "127.0.0.1:0"),
        ],
    );
    assert!(stderr.contains("schema version 999"), "{stderr}");
}
