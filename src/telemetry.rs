//! Logging and Prometheus metrics.

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
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

/// Installs the global metrics recorder and returns the handle that renders it;
/// must run inside the Tokio runtime (it spawns the recorder's upkeep task).
pub fn install_metrics() -> anyhow::Result<PrometheusHandle> {
    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(
            metrics_exporter_prometheus::Matcher::Suffix("_seconds".into()),
            &[
                0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 2.5,
            ],
        )?
        .install_recorder()?;
    metrics::describe_counter!(
        weiport_access::telemetry::REQUESTS,
        "HTTP requests answered, by route and status"
    );
    metrics::describe_histogram!(
        weiport_access::telemetry::DURATION,
        metrics::Unit::Seconds,
        "Time to answer an HTTP request, by route"
    );
    Ok(handle)
}
