//! CSV files, replay speed, follow mode and the final CTI of file inputs.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use punctual_adapters::{
    CollectOutput, CsvInput, CsvInputConfig, CsvOutput, CsvOutputConfig, DeadLetterCollector,
    InputOptions, JsonLinesInput, JsonLinesInputConfig, MalformedLines, Query, ReplayOptions,
};
use punctual_core::{EventShape, Row, StreamItem, Time, TICKS_PER_SECOND};
use punctual_policies::DeadLetterReason;

fn temp(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("punctual-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("temp dir");
    path
}

fn t(x: i64) -> Time {
    Time::from_ticks(x)
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Reading {
    device: String,
    temp: f64,
}

const CSV: &str = "time,device,temp\n3,\"01\",21.5\n1,02,19\n7,01,oops\n9,01,22\n";

#[tokio::test]
async fn csv_typed_and_untyped_with_a_malformed_record() {
    let path = temp("readings.csv", CSV);
    let letters = DeadLetterCollector::new();
    let mut query = Query::new("csv");
    let typed = query
        .create_stream::<_, Reading, _, _>(
            InputOptions::new("typed", EventShape::Point),
            &CsvInput,
            &CsvInputConfig::new(&path, "time"),
        )
        .expect("binds");
    let rows = query
        .create_stream::<_, Row, _, _>(
            InputOptions::new("rows", EventShape::Point),
            &CsvInput,
            &CsvInputConfig::new(&path, "time"),
        )
        .expect("binds");
    let (a, b) = (CollectOutput::new(), CollectOutput::new());
    query.bind_output(&typed, &a, &()).expect("binds");
    query.bind_output(&rows, &b, &()).expect("binds");
    query
        .bind_dead_letters(&typed, letters.clone())
        .expect("binds");
    let report = query.start().expect("starts").wait().await.expect("runs");
    // No settings: the events wait for the final CTI the file input enqueues at its end.
    assert_eq!(
        a.items(),
        vec![
            StreamItem::point(
                t(1),
                Reading {
                    device: "02".into(),
                    temp: 19.0
                }
            ),
            StreamItem::point(
                t(3),
                Reading {
                    device: "01".into(),
                    temp: 21.5
                }
            ),
            StreamItem::point(
                t(9),
                Reading {
                    device: "01".into(),
                    temp: 22.0
                }
            ),
            StreamItem::Cti(Time::INF),
        ]
    );
    assert_eq!(report.counters("typed").expect("stream").malformed, 1);
    let letter = &letters.letters()[0];
    match &letter.reason {
        DeadLetterReason::Malformed(m) => {
            assert!(m.location.ends_with("readings.csv:4"), "{}", m.location);
            assert!(
                m.message.contains("temp") || m.message.contains("f64"),
                "{}",
                m.message
            );
        }
        other => panic!("unexpected {other:?}"),
    }
    // Untyped: every column, numbers where a field is one (the leading zero stays text).
    let first = match &b.items()[0] {
        StreamItem::Insert(e) => e.payload.clone(),
        other => panic!("unexpected {other:?}"),
    };
    assert_eq!(
        first,
        Row::new()
            .with("time", 1i64)
            .with("device", "02")
            .with("temp", 19i64)
    );
    assert_eq!(
        report.counters("rows").expect("stream").released,
        4,
        "the `oops` row is fine untyped"
    );
}

#[tokio::test]
async fn csv_intervals_and_output() {
    let path = temp("spans.csv", "from,to,what\n1,5,a\n2,9,\"b, c\"\n");
    let out_path = path.with_file_name("spans-out.csv");
    let mut query = Query::new("csv-out");
    let s = query
        .create_stream::<_, Row, _, _>(
            InputOptions::new("spans", EventShape::Interval),
            &CsvInput,
            &CsvInputConfig::new(&path, "from").end("to"),
        )
        .expect("binds");
    query
        .bind_output(
            &s.map(|r| Row::new().with("what", r.get("what").cloned().unwrap_or_default())),
            &CsvOutput,
            &CsvOutputConfig {
                path: out_path.clone(),
            },
        )
        .expect("binds");
    query.start().expect("starts").wait().await.expect("runs");
    let written = std::fs::read_to_string(&out_path).expect("written");
    assert_eq!(
        written,
        "kind,start,end,what\ninterval,1,5,a\ninterval,2,9,\"b, c\"\ncti,+inf,,\n"
    );
}

#[tokio::test(start_paused = true)]
async fn a_speed_factor_paces_events_by_their_timestamps() {
    let second = TICKS_PER_SECOND;
    let text = format!(
        "{{\"kind\":\"point\",\"start\":0,\"payload\":1}}\n{{\"kind\":\"point\",\"start\":{},\"payload\":2}}\n{{\"kind\":\"point\",\"start\":{},\"payload\":3}}\n",
        10 * second,
        20 * second
    );
    let path = temp("paced.jsonl", &text);
    let mut query = Query::new("paced");
    let s = query
        .create_stream::<_, i64, _, _>(
            InputOptions::new("in", EventShape::Point),
            &JsonLinesInput,
            &JsonLinesInputConfig::new(&path).replay(ReplayOptions {
                speed: Some(10.0),
                ..ReplayOptions::default()
            }),
        )
        .expect("binds");
    query
        .bind_output(&s, &CollectOutput::new(), &())
        .expect("binds");
    let start = tokio::time::Instant::now();
    query.start().expect("starts").wait().await.expect("runs");
    let took = start.elapsed();
    // 20 s of event time at 10x: about 2 s.
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(3),
        "{took:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn follow_mode_picks_up_appended_lines_until_stopped() {
    let path = temp(
        "growing.jsonl",
        "{\"kind\":\"point\",\"start\":1,\"payload\":1}\n",
    );
    let mut query = Query::new("follow");
    let s = query
        .create_stream::<_, i64, _, _>(
            InputOptions::new("in", EventShape::Point),
            &JsonLinesInput,
            &JsonLinesInputConfig::new(&path).replay(ReplayOptions {
                follow: true,
                ..ReplayOptions::default()
            }),
        )
        .expect("binds");
    let out = CollectOutput::new();
    query.bind_output(&s, &out, &()).expect("binds");
    let running = query.start().expect("starts");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .expect("open");
    writeln!(f, "{{\"kind\":\"point\",\"start\":2,\"payload\":2}}").expect("append");
    writeln!(f, "{{\"kind\":\"cti\",\"time\":5}}").expect("append");
    drop(f);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        out.items(),
        vec![
            StreamItem::point(t(1), 1),
            StreamItem::point(t(2), 2),
            StreamItem::Cti(t(5))
        ]
    );
    let report = running.stop().await.expect("stops");
    assert_eq!(report.counters("in").expect("stream").events_in, 2);
    let _ = MalformedLines::Skip;
}
