//! The HTTP listener: admits connections within caps, serves HTTP/1.1 with
//! upgrades (WebSockets), and closes connections whose client is too slow:
//! a request head not finished in time, a body not sent in time, an idle
//! keep-alive connection. No client can hold sockets or tasks for free.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::ConnectInfo;
use axum::http::Request;
use axum::response::Response;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, watch};
use weiport_access::IpRule;

/// Bytes the kernel may hold for a connection's unsent output (Linux
/// doubles it for its bookkeeping). Left to autotuning, a stream subscriber
/// that never reads absorbs megabytes of frames, each written at full cost,
/// before its buffer in the hub fills and the hub drops it; this bound
/// makes that happen within a few hundred frames, and still carries the
/// largest REST answer (depth of 5,000 levels) in one go.
const SEND_BUFFER: usize = 256 * 1024;

/// How long and how many: the listener's protection against slow and
/// numerous clients.
#[derive(Debug, Clone)]
pub struct ConnectionLimits {
    /// Time to finish a request head once its first byte arrived.
    pub header_read_timeout: Duration,
    /// Time to send a request body, from the moment its head was read.
    pub body_read_timeout: Duration,
    /// Time an idle keep-alive connection stays open.
    pub keep_alive_idle: Duration,
    /// Open connections in all.
    pub max_connections: usize,
    /// Open connections from one address (IPv6: one network).
    pub max_connections_per_ip: usize,
    /// Addresses not capped per address (trusted proxies carry many clients).
    pub uncapped: Vec<IpRule>,
    /// IPv6 prefix length by which addresses are grouped.
    pub ipv6_prefix: u8,
}

/// Serves `app` on `listener` until `stop` turns true, then lets open
/// connections finish their requests and returns once all are closed.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    mut stop: watch::Receiver<bool>,
) -> io::Result<()> {
    let limits = Arc::new(limits);
    let admission = Arc::new(Admission::default());
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of descriptors or a connection reset before accept:
                    // neither ends the listener.
                    tracing::debug!(%error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            },
            _ = stop.changed() => break,
        };
        let Some(slot) = admission.admit(peer.ip(), &limits) else {
            metrics::counter!("http_connections_refused_total").increment(1);
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let _ = socket2::SockRef::from(&stream).set_send_buffer_size(SEND_BUFFER);
        tokio::spawn(connection(
            stream,
            peer,
            slot,
            app.clone(),
            limits.clone(),
            stop.clone(),
        ));
    }
    admission.drained().await;
    Ok(())
}

/// One connection, from accept to close.
async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    slot: Slot,
    app: Router,
    limits: Arc<ConnectionLimits>,
    mut stop: watch::Receiver<bool>,
) {
    let state = Arc::new(ConnectionState::new());
    let io = TokioIo::new(Watched {
        inner: stream,
        state: state.clone(),
        _slot: slot,
    });
    let service = ConnectionService {
        app,
        peer,
        state: state.clone(),
        body_read_timeout: limits.body_read_timeout,
    };
    let conn = hyper::server::conn::http1::Builder::new()
        .keep_alive(true)
        .serve_connection(io, hyper_util::service::TowerToHyperService::new(service))
        .with_upgrades();
    let mut conn = std::pin::pin!(conn);
    let mut stopping = *stop.borrow();
    if stopping {
        conn.as_mut().graceful_shutdown();
    }
    loop {
        let check = state.next_check(&limits);
        tokio::select! {
            _ = conn.as_mut() => break,
            changed = stop.changed(), if !stopping => {
                if changed.is_err() || *stop.borrow() {
                    stopping = true;
                    conn.as_mut().graceful_shutdown();
                }
            }
            () = tokio::time::sleep(check) => {
                if state.expired(&limits) {
                    metrics::counter!("http_connections_timed_out_total").increment(1);
                    break;
                }
            }
        }
    }
}

/// Milliseconds since the first call: a cheap monotonic clock for atomics.
fn clock_ms() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_millis() as u64 + 1
}

/// What the watchdog knows of a connection.
struct ConnectionState {
    /// Requests handed to the application and not yet answered.
    in_flight: AtomicU32,
    /// When the connection last became idle.
    idle_since_ms: AtomicU64,
    /// When the first byte of the next request arrived (0: none yet).
    head_started_ms: AtomicU64,
}

impl ConnectionState {
    fn new() -> Self {
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

    fn expired(&self, limits: &ConnectionLimits) -> bool {
        self.deadline_ms(limits)
            .is_some_and(|deadline| clock_ms() >= deadline)
    }

    /// How long to sleep before looking again: until the deadline, but no
    /// longer than a header timeout, since a request may start meanwhile.
    fn next_check(&self, limits: &ConnectionLimits) -> Duration {
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
struct Watched {
    inner: TcpStream,
    state: Arc<ConnectionState>,
    _slot: Slot,
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
struct ConnectionService {
    app: Router,
    peer: SocketAddr,
    state: Arc<ConnectionState>,
    body_read_timeout: Duration,
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
                Body::new(DeadlineBody {
                    inner: Body::new(incoming),
                    deadline: tokio::time::Instant::now() + timeout,
                    timer: None,
                })
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
struct Answering {
    answer: axum::routing::future::RouteFuture<Infallible>,
    _in_flight: InFlight,
}

impl Future for Answering {
    type Output = Result<Response, Infallible>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.answer).poll(cx)
    }
}

/// The request body was not sent within `server.body_read_timeout_secs`.
#[derive(Debug, thiserror::Error)]
#[error("request body not received in time")]
pub struct BodyTimedOut;

/// A request body that fails once its deadline passes. The timer is set
/// only when the body has to be waited for: a small body arrives with its
/// head, and most requests then never touch the runtime's timers.
struct DeadlineBody {
    inner: Body,
    deadline: tokio::time::Instant,
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
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

/// Counts of open connections, in all and per address.
#[derive(Default)]
struct Admission {
    total: AtomicUsize,
    per_ip: Mutex<HashMap<IpAddr, usize>>,
    closed: Notify,
}

impl Admission {
    fn admit(self: &Arc<Self>, ip: IpAddr, limits: &ConnectionLimits) -> Option<Slot> {
        if self.total.fetch_add(1, Ordering::AcqRel) >= limits.max_connections {
            self.total.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        let group = if limits.uncapped.iter().any(|rule| rule.contains(ip)) {
            None
        } else {
            Some(weiport_access::limits::client_group(ip, limits.ipv6_prefix))
        };
        if let Some(group) = group {
            let mut per_ip = self.per_ip.lock().unwrap_or_else(|e| e.into_inner());
            let open = per_ip.entry(group).or_default();
            if *open >= limits.max_connections_per_ip {
                drop(per_ip);
                self.total.fetch_sub(1, Ordering::AcqRel);
                return None;
            }
            *open += 1;
        }
        Some(Slot {
            admission: self.clone(),
            group,
        })
    }

    /// Resolves once no connection is open.
    async fn drained(&self) {
        loop {
            let closed = self.closed.notified();
            if self.total.load(Ordering::Acquire) == 0 {
                return;
            }
            closed.await;
        }
    }
}

/// One admitted connection; gives its place back when dropped.
struct Slot {
    admission: Arc<Admission>,
    group: Option<IpAddr>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(group) = self.group {
            let mut per_ip = self
                .admission
                .per_ip
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if let Some(open) = per_ip.get_mut(&group) {
                *open -= 1;
                if *open == 0 {
                    per_ip.remove(&group);
                }
            }
        }
        self.admission.total.fetch_sub(1, Ordering::AcqRel);
        self.admission.closed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> ConnectionLimits {
        ConnectionLimits {
            header_read_timeout: Duration::from_secs(1),
            body_read_timeout: Duration::from_secs(1),
            keep_alive_idle: Duration::from_secs(5),
            max_connections: 3,
            max_connections_per_ip: 2,
            uncapped: vec!["10.0.0.0/8".parse().unwrap()],
            ipv6_prefix: 64,
        }
    }

    #[test]
    fn admission_caps_per_address_and_in_all() {
        let admission = Arc::new(Admission::default());
        let limits = limits();
        let a: IpAddr = "2001:db8::1".parse().unwrap();
        let a_neighbour: IpAddr = "2001:db8::2".parse().unwrap();
        let first = admission.admit(a, &limits).unwrap();
        let _second = admission.admit(a_neighbour, &limits).unwrap();
        assert!(admission.admit(a, &limits).is_none(), "same /64");
        let _proxy = admission
            .admit("10.1.2.3".parse().unwrap(), &limits)
            .unwrap();
        assert!(
            admission
                .admit("192.0.2.1".parse().unwrap(), &limits)
                .is_none(),
            "total"
        );
        drop(first);
        assert!(admission.admit(a, &limits).is_some());
        assert_eq!(admission.total.load(Ordering::Acquire), 3 - 1);
    }

    #[test]
    fn idle_and_half_sent_heads_get_their_own_deadlines() {
        let limits = limits();
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
