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

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::hash::BuildHasherDefault;
use std::sync::Arc;

use crate::ops::fxhash::FxHasher;
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
/// copy them. A row's fields are one allocation (none for an empty row), made once when it is
/// built in one go ([`Row::from_fields`], `collect`). Field names are shared too (`Arc<str>`):
/// a name given as text is the one [`field_name`] gives for that text, so rows hold the same
/// names, not copies, and finding a field by a shared name ([`Row::field`]) compares pointers
/// first.
#[derive(Clone, Debug, Default)]
pub struct Row {
    fields: Option<Arc<Fields>>,
}

/// A row's fields: names and values, in order.
type Fields = [(Arc<str>, Value)];

/// What can name a field of a [`Row`]: text (`&str`, `String`), made the shared name of that
/// text ([`field_name`]), or a shared name (`Arc<str>`) taken as it is.
pub trait FieldName {
    /// The name, shared.
    fn into_name(self) -> Arc<str>;
}

impl FieldName for &str {
    fn into_name(self) -> Arc<str> {
        field_name(self)
    }
}

impl FieldName for String {
    fn into_name(self) -> Arc<str> {
        field_name(&self)
    }
}

impl FieldName for &String {
    fn into_name(self) -> Arc<str> {
        field_name(self)
    }
}

impl FieldName for Arc<str> {
    fn into_name(self) -> Arc<str> {
        self
    }
}

impl FieldName for &Arc<str> {
    fn into_name(self) -> Arc<str> {
        Arc::clone(self)
    }
}

/// Names a thread keeps shared before it stops adding (then names are allocated per use).
const MAX_NAMES: usize = 4096;

thread_local! {
    static NAMES: RefCell<HashMap<Box<str>, Arc<str>, BuildHasherDefault<FxHasher>>> =
        RefCell::new(HashMap::default());
}

/// The shared name for `text`: the same `Arc` every time on a thread (for the first 4,096
/// names it sees), so that rows built field by field do not allocate a name per field and
/// lookups by a shared name compare pointers.
///
/// ```
/// use punctual_core::row::field_name;
/// assert!(std::sync::Arc::ptr_eq(&field_name("device"), &field_name("device")));
/// ```
pub fn field_name(text: &str) -> Arc<str> {
    NAMES.with(|names| {
        let mut names = names.borrow_mut();
        if let Some(name) = names.get(text) {
            return Arc::clone(name);
        }
        let name: Arc<str> = Arc::from(text);
        if names.len() < MAX_NAMES {
            names.insert(Box::from(text), Arc::clone(&name));
        }
        name
    })
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
            serde_json::Value::Object(o) => Value::Row(
                o.into_iter()
                    .map(|(k, v)| (field_name(&k), Value::from_json(v)))
                    .collect(),
            ),
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
        for (k, v) in self.slice() {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            (k, v).hash(&mut h);
            acc = acc.wrapping_add(std::hash::Hasher::finish(&h));
        }
        (self.len(), acc).hash(state);
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

    /// A row of these fields, in order, in one allocation (a name given twice keeps its first
    /// place and its last value). Names given as shared names (`&Arc<str>`, made once with
    /// [`field_name`]) cost a reference count each; names given as text are looked up in the
    /// thread's names first.
    ///
    /// ```
    /// use punctual_core::{Row, Value};
    /// let row = Row::from_fields([("k", Value::from("A")), ("v", Value::from(4))]);
    /// assert_eq!(row, Row::new().with("k", "A").with("v", 4));
    /// ```
    pub fn from_fields<K: FieldName>(fields: impl IntoIterator<Item = (K, Value)>) -> Row {
        fields.into_iter().collect()
    }

    fn slice(&self) -> &Fields {
        self.fields.as_deref().unwrap_or(&[])
    }

    /// The value of `field`, if present.
    pub fn get(&self, field: &str) -> Option<&Value> {
        self.slice()
            .iter()
            .find(|(k, _)| &**k == field)
            .map(|(_, v)| v)
    }

    /// The value of the field named `name` (a shared name: compared by pointer first, then by
    /// text), if present: what a query compiled against field names uses.
    #[inline]
    pub fn field(&self, name: &Arc<str>) -> Option<&Value> {
        let fields = self.slice();
        fields
            .iter()
            .find(|(k, _)| Arc::ptr_eq(k, name))
            .or_else(|| fields.iter().find(|(k, _)| **k == **name))
            .map(|(_, v)| v)
    }

    /// Sets `field` (replacing an existing value), keeping first-insertion order.
    pub fn set(&mut self, field: impl FieldName, value: impl Into<Value>) {
        let field = field.into_name();
        let value = value.into();
        let Some(fields) = self.fields.as_mut() else {
            self.fields = Some(Arc::from([(field, value)]));
            return;
        };
        if let Some(i) = fields.iter().position(|(k, _)| *k == field) {
            Arc::make_mut(fields)[i].1 = value;
            return;
        }
        // One more field: a new allocation, the old fields moved into it when not shared.
        let grown: Arc<Fields> = match Arc::get_mut(fields) {
            Some(own) => own
                .iter_mut()
                .map(|(k, v)| (Arc::clone(k), std::mem::take(v)))
                .chain(std::iter::once((field, value)))
                .collect(),
            None => fields
                .iter()
                .cloned()
                .chain(std::iter::once((field, value)))
                .collect(),
        };
        *fields = grown;
    }

    /// The row with `field` set; for building rows in one expression.
    pub fn with(mut self, field: impl FieldName, value: impl Into<Value>) -> Row {
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
        *self = self
            .slice()
            .iter()
            .chain(other.slice())
            .map(|(k, v)| (k, v.clone()))
            .collect();
    }

    /// The row with every `(field, value)` set, in order.
    pub fn with_all<K: FieldName>(mut self, fields: impl IntoIterator<Item = (K, Value)>) -> Row {
        if self.is_empty() {
            return fields.into_iter().collect();
        }
        for (k, v) in fields {
            self.set(k, v);
        }
        self
    }

    /// Fields in insertion order.
    pub fn fields(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.slice().iter().map(|(k, v)| (&**k, v))
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        self.slice().len()
    }

    /// Whether the row has no fields.
    pub fn is_empty(&self) -> bool {
        self.slice().is_empty()
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
            self.slice()
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_json()))
                .collect(),
        )
    }
}

/// A row of these fields in one allocation: a name given twice keeps its first place and its
/// last value.
impl<K: FieldName> FromIterator<(K, Value)> for Row {
    fn from_iter<I: IntoIterator<Item = (K, Value)>>(iter: I) -> Row {
        fn build(
            fields: &mut Vec<(Arc<str>, Value)>,
            iter: impl Iterator<Item = (Arc<str>, Value)>,
        ) -> Row {
            for (k, v) in iter {
                match fields.iter_mut().find(|(n, _)| *n == k) {
                    Some(slot) => slot.1 = v,
                    None => fields.push((k, v)),
                }
            }
            Row {
                // A drain knows its length: one allocation, of the row's size.
                fields: (!fields.is_empty()).then(|| fields.drain(..).collect()),
            }
        }
        let iter = iter.into_iter().map(|(k, v)| (k.into_name(), v));
        // The fields are gathered in a vector the thread keeps (unless a row is being built
        // from the values of this one: nested rows), so that a row costs one allocation.
        SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
            Ok(mut fields) => {
                fields.clear();
                build(&mut fields, iter)
            }
            Err(_) => build(&mut Vec::new(), iter),
        })
    }
}

thread_local! {
    /// Where [`Row`]'s `from_iter` gathers fields.
    static SCRATCH: RefCell<Vec<(Arc<str>, Value)>> = const { RefCell::new(Vec::new()) };
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
        self.len() == other.len() && self.slice().iter().all(|(k, v)| other.field(k) == Some(v))
    }
}

impl fmt::Display for Row {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_json())
    }
}

/// As a JSON object in human-readable formats; as a list of `(name, value)` pairs in compact
/// ones (bincode, for rows that travel between processes).
impl Serialize for Row {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            self.to_json().serialize(s)
        } else {
            s.collect_seq(self.fields())
        }
    }
}

impl<'de> Deserialize<'de> for Row {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Row, D::Error> {
        if d.is_human_readable() {
            Row::from_json(serde_json::Value::deserialize(d)?).map_err(serde::de::Error::custom)
        } else {
            Vec::<(String, Value)>::deserialize(d).map(Row::from_fields)
        }
    }
}

/// A value in a compact format: tagged by its kind (the variants in [`Value`]'s order).
#[derive(Serialize)]
enum TaggedRef<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(&'a str),
    List(&'a [Value]),
    Row(&'a Row),
}

/// What [`TaggedRef`] reads back as.
#[derive(Deserialize)]
enum Tagged {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<Value>),
    Row(Row),
}

/// As JSON's value in human-readable formats; tagged by its kind in compact ones.
impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            return self.to_json().serialize(s);
        }
        match self {
            Value::Null => TaggedRef::Null,
            Value::Bool(b) => TaggedRef::Bool(*b),
            Value::Int(i) => TaggedRef::Int(*i),
            Value::Float(f) => TaggedRef::Float(*f),
            Value::Str(t) => TaggedRef::Str(t),
            Value::List(l) => TaggedRef::List(l),
            Value::Row(r) => TaggedRef::Row(r),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        if d.is_human_readable() {
            return serde_json::Value::deserialize(d).map(Value::from_json);
        }
        Ok(match Tagged::deserialize(d)? {
            Tagged::Null => Value::Null,
            Tagged::Bool(b) => Value::Bool(b),
            Tagged::Int(i) => Value::Int(i),
            Tagged::Float(f) => Value::Float(f),
            Tagged::Str(t) => Value::Str(t),
            Tagged::List(l) => Value::List(l),
            Tagged::Row(r) => Value::Row(r),
        })
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
    fn building_changing_and_sharing_rows() {
        // A name given twice: its first place, its last value.
        let r = Row::from_fields([
            ("a", Value::from(1)),
            ("b", Value::from(2)),
            ("a", Value::from(3)),
        ]);
        let fields: Vec<(&str, &Value)> = r.fields().collect();
        assert_eq!(fields, [("a", &Value::Int(3)), ("b", &Value::Int(2))]);
        // A change to a shared row leaves the other copy as it was.
        let mut changed = r.clone();
        changed.set("c", 4);
        changed.set("a", 5);
        assert_eq!(r, Row::new().with("a", 3).with("b", 2));
        assert_eq!(changed, Row::new().with("a", 5).with("b", 2).with("c", 4));
        // Found by a shared name, by another `Arc` of the same text, and by text.
        let other: Arc<str> = Arc::from("b");
        assert_eq!(changed.field(&field_name("b")), Some(&Value::Int(2)));
        assert_eq!(changed.field(&other), Some(&Value::Int(2)));
        assert_eq!(changed.get("c"), Some(&Value::Int(4)));
        assert_eq!(changed.field(&field_name("zz")), None);
        // Rows inside rows (each built while the outer one is).
        let nested: Row = serde_json::from_str(r#"{"x": {"y": {"z": 1}}, "w": 2}"#).unwrap();
        assert_eq!(nested.to_json().to_string(), r#"{"x":{"y":{"z":1}},"w":2}"#);
        assert!(Row::new().is_empty() && Row::from_fields::<&str>([]).is_empty());
        let mut ext = Row::new().with("k", 1);
        ext.extend(&Row::new().with("k", 2).with("l", 3));
        assert_eq!(ext, Row::new().with("k", 2).with("l", 3));
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
