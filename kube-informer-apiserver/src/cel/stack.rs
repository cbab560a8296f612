//! Deep expressions on a stack of known size. The `cel` crate's parser recurses through a dozen grammar rules per
//! nesting level (some 8 KiB of stack per level in a debug build), and the checker and interpreter recurse once or
//! twice per node: an expression at cel-go's limits ([`limits`](super::limits)) needs a few MiB, more than a thread
//! of the caller's may have (a connection thread, a test's thread). Shallow expressions — nearly all — are compiled
//! and evaluated where they are asked for; deeper ones on a thread of [`DEEP_STACK`] made for the call, so that no
//! guard depends on the size of the caller's stack.

use std::thread;

use cel::common::ast::{EntryExpr, Expr, IdedExpr};

/// The stack of a thread compiling or evaluating a deep expression: an expression at cel-go's limits needs under
/// 4 MiB in a debug build (the crate's tests measure the worst shapes); the rest is margin. Only what a call
/// touches is ever backed by memory.
pub(crate) const DEEP_STACK: usize = 32 * 1024 * 1024;

/// Text nested no deeper than this (in `expr` rules and in operations, as [`limits`](super::limits) measures
/// them) is parsed and checked on the calling thread.
pub(crate) const SHALLOW_TEXT: u32 = 16;

/// A parsed expression no deeper than this (in nodes) is evaluated and dropped on the calling thread.
pub(crate) const SHALLOW_TREE: usize = 64;

/// Runs `f` on a thread of [`DEEP_STACK`] and returns its result; the error when no thread could be made.
pub(crate) fn run_deep<T: Send>(f: impl FnOnce() -> T + Send) -> Result<T, String> {
    thread::scope(|scope| {
        let handle = thread::Builder::new()
            .name("cel:deep".to_owned())
            .stack_size(DEEP_STACK)
            .spawn_scoped(scope, f)
            .map_err(|e| format!("cannot start a thread to evaluate a deep expression: {e}"))?;
        handle
            .join()
            .map_err(|_| "a deep expression's thread panicked".to_owned())
    })
}

/// The children of a node.
fn children(e: &IdedExpr) -> Vec<&IdedExpr> {
    match &e.expr {
        Expr::Call(c) => c.target.as_deref().into_iter().chain(&c.args).collect(),
        Expr::Comprehension(c) => vec![&c.iter_range, &c.accu_init, &c.loop_cond, &c.loop_step, &c.result],
        Expr::List(l) => l.elements.iter().collect(),
        Expr::Map(m) => entries(&m.entries),
        Expr::Struct(s) => entries(&s.entries),
        Expr::Select(s) => vec![&s.operand],
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => Vec::new(),
    }
}

fn entries(entries: &[cel::common::ast::IdedEntryExpr]) -> Vec<&IdedExpr> {
    entries
        .iter()
        .flat_map(|e| match &e.expr {
            EntryExpr::MapEntry(m) => vec![&m.key, &m.value],
            EntryExpr::StructField(f) => vec![&f.value],
        })
        .collect()
}

/// The deepest path of the tree, in nodes (a leaf is 1), found without recursion.
pub(crate) fn tree_depth(root: &IdedExpr) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(root, 1usize)];
    while let Some((e, d)) = stack.pop() {
        deepest = deepest.max(d);
        stack.extend(children(e).into_iter().map(|c| (c, d + 1)));
    }
    deepest
}

/// Takes the children out of a node (leaving it a leaf).
fn take_children(e: &mut IdedExpr) -> Vec<IdedExpr> {
    match std::mem::take(&mut e.expr) {
        Expr::Call(c) => c.target.map(|t| *t).into_iter().chain(c.args).collect(),
        Expr::Comprehension(c) => {
            let c = *c;
            vec![c.iter_range, c.accu_init, c.loop_cond, c.loop_step, c.result]
        }
        Expr::List(l) => l.elements,
        Expr::Map(m) => take_entries(m.entries),
        Expr::Struct(s) => take_entries(s.entries),
        Expr::Select(s) => vec![*s.operand],
        leaf => {
            e.expr = leaf;
            Vec::new()
        }
    }
}

fn take_entries(entries: Vec<cel::common::ast::IdedEntryExpr>) -> Vec<IdedExpr> {
    entries
        .into_iter()
        .flat_map(|e| match e.expr {
            EntryExpr::MapEntry(m) => vec![m.key, m.value],
            EntryExpr::StructField(f) => vec![f.value],
        })
        .collect()
}

/// Drops a tree without recursion (the compiler's drop of a deep tree recurses once per level).
pub(crate) fn drop_flat(root: IdedExpr) {
    let mut stack = vec![root];
    while let Some(mut e) = stack.pop() {
        stack.extend(take_children(&mut e));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> IdedExpr {
        cel::parser::Parser::new().parse(s).unwrap()
    }

    #[test]
    fn depth_counts_nodes_on_the_deepest_path() {
        assert_eq!(tree_depth(&parse("1")), 1);
        assert_eq!(tree_depth(&parse("a.b")), 2);
        assert_eq!(tree_depth(&parse("1 + 2 + 3")), 3);
        assert_eq!(tree_depth(&parse("[[1], 2]")), 3);
        assert_eq!(tree_depth(&parse("{'a': {'b': [1]}}")), 4);
    }

    #[test]
    fn a_deep_tree_is_measured_and_dropped_on_a_small_stack() {
        // Built by hand: the parser itself would need a big stack for this.
        let mut e = IdedExpr {
            id: 0,
            expr: Expr::Ident("x".into()),
        };
        for i in 0..100_000 {
            e = IdedExpr {
                id: i,
                expr: Expr::Select(cel::common::ast::SelectExpr {
                    operand: Box::new(e),
                    field: "f".into(),
                    test: false,
                }),
            };
        }
        thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(move || {
                assert_eq!(tree_depth(&e), 100_001);
                drop_flat(e);
            })
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn deep_work_runs_on_its_own_stack() {
        let name = run_deep(|| thread::current().name().map(str::to_owned)).unwrap();
        assert_eq!(name.as_deref(), Some("cel:deep"));
    }
}
