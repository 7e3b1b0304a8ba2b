//! A forward HTTP proxy for the sources' `proxySecretRef` tests: `CONNECT host:port` tunnels
//! (HTTPS) and absolute-form requests (`GET http://host/path`, plain HTTP), optionally behind
//! basic auth (`407` without the right `Proxy-Authorization`). It records every request line
//! it served, so a test can tell that traffic went through it. Threads and std sockets only.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

/// A running proxy; it stops serving new connections when dropped (the listener thread ends
/// with the process).
pub struct HttpProxy {
    /// Where it listens.
    pub addr: SocketAddr,
    seen: Arc<Mutex<Vec<String>>>,
}

impl HttpProxy {
    /// Starts a proxy; with `auth`, only requests carrying those basic credentials pass.
    pub fn start(auth: Option<(&str, &str)>) -> HttpProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let expected = auth.map(|(u, p)| {
            use base64::Engine;
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"))
            )
        });
        let log = seen.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let log = log.clone();
                let expected = expected.clone();
                std::thread::spawn(move || serve(client, expected, log));
            }
        });
        HttpProxy { addr, seen }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The request lines served so far (`CONNECT host:port HTTP/1.1`, `GET http://… HTTP/1.1`).
    pub fn requests(&self) -> Vec<String> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

/// Reads a request head (through the blank line).
fn read_head(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).ok()? == 0 {
            return None;
        }
        head.push(byte[0]);
        if head.len() > 64 * 1024 {
            return None;
        }
    }
    Some(head)
}

fn pipe(mut from: TcpStream, mut to: TcpStream) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = to.shutdown(std::net::Shutdown::Write);
}

fn serve(mut client: TcpStream, expected: Option<String>, seen: Arc<Mutex<Vec<String>>>) {
    let Some(head) = read_head(&mut client) else {
        return;
    };
    let text = String::from_utf8_lossy(&head).into_owned();
    let mut lines = text.split("\r\n");
    let request_line = lines.next().unwrap_or_default().to_string();
    let authorized = expected.as_ref().is_none_or(|want| {
        text.split("\r\n").any(|l| {
            l.split_once(':').is_some_and(|(k, v)| {
                k.eq_ignore_ascii_case("proxy-authorization") && v.trim() == want
            })
        })
    });
    if !authorized {
        let _ = client.write_all(
            b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"test\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        );
        return;
    }
    if let Ok(mut s) = seen.lock() {
        s.push(request_line.clone());
    }
    let mut parts = request_line.split(' ');
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    if method == "CONNECT" {
        let Ok(upstream) = TcpStream::connect(target) else {
            let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n");
            return;
        };
        if client
            .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            .is_err()
        {
            return;
        }
        relay(client, upstream);
        return;
    }
    // Absolute form: connect to its host, send the request on with an origin-form target.
    let Some(rest) = target.strip_prefix("http://") else {
        let _ = client.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        return;
    };
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let host = if host.contains(':') {
        host.to_string()
    } else {
        format!("{host}:80")
    };
    let Ok(mut upstream) = TcpStream::connect(&host) else {
        let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n");
        return;
    };
    let version = parts.next().unwrap_or("HTTP/1.1");
    let mut forwarded = format!("{method} /{path} {version}\r\n");
    for line in text.split("\r\n").skip(1) {
        let lower = line.to_ascii_lowercase();
        if line.is_empty() || lower.starts_with("proxy-") {
            continue;
        }
        forwarded.push_str(line);
        forwarded.push_str("\r\n");
    }
    forwarded.push_str("\r\n");
    if upstream.write_all(forwarded.as_bytes()).is_err() {
        return;
    }
    relay(client, upstream);
}

fn relay(client: TcpStream, upstream: TcpStream) {
    let (Ok(c2), Ok(u2)) = (client.try_clone(), upstream.try_clone()) else {
        return;
    };
    let up = std::thread::spawn(move || pipe(c2, u2));
    pipe(upstream, client);
    let _ = up.join();
}
