//! CSV files, replay speed, follow mode and the final CTI of file inputs.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use punctual_adapters::line::TimeFormat;
use punctual_adapters::{
    CollectOutput, CsvInput, CsvInputConfig, CsvOutput, CsvOutputConfig, JsonLinesInput,
    JsonLinesInputConfig, MalformedLines, ReplayOptions,
};
use punctual_core::{EventShape, StreamItem, Time, TICKS_PER_SECOND};
use punctual_policies::DeadLetterReason;
use punctual_rows::{Row, Value};
use punctual_runtime::{DeadLetterCollector, InputOptions, Query};

mod common;
use common::{csv_ticks, events_in, fifo, jsonl_rows, ordered, point, starts_and_payloads};

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
        .create_stream::<_, Reading, _, _>(point("typed"), &CsvInput, &csv_ticks(&path))
        .expect("binds");
    let rows = query
        .create_stream::<_, Row, _, _>(point("rows"), &CsvInput, &csv_ticks(&path))
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
    // Untyped, a column holds the type of its first value: `oops` in a number column is
    // malformed there too.
    let rows = report.counters("rows").expect("stream");
    assert_eq!((rows.released, rows.malformed), (3, 1));
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
            &CsvInputConfig::new(&path, "from")
                .time_format(TimeFormat::Ticks)
                .end("to"),
        )
        .expect("binds");
    query
        .bind_output(
            s.map(|r| Row::new().with("what", r.get("what").cloned().unwrap_or_default())),
            &CsvOutput,
            &CsvOutputConfig::new(&out_path),
        )
        .expect("binds");
    query.start().expect("starts").wait().await.expect("runs");
    let written = std::fs::read_to_string(&out_path).expect("written");
    assert_eq!(
        written,
        "kind,start,end,what\ninterval,1,5,a\ninterval,2,9,\"b, c\"\ncti,inf,,\n"
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
            point("in"),
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
            point("in"),
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

/// Runs a file input of rows to the end: the output and the stream's counters.
async fn rows_of(
    path: &std::path::Path,
    csv: bool,
) -> (
    Vec<StreamItem<Row>>,
    punctual_policies::IngressCounters,
    Vec<String>,
) {
    let letters = DeadLetterCollector::new();
    let mut query = Query::new("file");
    let options = point("in");
    let s = if csv {
        query.create_stream::<_, Row, _, _>(
            options,
            &CsvInput,
            &CsvInputConfig::new(path, "time").time_format(TimeFormat::Ticks),
        )
    } else {
        query.create_stream::<_, Row, _, _>(
            options,
            &JsonLinesInput,
            &JsonLinesInputConfig::new(path),
        )
    }
    .expect("binds");
    query.bind_dead_letters(&s, letters.clone()).expect("binds");
    let out = CollectOutput::new();
    query.bind_output(&s, &out, &()).expect("binds");
    let report = query.start().expect("starts").wait().await.expect("runs");
    let reasons = letters.reasons();
    (
        out.items(),
        report.counters("in").expect("a stream"),
        reasons,
    )
}

/// A line that is not UTF-8, or longer than the limit, is one malformed line (counted, dead-
/// lettered with its line number and the reason): the lines around it are read as usual.
#[tokio::test]
async fn a_line_that_is_not_text_or_too_long_is_one_malformed_line() {
    let mut bytes = b"{\"kind\":\"point\",\"start\":1,\"payload\":{\"v\":1}}\n".to_vec();
    bytes.extend_from_slice(b"{\"kind\":\"point\",\"start\":2,\"payload\":{\"v\":\"\xff\"}}\n");
    bytes.extend(std::iter::repeat_n(
        b'x',
        punctual_adapters::MAX_LINE_BYTES + 10,
    ));
    bytes.push(b'\n');
    bytes.extend_from_slice(b"{\"kind\":\"point\",\"start\":3,\"payload\":{\"v\":3}}\n");
    let path = temp("bytes.jsonl", "");
    std::fs::write(&path, &bytes).expect("temp dir");
    let (items, c, reasons) = rows_of(&path, false).await;
    assert_eq!(items.len(), 3, "two points and the final CTI: {items:?}");
    assert_eq!((c.events_in, c.malformed), (2, 2));
    assert!(
        reasons[0].contains("bytes.jsonl:2") && reasons[0].contains("not UTF-8"),
        "{reasons:?}"
    );
    assert!(
        reasons[1].contains("bytes.jsonl:3") && reasons[1].contains("over the limit"),
        "{reasons:?}"
    );
}

/// A CSV file that starts with a byte-order mark reads as one without; an empty CSV file ends
/// with the final CTI, as an empty JSON-lines file does.
#[tokio::test]
async fn a_byte_order_mark_and_an_empty_csv_file() {
    let path = temp("bom.csv", "\u{feff}time,v\n1,a\n2,b\n");
    let (items, c, _) = rows_of(&path, true).await;
    assert_eq!((c.events_in, c.malformed), (2, 0));
    assert_eq!(items.last(), Some(&StreamItem::Cti(Time::INF)));
    for (name, csv) in [("empty.csv", true), ("empty.jsonl", false)] {
        let path = temp(name, "");
        let (items, _, _) = rows_of(&path, csv).await;
        assert_eq!(items, vec![StreamItem::Cti(Time::INF)], "{name}");
    }
}

/// Every line read is counted once: an event or a CTI (`events_in`, `ctis_in`), `malformed`, or
/// `skipped` (blank lines and the `eof` line). The `eof` line ends the items at once (the final
/// CTI goes out there); the lines after it are read and counted as malformed, with the reason.
#[tokio::test]
async fn blank_lines_the_eof_line_and_lines_after_it_are_counted() {
    let text = "{\"kind\":\"point\",\"start\":1,\"payload\":{}}\n\n   \n\
                {\"kind\":\"cti\",\"time\":1}\n\
                {\"kind\":\"eof\"}\n\
                {\"kind\":\"point\",\"start\":5,\"payload\":{}}\n\n";
    let path = temp("eof.jsonl", text);
    let (items, c, reasons) = rows_of(&path, false).await;
    assert_eq!(
        items.last(),
        Some(&StreamItem::Cti(Time::INF)),
        "the eof line ends the stream: {items:?}"
    );
    assert_eq!(
        (c.events_in, c.ctis_in, c.malformed, c.skipped),
        (1, 2, 1, 4),
        "{c:?}"
    );
    // (`ctis_in` has the final CTI too, which is not a line.)
    let lines = text.lines().count() as u64;
    assert_eq!(
        c.events_in + (c.ctis_in - 1) + c.malformed + c.skipped,
        lines
    );
    assert!(
        reasons.len() == 1
            && reasons[0].contains("eof.jsonl:6")
            && reasons[0].contains("after the `eof`"),
        "{reasons:?}"
    );
    let csv = temp("blank.csv", "time,v\n1,a\n\n2,b\n \n");
    let (_, c, _) = rows_of(&csv, true).await;
    assert_eq!((c.events_in, c.skipped), (2, 2), "{c:?}");
}

/// A live input (a FIFO here; standard input alike) does not hold lines back to fill a batch,
/// and a file output does not hold them in its buffer: what a slow writer sends reaches the
/// output file while the writer is still there.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_live_input_reaches_the_output_file_while_it_is_open() {
    let dir = std::env::temp_dir().join(format!("punctual-live-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let fifo = fifo(&dir);
    let out_path = dir.join("out.jsonl");
    let mut query = Query::new("live");
    let s = jsonl_rows(&mut query, point("in"), &fifo);
    query
        .bind_output(
            &s,
            &punctual_adapters::JsonLinesOutput,
            &punctual_adapters::JsonLinesOutputConfig::new(&out_path),
        )
        .expect("binds");
    let running = query.start().expect("starts");
    let writer_fifo = fifo.clone();
    let seen_path = out_path.clone();
    // The writer sends one event and a CTI, then stays open until the output file shows the
    // event (or gives up after a minute, which fails the test).
    let writer = tokio::task::spawn_blocking(move || {
        let mut w = std::fs::OpenOptions::new()
            .write(true)
            .open(&writer_fifo)
            .expect("opens the FIFO");
        w.write_all(b"{\"kind\":\"point\",\"start\":1,\"payload\":{\"v\":1}}\n{\"kind\":\"cti\",\"time\":2}\n")
            .expect("writes");
        w.flush().expect("flushes");
        for _ in 0..6000 {
            let shown = std::fs::read_to_string(&seen_path).unwrap_or_default();
            if shown.contains("\"point\"") {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    });
    let seen = writer.await.expect("the writer ran");
    let report = running.wait().await.expect("runs");
    assert!(
        seen,
        "the event reached the output while the input was open"
    );
    assert_eq!(report.counters("in").expect("stream").events_in, 1);
}

/// Checkpoints need inputs that resume at a position, operators that save their state and
/// outputs that can checkpoint: anything else is refused when the query starts, with the
/// reason.
#[tokio::test]
async fn checkpoints_refuse_what_cannot_resume() {
    use punctual_adapters::{JsonLinesOutput, JsonLinesOutputConfig, MemoryInput};
    use punctual_runtime::Checkpoints;
    let dir = std::env::temp_dir().join(format!("punctual-refuse-{}", std::process::id()));
    let input = temp(
        "replayable.jsonl",
        "{\"kind\":\"point\",\"start\":1,\"payload\":{}}\n",
    );
    let out = dir.join("out.jsonl");
    let refusal = |query: Query| match query.start() {
        Err(e) => e.to_string(),
        Ok(_) => panic!("started"),
    };

    let mut q = Query::new("memory").checkpoints(Checkpoints::new(&dir));
    let items = vec![StreamItem::point(t(1), Row::new())];
    let s = q
        .create_stream::<_, Row, _, _>(point("mem"), &MemoryInput, &items)
        .expect("binds");
    q.bind_output(&s, &JsonLinesOutput, &JsonLinesOutputConfig::new(&out))
        .expect("binds");
    assert!(refusal(q).contains("input `mem` cannot resume"));

    let mut q = Query::new("collect").checkpoints(Checkpoints::new(&dir));
    let s = jsonl_rows(&mut q, point("file"), &input);
    q.bind_output(&s, &CollectOutput::new(), &())
        .expect("binds");
    assert!(refusal(q).contains("cannot checkpoint"));

    let mut q = Query::new("counts").checkpoints(Checkpoints::new(&dir));
    let s = jsonl_rows(&mut q, point("file"), &input);
    let counts = s.count_window(3).count();
    q.bind_output(&counts, &JsonLinesOutput, &JsonLinesOutputConfig::new(&out))
        .expect("binds");
    assert!(refusal(q).contains("the count window operator cannot save its state"));
}

/// A stop with a drain ends the output as if the input had ended; run again with the same
/// checkpoints, the query cuts that drained tail and continues: the output ends exactly as an
/// uninterrupted run's.
#[tokio::test(start_paused = true)]
async fn a_drained_stop_is_not_a_checkpoint() {
    use punctual_adapters::{JsonLinesOutput, JsonLinesOutputConfig};
    use punctual_runtime::Checkpoints;
    let dir = std::env::temp_dir().join(format!("punctual-drain-ckpt-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut text = String::new();
    for i in 0..200 {
        let t = i * TICKS_PER_SECOND;
        text.push_str(&format!(
            "{{\"kind\":\"point\",\"start\":{t},\"payload\":{{\"v\":{i}}}}}\n"
        ));
    }
    let input = dir.join("in.jsonl");
    std::fs::write(&input, text).expect("written");
    let query = |out: &std::path::Path, checkpoints: bool| {
        let mut q = Query::new("paced");
        if checkpoints {
            q = q.checkpoints(Checkpoints::new(dir.join("state")).every(Duration::ZERO));
        }
        let s = q
            .create_stream::<_, Row, _, _>(
                ordered("in"),
                &JsonLinesInput,
                &JsonLinesInputConfig::new(&input).replay(ReplayOptions {
                    speed: Some(1.0),
                    ..ReplayOptions::default()
                }),
            )
            .expect("binds");
        q.bind_output(&s, &JsonLinesOutput, &JsonLinesOutputConfig::new(out))
            .expect("binds");
        q
    };
    let expected = dir.join("expected.jsonl");
    query(&expected, false)
        .start()
        .expect("starts")
        .wait()
        .await
        .expect("runs");
    let out = dir.join("out.jsonl");
    let running = query(&out, true).start().expect("starts");
    tokio::time::sleep(Duration::from_secs(50)).await;
    running.stop().await.expect("stops");
    let drained = std::fs::read_to_string(&out).expect("written");
    assert!(
        drained.ends_with("{\"kind\":\"cti\",\"time\":\"inf\"}\n"),
        "drained"
    );
    assert!(drained.len() < std::fs::read_to_string(&expected).expect("written").len());
    query(&out, true)
        .start()
        .expect("starts")
        .wait()
        .await
        .expect("runs");
    assert_eq!(
        std::fs::read_to_string(&out).expect("written"),
        std::fs::read_to_string(&expected).expect("written")
    );
}

/// Checkpoints verify before they trust: a second run on a directory in use, an output
/// deleted or cut shorter than its recorded position (or a position no file has), and an
/// input that changed are each refused with the reason, and nothing is written. Before, an
/// output was filled with zero bytes to its position, or a changed input replayed into the old
/// output, exit 0.
#[tokio::test]
async fn checkpoints_verify_the_outputs_and_inputs_they_restore() {
    use punctual_adapters::{JsonLinesOutput, JsonLinesOutputConfig};
    use punctual_runtime::Checkpoints;
    let dir = std::env::temp_dir().join(format!("punctual-verify-ckpt-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let input = dir.join("in.jsonl");
    let lines = |n: i64| -> String {
        (0..n)
            .map(|i| format!("{{\"kind\":\"point\",\"start\":{i},\"payload\":{{\"v\":{i}}}}}\n"))
            .collect()
    };
    std::fs::write(&input, lines(50)).expect("written");
    let (out, state) = (dir.join("out.jsonl"), dir.join("state"));
    let query = || {
        let mut q =
            Query::new("verified").checkpoints(Checkpoints::new(&state).every(Duration::ZERO));
        let s = jsonl_rows(&mut q, ordered("in"), &input);
        q.bind_output(&s, &JsonLinesOutput, &JsonLinesOutputConfig::new(&out))
            .expect("binds");
        q
    };
    let failure = |r: Result<punctual_runtime::QueryReport, punctual_runtime::QueryFailure>| {
        r.expect_err("refused").to_string()
    };
    query().start().expect("starts").wait().await.expect("runs");
    let whole = std::fs::read_to_string(&out).expect("written");
    // A second run while the first holds the directory.
    let first = query().start().expect("starts");
    let second = query()
        .start()
        .map(|_| ())
        .expect_err("refused")
        .to_string();
    assert!(second.contains("is in use by another run"), "{second}");
    first.wait().await.expect("runs");
    // The output cut shorter than its record, then deleted.
    std::fs::write(&out, &whole[..10]).expect("cut");
    let why = failure(query().start().expect("starts").wait().await);
    assert!(why.contains("but it has 10 bytes"), "{why}");
    assert_eq!(std::fs::read_to_string(&out).expect("kept").len(), 10);
    std::fs::remove_file(&out).expect("deleted");
    let why = failure(query().start().expect("starts").wait().await);
    assert!(why.contains("but it is not there"), "{why}");
    assert!(!out.exists(), "nothing written");
    // The input changed.
    std::fs::write(&out, &whole).expect("put back");
    std::fs::write(&input, lines(60)).expect("changed");
    let why = query()
        .start()
        .map(|_| ())
        .expect_err("refused")
        .to_string();
    assert!(why.contains("input `in`"), "{why}");
    assert!(why.contains("changed: its size went from"), "{why}");
    assert_eq!(std::fs::read_to_string(&out).expect("kept"), whole);
}

/// A file name with wildcards names several files, sorted by name: each is a partition of the
/// source, an input of its own with its own counters and CTIs, and the stream is their union.
/// A pattern that matches nothing is refused with the pattern.
#[tokio::test]
async fn a_wildcard_path_reads_each_matching_file_as_a_partition() {
    let a = temp("parts-a.csv", "time,v\n1,1\n5,5\n");
    temp("parts-b.csv", "time,v\n3,3\n");
    temp("parts-bb.csv", "time,v\n4,4\n"); // `?` is one character: not matched
    let pattern = a.with_file_name("parts-?.csv");
    let mut query = Query::new("files");
    let s = query
        .create_stream::<_, Row, _, _>(point("in"), &CsvInput, &csv_ticks(&pattern))
        .expect("binds");
    let out = CollectOutput::new();
    query.bind_output(&s, &out, &()).expect("binds");
    let report = query.start().expect("starts").wait().await.expect("runs");
    assert_eq!(events_in(&report), [("in#0", 2), ("in#1", 1)]);
    let times: Vec<Time> = starts_and_payloads(&out.items())
        .into_iter()
        .map(|(at, _)| at)
        .collect();
    assert_eq!(times, [t(1), t(3), t(5)]);

    let mut query = Query::new("none");
    let refused = query.create_stream::<_, Row, _, _>(
        point("in"),
        &JsonLinesInput,
        &JsonLinesInputConfig::new(a.with_file_name("nothing-*.jsonl")),
    );
    let why = refused
        .map(|_| ())
        .expect_err("nothing matches")
        .to_string();
    assert!(
        why.contains("no file matches") && why.contains("nothing-*.jsonl"),
        "{why}"
    );
}

/// A CSV file split by byte ranges: every record is read by exactly one part, whatever the
/// number of parts (more parts than lines too), each with the file's header (the first part
/// does not take the header for a record); a record that does not parse is located in its
/// part; standard input cannot be split.
#[tokio::test]
async fn a_csv_file_split_by_byte_ranges_reads_every_record_once_with_the_header() {
    // Records of different lengths, quoted fields, the last line without a line end.
    let mut text = String::from("time,name,v\n");
    let records: Vec<String> = (0..40)
        .map(|i| format!("{i},\"n, {}\",{}", "x".repeat(i * 7 % 23), i * 10))
        .collect();
    text.push_str(&records.join("\n"));
    let path = temp("split.csv", &text);
    for parts in [1, 2, 3, 7, 64] {
        let mut query = Query::new("split");
        let s = query
            .create_stream::<_, Row, _, _>(
                point("in"),
                &CsvInput,
                &CsvInputConfig::new(&path, "time")
                    .time_format(TimeFormat::Ticks)
                    .split(parts),
            )
            .expect("binds");
        let letters = DeadLetterCollector::new();
        query.bind_dead_letters(&s, letters.clone()).expect("binds");
        let out = CollectOutput::new();
        query.bind_output(&s, &out, &()).expect("binds");
        let report = query.start().expect("starts").wait().await.expect("runs");
        assert_eq!(report.streams.len(), parts, "an input per part");
        assert!(letters.letters().is_empty(), "{parts} parts");
        let rows = out.payloads();
        let got: Vec<(i64, i64)> = rows
            .iter()
            .filter_map(|r| Some((r.get("time")?.as_i64()?, r.get("v")?.as_i64()?)))
            .collect();
        let expected: Vec<(i64, i64)> = (0..40).map(|i| (i, i * 10)).collect();
        assert_eq!(got, expected, "{parts} parts");
        assert!(rows.iter().all(|r| r.len() == 3), "{parts} parts");
    }
    let bad = temp("split-bad.csv", "time,v\n1,1\n2,2\n3,\"open\n4,4\n");
    let letters = DeadLetterCollector::new();
    let mut query = Query::new("split-bad");
    let s = query
        .create_stream::<_, Row, _, _>(
            point("in"),
            &CsvInput,
            &CsvInputConfig::new(&bad, "time")
                .time_format(TimeFormat::Ticks)
                .split(2),
        )
        .expect("binds");
    query.bind_dead_letters(&s, letters.clone()).expect("binds");
    query
        .bind_output(&s, &CollectOutput::new(), &())
        .expect("binds");
    query.start().expect("starts").wait().await.expect("runs");
    let located: Vec<String> = letters.reasons();
    assert_eq!(located.len(), 1, "{located:?}");
    assert!(
        located[0].contains("(part 2 of 2):1") && located[0].contains("unterminated quote"),
        "{located:?}"
    );
    let mut query = Query::new("stdin");
    let refused = query.create_stream::<_, Row, _, _>(
        point("in"),
        &CsvInput,
        &CsvInputConfig::new("-", "time")
            .time_format(TimeFormat::Ticks)
            .split(2),
    );
    let why = refused.map(|_| ()).expect_err("refused").to_string();
    assert!(why.contains("not standard input"), "{why}");
}

/// `columns` reads each payload from the columns named (the time column still timing each
/// event); a column the header does not have fails the input, naming it and the header's.
#[tokio::test]
async fn csv_columns_read_only_the_fields_named() {
    let path = temp("columns.csv", CSV);
    let mut query = Query::new("csv");
    let rows = query
        .create_stream::<_, Row, _, _>(
            point("rows"),
            &CsvInput,
            &CsvInputConfig::new(&path, "time")
                .time_format(TimeFormat::Ticks)
                .columns(["device"]),
        )
        .expect("binds");
    let out = CollectOutput::new();
    query.bind_output(&rows, &out, &()).expect("binds");
    query.start().expect("starts").wait().await.expect("runs");
    let payloads = out.payloads();
    // Every record, `oops` too: its temperature is not read.
    let device = |d: &str| Row::new().with("device", d);
    assert_eq!(
        payloads,
        vec![device("02"), device("01"), device("01"), device("01")]
    );

    let mut query = Query::new("csv");
    let rows = query
        .create_stream::<_, Row, _, _>(
            point("rows"),
            &CsvInput,
            &CsvInputConfig::new(&path, "time")
                .time_format(TimeFormat::Ticks)
                .columns(["device", "humidity"]),
        )
        .expect("binds");
    query
        .bind_output(&rows, &CollectOutput::new(), &())
        .expect("binds");
    let e = query
        .start()
        .expect("starts")
        .wait()
        .await
        .expect_err("fails")
        .to_string();
    assert!(
        e.contains("no column `humidity` (its columns: time, device, temp)"),
        "{e}"
    );
}

/// Rows of a file whose header repeats a name: one field of that name, the last column's
/// value (as a row read from JSON keeps the last of a repeated key).
#[tokio::test]
async fn csv_rows_of_a_header_with_a_repeated_name() {
    let path = temp("repeated.csv", "time,a,b,a\n1,x,2,y\n");
    let mut query = Query::new("csv");
    let rows = query
        .create_stream::<_, Row, _, _>(point("rows"), &CsvInput, &csv_ticks(&path))
        .expect("binds");
    let out = CollectOutput::new();
    query.bind_output(&rows, &out, &()).expect("binds");
    query.start().expect("starts").wait().await.expect("runs");
    let rows = out.payloads();
    let json: Row = serde_json::from_str(r#"{"time":1,"a":"x","b":2,"a":"y"}"#).expect("a row");
    assert_eq!(rows, vec![json]);
    assert_eq!(rows[0].get("a"), Some(&Value::from("y")));
}
