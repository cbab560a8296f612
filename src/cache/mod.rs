//! Caches: the Reflector (list and watch), the DeltaFIFO, the thread-safe indexed store, and listers.
