//! Empty: this crate only holds tests.
