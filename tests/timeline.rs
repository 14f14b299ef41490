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

/// A window with allowed lateness: its two revisions (of `a` at 60 and of `b` at 119) are
/// drawn as revisions, nothing else is.
#[test]
fn revisions_are_drawn_apart() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("conformance/operators/allowed-lateness-revisions");
    let run = run_case(&dir).expect("the case runs");
    let svg = render(&run);
    let doc = roxmltree::Document::parse(&svg).expect("well-formed SVG");
    let mut revisions: Vec<String> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("event start-edge output revision"))
        .filter_map(|n| n.descendants().find(|c| c.has_tag_name("title")))
        .filter_map(|t| t.text().map(str::to_owned))
        .collect();
    revisions.sort();
    assert_eq!(
        revisions,
        [
            r#"revision: {"kind":"start","start":119,"payload":{"k":"b","n":2}}"#,
            r#"revision: {"kind":"start","start":60,"payload":{"k":"a","n":3}}"#,
        ]
    );
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

/// Text with the characters XML cannot hold (control characters, U+FFFE, U+FFFF), markup
/// characters and ordinary ones.
fn hostile_text() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    let c = prop_oneof![
        (0u32..0x20).prop_map(|c| char::from_u32(c).unwrap_or('?')),
        Just('\u{7f}'),
        Just('\u{fffe}'),
        Just('\u{ffff}'),
        Just('<'),
        Just('&'),
        Just('"'),
        Just(']'),
        Just('é'),
        Just('a'),
    ];
    proptest::collection::vec(c, 0..12).prop_map(|cs| cs.into_iter().collect())
}

proptest::proptest! {
    #![proptest_config(punctual_tests::fuzz_config(24))]

    /// Whatever text a payload, a label or a title holds, the picture parses as XML: in a
    /// lane of few events (each drawn with its values) and in one drawn as counts.
    #[test]
    fn any_payload_text_makes_well_formed_svg(texts in proptest::collection::vec(hostile_text(), 1..60)) {
        use punctual::core::{Event, Time};
        use punctual::rows::{Row};
        use punctual::timeline::{render_picture, Lane, Mark, Picture};
        let events: Vec<(Event<Row>, Mark)> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let payload = Row::new().with("s", t.as_str());
                (Event::point(Time::from_ticks(i as i64), payload), Mark::Output)
            })
            .collect();
        let lanes: Vec<Lane> = [events.len().min(3), events.len()]
            .iter()
            .map(|&n| Lane {
                label: format!("out: {}", texts[0]),
                events: events[..n].to_vec(),
                ctis: vec![Time::from_ticks(n as i64), Time::INF],
                ..Lane::default()
            })
            .collect();
        let svg = render_picture(&Picture { title: texts.concat(), lanes });
        if let Err(e) = roxmltree::Document::parse(&svg) {
            proptest::prop_assert!(false, "not XML: {e}\n{svg}");
        }
    }
}

/// The same through the command line: `pipe --timeline` over payloads with control
/// characters writes a picture that parses.
#[test]
fn pipe_timeline_of_control_characters_parses() {
    let dir = std::env::temp_dir().join(format!("punctual-timeline-esc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut lines = String::new();
    for i in 0..30 {
        let s = serde_json::to_string(&format!("a\u{1b}[31m{i}\u{0}\u{fffe}<&")).expect("json");
        lines.push_str(&format!(
            "{{\"kind\":\"point\",\"start\":{},\"payload\":{{\"s\":{s}}}}}\n",
            i + 1
        ));
    }
    let input = dir.join("in.jsonl");
    std::fs::write(&input, lines).expect("written");
    let svg = dir.join("t.svg");
    let out = dir.join("out.jsonl");
    let args: Vec<String> = ["pipe", "-i", s(&input), "-o", s(&out), "--in-order"]
        .iter()
        .map(|a| (*a).to_owned())
        .chain(["--timeline".to_owned(), s(&svg).to_owned()])
        .collect();
    let (mut o, mut e) = (Vec::new(), Vec::new());
    let code = punctual::cli::main(&args, &mut o, &mut e);
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&e));
    let text = std::fs::read_to_string(&svg).expect("written");
    let doc = roxmltree::Document::parse(&text).expect("well-formed");
    let titles: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("title"))
        .filter_map(|n| n.text())
        .collect();
    // The escape character is shown, as JSON writes it in an event's description.
    assert!(
        titles.iter().any(|t| t.contains("\\u001b[31m")),
        "{titles:?}"
    );
}

/// A long run's picture is as small as a short one's: a lane of many events is counts (its
/// kept events at most the summary threshold), its CTIs thinned to a few hundred, and the
/// counts add up to every event.
#[test]
fn a_long_pipe_draws_a_bounded_picture_of_every_event() {
    let dir = std::env::temp_dir().join(format!("punctual-timeline-long-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let events = 200_000;
    let mut lines = String::with_capacity(events * 48);
    for i in 0..events {
        lines.push_str(&format!(
            "{{\"kind\":\"point\",\"start\":{},\"payload\":{{\"v\":{}}}}}\n",
            i + 1,
            i % 7
        ));
    }
    let input = dir.join("in.jsonl");
    std::fs::write(&input, lines).expect("written");
    let (svg, out) = (dir.join("t.svg"), dir.join("out.jsonl"));
    let args: Vec<String> = [
        "pipe",
        "-i",
        s(&input),
        "-o",
        s(&out),
        "--in-order",
        "--timeline",
        s(&svg),
    ]
    .iter()
    .map(|a| (*a).to_owned())
    .collect();
    let (mut o, mut e) = (Vec::new(), Vec::new());
    let code = punctual::cli::main(&args, &mut o, &mut e);
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&e));
    let text = std::fs::read_to_string(&svg).expect("written");
    assert!(text.len() < 120_000, "{} bytes", text.len());
    let doc = roxmltree::Document::parse(&text).expect("well-formed");
    let counted: u64 = doc
        .descendants()
        .filter_map(|n| n.attribute("data-count"))
        .map(|c| c.parse::<u64>().expect("a count"))
        .sum();
    // Each event is released (input lane) and written (output lane).
    assert_eq!(counted, 2 * events as u64);
    let ctis = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("cti"))
        .count();
    assert!((100..=2 * 201).contains(&ctis), "{ctis} CTIs drawn");
    let said = text.find("(1 CTI in ").map(|i| &text[i..i + 24]);
    assert_eq!(
        said,
        Some("(1 CTI in 1024 drawn)</t"),
        "the thinning is said"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}
