//! What the fuzz targets drive (feature `fuzzing`; not for applications, not part of the API).

/// How [`cel`] ended.
#[derive(Debug, PartialEq, Eq)]
pub enum CelOutcome {
    /// Refused at compilation: cel-go's issues text.
    Refused(String),
    /// Compiled; evaluation gave a value (`true` when a bool `true`) or a CEL error.
    Evaluated(bool),
}

/// Compiles `source` as a CRD rule would be (with `self` a dynamic value), and evaluates what compiles with `self`
/// an empty map, within cel-go's per-call cost limit.
pub fn cel(source: &str) -> CelOutcome {
    let declared = [("self".to_owned(), crate::cel::Type::Dyn)];
    match crate::cel::compile(source, &declared) {
        Err(issues) => CelOutcome::Refused(issues),
        Ok(p) => {
            let empty = crate::cel::Value::Map(Default::default());
            let (r, _) = p.eval(&[("self", empty)], crate::cel::PER_CALL_LIMIT);
            CelOutcome::Evaluated(matches!(r, Ok(crate::cel::Value::Bool(true))))
        }
    }
}

/// cel-go's limits as [`cel`] applies them: `Err` with the issue when the text is past one.
pub fn cel_limits(source: &str) -> Result<(), String> {
    crate::cel::limits::measure(source, crate::cel::limits::MAX_RECURSION_DEPTH)
        .map(|_| ())
        .map_err(|e| e.issue())
}
