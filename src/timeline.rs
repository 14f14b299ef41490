//! The timeline picture of a conformance case: each input stream and the output on one time axis,
//! as a standalone SVG (`punctual timeline CASE_DIR -o timeline.svg`).
//!
//! - every event is one mark (`class="event ..."`): a point is a dot, an interval a bar, a start
//!   edge a bar running to its end edge (or off the right edge while open), an end edge a tick;
//! - CTIs are dashed vertical lines (`class="cti"`), `CTI(+inf)` an arrow at the right edge;
//! - dropped events are red and struck through, rejected ones grey, adjusted ones orange with an
//!   arrow (`class="adjust-arrow"`) from where they were to where they were moved;
//! - the output lane shows what the query released, window results included, with its CTIs.

use std::fmt::Write as _;

use punctual_core::{EventKind, Row, StreamItem, Time};

use crate::conformance::{CaseRun, Outcome};

const WIDTH: f64 = 1000.0;
const LEFT: f64 = 150.0;
const RIGHT: f64 = 30.0;
const ROW: f64 = 14.0;
const PAD: f64 = 10.0;
const TOP: f64 = 40.0;

/// The picture's time axis: finite times seen, mapped onto the plot's width.
struct Axis {
    lo: i64,
    hi: i64,
}

impl Axis {
    fn x(&self, t: Time) -> f64 {
        if t == Time::INF {
            return WIDTH - RIGHT + 10.0;
        }
        if t == Time::NEG_INF {
            return LEFT - 10.0;
        }
        let span = (self.hi - self.lo).max(1) as f64;
        LEFT + (t.ticks() - self.lo) as f64 / span * (WIDTH - LEFT - RIGHT)
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

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
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
fn ctis(svg: &mut String, axis: &Axis, ctis: &[Time], (top, bottom): (f64, f64)) {
    for &t in ctis {
        let x = axis.x(t);
        let label = if t == Time::INF {
            "+inf".to_owned()
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

fn describe(item: &StreamItem<Row>) -> String {
    crate::adapters::line::item_to_json(item.as_ref()).to_string()
}

/// Renders the run as an SVG document.
pub fn render(run: &CaseRun) -> String {
    let mut times = Vec::new();
    for trace in &run.traces {
        for (item, _) in &trace.arrivals {
            if let Some(item) = item {
                times_of(item, &mut times);
            }
        }
        times.extend(trace.ctis.iter().map(|t| t.ticks()));
    }
    for item in &run.output {
        times_of(item, &mut times);
    }
    let finite: Vec<i64> = times
        .into_iter()
        .filter(|&t| Time::from_ticks(t).is_finite())
        .collect();
    let lo = finite.iter().copied().min().unwrap_or(0);
    let hi = finite.iter().copied().max().unwrap_or(lo + 1).max(lo + 1);
    let axis = Axis { lo, hi };
    let rows = |items: &mut dyn Iterator<Item = bool>| items.filter(|&is_event| is_event).count();
    let mut lane_rows: Vec<usize> = run
        .traces
        .iter()
        .map(|t| {
            rows(
                &mut t
                    .arrivals
                    .iter()
                    .map(|(i, _)| matches!(i, Some(StreamItem::Insert(_)))),
            )
        })
        .collect();
    lane_rows.push(rows(
        &mut run
            .output
            .iter()
            .map(|i| matches!(i, StreamItem::Insert(_))),
    ));
    let mut tops = Vec::new();
    let mut y = TOP;
    for &r in &lane_rows {
        tops.push(y);
        y = lane_bottom(y, r) + 8.0;
    }
    let height = y + 40.0;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:.0}" viewBox="0 0 {WIDTH} {height:.0}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        svg,
        r##"<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#e67e22"/></marker></defs>
<style>
.event {{ fill: #2c7be5; stroke: #2c7be5; stroke-width: 2; fill-opacity: 0.6; }}
.start-edge, .end-edge {{ fill: none; }}
.dropped {{ fill: #d9534f; stroke: #d9534f; stroke-dasharray: 3 2; }}
.rejected {{ fill: #999; stroke: #999; }}
.adjusted {{ fill: #e67e22; stroke: #e67e22; fill-opacity: 0.25; }}
.output {{ fill: #2e9e5b; stroke: #2e9e5b; }}
.cti {{ stroke: #555; stroke-width: 1; stroke-dasharray: 4 3; }}
.adjust-arrow {{ stroke: #e67e22; stroke-width: 1.5; marker-end: url(#arrow); }}
.lane {{ fill: none; stroke: #ddd; }}
</style>"##
    );
    let _ = writeln!(
        svg,
        r#"<text x="10" y="20" font-weight="bold">{}</text>"#,
        escape(&run.case.description.chars().take(150).collect::<String>())
    );
    for (k, trace) in run.traces.iter().enumerate() {
        let (top, bottom) = (tops[k], lane_bottom(tops[k], lane_rows[k]));
        lane(&mut svg, &format!("in: {}", trace.name), (top, bottom));
        ctis(&mut svg, &axis, &trace.ctis, (top, bottom));
        let mut row = 0;
        for (item, outcome) in &trace.arrivals {
            let Some(StreamItem::Insert(e)) = item else {
                continue;
            };
            let y = top + PAD + ROW * row as f64 + ROW / 2.0;
            row += 1;
            let text = describe(item.as_ref().unwrap_or(&StreamItem::Cti(Time::NEG_INF)));
            match outcome {
                Outcome::Dropped => mark(
                    &mut svg,
                    &axis,
                    e.kind,
                    "dropped",
                    &format!("dropped: {text}"),
                    y,
                ),
                Outcome::Rejected => mark(
                    &mut svg,
                    &axis,
                    e.kind,
                    "rejected",
                    &format!("rejected: {text}"),
                    y,
                ),
                Outcome::Adjusted(to) => {
                    mark(
                        &mut svg,
                        &axis,
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
                _ => mark(&mut svg, &axis, e.kind, "", &text, y),
            }
        }
    }
    let k = run.traces.len();
    let (top, bottom) = (tops[k], lane_bottom(tops[k], lane_rows[k]));
    lane(
        &mut svg,
        &format!("out: {}", run.case.output),
        (top, bottom),
    );
    let out_ctis: Vec<Time> = run
        .output
        .iter()
        .filter_map(|i| match i {
            StreamItem::Cti(t) => Some(*t),
            StreamItem::Insert(_) => None,
        })
        .collect();
    ctis(&mut svg, &axis, &out_ctis, (top, bottom));
    let mut row = 0;
    for item in &run.output {
        if let StreamItem::Insert(e) = item {
            let y = top + PAD + ROW * row as f64 + ROW / 2.0;
            row += 1;
            mark(&mut svg, &axis, e.kind, "output", &describe(item), y);
        }
    }
    // The time axis.
    let axis_y = height - 30.0;
    let _ = writeln!(
        svg,
        r##"<line x1="{LEFT}" y1="{axis_y:.1}" x2="{:.1}" y2="{axis_y:.1}" stroke="#333"/>"##,
        WIDTH - RIGHT
    );
    for k in 0..=5 {
        let t = lo + (hi - lo) * k / 5;
        let x = axis.x(Time::from_ticks(t));
        let _ = writeln!(
            svg,
            r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{t}</text>"#,
            axis_y + 16.0
        );
    }
    svg.push_str("</svg>\n");
    svg
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
