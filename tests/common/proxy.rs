//! A TCP proxy in front of the real node that injects faults a real node
//! cannot be asked to produce: dropped connections and garbage answers.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// What the proxy does with connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Forward bytes both ways.
    None,
    /// Close every connection at once, including open ones.
    Drop,
    /// Answer every request with HTTP 200 and a body that is not JSON.
    Garbage,
    /// Accept connections and never answer, until the fault changes.
    Stall,
}

pub struct FaultProxy {
    pub url: String,
    mode: watch::Sender<Fault>,
    faulted: Arc<AtomicU64>,
}

impl FaultProxy {
    /// Listens on an OS-chosen loopback port and forwards to `upstream` (`http://host:port`).
    pub async fn start(upstream: &str) -> Self {
        let upstream: SocketAddr = upstream.trim_start_matches("http://").parse().unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (mode, _) = watch::channel(Fault::None);
        let modes = mode.clone();
        let faulted = Arc::new(AtomicU64::new(0));
        let counted = faulted.clone();
        tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let mut changes = modes.subscribe();
                let fault = *changes.borrow_and_update();
                if fault != Fault::None {
                    counted.fetch_add(1, Ordering::Relaxed);
                }
                tokio::spawn(async move {
                    let mut inbound = inbound;
                    match fault {
                        Fault::Drop => {}
                        Fault::Stall => {
                            let _ = changes.wait_for(|f| *f != Fault::Stall).await;
                            drop(inbound);
                        }
                        Fault::Garbage => {
                            let mut buf = [0u8; 4096];
                            let _ = tokio::io::AsyncReadExt::read(&mut inbound, &mut buf).await;
                            let body = "{\"jsonrpc\":\"2.0\",\"id\":";
                            let response = format!(
                                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                                body.len()
                            );
                            let _ = inbound.write_all(response.as_bytes()).await;
                        }
                        Fault::None => {
                            let Ok(mut outbound) = TcpStream::connect(upstream).await else {
                                return;
                            };
                            tokio::select! {
                                _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                                _ = changes.wait_for(|f| *f != Fault::None) => {}
                            }
                        }
                    }
                });
            }
        });
        Self { url, mode, faulted }
    }

    pub fn set(&self, fault: Fault) {
        self.mode.send_replace(fault);
    }

    /// Connections met with a fault so far (dropped, answered with
    /// garbage, or held stalled): each one a call the client could not
    /// complete.
    pub fn faulted(&self) -> u64 {
        self.faulted.load(Ordering::Relaxed)
    }
}
