//! A deliberately small HTTP/1.1 client over one TCP connection: it sends
//! exactly the bytes given (methods, targets and bodies no library would
//! send) and tells whether the server kept the connection open.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One kept-alive connection to a server.
pub struct Connection {
    stream: TcpStream,
    buffer: Vec<u8>,
}

/// A response: status, headers (lower-case names) and body.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Answer {
    /// The body as JSON (panics with the body's text if it is not).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|_| {
            panic!(
                "not JSON (status {}): {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

impl Connection {
    /// Connects to `url` (`http://host:port`).
    pub async fn open(url: &str) -> Self {
        let address = url.trim_start_matches("http://");
        Self {
            stream: TcpStream::connect(address).await.unwrap(),
            buffer: Vec::new(),
        }
    }

    /// Sends raw bytes.
    pub async fn send_raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes).await
    }

    /// Sends a request and reads its answer; `None` if the server closed
    /// the connection instead of answering.
    pub async fn request(
        &mut self,
        method: &str,
        target: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Option<Answer> {
        let mut head = format!("{method} {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n");
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if !body.is_empty() || method == "POST" {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(body);
        self.send_raw(&bytes).await.ok()?;
        self.read_answer().await
    }

    /// Reads one answer (Content-Length bodies only, which is all the
    /// server sends for these requests).
    pub async fn read_answer(&mut self) -> Option<Answer> {
        let head_end = loop {
            if let Some(at) = find(&self.buffer, b"\r\n\r\n") {
                break at;
            }
            if !self.fill().await {
                return None;
            }
        };
        let head = String::from_utf8_lossy(&self.buffer[..head_end]).into_owned();
        let mut lines = head.split("\r\n");
        let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
        let headers: Vec<(String, String)> = lines
            .filter_map(|line| line.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let length: usize = headers
            .iter()
            .find(|(n, _)| n == "content-length")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        let start = head_end + 4;
        while self.buffer.len() < start + length {
            if !self.fill().await {
                return None;
            }
        }
        let body = self.buffer[start..start + length].to_vec();
        self.buffer.drain(..start + length);
        Some(Answer {
            status,
            headers,
            body,
        })
    }

    /// Whether the server closes the connection within `within` (reading
    /// and discarding anything it sends first).
    pub async fn closed_within(&mut self, within: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let mut chunk = [0u8; 4096];
            match tokio::time::timeout_at(deadline, self.stream.read(&mut chunk)).await {
                Err(_) => return false,
                Ok(Ok(0)) | Ok(Err(_)) => return true,
                Ok(Ok(_)) => continue,
            }
        }
    }

    async fn fill(&mut self) -> bool {
        let mut chunk = [0u8; 16384];
        match tokio::time::timeout(Duration::from_secs(30), self.stream.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => {
                self.buffer.extend_from_slice(&chunk[..n]);
                true
            }
            _ => false,
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
