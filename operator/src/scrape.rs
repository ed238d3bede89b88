//! `/metrics`: the recorded metrics, with the figures read at the scrape
//! itself (process, database engine, cluster) set just before rendering.

use std::sync::Mutex;

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use crate::{Build, Figures, Operator};

const BUILD_INFO: &str = "weiport_build_info";
const CPU: &str = "process_cpu_seconds_total";
const RESIDENT: &str = "process_resident_memory_bytes";
const VIRTUAL: &str = "process_virtual_memory_bytes";
const OPEN_FDS: &str = "process_open_fds";
const MAX_FDS: &str = "process_max_fds";
const START_TIME: &str = "process_start_time_seconds";
const THREADS: &str = "process_threads";
const LIVE_DATA: &str = "weiport_rocksdb_live_data_bytes";
const PENDING_COMPACTION: &str = "weiport_rocksdb_pending_compaction_bytes";
const WRITES_STOPPED: &str = "weiport_rocksdb_writes_stopped";
const DELAYED_WRITE_RATE: &str = "weiport_rocksdb_delayed_write_rate_bytes";
const STALL: &str = "weiport_rocksdb_stall_microseconds_total";
const CACHE_HITS: &str = "weiport_rocksdb_block_cache_hits_total";
const CACHE_MISSES: &str = "weiport_rocksdb_block_cache_misses_total";
const CACHE_BYTES: &str = "weiport_rocksdb_block_cache_bytes";
const ROLE: &str = "weiport_cluster_role";
const LEASE_HOLDER: &str = "weiport_cluster_lease_holder";
const APPLIED: &str = "weiport_journal_applied_entry";
const JOURNAL_LAST: &str = "weiport_journal_last_entry";
const JOURNAL_LAG: &str = "weiport_journal_lag_entries";
const REDIS_UP: &str = "weiport_cluster_redis_up";
const PROCESSES: &str = "weiport_cluster_processes";

/// The roles `weiport_cluster_role` has a series for, one of them 1.
const ROLES: [&str; 3] = ["alone", "primary", "follower"];

/// Describes the metrics set here, and sets the build's.
pub(crate) fn describe(build: Build) {
    use metrics::{Unit, describe_counter, describe_gauge};
    describe_gauge!(
        BUILD_INFO,
        "Always 1; the build's version and profile as labels"
    );
    // A gauge: the recorder's counters are whole numbers, and whole seconds
    // are too coarse for a rate over minutes. `rate()` reads it all the same.
    describe_gauge!(CPU, Unit::Seconds, "User and system CPU time spent");
    describe_gauge!(RESIDENT, Unit::Bytes, "Resident memory size");
    describe_gauge!(VIRTUAL, Unit::Bytes, "Virtual memory size");
    describe_gauge!(OPEN_FDS, "Open file descriptors");
    describe_gauge!(MAX_FDS, "The limit on open file descriptors");
    describe_gauge!(
        START_TIME,
        Unit::Seconds,
        "Start time of the process since the Unix epoch"
    );
    describe_gauge!(THREADS, "Threads of the process");
    describe_gauge!(
        LIVE_DATA,
        Unit::Bytes,
        "Estimated live data of each column family"
    );
    describe_gauge!(
        PENDING_COMPACTION,
        Unit::Bytes,
        "Bytes compaction must rewrite to bring every level in shape (writes slow, then stop, as it grows)"
    );
    describe_gauge!(WRITES_STOPPED, "1 while the database stops writes");
    describe_gauge!(
        DELAYED_WRITE_RATE,
        Unit::Bytes,
        "Rate writes are held to while slowed, bytes a second (0: not slowed)"
    );
    describe_counter!(
        STALL,
        Unit::Microseconds,
        "Time writers waited on write stalls"
    );
    describe_counter!(CACHE_HITS, "Block cache lookups answered from memory");
    describe_counter!(CACHE_MISSES, "Block cache lookups that read a file");
    describe_gauge!(CACHE_BYTES, Unit::Bytes, "Bytes the block cache holds");
    describe_gauge!(
        ROLE,
        "1 for this process's role in the exchange cluster (alone, primary, follower)"
    );
    describe_gauge!(
        LEASE_HOLDER,
        "1 for the process holding the primary's lease, as this process last read it"
    );
    describe_gauge!(
        APPLIED,
        "The journal entry this process last applied or appended"
    );
    describe_gauge!(JOURNAL_LAST, "The journal's last entry, as last read");
    describe_gauge!(JOURNAL_LAG, "Journal entries not yet applied here");
    describe_gauge!(REDIS_UP, "1 while the shared key store (Redis) answers");
    describe_gauge!(
        PROCESSES,
        "Processes of the cluster alive at the last heartbeat"
    );
    metrics::gauge!(BUILD_INFO, "version" => build.version, "profile" => build.profile).set(1.0);
}

/// What the previous scrape set, so that a series whose label changed is
/// set to 0 rather than left at its last value.
#[derive(Default)]
pub(crate) struct Scrape {
    lease_holder: Mutex<Option<String>>,
}

impl Scrape {
    /// Sets every gauge and counter read at the scrape from `figures`.
    pub(crate) fn update(&self, figures: &dyn Figures) {
        use metrics::{counter, gauge};
        if let Some(process) = crate::process::read() {
            gauge!(CPU).set(process.cpu_seconds);
            gauge!(RESIDENT).set(process.resident_bytes as f64);
            gauge!(VIRTUAL).set(process.virtual_bytes as f64);
            gauge!(OPEN_FDS).set(process.open_fds as f64);
            gauge!(MAX_FDS).set(process.max_fds as f64);
            gauge!(START_TIME).set(process.start_time_seconds);
            gauge!(THREADS).set(process.threads as f64);
        }

        let engine = figures.engine();
        for (family, bytes) in &engine.live_bytes {
            gauge!(LIVE_DATA, "family" => family.clone()).set(*bytes as f64);
        }
        gauge!(PENDING_COMPACTION).set(engine.pending_compaction_bytes as f64);
        gauge!(WRITES_STOPPED).set(f64::from(u8::from(engine.writes_stopped)));
        gauge!(DELAYED_WRITE_RATE).set(engine.delayed_write_rate as f64);
        counter!(STALL).absolute(engine.stall_micros);
        counter!(CACHE_HITS).absolute(engine.block_cache_hits);
        counter!(CACHE_MISSES).absolute(engine.block_cache_misses);
        gauge!(CACHE_BYTES).set(engine.block_cache_bytes as f64);

        let cluster = figures.cluster();
        let role = match &cluster {
            None => "alone",
            Some(c) if c.leading => "primary",
            Some(_) => "follower",
        };
        for name in ROLES {
            gauge!(ROLE, "role" => name).set(f64::from(u8::from(name == role)));
        }
        let Some(cluster) = cluster else {
            return;
        };
        gauge!(APPLIED).set(cluster.applied_entry as f64);
        gauge!(JOURNAL_LAST).set(cluster.journal_entry as f64);
        gauge!(JOURNAL_LAG).set(cluster.journal_entry.saturating_sub(cluster.applied_entry) as f64);
        gauge!(REDIS_UP).set(f64::from(u8::from(cluster.redis_reachable)));
        gauge!(PROCESSES).set(f64::from(cluster.processes));
        let mut last = self
            .lease_holder
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if *last != cluster.lease_holder {
            if let Some(previous) = last.take() {
                gauge!(LEASE_HOLDER, "holder" => previous).set(0.0);
            }
            if let Some(holder) = &cluster.lease_holder {
                gauge!(LEASE_HOLDER, "holder" => holder.clone()).set(1.0);
            }
            *last = cluster.lease_holder;
        }
    }
}

/// `GET /metrics`.
pub(crate) async fn metrics(State(operator): State<Operator>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        operator.render(),
    )
        .into_response()
}
