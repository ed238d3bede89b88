//! Logging and Prometheus metrics.

use metrics_exporter_prometheus::PrometheusHandle;
use tracing_subscriber::EnvFilter;

use crate::config::{LogConfig, LogFormat};

/// Installs the global log subscriber; `RUST_LOG` overrides `log.level`.
pub fn init_logging(config: &LogConfig) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(&config.level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    let _ = match config.format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

/// Installs the metrics recorder, with every part's metrics described.
pub fn install_metrics() -> anyhow::Result<PrometheusHandle> {
    let handle = weiport_operator::install_recorder()?;
    weiport_access::telemetry::describe(&["etherscan", "binance", "coingecko"]);
    weiport_wallet::describe_metrics();
    weiport_exchange_api::reserves::describe_metrics();
    Ok(handle)
}
