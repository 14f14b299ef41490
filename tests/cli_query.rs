//! The `punctual` command line beyond cases: `query`, `job` and `pipe` over files and sockets,
//! the query language's errors, human units, timelines.

use punctual::cli::{EXIT_FAILED, EXIT_OK, EXIT_USAGE};

mod cli_common;
mod query_analytic;
mod query_arrival;
mod query_asa_docs;
mod query_edges;
mod query_faults;
mod query_functions;
mod query_reference;
mod query_rows;
mod query_times;
mod query_values;
mod sample_alerts;
use std::path::Path;

use cli_common::{case, cli, holds, numbers, refused, refuses, s, shell, temp_dir, write};

/// `query` over flat JSON lines timed by TIMESTAMP BY: a tumbling window per key, times in
/// RFC 3339 in and out, results as flat rows, late events dropped behind --delay with
/// `--policy drop` and counted.
#[test]
fn query_runs_sql_over_flat_json_lines() {
    let dir = temp_dir("query-json");
    let input = dir.join("readings.jsonl");
    write(
        &input,
        [
            r#"{"time": "2026-12-01T10:00:00Z", "device": "a", "celsius": 20.5}"#,
            r#"{"time": "2026-12-01T10:00:03Z", "device": "b", "celsius": 30}"#,
            r#"{"time": "2026-12-01T10:00:02Z", "device": "a", "celsius": 21.5}"#,
            r#"{"time": "2026-12-01T10:00:11Z", "device": "a", "celsius": 22}"#,
            r#"{"time": "2026-12-01T09:59:00Z", "device": "a", "celsius": 99}"#,
        ]
        .join("\n"),
    );
    let output = dir.join("out.jsonl");
    let (code, _, err) = shell(&format!(
        "query 'SELECT device, COUNT(*) AS n, AVG(celsius) AS mean, System.Timestamp() AS window_end
         FROM readings TIMESTAMP BY time
         GROUP BY device, TumblingWindow(second, 10)' --input readings={} \
         --output {} --delay 2s --policy drop",
        s(&input),
        s(&output),
    ));
    assert_eq!(code, EXIT_OK, "{err}");
    let written = std::fs::read_to_string(&output).expect("written");
    // Flat rows: the result's time, then its fields; no CTIs.
    assert_eq!(
        written.lines().collect::<Vec<_>>(),
        vec![
            // Stream Analytics' windows: 10:00:00 closes the window (09:59:50, 10:00:00].
            r#"{"time":"2026-12-01T10:00:00Z","device":"a","n":1,"mean":20.5,"window_end":"2026-12-01T10:00:00Z"}"#,
            r#"{"time":"2026-12-01T10:00:10Z","device":"a","n":1,"mean":21.5,"window_end":"2026-12-01T10:00:10Z"}"#,
            r#"{"time":"2026-12-01T10:00:10Z","device":"b","n":1,"mean":30.0,"window_end":"2026-12-01T10:00:10Z"}"#,
            r#"{"time":"2026-12-01T10:00:20Z","device":"a","n":1,"mean":22.0,"window_end":"2026-12-01T10:00:20Z"}"#,
        ]
    );
    holds(
        &err,
        &[
            "events_in=5",
            "dropped=1",
            "max_start=2026-12-01T10:00:11Z",
            "dead letters: 1 (late 1)",
        ],
    );
}

/// `query` over CSV with epoch milliseconds in and out, and a reference join whose reference
/// input imports the readings' CTIs.
#[test]
fn query_reads_csv_and_joins_reference_data() {
    let dir = temp_dir("query-csv");
    let readings = dir.join("readings.csv");
    write(&readings, "ts,device,v\n1000,a,1\n2000,b,2\n12000,a,3\n");
    let rates = dir.join("rates.csv");
    write(
        &rates,
        "from,to,device,rate\n0,10000,a,2\n10000,20000,a,3\n0,20000,b,10\n",
    );
    let output = dir.join("out.jsonl");
    let (code, _, err) = shell(&format!(
        "query 'SELECT r.device, r.v * k.rate AS scaled FROM readings r TIMESTAMP BY ts
         JOIN rates k ON r.device = k.device' --input readings={} \
         --input rates={},time=from,end=to --time-format epoch-ms --output {}",
        s(&readings),
        s(&rates),
        s(&output),
    ));
    assert_eq!(code, EXIT_OK, "{err}");
    let out = std::fs::read_to_string(&output).expect("written");
    let events: Vec<&str> = out.lines().collect();
    assert_eq!(
        events,
        vec![
            r#"{"time":1000,"device":"a","scaled":2}"#,
            r#"{"time":2000,"device":"b","scaled":20}"#,
            r#"{"time":12000,"device":"a","scaled":9}"#,
        ]
    );
    // The same query on two worker threads of the cluster executor: the same events.
    let split = dir.join("split.jsonl");
    let (code, _, err) = shell(&format!(
        "query 'SELECT r.device, r.v * k.rate AS scaled FROM readings r TIMESTAMP BY ts
         JOIN rates k ON r.device = k.device' --input readings={} \
         --input rates={},time=from,end=to --time-format epoch-ms --output {} \
         --workers 2",
        s(&readings),
        s(&rates),
        s(&split),
    ));
    assert_eq!(code, EXIT_OK, "{err}");
    let text = std::fs::read_to_string(&split).expect("written");
    let mut got: Vec<&str> = text.lines().collect();
    got.sort();
    let mut want = events.clone();
    want.sort();
    assert_eq!(got, want, "on two workers");
    holds(&err, &["stream readings: events_in=3"]);
}

/// What cannot run says so in one line with where, and exits non-zero: a field the input does
/// not have, a syntax error, a time field no line has, a column the CSV does not have, an
/// input not given.
#[test]
fn query_errors_point_at_the_cause() {
    let dir = temp_dir("query-errors");
    let csv = dir.join("r.csv");
    write(&csv, "time,device\n2026-12-01T10:00:00Z,a\n");
    let json = dir.join("r.jsonl");
    write(&json, "{\"time\": 1, \"device\": \"a\"}\n{\"time\": 2}\n");
    let input = |p: &Path| format!("r={}", s(p));
    let (code, _, err) = shell(&format!(
        "query 'SELECT devise FROM r TIMESTAMP BY time' --input '{}'",
        &input(&csv),
    ));
    assert_eq!(code, EXIT_USAGE, "{err}");
    holds(&err, &["line 1, column 8: `devise` is not a field of `r` (did you mean `device`? its fields: time, device)"]);
    assert!(
        err.contains("  |        ^"),
        "a caret under the column: {err}"
    );
    refuses(
        &format!(
            "query 'SELECT device FROM r WHERE' --input '{}'",
            &input(&csv),
        ),
        "syntax error at line 1, column 27: expected an expression",
    );
    let (code, _, err) = shell(&format!(
        "query 'SELECT device FROM r TIMESTAMP BY tiem' --input '{}'",
        &input(&json),
    ));
    assert_eq!(code, EXIT_FAILED, "{err}");
    holds(
        &err,
        &[
            "error: input `r`: every line (2) was malformed; the first: ",
            "r.jsonl:1: no field `tiem` (the event time)",
        ],
    );
    refuses(
        &format!(
            "query 'SELECT device FROM r TIMESTAMP BY tiem' --input '{}'",
            &input(&csv),
        ),
        "has no column `tiem` (its columns: time, device)",
    );
    refused(
        &["query", "SELECT device FROM r TIMESTAMP BY time"],
        "the query reads `r`: give it an input ([inputs.r], or --input r=FILE)",
    );
    let (code, _, err) = shell(&format!(
        "query 'SELECT device INTO a FROM r TIMESTAMP BY time; SELECT device INTO b FROM r TIMESTAMP BY time' \
         --input '{}'",
        &input(&csv),
    ));
    assert_eq!(code, EXIT_USAGE);
    holds(&err, &["the query writes INTO a, b: give each an output ([outputs.NAME], or --output NAME=FILE)"]);
    refuses(
        &format!(
            "query 'SELECT device FROM r TIMESTAMP BY time OVER device' --input '{}'",
            &input(&csv),
        ),
        "OVER device (a watermark per key) needs arrival times",
    );
    let (code, _, err) = shell(&format!(
        "query 'SELECT 1 FROM r' --input '{}' --time-format days",
        &input(&csv),
    ));
    assert_eq!(code, EXIT_USAGE);
    holds(
        &err,
        &[
            "invalid value 'days' for '--time-format <FORMAT>'",
            "[possible values: rfc3339, epoch-ms, epoch-s, ticks]",
        ],
    );
}

/// A job file: every query input and output named, unknown keys refused by name, paths
/// relative to the file.
#[test]
fn job_files_run_and_refuse_what_they_do_not_know() {
    let dir = temp_dir("job");
    write(dir.join("r.csv"), "t,device,v\n1000,a,1\n2000,a,5\n");
    let job = dir.join("job.toml");
    write(
        &job,
        r#"
query = "SELECT device, SUM(v) AS total INTO totals FROM r TIMESTAMP BY t GROUP BY device, TumblingWindow(second, 10)"
[inputs.r]
path = "r.csv"
time_format = "epoch-ms"
[outputs.totals]
path = "totals.jsonl"
time_format = "epoch-ms"
"#,
    );
    let (code, _, err) = cli(&["job", s(&job)]);
    assert_eq!(code, EXIT_OK, "{err}");
    let written = std::fs::read_to_string(dir.join("totals.jsonl")).expect("written");
    holds(&written, &[r#"{"time":10000,"device":"a","total":6}"#]);
    write(
        &job,
        "query = \"SELECT v FROM r\"\n[inputs.r]\npathh = \"r.csv\"\n",
    );
    refused(&["job", s(&job)], "unknown field `pathh`");
    write(&job, "query = \"SELECT v FROM r\"\nqueyr = 1\n");
    let (_, _, err) = cli(&["job", s(&job)]);
    holds(&err, &["unknown field `queyr`"]);
    write(&job, "query = \"SELECT v FROM r TIMESTAMP BY t\"\n[inputs.r]\npath = \"r.csv\"\ndelay = \"soon\"\n[outputs.output]\npath = \"o.jsonl\"\n");
    refused(&["job", s(&job)], "`soon` is not a duration");
}

/// `pipe` reads flat JSON lines timed by a field, writes RFC 3339 times by default, and says
/// in one line, exiting 1, when every line was malformed; a CSV column that does not exist is
/// a bad command line.
#[test]
fn pipe_reads_flat_lines_and_refuses_to_say_nothing() {
    let dir = temp_dir("pipe-flat");
    let input = dir.join("flat.jsonl");
    write(&input, "{\"time\": \"2026-12-01T10:00:01Z\", \"v\": 1}\n{\"time\": \"2026-12-01T10:00:00Z\", \"v\": 2}\n");
    let output = dir.join("out.jsonl");
    let (code, _, err) = shell(&format!(
        "pipe -i {} -o {} --time-field time --delay 5s",
        s(&input),
        s(&output),
    ));
    assert_eq!(code, EXIT_OK, "{err}");
    let written = std::fs::read_to_string(&output).expect("written");
    assert!(
        written.contains(
            "\n{\"kind\":\"point\",\"start\":\"2026-12-01T10:00:00Z\",\"payload\":{\"time\":\"2026-12-01T10:00:00Z\",\"v\":2}}\n"
        ) && written.starts_with("{\"kind\":\"cti\",\"time\":\"2026-12-01T09:59:56Z\"}"),
        "{written}"
    );
    // Flat lines read as items: every line malformed, said once, exit 1.
    let (code, _, err) = cli(&["pipe", "-i", s(&input), "-o", s(&output)]);
    assert_eq!(code, EXIT_FAILED, "{err}");
    holds(
        &err,
        &[
            "error: every line (2) was malformed; the first: ",
            "flat.jsonl:1: ",
        ],
    );
    let csv = dir.join("in.csv");
    write(&csv, "t,name\n2,b\n");
    refuses(
        &format!("pipe -i {} -o {} --csv nosuchcolumn", s(&csv), s(&output),),
        "has no column `nosuchcolumn` (its columns: t, name)",
    );
}

/// Durations in a case are written as people write them (`"1ms"`), or as ticks.
#[test]
fn cases_take_durations_in_human_units() {
    let dir = case(
        "human-units",
        "[streams.in]\nshape = \"point\"\ngenerate = { every = 1, delay = \"0s\", final = true }\n[query]\noutput = \"w\"\n[[query.step]]\nname = \"w\"\nop = \"tumbling\"\ninput = \"in\"\nsize = \"1ms\"\naggregates = [{ fn = \"count\", as = \"n\" }]\n",
        "{\"stream\": \"in\", \"kind\": \"point\", \"start\": 1, \"payload\": {}}\n{\"stream\": \"in\", \"kind\": \"point\", \"start\": 5000, \"payload\": {}}\n{\"stream\": \"in\", \"kind\": \"point\", \"start\": 15000, \"payload\": {}}\n",
        "",
    );
    let (code, out, err) = cli(&["run", s(&dir)]);
    assert_eq!(code, EXIT_OK, "{err}");
    holds(
        &out,
        &[
            r#"{"kind":"point","start":10000,"payload":{"n":2}}"#,
            r#"{"kind":"point","start":20000,"payload":{"n":1}}"#,
        ],
    );
    let dir = case(
        "bad-units",
        "[streams.in]\nshape = \"point\"\n[query]\noutput = \"w\"\n[[query.step]]\nname = \"w\"\nop = \"tumbling\"\ninput = \"in\"\nsize = \"a while\"\naggregates = [{ fn = \"count\", as = \"n\" }]\n",
        "",
        "",
    );
    let (code, _, err) = cli(&["run", s(&dir)]);
    assert_eq!(code, EXIT_FAILED);
    holds(&err, &["`a while` is not a duration"]);
}

/// A field the query names that no record has is an error before anything runs: the fields
/// of a JSON-lines input are those of its first lines (or listed in the job).
#[test]
fn a_misspelled_field_over_json_lines_is_an_error() {
    let dir = temp_dir("query-fields");
    let input = dir.join("r.jsonl");
    write(&input, "{\"time\": 1, \"device\": \"a\", \"celsius\": 20}\n{\"time\": 2, \"device\": \"b\", \"humidity\": 3}\n");
    refuses(&format!(
        "query 'SELECT device, AVG(celcius) AS mean FROM r TIMESTAMP BY time GROUP BY device, TumblingWindow(tick, 10)' \
         --input r={} --time-format ticks",
        s(&input),
    ), "column 20: `celcius` is not a field of `r` (did you mean `celsius`? its fields: time, device, celsius, humidity)");
}

/// `--timeline FILE.svg` on `query`, `job` and `pipe`: the inputs (what they released, and
/// what was dropped) and the outputs (each result with its values) on one time axis.
#[test]
fn query_pipe_and_job_draw_a_timeline() {
    let dir = temp_dir("timeline");
    let input = dir.join("r.jsonl");
    write(
        &input,
        [
            r#"{"time": "2026-12-01T10:00:01Z", "v": 1}"#,
            r#"{"time": "2026-12-01T10:00:12Z", "v": 2}"#,
            r#"{"time": "2026-12-01T10:00:02Z", "v": 3}"#,
            r#"{"time": "2026-12-01T10:00:14Z", "v": 4}"#,
        ]
        .join("\n"),
    );
    let svg_path = dir.join("query.svg");
    let (code, _, err) = shell(&format!(
        "query 'SELECT COUNT(*) AS n, SUM(v) AS total FROM r TIMESTAMP BY time GROUP BY TumblingWindow(second, 10)' \
         --input r={} --output {} --timeline {} --policy drop",
        s(&input),
        s(&dir.join("out.jsonl")),
        s(&svg_path),
    ));
    assert_eq!(code, EXIT_OK, "{err}");
    let svg = std::fs::read_to_string(&svg_path).expect("the timeline is written");
    let doc = roxmltree::Document::parse(&svg).expect("well-formed SVG");
    let count = |class: &str| {
        doc.descendants()
            .filter(|n| {
                n.attribute("class").is_some_and(|c| {
                    c.split(' ').any(|w| w == "event") && c.split(' ').any(|w| w == class)
                })
            })
            .count()
    };
    // Three readings released, one dropped (late: 10:00:02 after the CTI at 10:00:12), two
    // windows out.
    assert_eq!(count("event"), 6, "{svg}");
    assert_eq!(count("dropped"), 1);
    assert_eq!(count("output"), 2);
    let values: Vec<&str> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("value"))
        .filter_map(|n| n.text())
        .collect();
    assert_eq!(values, vec!["n=1 total=1", "n=2 total=6"]);
    holds(&svg, &[">in: r<", ">out: output<"]);
    assert!(svg.contains(">UTC, 2026-12-01<"), "clock time on the axis");

    let svg_path = dir.join("pipe.svg");
    let (code, _, err) = shell(&format!(
        "pipe -i {} -o {} --time-field time --delay 0s --timeline {}",
        s(&input),
        s(&dir.join("piped.jsonl")),
        s(&svg_path),
    ));
    assert_eq!(code, EXIT_OK, "{err}");
    let svg = std::fs::read_to_string(&svg_path).expect("the timeline is written");
    assert!(roxmltree::Document::parse(&svg).is_ok());
    holds(&svg, &[">in: in<", "class=\"event point dropped\""]);

    let job = dir.join("job.toml");
    write(&job, "query = \"SELECT v FROM r TIMESTAMP BY time WHERE v > 1\"\ntimeline = \"job.svg\"\n[inputs.r]\npath = \"r.jsonl\"\n[outputs.output]\npath = \"job.jsonl\"\n");
    let (code, _, err) = cli(&["job", s(&job)]);
    assert_eq!(code, EXIT_OK, "{err}");
    assert!(std::fs::read_to_string(dir.join("job.svg")).is_ok_and(|s| s.contains(">out: output<")));
    refuses(
        &format!(
            "pipe -i {} -o {} --timeline t.svg --checkpoint cp",
            s(&input),
            s(&dir.join("x.jsonl")),
        ),
        "'--timeline <FILE.svg>' cannot be used with '--checkpoint <DIR>'",
    );
}

/// A timeline counts every event of a long lane (a lane of more than 40 events is drawn as
/// counts; it drew only the first 500).
#[test]
fn a_timeline_counts_every_event_of_a_long_lane() {
    let dir = temp_dir("timeline-long");
    let input = dir.join("many.jsonl");
    let text: String = (0..700)
        .map(|i| format!("{{\"kind\":\"point\",\"start\":{i},\"payload\":{{}}}}\n"))
        .collect();
    write(&input, text);
    let svg_path = dir.join("many.svg");
    let (code, _, err) = shell(&format!(
        "pipe -i {} -o {} --timeline {}",
        s(&input),
        s(&dir.join("out.jsonl")),
        s(&svg_path),
    ));
    assert_eq!(code, EXIT_OK, "{err}");
    let svg = std::fs::read_to_string(&svg_path).expect("written");
    assert!(svg.contains(">in: in<"), "the lane's label is its name");
    let doc = roxmltree::Document::parse(&svg).expect("well-formed SVG");
    let marks: usize = doc
        .descendants()
        .filter(|n| {
            n.attribute("class")
                .is_some_and(|c| c.contains("summary") && !c.contains("output"))
        })
        .filter_map(|n| n.attribute("data-count")?.parse::<usize>().ok())
        .sum();
    assert_eq!(marks, 700, "the input lane's");
}

/// The fields of a JSON-lines input are those of its first 1,000 lines: a field seen only
/// later is unknown to the query unless the job lists the fields.
#[test]
fn fields_are_sampled_from_the_first_thousand_lines_or_listed() {
    let dir = temp_dir("fields-sampled");
    let mut text: String = (0..1000)
        .map(|i| format!("{{\"t\": {i}, \"a\": 1}}\n"))
        .collect();
    text.push_str("{\"t\": 1000, \"a\": 1, \"late_field\": 7}\n");
    write(dir.join("r.jsonl"), text);
    let job = dir.join("job.toml");
    let write = |fields: &str| {
        write(&job, format!("query = \"SELECT late_field FROM r TIMESTAMP BY t WHERE late_field > 0\"\n[inputs.r]\npath = \"r.jsonl\"\ntime_format = \"ticks\"\n{fields}[outputs.output]\npath = \"out.jsonl\"\n"));
    };
    write("");
    refused(
        &["job", s(&job)],
        "`late_field` is not a field of `r` (its fields: t, a)",
    );
    write("fields = [\"t\", \"a\", \"late_field\"]\n");
    let (code, _, err) = cli(&["job", s(&job)]);
    assert_eq!(code, EXIT_OK, "{err}");
    let out = std::fs::read_to_string(dir.join("out.jsonl")).expect("written");
    holds(&out, &["\"late_field\":7"]);
}

/// Job inputs and outputs over TCP: an input connecting to a server that sends items, an
/// output connecting to a server that reads the results.
#[test]
fn a_job_reads_and_writes_over_tcp() {
    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpListener;
    let dir = temp_dir("job-tcp");
    let source = TcpListener::bind("127.0.0.1:0").expect("a free port");
    let sink = TcpListener::bind("127.0.0.1:0").expect("a free port");
    let (source_addr, sink_addr) = (
        source.local_addr().expect("addr"),
        sink.local_addr().expect("addr"),
    );
    let server = std::thread::spawn(move || {
        let (mut conn, _) = source.accept().expect("the job connects");
        for i in 1..=3 {
            writeln!(
                conn,
                "{{\"kind\":\"point\",\"start\":{i},\"payload\":{{\"v\":{i}}}}}"
            )
            .expect("sent");
        }
        // Closing the connection ends the input.
    });
    let reader = std::thread::spawn(move || {
        let (conn, _) = sink.accept().expect("the job connects");
        BufReader::new(conn)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<String>>()
    });
    let job = dir.join("job.toml");
    write(&job, format!(
            "query = \"SELECT v * 10 AS w FROM r WHERE v > 1\"\n[inputs.r]\nconnect = \"{source_addr}\"\n[outputs.output]\nconnect = \"{sink_addr}\"\ntime_format = \"ticks\"\n"
        ));
    let (code, _, err) = cli(&["job", s(&job)]);
    assert_eq!(code, EXIT_OK, "{err}");
    server.join().expect("the source ends");
    let lines = reader.join().expect("the sink ends");
    let events: Vec<&String> = lines.iter().filter(|l| l.contains("point")).collect();
    assert_eq!(events.len(), 2, "{lines:?}");
    assert!(
        events[0].contains("\"w\":20") && events[1].contains("\"w\":30"),
        "{lines:?}"
    );
    // A source and a target are one of each.
    write(&job, "query = \"SELECT v FROM r\"\n[inputs.r]\npath = \"r.jsonl\"\nconnect = \"127.0.0.1:1\"\n[outputs.output]\npath = \"-\"\n");
    refused(&["job", s(&job)], "give one source");
}

/// A job input with a watermark strategy: the CTI follows the highest time, `bounded` behind;
/// an event further behind is dropped and counted.
#[test]
fn a_job_input_takes_a_bounded_watermark() {
    let dir = temp_dir("job-watermark");
    write(dir.join("r.jsonl"), "{\"t\": 10, \"v\": 1}\n{\"t\": 50, \"v\": 2}\n{\"t\": 45, \"v\": 3}\n{\"t\": 20, \"v\": 4}\n");
    let job = dir.join("job.toml");
    write(&job, "query = \"SELECT v FROM r TIMESTAMP BY t\"\n[inputs.r]\npath = \"r.jsonl\"\ntime_format = \"ticks\"\nwatermark = { bounded = \"1us\" }\npolicy = \"drop\"\n[outputs.output]\npath = \"out.jsonl\"\ntime_format = \"ticks\"\n");
    let (code, _, err) = cli(&["job", s(&job)]);
    assert_eq!(code, EXIT_OK, "{err}");
    // 1 us = 10 ticks: after 50 the CTI is 40; 45 is on time, 20 is late.
    assert_eq!(numbers(&dir.join("out.jsonl"), "v"), vec![1, 3, 2]);
    holds(&err, &["dropped=1"]);
    write(&job, "query = \"SELECT v FROM r TIMESTAMP BY t\"\n[inputs.r]\npath = \"r.jsonl\"\ndelay = \"1s\"\nwatermark = { bounded = \"1s\" }\n[outputs.output]\npath = \"out.jsonl\"\n");
    refused(
        &["job", s(&job)],
        "give `watermark`, `delay` or `generate`, one of them",
    );
    // Stream Analytics' tolerances need arrival times, which a file has none of; a watermark
    // is one kind or the other; `late` goes with `out_of_order` (and is a span or
    // "indefinite", below).
    for (watermark, says) in [
        (
            "{ out_of_order = \"1s\" }",
            "needs arrival times: a Kafka input's",
        ),
        ("{ final = true }", "takes `bounded`"),
        (
            "{ bounded = \"1s\", out_of_order = \"1s\" }",
            "takes `bounded`",
        ),
        (
            "{ bounded = \"1s\", late = \"5s\" }",
            "they go with `out_of_order`",
        ),
    ] {
        write(&job, format!("query = \"SELECT v FROM r TIMESTAMP BY t\"\n[inputs.r]\npath = \"r.jsonl\"\nwatermark = {watermark}\n[outputs.output]\npath = \"out.jsonl\"\n"));
        let (code, _, err) = cli(&["job", s(&job)]);
        assert_eq!(code, EXIT_USAGE, "{watermark}: {err}");
        assert!(
            err.contains("input `r`") && err.contains(says),
            "{watermark}: {err}"
        );
    }
    write(&job, "query = \"SELECT v FROM r TIMESTAMP BY t\"\n[inputs.r]\npath = \"r.jsonl\"\nwatermark = { out_of_order = \"1s\", late = \"forever\" }\n[outputs.output]\npath = \"out.jsonl\"\n");
    let (code, _, err) = cli(&["job", s(&job)]);
    assert_eq!(code, EXIT_USAGE, "{err}");
    holds(&err, &["line 4, column 43", "or \"indefinite\" (no limit)"]);
}

/// An input read in arrival order: a filter's results go out in the order their events came
/// (sorted, they wait for the CTI above them); a window gives the same results either way;
/// `order` takes `time` or `arrival`, and items of any kind (no time field) only `time`.
#[test]
fn an_input_in_arrival_order_passes_events_on_as_they_come() {
    let dir = temp_dir("arrival");
    let input = dir.join("readings.jsonl");
    write(
        &input,
        [
            r#"{"time": "2026-12-01T10:00:00Z", "device": "a", "celsius": 20}"#,
            r#"{"time": "2026-12-01T10:00:03Z", "device": "b", "celsius": 30}"#,
            r#"{"time": "2026-12-01T10:00:02Z", "device": "a", "celsius": 22}"#,
            r#"{"time": "2026-12-01T10:00:11Z", "device": "a", "celsius": 24}"#,
        ]
        .join("\n"),
    );
    let run = |sql: &str, order: &str| {
        let output = dir.join(format!("out-{order}.jsonl"));
        let (code, _, err) = shell(&format!(
            "query '{}' --input readings={},order={order} --output {} --delay 5s",
            sql,
            s(&input),
            s(&output),
        ));
        assert_eq!(code, EXIT_OK, "{err}");
        let written = std::fs::read_to_string(&output).expect("written");
        let points: Vec<String> = written.lines().map(str::to_owned).collect();
        points
    };
    let filter = "SELECT celsius FROM readings TIMESTAMP BY time WHERE celsius > 0";
    let at = |t: &str, c: i64| format!(r#"{{"time":"2026-12-01T10:00:{t}Z","celsius":{c}}}"#);
    assert_eq!(
        run(filter, "arrival"),
        vec![at("00", 20), at("03", 30), at("02", 22), at("11", 24)]
    );
    assert_eq!(
        run(filter, "time"),
        vec![at("00", 20), at("02", 22), at("03", 30), at("11", 24)]
    );
    let window = "SELECT device, SUM(celsius) AS total FROM readings TIMESTAMP BY time GROUP BY device, TumblingWindow(second, 10)";
    let sorted = run(window, "time");
    // a's 20 at 10:00:00 closes the window ending then; 22 and b's 30 the one ending 10:00:10.
    assert_eq!(sorted.len(), 4, "{sorted:?}");
    // The same results (those at one time in any order: the order between CTIs is free).
    let mut arrival = run(window, "arrival");
    let mut sorted = sorted;
    arrival.sort();
    sorted.sort();
    assert_eq!(arrival, sorted);

    refuses(
        &format!(
            "query '{}' --input readings={},order=sideways",
            filter,
            s(&input),
        ),
        "readings: order is `time` or `arrival`, not `sideways`",
    );
    let items = dir.join("items.jsonl");
    write(
        &items,
        "{\"kind\":\"point\",\"start\":1,\"payload\":{\"v\":1}}\n",
    );
    let job = dir.join("job.toml");
    write(&job, "query = \"SELECT v FROM r\"\n[inputs.r]\npath = \"items.jsonl\"\norder = \"arrival\"\n[outputs.output]\npath = \"-\"\n");
    refused(
        &["job", s(&job)],
        "input `r`: order = \"arrival\" takes records with a time field",
    );
    write(
        &job,
        "query = \"SELECT v FROM r\"\n[inputs.r]\npath = \"items.jsonl\"\norder = \"random\"\n",
    );
    refused(&["job", s(&job)], "unknown variant `random`");
}

/// A negative delay is refused before the run, with the fix named: on `query` and `pipe`
/// (`--delay`) and in a job file (`delay`, `generate.delay`). Before, it was taken and every
/// event but the first was dropped as late.
#[test]
fn a_negative_delay_is_refused_everywhere() {
    let dir = temp_dir("negative-delay");
    let input = dir.join("r.jsonl");
    write(
        &input,
        "{\"t\": 1, \"v\": 1}\n{\"t\": 2, \"v\": 2}\n{\"t\": 3, \"v\": 3}\n",
    );
    let said = "a delay cannot be negative";
    refuses(
        &format!(
            "query 'SELECT v FROM r TIMESTAMP BY t' --input r={} --delay -5s",
            s(&input),
        ),
        &format!("invalid value '-5s' for '--out-of-order <DURATION>': {said}"),
    );
    refused(&["pipe", "-i", s(&input), "--delay", "-1tick"], said);
    for setting in [
        "delay = \"-5s\"",
        "generate = { every = 1, delay = \"-5s\" }",
    ] {
        let job = dir.join("job.toml");
        write(&job, format!(
                "query = \"SELECT v INTO o FROM r TIMESTAMP BY t\"\n[inputs.r]\npath = \"r.jsonl\"\ntime_format = \"ticks\"\n{setting}\n[outputs.o]\npath = \"o.jsonl\"\n"
            ));
        let (code, _, err) = cli(&["job", s(&job)]);
        assert_eq!(code, EXIT_USAGE, "{setting}: {err}");
        assert!(err.contains(said), "{setting}: {err}");
        assert!(
            !dir.join("o.jsonl").exists(),
            "{setting}: refused before the run"
        );
    }
    // Zero is a delay, and the run goes on.
    let (code, _, err) = shell(&format!(
        "query 'SELECT v FROM r TIMESTAMP BY t' --input r={} --delay 0s \
         --time-format ticks --output {}",
        s(&input),
        s(&dir.join("zero.jsonl")),
    ));
    assert_eq!(code, EXIT_OK, "{err}");
}

/// Files a run would write over each other, or over what it reads, are refused before the
/// run (exit 2), and nothing is written: two outputs on one file used to lose one output's
/// rows and leave a torn line; an output on the input's file destroyed the input.
#[test]
fn files_that_collide_are_refused_before_the_run() {
    let dir = temp_dir("collide");
    let input = dir.join("r.jsonl");
    let lines = "{\"t\": 1, \"v\": 1}\n{\"t\": 2, \"v\": 2}\n";
    write(&input, lines);
    let query = "SELECT v INTO a FROM r TIMESTAMP BY t; SELECT v INTO b FROM r TIMESTAMP BY t";
    for (outputs, said) in [
        (
            "[outputs.a]\npath = \"o.jsonl\"\n[outputs.b]\npath = \"./o.jsonl\"\n",
            "output `a` and output `b` both write",
        ),
        (
            "[outputs.a]\npath = \"r.jsonl\"\n[outputs.b]\npath = \"b.jsonl\"\n",
            "output `a` writes",
        ),
        (
            "dead_letters = \"b.jsonl\"\n[outputs.a]\npath = \"a.jsonl\"\n[outputs.b]\npath = \"b.jsonl\"\n",
            "output `b` and the dead letters both write",
        ),
    ] {
        let job = dir.join("job.toml");
        let (top, tables) = outputs.split_at(outputs.find('[').unwrap_or(0));
        write(&job, format!("query = \"{query}\"\n{top}[inputs.r]\npath = \"r.jsonl\"\ntime_format = \"ticks\"\n{tables}"));
        let (code, _, err) = cli(&["job", s(&job)]);
        assert_eq!(code, EXIT_USAGE, "{outputs}: {err}");
        assert!(err.contains(said), "{outputs}: {err}");
        assert_eq!(std::fs::read_to_string(&input).expect("kept"), lines);
        for name in ["o.jsonl", "a.jsonl", "b.jsonl"] {
            assert!(!dir.join(name).exists(), "{outputs}: {name} written");
        }
    }
    refused(
        &["pipe", "-i", s(&input), "-o", s(&input)],
        "which the input reads",
    );
    assert_eq!(std::fs::read_to_string(&input).expect("kept"), lines);
}

/// Many events at one time (daily data with date-only times) wait for a CTI after that time:
/// the cap on what may wait is set on `query` (`--max-buffered`) and in a job file
/// (`max_buffered`), and its error says what the CTIs are stuck on, in RFC 3339.
#[test]
fn the_buffer_cap_is_settable_and_its_error_says_what_waits() {
    let dir = temp_dir("one-time");
    let input = dir.join("r.jsonl");
    let mut lines = String::new();
    for v in 0..50 {
        lines.push_str(&format!(
            "{{\"day\": \"2024-05-01T00:00:00Z\", \"v\": {v}}}\n"
        ));
    }
    lines.push_str("{\"day\": \"2024-05-02T00:00:00Z\", \"v\": 50}\n");
    write(&input, lines);
    let run = |cap: &str| {
        shell(&format!(
            "query 'SELECT COUNT(*) AS n FROM r TIMESTAMP BY day GROUP BY TumblingWindow(day, 1)' \
             --input r={} --max-buffered '{}' --output {}",
            s(&input),
            cap,
            s(&dir.join("out.jsonl")),
        ))
    };
    let (code, _, err) = run("20");
    assert_eq!(code, EXIT_FAILED, "{err}");
    holds(&err, &["20 events wait for a CTI (the input's buffer cap): the last CTI is at 2024-05-01T00:00:00Z, the earliest event held is at 2024-05-01T00:00:00Z"]);
    let (code, _, err) = run("60");
    assert_eq!(code, EXIT_OK, "{err}");
    let out = std::fs::read_to_string(dir.join("out.jsonl")).expect("written");
    holds(&out, &["\"n\":50"]);
    let (code, _, err) = run("0");
    assert_eq!(code, EXIT_USAGE, "{err}");
    // The same cap in a job file.
    let job = dir.join("job.toml");
    write(&job, "query = \"SELECT COUNT(*) AS n INTO o FROM r TIMESTAMP BY day GROUP BY TumblingWindow(day, 1)\"\n[inputs.r]\npath = \"r.jsonl\"\nmax_buffered = 20\n[outputs.o]\npath = \"o.jsonl\"\n");
    let (code, _, err) = cli(&["job", s(&job)]);
    assert_eq!(code, EXIT_FAILED, "{err}");
    holds(&err, &["20 events wait for a CTI"]);
}

/// A value that would grow past the limit (REPLACE nested to a gigabyte) is not made: its row
/// is dropped by the projection with the reason, counted and dead-lettered, and the other
/// rows go on. Before, the process grew to gigabytes and aborted.
#[test]
fn a_value_over_the_size_limit_is_a_dead_letter_not_an_abort() {
    let dir = temp_dir("huge-value");
    let input = dir.join("r.jsonl");
    write(
        &input,
        "{\"t\": 1, \"s\": \"aaaaaaaaaa\"}\n{\"t\": 2, \"s\": \"bbbbbbbbbb\"}\n",
    );
    let mut grow = "s".to_owned();
    for _ in 0..9 {
        grow = format!("REPLACE({grow}, 'a', 'aaaaaaaaaa')");
    }
    let dead = dir.join("dead.jsonl");
    let out = dir.join("out.jsonl");
    let (code, _, err) = shell(&format!(
        "query \"SELECT LEN({grow}) AS n FROM r TIMESTAMP BY t\" --input r={} \
         --time-format ticks --output {} --dead-letters {}",
        s(&input),
        s(&out),
        s(&dead),
    ));
    assert_eq!(code, EXIT_OK, "{err}");
    holds(&err, &["map `output`: dropped=1"]);
    let letters = std::fs::read_to_string(&dead).expect("written");
    holds(
        &letters,
        &["its select list cannot be computed: a text over the limit of 16 MiB"],
    );
    let written = std::fs::read_to_string(&out).expect("written");
    let results: Vec<&str> = written.lines().collect();
    assert_eq!(results.len(), 1, "{written}");
    assert!(results[0].contains("\"n\":10"), "{written}");
}

/// `fields` is the user's list, not the file's header: an empty list is refused as such, and
/// a time column missing from the list is said to be missing from the list.
#[test]
fn a_fields_list_is_named_as_the_list_it_is() {
    let dir = temp_dir("fields-list");
    write(dir.join("r.csv"), "t,v\n1,1\n");
    let job = dir.join("job.toml");
    for (fields, said) in [
        ("[]", "`fields = []` lists no field"),
        (
            "[\"v\"]",
            "`fields` of the input does not list `t` (it lists: v)",
        ),
    ] {
        write(&job, format!("query = \"SELECT v INTO o FROM r TIMESTAMP BY t\"\n[inputs.r]\npath = \"r.csv\"\nfields = {fields}\n[outputs.o]\npath = \"o.jsonl\"\n"));
        let (code, _, err) = cli(&["job", s(&job)]);
        assert_eq!(code, EXIT_USAGE, "{err}");
        holds(&err, &[said]);
        assert!(!err.contains("r.csv has no column"), "{err}");
    }
}

/// Smaller findings of the reliability review, each as the user meets it: an output's failure
/// names the output; a source joined with itself without DATEDIFF is a compile error with
/// its position (exit 2), not an "import cycle" at exit 1; a rejected CTI is counted as one in
/// the dead letters' summary, as the counters count it.
#[test]
fn errors_and_counts_name_what_the_user_wrote() {
    let dir = temp_dir("names");
    let input = dir.join("r.jsonl");
    write(&input, "{\"t\": 1, \"k\": 1, \"v\": 1}\n");
    let (code, _, err) = shell(&format!(
        "query 'SELECT v INTO alerts FROM r TIMESTAMP BY t' --input r={} \
         --time-format ticks --output alerts={}",
        s(&input),
        s(&dir.join("missing-dir").join("o.jsonl")),
    ));
    assert_eq!(code, EXIT_FAILED, "{err}");
    holds(&err, &["the output adapter of `alerts` failed"]);
    refuses(
        &format!(
            "query 'SELECT a.v FROM r a TIMESTAMP BY t JOIN r b TIMESTAMP BY t ON a.k = b.k' \
         --input r={}",
            s(&input),
        ),
        "line 1, column 36: `r` is joined with itself without DATEDIFF",
    );
    let items = dir.join("items.jsonl");
    write(
        &items,
        "{\"kind\":\"point\",\"start\":1,\"payload\":{}}\n{\"kind\":\"cti\",\"time\":\"-inf\"}\n",
    );
    let (code, _, err) = cli(&["pipe", "-i", s(&items), "-o", s(&dir.join("out.jsonl"))]);
    assert_eq!(code, EXIT_OK, "{err}");
    holds(
        &err,
        &[
            "rejected=0 rejected_ctis=1",
            "dead letters: 1 (rejected CTI 1)",
        ],
    );
}
