//! A scripted HTTP/1.1 peer: answers each request with the exact bytes the test scripts — what a broken server, proxy
//! or load balancer would send — and keeps every request it was asked.
//!
//! One request per connection (each answer closes it), served one connection at a time on one named thread, joined
//! when the peer is dropped.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// A request as the peer read it.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    /// Path and query.
    pub target: String,
    /// Lower-cased names.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    pub fn is_watch(&self) -> bool {
        self.target.contains("watch=1") || self.target.contains("watch=true")
    }
}

/// Writes the answer to the n-th request on its connection, as it likes: all at once, in pieces, or after waiting.
type Answer = dyn Fn(&Request, usize, &mut TcpStream) + Send + Sync;

#[derive(Default)]
struct Log {
    requests: Mutex<Vec<Request>>,
    grew: Condvar,
}

pub struct Peer {
    addr: SocketAddr,
    log: Arc<Log>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Peer {
    /// Answers the n-th request (from 0) with `answer(&request, n)`, then closes the connection.
    pub fn start(answer: impl Fn(&Request, usize) -> Vec<u8> + Send + Sync + 'static) -> Peer {
        Peer::serve(move |request, n, conn| {
            let _ = conn.write_all(&answer(request, n));
        })
    }

    /// Lets `answer(&request, n, connection)` write the answer to the n-th request (from 0) — a stream in chunks, a
    /// stall — then closes the connection. The peer's thread is busy while `answer` runs: one that waits must end
    /// when the test is done (it should wait for the client to hang up, see [`wait_for_hang_up`]).
    pub fn serve(answer: impl Fn(&Request, usize, &mut TcpStream) + Send + Sync + 'static) -> Peer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let log = Arc::new(Log::default());
        let stop = Arc::new(AtomicBool::new(false));
        let answer: Arc<Answer> = Arc::new(answer);
        let (log2, stop2) = (log.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("scripted-peer".into())
            .spawn(move || {
                for conn in listener.incoming() {
                    if stop2.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(conn) = conn else { continue };
                    serve(conn, &log2, &*answer);
                }
            })
            .unwrap();
        Peer {
            addr,
            log,
            stop,
            thread: Some(thread),
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn requests(&self) -> Vec<Request> {
        self.log.requests.lock().clone()
    }

    /// Waits until at least `n` requests came; false after `timeout`.
    pub fn wait_for_requests(&self, n: usize, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut requests = self.log.requests.lock();
        while requests.len() < n {
            if self.log.grew.wait_until(&mut requests, deadline).timed_out() {
                return requests.len() >= n;
            }
        }
        true
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr); // wakes the accept
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(conn: TcpStream, log: &Log, answer: &Answer) {
    conn.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let Some(request) = read_request(&mut reader) else {
        return;
    };
    let n = {
        let mut requests = log.requests.lock();
        requests.push(request.clone());
        log.grew.notify_all();
        requests.len() - 1
    };
    let mut conn = conn;
    answer(&request, n, &mut conn);
    let _ = conn.flush();
    let _ = conn.shutdown(std::net::Shutdown::Both);
}

fn read_request(r: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut line = String::new();
    r.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next()?.to_owned(), parts.next()?.to_owned());
    let mut headers = Vec::new();
    loop {
        line.clear();
        r.read_line(&mut line).ok()?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (n, v) = l.split_once(':')?;
        headers.push((n.to_ascii_lowercase(), v.trim().to_owned()));
    }
    let len: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    r.read_exact(&mut body).ok()?;
    Some(Request {
        method,
        target,
        headers,
        body,
    })
}

/// Blocks until the client closes `conn` (or 20 s of silence pass).
pub fn wait_for_hang_up(conn: &mut TcpStream) {
    let mut buf = [0u8; 256];
    while matches!(conn.read(&mut buf), Ok(n) if n > 0) {}
}

/// One chunk of a `Transfer-Encoding: chunked` body.
pub fn chunk(data: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

/// A whole answer: the status line, `headers`, `Content-Length` and `Connection: close`, then `body`.
pub fn response(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status}\r\n");
    for (n, v) in headers {
        out.push_str(&format!("{n}: {v}\r\n"));
    }
    out.push_str(&format!("Content-Length: {}\r\nConnection: close\r\n\r\n", body.len()));
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

/// A 429 `Status` body, with `details` when given (as JSON text).
pub fn too_many_requests(details: Option<&str>) -> Vec<u8> {
    let details = details.map(|d| format!(",\"details\":{d}")).unwrap_or_default();
    format!(
        "{{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{{}},\"status\":\"Failure\",\
         \"message\":\"slow down\",\"reason\":\"TooManyRequests\",\"code\":429{details}}}"
    )
    .into_bytes()
}
