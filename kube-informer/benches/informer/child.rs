//! Child processes and their line protocol; the embedded API server in a process of its own (`serve`).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

use kube_informer::object::ApiResource;
use kube_informer_apiserver::ApiServer;
use serde_json::json;

use crate::corpus::{NAMESPACES, configmaps, namespace, object};
use crate::procfs;

/// `key=value` pairs of a line.
pub(crate) fn parse_kv(line: &str) -> HashMap<String, String> {
    line.split_whitespace()
        .filter_map(|w| w.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

pub(crate) struct Proc {
    pub(crate) child: Child,
    pub(crate) stdin: ChildStdin,
    pub(crate) stdout: BufReader<ChildStdout>,
}

impl Proc {
    pub(crate) fn spawn(args: &[String]) -> Proc {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("re-executing the bench binary");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Proc { child, stdin, stdout }
    }

    /// The next line starting with `tag`, as key/value pairs (other lines are echoed to stderr).
    pub(crate) fn expect(&mut self, tag: &str) -> HashMap<String, String> {
        let mut line = String::new();
        loop {
            line.clear();
            if self.stdout.read_line(&mut line).unwrap() == 0 {
                panic!("child exited while waiting for {tag}");
            }
            if let Some(rest) = line.strip_prefix(tag) {
                return parse_kv(rest);
            }
            eprint!("  | {line}");
        }
    }

    pub(crate) fn send(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    pub(crate) fn finish(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

pub(crate) fn num(m: &HashMap<String, String>, k: &str) -> f64 {
    m.get(k)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("missing {k} in {m:?}"))
}

/// A running `serve` child.
pub(crate) struct Server {
    pub(crate) proc: Proc,
    pub(crate) url: String,
    pub(crate) kubeconfig: String,
    pub(crate) ready: HashMap<String, String>,
}

impl Server {
    pub(crate) fn start(objects: usize, burst: usize, https: bool) -> Server {
        let mut proc = Proc::spawn(&[
            "serve".into(),
            objects.to_string(),
            burst.to_string(),
            if https { "https" } else { "http" }.into(),
        ]);
        let ready = proc.expect("READY ");
        Server {
            url: ready["url"].clone(),
            kubeconfig: ready["kubeconfig"].clone(),
            proc,
            ready,
        }
    }

    /// The server process's CPU seconds so far.
    pub(crate) fn cpu(&mut self) -> f64 {
        self.proc.send("stats");
        num(&self.proc.expect("STATS "), "cpu")
    }

    /// Runs this binary as a child with `args` until its `RESULT` line; adds the server's CPU seconds meanwhile
    /// (`server_cpu`).
    pub(crate) fn measure(&mut self, args: &[String]) -> HashMap<String, String> {
        let cpu0 = self.cpu();
        let mut p = Proc::spawn(args);
        let mut r = p.expect("RESULT ");
        p.finish();
        r.insert("server_cpu".into(), format!("{}", self.cpu() - cpu0));
        r
    }
}

// ---------------------------------------------------------------------------------------------------------------
// `serve`: the embedded API server in its own process

pub(crate) fn serve(args: &[String]) {
    let objects: usize = args[0].parse().unwrap();
    let burst: usize = args[1].parse().unwrap();
    let https = args[2] == "https";
    let names: Vec<String> = (0..NAMESPACES).map(namespace).collect();
    let mut builder = ApiServer::builder()
        .compaction_interval(None)
        .history_size((burst + objects + 10).max(10_000))
        .namespaces(names.iter().map(String::as_str));
    if https {
        builder = builder.https();
    }
    let server = builder.start().unwrap();
    let ar = configmaps();
    let t = Instant::now();
    let (mut json_bytes, mut stripped_bytes) = (0usize, 0usize);
    for i in 0..objects {
        let mut created = server.create_json(&ar, Some(&namespace(i)), object(i, 0)).unwrap();
        json_bytes += serde_json::to_vec(&created).unwrap().len();
        created["metadata"].as_object_mut().unwrap().remove("managedFields");
        stripped_bytes += serde_json::to_vec(&created).unwrap().len();
    }
    let rv0 = server.revision();
    for j in 0..burst {
        let i = j % objects;
        server.replace_json(&ar, Some(&namespace(i)), object(i, j + 1)).unwrap();
    }
    println!(
        "READY url={} kubeconfig={} rv0={rv0} json={:.1} stripped={:.1} setup={:.2}",
        server.url(),
        server.kubeconfig_path().display(),
        json_bytes as f64 / objects as f64,
        stripped_bytes as f64 / objects as f64,
        t.elapsed().as_secs_f64()
    );
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let line = line.unwrap();
        match line.trim() {
            "stats" => println!(
                "STATS cpu={:.3} rss={} peak={}",
                procfs::cpu(),
                procfs::rss(),
                procfs::peak()
            ),
            "relist" => {
                // A 410 for the informer: cut its watch, move the revision past its resourceVersion (a write to
                // another resource leaves the ConfigMaps as they are) and compact it away.
                server.stop_listening();
                let ns = ApiResource::new("", "v1", "Namespace", "namespaces", false);
                let name = format!("relist-{}", server.revision());
                server
                    .create_json(&ns, None, json!({"metadata": {"name": name}}))
                    .unwrap();
                server.compact_to_latest();
                server.start_listening().unwrap();
                println!("OK");
            }
            _ => break,
        }
        std::io::stdout().flush().unwrap();
    }
    server.shutdown();
}
