//! One connection as the watchdog and the application see it: when bytes
//! arrived, which requests are with the application, and the service that
//! hands them over.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, HttpBody};
use axum::extract::ConnectInfo;
use axum::http::Request;
use axum::response::Response;
use hyper::body::Incoming;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use crate::ConnectionLimits;
use crate::admission::Slot;
use crate::body::DeadlineBody;

/// Milliseconds since the first call: a cheap monotonic clock for atomics.
fn clock_ms() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_millis() as u64 + 1
}

/// What the watchdog knows of a connection.
pub(crate) struct ConnectionState {
    /// Requests handed to the application and not yet answered.
    in_flight: AtomicU32,
    /// When the connection last became idle.
    idle_since_ms: AtomicU64,
    /// When the first byte of the next request arrived (0: none yet).
    head_started_ms: AtomicU64,
}

impl ConnectionState {
    /// A connection just accepted: idle from now.
    pub(crate) fn new() -> Self {
        Self {
            in_flight: AtomicU32::new(0),
            idle_since_ms: AtomicU64::new(clock_ms()),
            head_started_ms: AtomicU64::new(0),
        }
    }

    /// When the connection must be closed unless it makes progress; `None`
    /// while a request is with the application (its body has its own limit).
    fn deadline_ms(&self, limits: &ConnectionLimits) -> Option<u64> {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return None;
        }
        let head = self.head_started_ms.load(Ordering::Acquire);
        Some(if head != 0 {
            head + limits.header_read_timeout.as_millis() as u64
        } else {
            self.idle_since_ms.load(Ordering::Acquire) + limits.keep_alive_idle.as_millis() as u64
        })
    }

    /// Whether the connection missed its deadline.
    pub(crate) fn expired(&self, limits: &ConnectionLimits) -> bool {
        self.deadline_ms(limits)
            .is_some_and(|deadline| clock_ms() >= deadline)
    }

    /// How long to sleep before looking again: until the deadline, but no
    /// longer than a header timeout, since a request may start meanwhile.
    pub(crate) fn next_check(&self, limits: &ConnectionLimits) -> Duration {
        let most = limits.header_read_timeout;
        match self.deadline_ms(limits) {
            Some(deadline) => {
                Duration::from_millis(deadline.saturating_sub(clock_ms()) + 1).min(most)
            }
            None => most,
        }
    }

    fn bytes_read(&self) {
        if self.in_flight.load(Ordering::Acquire) == 0
            && self.head_started_ms.load(Ordering::Acquire) == 0
        {
            self.head_started_ms.store(clock_ms(), Ordering::Release);
        }
    }

    fn enter(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        self.head_started_ms.store(0, Ordering::Release);
        InFlight(self.clone())
    }
}

/// A request with the application; the connection is idle again when the
/// last one is answered (or abandoned).
struct InFlight(Arc<ConnectionState>);

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle_since_ms.store(clock_ms(), Ordering::Release);
        }
    }
}

/// The socket, noting when bytes arrive; holds the connection's admission
/// slot, so an upgraded (WebSocket) connection keeps counting until closed.
pub(crate) struct Watched {
    inner: TcpStream,
    state: Arc<ConnectionState>,
    _slot: Slot,
}

impl Watched {
    /// `inner`, reporting its reads to `state` and holding `slot` until closed.
    pub(crate) fn new(inner: TcpStream, state: Arc<ConnectionState>, slot: Slot) -> Self {
        Self {
            inner,
            state,
            _slot: slot,
        }
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let result = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.state.bytes_read();
        }
        result
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// The application as one connection sees it: the peer's address in the
/// request, the request counted in flight, its body under a deadline.
#[derive(Clone)]
pub(crate) struct ConnectionService {
    app: Router,
    peer: SocketAddr,
    state: Arc<ConnectionState>,
    body_read_timeout: Duration,
}

impl ConnectionService {
    /// `app` serving the connection from `peer` whose watchdog reads `state`.
    pub(crate) fn new(
        app: Router,
        peer: SocketAddr,
        state: Arc<ConnectionState>,
        body_read_timeout: Duration,
    ) -> Self {
        Self {
            app,
            peer,
            state,
            body_read_timeout,
        }
    }
}

impl tower::Service<Request<Incoming>> for ConnectionService {
    type Response = Response;
    type Error = Infallible;
    type Future = Answering;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Incoming>) -> Self::Future {
        let in_flight = self.state.enter();
        let timeout = self.body_read_timeout;
        let mut request = request.map(|incoming| {
            if incoming.is_end_stream() {
                Body::new(incoming)
            } else {
                Body::new(DeadlineBody::new(
                    Body::new(incoming),
                    tokio::time::Instant::now() + timeout,
                ))
            }
        });
        request.extensions_mut().insert(ConnectInfo(self.peer));
        // The router is always ready: called directly, its future needs no box.
        Answering {
            answer: tower::Service::call(&mut self.app, request),
            _in_flight: in_flight,
        }
    }
}

/// A request with the application: the router's answer, and the mark that
/// keeps the connection busy until the answer is dropped.
pub(crate) struct Answering {
    answer: axum::routing::future::RouteFuture<Infallible>,
    _in_flight: InFlight,
}

impl Future for Answering {
    type Output = Result<Response, Infallible>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.answer).poll(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_and_half_sent_heads_get_their_own_deadlines() {
        let limits = crate::test_limits();
        let state = Arc::new(ConnectionState::new());
        let idle = state.deadline_ms(&limits).unwrap();
        assert!(idle >= clock_ms() + 4_000, "keep-alive deadline");
        state.bytes_read();
        let head = state.deadline_ms(&limits).unwrap();
        assert!(head < idle && head <= clock_ms() + 1_000, "header deadline");
        let in_flight = state.enter();
        assert_eq!(state.deadline_ms(&limits), None);
        // Bytes of the body, or of a pipelined request, while busy.
        state.bytes_read();
        drop(in_flight);
        assert!(state.deadline_ms(&limits).unwrap() >= clock_ms() + 4_000);
    }
}
