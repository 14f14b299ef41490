//! How rows and values are written and read by serde: as JSON objects and values in
//! human-readable formats (read straight into rows and values, with no JSON tree in between),
//! tagged by kind in compact ones.

use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{field_name, NotAnObject, Row, Schema, Text, Value};

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
        // Rows read one after another mostly have the names of the one before, in its order:
        // as long as they do, a name is compared with that row's schema and nothing is looked
        // up; from the first name that differs, the names are looked up and the schema found.
        let last = LAST.with(|l| l.borrow().clone());
        let names = last.names();
        with_values(|values| {
            loop {
                match map.next_key_seed(KeyAt(names.get(values.len())))? {
                    None => break,
                    Some(Key::Same) => values.push(map.next_value_seed(ValueSeed)?),
                    Some(Key::Other(name)) => {
                        let value = map.next_value_seed(ValueSeed)?;
                        let read = names.iter().cloned().zip(values.drain(..));
                        return remembered(map, read.chain(std::iter::once((name, value))));
                    }
                }
            }
            if values.len() == names.len() {
                return Ok(Row::assemble(last.clone(), values.drain(..)));
            }
            let read = names.iter().cloned().zip(values.drain(..));
            remembered(map, read)
        })
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

thread_local! {
    /// The schema of the last row this thread read whose names differed from the one before.
    static LAST: RefCell<Schema> = RefCell::new(Schema::empty());
    /// Where a row's values are gathered while it is read.
    static VALUES: RefCell<Vec<Value>> = const { RefCell::new(Vec::new()) };
}

/// `f` with the thread's vector for a row's values, empty (a fresh one for a row inside the
/// row being read).
fn with_values<T>(f: impl FnOnce(&mut Vec<Value>) -> T) -> T {
    VALUES.with(|values| match values.try_borrow_mut() {
        Ok(mut values) => {
            values.clear();
            let out = f(&mut values);
            values.clear();
            out
        }
        Err(_) => f(&mut Vec::new()),
    })
}

/// The row of the fields `read` and the rest of `map`, as `Row`'s `from_iter` makes it (a
/// name given twice keeps its first place and its last value); its schema is remembered
/// for the next row. The first error ends the row.
fn remembered<'de, A: MapAccess<'de>>(
    mut map: A,
    read: impl Iterator<Item = (Arc<str>, Value)>,
) -> Result<Row, A::Error> {
    let mut error = None;
    let rest = std::iter::from_fn(|| match map.next_entry_seed(Name, ValueSeed) {
        Ok(entry) => entry,
        Err(e) => {
            error = Some(e);
            None
        }
    });
    let row: Row = read.chain(rest).collect();
    if let Some(e) = error {
        return Err(e);
    }
    LAST.with(|l| *l.borrow_mut() = row.schema().clone());
    Ok(row)
}

/// A key read where the last row's schema has the name `.0` (if it has one there).
struct KeyAt<'a>(Option<&'a Arc<str>>);

/// That name, or another one (shared).
enum Key {
    Same,
    Other(Arc<str>),
}

impl<'de> DeserializeSeed<'de> for KeyAt<'_> {
    type Value = Key;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Key, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for KeyAt<'_> {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
        Ok(match self.0 {
            Some(name) if **name == *v => Key::Same,
            _ => Key::Other(field_name(v)),
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows read one after another, with the names of the row before, fewer, more, others,
    /// in another order, twice, nested: each is the row its fields make.
    #[test]
    fn rows_read_in_a_row_are_their_fields() {
        let lines = [
            r#"{"a": 1, "b": "x"}"#,
            r#"{"a": 2, "b": "y"}"#,
            r#"{"a": 3}"#,
            r#"{"a": 4, "b": "z", "c": true}"#,
            r#"{"b": "w", "a": 5}"#,
            r#"{"a": 6, "a": 7, "b": null}"#,
            r#"{"a": {"a": 1, "b": 2}, "b": [1, {"c": 2.5}]}"#,
            r#"{"a": 8, "b": "v"}"#,
            r#"{}"#,
        ];
        for line in lines {
            let read: Row = serde_json::from_str(line).unwrap();
            let json: serde_json::Value = serde_json::from_str(line).unwrap();
            let made = Row::from_json(json).unwrap();
            assert_eq!(read, made, "{line}");
            let names: Vec<&str> = read.fields().map(|(k, _)| k).collect();
            let made_names: Vec<&str> = made.fields().map(|(k, _)| k).collect();
            assert_eq!(names, made_names, "{line}");
            assert_eq!(read.schema(), made.schema(), "{line}");
        }
        // An error inside a row ends it; the next row reads as it should.
        assert!(serde_json::from_str::<Row>(r#"{"a": 1, "b": }"#).is_err());
        let after: Row = serde_json::from_str(r#"{"a": 9, "b": "u"}"#).unwrap();
        assert_eq!(after, Row::new().with("a", 9).with("b", "u"));
    }
}
