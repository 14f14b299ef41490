//! A CSV record read by serde, as a map from the header's names to the record's fields, with
//! no JSON in between: each field is what the payload's type asks for (text to a text field,
//! even one that looks like a number), and to a type that takes anything (a `Row`, a
//! `serde_json::Value`) the number, boolean or text it reads as ([`infer`]).

use serde::de::value::{Error, StrDeserializer};
use serde::de::{DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, Visitor};
use serde::forward_to_deserialize_any;

/// What a field reads as when the payload's type does not say.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Inferred<'a> {
    Int(i64),
    Float(f64),
    Bool(bool),
    Text(&'a str),
}

/// An integer written as integers are (no sign but `-`, no leading zero), a float with a
/// point or an exponent, `true` or `false`; anything else is text (`01` is text: a code, not
/// a number).
pub(crate) fn infer(text: &str) -> Inferred<'_> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    // A leading zero (but `0` itself) or a `+` is not how an integer is written; the rest is
    // checked by the parse.
    let canonical = match digits.as_bytes() {
        [b'1'..=b'9', ..] => true,
        [b'0'] => digits.len() == text.len(),
        _ => false,
    };
    if canonical {
        if let Ok(i) = crate::numbers::parse_i64(text) {
            return Inferred::Int(i);
        }
    }
    let leading_zero = digits.len() > 1 && digits.starts_with('0') && !digits.starts_with("0.");
    let looks_float = text.contains(['.', 'e', 'E']) && !leading_zero;
    if let (Ok(f), true) = (text.parse::<f64>(), looks_float) {
        if f.is_finite() && text.trim() == text {
            return Inferred::Float(f);
        }
    }
    match text {
        "true" => Inferred::Bool(true),
        "false" => Inferred::Bool(false),
        _ => Inferred::Text(text),
    }
}

/// A field as a row's value: what it reads as ([`infer`]), as serde gives it to a `Row`.
pub(crate) fn value(text: &str) -> punctual_rows::Value {
    use punctual_rows::Value;
    match infer(text) {
        Inferred::Int(i) => Value::Int(i),
        Inferred::Float(f) => Value::Float(f),
        Inferred::Bool(b) => Value::Bool(b),
        Inferred::Text(t) => Value::from(t),
    }
}

/// What a CSV column of an untyped row holds: fixed by its first value that is not empty.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ColumnType {
    /// No value yet.
    Unknown,
    /// Integers and floats.
    Number,
    /// `true` and `false`.
    Bool,
    /// Text (a later field that looks like a number is text too: `007`, then `100`).
    Text,
}

/// A field as a row's value in a column of type `column` (which its first value fixes), or
/// why it is not one: a number column takes numbers only, a boolean column `true` and
/// `false`; an empty field is `NULL` in a `nullable` column, empty text in a text column, and
/// wrong in the others.
#[inline(always)]
pub(crate) fn typed(
    text: &str,
    column: &mut ColumnType,
    nullable: bool,
) -> Result<punctual_rows::Value, &'static str> {
    use punctual_rows::Value;
    if text.is_empty() {
        return match (nullable, *column) {
            (true, _) => Ok(Value::Null),
            (false, ColumnType::Number) => Err("is empty, and the column holds numbers"),
            (false, ColumnType::Bool) => Err("is empty, and the column holds true or false"),
            (false, _) => Ok(Value::from("")),
        };
    }
    if *column == ColumnType::Text {
        return Ok(Value::from(text));
    }
    let v = value(text);
    let of = match v {
        Value::Int(_) | Value::Float(_) => ColumnType::Number,
        Value::Bool(_) => ColumnType::Bool,
        _ => ColumnType::Text,
    };
    match (*column, of) {
        (ColumnType::Unknown, _) => {
            *column = of;
            Ok(v)
        }
        (c, o) if c == o => Ok(v),
        (ColumnType::Number, _) => Err("is not a number, as the column's first value is"),
        _ => Err("is not true or false, as the column's first value is"),
    }
}

/// One record: `header[i]` names `fields[i]` (of equal length); with `keep`, only the fields
/// it marks.
pub(crate) struct Record<'a> {
    pub(crate) header: &'a [String],
    pub(crate) fields: super::split::Fields<'a>,
    pub(crate) keep: Option<&'a [bool]>,
}

impl<'de> Deserializer<'de> for Record<'_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let pairs = self.header.iter().zip(self.fields.iter());
        match self.keep {
            None => visitor.visit_map(Fields { pairs, value: None }),
            Some(keep) => visitor.visit_map(Fields {
                pairs: pairs.zip(keep).filter(|(_, k)| **k).map(|(p, _)| p),
                value: None,
            }),
        }
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum
        identifier ignored_any
    }
}

struct Fields<'a, I> {
    pairs: I,
    /// The field of the name just read.
    value: Option<&'a str>,
}

impl<'de, 'a, I: Iterator<Item = (&'a String, &'a str)>> MapAccess<'de> for Fields<'a, I> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some((name, field)) = self.pairs.next() else {
            return Ok(None);
        };
        self.value = Some(field);
        let name: StrDeserializer<'_, Error> = name.as_str().into_deserializer();
        seed.deserialize(name).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        seed.deserialize(Field(self.value.take().unwrap_or_default()))
    }

    fn size_hint(&self) -> Option<usize> {
        self.pairs.size_hint().1
    }
}

/// One field's text.
struct Field<'a>(&'a str);

impl<'de> Deserializer<'de> for Field<'_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match infer(self.0) {
            Inferred::Int(i) => visitor.visit_i64(i),
            Inferred::Float(f) => visitor.visit_f64(f),
            Inferred::Bool(b) => visitor.visit_bool(b),
            Inferred::Text(t) => visitor.visit_str(t),
        }
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_str(self.0)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_str(self.0)
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_str(self.0)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 bytes byte_buf
        unit unit_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::super::split::Split;
    use super::*;
    use punctual_rows::Row;
    use serde::Deserialize;

    #[test]
    fn fields_read_as_numbers_booleans_or_text() {
        assert_eq!(infer("42"), Inferred::Int(42));
        assert_eq!(infer("-7"), Inferred::Int(-7));
        assert_eq!(infer("0"), Inferred::Int(0));
        for text in ["01", "-0", "+5", "", "1 ", "x"] {
            assert_eq!(infer(text), Inferred::Text(text), "{text:?}");
        }
        assert_eq!(infer("2.5"), Inferred::Float(2.5));
        assert_eq!(infer("1e3"), Inferred::Float(1000.0));
        assert_eq!(infer("0.5"), Inferred::Float(0.5));
        assert_eq!(infer("true"), Inferred::Bool(true));
        // Past i64, with no point: text.
        assert_eq!(
            infer("99999999999999999999"),
            Inferred::Text("99999999999999999999")
        );
    }

    #[test]
    fn a_record_is_what_its_payload_type_asks_for() {
        let header = ["code", "n", "x", "ok", "note"].map(String::from);
        let line = "007,3,2.5,true,";
        let mut split = Split::default();
        assert!(split.read(line, ','));
        let record = || Record {
            header: &header,
            fields: split.fields(line),
            keep: None,
        };
        let row = Row::deserialize(record()).unwrap();
        assert_eq!(
            row,
            Row::new()
                .with("code", "007")
                .with("n", 3)
                .with("x", 2.5)
                .with("ok", true)
                .with("note", "")
        );
        #[derive(Deserialize, Debug, PartialEq)]
        struct Typed {
            code: String,
            n: u8,
            x: f64,
            ok: bool,
            note: Option<String>,
        }
        assert_eq!(
            Typed::deserialize(record()).unwrap(),
            Typed {
                code: "007".into(),
                n: 3,
                x: 2.5,
                ok: true,
                note: Some(String::new()),
            }
        );
        // A number asked of text that is not one: the field's text and the type in the error.
        #[derive(Deserialize, Debug)]
        #[allow(dead_code)]
        struct Wrong {
            note: i64,
        }
        let e = Wrong::deserialize(record()).unwrap_err().to_string();
        assert!(e.contains("invalid type: string \"\""), "{e}");
    }

    #[test]
    fn a_field_as_a_row_value_is_what_serde_makes_of_it() {
        let texts = [
            "007",
            "3",
            "-0",
            "0",
            "-",
            "2.5",
            "1e3",
            "-1.5E-2",
            "1.",
            ".5",
            "00.5",
            "0.5",
            "true",
            "false",
            "TRUE",
            "",
            " 1",
            "1 ",
            "nan",
            "inf",
            "NaN",
            "9223372036854775807",
            "9223372036854775808",
            "1e400",
            "x, y",
            "é",
        ];
        for text in texts {
            let by_serde = punctual_rows::Value::deserialize(Field(text)).unwrap();
            assert_eq!(value(text), by_serde, "{text:?}");
        }
    }

    #[test]
    fn a_columns_first_value_fixes_its_type() {
        use punctual_rows::Value;
        let mut number = ColumnType::Unknown;
        assert_eq!(typed("20", &mut number, false), Ok(Value::Int(20)));
        assert_eq!(number, ColumnType::Number);
        assert_eq!(typed("20.5", &mut number, false), Ok(Value::Float(20.5)));
        assert!(typed("not-a-number", &mut number, false).is_err());
        assert!(typed("true", &mut number, false).is_err());
        assert!(typed("", &mut number, false).is_err());
        assert_eq!(typed("", &mut number, true), Ok(Value::Null));
        let mut text = ColumnType::Unknown;
        assert_eq!(typed("007", &mut text, false), Ok(Value::from("007")));
        assert_eq!(typed("100", &mut text, false), Ok(Value::from("100")));
        assert_eq!(typed("", &mut text, false), Ok(Value::from("")));
        let mut flag = ColumnType::Unknown;
        assert_eq!(typed("", &mut flag, false), Ok(Value::from("")));
        assert_eq!(flag, ColumnType::Unknown, "an empty field fixes nothing");
        assert_eq!(typed("false", &mut flag, false), Ok(Value::Bool(false)));
        assert!(typed("no", &mut flag, false).is_err());
    }

    #[test]
    fn a_record_with_columns_kept_is_those_fields_only() {
        let header = ["code", "n", "x"].map(String::from);
        let line = r#"007,3,"not a number""#;
        let mut split = Split::default();
        assert!(split.read(line, ','));
        let keep = [false, true, false];
        let record = Record {
            header: &header,
            fields: split.fields(line),
            keep: Some(&keep),
        };
        assert_eq!(Row::deserialize(record).unwrap(), Row::new().with("n", 3));
    }
}
