//! The storage floor (k8s.io/apiserver's `storage`: etcd3 and the watch cache): MVCC over serialized objects, one
//! global revision, the bounded event history watches read from, compaction and continue tokens.

pub(crate) mod store;
