//! `PrinterColumn`: one column of the server-side `Table` (what `kubectl get` prints), held beside the
//! [`ResourceSpec`](crate::ResourceSpec) it belongs to. Two kinds: a JSONPath into the object, as a CRD's
//! `additionalPrinterColumns` declares it, and a cell computed by a function, as kube-apiserver's built-in printers
//! compute theirs (a pod's READY and STATUS).

use std::fmt;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::api::jsonpath::JsonPath;
use kube_informer::object::time::parse_rfc3339;

/// The type of a column's cells, as a CRD's `additionalPrinterColumns[].type` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ColumnType {
    /// Text.
    String,
    /// A whole number.
    Integer,
    /// A number.
    Number,
    /// `true` or `false`.
    Boolean,
    /// A timestamp (RFC 3339) in the object, shown as its age (`5m`).
    Date,
}

impl ColumnType {
    /// The name on the wire (`string`, `integer`, `number`, `boolean`, `date`).
    pub fn as_str(self) -> &'static str {
        match self {
            ColumnType::String => "string",
            ColumnType::Integer => "integer",
            ColumnType::Number => "number",
            ColumnType::Boolean => "boolean",
            ColumnType::Date => "date",
        }
    }

    /// The type a CRD names; `None` for anything else.
    pub fn parse(name: &str) -> Option<ColumnType> {
        Some(match name {
            "string" => ColumnType::String,
            "integer" => ColumnType::Integer,
            "number" => ColumnType::Number,
            "boolean" => ColumnType::Boolean,
            "date" => ColumnType::Date,
            _ => return None,
        })
    }
}

/// A cell computed from the object (as JSON) and the time the table is made.
pub type CellFn = fn(&Value, SystemTime) -> Value;

/// Where a column's cells come from.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Source {
    /// The first value a JSONPath finds, converted to the column's type as apiextensions-apiserver converts it.
    Path(JsonPath),
    /// A function of the object.
    Computed(Computed),
}

/// A cell function, compared by address.
#[derive(Clone, Copy)]
struct Computed(CellFn);

impl PartialEq for Computed {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::fn_addr_eq(self.0, other.0)
    }
}

impl Eq for Computed {}

impl fmt::Debug for Computed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<computed>")
    }
}

/// A column of the `Table` the server answers `kubectl get` with (`Accept: application/json;as=Table;v=v1;
/// g=meta.k8s.io`): its definition (name, type, format, description, priority: 0 shows always, above 0 only with
/// `-o wide`) and how its cells are made.
///
/// ```
/// use kube_informer::object::ApiResource;
/// use kube_informer_apiserver::{ColumnType, PrinterColumn, ResourceSpec};
///
/// let widgets = ResourceSpec::new(ApiResource::new("example.com", "v1", "Widget", "widgets", true))
///     .printer_columns(vec![
///         PrinterColumn::name(),
///         PrinterColumn::json_path("Color", ColumnType::String, ".spec.color").unwrap(),
///         PrinterColumn::json_path("Ready", ColumnType::String, ".status.conditions[?(@.type=='Ready')].status")
///             .unwrap()
///             .priority(1),
///         PrinterColumn::age(),
///     ]);
/// assert_eq!(widgets.table_columns().len(), 4);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrinterColumn {
    name: String,
    column_type: ColumnType,
    /// An OpenAPI format hint (`int32`, `date-time`, `name`, …); may be empty.
    format: String,
    description: String,
    priority: i32,
    source: Source,
}

impl PrinterColumn {
    /// A column showing the first value `path` (a Kubernetes JSONPath such as `.spec.replicas` or
    /// `.status.conditions[?(@.type=="Ready")].status`) finds, as a CRD's `additionalPrinterColumns` entry: `string`
    /// cells print the value (objects and lists as JSON), `integer`/`number`/`boolean` cells keep a value of that
    /// type, `date` cells show the age of an RFC 3339 timestamp; a missing value is an empty cell.
    ///
    /// # Errors
    /// The path does not parse.
    pub fn json_path(name: &str, column_type: ColumnType, path: &str) -> Result<PrinterColumn, String> {
        let parsed = JsonPath::parse(path)?;
        Ok(PrinterColumn {
            name: name.to_owned(),
            column_type,
            format: String::new(),
            description: format!("The value at {path}"),
            priority: 0,
            source: Source::Path(parsed),
        })
    }

    /// A column whose cells `cell` computes from the object (JSON) and the time the table is made.
    pub fn computed(name: &str, column_type: ColumnType, cell: CellFn) -> PrinterColumn {
        PrinterColumn {
            name: name.to_owned(),
            column_type,
            format: String::new(),
            description: String::new(),
            priority: 0,
            source: Source::Computed(Computed(cell)),
        }
    }

    /// `Name`: the object's name (format `name`, which kubectl uses for `-o name` and `--show-kind`).
    pub fn name() -> PrinterColumn {
        PrinterColumn::computed("Name", ColumnType::String, |o, _| {
            json!(o.pointer("/metadata/name").and_then(Value::as_str).unwrap_or(""))
        })
        .format("name")
        .description("The object's name, unique in its namespace.")
    }

    /// `Age`: how long ago the object was created (`5m`, `3d4h`), as the built-in printers show it.
    pub fn age() -> PrinterColumn {
        PrinterColumn::computed("Age", ColumnType::String, |o, now| json!(age(o, now)))
            .description("How long ago the object was created.")
    }

    /// Sets the priority: 0 (the default) always shows, above 0 only in wide output (`kubectl get -o wide`).
    #[must_use]
    pub fn priority(mut self, priority: i32) -> Self {
        self.priority = priority;
        self
    }

    /// Sets the OpenAPI format hint (`int32`, `int64`, `float`, `double`, `byte`, `date`, `date-time`,
    /// `password`, or `name` for the column naming the object).
    #[must_use]
    pub fn format(mut self, format: &str) -> Self {
        self.format = format.to_owned();
        self
    }

    /// Sets the description clients may show as the column's help.
    #[must_use]
    pub fn description(mut self, description: &str) -> Self {
        self.description = description.to_owned();
        self
    }

    /// The column's title (`Ready`; kubectl prints it upper-cased).
    pub fn column_name(&self) -> &str {
        &self.name
    }

    /// The type of its cells.
    pub fn column_type(&self) -> ColumnType {
        self.column_type
    }

    /// Its priority (0: always shown; above: wide output only).
    pub fn column_priority(&self) -> i32 {
        self.priority
    }

    /// The JSONPath of a path column; `None` for a computed one.
    pub fn path(&self) -> Option<&str> {
        match &self.source {
            Source::Path(p) => Some(p.as_str()),
            Source::Computed(_) => None,
        }
    }

    /// The `TableColumnDefinition` (`meta.k8s.io/v1`).
    pub(crate) fn definition(&self) -> Value {
        json!({
            "name": self.name,
            "type": self.column_type.as_str(),
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        })
    }

    /// The cell of `obj`.
    pub(crate) fn cell(&self, obj: &Value, now: SystemTime) -> Value {
        match &self.source {
            Source::Computed(Computed(f)) => f(obj, now),
            Source::Path(p) => match p.first(obj) {
                None => Value::Null,
                Some(v) => typed_cell(self.column_type, v, now),
            },
        }
    }
}

/// apiextensions-apiserver's conversion of a found value to a cell of the column's type.
fn typed_cell(column_type: ColumnType, v: &Value, now: SystemTime) -> Value {
    match (column_type, v) {
        // A string column prints whatever it found (as client-go's JSONPath printer does).
        (ColumnType::String, Value::String(s)) => json!(s),
        (ColumnType::String, Value::Null) => json!("<no value>"),
        (ColumnType::String, Value::Object(_) | Value::Array(_)) => json!(v.to_string()),
        (ColumnType::String, other) => json!(other.to_string()),
        (ColumnType::Integer, Value::Number(n)) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => json!(i),
            // Go's int64(float64) truncates toward zero, saturating.
            (None, Some(f)) => json!(f as i64),
            _ => Value::Null,
        },
        (ColumnType::Number, Value::Number(n)) => n.as_f64().map_or(Value::Null, |f| json!(f)),
        (ColumnType::Boolean, Value::Bool(b)) => json!(b),
        (ColumnType::Date, Value::String(s)) => match parse_rfc3339(s) {
            Some(t) => json!(ago(t, now)),
            None => json!("<invalid>"),
        },
        _ => Value::Null,
    }
}

/// The age of an object (`metadata.creationTimestamp`), `<unknown>` without one.
pub(crate) fn age(obj: &Value, now: SystemTime) -> String {
    since(obj.pointer("/metadata/creationTimestamp"), now)
}

/// How long ago a timestamp field was, `<unknown>` when it is absent or not a timestamp.
pub(crate) fn since(timestamp: Option<&Value>, now: SystemTime) -> String {
    match timestamp.and_then(Value::as_str).and_then(parse_rfc3339) {
        Some(t) => ago(t, now),
        None => "<unknown>".to_owned(),
    }
}

/// apimachinery's `duration.HumanDuration` of `now - t`.
pub(crate) fn ago(t: SystemTime, now: SystemTime) -> String {
    match now.duration_since(t) {
        Ok(d) => human_duration(d),
        // Up to two seconds in the future counts as now (clock skew); more is invalid.
        Err(e) if e.duration() < Duration::from_secs(2) => "0s".to_owned(),
        Err(_) => "<invalid>".to_owned(),
    }
}

/// A duration as kubectl's AGE shows it: `42s`, `3m5s`, `15m`, `2h7m`, `20h`, `3d4h`, `30d`, `2y10d`, `9y`.
pub(crate) fn human_duration(d: Duration) -> String {
    let secs = d.as_secs();
    if secs < 120 {
        return format!("{secs}s");
    }
    let minutes = secs / 60;
    if minutes < 10 {
        return match secs % 60 {
            0 => format!("{minutes}m"),
            s => format!("{minutes}m{s}s"),
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = secs / 3600;
    if hours < 8 {
        return match minutes % 60 {
            0 => format!("{hours}h"),
            m => format!("{hours}h{m}m"),
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        return match hours % 24 {
            0 => format!("{}d", hours / 24),
            h => format!("{}d{h}h", hours / 24),
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let days = hours / 24;
        return match days % 365 {
            0 => format!("{}y", days / 365),
            dy => format!("{}y{dy}d", days / 365),
        };
    }
    format!("{}y", hours / 24 / 365)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    #[test]
    fn durations_read_as_kubectl_prints_them() {
        let s = Duration::from_secs;
        for (secs, text) in [
            (0, "0s"),
            (119, "119s"),
            (120, "2m"),
            (185, "3m5s"),
            (600, "10m"),
            (179 * 60, "179m"),
            (3 * 3600, "3h"),
            (2 * 3600 + 7 * 60, "127m"),
            (3 * 3600 + 7 * 60, "3h7m"),
            (20 * 3600, "20h"),
            (76 * 3600, "3d4h"),
            (72 * 3600, "3d"),
            (30 * 86_400, "30d"),
            (740 * 86_400, "2y10d"),
            (730 * 86_400, "2y"),
            (9 * 365 * 86_400, "9y"),
        ] {
            assert_eq!(human_duration(s(secs)), text, "{secs}");
        }
        let now = UNIX_EPOCH + s(1_000_000);
        assert_eq!(ago(now + Duration::from_millis(1500), now), "0s");
        assert_eq!(ago(now + s(5), now), "<invalid>");
    }

    #[test]
    fn path_cells_take_the_columns_type() {
        let now = UNIX_EPOCH + Duration::from_secs(1_700_000_300);
        let obj = json!({
            "metadata": {"name": "w", "creationTimestamp": "2023-11-14T22:13:20Z"},
            "spec": {"n": 3, "f": 2.5, "b": true, "s": "x", "list": [1, 2], "nil": null, "when": "bad"},
        });
        let cell = |t: ColumnType, path: &str| PrinterColumn::json_path("c", t, path).unwrap().cell(&obj, now);
        assert_eq!(cell(ColumnType::String, ".spec.s"), json!("x"));
        assert_eq!(cell(ColumnType::String, ".spec.n"), json!("3"));
        assert_eq!(cell(ColumnType::String, ".spec.list"), json!("[1,2]"));
        assert_eq!(cell(ColumnType::String, ".spec.nil"), json!("<no value>"));
        assert_eq!(cell(ColumnType::String, ".spec.absent"), Value::Null);
        assert_eq!(cell(ColumnType::Integer, ".spec.f"), json!(2));
        assert_eq!(cell(ColumnType::Integer, ".spec.s"), Value::Null);
        assert_eq!(cell(ColumnType::Number, ".spec.n"), json!(3.0));
        assert_eq!(cell(ColumnType::Boolean, ".spec.b"), json!(true));
        assert_eq!(cell(ColumnType::Date, ".metadata.creationTimestamp"), json!("5m"));
        assert_eq!(cell(ColumnType::Date, ".spec.when"), json!("<invalid>"));
        assert_eq!(PrinterColumn::name().cell(&obj, now), json!("w"));
        assert_eq!(PrinterColumn::age().cell(&obj, now), json!("5m"));
        assert_eq!(PrinterColumn::age().cell(&json!({}), now), json!("<unknown>"));
    }

    #[test]
    fn definitions_and_equality() {
        let c = PrinterColumn::json_path("Size", ColumnType::Integer, ".spec.size")
            .unwrap()
            .priority(1)
            .format("int32");
        assert_eq!(
            c.definition(),
            json!({"name": "Size", "type": "integer", "format": "int32", "description": "The value at .spec.size", "priority": 1})
        );
        assert_eq!(c.path(), Some(".spec.size"));
        assert_eq!(PrinterColumn::name(), PrinterColumn::name());
        assert_ne!(PrinterColumn::name(), PrinterColumn::age());
        assert!(PrinterColumn::json_path("x", ColumnType::String, "spec").is_err());
        assert_eq!(ColumnType::parse("date"), Some(ColumnType::Date));
        assert_eq!(ColumnType::parse("array"), None);
    }
}
