//! CEL as kube-apiserver evaluates it (k8s.io/apiserver's `pkg/cel`, over cel-go): expressions parsed by the
//! [`cel`](https://docs.rs/cel) crate (CEL's grammar, its macros, optional syntax, source positions), then checked
//! ([`checker`]: types from the declared variables, cel-go's messages, the estimated cost) and evaluated
//! ([`interpreter`]: cel-go's semantics with its runtime cost) here, with the Kubernetes libraries
//! ([`library`], [`kubernetes`]).

pub(crate) mod arithmetic;
pub(crate) mod checker;
pub(crate) mod conversions;
pub(crate) mod environment;
pub(crate) mod errors;
pub(crate) mod go_url;
pub(crate) mod interpreter;
pub(crate) mod kubernetes;
pub(crate) mod library;
pub(crate) mod limits;
pub(crate) mod macros;
pub(crate) mod stack;
pub(crate) mod strings;
pub(crate) mod time;
pub(crate) mod types;
pub(crate) mod value;

use cel::common::ast::{IdedExpr, SourceInfo};

pub(crate) use interpreter::Error as EvalError;
pub(crate) use types::Type;
pub(crate) use value::Value;

/// `PerCallLimit`: the runtime cost one evaluation may spend.
pub(crate) const PER_CALL_LIMIT: u64 = 1_000_000;
/// `RuntimeCELCostBudget`: the runtime cost one object's validation (or one policy binding) may spend.
pub(crate) const RUNTIME_COST_BUDGET: i64 = 10_000_000;

/// A compiled expression.
pub(crate) struct Program {
    /// Always `Some` but while dropping.
    expr: Option<IdedExpr>,
    /// Deeper than [`stack::SHALLOW_TREE`]: evaluated and dropped off the caller's stack.
    deep: bool,
    /// The checked result type.
    pub(crate) result: Type,
    /// The estimated worst-case cost.
    pub(crate) max_cost: u64,
    /// The declared variables it references.
    pub(crate) references: Vec<String>,
    /// The zeros of typed `sum()` calls ([`checker::Checked::zeros`]).
    zeros: Vec<(u64, Value)>,
}

impl std::fmt::Debug for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Program").field("result", &self.result.name()).finish()
    }
}

impl Program {
    /// Evaluates with `vars`, within `limit`: the result and the cost spent. A deep expression is evaluated on a
    /// stack of its own ([`stack`]).
    pub(crate) fn eval(&self, vars: &[(&str, Value)], limit: u64) -> (Result<Value, EvalError>, u64) {
        let Some(expr) = &self.expr else {
            return (Err(EvalError::Eval("no expression".into())), 0);
        };
        if !self.deep {
            return interpreter::eval_with(expr, vars, limit, &self.zeros);
        }
        stack::run_deep(|| interpreter::eval_with(expr, vars, limit, &self.zeros))
            .unwrap_or_else(|e| (Err(EvalError::Eval(e)), 0))
    }

    pub(crate) fn uses(&self, var: &str) -> bool {
        self.references.iter().any(|r| r == var)
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        // The compiler's drop of a tree recurses once per level.
        if self.deep
            && let Some(expr) = self.expr.take()
        {
            stack::drop_flat(expr);
        }
    }
}

/// cel-go's rendering of an issue: `ERROR: <input>:1:6: message` and the source line with a caret under the column.
fn render(source: &str, offset: u32, message: &str) -> String {
    let offset = (offset as usize).min(source.len());
    let before = &source[..offset];
    let line_no = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let col = source[line_start..offset].chars().count() + 1;
    let line = source[line_start..].lines().next().unwrap_or("");
    format!(
        "ERROR: <input>:{line_no}:{col}: {message}\n | {line}\n | {}^",
        ".".repeat(col - 1)
    )
}

/// cel-go's `maxErrorsToReport`: issues past it are counted, not rendered (each rendering holds its source line).
const MAX_ISSUES: usize = 100;

/// The rendered issues (at most [`MAX_ISSUES`] of `total`), and cel-go's note of those left out.
fn issues_text(mut rendered: Vec<String>, total: usize) -> String {
    if total > MAX_ISSUES {
        rendered.push(format!("{} more errors were truncated", total - MAX_ISSUES));
    }
    rendered.join("\n")
}

/// Parses and checks `source` with the variables `declared`; the error is cel-go's issues text. Text past cel-go's
/// size and nesting limits is refused before any parser sees it ([`limits`]); deep text is parsed and checked on a
/// stack of its own ([`stack`]).
pub(crate) fn compile(source: &str, declared: &[(String, Type)]) -> Result<Program, String> {
    let depth = limits::measure(source, limits::MAX_RECURSION_DEPTH).map_err(|e| e.issue())?;
    if depth.nesting <= stack::SHALLOW_TEXT && depth.operations <= stack::SHALLOW_TEXT {
        return compile_measured(source, declared);
    }
    stack::run_deep(|| compile_measured(source, declared)).and_then(|r| r)
}

/// [`compile`] of text within the limits.
fn compile_measured(source: &str, declared: &[(String, Type)]) -> Result<Program, String> {
    // The limits were checked on the text: the crate's own recursion limit (96 by default) must not refuse what
    // cel-go accepts. Its listener counts `expr` rules as cel-go's does; the margin only keeps it a backstop.
    let parsed = macros::parser()
        .enable_optional_syntax(true)
        .max_recursion_depth(limits::MAX_RECURSION_DEPTH as u16 + 8)
        .parse_with_source_info(source);
    let (expr, info): (IdedExpr, SourceInfo) = match parsed {
        Ok(p) => p,
        Err(errs) => {
            let text: Vec<String> = errs
                .errors
                .iter()
                .take(MAX_ISSUES)
                .map(|e| {
                    // The parser's positions: 1-based line, 0-based column.
                    let (line, col) = (e.pos.0.max(1) as usize, e.pos.1.max(0) as usize);
                    let offset: usize = source.split_inclusive('\n').take(line - 1).map(str::len).sum::<usize>()
                        + source
                            .split_inclusive('\n')
                            .nth(line - 1)
                            .map_or(0, |l| l.char_indices().nth(col).map_or(l.len(), |(i, _)| i));
                    render(source, offset as u32, &e.msg)
                })
                .collect();
            return Err(issues_text(text, errs.errors.len()));
        }
    };
    let checked = checker::check(&expr, &info, declared);
    if !checked.issues.is_empty() {
        let text: Vec<String> = checked
            .issues
            .iter()
            .take(MAX_ISSUES)
            .map(|i| render(source, i.offset, &i.message))
            .collect();
        return Err(issues_text(text, checked.issues.len()));
    }
    let deep = stack::tree_depth(&expr) > stack::SHALLOW_TREE;
    Ok(Program {
        expr: Some(expr),
        deep,
        result: checked.result,
        max_cost: checked.max_cost,
        references: checked.references,
        zeros: checked.zeros,
    })
}

#[cfg(test)]
mod tests;
