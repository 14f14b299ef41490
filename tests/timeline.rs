//! `punctual timeline` renders every conformance case as well-formed SVG with one mark per
//! event: every input event as it arrived, and every output event.

use std::path::{Path, PathBuf};

use punctual::conformance::{find_cases, run_case};
use punctual::core::StreamItem;
use punctual::timeline::render;

fn check_tree(root: &Path) {
    let cases = find_cases(root).expect("readable cases");
    assert!(!cases.is_empty());
    for dir in cases {
        let run = run_case(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let svg = render(&run);
        let doc = roxmltree::Document::parse(&svg)
            .unwrap_or_else(|e| panic!("{}: not well-formed SVG: {e}", dir.display()));
        let marks = |pred: &dyn Fn(&str) -> bool| {
            doc.descendants()
                .filter(|n| {
                    n.attribute("class")
                        .is_some_and(|c| c.split(' ').any(|w| w == "event") && pred(c))
                })
                .count()
        };
        let input_events: usize = run
            .traces
            .iter()
            .map(|t| {
                t.arrivals
                    .iter()
                    .filter(|(i, _)| matches!(i, Some(StreamItem::Insert(_))))
                    .count()
            })
            .sum();
        let output_events = run
            .output
            .iter()
            .filter(|i| matches!(i, StreamItem::Insert(_)))
            .count();
        assert_eq!(
            marks(&|c| !c.contains("output")),
            input_events,
            "{}",
            dir.display()
        );
        assert_eq!(
            marks(&|c| c.contains("output")),
            output_events,
            "{}",
            dir.display()
        );
        let dropped: u64 = run.counters.iter().map(|(_, c)| c.dropped).sum();
        assert!(
            marks(&|c| c.contains("dropped")) as u64 <= dropped,
            "{}: more dropped marks than drops",
            dir.display()
        );
        let ctis = doc
            .descendants()
            .filter(|n| n.attribute("class") == Some("cti"))
            .count();
        assert!(
            ctis > 0 || run.output.is_empty(),
            "{}: no CTI drawn",
            dir.display()
        );
    }
}

#[test]
fn every_project_case_renders() {
    check_tree(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("conformance"));
}

#[test]
fn every_shared_case_renders() {
    let shared = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance");
    if shared.is_dir() {
        check_tree(&shared);
    }
}

/// A case written in clock time: the axis has round clock-time ticks (UTC, the date beside
/// it), a legend explains the marks, a long title wraps, and each result shows its values.
#[test]
fn a_case_in_clock_time_reads_as_clock_time() {
    let dir = std::env::temp_dir()
        .join(format!("punctual-timeline-{}", std::process::id()))
        .join("clock");
    std::fs::create_dir_all(&dir).expect("temp dir");
    let description = "A tumbling window of ten seconds over readings given in RFC 3339, with a description long enough that it must wrap onto a second line of the title rather than run off the right edge of the picture";
    std::fs::write(
        dir.join("case.toml"),
        format!(
            "description = \"{description}\"\n[streams.r]\nshape = \"point\"\ngenerate = {{ every = 1, delay = 0, final = true }}\n[query]\nsql = \"SELECT COUNT(*) AS n FROM r GROUP BY TumblingWindow(second, 10)\"\n"
        ),
    )
    .expect("written");
    let arrivals: String = [3, 7, 12, 31]
        .iter()
        .map(|s| format!("{{\"stream\": \"r\", \"kind\": \"point\", \"start\": \"2026-12-01T10:00:{s:02}Z\", \"payload\": {{}}}}\n"))
        .collect();
    std::fs::write(dir.join("arrivals.jsonl"), arrivals).expect("written");
    std::fs::write(dir.join("expected.jsonl"), "").expect("written");
    let run = run_case(&dir).expect("runs");
    let svg = render(&run);
    let doc = roxmltree::Document::parse(&svg).expect("well-formed SVG");
    let texts = |class: &str| -> Vec<String> {
        doc.descendants()
            .filter(|n| n.attribute("class") == Some(class))
            .map(|n| n.text().unwrap_or_default().to_owned())
            .collect()
    };
    let labels = texts("axis-label");
    assert!(labels.len() >= 3, "{labels:?}");
    // Round clock times, evenly spaced.
    let secs: Vec<u32> = labels
        .iter()
        .map(|l| {
            let (hms, _) = l.split_once('.').unwrap_or((l, ""));
            let parts: Vec<u32> = hms
                .split(':')
                .map(|p| p.parse().expect("a clock time"))
                .collect();
            parts[0] * 3600 + parts[1] * 60 + parts[2]
        })
        .collect();
    let step = secs[1] - secs[0];
    assert!(
        step > 0 && secs.windows(2).all(|w| w[1] - w[0] == step),
        "{labels:?}"
    );
    assert!(secs.iter().all(|s| s % step == 0), "{labels:?}");
    assert_eq!(texts("axis-unit"), vec!["UTC, 2026-12-01".to_owned()]);
    let title = texts("title");
    assert!(
        title.len() >= 2 && title.iter().all(|l| l.chars().count() <= 140),
        "{title:?}"
    );
    assert_eq!(title.join(" "), description);
    let legend = doc
        .descendants()
        .find(|n| n.attribute("class") == Some("legend"))
        .expect("a legend");
    let legend_text: String = legend
        .descendants()
        .filter_map(|n| n.text())
        .collect::<Vec<_>>()
        .join("|");
    for words in ["a result", "dropped", "rejected", "adjusted", "CTI"] {
        assert!(legend_text.contains(words), "{legend_text}");
    }
    // Window results with their values: [10:00:00, 10:00:10) has 2, then 1 and 1.
    assert_eq!(texts("value"), vec!["n=2", "n=1", "n=1"]);
}

/// A case in ticks keeps a tick axis, with round, evenly spaced labels.
#[test]
fn a_case_in_ticks_has_round_tick_labels() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("conformance/operators/hopping-count-point-at-end");
    let svg = render(&run_case(&dir).expect("runs"));
    let doc = roxmltree::Document::parse(&svg).expect("well-formed SVG");
    let labels: Vec<i64> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("axis-label"))
        .map(|n| n.text().unwrap_or_default().parse().expect("ticks"))
        .collect();
    assert!(labels.len() >= 3, "{labels:?}");
    let step = labels[1] - labels[0];
    assert!(
        step > 0 && labels.windows(2).all(|w| w[1] - w[0] == step),
        "{labels:?}"
    );
    assert!(labels.iter().all(|t| t % step == 0), "{labels:?}");
    assert!(svg.contains(">ticks (100 ns)<"), "the unit is named");
}
