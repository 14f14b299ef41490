//! Tests of [`Graph::split`](super::Graph::split): the merge, the scatter, the plan.

use super::*;
use crate::batch::Batch;
use crate::event::StreamItem;

fn items(b: &mut Batch<u32>) -> Vec<StreamItem<u32>> {
    let mut v = Vec::new();
    b.drain_items(|i| v.push(i));
    v
}

fn runs() -> Vec<(usize, Box<dyn AnyBatch>)> {
    let t = Time::from_ticks;
    let mut a = Batch::<u32>::new();
    a.push_point(t(12), 1); // released before its CTI, as a window releases
    a.push_cti(t(10));
    let mut b = Batch::<u32>::new();
    b.push_point(t(5), 2);
    b.push_cti(t(8));
    b.push_point(t(9), 3);
    b.push_cti(t(11));
    vec![(0, Box::new(a)), (1, Box::new(b))]
}

/// Merges [`runs`] into one batch (what no CTI has passed held in `pending`, if given): what
/// came out, each sender's latest CTI, the merged CTI, and whether the runs were emptied.
fn merged(
    pending: Option<&mut crate::ops::ReleaseBuffer<u32>>,
) -> (Vec<StreamItem<u32>>, Vec<Time>, Time, bool) {
    let mut runs = runs();
    let (mut latest, mut emitted) = (vec![Time::NEG_INF; 2], Time::NEG_INF);
    let mut out: Box<dyn AnyBatch> = Box::new(Batch::<u32>::new());
    let pending = pending.map(|p| p as &mut dyn std::any::Any);
    out.merge_from(&mut runs, &mut latest, &mut emitted, pending);
    let emptied = runs.iter().all(|(_, r)| r.is_empty());
    (items(typed::<u32>(&mut out)), latest, emitted, emptied)
}

/// On a sorted stream, merged events wait until a CTI passes them, and come out sorted;
/// the merged CTI is the one every sender has passed.
#[test]
fn a_merge_of_sorted_streams_releases_as_one_operator() {
    let t = Time::from_ticks;
    let mut pending = crate::ops::ReleaseBuffer::<u32>::new();
    let (got, latest, emitted, emptied) = merged(Some(&mut pending));
    assert_eq!(
        got,
        vec![
            StreamItem::point(t(5), 2),
            StreamItem::Cti(t(8)),
            StreamItem::point(t(9), 3),
            StreamItem::Cti(t(10)),
        ]
    );
    assert_eq!(emitted, t(10));
    assert_eq!(latest, vec![t(10), t(11)]);
    // What no CTI has passed yet waits for a later step.
    let mut rest = Batch::new();
    pending.release_into(Time::INF, &mut rest);
    assert_eq!(items(&mut rest), vec![StreamItem::point(t(12), 1)]);
    // The runs are emptied, their capacity kept for reuse.
    assert!(emptied);
}

/// On an unordered stream, every event goes on; each sender's events stay after the
/// CTIs it sent before them.
#[test]
fn a_merge_of_unordered_streams_keeps_every_event_after_its_ctis() {
    let t = Time::from_ticks;
    let (got, _, emitted, _) = merged(None);
    let position = |item: StreamItem<u32>| got.iter().position(|i| *i == item);
    assert_eq!(got.len(), 5);
    assert!(position(StreamItem::Cti(t(8))) < position(StreamItem::point(t(9), 3)));
    let mut cti = Time::NEG_INF;
    for item in &got {
        match item {
            StreamItem::Cti(c) => cti = *c,
            StreamItem::Insert(e) => assert!(e.kind.encode().0 >= cti, "{got:?}"),
        }
    }
    assert_eq!(emitted, t(10));
}

#[test]
fn scattering_sends_every_cti_to_every_worker() {
    let t = Time::from_ticks;
    let mut a: Box<dyn AnyBatch> = Box::new(Batch::<u32>::new());
    typed::<u32>(&mut a).push_point(t(1), 7);
    typed::<u32>(&mut a).push_cti(t(2));
    let mut parts: Vec<Box<dyn AnyBatch>> = (0..3).map(|_| a.new_empty()).collect();
    a.scatter_to(1, &mut parts);
    assert_eq!(
        items(typed::<u32>(&mut parts[1])),
        vec![StreamItem::point(t(1), 7), StreamItem::Cti(t(2))]
    );
    assert_eq!(
        items(typed::<u32>(&mut parts[0])),
        vec![StreamItem::Cti(t(2))]
    );
    assert!(a.is_empty());
}

/// Where each edge goes, by kind, and the stage that reads it.
fn plan(graph: &crate::ops::QueryGraph) -> Vec<(&'static str, usize)> {
    plan_with(graph, &[])
}

fn plan_with(graph: &crate::ops::QueryGraph, replicable: &[NodeId]) -> Vec<(&'static str, usize)> {
    let mut g = graph.take_graph();
    g.split(0, 2, &|_| true, replicable)
        .iter()
        .map(|e| {
            let kind = match e.to {
                EdgeEnd::Source(_) => "source",
                EdgeEnd::Port(..) => "port",
                EdgeEnd::Output(_) => "output",
            };
            (kind, e.to_stage)
        })
        .collect()
}

/// An input read through operators that keep payloads (union, filter) into a window per
/// key is placed by the window's key where it is read: the window runs in the first
/// stage, no edge leads into it. After an operator that changes payloads, the window's
/// input crosses workers again.
#[test]
fn inputs_are_placed_by_the_key_of_the_operator_they_lead_to() {
    use crate::ops::{Count, QueryGraph};
    use crate::Unordered;
    let graph = QueryGraph::new();
    let a = graph.source::<(u32, i64), Unordered>();
    let b = graph.source::<(u32, i64), Unordered>();
    let counts = a
        .union(&[&b.filter(|p| p.1 > 0)])
        .tumbling_window(crate::TimeSpan::from_ticks(10))
        .group_by(|p| p.0)
        .aggregate(Count);
    graph.keep_output(&counts);
    assert_eq!(
        plan(&graph),
        vec![("source", 1), ("source", 1), ("output", 2)]
    );

    let graph = QueryGraph::new();
    let a = graph.source::<(u32, i64), Unordered>();
    let counts = a
        .map(|p| (p.0 + 1, p.1))
        .tumbling_window(crate::TimeSpan::from_ticks(10))
        .group_by(|p| p.0)
        .aggregate(Count);
    graph.keep_output(&counts);
    assert_eq!(
        plan(&graph),
        vec![("source", 1), ("port", 2), ("output", 3)]
    );
}

/// Reference data that is the right input of a join (through a filter) goes to every
/// worker, and the join's left events stay where they are read: the join runs in the
/// first stage. Reference data read by anything else is not replicated.
#[test]
fn reference_data_is_replicated_to_a_join_s_right_input() {
    use crate::Ordered;
    // Where one event of each input goes, from worker 0 of 2, with the reference data
    // replicable or not.
    let events = |replicable: bool| {
        let graph = crate::ops::QueryGraph::new();
        let fast = graph.source::<(u32, i64), Ordered>();
        let other = graph.source::<(u32, i64), Ordered>();
        let reference = graph.source::<(u32, i64), Ordered>();
        let joined = fast.union(&[&other]).join_on(
            &reference.filter(|r| r.1 > 0),
            |p| p.0,
            |r| r.0,
            |p, r| p.1 + r.1,
        );
        graph.keep_output(&joined);
        let mut g = graph.take_graph();
        let replicable = if replicable {
            vec![reference.node()]
        } else {
            vec![]
        };
        let stages: Vec<usize> = g
            .split(0, 2, &|_| true, &replicable)
            .iter()
            .map(|e| e.to_stage)
            .collect();
        assert_eq!(stages, vec![1, 1, 1, 2], "the join runs in the first stage");
        for (node, key) in [
            (fast.node(), 1u32),
            (other.node(), 2),
            (reference.node(), 3),
        ] {
            let mut b = Batch::<(u32, i64)>::new();
            b.push_point(Time::from_ticks(1), (key, 5));
            g.feed(node, &mut b);
        }
        let mut to = Vec::new();
        g.take_injections(|_, parts| to.push(parts.iter().map(|p| p.events()).collect::<Vec<_>>()));
        to
    };
    // The reference event goes to both workers, the others stay here.
    assert_eq!(events(true), vec![vec![1, 0], vec![1, 0], vec![1, 1]]);
    // Not reference data: every input is placed by the join's keys.
    let by_key = |k: u32| {
        let w = ((u128::from(crate::ops::key_hash(&k)) * 2) >> 64) as usize;
        (0..2).map(|i| usize::from(i == w)).collect::<Vec<_>>()
    };
    assert_eq!(events(false), vec![by_key(1), by_key(2), by_key(3)]);
    // Reference data read by a window is not replicated: the window's input crosses.
    let graph = crate::ops::QueryGraph::new();
    let reference = graph.source::<(u32, i64), Ordered>();
    let sums = reference
        .map(|r| (r.0, r.1 * 2))
        .tumbling_window(crate::TimeSpan::from_ticks(5))
        .group_by(|r| r.0)
        .aggregate(crate::ops::Count);
    graph.keep_output(&sums);
    assert_eq!(
        plan_with(&graph, &[reference.node()]),
        vec![("source", 1), ("port", 2), ("output", 3)]
    );
}

/// Typed access for tests of the merge.
fn typed<P: 'static>(b: &mut Box<dyn AnyBatch>) -> &mut crate::batch::Batch<P> {
    crate::ops::graph::output::<P>(b.as_any_mut())
}
