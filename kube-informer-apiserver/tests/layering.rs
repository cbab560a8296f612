//! The server's floors, held by a test rather than by review (the crate docs draw them). The floors are the folders
//! of `src/`, named as k8s.io/apiserver names its packages; every `crate::…` or `super::…` path a module's code names
//! (its own tests and comments aside) resolves to a folder, and that folder must sit on the same floor or a lower one:
//!
//! 0. the ground, knowing nothing of kinds: `api` (apimachinery's plain values: errors, meta, names, quantities,
//!    Go literals, the user) and `http` (the wire, TLS, the request's one reading, serving limits, the request log);
//! 1. `storage` (the MVCC store) and the pure libraries: `cel`, `schema`, `patch` (JSON patch, strategic merge,
//!    managed fields and apply), `protobuf`, `serializer` (bodies as Go writes them);
//! 2. `registry` (the kinds: `ResourceSpec`, the catalog, strategies, defaults, subresources, CRDs, conversion,
//!    namespace lifecycle, bootstrap objects, printers, replies, the registry's store), which runs admission only
//!    through the function values the server hands its store;
//! 3. `admission` (field validation, defaulting as decoding does, ValidatingAdmissionPolicy) and `auth`
//!    (authentication, authorization, RBAC, impersonation, reviews, service-account tokens);
//! 4. `endpoints`: the router, the handlers per verb, watch serving, lists and tables, discovery, OpenAPI;
//! 5. `server` (wiring, the connection loop and its filters, the Rust calls, the admin API and faults), and the
//!    fuzz targets' entry points.
//!
//! Arrows that still run up and the circles that remain are listed below as known exceptions, each by the modules
//! (a folder's files and subfolders) that carry it: the test fails on a new upward arrow, on a module or a folder
//! joining a circle or a new circle, and on an exception that no longer exists (so the lists only shrink).
//!
//! Inside a folder, circles between its modules (its files and subfolders) are counted and printed for each folder:
//! there are none and none may form — a lower module reaches up only through a trait or a value it is handed, and
//! plain values shared by several modules sit in a leaf module. `ResourceSpec` (`registry::resource`) imports only
//! modules of plain values.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use kube_informer_test_support::rust_files;

/// Each folder of `src/` (and the one top-level module, `fuzzing.rs`) and its floor.
const FLOORS: &[(&str, u32)] = &[
    // 0: the ground.
    ("api", 0),
    ("http", 0),
    // 1: storage and the pure libraries.
    ("cel", 1),
    ("patch", 1),
    ("protobuf", 1),
    ("schema", 1),
    ("serializer", 1),
    ("storage", 1),
    // 2: the registry.
    ("registry", 2),
    // 3: admission and auth.
    ("admission", 3),
    ("auth", 3),
    // 4: endpoints.
    ("endpoints", 4),
    // 5: the server.
    ("fuzzing", 5),
    ("server", 5),
];

/// Arrows from a module up to a folder on a higher floor that remain (`from -> to`, modules named by their path
/// under `src/`; a folder's own `mod.rs` by the folder's name): none remain, none may be added.
const KNOWN_UPWARD: &[&str] = &[];

/// The circles between folders that remain, each by its folders: none remain, none may form.
const KNOWN_FOLDER_CIRCLES: &[&[&str]] = &[];

/// The circles between modules of different folders that remain, each by its modules: none remain, none may form.
const KNOWN_MODULE_CIRCLES: &[&[&str]] = &[];

/// The code a file runs in the server: without its trailing `#[cfg(test)] mod … {` and its comments.
fn server_code(text: &str) -> String {
    let mut lines = Vec::new();
    let mut previous = "";
    for line in text.lines() {
        let trimmed = line.trim();
        let test_only = previous == "#[cfg(test)]" || previous.starts_with("#[cfg(all(test,");
        if test_only && trimmed.contains("mod ") && trimmed.ends_with('{') {
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

/// Where the first inline module (`mod name {`) of `code` starts.
fn inline_module(code: &str) -> Option<usize> {
    let mut at = 0;
    for line in code.split_inclusive('\n') {
        let trimmed = line.trim();
        let item = trimmed
            .strip_prefix("pub(crate) ")
            .or_else(|| trimmed.strip_prefix("pub "))
            .unwrap_or(trimmed);
        if item.starts_with("mod ") && item.ends_with('{') {
            return Some(at);
        }
        at += line.len();
    }
    None
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

/// The folder a module belongs to (`registry::resource` → `registry`).
fn folder(module: &str) -> &str {
    module.split("::").next().unwrap()
}

/// The absolute paths, cut to two segments, that the use tree at `code[at..]` names under `path`; returns where the
/// tree ends.
fn tree(code: &str, mut at: usize, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    let bytes = code.as_bytes();
    while at < bytes.len() && bytes[at].is_ascii_whitespace() {
        at += 1;
    }
    if bytes.get(at) == Some(&b'{') {
        at += 1;
        loop {
            while at < bytes.len() && (bytes[at].is_ascii_whitespace() || bytes[at] == b',') {
                at += 1;
            }
            if at >= bytes.len() || bytes[at] == b'}' {
                return at + 1;
            }
            at = tree(code, at, path, out);
        }
    }
    let name = &code[at..at + ident_len(&code[at..])];
    if name.is_empty() {
        if !path.is_empty() {
            out.push(path.clone());
        }
        return at + code[at..].chars().next().map_or(1, char::len_utf8);
    }
    at += name.len();
    let pushed = name != "self";
    if pushed {
        path.push(name.to_owned());
    }
    if code[at..].starts_with("::") && path.len() < 2 {
        let end = tree(code, at + 2, path, out);
        if pushed {
            path.pop();
        }
        return end;
    }
    if !path.is_empty() {
        out.push(path[..path.len().min(2)].to_vec());
    }
    if pushed {
        path.pop();
    }
    // The rest of this item, up to the `,` or `}` that ends it.
    let mut depth = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'{' => depth += 1,
            b'}' if depth == 0 => return at,
            b'}' => depth -= 1,
            b',' | b';' | b'(' if depth == 0 => return at,
            _ => {}
        }
        at += 1;
    }
    at
}

/// The paths (cut to two segments: a folder and its module) that the `crate::`/`super::` paths of `code` name, read
/// from the module at `module`.
fn targets(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(found) = code[at..].find(['c', 's']) {
        let start = at + found;
        at = start + 1;
        if code[..start].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let rest = &code[start..];
        let (mut base, end) = if rest.starts_with("crate::") {
            (Vec::new(), start + "crate::".len())
        } else if rest.starts_with("super::") {
            let mut ups = 0;
            let mut r = rest;
            while let Some(next) = r.strip_prefix("super::") {
                ups += 1;
                r = next;
            }
            (
                module[..module.len().saturating_sub(ups)].to_vec(),
                code.len() - r.len(),
            )
        } else {
            continue;
        };
        base.truncate(2);
        if base.len() == 2 {
            out.push(base);
        } else {
            tree(code, end, &mut base, &mut out);
        }
    }
    out
}

/// The modules of its own folder that a folder's `mod.rs` names by a relative path (`pub(crate) use store::Store;`,
/// `serving::restart(…)`): `registry::Store` is `registry::store`'s, and the scan sees it through the folder's root.
fn children_named(code: &str, folder: &str, modules: &BTreeSet<String>) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for module in modules {
        let Some(child) = module.strip_prefix(folder).and_then(|m| m.strip_prefix("::")) else {
            continue;
        };
        let path = format!("{child}::");
        let mut at = 0;
        while let Some(found) = code[at..].find(&path) {
            let start = at + found;
            at = start + path.len();
            if !code[..start].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
                out.push(vec![folder.to_owned(), child.to_owned()]);
                break;
            }
        }
    }
    out
}

/// The modules of `src/` (`folder` for a folder's `mod.rs`, `folder::file` or `folder::subfolder` for what it holds)
/// and the arrows between them: `(from, to)` → an example of the file.
fn arrows() -> (BTreeSet<String>, BTreeMap<(String, String), String>) {
    let floors: BTreeMap<&str, u32> = FLOORS.iter().copied().collect();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 100, "found the sources ({} files)", files.len());
    let mut read = Vec::new();
    let mut modules = BTreeSet::new();
    for file in &files {
        let relative = file.strip_prefix(&src).unwrap().to_owned();
        let name = relative.file_name().unwrap().to_str().unwrap();
        if name.ends_with("_tests.rs") || name == "tests.rs" || name == "main.rs" {
            continue;
        }
        let module = module_path(&relative);
        if module.is_empty() {
            continue; // lib.rs: the crate root declares and re-exports everything
        }
        assert!(
            floors.contains_key(module[0].as_str()),
            "src/{} has no floor in FLOORS: place it in the layering",
            module[0]
        );
        modules.insert(module[..module.len().min(2)].join("::"));
        read.push((relative, module));
    }
    let mut arrows = BTreeMap::new();
    for (relative, module) in &read {
        let from = module[..module.len().min(2)].join("::");
        let text = std::fs::read_to_string(src.join(relative)).unwrap();
        let code = server_code(&text);
        // The scan reads `super::` from the file's module: in an inline module it would name another one.
        if let Some(inline) = inline_module(&code) {
            assert!(
                !code[inline..].contains("super::"),
                "src/{}: an inline module names `super::`, which the scan would read from the file's module: give \
                 the inline module a file of its own",
                relative.display()
            );
        }
        let mut found = targets(&code, module);
        if module.len() == 1 {
            found.extend(children_named(&code, &module[0], &modules));
        }
        for target in found {
            let to = if modules.contains(&target.join("::")) {
                target.join("::")
            } else {
                target[0].clone()
            };
            if to != from && floors.contains_key(folder(&to)) {
                arrows
                    .entry((from.clone(), to))
                    .or_insert_with(|| format!("src/{}", relative.display()));
            }
        }
    }
    (modules, arrows)
}

/// The arrows between folders, from the arrows between their modules.
fn folder_arrows(arrows: &BTreeMap<(String, String), String>) -> BTreeMap<(String, String), String> {
    arrows
        .iter()
        .filter(|((from, to), _)| folder(from) != folder(to))
        .map(|((from, to), file)| ((folder(from).to_owned(), folder(to).to_owned()), file.clone()))
        .collect()
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
fn no_module_uses_a_folder_on_a_higher_floor_but_the_known_exceptions() {
    let floors: BTreeMap<&str, u32> = FLOORS.iter().copied().collect();
    let (modules, arrows) = arrows();
    let folders = folder_arrows(&arrows);
    assert!(
        folders.len() > 30,
        "the scan saw the crate's imports ({})",
        folders.len()
    );
    let known: BTreeSet<&str> = KNOWN_UPWARD.iter().copied().collect();
    let mut upward = BTreeSet::new();
    let mut new = Vec::new();
    for ((from, to), file) in &arrows {
        let (low, high) = (floors[folder(from)], floors[folder(to)]);
        if high > low {
            let arrow = format!("{from} -> {to}");
            if !known.contains(arrow.as_str()) {
                new.push(format!("{arrow} (floor {low} to {high}; {file})"));
            }
            upward.insert(arrow);
        }
    }
    let gone: Vec<&&str> = KNOWN_UPWARD.iter().filter(|a| !upward.contains(**a)).collect();
    let upward_folders: BTreeSet<_> = folders
        .keys()
        .filter(|(from, to)| floors[to.as_str()] > floors[from.as_str()])
        .collect();
    println!(
        "{} folders, {} arrows between them, {} upward ({}); {} modules, {} arrows between modules of different folders",
        floors.len(),
        folders.len(),
        upward_folders.len(),
        upward_folders
            .iter()
            .map(|(f, t)| format!("{f} -> {t}"))
            .collect::<Vec<_>>()
            .join(", "),
        modules.len(),
        arrows.keys().filter(|(from, to)| folder(from) != folder(to)).count(),
    );
    assert!(new.is_empty(), "new arrows running up a floor:\n{}", new.join("\n"));
    assert!(
        gone.is_empty(),
        "gone from the code, remove from KNOWN_UPWARD: {gone:?}"
    );
}

/// What is wrong with `found` against `known`: a circle that is not a known one (or grew past it), a known one that
/// shrank or broke.
fn circle_problems(found: &[BTreeSet<String>], known: &[&[&str]], what: &str) -> Vec<String> {
    let known: Vec<BTreeSet<String>> = known
        .iter()
        .map(|c| c.iter().map(|m| (*m).to_owned()).collect())
        .collect();
    let mut problems = Vec::new();
    for circle in found {
        if !known.iter().any(|k| circle.is_subset(k)) {
            problems.push(format!(
                "a circle between {what} that is not a known one (or grew past it): {circle:?}"
            ));
        }
    }
    for k in &known {
        if !found.iter().any(|c| c == k) {
            problems.push(format!(
                "a known circle between {what} shrank or broke (write it as it is now): {k:?}; now {found:?}"
            ));
        }
    }
    problems
}

/// Fails on what [`circle_problems`] finds.
fn check_circles(found: &[BTreeSet<String>], known: &[&[&str]], what: &str) {
    let problems = circle_problems(found, known, what);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    println!(
        "circles between {what}: {:?}",
        found.iter().map(BTreeSet::len).collect::<Vec<_>>()
    );
}

#[test]
fn no_new_circle_between_folders_or_their_modules() {
    let (_, arrows) = arrows();
    check_circles(&circles(&folder_arrows(&arrows)), KNOWN_FOLDER_CIRCLES, "folders");
    // Circles within one folder are its own business; those that span folders are the floors'.
    let spanning: Vec<BTreeSet<String>> = circles(&arrows)
        .into_iter()
        .filter(|c| c.iter().any(|m| folder(m) != folder(c.first().unwrap())))
        .collect();
    check_circles(&spanning, KNOWN_MODULE_CIRCLES, "modules of different folders");
}

/// The circles between modules of one folder (its files and subfolders), for each folder of [`FLOORS`].
fn circles_inside(arrows: &BTreeMap<(String, String), String>) -> BTreeMap<&'static str, Vec<BTreeSet<String>>> {
    FLOORS
        .iter()
        .map(|&(name, _)| {
            let inside: BTreeMap<(String, String), String> = arrows
                .iter()
                .filter(|((from, to), _)| folder(from) == name && folder(to) == name)
                .map(|(arrow, file)| (arrow.clone(), file.clone()))
                .collect();
            (name, circles(&inside))
        })
        .collect()
}

/// No circle between the modules of any folder (there were circles in `registry` of 11 modules, `cel` of 10,
/// `schema` of 8, `server` of 6, `admission` and `auth` of 2), and none may form. Prints, for each folder, the
/// circles between its own modules.
#[test]
fn no_circle_between_the_modules_of_any_folder() {
    let (_, arrows) = arrows();
    let inside = circles_inside(&arrows);
    for (name, found) in &inside {
        println!(
            "circles between the modules of {name}/: {} {:?} {found:?}",
            found.len(),
            found.iter().map(BTreeSet::len).collect::<Vec<_>>()
        );
    }
    let within = arrows.keys().filter(|(from, to)| folder(from) == folder(to)).count();
    assert!(within > 100, "the scan saw the imports inside folders ({within})");
    let problems: Vec<String> = inside
        .iter()
        .flat_map(|(name, found)| found.iter().map(move |c| format!("{name}/: {c:?}")))
        .collect();
    assert!(
        problems.is_empty(),
        "a circle between the modules of one folder (a lower module reaches up only through a trait or a value it \
         is handed; plain values shared by several modules go to a leaf module):\n{}",
        problems.join("\n")
    );
}

/// `ResourceSpec` is data (names, scope, verbs, the function values of a kind's rules): `registry::resource`
/// imports, inside its folder, only modules of plain values that import no other module of the registry, and the
/// modules that fill a spec (the catalog, CRDs, conversion, defaults, scale) import it, never the reverse. No circle
/// is left between the registry's modules (there was one of 11 through `resource`), and none may form.
#[test]
fn no_circle_between_the_registrys_modules_and_resource_spec_imports_no_module_that_fills_it() {
    let (modules, arrows) = arrows();
    let inside = circles_inside(&arrows);
    let registry = &inside["registry"];
    let through: Vec<&BTreeSet<String>> = registry.iter().filter(|c| c.contains("registry::resource")).collect();
    assert!(
        through.is_empty(),
        "a circle between the registry's modules goes through registry::resource (ResourceSpec imports a module \
         that fills it): {through:?}"
    );
    assert!(
        registry.is_empty(),
        "a circle between the registry's modules: {registry:?}"
    );
    assert!(modules.contains("registry::resource"), "the scan saw resource.rs");
    let imports_of = |module: &str| -> Vec<&str> {
        arrows
            .keys()
            .filter(|(from, to)| from == module && folder(to) == "registry" && to != "registry")
            .map(|(_, to)| to.as_str())
            .collect()
    };
    let values = imports_of("registry::resource");
    assert!(
        values.contains(&"registry::kind_rules"),
        "the scan saw what resource.rs imports: {values:?}"
    );
    let not_values: Vec<(&str, Vec<&str>)> = values
        .into_iter()
        .map(|value| (value, imports_of(value)))
        .filter(|(_, further)| !further.is_empty())
        .collect();
    assert!(
        not_values.is_empty(),
        "registry::resource imports modules of the registry that import others (not plain values): {not_values:?}"
    );
}

#[test]
fn the_scan_resolves_paths_as_rustc_does() {
    let module = ["auth".to_owned(), "rbac".to_owned(), "authorizer".to_owned()];
    let code = "use super::types::Role;\nuse crate::storage::store::{self, Store};\nuse super::super::{errors, http::Head};\nlet x = my_crate::cel + crate::endpoints::watch::serve();";
    assert_eq!(
        targets(code, &module),
        [
            vec!["auth", "rbac"],
            vec!["storage", "store"],
            vec!["auth", "errors"],
            vec!["auth", "http"],
            vec!["endpoints", "watch"]
        ]
    );
    let top = ["endpoints".to_owned(), "handlers".to_owned()];
    assert_eq!(
        targets(
            "use crate::{api::errors, registry::{reply::Reply, strategy}, ApiServer};",
            &top
        ),
        [
            vec!["api", "errors"],
            vec!["registry", "reply"],
            vec!["registry", "strategy"],
            vec!["ApiServer"]
        ]
    );
    assert_eq!(
        targets("use super::list::ListOptions;", &top),
        [vec!["endpoints", "list"]]
    );
    let code = server_code("use crate::a::b;\n// crate::b\n#[cfg(test)]\nmod tests {\n    use crate::c;\n}\n");
    assert_eq!(
        targets(&code, &top),
        [vec!["a", "b"]],
        "comments and the test module are not the server's code"
    );
    let code = server_code("use crate::a::b;\n#[cfg(all(test, unix))]\nmod tests {\n    use super::c;\n}\n");
    assert_eq!(
        targets(&code, &top),
        [vec!["a", "b"]],
        "a test module of one platform neither"
    );
    let code = "use crate::a::b;\n\n#[cfg(feature = \"cel\")]\npub(crate) mod evaluate {\n    use super::*;\n}\n";
    assert_eq!(inline_module(code), Some(42), "an inline module is seen");
    assert_eq!(inline_module("mod evaluate;\nuse crate::a::b;\n"), None);
}

#[test]
fn a_circle_that_comes_back_fails_the_check() {
    // registry::strategy -> admission -> registry::resource -> registry::strategy: the circle this crate had.
    let arrows: BTreeMap<(String, String), String> = [
        ("registry::strategy", "admission"),
        ("admission", "registry::resource"),
        ("registry::resource", "registry::strategy"),
        ("endpoints::handlers", "admission"),
    ]
    .into_iter()
    .map(|(f, t)| ((f.to_owned(), t.to_owned()), String::new()))
    .collect();
    let modules = circles(&arrows);
    assert_eq!(modules.len(), 1, "{modules:?}");
    assert_eq!(modules[0].len(), 3, "{modules:?}");
    let folders = circles(&folder_arrows(&arrows));
    assert_eq!(
        folders,
        [BTreeSet::from(["admission".to_owned(), "registry".to_owned()])]
    );
    for (found, what) in [(&modules, "modules"), (&folders, "folders")] {
        let problems = circle_problems(found, &[], what);
        assert_eq!(problems.len(), 1, "a circle between {what} is refused: {problems:?}");
    }
    // Inside one folder: cel::kubernetes -> cel::library -> cel::kubernetes, a circle cel had.
    let arrows: BTreeMap<(String, String), String> = [
        ("cel::library", "cel::kubernetes"),
        ("cel::kubernetes", "cel::library"),
        ("cel::checker", "cel::library"),
        ("cel::library", "api"),
    ]
    .into_iter()
    .map(|(f, t)| ((f.to_owned(), t.to_owned()), String::new()))
    .collect();
    let inside = circles_inside(&arrows);
    assert_eq!(
        inside["cel"],
        [BTreeSet::from([
            "cel::kubernetes".to_owned(),
            "cel::library".to_owned()
        ])]
    );
    assert!(
        inside
            .iter()
            .filter(|(name, _)| **name != "cel")
            .all(|(_, c)| c.is_empty())
    );
}
