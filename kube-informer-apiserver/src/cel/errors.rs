//! A runtime error, worded as cel-go words it (`common/types/err.go`), shared by every function of the library.

/// A runtime error, worded as cel-go words it.
pub(crate) type Fail = String;

pub(crate) const NO_OVERLOAD: &str = "no such overload";
