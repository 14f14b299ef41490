//! JSON-lines file adapters: typed and untyped payloads, malformed lines, output files.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use punctual_adapters::{
    CollectOutput, JsonLinesInput, JsonLinesInputConfig, JsonLinesOutput, JsonLinesOutputConfig,
    MalformedLines,
};
use punctual_core::{StreamItem, Time, TimeSpan};
use punctual_policies::{AdvanceTimeSettings, DeadLetterReason};
use punctual_rows::Row;
use punctual_runtime::{AdapterError, DeadLetterCollector, Query, QueryError};

mod common;
use common::{collected, ordered, point};

fn temp_file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("punctual-jsonl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("the temp dir is writable");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("the temp dir is writable");
    path
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Reading {
    device: String,
    value: f64,
}

const READINGS: &str = r#"{"kind":"point","start":3,"payload":{"device":"a","value":1.5}}
{"kind":"point","start":"1970-01-01T00:00:00.0000001Z","payload":{"device":"b","value":2.0}}

{"kind":"point","start":7,"payload":{"device":"a","value":3.0}}
"#;

#[tokio::test]
async fn typed_payloads_are_read_with_serde_and_sorted_by_the_settings() {
    let path = temp_file("typed.jsonl", READINGS);
    let mut query = Query::new("typed");
    let s = query
        .create_stream::<_, Reading, _, _>(
            point("readings").settings(AdvanceTimeSettings::unordered_start_time(
                TimeSpan::from_ticks(5),
            )),
            &JsonLinesInput,
            &JsonLinesInputConfig::new(&path),
        )
        .unwrap();
    let out = CollectOutput::new();
    query.bind_output(&s, &out, &()).unwrap();
    query.start().unwrap().wait().await.unwrap();
    let r = |device: &str, value| Reading {
        device: device.into(),
        value,
    };
    let t = Time::from_ticks;
    assert_eq!(
        out.items(),
        vec![
            StreamItem::Cti(t(-2)),
            StreamItem::point(t(1), r("b", 2.0)),
            StreamItem::Cti(t(2)),
            StreamItem::point(t(3), r("a", 1.5)),
            StreamItem::point(t(7), r("a", 3.0)),
            StreamItem::Cti(Time::INF),
        ]
    );
}

#[tokio::test]
async fn untyped_rows_round_trip_through_a_file() {
    let input = temp_file("untyped.jsonl", READINGS);
    let output = input.with_file_name("untyped-out.jsonl");
    let mut query = Query::new("untyped");
    let s = query
        .create_stream::<_, Row, _, _>(
            point("readings").settings(AdvanceTimeSettings::unordered_start_time(
                TimeSpan::from_ticks(5),
            )),
            &JsonLinesInput,
            &JsonLinesInputConfig::new(&input),
        )
        .unwrap();
    query
        .bind_output(&s, &JsonLinesOutput, &JsonLinesOutputConfig::new(&output))
        .unwrap();
    query.start().unwrap().wait().await.unwrap();
    let written = std::fs::read_to_string(&output).unwrap();
    assert_eq!(
        written,
        r#"{"kind":"cti","time":-2}
{"kind":"point","start":1,"payload":{"device":"b","value":2.0}}
{"kind":"cti","time":2}
{"kind":"point","start":3,"payload":{"device":"a","value":1.5}}
{"kind":"point","start":7,"payload":{"device":"a","value":3.0}}
{"kind":"cti","time":"inf"}
"#
    );
}

const WITH_BAD_LINES: &str = r#"{"kind":"point","start":1,"payload":{"device":"a","value":1.0}}
{"kind":"point","start":2,"payload":{"device":"a","value":"high"}}
{"kind":"point","start":3,"payload":{"device":"a","value":3.0}
{"kind":"point","start":4,"payload":{"device":"a","value":4.0}}
"#;

#[tokio::test]
async fn a_malformed_line_fails_the_query_with_file_and_line_when_asked() {
    let path = temp_file("bad.jsonl", WITH_BAD_LINES);
    let mut query = Query::new("strict");
    query
        .create_stream::<_, Reading, _, _>(
            point("readings"),
            &JsonLinesInput,
            &JsonLinesInputConfig::new(&path).malformed(MalformedLines::Fail),
        )
        .unwrap();
    let err = query.start().unwrap().wait().await.unwrap_err().error;
    match &err {
        QueryError::Adapter {
            error:
                AdapterError::Malformed {
                    path: p,
                    line,
                    message,
                },
            ..
        } => {
            assert_eq!(p, &path);
            assert_eq!(*line, 2);
            assert!(message.contains("expected f64"), "{message}");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(err.to_string().contains("bad.jsonl:2:"), "{err}");
}

#[tokio::test]
async fn skipped_malformed_lines_are_counted_and_dead_lettered() {
    let path = temp_file("skip.jsonl", WITH_BAD_LINES);
    let letters = DeadLetterCollector::new();
    let mut query = Query::new("lenient");
    let s = query
        .create_stream::<_, Reading, _, _>(
            ordered("readings"),
            &JsonLinesInput,
            &JsonLinesInputConfig::new(&path).malformed(MalformedLines::Skip),
        )
        .unwrap();
    let (_, report) = collected(query, &s, &letters).await;
    let c = report.counters("readings").unwrap();
    assert_eq!((c.malformed, c.released), (2, 2));
    let locations: Vec<String> = letters
        .letters()
        .into_iter()
        .map(|d| match d.reason {
            DeadLetterReason::Malformed(m) => m.location,
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(
        locations,
        vec![
            format!("{}:2", path.display()),
            format!("{}:3", path.display())
        ]
    );
}

/// A byte-order mark before the first line (as some editors write) is not part of it: every
/// line is read, none malformed (as a CSV input's header is read).
#[tokio::test]
async fn a_byte_order_mark_before_the_first_line_is_skipped() {
    let path = temp_file("bom.jsonl", &format!("\u{feff}{READINGS}"));
    let mut query = Query::new("bom");
    let s = query
        .create_stream::<_, Reading, _, _>(
            point("readings").settings(AdvanceTimeSettings::unordered_start_time(
                TimeSpan::from_ticks(5),
            )),
            &JsonLinesInput,
            &JsonLinesInputConfig::new(&path).malformed(MalformedLines::Skip),
        )
        .unwrap();
    let out = CollectOutput::new();
    query.bind_output(&s, &out, &()).unwrap();
    let report = query.start().unwrap().wait().await.unwrap();
    let c = report.counters("readings").unwrap();
    assert_eq!((c.events_in, c.malformed, c.released), (3, 0, 3));
}

#[tokio::test]
async fn a_missing_file_is_an_io_error_naming_it() {
    let mut query = Query::new("missing");
    query
        .create_stream::<_, Row, _, _>(
            point("x"),
            &JsonLinesInput,
            &JsonLinesInputConfig::new("/nonexistent/punctual.jsonl"),
        )
        .unwrap();
    let err = query.start().unwrap().wait().await.unwrap_err();
    assert!(
        err.to_string().contains("/nonexistent/punctual.jsonl"),
        "{err}"
    );
}

#[test]
fn configs_deny_unknown_fields() {
    let e = serde_json::from_str::<JsonLinesInputConfig>(r#"{"path":"a","colour":1}"#).unwrap_err();
    assert!(e.to_string().contains("unknown field `colour`"), "{e}");
    let c: JsonLinesInputConfig =
        serde_json::from_str(r#"{"path":"a","malformed":"skip"}"#).unwrap();
    assert_eq!(c.malformed, MalformedLines::Skip);
}

/// A file input reads one batch ahead and tells the watermark strategy its range of times:
/// with YTsaurus Flow's look-ahead term, the CTI moves to the next batch's first time as soon
/// as the batch before it is in, rather than staying `bound` behind the newest time.
#[tokio::test]
async fn a_file_input_reports_the_next_batch_to_a_look_ahead_strategy() {
    let lines: String = (0..3000)
        .map(|i| format!("{{\"kind\":\"point\",\"start\":{i},\"payload\":{{\"n\":{i}}}}}\n"))
        .collect();
    let path = temp_file("look-ahead.jsonl", &lines);
    let run = |look_ahead: bool| {
        let path = path.clone();
        async move {
            let strategy =
                punctual_policies::Watermark::<Row>::partitioned(1, TimeSpan::from_ticks(500));
            let strategy = if look_ahead {
                strategy.look_ahead()
            } else {
                strategy
            };
            let mut query = Query::new("ahead");
            let s = query
                .create_stream::<_, Row, _, _>(
                    point("in").watermark(strategy),
                    &JsonLinesInput,
                    &JsonLinesInputConfig::new(&path),
                )
                .unwrap();
            let out = CollectOutput::new();
            query.bind_output(&s, &out, &()).unwrap();
            let report = query.start().unwrap().wait().await.unwrap();
            let ctis: Vec<i64> = out
                .items()
                .iter()
                .filter_map(|i| match i {
                    StreamItem::Cti(t) if t.is_finite() => Some(t.ticks()),
                    _ => None,
                })
                .collect();
            (ctis, report.counters("in").unwrap().dropped)
        }
    };
    let before = |ctis: &[i64], t: i64| {
        let k = ctis.iter().position(|&c| c == t).expect("that CTI");
        ctis[k - 1]
    };
    let (with, dropped) = run(true).await;
    assert_eq!(dropped, 0);
    // After the first batch (0..1023) is in (CTI 1023 - 500), the second (1024..2047) is
    // announced: the CTI jumps to 1024; likewise to 2048.
    assert_eq!(before(&with, 1024), 523);
    assert_eq!(before(&with, 2048), 1547);
    let (without, dropped) = run(false).await;
    assert_eq!(dropped, 0);
    assert_eq!(
        before(&without, 1024),
        1023,
        "highest - 500, one time at a time"
    );
    assert_eq!(without.last(), Some(&2499));
}

/// A file split by byte ranges: every line is read by exactly one part, whatever the number of
/// parts (more parts than lines too), each part an input of its own; a line that does not parse
/// is located in its part.
#[tokio::test]
async fn a_file_split_by_byte_ranges_reads_every_line_once() {
    use punctual_adapters::line::TimeFormat;
    // Lines of different lengths, the last without a line end.
    let lines: Vec<String> = (0..40)
        .map(|i| format!(r#"{{"t":{i},"pad":"{}"}}"#, "x".repeat(i * 7 % 23)))
        .collect();
    let path = temp_file("split.jsonl", &lines.join("\n"));
    for parts in [1, 2, 3, 7, 64] {
        let mut query = Query::new("split");
        let config = JsonLinesInputConfig::new(&path)
            .flat("t", TimeFormat::Ticks)
            .split(parts);
        let s = query
            .create_stream::<_, Row, _, _>(point("in"), &JsonLinesInput, &config)
            .expect("binds");
        let out = CollectOutput::new();
        query.bind_output(&s, &out, &()).expect("binds");
        let report = query.start().expect("starts").wait().await.expect("runs");
        assert_eq!(report.streams.len(), parts, "an input per part");
        let read: u64 = report.streams.iter().map(|(_, c)| c.events_in).sum();
        assert_eq!(read, 40, "{parts} parts");
        let times: Vec<i64> = out
            .payloads()
            .iter()
            .filter_map(|r| r.get("t").and_then(|v| v.as_i64()))
            .collect();
        assert_eq!(times, (0..40).collect::<Vec<i64>>(), "{parts} parts");
    }
    let bad = temp_file(
        "split-bad.jsonl",
        "{\"t\":1}\n{\"t\":2}\nnot json\n{\"t\":4}\n",
    );
    let config = JsonLinesInputConfig::new(&bad).flat("t", TimeFormat::Ticks);
    let (_, letters, _) = read_rows(&config.split(2)).await;
    let located: Vec<String> = letters.reasons();
    assert_eq!(located.len(), 1, "{located:?}");
    assert!(located[0].contains("(part 2 of 2):1"), "{located:?}");
}

/// Reads `config` as the untyped point input `in` of a query of its own, to its end: what
/// came out, the dead letters and the report.
async fn read_rows(
    config: &JsonLinesInputConfig,
) -> (
    CollectOutput<Row>,
    DeadLetterCollector<Row>,
    punctual_runtime::QueryReport,
) {
    let mut query = Query::new("rows");
    let s = query
        .create_stream::<_, Row, _, _>(point("in"), &JsonLinesInput, config)
        .expect("binds");
    let letters = DeadLetterCollector::new();
    let (out, report) = collected(query, &s, &letters).await;
    (out, letters, report)
}

/// Flat lines read with `fields`: each payload holds the fields named (the time read aside in
/// the same pass), a line without its time or not an object is malformed and says why.
#[tokio::test]
async fn flat_lines_with_fields_hold_those_fields() {
    use punctual_adapters::line::TimeFormat;
    let path = temp_file(
        "fields.jsonl",
        "{\"t\":1,\"device\":\"a\",\"v\":2,\"note\":{\"x\":[1]}}\n{\"device\":\"b\",\"v\":3}\n[1,2]\n{\"v\":4,\"t\":5}\n",
    );
    let config = JsonLinesInputConfig::new(&path).flat("t", TimeFormat::Ticks);
    let (out, letters, _) = read_rows(&config.fields(["device", "v"])).await;
    assert_eq!(
        out.payloads(),
        vec![
            Row::new().with("device", "a").with("v", 2),
            Row::new().with("v", 4),
        ]
    );
    let reasons: Vec<String> = letters.reasons();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert!(
        reasons[0].contains("no field `t` (the event time)"),
        "{reasons:?}"
    );
}
