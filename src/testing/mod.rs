//! An embedded, in-process Kubernetes API server for tests, examples and benchmarks (feature `testing`).
