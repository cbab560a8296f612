//! CEL as kube-apiserver evaluates it (k8s.io/apiserver's `pkg/cel`, over cel-go): expressions parsed by the
//! [`cel`](https://docs.rs/cel) crate (CEL's grammar, its macros, optional syntax, source positions), then checked
//! ([`checker`]: types from the declared variables, cel-go's messages, the estimated cost) and evaluated
//! ([`interpreter`]: cel-go's semantics with its runtime cost) here, with the Kubernetes libraries
//! ([`library`], [`kubernetes`]).

pub(crate) mod checker;
pub(crate) mod interpreter;
pub(crate) mod kubernetes;
pub(crate) mod library;
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
    expr: IdedExpr,
    /// The checked result type.
    pub(crate) result: Type,
    /// The estimated worst-case cost.
    pub(crate) max_cost: u64,
    /// The declared variables it references.
    pub(crate) references: Vec<String>,
}

impl std::fmt::Debug for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Program").field("result", &self.result.name()).finish()
    }
}

impl Program {
    /// Evaluates with `vars`, within `limit`: the result and the cost spent.
    pub(crate) fn eval(&self, vars: &[(&str, Value)], limit: u64) -> (Result<Value, EvalError>, u64) {
        interpreter::eval(&self.expr, vars, limit)
    }

    pub(crate) fn uses(&self, var: &str) -> bool {
        self.references.iter().any(|r| r == var)
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

/// Parses and checks `source` with the variables `declared`; the error is cel-go's issues text.
pub(crate) fn compile(source: &str, declared: &[(String, Type)]) -> Result<Program, String> {
    let parsed = cel::parser::Parser::new()
        .enable_optional_syntax(true)
        .parse_with_source_info(source);
    let (expr, info): (IdedExpr, SourceInfo) = match parsed {
        Ok(p) => p,
        Err(errs) => {
            let text: Vec<String> = errs
                .errors
                .iter()
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
            return Err(text.join("\n"));
        }
    };
    let checked = checker::check(&expr, &info, declared);
    if !checked.issues.is_empty() {
        let text: Vec<String> = checked
            .issues
            .iter()
            .map(|i| render(source, i.offset, &i.message))
            .collect();
        return Err(text.join("\n"));
    }
    Ok(Program {
        expr,
        result: checked.result,
        max_cost: checked.max_cost,
        references: checked.references,
    })
}

#[cfg(test)]
mod tests;
