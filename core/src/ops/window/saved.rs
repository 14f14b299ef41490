//! [`HoppingWindow`]'s state in a snapshot: its windows (the cached current and previous ones
//! with the others), kept members, open start edges, drops, CTI, held results and lateness.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::late::Late;
use super::open::OpenAt;
use super::{HoppingWindow, Span};
use crate::ops::groups::Groups;
use crate::ops::state::{self, StateError};
use crate::ops::{Aggregate, DropLog, Key, Payload, ReleaseBuffer};
use crate::time::Time;

const NAME: &str = "hopping window";

/// The state as read back.
type Saved<K, S, P, O> = (
    Vec<(i64, Groups<K, S>)>,
    Vec<Span<K, P>>,
    Vec<(Time, OpenAt<Span<K, P>>)>,
    usize,
    DropLog,
    (Time, i64),
    ReleaseBuffer<O>,
    Option<Late<K, O>>,
);

impl<P, K, A, O, KF, MK> HoppingWindow<P, K, A, O, KF, MK>
where
    P: Payload,
    K: Key,
    A: Aggregate<P>,
    A::State: Serialize + DeserializeOwned,
    O: Payload,
{
    pub(super) fn save(&self, out: &mut Vec<u8>) -> Result<(), StateError> {
        let mut windows: Vec<(i64, &Groups<K, A::State>)> =
            self.windows.iter().map(|(n, g)| (*n, g)).collect();
        for c in [&self.current, &self.previous].into_iter().flatten() {
            windows.push((c.n, &c.groups));
        }
        windows.sort_by_key(|w| w.0);
        let open: Vec<(&Time, &OpenAt<Span<K, P>>)> = self.open.iter().collect();
        let state = (
            windows,
            &self.spans,
            open,
            self.open_count,
            &self.drops,
            (self.cti, self.first_open),
            &self.held,
            &self.late,
        );
        state::write(NAME, &state, out)
    }

    pub(super) fn restore(&mut self, bytes: &[u8]) -> Result<(), StateError> {
        let (windows, spans, open, open_count, drops, (cti, first_open), held, late): Saved<
            K,
            A::State,
            P,
            O,
        > = state::read(NAME, bytes)?;
        if late.is_some() != self.late.is_some() {
            return Err(StateError::Mismatch(
                "a window with allowed lateness saved, one without restored, or the reverse"
                    .to_owned(),
            ));
        }
        let count = windows.len();
        self.windows = windows.into_iter().collect::<BTreeMap<_, _>>();
        if self.windows.len() != count {
            return Err(StateError::Unreadable {
                operator: NAME,
                message: "a window saved twice".to_owned(),
            });
        }
        (self.current, self.previous) = (None, None);
        self.spans = spans;
        self.open = open.into_iter().collect();
        self.open_count = open_count;
        self.drops = drops;
        (self.cti, self.first_open) = (cti, first_open);
        self.held = held;
        self.late = late;
        Ok(())
    }
}
