//! The types structured-merge-diff needs, read straight from a resource's OpenAPI schema as kube-openapi's
//! `schemaconv` reads it: which values are scalars, lists (atomic, sets, or maps keyed by some fields) or maps (whose
//! fields are separately owned, or atomic).
//!
//! - lists: `x-kubernetes-list-type` (`atomic`, `set`, `map` with `x-kubernetes-list-map-keys`); without it, a
//!   built-in type's list with the strategic merge strategy `merge` is a map keyed by its
//!   `x-kubernetes-patch-merge-key` (a set without one), any other list atomic — a custom resource's lists without
//!   a list type are atomic;
//! - maps and structs: separately owned unless `x-kubernetes-map-type: atomic`; keys a struct does not declare are
//!   typed by `additionalProperties`, or "deduced" (any value: maps separately owned, lists atomic) where the
//!   schema keeps unknown fields (`x-kubernetes-preserve-unknown-fields`) or declares no properties;
//! - an object's `metadata` is always `ObjectMeta` (a custom resource's schema leaves it open), and an object
//!   without a schema is deduced below its `apiVersion`, `kind` and `metadata`.
//!
//! A key field missing from an associative list's item takes its schema's `default`; the built-in port lists
//! (containers' `ports`, a service's `ports`) default their `protocol` key to `TCP`, as Kubernetes' Go types
//! declare (`+default="TCP"`), which the schemas the server carries do not spell out.

use std::sync::LazyLock;

use serde_json::{Map, Value};

use crate::schema::builtin_schemas;

/// `ObjectMeta`'s schema, as Kubernetes publishes it.
static OBJECT_META: LazyLock<Value> = LazyLock::new(|| {
    builtin_schemas::schema("v1", "ConfigMap")
        .and_then(|s| s.pointer("/properties/metadata").cloned())
        .unwrap_or(Value::Null)
});

/// How a resource's objects are typed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Schema<'s> {
    /// The object's schema; `None`: deduced below the type fields.
    root: Option<&'s Value>,
    /// A custom resource: lists without a list type are atomic whatever their patch strategy.
    custom: bool,
}

/// The type of a value, resolved into an [`Atom`] by [`Schema::atom`].
#[derive(Clone, Copy, Debug)]
pub(crate) enum Ty<'s> {
    /// The whole object.
    Root,
    /// A node of the OpenAPI schema; `true` inside `x-kubernetes-preserve-unknown-fields`.
    Node(&'s Value, bool),
    /// `ObjectMeta`.
    Meta,
    /// A string (an object's `apiVersion` and `kind` when its schema does not declare them).
    Str,
    /// Any value: maps separately owned with deduced values, lists atomic.
    Deduced,
    /// Any value, owned whole.
    Untyped,
}

/// A scalar's type, for validation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scalar {
    Numeric,
    String,
    Boolean,
    /// Any scalar.
    Untyped,
}

/// How a list's items are told apart.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ListKind<'s> {
    /// Owned whole.
    Atomic,
    /// Scalars, each owned by value.
    Set,
    /// Maps, each owned by its key fields' values (`x-kubernetes-list-map-keys`, a JSON array of names).
    Map(&'s [Value]),
    /// Maps keyed by one field (a patch merge key).
    MergeKey(&'s str),
}

/// A list type.
#[derive(Clone, Copy, Debug)]
pub(crate) struct List<'s> {
    pub(crate) kind: ListKind<'s>,
    pub(crate) elem: Ty<'s>,
}

/// A map or struct type.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MapType<'s> {
    /// Owned whole (`x-kubernetes-map-type: atomic`).
    pub(crate) atomic: bool,
    properties: Option<&'s Map<String, Value>>,
    /// `metadata` is ObjectMeta and `apiVersion`/`kind` strings (an object's root, an embedded resource).
    typed_meta: bool,
    preserve: bool,
    /// The type of keys that are not declared fields; `None`: they are not allowed.
    elem: Option<Ty<'s>>,
}

/// What a type allows: a value is a scalar, a list or a map, each with its own rules.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Atom<'s> {
    pub(crate) scalar: Option<Scalar>,
    pub(crate) list: Option<List<'s>>,
    pub(crate) map: Option<MapType<'s>>,
}

const DEDUCED_MAP: MapType<'static> = MapType {
    atomic: false,
    properties: None,
    typed_meta: false,
    preserve: true,
    elem: Some(Ty::Deduced),
};

impl<'s> MapType<'s> {
    /// The type of a declared field.
    pub(crate) fn field(&self, name: &str) -> Option<Ty<'s>> {
        if self.typed_meta {
            match name {
                "metadata" => return Some(Ty::Meta),
                "apiVersion" | "kind" if self.properties.is_none_or(|p| !p.contains_key(name)) => {
                    return Some(Ty::Str);
                }
                _ => {}
            }
        }
        self.properties?.get(name).map(|n| Ty::Node(n, self.preserve))
    }

    /// The type of a key: its field's, else the map's element type (deduced when the schema allows none: only a
    /// validated value is walked, so that is never used to accept a value).
    pub(crate) fn child(&self, name: &str) -> Ty<'s> {
        self.field(name).or(self.elem).unwrap_or(Ty::Deduced)
    }

    /// True when `name` is a declared field (owned without being listed itself, when it has members below it).
    pub(crate) fn declares(&self, name: &str) -> bool {
        self.field(name).is_some()
    }

    /// The type of undeclared keys; `None`: the schema allows none.
    pub(crate) fn elem(&self) -> Option<Ty<'s>> {
        self.elem
    }
}

impl<'s> List<'s> {
    /// True for sets and keyed lists (their items are owned one by one).
    pub(crate) fn associative(&self) -> bool {
        !matches!(self.kind, ListKind::Atomic)
    }

    /// The key fields of a keyed list's items, in the schema's order (none for sets and atomic lists).
    pub(crate) fn keys(&self) -> Vec<&'s str> {
        match self.kind {
            ListKind::Map(keys) => keys.iter().filter_map(Value::as_str).collect(),
            ListKind::MergeKey(key) => vec![key],
            ListKind::Atomic | ListKind::Set => Vec::new(),
        }
    }
}

impl<'s> Schema<'s> {
    /// Types given by an OpenAPI schema of a whole object (`None`: deduced below the type fields).
    pub(crate) fn new(root: Option<&'s Value>, custom: bool) -> Schema<'s> {
        Schema { root, custom }
    }

    /// What `ty` allows.
    pub(crate) fn atom(&self, ty: Ty<'s>) -> Atom<'s> {
        match ty {
            Ty::Root => {
                let preserve = self.root.is_none_or(preserves);
                let props = self.root.and_then(|r| r.get("properties")).and_then(Value::as_object);
                Atom {
                    map: Some(MapType {
                        atomic: false,
                        properties: props,
                        typed_meta: true,
                        preserve,
                        elem: self.root.map_or(Some(Ty::Deduced), |r| self.elem_type(r, preserve)),
                    }),
                    ..Atom::default()
                }
            }
            Ty::Meta => self.node_atom(&OBJECT_META, false),
            Ty::Node(node, preserve) => self.node_atom(node, preserve || preserves(node)),
            Ty::Str => Atom {
                scalar: Some(Scalar::String),
                ..Atom::default()
            },
            Ty::Deduced => Atom {
                scalar: Some(Scalar::Untyped),
                list: Some(List {
                    kind: ListKind::Atomic,
                    elem: Ty::Untyped,
                }),
                map: Some(DEDUCED_MAP),
            },
            Ty::Untyped => Atom {
                scalar: Some(Scalar::Untyped),
                list: Some(List {
                    kind: ListKind::Atomic,
                    elem: Ty::Untyped,
                }),
                map: Some(MapType {
                    atomic: true,
                    elem: Some(Ty::Untyped),
                    ..DEDUCED_MAP
                }),
            },
        }
    }

    fn node_atom(&self, node: &'s Value, preserve: bool) -> Atom<'s> {
        let format = node.get("format").and_then(Value::as_str).unwrap_or("");
        match node.get("type").and_then(Value::as_str).unwrap_or("") {
            "" => Atom {
                scalar: Some(Scalar::Untyped),
                list: Some(self.list_type(node, preserve)),
                map: Some(self.map_type(node, preserve)),
            },
            "object" => Atom {
                map: Some(self.map_type(node, preserve)),
                ..Atom::default()
            },
            "array" => Atom {
                list: Some(self.list_type(node, preserve)),
                ..Atom::default()
            },
            "integer" | "number" => scalar(Scalar::Numeric),
            "boolean" => scalar(Scalar::Boolean),
            "string" if format.is_empty() || format == "byte" => scalar(Scalar::String),
            _ => scalar(Scalar::Untyped),
        }
    }

    fn elem_type(&self, node: &'s Value, preserve: bool) -> Option<Ty<'s>> {
        match node.get("additionalProperties") {
            Some(Value::Bool(true)) => Some(Ty::Deduced),
            Some(Value::Bool(false)) => None,
            Some(ap @ Value::Object(_)) => Some(Ty::Node(ap, preserve)),
            _ => {
                let no_properties = node
                    .get("properties")
                    .and_then(Value::as_object)
                    .is_none_or(Map::is_empty);
                (preserve || no_properties).then_some(Ty::Deduced)
            }
        }
    }

    fn map_type(&self, node: &'s Value, preserve: bool) -> MapType<'s> {
        MapType {
            atomic: node.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic"),
            properties: node.get("properties").and_then(Value::as_object),
            typed_meta: node.get("x-kubernetes-embedded-resource") == Some(&Value::Bool(true)),
            preserve,
            elem: self.elem_type(node, preserve),
        }
    }

    fn list_type(&self, node: &'s Value, preserve: bool) -> List<'s> {
        let text = |k: &str| node.get(k).and_then(Value::as_str);
        let kind = match text("x-kubernetes-list-type") {
            Some("set") => ListKind::Set,
            Some("map") => match node.get("x-kubernetes-list-map-keys").and_then(Value::as_array) {
                Some(keys) if !keys.is_empty() => ListKind::Map(keys),
                _ => ListKind::Atomic,
            },
            Some(_) => ListKind::Atomic,
            None if self.custom => ListKind::Atomic,
            None => match text("x-kubernetes-patch-strategy") {
                Some("merge" | "merge,retainKeys") => match text("x-kubernetes-patch-merge-key") {
                    Some(key) => ListKind::MergeKey(key),
                    None => ListKind::Set,
                },
                _ => ListKind::Atomic,
            },
        };
        List {
            kind,
            elem: match node.get("items") {
                Some(items @ Value::Object(_)) => Ty::Node(items, preserve),
                _ => Ty::Untyped,
            },
        }
    }

    /// The default of key field `key` of a keyed list's items (`None`: none; the item is then keyed without it).
    pub(crate) fn key_default(&self, list: &List<'s>, key: &str) -> Option<Value> {
        let Ty::Node(item, _) = list.elem else {
            return None;
        };
        let field = item.get("properties").and_then(|p| p.get(key))?;
        if let Some(d) = field.get("default") {
            return Some(d.clone());
        }
        (!self.custom && key == "protocol").then(|| Value::String("TCP".to_owned()))
    }
}

fn scalar<'s>(s: Scalar) -> Atom<'s> {
    Atom {
        scalar: Some(s),
        ..Atom::default()
    }
}

fn preserves(node: &Value) -> bool {
    node.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
}

impl<'s> Atom<'s> {
    /// The one of its kinds that fits `v` (structured-merge-diff's `deduceAtom`); the whole atom when none does
    /// (or `v` is null), so that the walk reports the mismatch.
    pub(crate) fn deduce(self, v: Option<&Value>) -> Atom<'s> {
        match v {
            Some(Value::Bool(_) | Value::Number(_) | Value::String(_)) if self.scalar.is_some() => Atom {
                scalar: self.scalar,
                ..Atom::default()
            },
            Some(Value::Array(_)) if self.list.is_some() => Atom {
                list: self.list,
                ..Atom::default()
            },
            Some(Value::Object(_)) if self.map.is_some() => Atom {
                map: self.map,
                ..Atom::default()
            },
            _ => self,
        }
    }

    /// True when both allow the same kinds of value (the walks compare deduced atoms this way).
    pub(crate) fn same_kinds(&self, other: &Atom<'_>) -> bool {
        self.scalar.is_some() == other.scalar.is_some()
            && self.list.is_some() == other.list.is_some()
            && self.map.is_some() == other.map.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn built_in_lists_follow_list_types_then_patch_strategies() {
        let pod = builtin_schemas::schema("v1", "Pod").unwrap();
        let s = Schema::new(Some(&pod), false);
        let spec = s.atom(Ty::Root).map.unwrap().field("spec").unwrap();
        let spec_map = s.atom(spec).map.unwrap();
        let containers = s.atom(spec_map.field("containers").unwrap()).list.unwrap();
        assert!(matches!(containers.kind, ListKind::Map(k) if k == [json!("name")]));
        let tolerations = s.atom(spec_map.field("tolerations").unwrap()).list.unwrap();
        assert!(matches!(tolerations.kind, ListKind::Atomic));
        let container = s.atom(containers.elem).map.unwrap();
        let ports = s.atom(container.field("ports").unwrap()).list.unwrap();
        assert_eq!(s.key_default(&ports, "protocol"), Some(json!("TCP")));
        assert_eq!(s.key_default(&ports, "containerPort"), None);
        // Metadata: labels separately owned, finalizers a set, owner references keyed by uid.
        let meta = s.atom(Ty::Meta).map.unwrap();
        assert!(!s.atom(meta.field("labels").unwrap()).map.unwrap().atomic);
        assert!(matches!(
            s.atom(meta.field("finalizers").unwrap()).list.unwrap().kind,
            ListKind::Set
        ));
        // A label selector is atomic.
        let deployment = builtin_schemas::schema("apps/v1", "Deployment").unwrap();
        let d = Schema::new(Some(&deployment), false);
        let dspec = d
            .atom(d.atom(Ty::Root).map.unwrap().field("spec").unwrap())
            .map
            .unwrap();
        assert!(d.atom(dspec.field("selector").unwrap()).map.unwrap().atomic);
    }

    #[test]
    fn custom_resources_and_unknown_shapes() {
        let crd = json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "merged": {"type": "array", "items": {"type": "string"}, "x-kubernetes-patch-strategy": "merge"},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "port": {"x-kubernetes-int-or-string": true},
            }},
        }});
        let s = Schema::new(Some(&crd), true);
        let root = s.atom(Ty::Root).map.unwrap();
        assert!(root.elem().is_none(), "a custom resource declares its top-level fields");
        assert!(matches!(root.field("metadata"), Some(Ty::Meta)));
        assert!(matches!(root.field("apiVersion"), Some(Ty::Str)));
        let spec = s.atom(root.field("spec").unwrap()).map.unwrap();
        assert!(matches!(
            s.atom(spec.field("merged").unwrap()).list.unwrap().kind,
            ListKind::Atomic
        ));
        let free = s.atom(spec.field("free").unwrap()).map.unwrap();
        assert!(matches!(free.elem(), Some(Ty::Deduced)));
        let port = s.atom(spec.field("port").unwrap());
        assert!(port.scalar.is_some() && port.list.is_some() && port.map.is_some());
        let none = Schema::new(None, false);
        let root = none.atom(Ty::Root).map.unwrap();
        assert!(matches!(root.child("spec"), Ty::Deduced));
        assert!(matches!(root.field("metadata"), Some(Ty::Meta)));
        let deduced = none.atom(Ty::Deduced);
        assert!(matches!(deduced.list.unwrap().kind, ListKind::Atomic) && !deduced.map.unwrap().atomic);
        assert!(deduced.deduce(Some(&json!([1]))).map.is_none());
    }
}
