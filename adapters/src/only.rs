//! A serde deserializer that shows a payload only some fields of a JSON object: the others
//! are skipped as they are read (not parsed into values), so a payload of dynamic fields (a
//! `Row`) holds what a query reads and no more.

use serde::de::value::{BorrowedStrDeserializer, StrDeserializer};
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::forward_to_deserialize_any;

/// `de`'s object with only the fields named in `keep` (the others skipped); with `time`, the
/// value of that field (not kept) is read into its slot on the way (the last, if named twice).
pub(crate) struct Only<'k, D> {
    pub(crate) de: D,
    pub(crate) keep: &'k [String],
    pub(crate) time: Option<TimeSlot<'k>>,
}

/// A field read aside, and where its value goes.
pub(crate) type TimeSlot<'k> = (&'k str, &'k mut Option<serde_json::Value>);

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Only<'_, D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.de.deserialize_map(OnlyVisitor {
            inner: visitor,
            keep: self.keep,
            time: self.time,
        })
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum
        identifier ignored_any
    }
}

struct OnlyVisitor<'k, V> {
    inner: V,
    keep: &'k [String],
    time: Option<TimeSlot<'k>>,
}

impl<'de, V: Visitor<'de>> Visitor<'de> for OnlyVisitor<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.expecting(f)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.inner.visit_map(OnlyMap {
            map,
            keep: self.keep,
            time: self.time,
        })
    }
}

struct OnlyMap<'k, A> {
    map: A,
    keep: &'k [String],
    time: Option<TimeSlot<'k>>,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for OnlyMap<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        loop {
            let Some(key) = self.map.next_key::<Key<'de>>()? else {
                return Ok(None);
            };
            let text = match &key {
                Key::Borrowed(s) => *s,
                Key::Owned(s) => s.as_str(),
            };
            if !self.keep.iter().any(|k| k == text) {
                match &mut self.time {
                    Some((field, slot)) if *field == text => **slot = Some(self.map.next_value()?),
                    _ => {
                        self.map.next_value::<IgnoredAny>()?;
                    }
                }
                continue;
            }
            return match key {
                Key::Borrowed(s) => seed.deserialize(BorrowedStrDeserializer::new(s)),
                Key::Owned(s) => seed.deserialize(StrDeserializer::new(&s)),
            }
            .map(Some);
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

/// A key as the input has it: borrowed, or copied where it had escapes.
enum Key<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a field name")
            }

            fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key::Borrowed(v))
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key::Owned(v.to_owned()))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use punctual_core::Row;
    use serde::Deserialize;

    fn only<'a, T: Deserialize<'a>>(text: &'a str, keep: &[&str]) -> serde_json::Result<T> {
        let keep: Vec<String> = keep.iter().map(|s| (*s).to_owned()).collect();
        let mut de = serde_json::Deserializer::from_str(text);
        T::deserialize(Only {
            de: &mut de,
            keep: &keep,
            time: None,
        })
    }

    #[test]
    fn an_object_shows_only_the_fields_kept() {
        let text = r#"{"t": 5, "device": "a", "nested": {"x": [1, 2]}, "c\u0065lsius": 21.5}"#;
        let row: Row = only(text, &["device", "celsius"]).unwrap();
        // An escaped key is read as what it says.
        assert_eq!(row, Row::new().with("device", "a").with("celsius", 21.5));
        let row: Row = only(text, &[]).unwrap();
        assert_eq!(row, Row::new());
        // A typed payload gets its fields, the others unseen.
        #[derive(Deserialize, Debug, PartialEq)]
        #[serde(deny_unknown_fields)]
        struct Device {
            device: String,
        }
        let d: Device = only(text, &["device"]).unwrap();
        assert_eq!(d.device, "a");
        // Not an object, or broken past a skipped field: an error, as without it.
        assert!(only::<Row>("[1, 2]", &["x"]).is_err());
        assert!(only::<Row>(r#"{"skip": [1, 2, "device": 1}"#, &["device"]).is_err());
    }

    #[test]
    fn a_field_read_aside_is_the_last_of_its_name() {
        let text = r#"{"t": 5, "device": "a", "t": "2026-12-01T10:00:00Z", "v": 1}"#;
        let keep = vec!["device".to_owned()];
        let mut time = None;
        let mut de = serde_json::Deserializer::from_str(text);
        let row = Row::deserialize(Only {
            de: &mut de,
            keep: &keep,
            time: Some(("t", &mut time)),
        })
        .unwrap();
        assert_eq!(row, Row::new().with("device", "a"));
        assert_eq!(time, Some(serde_json::json!("2026-12-01T10:00:00Z")));
    }
}
