//! An embedded, in-process Kubernetes API server for tests, examples and benchmarks (feature `testing`).
pub mod fifo_model;
