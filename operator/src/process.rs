//! The standard `process_*` metrics, read from `/proc` at each scrape.

/// What `/proc` tells of this process.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct ProcessFigures {
    /// User and system CPU time, seconds.
    pub cpu_seconds: f64,
    /// Resident memory, bytes.
    pub resident_bytes: u64,
    /// Virtual memory, bytes.
    pub virtual_bytes: u64,
    /// Open file descriptors.
    pub open_fds: u64,
    /// The soft limit on open file descriptors.
    pub max_fds: u64,
    /// When the process started, seconds since the Unix epoch.
    pub start_time_seconds: f64,
    /// Threads.
    pub threads: u64,
}

/// This process's figures, or none where `/proc` is not mounted.
pub(crate) fn read() -> Option<ProcessFigures> {
    // The boot time never changes: /proc/stat (a line per CPU and interrupt)
    // is read once, not at every scrape.
    static BOOT_SECONDS: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    let boot =
        (*BOOT_SECONDS.get_or_init(|| boot_time(&std::fs::read_to_string("/proc/stat").ok()?)))?;
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // SAFETY: sysconf reads a constant of the system; no memory is passed.
    let (ticks, page) = unsafe {
        (
            libc::sysconf(libc::_SC_CLK_TCK),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    let mut figures = parse(&stat, boot, ticks.max(1) as f64, page.max(1) as u64)?;
    figures.open_fds = std::fs::read_dir("/proc/self/fd").ok()?.count() as u64;
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a writable rlimit the call fills.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        figures.max_fds = limit.rlim_cur;
    }
    Some(figures)
}

/// The boot time in `/proc/stat`, seconds since the Unix epoch.
fn boot_time(proc_stat: &str) -> Option<u64> {
    proc_stat
        .lines()
        .find_map(|line| line.strip_prefix("btime "))?
        .trim()
        .parse::<u64>()
        .ok()
}

/// The figures in `/proc/self/stat` (`stat`), its start time placed by the
/// boot time (`boot_seconds`).
fn parse(
    stat: &str,
    boot_seconds: u64,
    ticks_per_second: f64,
    page_bytes: u64,
) -> Option<ProcessFigures> {
    // The command name (field 2) is in parentheses and may hold spaces and
    // parentheses itself: the fields after it start after its last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `fields[0]` is field 3 (state); field N is fields[N - 3].
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    Some(ProcessFigures {
        cpu_seconds: (field(14)? + field(15)?) as f64 / ticks_per_second,
        threads: field(20)?,
        start_time_seconds: boot_seconds as f64 + field(22)? as f64 / ticks_per_second,
        virtual_bytes: field(23)?,
        resident_bytes: field(24)? * page_bytes,
        ..ProcessFigures::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_is_read_past_a_command_name_with_spaces_and_parentheses() {
        let stat = "4242 (we (i) port) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 50 0 0 20 0 7 0 1000 104857600 2560 18446744073709551615";
        let boot = "cpu  1 2 3\nbtime 1700000000\nprocesses 9\n";
        let figures = parse(stat, boot_time(boot).unwrap(), 100.0, 4096).unwrap();
        assert_eq!(
            figures,
            ProcessFigures {
                cpu_seconds: 3.0,
                resident_bytes: 2560 * 4096,
                virtual_bytes: 104_857_600,
                threads: 7,
                start_time_seconds: 1_700_000_010.0,
                ..ProcessFigures::default()
            }
        );
        assert!(parse("garbage", 1_700_000_000, 100.0, 4096).is_none());
        assert!(boot_time("cpu  1 2 3\n").is_none());
    }

    #[test]
    fn this_process_is_read() {
        let figures = read().unwrap();
        assert!(figures.resident_bytes > 0 && figures.virtual_bytes >= figures.resident_bytes);
        assert!(figures.open_fds > 0 && figures.max_fds >= figures.open_fds);
        assert!(figures.threads >= 1);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        assert!(
            figures.start_time_seconds > now - 86_400.0 * 365.0
                && figures.start_time_seconds <= now + 1.0
        );
    }
}
