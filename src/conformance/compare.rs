//! Comparing output with `expected.jsonl`: the output is cut into segments at its CTIs; the CTI
//! sequence must match exactly and each segment's events match as a multiset.

use std::fmt;

use punctual_adapters::line::item_to_json;
use punctual_core::{Event, StreamItem, Time};
use punctual_rows::Row;

use super::case::show_time;

/// One difference between expected and actual output.
#[derive(Debug, Clone, PartialEq)]
pub enum Mismatch {
    /// The CTI sequences differ.
    Ctis {
        /// Expected CTIs.
        expected: Vec<Time>,
        /// Actual CTIs.
        actual: Vec<Time>,
    },
    /// A segment's events differ.
    Segment {
        /// Which segment, described ("before CTI 5", "after the last CTI", "all events").
        segment: String,
        /// Expected events missing from the output.
        missing: Vec<String>,
        /// Output events that were not expected.
        unexpected: Vec<String>,
    },
    /// The output breaks its own CTIs: this item comes after CTI `cti` (a CTI not above it,
    /// or an event whose sync time is below it).
    Invalid {
        /// The item.
        item: String,
        /// The CTI before it.
        cti: Time,
    },
    /// A counter differs.
    Counter {
        /// The stream.
        stream: String,
        /// The counter's name.
        counter: String,
        /// Expected value.
        expected: u64,
        /// Actual value (`None`: no such counter).
        actual: Option<u64>,
    },
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |ts: &[Time]| {
            ts.iter()
                .map(|t| show_time(*t))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            Mismatch::Ctis { expected, actual } => write!(
                f,
                "CTIs differ:\n    expected [{}]\n    actual   [{}]",
                list(expected),
                list(actual)
            ),
            Mismatch::Segment {
                segment,
                missing,
                unexpected,
            } => {
                write!(f, "events {segment} differ:")?;
                for m in missing {
                    write!(f, "\n    - {m}")?;
                }
                for u in unexpected {
                    write!(f, "\n    + {u}")?;
                }
                Ok(())
            }
            Mismatch::Invalid { item, cti } => write!(
                f,
                "the output breaks its CTIs: {item} after CTI {}",
                show_time(*cti)
            ),
            Mismatch::Counter {
                stream,
                counter,
                expected,
                actual,
            } => match actual {
                Some(a) => write!(
                    f,
                    "counter {stream}.{counter}: expected {expected}, actual {a}"
                ),
                None => write!(
                    f,
                    "counter {stream}.{counter}: expected {expected}, but there is no such counter"
                ),
            },
        }
    }
}

type Segment<'a> = Vec<&'a Event<Row>>;

/// Splits items into the segments before each CTI, plus the trailing one; and the CTIs.
fn segments(items: &[StreamItem<Row>]) -> (Vec<Segment<'_>>, Vec<Time>) {
    let mut segs = vec![Vec::new()];
    let mut ctis = Vec::new();
    for item in items {
        match item {
            StreamItem::Insert(e) => segs.last_mut().map(|s| s.push(e)).unwrap_or(()),
            StreamItem::Cti(t) => {
                ctis.push(*t);
                segs.push(Vec::new());
            }
        }
    }
    (segs, ctis)
}

fn show(e: &Event<Row>) -> String {
    item_to_json(StreamItem::Insert(e.as_ref())).to_string()
}

/// Multiset difference: expected events not matched, actual events not matched.
fn diff_multiset(expected: &[&Event<Row>], actual: &[&Event<Row>]) -> (Vec<String>, Vec<String>) {
    let mut used = vec![false; actual.len()];
    let mut missing = Vec::new();
    for e in expected {
        let e_kind = e.kind.encode();
        match (0..actual.len()).find(|&i| {
            !used[i] && actual[i].kind.encode() == e_kind && actual[i].payload == e.payload
        }) {
            Some(i) => used[i] = true,
            None => missing.push(show(e)),
        }
    }
    let unexpected = actual
        .iter()
        .zip(&used)
        .filter(|(_, u)| !**u)
        .map(|(a, _)| show(a))
        .collect();
    (missing, unexpected)
}

/// How [`compare`] compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    /// The CTIs exactly, the events between two CTIs as a multiset ([`Compare::Exact`]).
    ///
    /// [`Compare::Exact`]: super::Compare::Exact
    Segments,
    /// The events as a multiset, the last CTI exactly, and a valid stream: CTIs that go up and
    /// no event after a CTI above its sync time (a run on several workers).
    Released,
    /// The events as a multiset ([`Compare::Events`]).
    ///
    /// [`Compare::Events`]: super::Compare::Events
    Events,
}

pub(super) fn compare(
    mode: Mode,
    expected: &[StreamItem<Row>],
    actual: &[StreamItem<Row>],
) -> Vec<Mismatch> {
    let (exp_segs, exp_ctis) = segments(expected);
    let (act_segs, act_ctis) = segments(actual);
    let mut problems = Vec::new();
    let all_events = |problems: &mut Vec<Mismatch>| {
        let all_e: Vec<_> = exp_segs.concat();
        let all_a: Vec<_> = act_segs.concat();
        let (missing, unexpected) = diff_multiset(&all_e, &all_a);
        if !missing.is_empty() || !unexpected.is_empty() {
            problems.push(Mismatch::Segment {
                segment: "(all events)".into(),
                missing,
                unexpected,
            });
        }
    };
    match mode {
        Mode::Events => all_events(&mut problems),
        Mode::Released => {
            all_events(&mut problems);
            if exp_ctis.last() != act_ctis.last() {
                problems.push(Mismatch::Ctis {
                    expected: exp_ctis.last().copied().into_iter().collect(),
                    actual: act_ctis.last().copied().into_iter().collect(),
                });
            }
            problems.extend(invalid(actual));
        }
        Mode::Segments => {
            if exp_ctis != act_ctis {
                problems.push(Mismatch::Ctis {
                    expected: exp_ctis.clone(),
                    actual: act_ctis,
                });
            }
            let empty = Vec::new();
            for k in 0..exp_segs.len().max(act_segs.len()) {
                let e = exp_segs.get(k).unwrap_or(&empty);
                let a = act_segs.get(k).unwrap_or(&empty);
                let (missing, unexpected) = diff_multiset(e, a);
                if !missing.is_empty() || !unexpected.is_empty() {
                    let segment = match exp_ctis.get(k) {
                        Some(t) => format!("before CTI {}", show_time(*t)),
                        None => "after the last CTI".to_owned(),
                    };
                    problems.push(Mismatch::Segment {
                        segment,
                        missing,
                        unexpected,
                    });
                }
            }
        }
    }
    problems
}

/// Where the output breaks its own CTIs: a CTI that does not go up, an event after a CTI above
/// its sync time (an end edge's end, every other event's start).
fn invalid(actual: &[StreamItem<Row>]) -> Option<Mismatch> {
    let mut last: Option<Time> = None;
    for item in actual {
        match item {
            StreamItem::Cti(t) if last.is_some_and(|l| *t <= l) => {
                return Some(Mismatch::Invalid {
                    item: format!("CTI {}", show_time(*t)),
                    cti: last.unwrap_or(Time::NEG_INF),
                });
            }
            StreamItem::Cti(t) => last = Some(*t),
            StreamItem::Insert(e) if last.is_some_and(|l| e.kind.sync_time() < l) => {
                return Some(Mismatch::Invalid {
                    item: show(e),
                    cti: last.unwrap_or(Time::NEG_INF),
                });
            }
            StreamItem::Insert(_) => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(t: i64, v: i64) -> StreamItem<Row> {
        StreamItem::point(Time::from_ticks(t), Row::new().with("v", v))
    }
    fn cti(t: i64) -> StreamItem<Row> {
        StreamItem::Cti(Time::from_ticks(t))
    }

    #[test]
    fn order_within_a_segment_is_free_but_not_across_ctis() {
        let exp = vec![p(1, 1), p(2, 2), cti(3), p(4, 4)];
        assert!(compare(Mode::Segments, &exp, &[p(2, 2), p(1, 1), cti(3), p(4, 4)]).is_empty());
        let moved = compare(Mode::Segments, &exp, &[p(1, 1), cti(3), p(2, 2), p(4, 4)]);
        assert_eq!(moved.len(), 2, "{moved:?}");
        assert!(compare(Mode::Events, &exp, &[p(4, 4), p(1, 1), cti(9), p(2, 2)]).is_empty());
        let dup = compare(Mode::Segments, &exp, &[p(1, 1), p(1, 1), cti(3), p(4, 4)]);
        assert!(
            matches!(&dup[0], Mismatch::Segment { missing, unexpected, .. } if missing.len() == 1 && unexpected.len() == 1)
        );
    }

    /// On several workers: the events, the last CTI and a valid stream; the CTIs in between
    /// and where the events fall between them are free.
    #[test]
    fn released_compares_the_events_the_last_cti_and_validity() {
        let exp = vec![p(1, 1), cti(3), p(4, 4), cti(9)];
        let released = |actual: &[StreamItem<Row>]| compare(Mode::Released, &exp, actual);
        assert!(released(&[p(1, 1), cti(2), p(4, 4), cti(9)]).is_empty());
        assert!(released(&[p(4, 4), p(1, 1), cti(9)]).is_empty());
        assert!(matches!(
            released(&[p(1, 1), cti(9)])[..],
            [Mismatch::Segment { .. }]
        ));
        assert!(matches!(
            released(&[p(1, 1), p(4, 4), cti(8)])[..],
            [Mismatch::Ctis { .. }]
        ));
        let early = released(&[cti(3), p(1, 1), p(4, 4), cti(9)]);
        assert!(matches!(early[..], [Mismatch::Invalid { .. }]), "{early:?}");
        assert!(early[0].to_string().contains("after CTI 3"), "{}", early[0]);
        assert!(matches!(
            released(&[p(1, 1), cti(3), cti(3), p(4, 4), cti(9)])[..],
            [Mismatch::Invalid { .. }]
        ));
    }

    #[test]
    fn cti_mismatch_is_reported() {
        let m = compare(Mode::Segments, &[cti(3)], &[cti(4)]);
        assert_eq!(m.len(), 1);
        assert!(m[0].to_string().contains("expected [3]"));
    }
}
