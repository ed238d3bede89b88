//! A follower's way to the primary: a command this process may not sequence
//! (it follows the replicated journal) is sent to the primary, and answered
//! from this process's own replay of it once that replay has passed it, so
//! the answer is the one the primary's engine gave and the client's next
//! read here sees its write. The transport is the server's to provide.

use std::future::Future;
use std::pin::Pin;

/// What the primary did with a forwarded command.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Forwarded {
    /// Sequenced as this command-log sequence.
    Accepted {
        /// Its sequence.
        sequence: u64,
    },
    /// Refused, with the primary's answer.
    Refused {
        /// HTTP status.
        status: u16,
        /// Binance code.
        code: i32,
        /// Binance message.
        msg: String,
    },
}

/// Sends a command (in the command log's layout) to the primary.
pub trait PrimaryLink: Send + Sync {
    /// The primary's verdict, or why it could not be had.
    fn forward(
        &self,
        command: Vec<u8>,
    ) -> Pin<Box<dyn Future<Output = Result<Forwarded, String>> + Send + '_>>;
}
