//! Reference tables as users keep them: rows that are not events of their own but hold for a
//! while. A table without a time column holds for all time; a table of versions (a start
//! column, no end) holds each row until the next row with the same key.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use punctual_core::{Event, EventKind, StreamItem, Time};

/// How long each row of a CSV reference table is valid ([`super::CsvInputConfig::table`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Validity {
    /// The file has no time column: every row is valid for all time (an interval from the
    /// first finite time to the last), a static table.
    Always,
    /// Each row is valid from its start column until the next row with the same values in
    /// the `key` columns (a start edge, ended by the next version's start), the last one
    /// until further notice (an open start edge). The rows of one key come in time order; a
    /// row that starts no later than the version before it is malformed. The stream's shape
    /// is [`EventShape::Edge`](punctual_core::EventShape::Edge).
    UntilNext {
        /// The columns whose values name a row's key (the join's key, say).
        key: Vec<String>,
    },
}

/// The open version of each key of a table of versions: its start and payload, to end it
/// when the next version comes.
#[derive(Debug)]
pub(crate) struct Versions<P> {
    open: HashMap<Vec<String>, (Time, P)>,
}

impl<P> Default for Versions<P> {
    fn default() -> Self {
        Versions {
            open: HashMap::new(),
        }
    }
}

impl<P: Clone> Versions<P> {
    /// The items a new version of `key` starting at `start` makes: the previous version's end
    /// edge (if there is one), then its own start edge. A version that starts no later than
    /// the one before it is refused with the reason.
    pub(crate) fn next(
        &mut self,
        key: Vec<String>,
        start: Time,
        payload: P,
    ) -> Result<[Option<StreamItem<P>>; 2], String> {
        let ended = match self.open.get(&key) {
            Some((before, _)) if *before >= start => {
                return Err(format!(
                    "the version of key ({}) starting at {} is not after the one before it (starting at {}): a table of versions lists each key's rows in time order",
                    key.join(", "),
                    start.rfc3339(),
                    before.rfc3339()
                ));
            }
            _ => self.open.insert(key, (start, payload.clone())),
        };
        let end = ended.map(|(before, previous)| {
            StreamItem::Insert(Event {
                kind: EventKind::EndEdge {
                    start: before,
                    end: start,
                },
                payload: previous,
            })
        });
        let begin = StreamItem::Insert(Event {
            kind: EventKind::StartEdge(start),
            payload,
        });
        Ok([end, Some(begin)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_version_ends_the_one_before_it_of_its_key() {
        let t = Time::from_ticks;
        let key = |k: &str| vec![k.to_owned()];
        let mut v = Versions::default();
        let [end, start] = v.next(key("a"), t(1), 10).unwrap();
        assert_eq!(end, None);
        assert_eq!(start, Some(StreamItem::start_edge(t(1), 10)));
        // Another key: its own version.
        assert_eq!(v.next(key("b"), t(2), 20).unwrap()[0], None);
        let [end, start] = v.next(key("a"), t(5), 11).unwrap();
        assert_eq!(end, Some(StreamItem::end_edge(t(1), t(5), 10)));
        assert_eq!(start, Some(StreamItem::start_edge(t(5), 11)));
        let e = v.next(key("a"), t(5), 12).unwrap_err();
        assert!(e.contains("is not after the one before it"), "{e}");
    }
}
