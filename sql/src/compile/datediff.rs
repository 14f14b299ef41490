//! A join's `DATEDIFF(unit, a, b) BETWEEN lo AND hi` as a join of lifetimes.

use super::*;

/// Where a `DATEDIFF` of a join finds its sources: all of them (`combined`), how many are on
/// the left (`count`: the source joined is the last), and which of the left's are at the
/// time of its rows (`timed`).
pub(super) struct DateDiffSides<'a> {
    pub(super) combined: &'a Scope,
    pub(super) count: usize,
    pub(super) timed: &'a [String],
}

/// A join on `DATEDIFF(unit, a, b) BETWEEN lo AND hi` as a join of lifetimes: `a`'s events
/// made to last from `a + lo` to `a + hi`, `b`'s points. Also what is added to a left event's
/// last tick to give the latest time a partner could come (for `LEFT OUTER JOIN`): `0` when
/// the left side is `a`, `-lo` when it is `b`; and whether the rows are at the right's time
/// (its points'). In a later join, the left's source it names must be one whose time the
/// joined rows have ([`Built::timed`]).
#[allow(
    clippy::type_complexity,
    reason = "the two sides made, and two facts of the join"
)]
pub(super) fn datediff(
    dd: &(TimeSpan, Ident, Ident, i64, i64, Pos),
    sides: &DateDiffSides<'_>,
    mut left_stream: RowStream,
    mut right_stream: Stream<Row>,
) -> Result<(RowStream, Stream<Row>, TimeSpan, bool), SqlError> {
    let (unit, a, b, lo, hi, at) = dd;
    let combined = sides.combined;
    if lo > hi {
        return Err(err(*at, format!("BETWEEN {lo} AND {hi} matches nothing")));
    }
    let side = |id: &Ident| {
        combined
            .sources
            .iter()
            .position(|(r, _)| r.eq_ignore_ascii_case(&id.name))
            .ok_or_else(|| {
                err(
                    id.pos,
                    format!("`{}` is not a source of this join", id.name),
                )
            })
    };
    let (ia, ib) = (side(a)?, side(b)?);
    if (ia < sides.count) == (ib < sides.count) {
        return Err(err(
            b.pos,
            "DATEDIFF compares the source joined with one joined before it",
        ));
    }
    let earlier = if ia < sides.count { a } else { b };
    if sides.count > 1
        && !sides
            .timed
            .iter()
            .any(|t| t.eq_ignore_ascii_case(&earlier.name))
    {
        return Err(err(
            earlier.pos,
            format!(
                "DATEDIFF in a join of more than two sources names `{}`, whose time the rows joined so far do not have (they are at the time of {}): name one of those, or join at one time (BETWEEN 0 AND 0) before",
                earlier.name,
                if sides.timed.is_empty() {
                    "no one source".to_owned()
                } else {
                    sides.timed.join(", ")
                }
            ),
        ));
    }
    let span = |n: i64| {
        n.checked_mul(unit.ticks())
            .map(TimeSpan::from_ticks)
            .ok_or_else(|| err(*at, "the time difference is too large"))
    };
    // b's time minus a's within [lo, hi]: a's events last from a + lo to a + hi
    // (inclusive), b's are points; they overlap exactly when b is in range.
    let shift = span(*lo)?;
    let width = span(hi.checked_sub(*lo).unwrap_or(i64::MAX))?;
    let duration = TimeSpan::from_ticks(width.ticks().saturating_add(1));
    if ia < sides.count {
        left_stream = left_stream.alter_lifetime(shift, duration);
        right_stream = right_stream.to_point_events();
        Ok((left_stream, right_stream, TimeSpan::ZERO, true))
    } else {
        right_stream = right_stream.alter_lifetime(shift, duration);
        left_stream = left_stream.to_point_events();
        let stamp = shift.ticks().checked_neg().map(TimeSpan::from_ticks);
        Ok((
            left_stream,
            right_stream,
            stamp.unwrap_or(TimeSpan::MAX),
            false,
        ))
    }
}
