//! A request body under a deadline.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes, HttpBody};

/// The request body was not sent within `server.body_read_timeout_secs`.
#[derive(Debug, thiserror::Error)]
#[error("request body not received in time")]
pub struct BodyTimedOut;

/// A request body that fails once its deadline passes. The timer is set
/// only when the body has to be waited for: a small body arrives with its
/// head, and most requests then never touch the runtime's timers.
pub(crate) struct DeadlineBody {
    inner: Body,
    deadline: tokio::time::Instant,
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl DeadlineBody {
    /// `inner`, failing once `deadline` passes before it is all read.
    pub(crate) fn new(inner: Body, deadline: tokio::time::Instant) -> Self {
        Self {
            inner,
            deadline,
            timer: None,
        }
    }
}

impl HttpBody for DeadlineBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            return Poll::Ready(frame);
        }
        let deadline = self.deadline;
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(axum::Error::new(BodyTimedOut)))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}
