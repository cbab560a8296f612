//! The REST client: configuration, authentication, TLS, and typed access to resources.

pub mod params;
