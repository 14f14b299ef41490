//! The timeline picture of a conformance case: each input stream and the output on one time axis,
//! as a standalone SVG (`punctual timeline CASE_DIR -o timeline.svg`).
//!
//! - every event is one mark (`class="event ..."`): a point is a dot, an interval a bar, a start
//!   edge a bar running to its end edge (or off the right edge while open), an end edge a tick;
//! - CTIs are dashed vertical lines (`class="cti"`), `CTI(+inf)` an arrow at the right edge;
//! - dropped events are red and struck through, rejected ones grey, adjusted ones orange with an
//!   arrow (`class="adjust-arrow"`) from where they were to where they were moved;
//! - the output lane shows what the query released, window results included (each with its
//!   values beside it), with its CTIs; a result that starts where another ended (a window's
//!   revision, with allowed lateness) is purple (`class="... revision"`);
//! - a legend says what each mark means; the time axis has round ticks, in ticks for a case
//!   written in ticks and in clock time (UTC, the date under the axis) for real times; a long
//!   title wraps.

use std::fmt::Write as _;

use punctual_core::{EventKind, StreamItem, Time};
use punctual_rows::Row;

use crate::conformance::{CaseRun, Outcome};

mod axis;
mod summary;

use axis::{axis_label, axis_step};

pub use summary::{Tally, BUCKETS, SUMMARY_ABOVE};

const WIDTH: f64 = 1000.0;
const LEFT: f64 = 150.0;
const RIGHT: f64 = 30.0;
const ROW: f64 = 14.0;
const PAD: f64 = 10.0;
const TOP: f64 = 40.0;
/// Room right of the plot for the values of results near its right edge.
const LABELS: f64 = 260.0;

/// The picture's time axis: finite times seen, mapped onto the plot's width.
struct Axis {
    lo: i64,
    hi: i64,
}

impl Axis {
    fn x(&self, t: Time) -> f64 {
        // The first and last finite times are "for all time" (a static table's rows): drawn
        // where the infinities are.
        if t >= Time::MAX_FINITE {
            return WIDTH - RIGHT + 10.0;
        }
        if t <= Time::MIN_FINITE {
            return LEFT - 10.0;
        }
        let span = (self.hi as f64 - self.lo as f64).max(1.0);
        LEFT + (t.ticks() as f64 - self.lo as f64) / span * (WIDTH - LEFT - RIGHT)
    }
}

fn times_of(item: &StreamItem<Row>, out: &mut Vec<i64>) {
    match item {
        StreamItem::Cti(t) => out.push(t.ticks()),
        StreamItem::Insert(e) => {
            let (s, o) = e.kind.encode();
            out.extend([s.ticks(), o.ticks()]);
        }
    }
}

/// `text` as XML text or attribute: markup characters as entities, and the characters XML
/// cannot hold at all (control characters other than tab, line feed and carriage return;
/// U+FFFE, U+FFFF) as their visible pictures (`\u{1b}` as `␛`) or U+FFFD.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if u32::from(c) < 0x20 => {
                out.push(char::from_u32(0x2400 + u32::from(c)).unwrap_or('\u{fffd}'));
            }
            '\u{fffe}' | '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// Draws one event as one mark in the lane whose middle is `y`.
fn mark(svg: &mut String, axis: &Axis, kind: EventKind, class: &str, title: &str, y: f64) {
    let title = escape(title);
    let _ = match kind {
        EventKind::Point(t) => writeln!(
            svg,
            r#"<circle class="event point {class}" cx="{:.1}" cy="{y:.1}" r="4"><title>{title}</title></circle>"#,
            axis.x(t)
        ),
        EventKind::Interval { start, end } => {
            let (x0, x1) = (axis.x(start), axis.x(end));
            writeln!(
                svg,
                r#"<rect class="event interval {class}" x="{x0:.1}" y="{:.1}" width="{:.1}" height="8"><title>{title}</title></rect>"#,
                y - 4.0,
                (x1 - x0).max(2.0)
            )
        }
        EventKind::StartEdge(start) => {
            let x0 = axis.x(start);
            writeln!(
                svg,
                r#"<path class="event start-edge {class}" d="M{x0:.1},{:.1} v10 M{x0:.1},{y:.1} H{:.1}"><title>{title}</title></path>"#,
                y - 5.0,
                WIDTH - RIGHT
            )
        }
        EventKind::EndEdge { end, .. } => {
            let x = axis.x(end);
            writeln!(
                svg,
                r#"<path class="event end-edge {class}" d="M{x:.1},{:.1} v10 M{:.1},{y:.1} H{x:.1}"><title>{title}</title></path>"#,
                y - 5.0,
                x - 6.0
            )
        }
    };
}

/// Draws CTIs across a lane spanning `top..bottom`.
fn ctis(svg: &mut String, axis: &Axis, ctis: &[Time], (top, bottom): (f64, f64), clock: bool) {
    for &t in ctis {
        let x = axis.x(t);
        let label = if t == Time::INF {
            "+inf".to_owned()
        } else if clock && t.is_finite() {
            t.rfc3339().to_string()
        } else {
            t.to_string()
        };
        let _ = writeln!(
            svg,
            r#"<line class="cti" x1="{x:.1}" y1="{top:.1}" x2="{x:.1}" y2="{bottom:.1}"><title>CTI {label}</title></line>"#
        );
    }
}

/// A lane with `rows` event rows starting at `top`: its bottom.
fn lane_bottom(top: f64, rows: usize) -> f64 {
    top + PAD * 2.0 + ROW * rows.max(1) as f64
}

/// An item as a JSON line, its times as ticks or (`clock`) RFC 3339.
fn describe(item: &StreamItem<Row>, clock: bool) -> String {
    use crate::adapters::line::{item_to_json_as, TimeFormat};
    let format = if clock {
        TimeFormat::Rfc3339
    } else {
        TimeFormat::Ticks
    };
    item_to_json_as(item.as_ref(), format).to_string()
}

/// Times at or after 1980-01-01T00:00:00Z (in ticks) are shown as clock times; smaller ones
/// (a case written in ticks) as ticks.
const CLOCK_FROM: i64 = 3_155_328_000_000_000;

/// Splits `text` into lines of at most `width` characters, at spaces.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let last = lines.last_mut().expect("one line at least");
        if !last.is_empty() && last.chars().count() + 1 + word.chars().count() > width {
            lines.push(word.to_owned());
        } else {
            if !last.is_empty() {
                last.push(' ');
            }
            last.push_str(word);
        }
    }
    lines
}

/// A result's values, short: `n=2 mean=21`.
fn values(row: &Row) -> String {
    let mut text = String::new();
    for (k, v) in row.fields() {
        if !text.is_empty() {
            text.push(' ');
        }
        let v = v.to_json();
        let shown = match v.as_str() {
            Some(s) => s.to_owned(),
            None => v.to_string(),
        };
        text.push_str(&format!("{k}={shown}"));
    }
    if text.chars().count() > 48 {
        text = text.chars().take(47).collect::<String>() + "…";
    }
    text
}

/// The legend: one swatch per kind of mark.
fn legend(svg: &mut String, y: f64) {
    let entries = [
        ("", "an input event"),
        ("output", "a result"),
        ("revision", "a revised result"),
        ("dropped", "dropped (late)"),
        ("rejected", "rejected"),
        ("adjusted", "adjusted (arrow: moved)"),
    ];
    let mut x = LEFT;
    let _ = writeln!(svg, r#"<g class="legend">"#);
    for (class, label) in entries {
        let _ = writeln!(
            svg,
            r#"<rect class="swatch {class}" x="{x:.1}" y="{:.1}" width="14" height="8"/><text x="{:.1}" y="{:.1}">{label}</text>"#,
            y - 8.0,
            x + 18.0,
            y
        );
        x += 18.0 + label.len() as f64 * 6.5 + 16.0;
    }
    let _ = writeln!(
        svg,
        r#"<line class="cti swatch" x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}"/><text x="{:.1}" y="{y:.1}">CTI</text></g>"#,
        y - 10.0,
        y + 2.0,
        x + 6.0
    );
}

/// What a mark shows: how the event fared.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mark {
    /// An input event, taken as it was.
    Plain,
    /// Dropped by the policy or a watermark strategy.
    Dropped,
    /// Rejected.
    Rejected,
    /// Adjusted to this kind and these times.
    Adjusted(EventKind),
    /// A result of the query.
    Output,
}

/// One lane of a picture: an input stream or an output, its events with how each fared, and
/// its CTIs.
#[derive(Clone, Debug, Default)]
pub struct Lane {
    /// `in: NAME` or `out: NAME`.
    pub label: String,
    /// The events, in the order drawn (one row each).
    pub events: Vec<(punctual_core::Event<Row>, Mark)>,
    /// The lane's CTIs.
    pub ctis: Vec<Time>,
    /// Events counted rather than kept (a lane of many events, drawn as counts with
    /// [`Lane::events`] added to them).
    pub tally: Tally,
}

/// A picture: a title and lanes on one time axis ([`render_picture`]).
#[derive(Clone, Debug, Default)]
pub struct Picture {
    /// The title (wrapped to fit).
    pub title: String,
    /// The lanes, top to bottom.
    pub lanes: Vec<Lane>,
}

impl Picture {
    /// A conformance case's run: each input stream's arrivals with their outcomes and CTIs,
    /// then the output.
    pub fn of_case(run: &CaseRun) -> Picture {
        let mut lanes: Vec<Lane> = run
            .traces
            .iter()
            .map(|trace| Lane {
                label: format!("in: {}", trace.name),
                events: trace
                    .arrivals
                    .iter()
                    .filter_map(|(item, outcome)| match item {
                        Some(StreamItem::Insert(e)) => Some((
                            e.clone(),
                            match outcome {
                                Outcome::Dropped => Mark::Dropped,
                                Outcome::Rejected => Mark::Rejected,
                                Outcome::Adjusted(to) => Mark::Adjusted(*to),
                                _ => Mark::Plain,
                            },
                        )),
                        _ => None,
                    })
                    .collect(),
                ctis: trace.ctis.clone(),
                tally: Tally::default(),
            })
            .collect();
        lanes.push(Lane::output(
            format!("out: {}", run.case.output),
            &run.output,
        ));
        Picture {
            title: run.case.description.clone(),
            lanes,
        }
    }
}

impl Lane {
    /// An output lane from what an output received.
    pub fn output(label: impl Into<String>, items: &[StreamItem<Row>]) -> Lane {
        let mut lane = Lane {
            label: label.into(),
            ..Lane::default()
        };
        for item in items {
            match item {
                StreamItem::Insert(e) => lane.events.push((e.clone(), Mark::Output)),
                StreamItem::Cti(t) => lane.ctis.push(*t),
            }
        }
        lane
    }
}

/// Renders a conformance case's run as an SVG document.
pub fn render(run: &CaseRun) -> String {
    render_picture(&Picture::of_case(run))
}

/// Renders a picture as an SVG document.
pub fn render_picture(picture: &Picture) -> String {
    let mut times = Vec::new();
    for lane in &picture.lanes {
        for (e, _) in &lane.events {
            times_of(&StreamItem::Insert(e.clone()), &mut times);
        }
        times.extend(lane.ctis.iter().map(|t| t.ticks()));
    }
    let finite: Vec<i64> = times
        .into_iter()
        .filter(|&t| t > Time::MIN_FINITE.ticks() && t < Time::MAX_FINITE.ticks())
        .collect();
    let counted = picture.lanes.iter().filter_map(|l| l.tally.range());
    let lo = (finite.iter().copied())
        .chain(counted.clone().map(|(lo, _)| lo))
        .min()
        .unwrap_or(0);
    let hi = (finite.iter().copied())
        .chain(counted.map(|(_, hi)| hi))
        .max()
        .unwrap_or(lo + 1)
        .max(lo + 1);
    let axis = Axis { lo, hi };
    let clock = lo >= CLOCK_FROM;
    // A lane of many events is drawn as counts (summary.rs), in a few rows.
    let summarised: Vec<bool> = picture.lanes.iter().map(summary::summarised).collect();
    let lane_rows: Vec<usize> = (picture.lanes.iter().zip(&summarised))
        .map(|(l, &many)| {
            if many {
                summary::rows(&axis, l)
            } else {
                l.events.len()
            }
        })
        .collect();
    let title = wrap(&picture.title, 140);
    let top = TOP + 16.0 * title.len() as f64 + 14.0;
    let mut tops = Vec::new();
    let mut y = top;
    for &r in &lane_rows {
        tops.push(y);
        y = lane_bottom(y, r) + 8.0;
    }
    let height = y + 40.0;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{total:.0}" height="{height:.0}" viewBox="0 0 {total:.0} {height:.0}" font-family="sans-serif" font-size="12">"#,
        total = WIDTH + LABELS
    );
    let _ = writeln!(
        svg,
        r##"<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#e67e22"/></marker></defs>
<style>
.event, .swatch {{ fill: #2c7be5; stroke: #2c7be5; stroke-width: 2; fill-opacity: 0.6; }}
.start-edge, .end-edge {{ fill: none; }}
.dropped {{ fill: #d9534f; stroke: #d9534f; stroke-dasharray: 3 2; }}
.rejected {{ fill: #999; stroke: #999; }}
.adjusted {{ fill: #e67e22; stroke: #e67e22; fill-opacity: 0.25; }}
.output {{ fill: #2e9e5b; stroke: #2e9e5b; }}
.revision {{ fill: #8e44ad; stroke: #8e44ad; }}
.cti {{ stroke: #555; stroke-width: 1; stroke-dasharray: 4 3; }}
.adjust-arrow {{ stroke: #e67e22; stroke-width: 1.5; marker-end: url(#arrow); }}
.lane {{ fill: none; stroke: #ddd; }}
.value {{ fill: #2e6b45; paint-order: stroke; stroke: #fff; stroke-width: 3px; }}
</style>"##
    );
    for (i, line) in title.iter().enumerate() {
        let _ = writeln!(
            svg,
            r#"<text class="title" x="10" y="{:.1}" font-weight="bold">{}</text>"#,
            20.0 + 16.0 * i as f64,
            escape(line)
        );
    }
    legend(&mut svg, top - 12.0);

    for (k, lane) in picture.lanes.iter().enumerate() {
        let (top, bottom) = (tops[k], lane_bottom(tops[k], lane_rows[k]));
        self::lane(&mut svg, &lane.label, (top, bottom));
        ctis(&mut svg, &axis, &lane.ctis, (top, bottom), clock);
        if summarised[k] {
            summary::draw(&mut svg, &axis, lane, top);
            continue;
        }
        events(&mut svg, &axis, lane, top, clock);
    }
    time_axis(&mut svg, &axis, height, clock);
    svg.push_str("</svg>\n");
    svg
}

/// Draws `lane`'s events, one row each from `top`: each as a mark of how it fared (an
/// adjusted one with an arrow to where it went, a result with its values beside it).
fn events(svg: &mut String, axis: &Axis, lane: &Lane, top: f64, clock: bool) {
    // A result that starts where another of the lane ended is a revision (a window with
    // allowed lateness ends the value in force where the new one starts).
    let ends: std::collections::HashSet<Time> = lane
        .events
        .iter()
        .filter_map(|(e, how)| match (how, e.kind) {
            (Mark::Output, EventKind::EndEdge { end, .. }) => Some(end),
            _ => None,
        })
        .collect();
    for (row, (e, how)) in lane.events.iter().enumerate() {
        let y = top + PAD + ROW * row as f64 + ROW / 2.0;
        let text = describe(&StreamItem::Insert(e.clone()), clock);
        match how {
            Mark::Plain => mark(svg, axis, e.kind, "", &text, y),
            Mark::Dropped => mark(svg, axis, e.kind, "dropped", &format!("dropped: {text}"), y),
            Mark::Rejected => mark(
                svg,
                axis,
                e.kind,
                "rejected",
                &format!("rejected: {text}"),
                y,
            ),
            Mark::Adjusted(to) => {
                mark(
                    svg,
                    axis,
                    e.kind,
                    "adjusted",
                    &format!("adjusted: {text}"),
                    y,
                );
                let (from_x, to_x) = (axis.x(e.kind.sync_time()), axis.x(to.sync_time()));
                let _ = writeln!(
                    svg,
                    r#"<line class="adjust-arrow" x1="{from_x:.1}" y1="{y:.1}" x2="{to_x:.1}" y2="{y:.1}"/>"#
                );
            }
            Mark::Output => {
                match e.kind {
                    EventKind::StartEdge(start) if ends.contains(&start) => mark(
                        svg,
                        axis,
                        e.kind,
                        "output revision",
                        &format!("revision: {text}"),
                        y,
                    ),
                    _ => mark(svg, axis, e.kind, "output", &text, y),
                }
                let (s, o) = e.kind.encode();
                let x = axis.x(s.max(o).min(Time::MAX_FINITE)).min(WIDTH - RIGHT) + 6.0;
                let _ = writeln!(
                    svg,
                    r#"<text class="value" x="{x:.1}" y="{:.1}" font-size="10">{}</text>"#,
                    y + 3.5,
                    escape(&values(&e.payload))
                );
            }
        }
    }
}

/// Draws the time axis at the picture's foot (`height`): round ticks with their labels, and
/// the unit (the date in UTC for clock times, else ticks).
fn time_axis(svg: &mut String, axis: &Axis, height: f64, clock: bool) {
    let (lo, hi) = (axis.lo, axis.hi);
    let axis_y = height - 30.0;
    let _ = writeln!(
        svg,
        r##"<line x1="{LEFT}" y1="{axis_y:.1}" x2="{:.1}" y2="{axis_y:.1}" stroke="#333"/>"##,
        WIDTH - RIGHT
    );
    let step = axis_step(hi - lo, clock).max(1);
    let mut t = lo.div_euclid(step).saturating_mul(step);
    if t < lo {
        t = t.saturating_add(step);
    }
    while t <= hi {
        let x = axis.x(Time::from_ticks(t));
        let _ = writeln!(
            svg,
            r##"<line class="axis-tick" x1="{x:.1}" y1="{axis_y:.1}" x2="{x:.1}" y2="{:.1}" stroke="#333"/><text class="axis-label" x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            axis_y + 4.0,
            axis_y + 16.0,
            axis_label(t, step, clock)
        );
        t = match t.checked_add(step) {
            Some(next) => next,
            None => break,
        };
    }
    let unit = if clock {
        let date = Time::from_ticks(lo).rfc3339();
        format!("UTC, {}", date.split('T').next().unwrap_or(&date))
    } else {
        "ticks (100 ns)".to_owned()
    };
    let _ = writeln!(
        svg,
        r#"<text class="axis-unit" x="10" y="{:.1}">{unit}</text>"#,
        axis_y + 16.0
    );
}

fn lane(svg: &mut String, label: &str, (top, bottom): (f64, f64)) {
    let _ = writeln!(
        svg,
        r#"<rect class="lane" x="{LEFT}" y="{top:.1}" width="{:.1}" height="{:.1}"/><text x="10" y="{:.1}">{}</text>"#,
        WIDTH - LEFT - RIGHT,
        bottom - top,
        (top + bottom) / 2.0 + 4.0,
        escape(label)
    );
}
