//! The macros Kubernetes' base environment adds to CEL's standard ones (`has`, `all`, `exists`, `exists_one`,
//! `map`, `filter`, and the optional types' `optMap` and `optFlatMap`, which the parser's environment expands
//! itself): the two-variable comprehensions of `ext.TwoVarComprehensions` (1.32): `all`,
//! `exists`, `existsOne`/`exists_one` with two variables, `transformList`, `transformMap`, `transformMapEntry`.
//! Each expands as cel-go expands it, into a comprehension the checker and interpreter already know; the map
//! transforms accumulate with [`MAP_INSERT`] (a function of the [`library`](super::library)).

use std::sync::LazyLock;

use cel::common::ast::{CallExpr, ComprehensionExpr, Expr, IdedExpr, ListExpr, LiteralValue, MapExpr};
use cel::parser::{Macro, MacroExprHelper, ParseError};

use super::library::MAP_INSERT;

/// The accumulator's name, as cel-go names it.
const RESULT: &str = "@result";

/// The parser's environment: the standard macros and these (built once).
static ENV: LazyLock<cel::Env> = LazyLock::new(|| {
    let mut env = cel::Env::stdlib();
    let added = [
        (
            "all",
            Macro::receiver("all", 3, |h, t, a| quantifier(h, t, a, Quantifier::All).map(Some)),
        ),
        (
            "exists",
            Macro::receiver("exists", 3, |h, t, a| quantifier(h, t, a, Quantifier::Exists).map(Some)),
        ),
        (
            "existsOne",
            Macro::receiver("existsOne", 3, |h, t, a| quantifier(h, t, a, Quantifier::One).map(Some)),
        ),
        (
            "exists_one",
            Macro::receiver("exists_one", 3, |h, t, a| {
                quantifier(h, t, a, Quantifier::One).map(Some)
            }),
        ),
        (
            "transformList",
            Macro::receiver("transformList", 3, |h, t, a| {
                transform(h, t, a, Transform::List).map(Some)
            }),
        ),
        (
            "transformList",
            Macro::receiver("transformList", 4, |h, t, a| {
                transform(h, t, a, Transform::List).map(Some)
            }),
        ),
        (
            "transformMap",
            Macro::receiver("transformMap", 3, |h, t, a| {
                transform(h, t, a, Transform::Map).map(Some)
            }),
        ),
        (
            "transformMap",
            Macro::receiver("transformMap", 4, |h, t, a| {
                transform(h, t, a, Transform::Map).map(Some)
            }),
        ),
        (
            "transformMapEntry",
            Macro::receiver("transformMapEntry", 3, |h, t, a| {
                transform(h, t, a, Transform::Entry).map(Some)
            }),
        ),
        (
            "transformMapEntry",
            Macro::receiver("transformMapEntry", 4, |h, t, a| {
                transform(h, t, a, Transform::Entry).map(Some)
            }),
        ),
    ];
    for (name, m) in added {
        // Only what the environment's table declares; each is for a (function, argument count) the standard
        // macros do not take.
        if super::environment::declares_macro(name) {
            let _ = env.add_macro(m);
        }
    }
    env
});

/// A parser expanding the standard macros and the base environment's.
pub(crate) fn parser() -> cel::parser::Parser {
    ENV.parser()
}

fn call(h: &mut MacroExprHelper<'_>, name: &str, target: Option<IdedExpr>, args: Vec<IdedExpr>) -> IdedExpr {
    h.next_expr(Expr::Call(CallExpr {
        func_name: name.to_owned(),
        target: target.map(Box::new),
        args,
    }))
}

fn ident(h: &mut MacroExprHelper<'_>, name: &str) -> IdedExpr {
    h.next_expr(Expr::Ident(name.to_owned()))
}

fn boolean(h: &mut MacroExprHelper<'_>, b: bool) -> IdedExpr {
    h.next_expr(Expr::Literal(LiteralValue::Boolean(b.into())))
}

fn simple_name(h: &mut MacroExprHelper<'_>, e: &IdedExpr, message: &str) -> Result<String, ParseError> {
    match &e.expr {
        Expr::Ident(n) => Ok(n.clone()),
        _ => Err(h.new_error(e.id, message)),
    }
}

fn comprehension(
    h: &mut MacroExprHelper<'_>,
    range: IdedExpr,
    vars: (String, Option<String>),
    init: IdedExpr,
    cond: IdedExpr,
    step: IdedExpr,
    result: IdedExpr,
) -> IdedExpr {
    h.next_expr(Expr::Comprehension(Box::new(ComprehensionExpr {
        iter_range: range,
        iter_var: vars.0,
        iter_var2: vars.1,
        accu_var: RESULT.to_owned(),
        accu_init: init,
        loop_cond: cond,
        loop_step: step,
        result,
    })))
}

#[derive(Clone, Copy)]
enum Quantifier {
    All,
    Exists,
    One,
}

/// The two variables of a two-variable comprehension, checked as cel-go checks them.
fn two_vars(h: &mut MacroExprHelper<'_>, args: &[IdedExpr]) -> Result<(String, String), ParseError> {
    let first = simple_name(h, &args[0], "argument must be a simple name")?;
    let second = simple_name(h, &args[1], "argument must be a simple name")?;
    if first == second {
        return Err(h.new_error(args[1].id, format!("duplicate variable name: {first}")));
    }
    if first == RESULT || second == RESULT {
        return Err(h.new_error(args[0].id, "iteration variable overwrites accumulator variable"));
    }
    Ok((first, second))
}

fn quantifier(
    h: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
    q: Quantifier,
) -> Result<IdedExpr, ParseError> {
    let (first, second) = two_vars(h, args)?;
    let (Some(range), Some(pred)) = (target.take(), args.pop()) else {
        return Err(h.new_error(0, "a comprehension takes a target"));
    };
    let accu = ident(h, RESULT);
    let (init, cond, step, result) = match q {
        Quantifier::All => {
            let init = boolean(h, true);
            let a = ident(h, RESULT);
            let cond = call(h, "@not_strictly_false", None, vec![a]);
            let step = call(h, "_&&_", None, vec![accu, pred]);
            (init, cond, step, ident(h, RESULT))
        }
        Quantifier::Exists => {
            let init = boolean(h, false);
            let a = ident(h, RESULT);
            let not = call(h, "!_", None, vec![a]);
            let cond = call(h, "@not_strictly_false", None, vec![not]);
            let step = call(h, "_||_", None, vec![accu, pred]);
            (init, cond, step, ident(h, RESULT))
        }
        Quantifier::One => {
            let init = h.next_expr(Expr::Literal(LiteralValue::Int(0.into())));
            let cond = boolean(h, true);
            let one = h.next_expr(Expr::Literal(LiteralValue::Int(1.into())));
            let plus = call(h, "_+_", None, vec![accu, one]);
            let same = ident(h, RESULT);
            let step = call(h, "_?_:_", None, vec![pred, plus, same]);
            let a = ident(h, RESULT);
            let one = h.next_expr(Expr::Literal(LiteralValue::Int(1.into())));
            (init, cond, step, call(h, "_==_", None, vec![a, one]))
        }
    };
    Ok(comprehension(h, range, (first, Some(second)), init, cond, step, result))
}

#[derive(Clone, Copy)]
enum Transform {
    List,
    Map,
    Entry,
}

fn transform(
    h: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
    t: Transform,
) -> Result<IdedExpr, ParseError> {
    let (first, second) = two_vars(h, args)?;
    let Some(range) = target.take() else {
        return Err(h.new_error(0, "a comprehension takes a target"));
    };
    let (filter, f) = match args.len() {
        4 => {
            let f = args.pop();
            (args.pop(), f)
        }
        _ => (None, args.pop()),
    };
    let Some(f) = f else {
        return Err(h.new_error(0, "a transform takes an expression"));
    };
    let accu = ident(h, RESULT);
    let (init, step) = match t {
        Transform::List => {
            let init = h.next_expr(Expr::List(ListExpr::default()));
            let item = h.next_expr(Expr::List(ListExpr::new(vec![f])));
            (init, call(h, "_+_", None, vec![accu, item]))
        }
        Transform::Map => {
            let init = h.next_expr(Expr::Map(MapExpr::default()));
            let key = ident(h, &first);
            (init, call(h, MAP_INSERT, None, vec![accu, key, f]))
        }
        Transform::Entry => {
            let init = h.next_expr(Expr::Map(MapExpr::default()));
            (init, call(h, MAP_INSERT, None, vec![accu, f]))
        }
    };
    let step = match filter {
        Some(filter) => {
            let same = ident(h, RESULT);
            call(h, "_?_:_", None, vec![filter, step, same])
        }
        None => step,
    };
    let cond = boolean(h, true);
    let result = ident(h, RESULT);
    Ok(comprehension(h, range, (first, Some(second)), init, cond, step, result))
}
