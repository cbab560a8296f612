//! The lean bench server: LIST and WATCH of `n` generated objects over plain HTTP/1.1, in the bench's own (parent)
//! process, holding nothing but the page it is writing — for the runs whose corpus the embedded API server cannot
//! hold or populate in time (1M ConfigMaps; 100k Pods: the embedded server holds ~5 GB for 20k Pods and writes
//! ~100 Pods a second here).
//!
//! Its scope is the informer's initial sync, nothing more:
//! - `GET <collection>` (the kind's cluster-wide path): `resourceVersion=0` answers the whole list (as the watch cache
//!   does, ignoring `limit`, which the reflector's first list asks); any other list is paged by `limit`/`continue`
//!   (a token naming the list's revision and the next index; a token of another revision is a 410). Every list is at
//!   revision `n + RV0`; object `i` has resourceVersion `i + RV0`. `Accept: …;as=PartialObjectMetadataList;…`
//!   answers `PartialObjectMetadata` items, as kube-apiserver's metadata-only lists.
//! - `GET <collection>?watch=1`: a BOOKMARK at the list's revision (when bookmarks are allowed), then nothing, the
//!   connection held until the client goes or the server stops. No events, no selectors, no auth, no TLS.
//!
//! Object `i` is generated from its index when written (nothing kept): the object the bench writes to the embedded
//! server ([`object`], [`pod`] + [`pod_status`]), laid over an object the embedded server answered (its field order,
//! the fields it adds, its managedFields, with the strings that differ from that object's rewritten), uid and
//! resourceVersion its own. At start the server learns that object from a short-lived embedded server holding a few
//! objects of the corpus, and checks that its own bytes for each of the others are the embedded server's bytes, uid,
//! resourceVersion and timestamps aside (the whole list's framing too), or panics.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use kube_informer::client::{Client, Config};
use kube_informer::object::ApiResource;
use kube_informer_apiserver::ApiServer;
use serde_json::Value;

use crate::corpus::{NAMESPACES, configmaps, namespace, object};
use crate::ordered::{Json, differing_strings};
use crate::pods::{create_pod, pod, pod_status, pods, uid_of};
use crate::raw::raw_agent;

/// Revision of the first object; the lists are at `RV0 + n`.
const RV0: usize = 10;
/// Objects generated per chunk written.
const CHUNK: usize = 500;
/// The `Accept` of a metadata-only list (the library's, client-go's).
const META_ACCEPT: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";

/// The corpus a lean server serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// [`object`]`(i, 0)`, as the sync and scale runs write them.
    ConfigMaps,
    /// [`pod`]`(i)` with [`pod_status`]`(i)`, as the Pod runs write them.
    Pods,
}

impl Kind {
    fn resource(self) -> ApiResource {
        match self {
            Kind::ConfigMaps => configmaps(),
            Kind::Pods => pods(),
        }
    }

    /// Object `i` as its client writes it.
    fn input(self, i: usize) -> Value {
        match self {
            Kind::ConfigMaps => object(i, 0),
            Kind::Pods => {
                let mut p = pod(i);
                p["status"] = pod_status(i);
                p
            }
        }
    }

    fn uid(self, i: usize) -> String {
        uid_of(i as u64 + if self == Kind::Pods { 5_000_000 } else { 3_000_000 })
    }
}

/// What the lean server learned of the embedded server's answers.
struct Corpus {
    kind: Kind,
    n: usize,
    /// The embedded server's list item of object 0, and what the bench wrote for it.
    template: Json,
    input0: Value,
    /// The embedded server's metadata-only item of object 0 (its members' order).
    meta_template: Json,
    /// The framing of a list and of a metadata-only list: the list with no items, its metadata replaced.
    list: Json,
    meta_list: Json,
    /// The list's bytes end with a newline (Go's `json.Encoder` writes one).
    newline: bool,
}

impl Corpus {
    /// Object `i` as a list item.
    fn item(&self, i: usize) -> Json {
        let input = self.kind.input(i);
        let mut item = self.template.overlay(&input);
        let md = item.get_mut("metadata").expect("metadata");
        md.set("uid", Json::Str(self.kind.uid(i)));
        md.set("resourceVersion", Json::Str((RV0 + i).to_string()));
        if let Some(managed) = self.template.get("metadata").and_then(|m| m.get("managedFields")) {
            let mut pairs = Vec::new();
            differing_strings(&self.input0, &input, &mut pairs);
            let mut managed = managed.clone();
            managed.substitute(&pairs);
            md.set("managedFields", managed);
        }
        item
    }

    /// Writes object `i`'s list item (or its metadata-only item).
    fn write_item(&self, i: usize, meta: bool, out: &mut Vec<u8>) {
        let item = self.item(i);
        if !meta {
            return item.write(out);
        }
        let Json::Obj(members) = &self.meta_template else {
            unreachable!()
        };
        let md = item.get("metadata").expect("metadata");
        Json::Obj(
            members
                .iter()
                .map(|(k, v)| (k.clone(), if k == "metadata" { md.clone() } else { v.clone() }))
                .collect(),
        )
        .write(out);
    }

    /// A list's bytes before and after its items.
    fn framing(&self, meta: bool, rv: usize, cont: Option<(&str, usize)>) -> (Vec<u8>, Vec<u8>) {
        let mut list = if meta {
            self.meta_list.clone()
        } else {
            self.list.clone()
        };
        let mut md = vec![("resourceVersion".to_owned(), Json::Str(rv.to_string()))];
        if let Some((token, remaining)) = cont {
            md.push(("continue".into(), Json::str(token)));
            md.push(("remainingItemCount".into(), Json::Num(remaining.into())));
        }
        list.set("metadata", Json::Obj(md));
        let mut bytes = Vec::new();
        list.write(&mut bytes);
        assert!(bytes.ends_with(b"[]}"), "a list ends with its items");
        let mut tail = bytes.split_off(bytes.len() - 2);
        if self.newline {
            tail.push(b'\n');
        }
        (bytes, tail)
    }

    /// Mean JSON size of an object as a GET answers it (kind and apiVersion included) and of its metadata-only
    /// form, over up to 2,000 objects spread over the corpus.
    fn sizes(&self) -> (f64, f64) {
        let kind_len = format!(r#""kind":"{}","apiVersion":"v1","#, self.kind.resource().kind).len();
        let step = self.n.div_ceil(2000).max(1);
        let (mut json, mut meta, mut count) = (0, 0, 0);
        let mut buf = Vec::new();
        for i in (0..self.n).step_by(step) {
            buf.clear();
            self.write_item(i, false, &mut buf);
            json += buf.len()
                + if self.template.get("kind").is_none() {
                    kind_len
                } else {
                    0
                };
            buf.clear();
            self.write_item(i, true, &mut buf);
            meta += buf.len();
            count += 1;
        }
        (json as f64 / count as f64, meta as f64 / count as f64)
    }
}

/// Reads `path` of the embedded server (a list at revision 0) as its bytes.
fn get(agent: &ureq::Agent, url: &str, accept: Option<&str>) -> Vec<u8> {
    let mut req = agent.get(url);
    if let Some(a) = accept {
        req = req.header("Accept", a);
    }
    let mut bytes = Vec::new();
    req.call()
        .unwrap()
        .into_body()
        .into_reader()
        .read_to_end(&mut bytes)
        .unwrap();
    bytes
}

/// Object `i`'s item in a list, found by name.
fn item_named<'a>(list: &'a Json, name: &str) -> &'a Json {
    let Some(Json::Arr(items)) = list.get("items") else {
        panic!("a list has items")
    };
    items
        .iter()
        .find(|it| it.get("metadata").and_then(|m| m.get("name")) == Some(&Json::str(name)))
        .unwrap_or_else(|| panic!("{name} not listed"))
}

/// `found` with the values only the embedded server picks (uid, resourceVersion, timestamps) set to `mine`'s.
fn normalised(found: &Json, mine: &Json) -> Json {
    let mut found = found.clone();
    let (fm, mm) = (found.get_mut("metadata").unwrap(), mine.get("metadata").unwrap());
    for key in ["uid", "resourceVersion", "creationTimestamp"] {
        if let Some(v) = mm.get(key) {
            fm.set(key, v.clone());
        }
    }
    if let (Some(Json::Arr(f)), Some(Json::Arr(m))) = (fm.get_mut("managedFields"), mm.get("managedFields")) {
        for (f, m) in f.iter_mut().zip(m) {
            if let Some(t) = m.get("time") {
                f.set("time", t.clone());
            }
        }
    }
    found
}

/// Panics where `mine` and `theirs` first differ.
fn assert_same_bytes(what: &str, mine: &[u8], theirs: &[u8]) {
    if mine != theirs {
        let at = mine.iter().zip(theirs).take_while(|(a, b)| a == b).count();
        let show = |b: &[u8]| String::from_utf8_lossy(&b[at.saturating_sub(80)..(at + 80).min(b.len())]).into_owned();
        panic!(
            "lean server: {what} differs from the embedded server's at byte {at}:\n mine:   {}\n theirs: {}",
            show(mine),
            show(theirs)
        );
    }
}

/// Learns the embedded server's answers for `kind` from a few objects and checks the generated ones against them.
fn learn(kind: Kind, n: usize) -> Corpus {
    let names: Vec<String> = (0..NAMESPACES).map(namespace).collect();
    let server = ApiServer::builder()
        .compaction_interval(None)
        .namespaces(names.iter().map(String::as_str))
        .start()
        .unwrap();
    let mut checked: Vec<usize> = [1, 2, 3, 101, 257, 1234, 54_321, n - 1]
        .into_iter()
        .filter(|&i| i < n)
        .collect();
    checked.dedup();
    let client = Client::new(
        Config::from_kubeconfig_file(server.kubeconfig_path(), None)
            .unwrap()
            .no_rate_limit(),
    )
    .unwrap();
    for &i in std::iter::once(&0).chain(&checked) {
        match kind {
            Kind::ConfigMaps => {
                server
                    .create_json(&configmaps(), Some(&namespace(i)), object(i, 0))
                    .unwrap();
            }
            Kind::Pods => {
                create_pod(&client, i);
            }
        }
    }
    let agent = raw_agent();
    let url = format!("{}/api/v1/{}?resourceVersion=0", server.url(), kind.resource().plural);
    let (list_bytes, meta_bytes) = (get(&agent, &url, None), get(&agent, &url, Some(META_ACCEPT)));
    server.shutdown();
    let (list, meta_list): (Json, Json) = (
        serde_json::from_slice(&list_bytes).unwrap(),
        serde_json::from_slice(&meta_bytes).unwrap(),
    );
    // What is read in order writes the same bytes (the writer's strings and numbers are the server's).
    let mut again = Vec::new();
    list.write(&mut again);
    let newline = list_bytes.ends_with(b"\n");
    assert_same_bytes(
        "a list read and written again",
        &again,
        list_bytes.strip_suffix(b"\n").unwrap_or(&list_bytes),
    );
    let name = |i: usize| kind.input(i)["metadata"]["name"].as_str().unwrap().to_owned();
    let empty = |l: &Json| {
        let mut l = l.clone();
        l.set("items", Json::Arr(Vec::new()));
        l
    };
    let corpus = Corpus {
        kind,
        n,
        template: item_named(&list, &name(0)).clone(),
        input0: kind.input(0),
        meta_template: item_named(&meta_list, &name(0)).clone(),
        list: empty(&list),
        meta_list: empty(&meta_list),
        newline,
    };
    for &i in &checked {
        let mine = corpus.item(i);
        for (meta, theirs) in [(false, &list), (true, &meta_list)] {
            let found = normalised(item_named(theirs, &name(i)), &mine);
            let (mut a, mut b) = (Vec::new(), Vec::new());
            corpus.write_item(i, meta, &mut a);
            found.write(&mut b);
            assert_same_bytes(&format!("object {i} (metadata only: {meta})"), &a, &b);
        }
    }
    for (meta, bytes) in [(false, &list_bytes), (true, &meta_bytes)] {
        let rv = serde_json::from_slice::<Value>(bytes).unwrap()["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let (head, tail) = corpus.framing(meta, rv, None);
        assert_same_bytes("a list's framing", &head, &bytes[..head.len()]);
        assert!(bytes.ends_with(&tail));
    }
    corpus
}

/// A running lean server; stopped (its threads joined, its kubeconfig removed) when dropped.
pub(crate) struct LeanServer {
    pub(crate) kubeconfig: String,
    /// Mean JSON bytes per object (as a GET answers it) and of its metadata-only form.
    pub(crate) json: f64,
    pub(crate) meta: f64,
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
    dir: PathBuf,
}

struct Shared {
    corpus: Corpus,
    stop: AtomicBool,
    /// Open connections (to cut at stop) and their threads.
    conns: parking_lot::Mutex<Vec<(TcpStream, JoinHandle<()>)>>,
}

impl LeanServer {
    pub(crate) fn start(kind: Kind, n: usize) -> LeanServer {
        let corpus = learn(kind, n);
        let (json, meta) = corpus.sizes();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let dir = std::env::temp_dir().join(format!("informer-bench-lean-{}-{}", std::process::id(), addr.port()));
        std::fs::create_dir_all(&dir).unwrap();
        let kubeconfig = dir.join("kubeconfig");
        std::fs::write(
            &kubeconfig,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: lean\n  cluster:\n    server: \"http://{addr}\"\n\
                 users:\n- name: lean\n  user:\n    token: \"lean\"\ncontexts:\n- name: lean\n  context:\n    \
                 cluster: lean\n    user: lean\ncurrent-context: lean\n"
            ),
        )
        .unwrap();
        let shared = Arc::new(Shared {
            corpus,
            stop: AtomicBool::new(false),
            conns: parking_lot::Mutex::new(Vec::new()),
        });
        let s = shared.clone();
        let accept = std::thread::Builder::new()
            .name("lean:accept".into())
            .spawn(move || {
                for stream in listener.incoming() {
                    if s.stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let _ = stream.set_nodelay(true);
                    let (s2, cut) = (s.clone(), stream.try_clone().unwrap());
                    let handle = std::thread::Builder::new()
                        .name("lean:conn".into())
                        .spawn(move || {
                            let _ = serve_connection(&s2, stream);
                        })
                        .unwrap();
                    s.conns.lock().push((cut, handle));
                }
            })
            .unwrap();
        LeanServer {
            kubeconfig: kubeconfig.display().to_string(),
            json,
            meta,
            addr,
            shared,
            accept: Some(accept),
            dir,
        }
    }
}

/// `serve-lean configmaps|pods N`: a lean server in a process of its own, for a measurement that runs the informer
/// child by hand (`tools/bench-callgrind/informer-scale.py` counts its instructions under callgrind). Prints
/// `READY kubeconfig=… json=…` and serves until a line (or the end) on stdin.
pub(crate) fn serve_lean(args: &[String]) {
    let kind = match args[0].as_str() {
        "configmaps" => Kind::ConfigMaps,
        "pods" => Kind::Pods,
        other => panic!("kind {other:?}: configmaps or pods"),
    };
    let n: usize = args[1].parse().unwrap();
    let lean = LeanServer::start(kind, n);
    println!(
        "READY kubeconfig={} json={:.1} meta={:.1}",
        lean.kubeconfig, lean.json, lean.meta
    );
    std::io::stdout().flush().unwrap();
    let _ = std::io::stdin().read_line(&mut String::new());
}

impl Drop for LeanServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop, which sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Some(a) = self.accept.take() {
            let _ = a.join();
        }
        for (stream, handle) in std::mem::take(&mut *self.shared.conns.lock()) {
            let _ = stream.shutdown(Shutdown::Both);
            let _ = handle.join();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One connection: requests in turn until the client closes it, or a watch that holds it.
fn serve_connection(shared: &Shared, stream: TcpStream) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut out = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let target = line.split_whitespace().nth(1).unwrap_or_default().to_owned();
        let mut meta = false;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header)? == 0 {
                return Ok(());
            }
            if header.trim().is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("accept")
            {
                meta = value.contains("as=PartialObjectMetadata");
            }
        }
        let (path, query) = target.split_once('?').unwrap_or((&target, ""));
        let query: HashMap<&str, &str> = query.split('&').filter_map(|kv| kv.split_once('=')).collect();
        let corpus = &shared.corpus;
        if path != format!("/api/v1/{}", corpus.kind.resource().plural) {
            respond(&mut out, "404 Not Found", br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","reason":"NotFound","code":404}"#)?;
        } else if matches!(query.get("watch"), Some(&"1" | &"true")) {
            return watch(
                shared,
                &mut out,
                &mut reader,
                meta,
                query.get("allowWatchBookmarks") == Some(&"true"),
            );
        } else if !list(corpus, &mut out, meta, &query)? {
            return Ok(());
        }
    }
}

fn respond(out: &mut TcpStream, status: &str, body: &[u8]) -> std::io::Result<()> {
    write!(
        out,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )?;
    out.write_all(body)?;
    out.flush()
}

fn chunk(out: &mut TcpStream, bytes: &[u8]) -> std::io::Result<()> {
    if !bytes.is_empty() {
        write!(out, "{:x}\r\n", bytes.len())?;
        out.write_all(bytes)?;
        out.write_all(b"\r\n")?;
    }
    Ok(())
}

/// A list (whole at revision 0 or unpaged, else a page); false when the client's token is refused.
fn list(corpus: &Corpus, out: &mut TcpStream, meta: bool, query: &HashMap<&str, &str>) -> std::io::Result<bool> {
    let list_rv = RV0 + corpus.n;
    let limit: Option<usize> = query.get("limit").and_then(|l| l.parse().ok()).filter(|&l| l > 0);
    let (start, limit) = match query.get("continue").filter(|c| !c.is_empty()) {
        Some(token) => match token
            .strip_prefix("lean-")
            .and_then(|t| t.split_once('-'))
            .filter(|(rv, _)| rv.parse::<usize>().ok() == Some(list_rv))
            .and_then(|(_, start)| start.parse::<usize>().ok())
        {
            Some(start) => (start, limit),
            None => {
                respond(out, "410 Gone", br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","reason":"Expired","code":410}"#)?;
                return Ok(true);
            }
        },
        None if query.get("resourceVersion") == Some(&"0") => (0, None),
        None => (0, limit),
    };
    let end = limit.map_or(corpus.n, |l| start.saturating_add(l).min(corpus.n));
    let token = format!("lean-{list_rv}-{end}");
    let (head, tail) = corpus.framing(
        meta,
        list_rv,
        (end < corpus.n).then(|| (token.as_str(), corpus.n - end)),
    );
    write!(
        out,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )?;
    let mut buf = head;
    for i in start..end {
        if i > start {
            buf.push(b',');
        }
        corpus.write_item(i, meta, &mut buf);
        if (i - start + 1) % CHUNK == 0 {
            chunk(out, &buf)?;
            buf.clear();
        }
    }
    buf.extend_from_slice(&tail);
    chunk(out, &buf)?;
    out.write_all(b"0\r\n\r\n")?;
    out.flush()?;
    Ok(true)
}

/// A watch: a BOOKMARK at the list's revision, then the connection held until the client goes or the server stops.
fn watch(
    shared: &Shared,
    out: &mut TcpStream,
    reader: &mut BufReader<TcpStream>,
    meta: bool,
    bookmarks: bool,
) -> std::io::Result<()> {
    write!(
        out,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )?;
    if bookmarks {
        let (kind, api_version) = if meta {
            ("PartialObjectMetadata".to_owned(), "meta.k8s.io/v1")
        } else {
            (shared.corpus.kind.resource().kind, "v1")
        };
        let event = format!(
            "{{\"type\":\"BOOKMARK\",\"object\":{{\"kind\":\"{kind}\",\"apiVersion\":\"{api_version}\",\"metadata\":{{\"resourceVersion\":\"{}\",\"creationTimestamp\":null}}}}}}\n",
            RV0 + shared.corpus.n
        );
        chunk(out, event.as_bytes())?;
    }
    out.flush()?;
    let mut buf = [0u8; 512];
    // A blocking read: 0 when the client closes, or once the server's stop shuts the socket down.
    while reader.read(&mut buf)? > 0 {
        if shared.stop.load(Ordering::SeqCst) {
            break;
        }
    }
    Ok(())
}
