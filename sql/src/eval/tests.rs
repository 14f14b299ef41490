use super::*;

#[test]
fn a_condition_holds_exactly_when_its_value_is_true() {
    // Every AND / OR / NOT of comparisons over integers, floats (NaN too), NULL, a missing
    // field and a string: `holds` (no values in between; numbers of one kind compared
    // without a branch) against the value `eval` makes.
    let row = Row::new()
        .with("a", 1)
        .with("n", Value::Null)
        .with("s", "x")
        .with("f", 1.5)
        .with("nan", f64::NAN);
    let cx = Ctx::row(&row, Time::NEG_INF);
    let leaves = [
        E::Lit(Value::Int(1)),
        E::Lit(Value::Int(2)),
        E::Lit(Value::Null),
        E::Field(path(["a"])),
        E::Field(path(["n"])),
        E::Field(path(["missing"])),
        E::Field(path(["s"])),
        E::Lit(Value::Float(1.0)),
        E::Lit(Value::Float(1.5)),
        E::Field(path(["f"])),
        E::Field(path(["nan"])),
    ];
    let ops = COMPARISONS;
    let mut conditions = Vec::new();
    for a in &leaves {
        for b in &leaves {
            for op in ops {
                conditions.push(E::Bin(op, Box::new(a.clone()), Box::new(b.clone())));
            }
        }
    }
    let atoms = conditions.len();
    for i in (0..atoms).step_by(7) {
        for j in (0..atoms).step_by(11) {
            let (x, y) = (conditions[i].clone(), conditions[j].clone());
            conditions.push(E::Bin(BinOp::And, Box::new(x.clone()), Box::new(y.clone())));
            conditions.push(E::Bin(BinOp::Or, Box::new(x.clone()), Box::new(y)));
            conditions.push(E::Not(Box::new(x)));
        }
    }
    let mut held = 0;
    for c in &conditions {
        assert_eq!(c.holds(&cx), truthy(&c.eval(&cx)), "{c:?}");
        held += usize::from(c.holds(&cx));
    }
    assert!(held > 0 && held < conditions.len());
}

#[test]
fn like_matches_runs_and_single_characters() {
    assert!(like("sensor-12", "sensor-%"));
    assert!(like("abc", "a_c"));
    assert!(like("abc", "%"));
    assert!(!like("abc", "a_"));
    assert!(like("a%c", "a%c"));
    assert!(!like("", "_"));
}

#[test]
fn substring_is_one_based_as_in_t_sql() {
    let row = Row::new();
    let sub = |start: i64, len: i64| {
        E::Call(
            Func::Substring,
            vec![
                E::Lit(Value::Str("abcdef".into())),
                E::Lit(Value::Int(start)),
                E::Lit(Value::Int(len)),
            ],
        )
        .eval(&Ctx::row(&row, Time::NEG_INF))
    };
    assert_eq!(sub(2, 3), Value::Str("bcd".into()));
    assert_eq!(sub(0, 3), Value::Str("ab".into()));
    assert_eq!(sub(5, 10), Value::Str("ef".into()));
    assert_eq!(sub(9, 2), Value::Str("".into()));
}

#[test]
fn a_boolean_casts_to_the_same_number_as_either_numeric_type() {
    for (b, n) in [(true, 1), (false, 0)] {
        assert_eq!(call::cast(Value::Bool(b), SqlType::Bigint), Value::Int(n));
        assert_eq!(
            call::cast(Value::Bool(b), SqlType::Float),
            Value::Float(n as f64)
        );
    }
}

/// An expression stays small (moved and matched per event): a registered function's call
/// is behind a pointer, so it adds no word to every expression.
#[test]
fn an_expression_is_at_most_seven_words() {
    assert!(
        std::mem::size_of::<E>() <= 56,
        "{}",
        std::mem::size_of::<E>()
    );
}
