//! weiport's HTTP listener: admits connections within caps, serves HTTP/1.1
//! with upgrades (WebSockets), and closes connections whose client is too
//! slow: a request head not finished in time, a body not sent in time, an
//! idle keep-alive connection. No client can hold sockets or tasks for free.
//!
//! ```text
//! accept ─► Admission::admit ─► connection ─► hyper http1 ─► ConnectionService ─► Router
//!            (caps: in all,        │ (watchdog: head, idle)     (peer address,
//!             per address)         └─ Watched socket             body deadline)
//! ```

#![warn(unreachable_pub)]

mod admission;
mod body;
mod connection;

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use weiport_access::IpRule;

use crate::admission::{Admission, Slot};
use crate::connection::{ConnectionService, ConnectionState, Watched};

pub use crate::body::BodyTimedOut;

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
    let io = TokioIo::new(Watched::new(stream, state.clone(), slot));
    let service = ConnectionService::new(app, peer, state.clone(), limits.body_read_timeout);
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

/// Short timeouts and small caps, one proxy network uncapped: the limits
/// the modules' tests run under.
#[cfg(test)]
fn test_limits() -> ConnectionLimits {
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
