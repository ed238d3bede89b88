//! The primary's lease: the last message of one subject of a small stream
//! (a key-value bucket in all but name, which Debian's server 2.9 and this
//! client disagree on), saying who leads and until when, changed only by
//! compare-and-set on that message's sequence.
//! A contender takes the lease when it is free or has lapsed by its own
//! clock; the holder renews it before it lapses. The lease says who should
//! append; the journal's fencing is what stops anyone else from doing so.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_nats::jetstream::{self, stream};
use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::{JournalError, refused};

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Who holds the lease and until when (Unix ms).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseHolder {
    /// The holder's name.
    pub holder: String,
    /// Where the holder takes work (its public URL).
    #[serde(default)]
    pub address: String,
    /// When it lapses unless renewed.
    pub until_ms: u64,
}

/// The lease as a contender found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseState {
    /// This contender holds it, at this revision of the key.
    Held {
        /// The key's revision, for the next renewal.
        revision: u64,
        /// When it lapses unless renewed.
        until_ms: u64,
    },
    /// Another holds it.
    HeldBy(LeaseHolder),
}

/// One contender's handle on a lease.
pub struct Lease {
    context: jetstream::Context,
    stream: stream::Stream,
    subject: String,
    holder: String,
    address: String,
    ttl: Duration,
}

/// The small stream holding the journal's registers (leases, settled
/// values): the last message of each subject is the register's value.
async fn registers(
    context: &jetstream::Context,
    journal: &str,
    replicas: usize,
) -> Result<stream::Stream, JournalError> {
    context
        .get_or_create_stream(stream::Config {
            name: format!("{journal}_LEASES"),
            subjects: vec![format!("{}.leases.>", journal.to_lowercase())],
            storage: stream::StorageType::File,
            num_replicas: replicas,
            max_messages_per_subject: 1,
            allow_direct: true,
            ..Default::default()
        })
        .await
        .map_err(|e| JournalError::Unreachable(e.to_string()))
}

/// The value first written under `name`: `proposed` when nothing was yet
/// (written now, only if still nothing is), or the value written first.
pub(crate) async fn settle(
    context: &jetstream::Context,
    journal: &str,
    replicas: usize,
    name: &str,
    proposed: Bytes,
) -> Result<Bytes, JournalError> {
    use async_nats::jetstream::context::PublishErrorKind;
    use async_nats::jetstream::stream::LastRawMessageErrorKind;
    let stream = registers(context, journal, replicas).await?;
    let subject = format!("{}.leases.settled.{name}", journal.to_lowercase());
    let publish = jetstream::message::PublishMessage::build()
        .payload(proposed.clone())
        .expected_last_subject_sequence(0);
    let written = async { context.send_publish(subject.clone(), publish).await?.await }.await;
    match written {
        Ok(_) => return Ok(proposed),
        Err(error) if error.kind() == PublishErrorKind::WrongLastSequence => {}
        Err(error) => return Err(JournalError::Unreachable(error.to_string())),
    }
    match stream.get_last_raw_message_by_subject(&subject).await {
        Ok(message) => Ok(message.payload),
        Err(error) if error.kind() == LastRawMessageErrorKind::NoMessageFound => Err(
            JournalError::Refused(format!("the value of {name} was written and is gone")),
        ),
        Err(error) => Err(JournalError::Unreachable(error.to_string())),
    }
}

impl Lease {
    pub(crate) async fn open(
        context: &jetstream::Context,
        journal: &str,
        replicas: usize,
        name: &str,
        holder: &str,
        address: &str,
        ttl: Duration,
    ) -> Result<Self, JournalError> {
        let stream = registers(context, journal, replicas).await?;
        Ok(Self {
            context: context.clone(),
            stream,
            subject: format!("{}.leases.{name}", journal.to_lowercase()),
            holder: holder.to_owned(),
            address: address.to_owned(),
            ttl,
        })
    }

    fn value(&self) -> (Bytes, u64) {
        let until_ms = now_ms() + self.ttl.as_millis() as u64;
        let holder = LeaseHolder {
            holder: self.holder.clone(),
            address: self.address.clone(),
            until_ms,
        };
        let bytes = serde_json::to_vec(&holder).expect("a lease serialises");
        (bytes.into(), until_ms)
    }

    /// Who holds the lease now, if anyone does and it has not lapsed.
    pub async fn current(&self) -> Result<Option<LeaseHolder>, JournalError> {
        Ok(self
            .read()
            .await?
            .and_then(|(_, holder)| (holder.until_ms > now_ms()).then_some(holder)))
    }

    /// The lease's last message: its sequence (the revision) and content.
    async fn read(&self) -> Result<Option<(u64, LeaseHolder)>, JournalError> {
        use async_nats::jetstream::stream::LastRawMessageErrorKind;
        match self
            .stream
            .get_last_raw_message_by_subject(&self.subject)
            .await
        {
            Ok(message) => {
                let holder = serde_json::from_slice(&message.payload).map_err(refused)?;
                Ok(Some((message.sequence, holder)))
            }
            Err(error) if error.kind() == LastRawMessageErrorKind::NoMessageFound => Ok(None),
            Err(error) => Err(JournalError::Unreachable(error.to_string())),
        }
    }

    /// Writes this contender's claim if the lease's revision is still
    /// `revision` (0: no claim yet); `Ok(None)` if someone wrote first.
    async fn write(&self, revision: u64) -> Result<Option<(u64, u64)>, JournalError> {
        use async_nats::jetstream::context::PublishErrorKind;
        let (value, until_ms) = self.value();
        let publish = jetstream::message::PublishMessage::build()
            .payload(value)
            .expected_last_subject_sequence(revision);
        let outcome = async {
            self.context
                .send_publish(self.subject.clone(), publish)
                .await?
                .await
        }
        .await;
        match outcome {
            Ok(ack) => Ok(Some((ack.sequence, until_ms))),
            Err(error) if error.kind() == PublishErrorKind::WrongLastSequence => Ok(None),
            Err(error) => Err(JournalError::Unreachable(error.to_string())),
        }
    }

    /// Takes the lease if it is free, lapsed or already this contender's;
    /// otherwise says who holds it.
    pub async fn acquire(&self) -> Result<LeaseState, JournalError> {
        let revision = match self.read().await? {
            None => 0,
            Some((revision, current))
                if current.holder == self.holder || current.until_ms <= now_ms() =>
            {
                revision
            }
            Some((_, current)) => return Ok(LeaseState::HeldBy(current)),
        };
        match self.write(revision).await? {
            Some((revision, until_ms)) => Ok(LeaseState::Held { revision, until_ms }),
            // Another contender wrote first: it holds the lease now.
            None => match self.read().await? {
                Some((_, current)) => Ok(LeaseState::HeldBy(current)),
                None => Err(JournalError::Refused("the lease could not be taken".into())),
            },
        }
    }

    /// Extends a held lease; `Ok(None)`: it was lost (lapsed and taken).
    pub async fn renew(&self, revision: u64) -> Result<Option<(u64, u64)>, JournalError> {
        self.write(revision).await
    }

    /// The lease's length.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }
}
