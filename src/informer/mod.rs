//! Shared index informers: one reflector and one cache per resource, shared by many event handlers.
