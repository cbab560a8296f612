//! A scripted HTTP/1.1 peer for the client's unit tests (the embedded API server is another crate's, and its
//! client is that crate's copy of this one): it answers each of a fixed number of requests with the same body, on
//! one named thread that the test joins.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::thread::JoinHandle;

use crate::client::{Client, Config};

/// The peer: its client, and its thread (ends after its last answer).
pub(crate) struct Peer {
    pub(crate) client: Client,
    pub(crate) thread: JoinHandle<()>,
}

/// Answers `requests` requests, one per connection, each with `200 OK` and `body` as JSON.
pub(crate) fn answering(requests: usize, body: String) -> Peer {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let thread = std::thread::Builder::new()
        .name("test:peer".into())
        .spawn(move || {
            for _ in 0..requests {
                let (conn, _) = listener.accept().unwrap();
                let mut reader = BufReader::new(conn);
                let mut line = String::new();
                while reader.read_line(&mut line).unwrap() > 0 && line != "\r\n" {
                    line.clear();
                }
                let mut conn = reader.into_inner();
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                // The peer may be cut off by a client that has what it wants.
                let _ = conn.write_all(head.as_bytes()).and_then(|()| conn.write_all(body.as_bytes()));
            }
        })
        .unwrap();
    let client = Client::new(Config::new(url).proxy(None)).unwrap();
    Peer { client, thread }
}

/// A peer that reads one request and never answers: it says `"received"` once the request's head arrived, then
/// `"closed"` once the client closed the connection.
pub(crate) fn stalling() -> (Client, crossbeam_channel::Receiver<&'static str>, JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = crossbeam_channel::unbounded();
    let thread = std::thread::Builder::new()
        .name("test:stall".into())
        .spawn(move || {
            let (conn, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(conn);
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
                line.clear();
            }
            tx.send("received").unwrap();
            // Nothing more comes from a client waiting for its answer: the read ends when it hangs up.
            let mut rest = Vec::new();
            let _ = std::io::Read::read_to_end(&mut reader, &mut rest);
            tx.send("closed").unwrap();
        })
        .unwrap();
    let client = Client::new(Config::new(url).proxy(None)).unwrap();
    (client, rx, thread)
}
