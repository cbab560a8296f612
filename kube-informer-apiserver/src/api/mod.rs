//! apimachinery's plain values, which every floor uses and which import nothing of the server: the `Status` bodies
//! of errors (`api/errors`), object metadata rules (`apis/meta`), names (`util/validation`), quantities
//! (`api/resource`), Go's literal formats, nesting depth, JSONPath (client-go's `util/jsonpath`), the request's
//! user (k8s.io/apiserver's `authentication/user`) and small helpers.

pub(crate) mod duration;
pub(crate) mod errors;
pub(crate) mod go_literals;
pub(crate) mod jsonpath;
pub(crate) mod meta;
pub(crate) mod names;
pub(crate) mod nesting;
pub(crate) mod quantity;
pub(crate) mod strconv;
pub(crate) mod user;
pub(crate) mod util;
