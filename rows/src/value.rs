//! [`Value`]: one field value of a [`Row`], its equality and hash (JSON's: numbers by value),
//! and its conversions.

use std::sync::Arc;

use super::{object, Row, Text};

/// One field value of a [`Row`]: two words, its kind and its value.
#[derive(Clone, Debug, Default)]
// The kind a whole word and every value at the second: a value is moved as two aligned
// words (with a one-byte kind and a `bool` at the second byte, moves copied bytes 1 to 16
// piecewise, and reading them back waited on those stores: a third of the query language's
// time per event in a profile).
#[repr(u64)]
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
    /// A string (shared text: see [`Text`]).
    Str(Text),
    /// A list (shared: cloning the value does not copy the list).
    List(Arc<Vec<Value>>),
    /// A nested row (shared: cloning the value does not copy the row).
    Row(Arc<Row>),
}

impl Value {
    /// Whether dropping the value releases something (text, a list, a row).
    #[inline(always)]
    pub(super) fn owns(&self) -> bool {
        matches!(self, Value::Str(_) | Value::List(_) | Value::Row(_))
    }

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

    /// The value as an operator table's index (see `punctual_core::ops::index_keys`): a number
    /// that is a non-negative integer, whether an `Int` or a `Float` (equal values, as `==`
    /// says, take the same slot).
    pub(crate) fn table_index(&self) -> Option<usize> {
        match *self {
            Value::Int(k) => usize::try_from(k).ok(),
            Value::Float(f) if f >= 0.0 && f.fract() == 0.0 && f < usize::MAX as f64 => {
                Some(f as usize)
            }
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
            serde_json::Value::String(s) => Value::Str(Text::from(s)),
            serde_json::Value::Array(a) => {
                Value::List(Arc::new(a.into_iter().map(Value::from_json).collect()))
            }
            serde_json::Value::Object(o) => Value::Row(Arc::new(object(o))),
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
            Value::Str(s) => serde_json::Value::String(s.to_string()),
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
            // By the `f64` value (as `==` compares), written as an integer when it is one:
            // the bits of small integers' `f64`s end in zeros, which multiplying hashers keep
            // in the low bits (every key in one bucket).
            Value::Int(_) | Value::Float(_) => {
                let f = self.as_f64().unwrap_or(0.0);
                let i = f as i64;
                if i as f64 == f {
                    (2u8, i).hash(state)
                } else {
                    (6u8, f.to_bits()).hash(state)
                }
            }
            Value::Str(s) => (3u8, s).hash(state),
            Value::List(l) => (4u8, l).hash(state),
            Value::Row(r) => (5u8, r).hash(state),
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::Str(Text::from(s))
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::Str(Text::from(s))
    }
}

impl From<Vec<Value>> for Value {
    fn from(l: Vec<Value>) -> Value {
        Value::List(Arc::new(l))
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

impl From<Row> for Value {
    fn from(r: Row) -> Value {
        Value::Row(Arc::new(r))
    }
}

/// Orders two values: numbers by value, strings by text, booleans false < true; `None` when
/// they cannot be ordered (different kinds, `NaN`).
///
/// ```
/// use punctual_rows::{compare_values, Value};
/// use std::cmp::Ordering;
/// assert_eq!(compare_values(&Value::Int(4), &Value::Float(4.5)), Some(Ordering::Less));
/// assert_eq!(compare_values(&Value::Int(4), &Value::from("4")), None);
/// ```
pub fn compare_values(a: &Value, b: &Value) -> Option<std::cmp::Ordering> {
    match (a, b) {
        (Value::Str(x), Value::Str(y)) => Some(x.cmp(y)),
        (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(y)),
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        _ => a.as_f64()?.partial_cmp(&b.as_f64()?),
    }
}
