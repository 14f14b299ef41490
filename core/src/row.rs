//! The untyped payload: a [`Row`] of named [`Value`]s, for adapters whose schema is only known
//! from configuration (the CLI, the conformance runner, JSON lines read without a Rust type).
//!
//! Equality follows JSON: numbers compare by value (`4 == 4.0`), objects compare as maps (field
//! order does not matter). Rows serialize to and from JSON objects.
//!
//! ```
//! use punctual_core::{Row, Value};
//! let a: Row = serde_json::from_str(r#"{"k": "A", "v": 4}"#).unwrap();
//! let b: Row = serde_json::from_str(r#"{"v": 4.0, "k": "A"}"#).unwrap();
//! assert_eq!(a, b);
//! assert_eq!(a.get("k"), Some(&Value::from("A")));
//! ```

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One field value of a [`Row`].
#[derive(Clone, Debug, Default)]
pub enum Value {
    /// JSON `null`, or a missing value.
    #[default]
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A floating-point number.
    Float(f64),
    /// A string.
    Str(String),
    /// A list.
    List(Vec<Value>),
    /// A nested row.
    Row(Row),
}

/// Named values in insertion order; compared as a map. Cloning a row is cheap (its fields are
/// shared, and copied on the first change), so operators that keep and repeat rows do not
/// copy them. Field names are shared too (`Arc<str>`): rows built with the names of one
/// schema (a CSV header, a query's output columns) hold the same names, not copies.
#[derive(Clone, Debug, Default)]
pub struct Row {
    fields: std::sync::Arc<Vec<(std::sync::Arc<str>, Value)>>,
}

impl Value {
    /// The value as `f64` if it is a number.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::Int(i) => Some(i as f64),
            Value::Float(f) => Some(f),
            _ => None,
        }
    }

    /// The value as a string slice if it is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The value as `i64` if it is an integer.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::Int(i) => Some(i),
            _ => None,
        }
    }

    /// Converts a `serde_json` value.
    pub fn from_json(json: serde_json::Value) -> Value {
        match json {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(b),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(i) => Value::Int(i),
                None => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            serde_json::Value::String(s) => Value::Str(s),
            serde_json::Value::Array(a) => {
                Value::List(a.into_iter().map(Value::from_json).collect())
            }
            serde_json::Value::Object(o) => Value::Row(Row {
                fields: std::sync::Arc::new(
                    o.into_iter()
                        .map(|(k, v)| (std::sync::Arc::from(k), Value::from_json(v)))
                        .collect(),
                ),
            }),
        }
    }

    /// Converts to a `serde_json` value (a non-finite float becomes `null`).
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Int(i) => serde_json::Value::from(*i),
            Value::Float(f) => serde_json::Number::from_f64(*f)
                .map(serde_json::Value::Number)
                .unwrap_or(serde_json::Value::Null),
            Value::Str(s) => serde_json::Value::String(s.clone()),
            Value::List(l) => serde_json::Value::Array(l.iter().map(Value::to_json).collect()),
            Value::Row(r) => r.to_json(),
        }
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Null, Value::Null) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Str(a), Value::Str(b)) => a == b,
            (Value::List(a), Value::List(b)) => a == b,
            (Value::Row(a), Value::Row(b)) => a == b,
            (a, b) => match (a.as_f64(), b.as_f64()) {
                (Some(x), Some(y)) => x == y,
                _ => false,
            },
        }
    }
}

/// Values are keys (group-by, equi-join): `Eq` treats every value as equal to itself except
/// `NaN`, which never equals anything (so a `NaN` key matches nothing).
impl Eq for Value {}

impl std::hash::Hash for Value {
    /// Consistent with `==`: numbers hash by their `f64` value, so `4` and `4.0` hash alike.
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        match self {
            Value::Null => 0u8.hash(state),
            Value::Bool(b) => (1u8, b).hash(state),
            Value::Int(_) | Value::Float(_) => {
                let f = self.as_f64().unwrap_or(0.0);
                let f = if f == 0.0 { 0.0 } else { f };
                (2u8, f.to_bits()).hash(state)
            }
            Value::Str(s) => (3u8, s).hash(state),
            Value::List(l) => (4u8, l).hash(state),
            Value::Row(r) => (5u8, r).hash(state),
        }
    }
}

impl Eq for Row {}

impl std::hash::Hash for Row {
    /// Order-insensitive, like `==`.
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let mut acc = 0u64;
        for (k, v) in self.fields.iter() {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            (k, v).hash(&mut h);
            acc = acc.wrapping_add(std::hash::Hasher::finish(&h));
        }
        (self.fields.len(), acc).hash(state);
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::Str(s.to_owned())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::Str(s)
    }
}

impl From<i64> for Value {
    fn from(i: i64) -> Value {
        Value::Int(i)
    }
}

impl From<f64> for Value {
    fn from(f: f64) -> Value {
        Value::Float(f)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}

impl Row {
    /// An empty row.
    pub fn new() -> Row {
        Row::default()
    }

    /// The value of `field`, if present.
    pub fn get(&self, field: &str) -> Option<&Value> {
        self.fields
            .iter()
            .find(|(k, _)| &**k == field)
            .map(|(_, v)| v)
    }

    /// Sets `field` (replacing an existing value), keeping first-insertion order.
    pub fn set(&mut self, field: impl Into<std::sync::Arc<str>>, value: impl Into<Value>) {
        let field = field.into();
        let value = value.into();
        let fields = std::sync::Arc::make_mut(&mut self.fields);
        match fields.iter_mut().find(|(k, _)| *k == field) {
            Some(slot) => slot.1 = value,
            None => fields.push((field, value)),
        }
    }

    /// The row with `field` set; for building rows in one expression.
    pub fn with(mut self, field: impl Into<std::sync::Arc<str>>, value: impl Into<Value>) -> Row {
        self.set(field, value);
        self
    }

    /// Sets every field of `other`, in its order (sharing its field names): a field both
    /// have takes `other`'s value, in its place here.
    ///
    /// ```
    /// use punctual_core::Row;
    /// let mut a = Row::new().with("k", "A").with("v", 1);
    /// a.extend(&Row::new().with("v", 2).with("w", 3));
    /// let fields: Vec<String> = a.fields().map(|(k, v)| format!("{k}={v:?}")).collect();
    /// assert_eq!(fields, ["k=Str(\"A\")", "v=Int(2)", "w=Int(3)"]);
    /// ```
    pub fn extend(&mut self, other: &Row) {
        if self.is_empty() {
            *self = other.clone();
            return;
        }
        for (k, v) in other.fields.iter() {
            self.set(std::sync::Arc::clone(k), v.clone());
        }
    }

    /// The row with every `(field, value)` set, in order.
    pub fn with_all<K: Into<std::sync::Arc<str>>>(
        mut self,
        fields: impl IntoIterator<Item = (K, Value)>,
    ) -> Row {
        for (k, v) in fields {
            self.set(k, v);
        }
        self
    }

    /// Fields in insertion order.
    pub fn fields(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.fields.iter().map(|(k, v)| (&**k, v))
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// Whether the row has no fields.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// Converts a JSON value; anything but an object is an error naming what it was.
    pub fn from_json(json: serde_json::Value) -> Result<Row, NotAnObject> {
        match Value::from_json(json) {
            Value::Row(r) => Ok(r),
            other => Err(NotAnObject(kind_name(&other))),
        }
    }

    /// The row as a JSON object.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::Value::Object(
            self.fields
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_json()))
                .collect(),
        )
    }
}

impl From<Row> for Value {
    fn from(r: Row) -> Value {
        Value::Row(r)
    }
}

fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Int(_) | Value::Float(_) => "a number",
        Value::Str(_) => "a string",
        Value::List(_) => "a list",
        Value::Row(_) => "an object",
    }
}

/// A payload that should be a JSON object was something else.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a payload must be a JSON object, not {0}")]
pub struct NotAnObject(pub &'static str);

impl PartialEq for Row {
    fn eq(&self, other: &Row) -> bool {
        self.fields.len() == other.fields.len()
            && self.fields.iter().all(|(k, v)| other.get(k) == Some(v))
    }
}

impl fmt::Display for Row {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_json())
    }
}

impl Serialize for Row {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Row {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Row, D::Error> {
        Row::from_json(serde_json::Value::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        serde_json::Value::deserialize(d).map(Value::from_json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_equality_rules() {
        assert_eq!(Value::Int(4), Value::Float(4.0));
        assert_ne!(Value::Int(4), Value::Str("4".into()));
        let a = Row::new().with("a", 1i64).with("b", "x");
        let b = Row::new().with("b", "x").with("a", 1.0);
        assert_eq!(a, b);
        assert_ne!(a, Row::new().with("a", 1i64));
    }

    #[test]
    fn equal_values_hash_alike() {
        use std::hash::{Hash, Hasher};
        fn h(v: &Value) -> u64 {
            let mut s = std::collections::hash_map::DefaultHasher::new();
            v.hash(&mut s);
            s.finish()
        }
        assert_eq!(h(&Value::Int(4)), h(&Value::Float(4.0)));
        let a = Value::Row(Row::new().with("a", 1i64).with("b", "x"));
        let b = Value::Row(Row::new().with("b", "x").with("a", 1.0));
        assert_eq!(a, b);
        assert_eq!(h(&a), h(&b));
        assert_ne!(h(&Value::Str("4".into())), h(&Value::Int(4)));
    }

    #[test]
    fn round_trip_and_errors() {
        let r: Row = serde_json::from_str(r#"{"x":[1,2.5,null],"y":{"z":true}}"#).unwrap();
        let text = serde_json::to_string(&r).unwrap();
        assert_eq!(text, r#"{"x":[1,2.5,null],"y":{"z":true}}"#);
        let e = serde_json::from_str::<Row>("[1]").unwrap_err();
        assert!(e.to_string().contains("not a list"), "{e}");
    }
}
