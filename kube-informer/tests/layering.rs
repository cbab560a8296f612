//! The library's layering, held by a test rather than by review: every `crate::<module>` a module's code names (its
//! own tests and doc comments aside) must sit lower in the house than the module itself —
//! object → error → selector/watch → client → cache → informer → controller, the health state low (the cache and
//! the client write it), the registry that aggregates everything, the metrics and the probe above it, the manager
//! that runs them all at the top, and the work queue generic (it knows no object, client, cache or informer).

use std::collections::BTreeMap;
use std::path::Path;

use kube_informer_test_support::rust_files;

/// Each top-level module of `src/` and its floor; a module may use only modules of a lower floor.
const FLOORS: &[(&str, u32)] = &[
    ("clock", 0),
    ("thread_name", 0),
    ("failure_streak", 0),
    ("object", 0),
    ("error", 1),
    ("crd", 1),
    ("stop", 1),
    ("health", 1),
    ("worker", 2),
    ("selector", 2),
    ("watch", 2),
    ("workqueue", 2),
    ("client", 3),
    ("cache", 4),
    ("informer", 5),
    ("leaderelection", 5),
    ("events", 5),
    ("controller", 6),
    // Waits on an informer's cache or on an object of the server.
    ("wait", 6),
    ("registry", 7),
    ("metrics", 8),
    ("probe", 9),
    // The manager owns the probe endpoint: above it.
    ("manager", 10),
    ("lib", 11),
    // Re-exports from every floor, the manager's included.
    ("prelude", 11),
    // Re-exports of plumbing from the watch, client and cache floors (and the two traits that reach it): a facade
    // above them, which nothing in the crate imports.
    ("unstable", 11),
];

/// The code of a file that the library itself runs: without its trailing `#[cfg(test)] mod …` and its comments.
fn library_code(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut previous = "";
    for line in text.lines() {
        let trimmed = line.trim_start();
        if previous == "#[cfg(test)]" && trimmed.contains("mod ") {
            lines.pop();
            break;
        }
        previous = trimmed;
        if !trimmed.starts_with("//") {
            lines.push(line);
        }
    }
    lines
}

/// `crate::name` paths in a line: the names.
fn crate_paths(line: &str) -> Vec<&str> {
    line.match_indices("crate::")
        .filter(|(at, _)| !line[..*at].ends_with(|c: char| c.is_alphanumeric() || c == '_'))
        .filter_map(|(at, m)| {
            let rest = &line[at + m.len()..];
            let end = rest
                .find(|c: char| !(c.is_ascii_lowercase() || c == '_'))
                .unwrap_or(rest.len());
            (end > 0).then(|| &rest[..end])
        })
        .collect()
}

#[test]
fn no_module_uses_one_above_it() {
    let floors: BTreeMap<&str, u32> = FLOORS.iter().copied().collect();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 50, "found the sources ({} files)", files.len());
    let mut upward = Vec::new();
    let mut arrows = 0;
    for file in &files {
        let relative = file.strip_prefix(&src).unwrap();
        let name = relative.file_name().unwrap().to_str().unwrap();
        if name.ends_with("_tests.rs") || name == "test_support.rs" || name == "test_log.rs" {
            continue;
        }
        let module = relative
            .iter()
            .next()
            .unwrap()
            .to_str()
            .unwrap()
            .trim_end_matches(".rs");
        let floor = *floors
            .get(module)
            .unwrap_or_else(|| panic!("src/{module} has no floor in FLOORS: place it in the layering"));
        let text = std::fs::read_to_string(file).unwrap();
        for line in library_code(&text) {
            for target in crate_paths(line) {
                if target == module || !floors.contains_key(target) {
                    continue; // the module itself, or an item of the crate root (`crate::Error`)
                }
                arrows += 1;
                if floors[target] >= floor {
                    upward.push(format!(
                        "src/{} uses crate::{target}: {}",
                        relative.display(),
                        line.trim()
                    ));
                }
            }
        }
    }
    assert!(arrows > 100, "the scan saw the crate's imports ({arrows})");
    assert!(
        upward.is_empty(),
        "arrows running up or sideways:\n{}",
        upward.join("\n")
    );
}

#[test]
fn the_scan_sees_an_arrow_up() {
    let code = "use crate::informer::SharedIndexInformer;\n/// [`x`](crate::registry::Registry)\n#[cfg(test)]\nmod tests {\n    use crate::controller::Context;\n}\n";
    let lines = library_code(code);
    let seen: Vec<&str> = lines.iter().flat_map(|l| crate_paths(l)).collect();
    assert_eq!(
        seen,
        ["informer"],
        "doc comments and the test module are not the library's code"
    );
    assert_eq!(crate_paths("let x = my_crate::foo + crate::cache::Store;"), ["cache"]);
}
