//! The field table of Kubernetes' protobuf messages (`messages.txt`, written by `generate.py` from the
//! `generated.proto` files of k8s.io/api, apimachinery, apiextensions-apiserver and kube-aggregator, and the Go
//! types' JSON tags): what the decoder needs to turn a message into the JSON Go's `encoding/json` writes for the same
//! object, and the order the JSON encoder writes each Go struct's fields in. A few Go structs without protobuf
//! (meta/v1's `Table`, `version.Info`) are there for that order alone, their fields numbered 0.

use std::collections::HashMap;
use std::sync::OnceLock;

/// The table, read once.
const TABLE: &str = include_str!("messages.txt");

/// A protobuf scalar type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scalar {
    String,
    Bytes,
    Bool,
    Int32,
    Int64,
    Uint32,
    Uint64,
    Double,
    Float,
}

impl Scalar {
    fn parse(s: &str) -> Option<Scalar> {
        Some(match s {
            "string" => Scalar::String,
            "bytes" => Scalar::Bytes,
            "bool" => Scalar::Bool,
            "int32" => Scalar::Int32,
            "int64" => Scalar::Int64,
            "uint32" => Scalar::Uint32,
            "uint64" => Scalar::Uint64,
            "double" => Scalar::Double,
            "float" => Scalar::Float,
            _ => return None,
        })
    }
}

/// A field's value type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Type {
    Scalar(Scalar),
    /// Index of a message in [`Schema::messages`].
    Message(usize),
}

/// One field of a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Field {
    /// The protobuf field number; 0 in a Go struct that has no protobuf encoding (never on the wire).
    pub(crate) number: u32,
    /// The JSON name (empty for an inlined embedded struct).
    pub(crate) json: &'static str,
    /// The value type (a map's value type for a map).
    pub(crate) ty: Type,
    /// `Some(key type)` for a map.
    pub(crate) map_key: Option<Scalar>,
    pub(crate) repeated: bool,
    /// The Go field is a pointer: absent means nil, present means set (even to a zero value).
    pub(crate) ptr: bool,
    /// `omitempty`: Go leaves out false, 0, "", nil pointers and empty slices or maps (never structs).
    pub(crate) omit: bool,
    /// An embedded struct whose JSON fields are the parent's.
    pub(crate) inline: bool,
}

/// A message whose Go type writes its own JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Special {
    /// `metav1.Time`: seconds only, RFC 3339, `null` when zero.
    Time,
    /// `metav1.MicroTime`: RFC 3339 with microseconds, `null` when zero.
    MicroTime,
    /// `FieldsV1`, `RawExtension`: a `bytes` field 1 holding JSON, written as is (`null` when nil).
    RawJson,
    /// `intstr.IntOrString`: a number or a string.
    IntOrString,
    /// `resource.Quantity`: its string.
    Quantity,
    /// A value of the struct message (index into [`Schema::messages`]) or another JSON value, as [`Or`] says:
    /// apiextensions' `JSONSchemaPropsOrBool`, `…OrArray`, `…OrStringArray`.
    StructOr(usize, Or),
    /// A `RawExtension` holding a typed object (a Table row's): written as that object's kind writes it. Go-only
    /// structs use it (fields numbered 0, never decoded).
    Object,
}

/// The other shape of a [`Special::StructOr`], and its protobuf: field 1 or 2 the struct, the other the alternative.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Or {
    /// `JSONSchemaPropsOrBool`: `allows` (1, a bool) unless `schema` (2) is set.
    Bool,
    /// `JSONSchemaPropsOrArray`: `jSONSchemas` (2, the structs) when there are any, else `schema` (1) or `null`.
    Array,
    /// `JSONSchemaPropsOrStringArray`: `property` (2, strings) when there are any, else `schema` (1) or `null`.
    Strings,
}

/// How a message becomes JSON.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// A Go struct: its fields, sorted by number (their declaration order is [`Message::order`]).
    Struct(Vec<Field>),
    Special(Special),
    /// A Go named slice type (`type ExtraValue []string`) wrapped in a message with a repeated field 1.
    List(Scalar),
}

/// A message of the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Message {
    /// Short package and name, `core.v1.ConfigMap`.
    pub(crate) name: &'static str,
    pub(crate) shape: Shape,
    /// A struct's fields in the Go struct's declaration order, as indices into [`Shape::Struct`]'s fields: the
    /// order Go's `encoding/json` writes them in (empty for other shapes).
    pub(crate) order: Vec<usize>,
}

impl Message {
    /// The bare name, as Go's error texts give it (`ConfigMap`).
    pub(crate) fn short_name(&self) -> &'static str {
        self.name.rsplit('.').next().unwrap_or(self.name)
    }
}

/// Every message of the table, and the kinds that name them.
#[derive(Debug)]
pub(crate) struct Schema {
    pub(crate) messages: Vec<Message>,
    by_name: HashMap<&'static str, usize>,
    /// (apiVersion, kind) → (message, decoded from protobuf: false for kinds the table describes only for JSON's
    /// order).
    kinds: HashMap<(&'static str, &'static str), (usize, bool)>,
}

impl Schema {
    /// The table shipped with the crate. A malformed table is a bug of the generator, caught by this module's
    /// tests.
    pub(crate) fn get() -> &'static Schema {
        static SCHEMA: OnceLock<Schema> = OnceLock::new();
        SCHEMA.get_or_init(|| Schema::parse(TABLE).expect("protobuf/messages.txt is well formed"))
    }

    /// The message named `name` (`meta.v1.DeleteOptions`).
    pub(crate) fn message(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// The message of a kind (`v1`, `ConfigMap`): the Go struct its JSON is written from.
    pub(crate) fn kind(&self, api_version: &str, kind: &str) -> Option<usize> {
        self.kinds.get(&(api_version, kind)).map(|&(m, _)| m)
    }

    /// The message of a kind whose bodies are decoded from protobuf (`kind` lines without `json`).
    pub(crate) fn decodable_kind(&self, api_version: &str, kind: &str) -> Option<usize> {
        match self.kinds.get(&(api_version, kind)) {
            Some(&(m, true)) => Some(m),
            _ => None,
        }
    }

    /// The messages of kinds (Go structs embedding `TypeMeta`).
    pub(crate) fn kind_messages(&self) -> impl Iterator<Item = usize> + '_ {
        self.kinds.values().map(|&(m, _)| m)
    }

    fn parse(table: &'static str) -> Result<Schema, String> {
        let lines = || {
            table
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
        };
        // First pass: every message's name and index.
        let mut by_name = HashMap::new();
        let mut names = Vec::new();
        for line in lines() {
            let words: Vec<&str> = line.split(' ').collect();
            let name = match words[..] {
                ["message", name] | ["list", name, _] | ["special", name, ..] => name,
                _ => continue,
            };
            if by_name.insert(name, names.len()).is_some() {
                return Err(format!("{name} twice"));
            }
            names.push(name);
        }
        let mut messages: Vec<Option<Message>> = vec![None; by_name.len()];
        let mut kinds = HashMap::new();
        let resolve = |name: &str| -> Result<Type, String> {
            match Scalar::parse(name) {
                Some(s) => Ok(Type::Scalar(s)),
                None => by_name
                    .get(name)
                    .map(|i| Type::Message(*i))
                    .ok_or_else(|| format!("unknown type {name}")),
            }
        };
        let mut current: Option<(usize, Vec<Field>)> = None;
        let close = |current: &mut Option<(usize, Vec<Field>)>, messages: &mut Vec<Option<Message>>| {
            if let Some((i, mut fields)) = current.take() {
                // The table lists a struct's fields in declaration order; decoding looks them up by number.
                let mut by_number: Vec<usize> = (0..fields.len()).collect();
                by_number.sort_by_key(|&f| fields[f].number);
                let mut order = vec![0; fields.len()];
                for (sorted, &declared) in by_number.iter().enumerate() {
                    order[declared] = sorted;
                }
                fields.sort_by_key(|f| f.number);
                messages[i] = Some(Message {
                    name: names[i],
                    shape: Shape::Struct(fields),
                    order,
                });
            }
        };
        for line in lines() {
            let words: Vec<&'static str> = line.split(' ').collect();
            match words[..] {
                ["kind", api_version, kind, message, ref json @ ..] => {
                    let i = *by_name
                        .get(message)
                        .ok_or_else(|| format!("kind of unknown {message}"))?;
                    let decoded = match json {
                        [] => true,
                        ["json"] => false,
                        _ => return Err(format!("bad line: {line}")),
                    };
                    kinds.insert((api_version, kind), (i, decoded));
                }
                ["special", name, how, ref of @ ..] => {
                    let special = match (how, of) {
                        ("time", []) => Special::Time,
                        ("microtime", []) => Special::MicroTime,
                        ("rawjson", []) => Special::RawJson,
                        ("intorstring", []) => Special::IntOrString,
                        ("quantity", []) => Special::Quantity,
                        ("object", []) => Special::Object,
                        ("structor", [message, or]) => Special::StructOr(
                            *by_name
                                .get(message)
                                .ok_or_else(|| format!("structor of unknown {message}"))?,
                            match *or {
                                "bool" => Or::Bool,
                                "array" => Or::Array,
                                "strings" => Or::Strings,
                                _ => return Err(format!("structor or {or}")),
                            },
                        ),
                        _ => return Err(format!("unknown special {how}")),
                    };
                    messages[by_name[name]] = Some(Message {
                        name,
                        shape: Shape::Special(special),
                        order: Vec::new(),
                    });
                }
                ["list", name, item] => {
                    let item = Scalar::parse(item).ok_or_else(|| format!("list of {item}"))?;
                    messages[by_name[name]] = Some(Message {
                        name,
                        shape: Shape::List(item),
                        order: Vec::new(),
                    });
                }
                ["message", name] => {
                    close(&mut current, &mut messages);
                    current = Some((by_name[name], Vec::new()));
                }
                [number, json, ty, ref flags @ ..] => {
                    let (_, fields) = current
                        .as_mut()
                        .ok_or_else(|| format!("field outside a message: {line}"))?;
                    let number = number.parse().map_err(|_| format!("bad field number: {line}"))?;
                    let has = |f: &str| flags.contains(&f);
                    let (map_key, ty) = match ty.strip_prefix("map<").and_then(|t| t.strip_suffix('>')) {
                        Some(kv) => {
                            let (k, v) = kv.split_once(',').ok_or_else(|| format!("bad map: {line}"))?;
                            (
                                Some(Scalar::parse(k).ok_or_else(|| format!("map key {k}"))?),
                                resolve(v)?,
                            )
                        }
                        None => (None, resolve(ty)?),
                    };
                    fields.push(Field {
                        number,
                        json: if json == "-" { "" } else { json },
                        ty,
                        map_key,
                        repeated: has("rep"),
                        ptr: has("ptr"),
                        omit: has("omit"),
                        inline: has("inline"),
                    });
                }
                _ => return Err(format!("bad line: {line}")),
            }
        }
        close(&mut current, &mut messages);
        let messages = messages
            .into_iter()
            .zip(&names)
            .map(|(m, name)| m.ok_or_else(|| format!("{name} has no description")))
            .collect::<Result<Vec<_>, _>>()?;
        for m in &messages {
            if let Shape::Special(Special::StructOr(of, _)) = m.shape
                && !matches!(messages[of].shape, Shape::Struct(_))
            {
                return Err(format!(
                    "{} is a struct or {}, which is not a struct",
                    m.name, messages[of].name
                ));
            }
        }
        Ok(Schema {
            messages,
            by_name,
            kinds,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_parses_and_knows_the_default_kinds() {
        let s = Schema::get();
        for (api_version, kind) in [
            ("v1", "ConfigMap"),
            ("v1", "Secret"),
            ("v1", "Namespace"),
            ("v1", "Service"),
            ("v1", "Pod"),
            ("v1", "Node"),
            ("v1", "Event"),
            ("apps/v1", "Deployment"),
            ("coordination.k8s.io/v1", "Lease"),
            ("authorization.k8s.io/v1", "SelfSubjectAccessReview"),
        ] {
            let m = s.kind(api_version, kind).unwrap_or_else(|| panic!("{kind}"));
            assert_eq!(s.messages[m].short_name(), kind);
        }
        let cm = &s.messages[s.kind("v1", "ConfigMap").unwrap()];
        let Shape::Struct(fields) = &cm.shape else { panic!() };
        let data = fields.iter().find(|f| f.json == "data").unwrap();
        assert_eq!(
            (data.number, data.map_key, data.ty),
            (2, Some(Scalar::String), Type::Scalar(Scalar::String))
        );
        assert!(data.omit && !data.ptr && !data.repeated);
        let meta = &s.messages[s.message("meta.v1.ObjectMeta").unwrap()];
        assert_eq!(meta.name, "meta.v1.ObjectMeta");
        let time = s.message("meta.v1.Time").unwrap();
        assert_eq!(s.messages[time].shape, Shape::Special(Special::Time));
        assert!(s.message("meta.v1.DeleteOptions").is_some());
    }

    #[test]
    fn malformed_tables_are_refused() {
        for bad in [
            "message a.B\n1 x c.D",
            "1 x string",
            "message a.B\nmessage a.B",
            "special a.B clock",
            "kind v1 B a.B",
            "message a.B\nx y string",
            "list a.B message",
            "message a.B\nkind v1 B a.B proto",
            "special a.B structor",
            "message a.C\nspecial a.B structor a.C",
            "message a.C\nspecial a.B structor a.C maybe",
            "special a.B structor c.D bool",
            "special a.C time\nspecial a.B structor a.C bool",
        ] {
            assert!(Schema::parse(bad).is_err(), "{bad}");
        }
    }
}
