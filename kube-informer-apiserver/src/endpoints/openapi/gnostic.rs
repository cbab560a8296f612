//! The protobuf encoding of an OpenAPI v2 document, as gnostic's `openapi_v2.proto` (package `openapi.v2`)
//! defines it: what kube-apiserver answers to `Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf`,
//! and the only form kubectl up to 1.2x reads (for client-side validation and `kubectl explain`).
//!
//! It is written by hand from the JSON document: protobuf's wire format is small (varints, length-delimited
//! fields, 64-bit doubles), and the messages used are a dozen. The field numbers are gnostic's. As gnostic's
//! compiler does, values of free form (`default`, `enum`, `example`, `x-…` extensions) travel as `Any { yaml }`,
//! written here as JSON text (JSON is YAML); and an object present in the JSON is present in the protobuf even when
//! empty (kubectl tells `properties: {}` from no properties).

use serde_json::{Map, Value};

/// A message being encoded.
#[derive(Default)]
struct Msg(Vec<u8>);

impl Msg {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn key(&mut self, field: u32, wire: u8) {
        self.varint((u64::from(field) << 3) | u64::from(wire));
    }

    fn bytes(&mut self, field: u32, b: &[u8]) {
        self.key(field, 2);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
    }

    /// A string field; proto3 leaves out the empty string.
    fn string(&mut self, field: u32, s: &str) {
        if !s.is_empty() {
            self.bytes(field, s.as_bytes());
        }
    }

    fn message(&mut self, field: u32, m: Msg) {
        self.bytes(field, &m.0);
    }

    fn boolean(&mut self, field: u32, b: bool) {
        if b {
            self.key(field, 0);
            self.varint(1);
        }
    }

    fn int64(&mut self, field: u32, v: i64) {
        if v != 0 {
            self.key(field, 0);
            self.varint(v as u64);
        }
    }

    fn double(&mut self, field: u32, v: f64) {
        if v != 0.0 {
            self.key(field, 1);
            self.0.extend_from_slice(&v.to_le_bytes());
        }
    }
}

fn text<'a>(o: &'a Map<String, Value>, key: &str) -> &'a str {
    o.get(key).and_then(Value::as_str).unwrap_or("")
}

fn strings(m: &mut Msg, field: u32, v: Option<&Value>) {
    match v {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .for_each(|s| m.bytes(field, s.as_bytes())),
        Some(Value::String(s)) => m.bytes(field, s.as_bytes()),
        _ => {}
    }
}

/// `Any { yaml = 2 }`.
fn any(v: &Value) -> Msg {
    let mut m = Msg::default();
    m.string(2, &serde_json::to_string(v).unwrap_or_default());
    m
}

/// `repeated NamedAny vendor_extension` for every `x-…` key.
fn extensions(m: &mut Msg, field: u32, o: &Map<String, Value>) {
    for (k, v) in o.iter().filter(|(k, _)| k.starts_with("x-")) {
        let mut named = Msg::default();
        named.string(1, k);
        named.message(2, any(v));
        m.message(field, named);
    }
}

/// `Schema`.
fn schema(v: &Value) -> Msg {
    let mut m = Msg::default();
    let Some(o) = v.as_object() else {
        return m;
    };
    m.string(1, text(o, "$ref"));
    m.string(2, text(o, "format"));
    m.string(3, text(o, "title"));
    m.string(4, text(o, "description"));
    if let Some(d) = o.get("default") {
        m.message(5, any(d));
    }
    let num = |k: &str| o.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    let int = |k: &str| o.get(k).and_then(Value::as_i64).unwrap_or(0);
    let flag = |k: &str| o.get(k).and_then(Value::as_bool).unwrap_or(false);
    m.double(6, num("multipleOf"));
    m.double(7, num("maximum"));
    m.boolean(8, flag("exclusiveMaximum"));
    m.double(9, num("minimum"));
    m.boolean(10, flag("exclusiveMinimum"));
    m.int64(11, int("maxLength"));
    m.int64(12, int("minLength"));
    m.string(13, text(o, "pattern"));
    m.int64(14, int("maxItems"));
    m.int64(15, int("minItems"));
    m.boolean(16, flag("uniqueItems"));
    m.int64(17, int("maxProperties"));
    m.int64(18, int("minProperties"));
    strings(&mut m, 19, o.get("required"));
    if let Some(Value::Array(e)) = o.get("enum") {
        e.iter().for_each(|x| m.message(20, any(x)));
    }
    match o.get("additionalProperties") {
        Some(Value::Bool(b)) => {
            // oneof { Schema schema = 1; bool boolean = 2; } — a set oneof is written even when false.
            let mut item = Msg::default();
            item.key(2, 0);
            item.varint(u64::from(*b));
            m.message(21, item);
        }
        Some(s @ Value::Object(_)) => {
            let mut item = Msg::default();
            item.message(1, schema(s));
            m.message(21, item);
        }
        _ => {}
    }
    if o.contains_key("type") {
        let mut t = Msg::default();
        strings(&mut t, 1, o.get("type"));
        m.message(22, t);
    }
    match o.get("items") {
        Some(s @ Value::Object(_)) => {
            let mut items = Msg::default();
            items.message(1, schema(s));
            m.message(23, items);
        }
        Some(Value::Array(list)) => {
            let mut items = Msg::default();
            list.iter().for_each(|s| items.message(1, schema(s)));
            m.message(23, items);
        }
        _ => {}
    }
    if let Some(Value::Array(all)) = o.get("allOf") {
        all.iter().for_each(|s| m.message(24, schema(s)));
    }
    if let Some(Value::Object(props)) = o.get("properties") {
        let mut p = Msg::default();
        for (name, s) in props {
            p.message(1, named(name, schema(s)));
        }
        m.message(25, p);
    }
    m.string(26, text(o, "discriminator"));
    m.boolean(27, flag("readOnly"));
    if let Some(e) = o.get("example") {
        m.message(30, any(e));
    }
    extensions(&mut m, 31, o);
    m
}

/// `Named*` messages: `{ string name = 1; T value = 2; }`.
fn named(name: &str, value: Msg) -> Msg {
    let mut m = Msg::default();
    m.string(1, name);
    m.message(2, value);
    m
}

/// `ParametersItem`: a `Parameter` (body or not) or a `JsonReference`.
fn parameter(v: &Value) -> Msg {
    let mut item = Msg::default();
    let Some(o) = v.as_object() else {
        return item;
    };
    if let Some(r) = o.get("$ref").and_then(Value::as_str) {
        let mut j = Msg::default();
        j.string(1, r);
        item.message(2, j);
        return item;
    }
    let mut p = Msg::default();
    let location = text(o, "in");
    if location == "body" {
        // BodyParameter { description = 1; name = 2; in = 3; required = 4; schema = 5; vendor_extension = 6 }
        let mut b = Msg::default();
        b.string(1, text(o, "description"));
        b.string(2, text(o, "name"));
        b.string(3, location);
        b.boolean(4, o.get("required").and_then(Value::as_bool).unwrap_or(false));
        if let Some(s) = o.get("schema") {
            b.message(5, schema(s));
        }
        extensions(&mut b, 6, o);
        p.message(1, b);
    } else {
        // Every non-body sub-schema starts { required = 1; in = 2; description = 3; name = 4; }; then the query and
        // form kinds have allow_empty_value = 5 and their type at 6, the header and path kinds their type at 5.
        let (which, type_field, unique_field, ext_field) = match location {
            "header" => (1, 5, 19, 22),
            "formData" => (2, 6, 20, 23),
            "path" => (4, 5, 19, 22),
            _ => (3, 6, 20, 23),
        };
        let mut s = Msg::default();
        s.boolean(1, o.get("required").and_then(Value::as_bool).unwrap_or(false));
        s.string(2, location);
        s.string(3, text(o, "description"));
        s.string(4, text(o, "name"));
        s.string(type_field, text(o, "type"));
        s.string(type_field + 1, text(o, "format"));
        s.boolean(
            unique_field,
            o.get("uniqueItems").and_then(Value::as_bool).unwrap_or(false),
        );
        extensions(&mut s, ext_field, o);
        let mut non_body = Msg::default();
        non_body.message(which, s);
        p.message(2, non_body);
    }
    item.message(1, p);
    item
}

/// `Operation`.
fn operation(v: &Value) -> Msg {
    let mut m = Msg::default();
    let Some(o) = v.as_object() else {
        return m;
    };
    strings(&mut m, 1, o.get("tags"));
    m.string(2, text(o, "summary"));
    m.string(3, text(o, "description"));
    m.string(5, text(o, "operationId"));
    strings(&mut m, 6, o.get("produces"));
    strings(&mut m, 7, o.get("consumes"));
    if let Some(Value::Array(ps)) = o.get("parameters") {
        ps.iter().for_each(|p| m.message(8, parameter(p)));
    }
    if let Some(Value::Object(rs)) = o.get("responses") {
        // Responses { repeated NamedResponseValue response_code = 1; }, ResponseValue { Response response = 1; },
        // Response { description = 1; SchemaItem schema = 2; }, SchemaItem { Schema schema = 1; }.
        let mut responses = Msg::default();
        for (code, r) in rs {
            let mut response = Msg::default();
            response.string(1, r.get("description").and_then(Value::as_str).unwrap_or(""));
            if let Some(s) = r.get("schema") {
                let mut item = Msg::default();
                item.message(1, schema(s));
                response.message(2, item);
            }
            let mut value = Msg::default();
            value.message(1, response);
            responses.message(1, named(code, value));
        }
        m.message(9, responses);
    }
    strings(&mut m, 10, o.get("schemes"));
    m.boolean(11, o.get("deprecated").and_then(Value::as_bool).unwrap_or(false));
    extensions(&mut m, 13, o);
    m
}

/// `PathItem`.
fn path_item(v: &Value) -> Msg {
    let mut m = Msg::default();
    let Some(o) = v.as_object() else {
        return m;
    };
    for (method, field) in [
        ("get", 2),
        ("put", 3),
        ("post", 4),
        ("delete", 5),
        ("options", 6),
        ("head", 7),
        ("patch", 8),
    ] {
        if let Some(op) = o.get(method) {
            m.message(field, operation(op));
        }
    }
    if let Some(Value::Array(ps)) = o.get("parameters") {
        ps.iter().for_each(|p| m.message(9, parameter(p)));
    }
    extensions(&mut m, 10, o);
    m
}

/// Encodes a v2 document (`swagger: "2.0"`) as gnostic's `openapi.v2.Document`.
pub(crate) fn encode_v2(doc: &Value) -> Vec<u8> {
    let mut m = Msg::default();
    let Some(o) = doc.as_object() else {
        return m.0;
    };
    m.string(1, text(o, "swagger"));
    if let Some(Value::Object(info)) = o.get("info") {
        let mut i = Msg::default();
        i.string(1, text(info, "title"));
        i.string(2, text(info, "version"));
        i.string(3, text(info, "description"));
        extensions(&mut i, 7, info);
        m.message(2, i);
    }
    m.string(3, text(o, "host"));
    m.string(4, text(o, "basePath"));
    strings(&mut m, 5, o.get("schemes"));
    strings(&mut m, 6, o.get("consumes"));
    strings(&mut m, 7, o.get("produces"));
    if let Some(Value::Object(paths)) = o.get("paths") {
        let mut p = Msg::default();
        for (path, item) in paths.iter().filter(|(k, _)| !k.starts_with("x-")) {
            p.message(2, named(path, path_item(item)));
        }
        m.message(8, p);
    }
    if let Some(Value::Object(defs)) = o.get("definitions") {
        let mut d = Msg::default();
        for (name, s) in defs {
            d.message(1, named(name, schema(s)));
        }
        m.message(9, d);
    }
    if let Some(Value::Array(reqs)) = o.get("security") {
        // SecurityRequirement { repeated NamedStringArray additional_properties = 1; },
        // NamedStringArray { name = 1; StringArray value = 2; }, StringArray { repeated string value = 1; }.
        for r in reqs.iter().filter_map(Value::as_object) {
            let mut req = Msg::default();
            for (name, scopes) in r {
                let mut arr = Msg::default();
                strings(&mut arr, 1, Some(scopes));
                req.message(1, named(name, arr));
            }
            m.message(12, req);
        }
    }
    if let Some(Value::Object(defs)) = o.get("securityDefinitions") {
        // SecurityDefinitions { repeated NamedSecurityDefinitionsItem additional_properties = 1; }; only API keys
        // (SecurityDefinitionsItem.api_key_security = 2: { type = 1; name = 2; in = 3; description = 4; }).
        let mut sd = Msg::default();
        for (name, d) in defs.iter().filter_map(|(n, d)| Some((n, d.as_object()?))) {
            if text(d, "type") != "apiKey" {
                continue;
            }
            let mut key = Msg::default();
            key.string(1, "apiKey");
            key.string(2, text(d, "name"));
            key.string(3, text(d, "in"));
            key.string(4, text(d, "description"));
            let mut item = Msg::default();
            item.message(2, key);
            sd.message(1, named(name, item));
        }
        m.message(13, sd);
    }
    extensions(&mut m, 16, o);
    m.0
}

#[cfg(test)]
pub(crate) mod wire {
    //! A reader of protobuf's wire format for the tests: a message as (field, value) pairs.

    /// One field's value.
    #[derive(Debug, Clone, PartialEq)]
    pub(crate) enum Field {
        Varint(u64),
        Fixed64(u64),
        Bytes(Vec<u8>),
    }

    fn varint(b: &[u8], i: &mut usize) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *b.get(*i)?;
            *i += 1;
            v |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Some(v);
            }
        }
        None
    }

    /// Parses one message; `None` when the bytes are not well-formed protobuf.
    pub(crate) fn parse(b: &[u8]) -> Option<Vec<(u32, Field)>> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < b.len() {
            let key = varint(b, &mut i)?;
            let field = u32::try_from(key >> 3).ok()?;
            let value = match key & 7 {
                0 => Field::Varint(varint(b, &mut i)?),
                1 => {
                    let bytes: [u8; 8] = b.get(i..i + 8)?.try_into().ok()?;
                    i += 8;
                    Field::Fixed64(u64::from_le_bytes(bytes))
                }
                2 => {
                    let len = usize::try_from(varint(b, &mut i)?).ok()?;
                    let bytes = b.get(i..i.checked_add(len)?)?.to_vec();
                    i += len;
                    Field::Bytes(bytes)
                }
                _ => return None,
            };
            out.push((field, value));
        }
        Some(out)
    }

    /// The values of `field`.
    pub(crate) fn all(msg: &[(u32, Field)], field: u32) -> Vec<&Field> {
        msg.iter().filter(|(f, _)| *f == field).map(|(_, v)| v).collect()
    }

    /// The sub-message or string bytes of the first `field`.
    pub(crate) fn bytes(msg: &[(u32, Field)], field: u32) -> Option<&[u8]> {
        msg.iter().find_map(|(f, v)| match v {
            Field::Bytes(b) if *f == field => Some(b.as_slice()),
            _ => None,
        })
    }

    /// The string in the first `field`.
    pub(crate) fn string(msg: &[(u32, Field)], field: u32) -> Option<&str> {
        std::str::from_utf8(bytes(msg, field)?).ok()
    }

    /// The `Named*` entry called `name` among the repeated `field`, parsed: its value message.
    pub(crate) fn named(msg: &[(u32, Field)], field: u32, name: &str) -> Option<Vec<(u32, Field)>> {
        all(msg, field).into_iter().find_map(|v| match v {
            Field::Bytes(b) => {
                let entry = parse(b)?;
                (string(&entry, 1)? == name).then(|| parse(bytes(&entry, 2).unwrap_or(&[])))?
            }
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::wire::{self, Field};
    use super::*;
    use serde_json::json;

    #[test]
    fn encodes_varints_doubles_and_leaves_out_defaults() {
        let mut m = Msg::default();
        m.int64(11, 300);
        m.boolean(8, false);
        m.string(1, "");
        m.double(7, 1.5);
        assert_eq!(m.0[..3], [0x58, 0xac, 0x02]);
        let parsed = wire::parse(&m.0).unwrap();
        assert_eq!(
            parsed,
            vec![(11, Field::Varint(300)), (7, Field::Fixed64(1.5f64.to_bits()))]
        );
    }

    #[test]
    fn schemas_keep_types_items_properties_and_extensions() {
        let s = json!({
            "type": "object",
            "required": ["spec"],
            "properties": {
                "spec": {"type": "object", "properties": {}},
                "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "any": {"type": "object", "additionalProperties": false},
                "size": {"type": "integer", "minimum": 0, "maximum": 10, "enum": [1, 2]},
            },
            "x-kubernetes-group-version-kind": [{"group": "", "kind": "Widget", "version": "v1"}],
        });
        let m = wire::parse(&schema(&s).0).unwrap();
        let ty = wire::parse(wire::bytes(&m, 22).unwrap()).unwrap();
        assert_eq!(wire::string(&ty, 1), Some("object"));
        assert_eq!(wire::string(&m, 19), Some("spec"));
        let props = wire::parse(wire::bytes(&m, 25).unwrap()).unwrap();
        // An empty `properties` is still there.
        let spec = wire::named(&props, 1, "spec").unwrap();
        assert_eq!(wire::bytes(&spec, 25), Some(&[][..]));
        let tags = wire::named(&props, 1, "tags").unwrap();
        let items = wire::parse(wire::bytes(&tags, 23).unwrap()).unwrap();
        assert_eq!(wire::all(&items, 1).len(), 1);
        let ext = wire::named(&tags, 31, "x-kubernetes-list-type").unwrap();
        assert_eq!(wire::string(&ext, 2), Some("\"set\""));
        let any = wire::named(&props, 1, "any").unwrap();
        let ap = wire::parse(wire::bytes(&any, 21).unwrap()).unwrap();
        assert_eq!(ap, vec![(2, Field::Varint(0))]);
        let size = wire::named(&props, 1, "size").unwrap();
        assert_eq!(wire::all(&size, 20).len(), 2);
        assert!(wire::all(&size, 9).is_empty(), "minimum 0 is proto3's default");
        assert_eq!(wire::all(&size, 7), vec![&Field::Fixed64(10f64.to_bits())]);
        let gvk = wire::named(&m, 31, "x-kubernetes-group-version-kind").unwrap();
        let yaml: Value = serde_json::from_str(wire::string(&gvk, 2).unwrap()).unwrap();
        assert_eq!(yaml[0]["kind"], "Widget");
    }

    #[test]
    fn documents_carry_paths_with_query_parameters_and_definitions() {
        let doc = json!({
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": "v1.34.0"},
            "paths": {"/api/v1/namespaces/{namespace}/configmaps/{name}": {
                "patch": {
                    "operationId": "patchCoreV1NamespacedConfigMap",
                    "consumes": ["application/merge-patch+json"],
                    "parameters": [
                        {"name": "body", "in": "body", "required": true, "schema": {"$ref": "#/definitions/P"}},
                        {"name": "fieldValidation", "in": "query", "type": "string", "uniqueItems": true},
                    ],
                    "responses": {"200": {"description": "OK", "schema": {"$ref": "#/definitions/C"}}},
                    "x-kubernetes-action": "patch",
                },
                "parameters": [{"name": "name", "in": "path", "required": true, "type": "string"}],
            }},
            "definitions": {"C": {"type": "object"}},
        });
        let m = wire::parse(&encode_v2(&doc)).unwrap();
        assert_eq!(wire::string(&m, 1), Some("2.0"));
        let paths = wire::parse(wire::bytes(&m, 8).unwrap()).unwrap();
        let item = wire::named(&paths, 2, "/api/v1/namespaces/{namespace}/configmaps/{name}").unwrap();
        let patch = wire::parse(wire::bytes(&item, 8).unwrap()).unwrap();
        assert_eq!(wire::string(&patch, 5), Some("patchCoreV1NamespacedConfigMap"));
        assert_eq!(wire::string(&patch, 7), Some("application/merge-patch+json"));
        // The second parameter: ParametersItem.parameter → Parameter.non_body_parameter → query sub-schema.
        let params = wire::all(&patch, 8);
        let Field::Bytes(p) = params[1] else { panic!() };
        let param = wire::parse(wire::bytes(&wire::parse(p).unwrap(), 1).unwrap()).unwrap();
        let non_body = wire::parse(wire::bytes(&param, 2).unwrap()).unwrap();
        let query = wire::parse(wire::bytes(&non_body, 3).unwrap()).unwrap();
        assert_eq!(wire::string(&query, 4), Some("fieldValidation"));
        assert_eq!(wire::string(&query, 2), Some("query"));
        let Field::Bytes(b) = params[0] else { panic!() };
        let body = wire::parse(wire::bytes(&wire::parse(b).unwrap(), 1).unwrap()).unwrap();
        let body = wire::parse(wire::bytes(&body, 1).unwrap()).unwrap();
        assert_eq!(wire::string(&body, 2), Some("body"));
        let responses = wire::parse(wire::bytes(&patch, 9).unwrap()).unwrap();
        assert!(wire::named(&responses, 1, "200").is_some());
        let path_param = wire::parse(wire::bytes(&item, 9).unwrap()).unwrap();
        let path_param = wire::parse(wire::bytes(&path_param, 1).unwrap()).unwrap();
        let path_param = wire::parse(wire::bytes(&path_param, 2).unwrap()).unwrap();
        let path_sub = wire::parse(wire::bytes(&path_param, 4).unwrap()).unwrap();
        assert_eq!(wire::string(&path_sub, 5), Some("string"));
        let defs = wire::parse(wire::bytes(&m, 9).unwrap()).unwrap();
        assert!(wire::named(&defs, 1, "C").is_some());
    }
}
