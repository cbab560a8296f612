//! The server's floors, held by a test rather than by review (the crate docs draw them): every `crate::…` or
//! `super::…` path a module's code names (its own tests and comments aside) resolves to a top-level module of `src/`
//! — a file or a folder —, and that module must sit on the same floor or a lower one, named as k8s.io/apiserver names
//! its packages:
//!
//! 0. the wire and the plain libraries, knowing nothing of kinds: `http`, `tls`, the request's one reading
//!    (`request_info`), the serving limits, `errors` (apimachinery's `Status`), `util`, …
//! 1. `storage` (the MVCC `store`) and the pure libraries: `cel`, `schema`, `patch`, `strategic_merge`,
//!    `managed_fields`, `protobuf`, the Go type checks;
//! 2. the kinds (`registry`: `resource`, the catalog, strategies, defaults, subresources, CRDs, conversion, namespace
//!    lifecycle, service accounts, bootstrap objects), `auth` (authentication, RBAC, impersonation, reviews) and
//!    `admission` (field validation, ValidatingAdmissionPolicy), side by side;
//! 3. `endpoints`: the handlers per verb, the router, watch serving, lists and tables, discovery, OpenAPI;
//! 4. the server: `server` (wiring), the connection loop, the Rust calls, the admin API and faults.
//!
//! Arrows that still run up and the circles that remain are listed below as known exceptions: the test fails on a
//! new upward arrow, on a module joining a circle or a new circle, and on an exception that no longer exists (so the
//! list only shrinks).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each top-level module of `src/` (file or folder) and its floor.
const FLOORS: &[(&str, u32)] = &[
    // 0: the wire and plain libraries.
    ("errors", 0),
    ("fault_action", 0),
    ("fd_limit", 0),
    ("go_literals", 0),
    ("http", 0),
    ("jsonpath", 0),
    ("kubeconfig", 0),
    ("log", 0),
    ("meta", 0),
    ("names", 0),
    ("quantity", 0),
    ("nesting", 0),
    ("request_info", 0),
    ("serving_limits", 0),
    ("tls", 0),
    ("user", 0),
    ("util", 0),
    ("warning", 0),
    // 1: storage and the pure libraries.
    ("builtin_catalog", 1),
    ("builtin_schemas", 1),
    ("cel", 1),
    ("managed_fields", 1),
    ("patch", 1),
    ("protobuf", 1),
    ("schema", 1),
    ("store", 1),
    ("strategic_merge", 1),
    ("type_check", 1),
    // 2: registry, auth, admission.
    ("bootstrap", 2),
    ("builtin_kinds", 2),
    ("certificate_approval", 2),
    ("component_status", 2),
    ("conversion", 2),
    ("crd", 2),
    ("customresource_strategy", 2),
    ("defaults", 2),
    ("eviction", 2),
    ("flowcontrol_bootstrap", 2),
    ("namespace_lifecycle", 2),
    ("pod_subresources", 2),
    ("printer_column", 2),
    ("printers", 2),
    // The answer as a value (object, list, status, stream, text) and its writing: what registry code returns
    // and the endpoints send; it uses only the wire, the store's objects and the errors.
    ("reply", 2),
    ("resource", 2),
    ("scale", 2),
    ("serviceaccount", 2),
    ("strategy", 2),
    ("auth", 2),
    ("authentication", 2),
    ("authorizer", 2),
    ("impersonation", 2),
    ("rbac", 2),
    ("review", 2),
    ("admission", 2),
    ("field_validation", 2),
    ("validating_admission_policy", 2),
    // 3: endpoints.
    ("aggregated_discovery", 3),
    ("discovery", 3),
    ("handlers", 3),
    ("list", 3),
    ("openapi", 3),
    ("router", 3),
    ("table", 3),
    ("watch", 3),
    // 4: the server.
    ("admin", 4),
    ("conn", 4),
    ("direct", 4),
    ("faults", 4),
    ("fuzzing", 4),
    ("manifests", 4),
    ("server", 4),
    ("service_account_client", 4),
];

/// Arrows from a module up to a higher floor that remain (`from -> to`): none may be added.
const KNOWN_UPWARD: &[&str] = &[
    // The handlers read the server's `Shared` state: it should be handed down as a value of a lower floor.
    "handlers -> server",
    // The field manager takes a `ResourceSpec` where it needs only the kind's schema and names.
    "managed_fields -> resource",
    // The store keeps each resource's `ResourceSpec` (its served versions, selectable fields).
    "store -> resource",
    // The watch stream runs on the connection (`ConnCtx`, `Stream`) instead of being handed a writer and a stop.
    "watch -> conn",
];

/// The circles between modules that remain, each by its members: no module may join one, no new one may form.
const KNOWN_CIRCLES: &[&[&str]] = &[
    // The registry, admission and storage knot through `ResourceSpec`, which imports the modules that fill it
    // (builtin_kinds, defaults, crd, conversion, scale) instead of holding function values.
    &[
        "admission",
        "authorizer",
        "builtin_kinds",
        "conversion",
        "crd",
        "customresource_strategy",
        "defaults",
        "field_validation",
        "managed_fields",
        "namespace_lifecycle",
        "rbac",
        "reply",
        "resource",
        "scale",
        "store",
        "strategy",
        "validating_admission_policy",
    ],
    // The connection loop calls the handlers and the watch, which read the server's state and the connection, and
    // the server (with its admin API) starts the connection loop.
    &["admin", "conn", "handlers", "server", "watch"],
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code a file runs in the server: without its trailing `#[cfg(test)] mod … {` and its comments.
fn server_code(text: &str) -> String {
    let mut lines = Vec::new();
    let mut previous = "";
    for line in text.lines() {
        let trimmed = line.trim();
        if previous == "#[cfg(test)]" && trimmed.contains("mod ") && trimmed.ends_with('{') {
            lines.pop();
            break;
        }
        previous = trimmed;
        if !trimmed.starts_with("//") {
            lines.push(line);
        }
    }
    lines.join("\n")
}

/// The module path of a file under `src/` (`rbac/authorizer.rs` → `[rbac, authorizer]`, `rbac/mod.rs` → `[rbac]`).
fn module_path(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative.iter().map(|p| p.to_str().unwrap().to_owned()).collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if !matches!(stem, "mod" | "lib" | "main") {
        parts.push(stem.to_owned());
    }
    parts
}

fn ident_len(s: &str) -> usize {
    s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len())
}

/// The top-level modules the `crate::`/`super::` paths of `code` name, read from the module at `module`.
fn targets(code: &str, module: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(found) = code[at..].find(['c', 's']) {
        let start = at + found;
        at = start + 1;
        if code[..start].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let rest = &code[start..];
        let (mut base, rest): (Vec<String>, &str) = if let Some(r) = rest.strip_prefix("crate::") {
            (Vec::new(), r)
        } else if rest.starts_with("super::") {
            let mut ups = 0;
            let mut r = rest;
            while let Some(next) = r.strip_prefix("super::") {
                ups += 1;
                r = next;
            }
            let base = module[..module.len().saturating_sub(ups)].to_vec();
            (base, r)
        } else {
            continue;
        };
        let names: Vec<&str> = if let Some(group) = rest.strip_prefix('{') {
            let mut names = Vec::new();
            let mut depth = 0;
            let mut item_start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if c.is_whitespace() => {}
                    _ if item_start && depth == 0 => {
                        item_start = false;
                        names.push(&group[i..i + ident_len(&group[i..])]);
                    }
                    _ => {}
                }
            }
            names
        } else {
            vec![&rest[..ident_len(rest)]]
        };
        for name in names {
            if name.is_empty() {
                continue;
            }
            if name != "self" {
                base.push(name.to_owned());
            }
            if let Some(top) = base.first() {
                out.push(top.clone());
            }
            if name != "self" {
                base.pop();
            }
        }
    }
    out
}

/// The arrows between top-level modules: `(from, to)` → an example of the line.
fn arrows() -> BTreeMap<(String, String), String> {
    let floors: BTreeMap<&str, u32> = FLOORS.iter().copied().collect();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 100, "found the sources ({} files)", files.len());
    let mut arrows = BTreeMap::new();
    for file in &files {
        let relative = file.strip_prefix(&src).unwrap();
        let name = relative.file_name().unwrap().to_str().unwrap();
        if name.ends_with("_tests.rs") || name == "tests.rs" || name == "main.rs" {
            continue;
        }
        let module = module_path(relative);
        let Some(top) = module.first() else {
            continue; // lib.rs: the crate root declares and re-exports everything
        };
        assert!(
            floors.contains_key(top.as_str()),
            "src/{top} has no floor in FLOORS: place it in the layering"
        );
        let text = std::fs::read_to_string(file).unwrap();
        let code = server_code(&text);
        for target in targets(&code, &module) {
            if &target != top && floors.contains_key(target.as_str()) {
                arrows
                    .entry((top.clone(), target.clone()))
                    .or_insert_with(|| format!("src/{}", relative.display()));
            }
        }
    }
    arrows
}

/// The strongly connected groups of more than one module (Tarjan's).
fn circles(arrows: &BTreeMap<(String, String), String>) -> Vec<BTreeSet<String>> {
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (from, to) in arrows.keys() {
        next.entry(from).or_default().push(to);
    }
    struct Tarjan<'a> {
        next: &'a BTreeMap<&'a str, Vec<&'a str>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<BTreeSet<String>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a str) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            self.on_stack.insert(v);
            for &w in self.next.get(v).map(Vec::as_slice).unwrap_or(&[]) {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.on_stack.contains(w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut group = BTreeSet::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    group.insert(w.to_owned());
                    if w == v {
                        break;
                    }
                }
                if group.len() > 1 {
                    self.out.push(group);
                }
            }
        }
    }
    let mut t = Tarjan {
        next: &next,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    let nodes: Vec<&str> = next.keys().copied().collect();
    for v in nodes {
        if !t.index.contains_key(v) {
            t.visit(v);
        }
    }
    t.out
}

#[test]
fn no_module_uses_one_on_a_higher_floor_but_the_known_exceptions() {
    let floors: BTreeMap<&str, u32> = FLOORS.iter().copied().collect();
    let arrows = arrows();
    assert!(
        arrows.len() > 200,
        "the scan saw the crate's imports ({})",
        arrows.len()
    );
    let known: BTreeSet<&str> = KNOWN_UPWARD.iter().copied().collect();
    let mut upward = BTreeSet::new();
    let mut new = Vec::new();
    for ((from, to), file) in &arrows {
        if floors[to.as_str()] > floors[from.as_str()] {
            let arrow = format!("{from} -> {to}");
            if !known.contains(arrow.as_str()) {
                new.push(format!(
                    "{arrow} (floor {} to {}; {file})",
                    floors[from.as_str()],
                    floors[to.as_str()]
                ));
            }
            upward.insert(arrow);
        }
    }
    let gone: Vec<&&str> = KNOWN_UPWARD.iter().filter(|a| !upward.contains(**a)).collect();
    println!(
        "{} arrows between {} modules, {} upward",
        arrows.len(),
        floors.len(),
        upward.len()
    );
    assert!(new.is_empty(), "new arrows running up a floor:\n{}", new.join("\n"));
    assert!(
        gone.is_empty(),
        "gone from the code, remove from KNOWN_UPWARD: {gone:?}"
    );
}

#[test]
fn no_new_circle_between_modules() {
    let found = circles(&arrows());
    let known: Vec<BTreeSet<String>> = KNOWN_CIRCLES
        .iter()
        .map(|c| c.iter().map(|m| (*m).to_owned()).collect())
        .collect();
    for circle in &found {
        assert!(
            known.iter().any(|k| circle.is_subset(k)),
            "a circle that is not a known one (or grew past it): {circle:?}"
        );
    }
    for k in &known {
        assert!(
            found.iter().any(|c| c == k),
            "a known circle shrank or broke (write it as it is now in KNOWN_CIRCLES): {k:?}; now {found:?}"
        );
    }
    println!("circles: {:?}", found.iter().map(BTreeSet::len).collect::<Vec<_>>());
}

#[test]
fn the_scan_resolves_paths_as_rustc_does() {
    let module = ["rbac".to_owned(), "authorizer".to_owned()];
    let code = "use super::types::Role;\nuse crate::store::{self, Store};\nuse super::super::{errors, http::Head};\nlet x = my_crate::cel + crate::watch::serve();";
    assert_eq!(targets(code, &module), ["rbac", "store", "errors", "http", "watch"]);
    let top = ["handlers".to_owned()];
    assert_eq!(targets("use super::{reply::Reply, store};", &top), ["reply", "store"]);
    let code = server_code("use crate::a;\n// crate::b\n#[cfg(test)]\nmod tests {\n    use crate::c;\n}\n");
    assert_eq!(
        targets(&code, &top),
        ["a"],
        "comments and the test module are not the server's code"
    );
}
