//! Loading: defaults, files and environment variables merged, and every
//! refusal naming its key.

use super::*;

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn with_file(text: &str) -> Result<Config, ConfigError> {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), text).unwrap();
    Config::load(Some(file.path()), env(&[]))
}

#[test]
fn embedded_defaults_load() {
    let config = Config::load(None, env(&[])).unwrap();
    assert_eq!(config.server.listen, "127.0.0.1:8080".parse().unwrap());
    assert_eq!(config.log.format, LogFormat::Text);
}

#[test]
fn file_overrides_defaults_and_env_overrides_file() {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        file.path(),
        "[server]\nlisten = \"127.0.0.1:9000\"\nshutdown_grace_secs = 2\n",
    )
    .unwrap();
    let config = Config::load(
        Some(file.path()),
        env(&[
            ("WEIPORT_SERVER__LISTEN", "127.0.0.1:9001"),
            ("WEIPORT_DATA_DIR", "/tmp/x"),
        ]),
    )
    .unwrap();
    assert_eq!(config.server.listen.port(), 9001);
    assert_eq!(config.server.shutdown_grace_secs, 2);
    assert_eq!(config.data_dir, PathBuf::from("/tmp/x"));
}

#[test]
fn a_bad_value_names_its_key() {
    let err = with_file("[server]\nlisten = \"nonsense\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("`server.listen`"), "{err}");
    let err = Config::load(None, env(&[("WEIPORT_NODE__MAX_RETRIES", "many")]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("`node.max_retries`"), "{err}");
    let err = with_file("[node]\nurl = \"ftp://x\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("`node.url`"), "{err}");
    let err = with_file("[log]\nformat = \"xml\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("`log.format`"), "{err}");
}

#[test]
fn unknown_keys_are_refused_with_their_source() {
    let err = with_file("[server]\nlisen = \"127.0.0.1:1\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("`server.lisen`"), "{err}");
    let err = Config::load(None, env(&[("WEIPORT_SERVR__LISTEN", "x")]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("WEIPORT_SERVR__LISTEN"), "{err}");
}

#[test]
fn query_tiers_are_named_freely_in_files() {
    let config =
        with_file("[access.query_tiers]\ngold = 50\n[access]\ndefault_tier = \"gold\"\n").unwrap();
    assert_eq!(config.access.query_tiers.get("gold"), Some(&50));
    assert!(
        !config.access.query_tiers.contains_key("default"),
        "the table is replaced whole"
    );
    let err = with_file("[access.query_tiers]\ngold = 0\n")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("access.query_tiers") || err.contains("access.default_tier"),
        "{err}"
    );
}

#[test]
fn variables_that_are_not_config_keys_are_left_alone() {
    Config::load(None, env(&[("WEIPORT_MASTER_KEY", "k"), ("OTHER", "x")])).unwrap();
}

#[test]
fn the_hot_wallet_key_is_checked_and_never_printed() {
    let key = "0x2a871d0798f97d79848a013d4936a73bf4cc922c825d33c1cf7073dff6d409c6";
    let config = Config::load(None, env(&[("WEIPORT_WALLET__HOT_WALLET_KEY", key)])).unwrap();
    let shown = toml::to_string(&config.redacted()).unwrap();
    assert!(!shown.contains(&key[2..]), "{shown}");
    let err = Config::load(None, env(&[("WEIPORT_WALLET__HOT_WALLET_KEY", "0x12")]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("wallet.hot_wallet_key"), "{err}");
    let err = Config::load(None, env(&[("WEIPORT_WALLET__COIN", "DOGE")]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("wallet.coin"), "{err}");
}

#[test]
fn the_admin_api_stays_on_loopback_unless_allowed() {
    let remote = [("WEIPORT_ADMIN__LISTEN", "0.0.0.0:8081")];
    let err = Config::load(None, env(&remote)).unwrap_err().to_string();
    assert!(err.contains("admin.listen"), "{err}");
    let allowed = [
        ("WEIPORT_ADMIN__LISTEN", "0.0.0.0:8081"),
        ("WEIPORT_ADMIN__ALLOW_REMOTE", "true"),
    ];
    Config::load(None, env(&allowed)).unwrap();
    Config::load(None, env(&[("WEIPORT_ADMIN__LISTEN", "[::1]:8081")])).unwrap();
}
