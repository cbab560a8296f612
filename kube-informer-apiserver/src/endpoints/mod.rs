//! The endpoints floor (k8s.io/apiserver's `endpoints`: `handlers`, `discovery`, `openapi`): a request's route
//! ([`router`]), the handlers per verb ([`handlers`], one `RequestContext` passed down), LIST options and paging
//! ([`list`]), WATCH streams ([`watch`]), tables and other conversions of an answer ([`table`]), discovery
//! ([`discovery`], [`aggregated_discovery`]) and the OpenAPI documents ([`openapi`]).

pub(crate) mod aggregated_discovery;
pub(crate) mod discovery;
pub(crate) mod handlers;
pub(crate) mod list;
pub(crate) mod openapi;
pub(crate) mod router;
pub(crate) mod table;
pub(crate) mod watch;
