//! The nemesis's schedule: faults drawn from a seed, one at a time, each
//! held for a while and then healed. The same seed gives the same schedule.

use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// One fault the nemesis can inject.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// SIGKILL a weiport process; started again on its disk when healed.
    KillProcess(usize),
    /// SIGSTOP a weiport process; SIGCONT when healed.
    PauseProcess(usize),
    /// SIGTERM a weiport process (a graceful stop), started again at once.
    RestartProcess(usize),
    /// SIGKILL the current primary, whichever process it is.
    KillPrimary,
    /// SIGKILL Redis; started again empty when healed.
    RedisLost,
    /// SIGSTOP Redis, its data kept; SIGCONT when healed.
    RedisPaused,
    /// SIGKILL a NATS server; started again on its store when healed.
    KillNats(usize),
    /// A process's connections to Redis dropped until healed.
    CutFromRedis(usize),
    /// A process's connections to every NATS server dropped until healed.
    CutFromNats(usize),
    /// Requests forwarded to a process (as primary) dropped until healed.
    CutFromOthers(usize),
}

impl Fault {
    /// Its kind, for the tally.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::KillProcess(_) => "SIGKILL a process",
            Self::PauseProcess(_) => "SIGSTOP/SIGCONT a process",
            Self::RestartProcess(_) => "SIGTERM and restart a process",
            Self::KillPrimary => "SIGKILL the primary",
            Self::RedisLost => "Redis killed, back empty",
            Self::RedisPaused => "Redis paused, back with its data",
            Self::KillNats(_) => "SIGKILL a NATS server",
            Self::CutFromRedis(_) => "a process cut off from Redis",
            Self::CutFromNats(_) => "a process cut off from NATS",
            Self::CutFromOthers(_) => "a process cut off from the others",
        }
    }

    /// Whether it touches what budgets and keys are shared through.
    pub fn touches_redis(&self) -> bool {
        matches!(
            self,
            Self::RedisLost | Self::RedisPaused | Self::CutFromRedis(_)
        )
    }

    /// Whether a process dies without handing back what it holds.
    pub fn kills(&self) -> bool {
        matches!(self, Self::KillProcess(_) | Self::KillPrimary)
    }
}

/// A fault, how long it is held, and the calm after it is healed.
#[derive(Debug, Clone, Copy)]
pub struct Step {
    pub fault: Fault,
    pub hold: Duration,
    pub calm: Duration,
}

/// The schedule of `seed` filling `length`.
pub fn schedule(seed: u64, length: Duration, processes: usize, nats: usize) -> Vec<Step> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut steps = Vec::new();
    let mut total = Duration::ZERO;
    while total < length {
        let process = rng.random_range(0..processes);
        let fault = match rng.random_range(0..10) {
            0 => Fault::KillProcess(process),
            1 => Fault::PauseProcess(process),
            2 => Fault::RestartProcess(process),
            3 => Fault::KillPrimary,
            4 => Fault::RedisLost,
            5 => Fault::RedisPaused,
            6 => Fault::KillNats(rng.random_range(0..nats)),
            7 => Fault::CutFromRedis(process),
            8 => Fault::CutFromNats(process),
            _ => Fault::CutFromOthers(process),
        };
        let hold = Duration::from_millis(rng.random_range(500..4_000));
        let calm = Duration::from_millis(rng.random_range(1_000..4_000));
        total += hold + calm;
        steps.push(Step { fault, hold, calm });
    }
    steps
}

#[test]
fn a_seed_gives_the_same_schedule() {
    let length = Duration::from_secs(120);
    let first = schedule(7, length, 3, 3);
    let again = schedule(7, length, 3, 3);
    assert_eq!(format!("{first:?}"), format!("{again:?}"));
    assert_ne!(
        format!("{first:?}"),
        format!("{:?}", schedule(8, length, 3, 3))
    );
}
