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
