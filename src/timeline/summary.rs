//! A lane of many events drawn as counts: the plot's width cut into columns, one row per kind
//! of mark (released, output, adjusted, dropped, rejected), each column shaded by how many
//! events of that kind it holds, with the count in its tooltip. The picture's size then does
//! not grow with the events, and no label is drawn inside the plot (none crosses a CTI line).

use std::fmt::Write;

use punctual_core::Time;

use super::{escape, Axis, Lane, Mark, LEFT, PAD, RIGHT, ROW, WIDTH};

/// Above this many events a lane is drawn as counts.
pub(super) const SUMMARY_ABOVE: usize = 40;
/// How many columns the plot is cut into.
const COLUMNS: usize = 80;

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

/// The counts per kind and column of a lane's events.
fn counts(axis: &Axis, lane: &Lane) -> [[usize; COLUMNS]; KINDS.len()] {
    let mut counts = [[0; COLUMNS]; KINDS.len()];
    let plot = WIDTH - LEFT - RIGHT;
    for (e, how) in &lane.events {
        let x = axis.x(e.kind.sync_time()).clamp(LEFT, LEFT + plot);
        let column = (((x - LEFT) / plot) * COLUMNS as f64) as usize;
        counts[kind(how)][column.min(COLUMNS - 1)] += 1;
    }
    counts
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
        let total: usize = counts[k].iter().sum();
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
