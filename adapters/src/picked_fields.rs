//! A serde deserializer that shows a payload only some fields of a JSON object: the others
//! are skipped as they are read (not parsed into values), so a payload of dynamic fields (a
//! `Row`) holds what a query reads and no more.

use serde::de::value::{BorrowedStrDeserializer, StrDeserializer};
use serde::de::{DeserializeSeed, Deserializer, Error as _, IgnoredAny, MapAccess, Visitor};
use serde::forward_to_deserialize_any;

/// `de`'s object with only the fields `pick` keeps (the others skipped), the time field read
/// on the way.
pub(crate) struct Only<'k, D> {
    pub(crate) de: D,
    pub(crate) pick: Pick<'k>,
}

/// Which fields of an object a payload sees, and the field read aside as the time.
pub(crate) struct Pick<'k> {
    /// The fields kept (`None`: all of them).
    pub(crate) keep: Option<&'k [String]>,
    /// A field whose value (the last, if named twice) goes into its slot, whether it is kept
    /// or not: a line is read once for its time and its payload.
    pub(crate) time: Option<TimeSlot<'k>>,
    /// Whether the time's slot holds the field of exactly its name (which a field named so
    /// in another ASCII case does not replace).
    pub(crate) time_exact: bool,
}

/// A field read aside, and where its value goes.
pub(crate) type TimeSlot<'k> = (&'k str, &'k mut Option<serde_json::Value>);

impl<'k> Pick<'k> {
    /// The fields `keep` (`None`: all) and the field read aside as the time, if any.
    pub(crate) fn new(keep: Option<&'k [String]>, time: Option<TimeSlot<'k>>) -> Self {
        Pick {
            keep,
            time,
            time_exact: false,
        }
    }

    /// Whether a field of this name is kept: names match in any ASCII case (the query
    /// language's `make` reads `Make`), as the language reads them.
    fn keeps(&self, key: &str) -> bool {
        self.keep
            .is_none_or(|keep| keep.iter().any(|k| k.eq_ignore_ascii_case(key)))
    }

    /// Whether the field is the time: `Some(true)` by its exact name, `Some(false)` in
    /// another ASCII case.
    fn is_time(&self, key: &str) -> Option<bool> {
        let (field, _) = self.time.as_ref()?;
        if *field == key {
            Some(true)
        } else {
            field.eq_ignore_ascii_case(key).then_some(false)
        }
    }

    /// The time's value, from the field of its exact name (`exact`) or, while none was
    /// read, of its name in another case.
    fn set_time(&mut self, value: serde_json::Value, exact: bool) {
        if !exact && self.time_exact {
            return;
        }
        self.time_exact |= exact;
        if let Some((_, slot)) = &mut self.time {
            **slot = Some(value);
        }
    }
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Only<'_, D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.de.deserialize_any(OnlyVisitor {
            inner: visitor,
            pick: self.pick,
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
    pick: Pick<'k>,
}

impl<'de, V: Visitor<'de>> Visitor<'de> for OnlyVisitor<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.expecting(f)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.inner.visit_map(OnlyMap {
            map,
            pick: self.pick,
            time_next: None,
        })
    }
}

struct OnlyMap<'k, A> {
    map: A,
    pick: Pick<'k>,
    /// Whether the value to read next is the time field's (kept too): `Some(exact)`, by its
    /// exact name or in another ASCII case.
    time_next: Option<bool>,
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
            let time = self.pick.is_time(text);
            if !self.pick.keeps(text) {
                if let Some(exact) = time {
                    let value = self.map.next_value()?;
                    self.pick.set_time(value, exact);
                } else {
                    self.map.next_value::<IgnoredAny>()?;
                }
                continue;
            }
            self.time_next = time;
            return match key {
                Key::Borrowed(s) => seed.deserialize(BorrowedStrDeserializer::new(s)),
                Key::Owned(s) => seed.deserialize(StrDeserializer::new(&s)),
            }
            .map(Some);
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        let Some(exact) = self.time_next.take() else {
            return self.map.next_value_seed(seed);
        };
        // The time field, kept too: its value once, for the time and for the payload.
        let value: serde_json::Value = self.map.next_value()?;
        self.pick.set_time(value.clone(), exact);
        seed.deserialize(value).map_err(A::Error::custom)
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
    use punctual_rows::Row;
    use serde::Deserialize;

    fn only<'a, T: Deserialize<'a>>(text: &'a str, keep: &[&str]) -> serde_json::Result<T> {
        let keep: Vec<String> = keep.iter().map(|s| (*s).to_owned()).collect();
        let mut de = serde_json::Deserializer::from_str(text);
        T::deserialize(Only {
            de: &mut de,
            pick: Pick::new(Some(&keep), None),
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

    /// A row of `text` keeping `device`, and the value of its time field `t`.
    fn with_time(text: &str) -> (Row, Option<serde_json::Value>) {
        let keep = vec!["device".to_owned()];
        let mut time = None;
        let mut de = serde_json::Deserializer::from_str(text);
        let row = Row::deserialize(Only {
            de: &mut de,
            pick: Pick::new(Some(&keep), Some(("t", &mut time))),
        })
        .unwrap();
        (row, time)
    }

    #[test]
    fn a_field_read_aside_is_the_last_of_its_name() {
        let (row, time) =
            with_time(r#"{"t": 5, "device": "a", "t": "2026-12-01T10:00:00Z", "v": 1}"#);
        assert_eq!(row, Row::new().with("device", "a"));
        assert_eq!(time, Some(serde_json::json!("2026-12-01T10:00:00Z")));
    }

    /// Names match in any ASCII case (a query's `device` keeps `Device`); the time is the
    /// field of its exact name when there is one, wherever it stands, else one in another
    /// case.
    #[test]
    fn names_match_in_any_case_the_exact_time_first() {
        let read = with_time;
        let (row, time) = read(r#"{"t": 1, "Device": "a", "T": 2}"#);
        assert_eq!(row, Row::new().with("Device", "a"));
        assert_eq!(time, Some(serde_json::json!(1)));
        let (_, time) = read(r#"{"T": 2, "device": "a"}"#);
        assert_eq!(time, Some(serde_json::json!(2)));
    }

    #[test]
    fn a_time_field_kept_is_read_once_for_both() {
        let text = r#"{"t": 5, "device": "a", "t": 7, "v": [1, 2.5]}"#;
        let read = |keep: Option<&[String]>| {
            let mut time = None;
            let mut de = serde_json::Deserializer::from_str(text);
            let row = Row::deserialize(Only {
                de: &mut de,
                pick: Pick::new(keep, Some(("t", &mut time))),
            })
            .unwrap();
            (row, time)
        };
        // Every field: the payload is what serde makes of the line, the time its last `t`.
        let (row, time) = read(None);
        assert_eq!(row, serde_json::from_str::<Row>(text).unwrap());
        assert_eq!(time, Some(serde_json::json!(7)));
        // Some fields, the time among them.
        let keep = vec!["t".to_owned(), "v".to_owned()];
        let (row, time) = read(Some(&keep));
        assert_eq!(
            row,
            serde_json::from_str::<Row>(r#"{"t": 7, "v": [1, 2.5]}"#).unwrap()
        );
        assert_eq!(time, Some(serde_json::json!(7)));
        // A kept time field of a typed payload's type is read as that type.
        #[derive(Deserialize, Debug, PartialEq)]
        struct Timed {
            t: u32,
        }
        let mut time = None;
        let mut de = serde_json::Deserializer::from_str(r#"{"t": 9, "x": 1}"#);
        let timed = Timed::deserialize(Only {
            de: &mut de,
            pick: Pick::new(None, Some(("t", &mut time))),
        })
        .unwrap();
        assert_eq!((timed, time), (Timed { t: 9 }, Some(serde_json::json!(9))));
    }
}
