//! Work queues in the manner of client-go's util/workqueue: deduplicating, delaying, rate limited.
