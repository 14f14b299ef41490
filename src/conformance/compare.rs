//! Comparing output with `expected.jsonl`: the output is cut into segments at its CTIs; the CTI
//! sequence must match exactly and each segment's events match as a multiset.

use std::fmt;

use punctual_adapters::line::item_to_json;
use punctual_core::{Event, StreamItem, Time};
use punctual_rows::Row;

use super::case::{show_time, Compare};

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

pub(super) fn compare(
    mode: Compare,
    expected: &[StreamItem<Row>],
    actual: &[StreamItem<Row>],
) -> Vec<Mismatch> {
    let (exp_segs, exp_ctis) = segments(expected);
    let (act_segs, act_ctis) = segments(actual);
    let mut problems = Vec::new();
    match mode {
        Compare::Events => {
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
        }
        Compare::Exact => {
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
        assert!(compare(Compare::Exact, &exp, &[p(2, 2), p(1, 1), cti(3), p(4, 4)]).is_empty());
        let moved = compare(Compare::Exact, &exp, &[p(1, 1), cti(3), p(2, 2), p(4, 4)]);
        assert_eq!(moved.len(), 2, "{moved:?}");
        assert!(compare(Compare::Events, &exp, &[p(4, 4), p(1, 1), cti(9), p(2, 2)]).is_empty());
        let dup = compare(Compare::Exact, &exp, &[p(1, 1), p(1, 1), cti(3), p(4, 4)]);
        assert!(
            matches!(&dup[0], Mismatch::Segment { missing, unexpected, .. } if missing.len() == 1 && unexpected.len() == 1)
        );
    }

    #[test]
    fn cti_mismatch_is_reported() {
        let m = compare(Compare::Exact, &[cti(3)], &[cti(4)]);
        assert_eq!(m.len(), 1);
        assert!(m[0].to_string().contains("expected [3]"));
    }
}
