//! How kube-apiserver writes objects (k8s.io/apimachinery's `runtime/serializer`): [`json`] writes a JSON value
//! with the bytes Go's `encoding/json` gives for the same object — a built-in kind's fields in its Go struct's
//! order, a custom resource's keys sorted as Go writes a `map[string]interface{}`.

pub(crate) mod json;
