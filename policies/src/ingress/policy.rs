//! The violation policy as one pure function: the table of what `Drop` and `Adjust` do to each
//! kind of event that breaks the current CTI `a` (docs/semantics.md, section 3, and
//! [`AdvanceTimePolicy`]'s doc). Nothing else in the ingress decides it.
//!
//! | item | no policy | `Drop` | `Adjust` |
//! |---|---|---|---|
//! | `P(t)`, `t < a` | rejected | dropped | dropped (a point cannot overlap `a`); `AdjustPoints`: `P(a)` (at `a = +inf`: dropped) |
//! | `I(s,e)`, `s < a < e` | rejected | dropped | `I(a,e)` |
//! | `I(s,e)`, `e <= a` | rejected | dropped | dropped |
//! | `S(s)`, `s < a` | rejected | dropped (and later its end edge) | `S(a)` (at `a = +inf`: dropped) |
//! | `E(s,e)` whose start edge was dropped | dropped | dropped | dropped |
//! | `E(s,e)`, `e < a` | rejected | dropped (the start edge dangles) | `E(s',a)`, `s'` the start as accepted (at `a = +inf`: dropped, the start edge dangles) |
//! | `E(s,e)` left with `end <= start` (by the clamp or its start's adjustment) | — | — | both edges removed |
//! | `E(s,e)` whose start edge was adjusted to `s'` | — | `E(s',e)` | `E(s',e)` |

use punctual_core::{EventKind, Time};

use crate::settings::AdvanceTimePolicy;

/// What became of the start edge an end edge closes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum StartEdge {
    /// Accepted, at this start (after any adjustment); still open.
    Open(Time),
    /// Accepted at this start, but an earlier end edge of it was dropped: it dangles, and a
    /// later valid end edge may still close it.
    Dangling(Time),
    /// Dropped by the policy.
    Dropped,
}

/// The policy's ruling on one valid event.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Ruling {
    /// Accepted as this kind; `adjusted` if that is not the kind it came as.
    Accept {
        /// The event as accepted.
        kind: EventKind,
        /// Whether the policy (or a rewritten start edge) changed it.
        adjusted: bool,
    },
    /// Dropped (reason `late`).
    Drop,
    /// An end edge that leaves nothing of its edge: it and its start edge (still buffered) are
    /// both removed, each counted as dropped.
    RemoveBoth,
    /// It breaks the CTI and the stream has no policy: rejected.
    Reject,
}

/// The table (see the module doc): what `policy` makes of `kind` at application time `a`.
/// `start_edge` is what became of the start edge of an end edge (`None` for other kinds).
pub(crate) fn rule(
    kind: EventKind,
    start_edge: Option<StartEdge>,
    a: Time,
    policy: Option<AdvanceTimePolicy>,
) -> Ruling {
    use AdvanceTimePolicy::{Adjust, AdjustPoints, Drop};
    let accept = |k: EventKind| Ruling::Accept {
        kind: k,
        adjusted: k != kind,
    };
    if let EventKind::EndEdge { end, .. } = kind {
        let accepted_start = match start_edge {
            Some(StartEdge::Open(s) | StartEdge::Dangling(s)) => s,
            Some(StartEdge::Dropped) | None => return Ruling::Drop,
        };
        let end = match (end < a, policy) {
            (false, _) => end,
            (true, None) => return Ruling::Reject,
            (true, Some(Drop)) => return Ruling::Drop,
            // After CTI(+inf) its start edge went out open-ended: an end at +inf would change
            // nothing and never be released. It is late.
            (true, Some(Adjust | AdjustPoints)) if a == Time::INF => return Ruling::Drop,
            (true, Some(Adjust | AdjustPoints)) => a,
        };
        if end <= accepted_start {
            return Ruling::RemoveBoth;
        }
        return accept(EventKind::EndEdge {
            start: accepted_start,
            end,
        });
    }
    if kind.start() >= a {
        return accept(kind);
    }
    match (policy, kind) {
        (None, _) => Ruling::Reject,
        (Some(Adjust | AdjustPoints), EventKind::Interval { end, .. }) if end > a => {
            accept(EventKind::Interval { start: a, end })
        }
        // At CTI(+inf) nothing is left of an edge or a point: it would start at infinity.
        (Some(Adjust | AdjustPoints), EventKind::StartEdge(_)) if a < Time::INF => {
            accept(EventKind::StartEdge(a))
        }
        (Some(AdjustPoints), EventKind::Point(_)) if a < Time::INF => accept(EventKind::Point(a)),
        _ => Ruling::Drop,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every row of the table.
    #[test]
    fn the_table() {
        let t = Time::from_ticks;
        let (drop, adjust) = (
            Some(AdvanceTimePolicy::Drop),
            Some(AdvanceTimePolicy::Adjust),
        );
        let a = t(10);
        let point = EventKind::Point(t(5));
        let straddling = EventKind::Interval {
            start: t(5),
            end: t(15),
        };
        let over = EventKind::Interval {
            start: t(5),
            end: t(10),
        };
        let start = EventKind::StartEdge(t(5));
        let late_end = EventKind::EndEdge {
            start: t(5),
            end: t(8),
        };
        let end = EventKind::EndEdge {
            start: t(5),
            end: t(12),
        };
        let fine = |k| Ruling::Accept {
            kind: k,
            adjusted: false,
        };
        let changed = |k| Ruling::Accept {
            kind: k,
            adjusted: true,
        };
        let open = Some(StartEdge::Open(t(5)));
        for kind in [point, straddling, over, start] {
            assert_eq!(rule(kind, None, a, None), Ruling::Reject);
            assert_eq!(rule(kind, None, a, drop), Ruling::Drop);
            assert_eq!(rule(kind, None, t(5), None), fine(kind), "not a violation");
        }
        assert_eq!(rule(point, None, a, adjust), Ruling::Drop);
        // Stream Analytics' adjust moves a late point to the CTI, and does to the other kinds
        // what Adjust does.
        let points = Some(AdvanceTimePolicy::AdjustPoints);
        assert_eq!(rule(point, None, a, points), changed(EventKind::Point(a)));
        assert_eq!(rule(point, None, Time::INF, points), Ruling::Drop);
        for kind in [straddling, over, start] {
            assert_eq!(rule(kind, None, a, points), rule(kind, None, a, adjust));
        }
        assert_eq!(
            rule(late_end, open, a, points),
            rule(late_end, open, a, adjust)
        );
        let adjusted = EventKind::Interval {
            start: a,
            end: t(15),
        };
        assert_eq!(rule(straddling, None, a, adjust), changed(adjusted));
        assert_eq!(rule(over, None, a, adjust), Ruling::Drop);
        assert_eq!(
            rule(start, None, a, adjust),
            changed(EventKind::StartEdge(a))
        );
        assert_eq!(rule(start, None, Time::INF, adjust), Ruling::Drop);
        for policy in [None, drop, adjust] {
            let dropped = Some(StartEdge::Dropped);
            assert_eq!(rule(end, dropped, a, policy), Ruling::Drop);
            assert_eq!(rule(end, open, a, policy), fine(end));
        }
        assert_eq!(rule(late_end, open, a, None), Ruling::Reject);
        assert_eq!(rule(late_end, open, a, drop), Ruling::Drop);
        let clamped = EventKind::EndEdge {
            start: t(5),
            end: a,
        };
        assert_eq!(rule(late_end, open, a, adjust), changed(clamped));
        // After the final CTI an end edge is late, whatever the policy.
        assert_eq!(rule(late_end, open, Time::INF, adjust), Ruling::Drop);
        let moved = Some(StartEdge::Dangling(t(9)));
        let rekeyed = EventKind::EndEdge {
            start: t(9),
            end: t(12),
        };
        assert_eq!(rule(end, moved, a, drop), changed(rekeyed));
        assert_eq!(
            rule(late_end, Some(StartEdge::Open(a)), a, adjust),
            Ruling::RemoveBoth
        );
    }
}
