//! Public but unstable: plumbing between parts of this crate that a few programs reach into. **Not covered by
//! semver**: anything here may change or go in any release, a patch release included — pin an exact version if you
//! use it. Applications, controllers and their tests need none of it.
//!
//! * Watch recycling: an informer decodes watch events into the memory of the objects its cache let go of, by
//!   itself. [`SpareObjects`] is where a decoder finds them; [`RecycleFrom`] takes them on a [`WatchDecoder`] of
//!   one's own, [`Recycling`] on a [`WatchStream`].
//! * [`WatchHooks`]: what the informer's reflector asks of a [`ListerWatcher`](crate::cache::ListerWatcher) beyond
//!   listing and watching (watches that recycle, ending a watch when a sharded informer's shard changes), offered
//!   through [`ListerWatcher::unstable_hooks`](crate::cache::ListerWatcher::unstable_hooks). A `ListerWatcher` that
//!   wraps a [`ListWatch`](crate::cache::ListWatch) keeps both by passing its hooks on.
//! * [`time`]: the calendar [`object::time`](crate::object::time) is built on — RFC 3339 and civil dates over the
//!   whole range of `i64` seconds — for the API server's CEL timestamps and protobuf times, which reach before 1970
//!   and past 9999 as Go's `time.Time` does.
//! * `fifo_model` (feature `fuzzing`, which only the fuzz crate turns on): the informer queues' reference model, for
//!   the fuzz target that checks the queues against it.

use std::sync::Arc;

use serde::de::DeserializeOwned;

pub use crate::cache::list_watch::WatchHooks;
use crate::client::WatchStream;
use crate::watch::WatchDecoder;
pub use crate::watch::spares::SpareObjects;

/// The informer queues' reference model, and the checks of the DeltaFIFO and the RealFIFO against it.
#[cfg(any(test, feature = "fuzzing"))]
pub mod fifo_model {
    pub use crate::cache::fifo_model::{FifoOp, Obj, check, check_real};
}

/// The calendar [`object::time`](crate::object::time) is built on: RFC 3339 text to and from seconds and
/// nanoseconds since the epoch, and civil dates to and from days, over the whole range of `i64` seconds.
pub mod time {
    pub use crate::object::time::calendar::{Fraction, Parsed, Timestamp, civil_from_days, days_from_civil};
}

/// Recycling on a [`WatchDecoder`] of one's own: see [`SpareObjects`].
pub trait RecycleFrom<K> {
    /// Takes an object from `spares` to decode the next object event into, unless the decoder still holds one (see
    /// [`WatchDecoder::recycle`]); call it before each [`next_event`](WatchDecoder::next_event).
    fn recycle_from(&mut self, spares: &dyn SpareObjects<K>);

    /// True when the decoder holds an object given by [`WatchDecoder::recycle`] (or taken by
    /// [`recycle_from`](RecycleFrom::recycle_from)) that is not used yet.
    fn has_spare(&self) -> bool;
}

impl<K: DeserializeOwned> RecycleFrom<K> for WatchDecoder<K> {
    fn recycle_from(&mut self, spares: &dyn SpareObjects<K>) {
        WatchDecoder::recycle_from(self, spares);
    }

    fn has_spare(&self) -> bool {
        WatchDecoder::has_spare(self)
    }
}

/// Recycling on a [`WatchStream`]: see [`SpareObjects`].
pub trait Recycling<K> {
    /// Decodes the stream's events into objects taken from `spares` (an informer's reflector hands its
    /// `ListerWatcher` the versions its cache let go of, through [`WatchHooks::watch_recycling`]), reusing their
    /// memory; the events decoded are the same.
    #[must_use]
    fn recycling(self, spares: Arc<dyn SpareObjects<K>>) -> Self;
}

impl<K: DeserializeOwned> Recycling<K> for WatchStream<K> {
    fn recycling(self, spares: Arc<dyn SpareObjects<K>>) -> Self {
        WatchStream::recycling(self, spares)
    }
}
