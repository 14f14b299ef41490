//! A lane of many events drawn as counts: the plot's width cut into columns, one row per kind
//! of mark (released, output, adjusted, dropped, rejected), each column shaded by how many
//! events of that kind it holds, with the count in its tooltip. The picture's size then does
//! not grow with the events, and no label is drawn inside the plot (none crosses a CTI line).
//!
//! The counts are kept in a [`Tally`]: at most [`BUCKETS`] buckets of equal width over the
//! times seen, the width doubled (and neighbours merged) whenever the times would need more,
//! so a lane of any length is counted in a fixed amount of memory.

use std::fmt::Write;

use punctual_core::Time;

use super::{escape, Axis, Lane, Mark, LEFT, PAD, RIGHT, ROW, WIDTH};

/// Above this many events a lane is drawn as counts (up to it, one row per event).
pub const SUMMARY_ABOVE: usize = 40;
/// How many columns the plot is cut into.
const COLUMNS: usize = 80;
/// The most buckets a [`Tally`] keeps: far finer than the plot's columns.
pub const BUCKETS: usize = 1024;

/// The kinds of mark a summary counts: class, label.
const KINDS: [(&str, &str); 5] = [
    ("", "released"),
    ("output", "results"),
    ("adjusted", "adjusted"),
    ("dropped", "dropped"),
    ("rejected", "rejected"),
];

fn kind(mark: &Mark) -> usize {
    match mark {
        Mark::Plain => 0,
        Mark::Output => 1,
        Mark::Adjusted(_) => 2,
        Mark::Dropped => 3,
        Mark::Rejected => 4,
    }
}

/// Counts of a lane's events by kind of mark over time, in a fixed amount of memory whatever
/// the number of events: at most [`BUCKETS`] buckets of equal width (a power of two ticks),
/// the width doubled as the times seen spread, plus the events at the first or last finite
/// time (a static table's rows, valid for all time), counted apart.
///
/// ```
/// use punctual::core::Time;
/// use punctual::timeline::{Mark, Tally};
///
/// let mut tally = Tally::default();
/// for t in 0..1_000_000 {
///     tally.add(Time::from_ticks(t), &Mark::Plain);
/// }
/// tally.add(Time::from_ticks(5), &Mark::Dropped);
/// assert_eq!(tally.total(), 1_000_001);
/// assert_eq!(tally.range(), Some((0, 999_999)));
/// ```
#[derive(Clone, Debug, Default)]
pub struct Tally {
    /// The first bucket's start, in ticks: a multiple of the width.
    origin: i64,
    /// The buckets' width is `1 << shift` ticks.
    shift: u32,
    /// Counts per bucket and kind.
    buckets: Vec<[u64; KINDS.len()]>,
    /// Counts at the first and last finite times (and beyond), per kind.
    edges: [[u64; KINDS.len()]; 2],
    /// The earliest and latest time counted in the buckets.
    range: Option<(i64, i64)>,
    total: u64,
}

impl Tally {
    /// Counts one event at `t` drawn as `mark`.
    pub fn add(&mut self, t: Time, mark: &Mark) {
        self.total += 1;
        let k = kind(mark);
        if t <= Time::MIN_FINITE || t >= Time::MAX_FINITE {
            self.edges[usize::from(t >= Time::MAX_FINITE)][k] += 1;
            return;
        }
        let t = t.ticks();
        self.range = Some(match self.range {
            None => {
                self.origin = t;
                self.shift = 0;
                self.buckets = vec![[0; KINDS.len()]];
                (t, t)
            }
            Some((lo, hi)) => (lo.min(t), hi.max(t)),
        });
        let i = self.reach(t);
        self.buckets[i][k] += 1;
    }

    /// How many events were counted.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The earliest and latest finite time counted (the first and last finite times apart).
    pub fn range(&self) -> Option<(i64, i64)> {
        self.range
    }

    /// The bucket of `t`, the buckets grown (and widened while they would be too many) to
    /// cover it.
    fn reach(&mut self, t: i64) -> usize {
        loop {
            let width = 1i128 << self.shift;
            let start = i128::from(t).div_euclid(width) * width;
            let origin = i128::from(self.origin);
            let end = origin + width * self.buckets.len() as i128;
            let (from, to) = (start.min(origin), (start + width).max(end));
            let needed = ((to - from) / width) as usize;
            if needed <= BUCKETS {
                let before = ((origin - from) / width) as usize;
                if before > 0 {
                    self.buckets
                        .splice(0..0, std::iter::repeat_n([0; KINDS.len()], before));
                    // (`from` is a multiple of the width within i64's range: `t`'s bucket.)
                    self.origin = i64::try_from(from).unwrap_or(i64::MIN);
                }
                let after = needed - self.buckets.len();
                self.buckets
                    .extend(std::iter::repeat_n([0; KINDS.len()], after));
                return ((start - from) / width) as usize;
            }
            self.widen();
        }
    }

    /// Doubles the buckets' width, adding neighbours together.
    fn widen(&mut self) {
        let width = 1i128 << (self.shift + 1);
        let origin = i128::from(self.origin).div_euclid(width) * width;
        // The old buckets, each half of a new one: an odd start goes into the second half.
        let offset = usize::from(origin != i128::from(self.origin));
        let mut merged = vec![[0u64; KINDS.len()]; (self.buckets.len() + offset).div_ceil(2)];
        for (i, counts) in self.buckets.iter().enumerate() {
            for (sum, n) in merged[(i + offset) / 2].iter_mut().zip(counts) {
                *sum += n;
            }
        }
        self.buckets = merged;
        self.origin = i64::try_from(origin).unwrap_or(i64::MIN);
        self.shift += 1;
    }

    /// The counts per kind and column of the plot on `axis`: a bucket's counts shared among
    /// the columns it overlaps, in proportion (whole events, none lost: what the shares
    /// round away goes to the columns with the largest remainders).
    fn columns(&self, axis: &Axis) -> [[u64; COLUMNS]; KINDS.len()] {
        let mut counts = [[0; COLUMNS]; KINDS.len()];
        let plot = WIDTH - LEFT - RIGHT;
        // A time's place on the plot, in columns (fractional).
        let at = |t: i128| {
            let t = i64::try_from(t).unwrap_or(i64::MAX);
            let x = axis.x(Time::from_ticks(t)).clamp(LEFT, LEFT + plot);
            (x - LEFT) / plot * COLUMNS as f64
        };
        let width = 1i128 << self.shift;
        for (i, bucket) in self.buckets.iter().enumerate() {
            let start = i128::from(self.origin) + width * i as i128;
            let (from, to) = (at(start), at(start + width));
            for (k, &n) in bucket.iter().enumerate() {
                if n > 0 {
                    share(n, from, to, &mut counts[k]);
                }
            }
        }
        for (side, c) in [(0, 0), (1, COLUMNS - 1)] {
            for (k, &n) in self.edges[side].iter().enumerate() {
                counts[k][c] += n;
            }
        }
        counts
    }
}

/// Adds `n` events spread evenly over `[from, to)` (in columns) to `columns`, in whole events.
fn share(n: u64, from: f64, to: f64, columns: &mut [u64; COLUMNS]) {
    let first = (from.floor() as usize).min(COLUMNS - 1);
    let last = ((to.ceil() as usize).max(first + 1)).min(COLUMNS);
    if last - first == 1 || to <= from {
        columns[first] += n;
        return;
    }
    let mut given = 0;
    let mut remainders = Vec::with_capacity(last - first);
    for (c, column) in columns.iter_mut().enumerate().take(last).skip(first) {
        let overlap = (to.min((c + 1) as f64) - from.max(c as f64)).max(0.0) / (to - from);
        let exact = n as f64 * overlap;
        let whole = (exact.floor() as u64).min(n - given);
        *column += whole;
        given += whole;
        remainders.push((exact - exact.floor(), c));
    }
    remainders.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (_, c) in remainders.into_iter().cycle().take((n - given) as usize) {
        columns[c] += 1;
    }
}

/// The counts of `lane` on `axis`: its tally and its events.
fn counts(axis: &Axis, lane: &Lane) -> [[u64; COLUMNS]; KINDS.len()] {
    let mut tally = lane.tally.clone();
    for (e, how) in &lane.events {
        tally.add(e.kind.sync_time(), how);
    }
    tally.columns(axis)
}

/// Whether `lane` is drawn as counts: it has more events than one row each can show.
pub(super) fn summarised(lane: &Lane) -> bool {
    lane.tally.total() > 0 || lane.events.len() > SUMMARY_ABOVE
}

/// How many rows a summary of `lane` has: one per kind it holds.
pub(super) fn rows(axis: &Axis, lane: &Lane) -> usize {
    counts(axis, lane)
        .iter()
        .filter(|c| c.iter().any(|&n| n > 0))
        .count()
}

/// Draws `lane`'s events as counts between `top` and its bottom.
pub(super) fn draw(svg: &mut String, axis: &Axis, lane: &Lane, top: f64) {
    let counts = counts(axis, lane);
    let plot = WIDTH - LEFT - RIGHT;
    let width = plot / COLUMNS as f64;
    let mut row = 0;
    for (k, (class, label)) in KINDS.iter().enumerate() {
        let total: u64 = counts[k].iter().sum();
        if total == 0 {
            continue;
        }
        let most = counts[k].iter().copied().max().unwrap_or(1).max(1);
        let y = top + PAD + ROW * row as f64;
        let _ = writeln!(
            svg,
            r#"<text class="summary-label" x="{:.1}" y="{:.1}" font-size="10" text-anchor="end">{label} {total}</text>"#,
            LEFT - 4.0,
            y + ROW / 2.0 + 3.5
        );
        for (c, &n) in counts[k].iter().enumerate() {
            if n == 0 {
                continue;
            }
            let x = LEFT + width * c as f64;
            let from = axis.time(x);
            let to = axis.time(x + width);
            let _ = writeln!(
                svg,
                r#"<rect class="event summary {class}" data-count="{n}" x="{x:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill-opacity="{:.2}"><title>{}</title></rect>"#,
                y + 1.0,
                width.max(1.0),
                ROW - 2.0,
                0.15 + 0.85 * n as f64 / most as f64,
                escape(&format!("{n} {label} in [{from}, {to})"))
            );
        }
        row += 1;
    }
}

impl Axis {
    /// The time at `x` (the inverse of [`Axis::x`] on the plot).
    fn time(&self, x: f64) -> Time {
        let span = (self.hi as f64 - self.lo as f64).max(1.0);
        let t = self.lo as f64 + (x - LEFT) / (WIDTH - LEFT - RIGHT) * span;
        Time::from_ticks(t as i64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tally's buckets stay within [`BUCKETS`] and lose no count, whatever the order and
    /// spread of the times; the range is exact.
    #[test]
    fn a_tally_keeps_every_count_in_bounded_buckets() {
        let mut tally = Tally::default();
        let times = [5i64, -3, 1 << 40, 7, -(1 << 50), 0, i64::MAX, 12];
        for (n, &t) in times.iter().cycle().take(5000).enumerate() {
            let mark = if n % 2 == 0 {
                Mark::Plain
            } else {
                Mark::Dropped
            };
            tally.add(Time::from_ticks(t), &mark);
            assert!(tally.buckets.len() <= BUCKETS);
        }
        assert_eq!(tally.total(), 5000);
        let counted: u64 =
            tally.buckets.iter().flatten().sum::<u64>() + tally.edges.iter().flatten().sum::<u64>();
        assert_eq!(counted, 5000);
        assert_eq!(tally.range(), Some((-(1 << 50), (1 << 40))));
        assert_eq!(tally.edges[1].iter().sum::<u64>(), 625);
        // One bucket per tick while the times fit.
        let mut fine = Tally::default();
        for t in (0..100).rev() {
            fine.add(Time::from_ticks(t), &Mark::Output);
        }
        assert_eq!((fine.shift, fine.origin, fine.buckets.len()), (0, 0, 100));
        assert!(fine.buckets.iter().all(|b| b[1] == 1));
    }
}
