//! Tests of [`Row`](super::Row) and [`Value`](super::Value).

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
    let a = Value::from(Row::new().with("a", 1i64).with("b", "x"));
    let b = Value::from(Row::new().with("b", "x").with("a", 1.0));
    assert_eq!(a, b);
    assert_eq!(h(&a), h(&b));
    assert_ne!(h(&Value::Str("4".into())), h(&Value::Int(4)));
    // Numbers that are equal hash alike, at the edges too.
    let big = (1i64 << 53) + 1;
    assert_eq!(Value::Int(big), Value::Float((1i64 << 53) as f64));
    assert_eq!(h(&Value::Int(big)), h(&Value::Float((1i64 << 53) as f64)));
    assert_eq!(h(&Value::Float(-0.0)), h(&Value::Int(0)));
    assert_eq!(h(&Value::Int(i64::MAX)), h(&Value::Float(i64::MAX as f64)));
}

#[test]
fn values_are_two_words_and_small_rows_hold_theirs_inline() {
    assert_eq!(std::mem::size_of::<Value>(), 16);
    assert_eq!(std::mem::size_of::<Row>(), 16 + 2 * 16);
    let schema = Schema::new(["a", "b"]).unwrap();
    let row = schema.row([Value::from(1), Value::from("x")]);
    let copy = row.clone();
    // The values live in the row itself: a copy's are at other addresses.
    assert!(!std::ptr::eq(row.values().as_ptr(), copy.values().as_ptr()));
    assert_eq!(row, copy);
    // A wider row shares its values with its copies.
    let wide = Row::from_fields([
        ("a", Value::from(1)),
        ("b", Value::from(2)),
        ("c", Value::from(3)),
    ]);
    assert!(std::ptr::eq(
        wide.values().as_ptr(),
        wide.clone().values().as_ptr()
    ));
    // ... and copies them on the first change.
    let mut changed = wide.clone();
    changed.set("b", 20);
    assert_eq!(changed.get("b"), Some(&Value::Int(20)));
    assert_eq!(wide.get("b"), Some(&Value::Int(2)));
}

/// A row's own drop looks for what needs releasing: every kind of row releases it.
#[test]
fn dropping_rows_releases_what_they_hold() {
    let list = Arc::new(vec![Value::Int(1)]);
    let held = || Value::List(Arc::clone(&list));
    let schema = Schema::new(["a", "b"]).unwrap();
    let mut rows = vec![
        schema.row([held(), Value::Int(1)]),
        schema.row([Value::Float(1.0), held()]),
        Row::from_fields([("a", held()), ("b", Value::Null), ("c", held())]),
        Row::new().with("x", Value::from(Row::new().with("y", held()))),
        Row::new().with("s", "text").with("t", held()),
    ];
    let mut grown = schema.row([held(), Value::Null]);
    grown.set("c", held());
    rows.push(grown);
    rows.extend(rows.clone());
    assert!(Arc::strong_count(&list) > 1);
    drop(rows);
    assert_eq!(Arc::strong_count(&list), 1);
    // A schema counted by reference (made once the interned ones reached their bound) is
    // released with its last row.
    let name: Arc<str> = Arc::from("a name no other test uses");
    let counted = Schema::counted(&[Arc::clone(&name)]);
    let row = counted.row([Value::Int(1)]);
    let copy = row.clone();
    drop(counted);
    drop(row);
    assert_eq!(Arc::strong_count(&name), 2);
    drop(copy);
    assert_eq!(Arc::strong_count(&name), 1);
}

#[test]
fn small_integer_keys_spread_over_a_hash_table() {
    // With the multiplying hasher of the operators' tables, keys 0..1000 must not share
    // their low bits (the table's bucket), as the bits of their `f64`s would.
    use std::hash::{BuildHasher, BuildHasherDefault};
    let build = BuildHasherDefault::<FxHasher>::default();
    let buckets: std::collections::HashSet<u64> = (0..1000)
        .map(|k| build.hash_one(Value::Int(k)) & 1023)
        .collect();
    assert!(buckets.len() > 500, "{} buckets of 1024", buckets.len());
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

/// A row built from a schema takes the values by position, inline or wide: missing ones are
/// `NULL`, extra ones are left out (and dropped), and the row keeps its schema.
#[test]
fn a_row_takes_values_by_position_missing_ones_null_extra_ones_left_out() {
    let names = ["a", "b", "c", "d"];
    for width in 1..=names.len() {
        let schema = Schema::new(names[..width].iter().copied()).unwrap();
        for given in 0..=width + 2 {
            let text: Vec<Value> = (0..given).map(|i| Value::from(format!("v{i}"))).collect();
            let row = schema.row(text.iter().cloned());
            assert_eq!(row.schema(), &schema, "width {width}, {given} given");
            let want: Vec<Value> = (0..width)
                .map(|i| text.get(i).cloned().unwrap_or(Value::Null))
                .collect();
            assert_eq!(row.values(), &want[..], "width {width}, {given} given");
            for (i, name) in names[..width].iter().enumerate() {
                assert_eq!(row.get(name), Some(&want[i]), "field {name}");
            }
        }
        // An array of values takes the same way.
        let two = schema.row([Value::Int(1), Value::Int(2)]);
        let want_two: Vec<Value> = [Value::Int(1), Value::Int(2), Value::Null, Value::Null]
            .into_iter()
            .take(width)
            .collect();
        assert_eq!(two.values(), &want_two[..]);
    }
}

#[test]
fn rows_cross_in_the_compact_format() {
    let row = Row::new()
        .with("k", "A")
        .with("n", 4)
        .with("x", 1.5)
        .with("none", Value::Null)
        .with(
            "list",
            Value::from(vec![Value::Bool(true), Value::from("z")]),
        )
        .with("inner", Value::from(Row::new().with("deep", -3)));
    let mut b = punctual_core::Batch::new();
    b.push_point(punctual_core::Time::from_ticks(5), row.clone());
    b.push_point(punctual_core::Time::from_ticks(6), Row::new());
    let back =
        punctual_core::Batch::<Row>::from_bytes(&b.to_bytes().expect("writes")).expect("reads");
    assert_eq!(back.payloads(), [row, Row::new()]);
    // The human-readable form is unchanged: a JSON object.
    assert_eq!(
        serde_json::to_string(&Row::new().with("k", "A")).expect("json"),
        r#"{"k":"A"}"#
    );
}

#[test]
fn times_read_and_write_their_json_forms() {
    let t: punctual_core::Time = serde_json::from_str("\"inf\"").unwrap();
    assert_eq!(t, punctual_core::Time::INF);
    let t: punctual_core::Time = serde_json::from_str("42").unwrap();
    assert_eq!(t, punctual_core::Time::from_ticks(42));
    let t: punctual_core::Time = serde_json::from_str("\"1970-01-01T00:00:01Z\"").unwrap();
    assert_eq!(
        t,
        punctual_core::Time::from_ticks(punctual_core::TICKS_PER_SECOND)
    );
    assert_eq!(
        serde_json::to_string(&punctual_core::Time::NEG_INF).unwrap(),
        "\"-inf\""
    );
    assert!(serde_json::from_str::<punctual_core::Time>("\"yesterday\"").is_err());
}
