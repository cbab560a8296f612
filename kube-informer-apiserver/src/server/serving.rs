//! Serving (k8s.io/apiserver's `server/secure_serving.go`): listening, the acceptor and its connection threads (one
//! per connection, past the limit refused), and stopping them — for a restart, a pause of listening or shutdown.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread;
use std::time::{Duration, Instant};

use super::conn;
use super::shared::Shared;

/// The stack of a connection thread, set rather than left to `RUST_MIN_STACK`: the deepest walk a request makes is
/// over a JSON value at most 128 levels deep (serde_json's limit, which the server keeps for every object it stores),
/// which the hostile-client tests run on a quarter of this; deep CEL runs on a stack of its own.
const CONNECTION_STACK: usize = 2 * 1024 * 1024;

/// Ends the current epoch (its connections stop) and stops serving, sparing connection `spare` (the admin API's
/// own, which answers once the restart is done).
pub(super) fn stop_listening(shared: &Shared, spare: Option<u64>) {
    shared.epoch.fetch_add(1, Ordering::AcqRel);
    stop_serving(shared, spare);
}

/// A restart: every connection but `spare` cut, listening again at once or, with `down`, after that long (a timer
/// thread, joined on shutdown, brings it back).
pub(crate) fn restart(shared: &Arc<Shared>, down: Option<Duration>, spare: Option<u64>) -> io::Result<()> {
    stop_listening(shared, spare);
    let Some(down) = down else {
        return start_listening(shared);
    };
    let s = shared.clone();
    let handle = thread::Builder::new().name("srv:restart".to_owned()).spawn(move || {
        let (stop, wake) = &s.timer;
        let deadline = Instant::now().checked_add(down);
        let mut stopped = stop.lock();
        while !*stopped && deadline.is_none_or(|d| Instant::now() < d) {
            match deadline {
                Some(d) => {
                    wake.wait_until(&mut stopped, d);
                }
                None => wake.wait(&mut stopped),
            }
        }
        if !*stopped {
            drop(stopped);
            if let Err(e) = start_listening(&s) {
                log::warn!("embedded API server: cannot listen again on {}: {e}", s.listen_addr);
            }
        }
    })?;
    let mut restarts = shared.restarts.lock();
    restarts.retain(|h| !h.is_finished());
    restarts.push(handle);
    Ok(())
}

pub(super) fn spawn_acceptor(shared: &Arc<Shared>, listener: TcpListener) -> io::Result<()> {
    let mut slot = shared.acceptor.lock();
    let s = shared.clone();
    let epoch = shared.epoch.load(Ordering::Acquire);
    let handle = thread::Builder::new()
        .name("srv:acceptor".to_owned())
        .spawn(move || accept_loop(&s, &listener, epoch))?;
    *slot = Some(handle);
    Ok(())
}

/// Binds the server's port again and starts accepting, unless already listening or shut down.
pub(super) fn start_listening(shared: &Arc<Shared>) -> io::Result<()> {
    if shared.acceptor.lock().is_some() || shared.shutdown.load(Ordering::Acquire) {
        return Ok(());
    }
    let listener = TcpListener::bind(shared.listen_addr)?;
    spawn_acceptor(shared, listener)
}

/// Stops accepting, cuts every connection, and joins the acceptor and every connection thread — except connection
/// `spare`, which must be the calling thread's own (a thread cannot join itself): it ends by itself, its epoch
/// being over.
pub(super) fn stop_serving(shared: &Shared, spare: Option<u64>) {
    let acceptor = shared.acceptor.lock().take();
    if let Some(h) = acceptor {
        // Wake the acceptor out of accept().
        let _ = TcpStream::connect_timeout(&shared.client_addr, Duration::from_millis(500));
        let _ = h.join();
    }
    let (live, threads) = {
        let mut c = shared.conns.lock();
        let mut live = std::mem::take(&mut c.live);
        let mut threads = std::mem::take(&mut c.threads);
        if let Some(id) = spare {
            if let Some(own) = live.remove(&id) {
                c.live.insert(id, own);
            }
            let me = thread::current().id();
            if let Some(i) = threads.iter().position(|h| h.thread().id() == me) {
                c.threads.push(threads.swap_remove(i));
            }
        }
        (live, threads)
    };
    for s in live.values() {
        let _ = s.shutdown(Shutdown::Both);
    }
    shared.store.lock().interrupt();
    shared.store.notify();
    shared.faults.release();
    for t in threads {
        let _ = t.join();
    }
}

fn accept_loop(shared: &Arc<Shared>, listener: &TcpListener, epoch: u64) {
    // Go's server backs off after an accept error (out of file descriptors, say) from 5 ms, doubling, to 1 s; here
    // to 250 ms, so that a stop is seen soon.
    let mut backoff = Duration::ZERO;
    for conn in listener.incoming() {
        if shared.stopping(epoch) {
            return;
        }
        let tcp = match conn {
            Ok(tcp) => {
                backoff = Duration::ZERO;
                tcp
            }
            Err(e) => {
                backoff = (backoff * 2).clamp(Duration::from_millis(5), Duration::from_millis(250));
                log::debug!("embedded API server: accept: {e}; retrying in {backoff:?}");
                thread::sleep(backoff);
                continue;
            }
        };
        let accepted = Instant::now();
        let tcp = Arc::new(tcp);
        let mut conns = shared.conns.lock();
        // Reap the threads of closed connections.
        let (done, running): (Vec<_>, Vec<_>) = std::mem::take(&mut conns.threads)
            .into_iter()
            .partition(|h| h.is_finished());
        conns.threads = running;
        for h in done {
            let _ = h.join();
        }
        if conns.live.len() >= shared.limits.max_connections {
            drop(conns);
            refuse_connection(shared, &tcp);
            continue;
        }
        let id = conns.next_id;
        conns.next_id += 1;
        conns.live.insert(id, tcp.clone());
        let s = shared.clone();
        let spawned = thread::Builder::new()
            .name(format!("srv:conn{id}"))
            .stack_size(CONNECTION_STACK)
            .spawn(move || {
                conn::serve(s.clone(), tcp, accepted, epoch, id);
                s.conns.lock().live.remove(&id);
            });
        match spawned {
            Ok(h) => conns.threads.push(h),
            Err(e) => {
                let tcp = conns.live.remove(&id);
                drop(conns);
                log::warn!("embedded API server: cannot start a connection thread: {e}");
                if let Some(tcp) = tcp {
                    refuse_connection(shared, &tcp);
                }
            }
        }
    }
}

/// A connection past [`ServingLimits::max_connections`](crate::http::serving_limits::ServingLimits::max_connections)
/// (or without a thread to serve it), refused without blocking the acceptor: on plain HTTP, kube-apiserver's 429 text (what it answers past its in-flight limits), after reading
/// whatever request already arrived so that closing does not reset the answer away; on HTTPS, closed.
fn refuse_connection(shared: &Shared, tcp: &TcpStream) {
    if shared.pki.is_none() && tcp.set_nonblocking(true).is_ok() {
        let mut sink = [0u8; 8192];
        for _ in 0..8 {
            match (&*tcp).read(&mut sink) {
                Ok(n) if n > 0 => {}
                _ => break,
            }
        }
        let _ = (&*tcp).write_all(
            format!(
                "HTTP/1.1 429 Too Many Requests\r\nContent-Type: text/plain; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\nRetry-After: 1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
                crate::http::serving_limits::TOO_MANY_REQUESTS.len(),
                crate::http::serving_limits::TOO_MANY_REQUESTS
            )
            .as_bytes(),
        );
    }
    let _ = tcp.shutdown(Shutdown::Both);
}
