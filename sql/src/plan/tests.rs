use super::rewrite::{fuse_joins, push_down_filters, reference_data};
use super::*;

fn plan_of(sql: &str) -> LogicalPlan {
    let q = crate::SqlQuery::parse(sql).unwrap_or_else(|e| panic!("{}", e.show(sql)));
    LogicalPlan::of(q.script()).unwrap_or_else(|e| panic!("{}", e.show(sql)))
}

/// The one statement's node, as written.
fn node_of(sql: &str) -> Node {
    plan_of(sql).statements.remove(0).node
}

fn shown(node: Node) -> String {
    LogicalPlan {
        statements: vec![Statement {
            name: Ident {
                name: "output".to_owned(),
                pos: Pos::default(),
            },
            output: true,
            node,
        }],
    }
    .to_string()
}

fn none(_: &str) -> Option<Vec<String>> {
    None
}

#[test]
fn a_plan_as_written_joins_then_filters_then_selects() {
    let node = node_of(
        "SELECT r.v FROM readings r JOIN limits l ON r.d = l.d JOIN names n ON r.d = n.d
         WHERE l.max > 1",
    );
    assert_eq!(
        shown(node),
        "output `output`
  select r.v
    filter l.max > 1
      join on r.d = n.d
        join on r.d = l.d
          input `readings` AS r
          input `limits` AS l
        input `names` AS n
"
    );
}

#[test]
fn conditions_over_one_side_of_a_join_move_onto_that_side() {
    let node = node_of(
        "SELECT r.v FROM readings r JOIN limits l ON r.d = l.d
         WHERE l.max > 1 AND r.v > 2 AND r.v > l.max AND v > 3 AND r.v + l.max > 0",
    );
    // `l.max > 1` onto the limits, `r.v > 2` onto the readings; a condition over both, and
    // one whose field does not name its source, stay above the join.
    assert_eq!(
        shown(push_down_filters(node)),
        "output `output`
  select r.v
    filter ((r.v > l.max) AND (v > 3)) AND ((r.v + l.max) > 0)
      join on r.d = l.d
        filter r.v > 2 (pushed down)
          input `readings` AS r
        filter l.max > 1 (pushed down)
          input `limits` AS l
"
    );
}

#[test]
fn a_condition_over_the_first_sources_of_three_goes_below_the_outer_join() {
    let node = node_of(
        "SELECT r.v FROM readings r JOIN limits l ON r.d = l.d JOIN names n ON r.d = n.d
         WHERE r.v > l.max AND n.name <> 'x'",
    );
    let text = shown(push_down_filters(node));
    assert_eq!(
        text,
        "output `output`
  select r.v
    join on r.d = n.d
      filter r.v > l.max (pushed down)
        join on r.d = l.d
          input `readings` AS r
          input `limits` AS l
      filter n.name <> 'x' (pushed down)
        input `names` AS n
"
    );
}

#[test]
fn a_filter_that_is_not_over_a_join_stays() {
    let node = node_of("SELECT v FROM readings WHERE v > 1");
    assert_eq!(push_down_filters(node.clone()), node);
}

#[test]
fn a_join_of_two_inputs_without_datediff_reads_reference_data() {
    let reference = |sql: &str| {
        let mut refs = Vec::new();
        fn walk(n: &Node, refs: &mut Vec<bool>) {
            match n {
                Node::Join {
                    left, reference, ..
                } => {
                    walk(left, refs);
                    refs.push(*reference);
                }
                Node::Filter { input, .. }
                | Node::Project { input, .. }
                | Node::Analytic { input, .. }
                | Node::Group { input, .. } => walk(input, refs),
                _ => {}
            }
        }
        for s in plan_of(sql).statements {
            walk(&reference_data(s.node), &mut refs);
        }
        refs
    };
    assert_eq!(
        reference("SELECT * FROM r JOIN l ON r.d = l.d"),
        [true],
        "two inputs"
    );
    assert_eq!(
        reference("SELECT * FROM r JOIN l ON r.d = l.d AND DATEDIFF(second, r, l) BETWEEN 0 AND 5"),
        [false],
        "bounded in time"
    );
    assert_eq!(
        reference("WITH s AS (SELECT * FROM r) SELECT * FROM s JOIN l ON s.d = l.d"),
        [false],
        "a step on the left"
    );
    assert_eq!(
        reference("SELECT * FROM r JOIN l ON r.d = l.d JOIN m ON r.d = m.d"),
        [true, true],
        "each of several"
    );
}

#[test]
fn a_plain_select_of_fields_over_a_join_is_fused_into_it() {
    let fused = |sql: &str| {
        let node = fuse_joins(push_down_filters(node_of(sql)), &none);
        shown(node)
    };
    assert_eq!(
        fused("SELECT r.v * l.max AS x FROM r JOIN l ON r.d = l.d WHERE r.v > l.max"),
        "output `output`
  fused into the join: columns r.v * l.max AS x where r.v > l.max
    join on r.d = l.d
      input `r`
      input `l`
"
    );
    // The time, a star, or a join of three: a join, then a select.
    for sql in [
        "SELECT r.v, System.Timestamp() AS t FROM r JOIN l ON r.d = l.d",
        "SELECT * FROM r JOIN l ON r.d = l.d",
        "SELECT r.v FROM r JOIN l ON r.d = l.d JOIN m ON r.d = m.d",
    ] {
        let text = fused(sql);
        assert!(!text.contains("fused"), "{sql}: {text}");
    }
}

#[test]
fn fusion_resolves_a_field_by_the_sources_fields() {
    let fields = |name: &str| match name {
        "r" => Some(vec!["d".to_owned(), "v".to_owned()]),
        "l" => Some(vec!["d".to_owned(), "max".to_owned()]),
        _ => None,
    };
    // `max` is only the limits' field: a field of a source, so the select fuses.
    let node = fuse_joins(
        node_of("SELECT r.v, max FROM r JOIN l ON r.d = l.d"),
        &fields,
    );
    assert!(matches!(node, Node::FusedJoin { .. }), "{node:?}");
}

#[test]
fn the_plan_after_every_rewrite_is_what_a_query_builds() {
    let q = crate::SqlQuery::parse(
        "WITH hot AS (SELECT r.d AS d, r.v AS v FROM r JOIN l ON r.d = l.d WHERE l.max < 5)
         SELECT d, COUNT(*) AS n INTO counts FROM hot GROUP BY d, TumblingWindow(second, 10)",
    )
    .unwrap();
    let text = q.plan(&[]).unwrap().to_string();
    assert_eq!(
        text,
        "step `hot`
  fused into the join: columns r.d AS d, r.v AS v
    join with reference data on r.d = l.d
      input `r`
      filter l.max < 5 (pushed down)
        input `l`
output `counts`
  group by d, TumblingWindow(10s): select d, COUNT(*) AS n
    step `hot`
"
    );
}

#[test]
fn a_session_window_is_shown_with_its_partition() {
    let q = crate::SqlQuery::parse(
        "SELECT d, COUNT(*) AS n FROM r
         GROUP BY d, SessionWindow(Timeout(second, 5), MaxDuration(minute, 1)) OVER (PARTITION BY d)",
    )
    .unwrap();
    let text = q.plan(&[]).unwrap().to_string();
    assert!(
        text.contains(
            "group by d, SessionWindow(5s, 1m) OVER (PARTITION BY d): select d, COUNT(*) AS n"
        ),
        "{text}"
    );
}
