//! Rows past the process's bound of interned schemas (a process of its own: the bound is
//! global). Rows whose names vary without end (JSON objects keyed by ids) must not grow the
//! interned set forever, and must still be whole rows.

use punctual_rows::{Row, Schema, Value};

#[test]
fn rows_past_the_interned_schemas_are_still_rows() {
    let early = Schema::new(["v"]).expect("one");
    // More distinct sets of names than the process interns (16,384).
    let rows: Vec<Row> = (0..17_000)
        .map(|i| {
            Row::from_fields([
                (format!("id-{i}"), Value::from(i64::from(i))),
                ("v".to_owned(), Value::from(i64::from(i) * 2)),
                ("w".to_owned(), Value::from("x")),
            ])
        })
        .collect();
    for (i, row) in rows.iter().enumerate().step_by(997) {
        let i = i as i64;
        assert_eq!(row.get(&format!("id-{i}")), Some(&Value::Int(i)));
        assert_eq!(row.get("v"), Some(&Value::Int(i * 2)));
        assert_eq!(row.len(), 3);
    }
    // The same names past the bound: equal rows, though not one schema object.
    let names = ["late-a", "late-b"];
    let a = Schema::new(names).expect("distinct");
    let b = Schema::new(names).expect("distinct");
    assert_eq!(a, b);
    assert!(
        !a.same(&b),
        "past the bound, schemas are counted, not interned"
    );
    let ra = a.row([Value::from(1), Value::from(2)]);
    let rb = Row::new().with("late-b", 2).with("late-a", 1);
    assert_eq!(ra, rb);
    let mut changed = ra.clone();
    changed.set("late-c", 3);
    assert_eq!(changed.get("late-c"), Some(&Value::Int(3)));
    assert_eq!(ra.len(), 2);
    // Names interned before the bound stay interned.
    assert!(early.same(&Schema::new(["v"]).expect("one")));
}
