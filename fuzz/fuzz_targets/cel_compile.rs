//! CEL compilation (and evaluation of what compiles) never crashes the process, whatever the expression's depth or
//! width, on a caller's thread with a small stack: the embedded server refuses text past cel-go's limits before any
//! parser sees it and compiles deep text on a stack of its own. The input is used twice: as the expression's text,
//! and as a program that builds an expression from nesting and chaining operations repeated up to thousands of
//! times (so that deep and wide shapes are reached without the fuzzer having to type them).
//!
//! Properties: text past the limits is refused with cel-go's message, and text within them is never refused with
//! one.

#![no_main]

use kube_informer_apiserver::fuzzing::{CelOutcome, cel, cel_limits};
use libfuzzer_sys::fuzz_target;

/// The stack of the thread compiling each input: smaller than any real caller's.
const CALLER_STACK: usize = 256 * 1024;

const ATOMS: &[&str] = &[
    "1", "true", "'s'", "self", "self.a", "[1, 2]", "{'k': 1}", "2.5", "null", "b'x'",
];
const BINARY: &[&str] = &[
    " + ", " * ", " == ", " < ", " && ", " || ", " in ", " - ", " % ", " != ",
];
const OPEN: &[(&str, &str)] = &[
    ("(", ")"),
    ("[", "]"),
    ("{'k': ", "}"),
    ("size(", ")"),
    ("int(", ")"),
    ("[1].all(x, ", ")"),
    ("dyn(", ")"),
    ("true ? ", " : 1"),
    ("[0][", "]"),
    ("'a'.startsWith(", ")"),
];

/// Builds an expression from `data`: each pair of bytes is an operation and a repeat count (up to ~4,000).
fn build(data: &[u8]) -> String {
    let mut prefix = String::new();
    let mut suffix = String::new();
    let mut middle = String::from("1");
    for op in data.chunks(2) {
        let (code, count) = (op[0], usize::from(op.get(1).copied().unwrap_or(1)));
        let n = count * count / 16 + 1;
        let pick = usize::from(code >> 3);
        match code % 8 {
            0 => {
                let (open, close) = OPEN[pick % OPEN.len()];
                prefix.push_str(&open.repeat(n));
                suffix = close.repeat(n) + &suffix;
            }
            1 => {
                let op = BINARY[pick % BINARY.len()];
                let atom = ATOMS[pick % ATOMS.len()];
                for _ in 0..n {
                    middle.push_str(op);
                    middle.push_str(atom);
                }
            }
            2 => middle.push_str(&".a".repeat(n)),
            3 => middle.push_str(&"[0]".repeat(n)),
            4 => middle = format!("{}{middle}", "!".repeat(n)),
            5 => middle = format!("[{}]", vec![middle.as_str(); n.min(64)].join(", ")),
            6 => middle.push_str(&".size()".repeat(n)),
            _ => middle = format!("{}{middle}", "1 ? 2 : ".repeat(n)),
        }
        if prefix.len() + middle.len() + suffix.len() > 150_000 {
            break;
        }
    }
    format!("{prefix}{middle}{suffix}")
}

fn check(source: &str) {
    let limits = cel_limits(source);
    let outcome = cel(source);
    match (&limits, &outcome) {
        (Err(issue), CelOutcome::Refused(issues)) => assert_eq!(issue, issues),
        (Err(issue), CelOutcome::Evaluated(_)) => panic!("compiled past the limits: {issue}"),
        (Ok(()), CelOutcome::Refused(issues)) => assert!(
            !issues.contains("<input>:-1:0: expression") && !issues.contains("max recursion depth exceeded"),
            "refused within the limits: {issues}"
        ),
        (Ok(()), CelOutcome::Evaluated(_)) => {}
    }
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data).into_owned();
    let built = build(data);
    std::thread::Builder::new()
        .stack_size(CALLER_STACK)
        .spawn(move || {
            check(&text);
            check(&built);
        })
        .expect("a thread")
        .join()
        .expect("no panic");
});
