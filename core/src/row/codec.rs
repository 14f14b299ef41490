//! How rows and values are written and read by serde: as JSON objects and values in
//! human-readable formats (read straight into rows and values, with no JSON tree in between),
//! tagged by kind in compact ones.

use std::fmt;
use std::sync::Arc;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{field_name, NotAnObject, Row, Text, Value};

/// As a JSON object in human-readable formats; as a list of `(name, value)` pairs in compact
/// ones (bincode, for rows that travel between processes).
impl Serialize for Row {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            let mut map = s.serialize_map(Some(self.len()))?;
            for (name, value) in self.fields() {
                map.serialize_entry(name, value)?;
            }
            map.end()
        } else {
            s.collect_seq(self.fields())
        }
    }
}

/// From a JSON object (any map) in human-readable formats, read straight into the row: its
/// names shared ([`field_name`]), no JSON tree in between.
impl<'de> Deserialize<'de> for Row {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Row, D::Error> {
        if d.is_human_readable() {
            d.deserialize_any(RowVisitor)
        } else {
            Vec::<(String, Value)>::deserialize(d).map(Row::from_fields)
        }
    }
}

struct RowVisitor;

impl<'de> Visitor<'de> for RowVisitor {
    type Value = Row;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Row, A::Error> {
        // The fields go to `Row`'s `from_iter` as they are read (gathered where the thread
        // keeps its fields, no vector per row); the first error ends the row.
        let mut error = None;
        let row = std::iter::from_fn(|| match map.next_entry_seed(Name, ValueSeed) {
            Ok(entry) => entry,
            Err(e) => {
                error = Some(e);
                None
            }
        })
        .collect();
        match error {
            Some(e) => Err(e),
            None => Ok(row),
        }
    }

    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<Row, A::Error> {
        Err(de::Error::custom(NotAnObject("a list")))
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Row, E> {
        Err(E::custom(NotAnObject("a string")))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Row, E> {
        Err(E::custom(NotAnObject("a boolean")))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Row, E> {
        Err(E::custom(NotAnObject("a number")))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Row, E> {
        Err(E::custom(NotAnObject("a number")))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Row, E> {
        Err(E::custom(NotAnObject("a number")))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Row, E> {
        Err(E::custom(NotAnObject("null")))
    }
}

/// A field's name, shared.
struct Name;

impl<'de> DeserializeSeed<'de> for Name {
    type Value = Arc<str>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Arc<str>, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for Name {
    type Value = Arc<str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Arc<str>, E> {
        Ok(field_name(v))
    }
}

/// A value, as [`Value`]'s `Deserialize` reads it.
struct ValueSeed;

impl<'de> DeserializeSeed<'de> for ValueSeed {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Value::deserialize(d)
    }
}

/// JSON's values: a number is an integer if it is one that fits `i64`, else a float.
struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Value::deserialize(d)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Int(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(i64::try_from(v).map_or(Value::Float(v as f64), Value::Int))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(Value::Float(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::Str(Text::from(v)))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::Str(Text::from(v)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut list = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(v) = seq.next_element::<Value>()? {
            list.push(v);
        }
        Ok(Value::List(Arc::new(list)))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Value, A::Error> {
        RowVisitor.visit_map(map).map(Value::from)
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
            // As its JSON value (a float that is not finite is `null`).
            return match self {
                Value::Null => s.serialize_unit(),
                Value::Bool(b) => s.serialize_bool(*b),
                Value::Int(i) => s.serialize_i64(*i),
                Value::Float(f) if f.is_finite() => s.serialize_f64(*f),
                Value::Float(_) => s.serialize_unit(),
                Value::Str(t) => s.serialize_str(t),
                Value::List(l) => s.collect_seq(l.iter()),
                Value::Row(r) => r.serialize(s),
            };
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
            return d.deserialize_any(ValueVisitor);
        }
        Ok(match Tagged::deserialize(d)? {
            Tagged::Null => Value::Null,
            Tagged::Bool(b) => Value::Bool(b),
            Tagged::Int(i) => Value::Int(i),
            Tagged::Float(f) => Value::Float(f),
            Tagged::Str(t) => Value::Str(Text::from(t)),
            Tagged::List(l) => Value::List(Arc::new(l)),
            Tagged::Row(r) => Value::Row(Arc::new(r)),
        })
    }
}
