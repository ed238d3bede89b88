//! The metrics recorder every crate records into, and the figures the
//! process itself keeps: panics and the data dir's disk.

use metrics_exporter_prometheus::{BuildError, PrometheusBuilder, PrometheusHandle};

/// Installs the global metrics recorder and returns the handle `/metrics`
/// renders; must run inside the Tokio runtime (it spawns the recorder's
/// upkeep task). Latencies (names ending `_seconds`) get buckets from
/// 100 µs to 2.5 s. Panics are counted from here on.
pub fn install_recorder() -> Result<PrometheusHandle, BuildError> {
    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(
            metrics_exporter_prometheus::Matcher::Suffix("_seconds".into()),
            &[
                0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 2.5,
            ],
        )?
        .install_recorder()?;
    metrics::describe_counter!(PANICS, "Panics in any thread (each is a bug)");
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
    // Shown at zero from the start: an alert on its increase needs a
    // series before the first event.
    metrics::counter!(PANICS).absolute(0);
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
