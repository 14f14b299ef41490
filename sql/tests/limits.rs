//! Queries nested past the limits are refused with a position, on a thread with a small
//! stack (2 MiB, a spawned thread's default, as the cluster's workers have); queries at the
//! limits parse, compile and run there. Before the limits, a text nested about 2,200 deep or a
//! chain of about 6,300 `OR` terms overflowed the stack and aborted the process.

use punctual_rows::{Row, Value};
use punctual_sql::{SqlError, SqlQuery, MAX_DEPTH, MAX_NESTING};

mod common;
use common::*;

/// Runs `f` on a thread with a 2 MiB stack.
fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(f)
        .expect("spawns")
        .join()
        .expect("no overflow")
}

fn refused(text: String, said: &str) {
    let e = on_small_stack(move || SqlQuery::parse(&text).map(|_| ()));
    match e {
        Err(e @ SqlError::Syntax { .. }) => {
            assert!(e.to_string().contains(said), "{e}");
            assert!(e.pos().line >= 1 && e.pos().col >= 1, "{e}");
        }
        other => panic!("expected a syntax error, got {other:?}"),
    }
}

#[test]
fn a_query_nested_past_the_limits_is_refused_with_its_position() {
    let deep = 600;
    let nested = |open: &str, inner: &str, close: &str| {
        format!(
            "SELECT {}{inner}{} AS x FROM r",
            open.repeat(deep),
            close.repeat(deep)
        )
    };
    for sql in [
        nested("(", "v", ")"),
        nested("ABS(", "v", ")"),
        nested("CASE WHEN v > 0 THEN ", "1", " END"),
    ] {
        refused(sql, "nests deeper than 256 levels");
    }
    for sql in [
        format!(
            "SELECT v FROM r WHERE {}",
            vec!["v = 1"; 3_000].join(" OR ")
        ),
        format!("SELECT {} AS x FROM r", vec!["v"; 3_000].join(" + ")),
        format!("SELECT v FROM r WHERE {}v > 0", "NOT ".repeat(3_000)),
    ] {
        refused(sql, "more than 1000 operators deep");
    }
    // Parentheses in strings, quoted names and comments do not count.
    let quoted = format!(
        "SELECT '{}' AS s, [{}] AS n FROM r -- {}\n/* {} */",
        "(".repeat(deep),
        "(".repeat(deep),
        "(".repeat(deep),
        "(".repeat(deep)
    );
    on_small_stack(move || SqlQuery::parse(&quoted).map(|_| ())).expect("parses");
}

#[test]
fn a_query_at_the_limits_runs_on_a_small_stack() {
    // A chain as long as the depth allows, inside parentheses as deep as allowed.
    let terms = MAX_DEPTH - MAX_NESTING - 2;
    let chain = vec!["v"; terms].join(" + ");
    let nest = MAX_NESTING - 1;
    let text = format!(
        "SELECT {}{chain}{} AS x FROM r",
        "(".repeat(nest),
        ")".repeat(nest)
    );
    let out = on_small_stack(move || {
        run(
            &text,
            &[("r", ended(vec![reading(1.0, "a", 2), reading(2.0, "b", 3)]))],
        )
    });
    let got: Vec<Row> = events(&out["output"]).into_iter().map(|e| e.2).collect();
    let x = |v: i64| Row::new().with("x", Value::Int(v * terms as i64));
    assert_eq!(got, vec![x(2), x(3)]);
}

/// What reads a whole query besides its build (the inputs it reads, its logical plan and
/// the plan's text, as `explain` prints it) has room on a small stack for a query at the
/// limits: a `WHERE` chain and a select list as deep as allowed, over a join.
#[test]
fn the_plan_of_a_query_at_the_limits_is_made_and_written_on_a_small_stack() {
    // (`r.v` counts two levels: the field of the source.)
    let terms = (MAX_DEPTH - MAX_NESTING) / 2 - 4;
    let nest = MAX_NESTING - 1;
    let chain = vec!["r.v = 1"; terms - 2].join(" OR ");
    let sum = vec!["r.v"; terms].join(" + ");
    let text = format!(
        "SELECT {}{sum}{} AS x FROM r JOIN k ON r.d = k.d WHERE {}{chain}{} AND k.m > 0",
        "(".repeat(nest),
        ")".repeat(nest),
        "(".repeat(nest),
        ")".repeat(nest)
    );
    let (reference, shown) = on_small_stack(move || {
        let q = SqlQuery::parse(&text).expect("parses");
        let uses = q.inputs();
        let shown = q.plan(&[]).expect("plans").to_string();
        (uses[1].reference_of.clone(), shown)
    });
    assert_eq!(reference.as_deref(), Some("r"));
    assert!(
        shown.contains("filter k.m > 0 (pushed down)"),
        "{}",
        &shown[..200]
    );
}
