//! The top floor (k8s.io/apiserver's `server`, `server/filters`): [`ApiServer`] and its control API
//! ([`api_server`]), the state its threads share ([`shared`]) and its [`builder`] (the wiring), listening, the
//! acceptor, connection threads, restart and shutdown ([`serving`]), the connection loop and its filters ([`conn`]),
//! the Rust calls without HTTP ([`direct`]), fault injection ([`faults`]) and the admin API over HTTP ([`admin`]),
//! manifests, the kubeconfig the server writes and a service account's client.

pub(crate) mod admin;
pub(crate) mod api_server;
pub(crate) mod builder;
pub(crate) mod conn;
pub(crate) mod direct;
pub(crate) mod faults;
pub(crate) mod fd_limit;
pub(crate) mod kubeconfig;
pub(crate) mod manifests;
pub(crate) mod service_account_client;
pub(crate) mod serving;
pub(crate) mod shared;

pub use api_server::{ADMIN_USER, ApiServer};
