//! `raw`: the server's own rates (a client that only counts bytes), and the decoder's own rate on the same bytes.

use std::io::{Read, Write};
use std::time::Instant;

use kube_informer::object::core::ConfigMap;
use kube_informer::unstable::RecycleFrom;
use kube_informer::watch::{WatchDecoder, WatchEvent};

use crate::corpus::BURST_OBJECTS;
use crate::procfs;
use crate::report::median;

pub(crate) fn raw_agent() -> ureq::Agent {
    let tls = ureq::tls::TlsConfig::builder().disable_verification(true).build();
    ureq::Agent::new_with_config(ureq::Agent::config_builder().tls_config(tls).proxy(None).build())
}

pub(crate) fn raw_child(args: &[String]) {
    let what = args[0].as_str();
    let url = &args[1];
    let agent = raw_agent();
    match what {
        "list" => {
            let (t, cpu0) = (Instant::now(), procfs::cpu());
            let mut reader = agent
                .get(&format!("{url}/api/v1/configmaps?resourceVersion=0"))
                .call()
                .unwrap()
                .into_body()
                .into_reader();
            let mut buf = vec![0; 256 * 1024];
            let mut bytes = 0;
            loop {
                let n = reader.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                bytes += n;
            }
            println!(
                "RESULT secs={:.4} bytes={bytes} cpu={:.4}",
                t.elapsed().as_secs_f64(),
                procfs::cpu() - cpu0
            );
        }
        "watch" => {
            let rv0 = &args[2];
            let events: usize = args[3].parse().unwrap();
            let url = format!("{url}/api/v1/configmaps?watch=1&resourceVersion={rv0}&timeoutSeconds=600");
            // The server and the transport alone: read the replay, count events, keep nothing.
            let t = Instant::now();
            let mut reader = agent.get(&url).call().unwrap().into_body().into_reader();
            let mut buf = vec![0; 64 * 1024];
            let mut lines = 0;
            while lines < events {
                let n = reader.read(&mut buf).unwrap();
                assert!(n > 0, "watch ended after {lines} events");
                lines += memchr::memchr_iter(b'\n', &buf[..n]).count();
            }
            let read_secs = t.elapsed().as_secs_f64();
            drop(reader);
            // The same replay kept in memory, for the decoder.
            let mut reader = agent.get(&url).call().unwrap().into_body().into_reader();
            let mut stream = Vec::with_capacity(events * 2200);
            let mut lines = 0;
            while lines < events {
                let n = reader.read(&mut buf).unwrap();
                assert!(n > 0, "watch ended after {lines} events");
                lines += memchr::memchr_iter(b'\n', &buf[..n]).count();
                stream.extend_from_slice(&buf[..n]);
            }
            drop(reader);
            // The decoder alone, on exactly those bytes, fed as the client feeds it (reads of 128 KiB); median of 3. Then,
            // once each, keeping the last object of each name alive as a cache does, and decoding into the object
            // each replaces as the informer does.
            let decode_secs = median((0..3).map(|_| time_decode(&stream, events, Keep::Nothing)).collect());
            let live_secs = time_decode(&stream, events, Keep::Live);
            let recycling_secs = time_decode(&stream, events, Keep::LiveRecycling);
            println!(
                "RESULT read_rate={:.1} decode_rate={:.1} bytes_per_event={:.1} live_rate={:.1} live_recycling_rate={:.1}",
                events as f64 / read_secs,
                events as f64 / decode_secs,
                stream.len() as f64 / lines as f64,
                events as f64 / live_secs,
                events as f64 / recycling_secs,
            );
        }
        other => panic!("raw {other}?"),
    }
    std::io::stdout().flush().unwrap();
}

/// What the decoder keeps of what it decodes, in [`time_decode`].
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Keep {
    /// Each object is dropped at once (memory just freed is reused at once, hot in cache).
    Nothing,
    /// The latest object of each of the `BURST_OBJECTS` names stays alive, as in a cache; the one it replaces is
    /// dropped (the replay cycles through the names in order).
    Live,
    /// As `Live`, the replaced object being decoded into (as the informer's recycler does).
    LiveRecycling,
}

/// Seconds to decode the first `events` events of `stream`, read as a watch stream reads (128 KiB at a time).
pub(crate) fn time_decode(stream: &[u8], events: usize, keep: Keep) -> f64 {
    let t = Instant::now();
    let mut dec = WatchDecoder::<ConfigMap>::new();
    let mut live: Vec<Option<ConfigMap>> = (0..BURST_OBJECTS).map(|_| None).collect();
    let mut r = stream;
    let mut n = 0;
    while n < events && dec.read_from(&mut r).unwrap() > 0 {
        loop {
            let slot = &mut live[n % BURST_OBJECTS];
            if keep == Keep::LiveRecycling
                && !dec.has_spare()
                && let Some(old) = slot.take()
            {
                dec.recycle(old);
            }
            let Some(ev) = dec.next_event() else { break };
            match ev.unwrap() {
                WatchEvent::Modified(cm) if keep != Keep::Nothing => *slot = Some(cm),
                ev => drop(std::hint::black_box(ev)),
            }
            n += 1;
        }
    }
    assert!(n >= events);
    t.elapsed().as_secs_f64()
}
