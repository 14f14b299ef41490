//! A file input reads the lines already in its buffer in bulk (no wait per line) and any
//! other line one at a time: both ways give the same items, counters and dead letters, for
//! files of every kind of line, over buffer and batch boundaries.

use std::path::{Path, PathBuf};

use proptest::prelude::*;

use punctual_adapters::line::TimeFormat;
use punctual_adapters::{
    CollectOutput, CsvInput, CsvInputConfig, JsonLinesInput, JsonLinesInputConfig, ReplayOptions,
};
use punctual_core::StreamItem;
use punctual_policies::IngressCounters;
use punctual_rows::Row;
use punctual_runtime::{DeadLetterCollector, Query};

mod common;
use common::point;

/// A kind of line in a generated file.
#[derive(Clone, Copy, Debug)]
enum Line {
    Event,
    Blank,
    CrLf,
    WrongFields,
    NotUtf8,
    Cti,
    /// Placed at most once (the lines after it are malformed).
    Eof,
}

fn line() -> impl Strategy<Value = Line> {
    prop_oneof![
        40 => Just(Line::Event),
        2 => Just(Line::Blank),
        2 => Just(Line::CrLf),
        1 => Just(Line::WrongFields),
        1 => Just(Line::NotUtf8),
        1 => Just(Line::Cti),
    ]
}

/// The file's bytes: CSV (a header, records `time,v`) or JSON-lines items; times rise.
fn file(lines: &[Line], csv: bool, bom: bool) -> Vec<u8> {
    let mut out = Vec::new();
    if bom {
        out.extend_from_slice("\u{feff}".as_bytes());
    }
    if csv {
        out.extend_from_slice(b"time,v\n");
    }
    for (i, kind) in lines.iter().enumerate() {
        let line = match (kind, csv) {
            (Line::Event, true) => format!("{i},v{i}\n"),
            (Line::Event, false) => {
                format!("{{\"kind\":\"point\",\"start\":{i},\"payload\":{{\"v\":{i}}}}}\n")
            }
            (Line::CrLf, true) => format!("{i},crlf\r\n"),
            (Line::CrLf, false) => {
                format!("{{\"kind\":\"point\",\"start\":{i},\"payload\":{{}}}}\r\n")
            }
            (Line::Blank, _) => "  \n".to_owned(),
            (Line::WrongFields, true) => format!("{i},a,b\n"),
            (Line::WrongFields, false) => "{\"kind\":\"point\"\n".to_owned(),
            (Line::NotUtf8, _) => {
                out.extend_from_slice(b"1,\xff\xfe\n");
                continue;
            }
            (Line::Cti, true) => format!("{i},cti\n"),
            (Line::Cti, false) => format!("{{\"kind\":\"cti\",\"time\":{i}}}\n"),
            (Line::Eof, true) => format!("{i},eof\n"),
            (Line::Eof, false) => "{\"kind\":\"eof\"}\n".to_owned(),
        };
        out.extend_from_slice(line.as_bytes());
    }
    out
}

type Read = (Vec<StreamItem<Row>>, IngressCounters, Vec<String>);

/// Reads the file to its end, in bulk or (`one_by_one`: paced at a speed that waits for
/// nothing) a line at a time.
async fn read(path: &Path, csv: bool, one_by_one: bool) -> Read {
    let replay = ReplayOptions {
        speed: one_by_one.then_some(1e18),
        ..ReplayOptions::default()
    };
    let letters = DeadLetterCollector::new();
    let mut query = Query::new("lines");
    let options = point("in");
    let s = if csv {
        let config = CsvInputConfig::new(path, "time")
            .time_format(TimeFormat::Ticks)
            .replay(replay);
        query.create_stream::<_, Row, _, _>(options, &CsvInput, &config)
    } else {
        let mut config = JsonLinesInputConfig::new(path);
        config.replay = replay;
        query.create_stream::<_, Row, _, _>(options, &JsonLinesInput, &config)
    }
    .expect("binds");
    query.bind_dead_letters(&s, letters.clone()).expect("binds");
    let out = CollectOutput::new();
    query.bind_output(&s, &out, &()).expect("binds");
    let report = query.start().expect("starts").wait().await.expect("runs");
    let counters = report.counters("in").expect("a stream");
    (out.items(), counters, letters.reasons())
}

fn temp(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("punctual-lines-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("temp dir");
    path
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Bulk and one line at a time agree, whatever the lines; files up to 40,000 lines span
    /// several of the reader's buffers and many batches.
    #[test]
    fn bulk_reads_what_one_line_at_a_time_reads(
        lines in prop::collection::vec(line(), 0..40_000),
        csv in any::<bool>(),
        bom in any::<bool>(),
        eof_at in prop::option::of(0usize..40_000),
        last_line_end in any::<bool>(),
    ) {
        let mut lines = lines;
        // At most one `eof`, where asked.
        if let Some(at) = eof_at.filter(|&at| at < lines.len()) {
            lines.insert(at, Line::Eof);
        }
        let mut bytes = file(&lines, csv, bom);
        if !last_line_end && bytes.last() == Some(&b'\n') {
            bytes.pop();
        }
        let name = format!("{}-{}-{}.{}", lines.len(), bom, eof_at.unwrap_or(0), if csv { "csv" } else { "jsonl" });
        let path = temp(&name, &bytes);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
        let bulk = runtime.block_on(read(&path, csv, false));
        let single = runtime.block_on(read(&path, csv, true));
        let _ = std::fs::remove_file(&path);
        prop_assert_eq!(&bulk.0, &single.0);
        let counts = |c: &IngressCounters| (c.events_in, c.ctis_in, c.malformed, c.skipped);
        prop_assert_eq!(counts(&bulk.1), counts(&single.1));
        prop_assert_eq!(&bulk.2, &single.2);
        // Every line is counted once (the final CTI is not a line; CSV's header is not one).
        let c = &bulk.1;
        let read = c.events_in + c.ctis_in.saturating_sub(1) + c.malformed + c.skipped;
        prop_assert_eq!(read, lines.len() as u64, "{:?}", c);
    }
}
