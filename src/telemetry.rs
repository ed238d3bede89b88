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
    metrics::describe_counter!(PANICS, "Panics in any thread (each is a bug)");
    metrics::describe_counter!(
        weiport_access::telemetry::RATE_LIMITED,
        "Requests refused for a rate limit (429) or a ban (418), by face"
    );
    metrics::describe_gauge!(
        weiport_wallet::WITHDRAWALS_PROCESSING_METRIC,
        "Withdrawals asked for and not yet final on chain"
    );
    metrics::describe_gauge!(
        weiport_wallet::OLDEST_WITHDRAWAL_SECONDS_METRIC,
        metrics::Unit::Seconds,
        "Age of the oldest withdrawal not yet final (0: none)"
    );
    metrics::describe_gauge!(
        DATA_DIR_AVAILABLE,
        metrics::Unit::Bytes,
        "Space left to the server on the data dir's file system"
    );
    metrics::describe_gauge!(
        DATA_DIR_TOTAL,
        metrics::Unit::Bytes,
        "Size of the data dir's file system"
    );
    // Shown at zero from the start: an alert on their increase needs a
    // series before the first event.
    metrics::counter!(PANICS).absolute(0);
    for face in ["etherscan", "binance", "coingecko"] {
        for status in ["429", "418"] {
            metrics::counter!(weiport_access::telemetry::RATE_LIMITED, "face" => face, "status" => status)
                .absolute(0);
        }
    }
    count_panics();
    Ok(handle)
}

/// Panics in any thread (counter).
const PANICS: &str = "weiport_panics_total";
/// Space left on the data dir's file system (gauge, bytes).
const DATA_DIR_AVAILABLE: &str = "weiport_data_dir_available_bytes";
/// Size of the data dir's file system (gauge, bytes).
const DATA_DIR_TOTAL: &str = "weiport_data_dir_total_bytes";

/// Counts every panic, then lets the previous hook report it.
fn count_panics() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        metrics::counter!(PANICS).increment(1);
        previous(info);
    }));
}

/// Measures the data dir's file system every `every` until the runtime
/// stops: a full disk stops the exchange's writes, so the operator is told
/// before.
pub fn watch_disk(data_dir: std::path::PathBuf, every: std::time::Duration) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        loop {
            tick.tick().await;
            if let Some((available, total)) = disk_space(&data_dir) {
                metrics::gauge!(DATA_DIR_AVAILABLE).set(available as f64);
                metrics::gauge!(DATA_DIR_TOTAL).set(total as f64);
            }
        }
    });
}

/// Bytes available to an unprivileged user and in all, on the file system of `path`.
#[allow(
    clippy::useless_conversion,
    reason = "statvfs's field types are the platform's; u64 here, narrower elsewhere"
)]
fn disk_space(path: &std::path::Path) -> Option<(u64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut stats = std::mem::MaybeUninit::<libc::statvfs>::zeroed();
    // SAFETY: `path` is a NUL-terminated string that outlives the call and
    // `stats` is writable memory of the size statvfs fills.
    let status = unsafe { libc::statvfs(path.as_ptr(), stats.as_mut_ptr()) };
    if status != 0 {
        return None;
    }
    // SAFETY: statvfs returned 0, so it filled `stats`.
    let stats = unsafe { stats.assume_init() };
    let block = u64::from(stats.f_frsize);
    Some((
        u64::from(stats.f_bavail) * block,
        u64::from(stats.f_blocks) * block,
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_disk_of_a_directory_is_measured() {
        let (available, total) = super::disk_space(std::path::Path::new(".")).unwrap();
        assert!(total > 0 && available <= total);
        assert!(super::disk_space(std::path::Path::new("/no/such/dir")).is_none());
    }
}
