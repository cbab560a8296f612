//! Events: notes about objects for people (`kubectl describe`, `kubectl events`), written in the background.
//!
//! An [`EventRecorder`] takes events from any thread without blocking — a reconcile never waits for the API
//! server to record that it did something — and writes them on its own thread, folding repeats into one Event with a
//! growing `count`, as client-go's recorder does. [`ApiEventSink`] writes them to the API server; any
//! [`EventSink`] will do in tests.

mod cache;
mod event;
mod recorder;
mod sink;

pub use event::{Event, EventSource, EventType, ObjectReference};
pub(crate) use recorder::WeakRecorder;
pub use recorder::{EventRecorder, EventSink, RecorderMetrics, RecorderOptions};
pub use sink::ApiEventSink;
