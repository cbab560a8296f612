//! Helpers of the embedded server's raw-HTTP tests (`tests/server.rs`, `tests/server_faults.rs`): a ureq agent that
//! reports every status, and a minimal HTTP/1.1 client that shows chunks, cuts and torn objects exactly.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};

use kube_informer::object::ApiResource;
use kube_informer_apiserver::ApiServer;
use serde_json::{Value, json};

// Not every test file that includes this module polls.
#[allow(unused_imports)]
pub use crate::common::{WAIT, eventually};

pub fn cm() -> ApiResource {
    ApiResource::new("", "v1", "ConfigMap", "configmaps", true)
}

pub fn agent() -> ureq::Agent {
    ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .proxy(None)
            .timeout_global(Some(WAIT))
            .build(),
    )
}

/// One request with a fresh agent: (status, JSON body or the text as a JSON string).
pub fn send(method: &str, url: &str, content_type: &str, body: &str) -> (u16, Value) {
    send_with(&agent(), method, url, content_type, body)
}

pub fn send_with(a: &ureq::Agent, method: &str, url: &str, content_type: &str, body: &str) -> (u16, Value) {
    let r = match method {
        "GET" => a.get(url).call(),
        "DELETE" if body.is_empty() => a.delete(url).call(),
        "DELETE" => a
            .delete(url)
            .header("Content-Type", content_type)
            .force_send_body()
            .send(body),
        "POST" => a.post(url).header("Content-Type", content_type).send(body),
        "PUT" => a.put(url).header("Content-Type", content_type).send(body),
        "PATCH" => a.patch(url).header("Content-Type", content_type).send(body),
        m => panic!("method {m}"),
    }
    .unwrap_or_else(|e| panic!("{method} {url}: {e}"));
    let code = r.status().as_u16();
    let text = r.into_body().read_to_string().unwrap();
    (code, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

pub fn get(url: &str) -> (u16, Value) {
    send("GET", url, "", "")
}

pub fn post(url: &str, body: &Value) -> (u16, Value) {
    send("POST", url, "application/json", &body.to_string())
}

pub fn put(url: &str, body: &Value) -> (u16, Value) {
    send("PUT", url, "application/json", &body.to_string())
}

pub fn cms(server: &ApiServer, ns: &str) -> String {
    format!("{}/api/v1/namespaces/{ns}/configmaps", server.url())
}

pub fn make(server: &ApiServer, ns: &str, name: &str, labels: Value) -> Value {
    server
        .create_json(
            &cm(),
            Some(ns),
            json!({"metadata": {"name": name, "labels": labels}, "data": {"v": "0"}}),
        )
        .unwrap()
}

pub fn rv_of(v: &Value) -> u64 {
    v["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap()
}

/// What a raw watch stream yields next.
#[derive(Debug)]
pub enum Next {
    Line(Vec<u8>),
    /// The terminating chunk: a clean end.
    Clean,
    /// EOF without the terminating chunk; the bytes of an unfinished line.
    Cut(Vec<u8>),
}

/// A minimal HTTP/1.1 client for streams, so tests see chunks, cuts and torn objects exactly.
pub struct Raw {
    pub r: BufReader<TcpStream>,
    pub code: u16,
    pub headers: Vec<(String, String)>,
    pub pending: Vec<u8>,
}

impl Raw {
    pub fn request(addr: SocketAddr, method: &str, path: &str) -> Raw {
        Raw::request_with(addr, method, path, &[])
    }

    /// [`Raw::request`] with `headers` besides `Host`.
    pub fn request_with(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)]) -> Raw {
        let s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(WAIT)).unwrap();
        let mut s2 = s.try_clone().unwrap();
        let mut head = format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\n");
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        write!(s2, "{head}\r\n").unwrap();
        let mut raw = Raw {
            r: BufReader::new(s),
            code: 0,
            headers: Vec::new(),
            pending: Vec::new(),
        };
        raw.read_head();
        raw
    }

    pub fn watch(server: &ApiServer, path: &str) -> Raw {
        let raw = Raw::request(server.addr(), "GET", path);
        assert_eq!(raw.code, 200, "watch {path}");
        raw
    }

    pub fn read_head(&mut self) {
        let mut line = String::new();
        self.r.read_line(&mut line).unwrap();
        self.code = line.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
        self.headers.clear();
        loop {
            line.clear();
            self.r.read_line(&mut line).unwrap();
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            let (n, v) = l.split_once(':').unwrap();
            self.headers.push((n.to_ascii_lowercase(), v.trim().to_owned()));
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The body of a Content-Length answer, as far as it goes before EOF.
    pub fn body(&mut self) -> Vec<u8> {
        let len: usize = self.header("content-length").unwrap().parse().unwrap();
        let mut body = Vec::new();
        let _ = self.r.by_ref().take(len as u64).read_to_end(&mut body);
        body
    }

    pub fn json(&mut self) -> Value {
        serde_json::from_slice(&self.body()).unwrap()
    }

    /// One chunk's data; `Some(empty)` for the terminating chunk, `None` on EOF.
    pub fn chunk(&mut self) -> Option<Vec<u8>> {
        let mut size = String::new();
        match self.r.read_line(&mut size) {
            Ok(0) => return None,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return None,
            Err(e) => panic!("watch stream stalled or failed: {e}"),
        }
        if !size.ends_with('\n') {
            return None;
        }
        let n = usize::from_str_radix(size.trim(), 16).unwrap();
        let mut data = vec![0; n + 2];
        match self.r.read_exact(&mut data) {
            Ok(()) => {}
            Err(e) if n == 0 => panic!("terminating chunk: {e}"),
            Err(_) => return None,
        }
        data.truncate(n);
        Some(data)
    }

    pub fn next(&mut self) -> Next {
        loop {
            if let Some(i) = self.pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=i).collect();
                return Next::Line(line[..line.len() - 1].to_vec());
            }
            match self.chunk() {
                None => return Next::Cut(std::mem::take(&mut self.pending)),
                Some(c) if c.is_empty() => return Next::Clean,
                Some(c) => self.pending.extend(c),
            }
        }
    }

    pub fn event(&mut self) -> Value {
        match self.next() {
            Next::Line(l) => serde_json::from_slice(&l).unwrap(),
            other => panic!("expected an event, got {other:?}"),
        }
    }

    /// The next event that is not a BOOKMARK.
    pub fn change(&mut self) -> Value {
        loop {
            let e = self.event();
            if e["type"] != "BOOKMARK" {
                return e;
            }
        }
    }
}

pub fn summary(e: &Value) -> (String, String) {
    (
        e["type"].as_str().unwrap().to_owned(),
        e["object"]["metadata"]["name"].as_str().unwrap_or("").to_owned(),
    )
}

pub fn ev(t: &str, name: &str) -> (String, String) {
    (t.to_owned(), name.to_owned())
}
