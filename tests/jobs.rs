//! Job files and the query language give what the Rust API gives: the sensors sample's job
//! (samples/jobs/sensors.toml) against the same query written with the typed API over the
//! same inputs and settings, result for result.

use std::path::PathBuf;

use punctual::adapters::line::TimeFormat;
use punctual::adapters::{CollectOutput, JsonLinesInput, JsonLinesInputConfig};
use punctual::cli::{main, EXIT_OK};
use punctual::prelude::*;
use punctual::runtime::{InputOptions, Query};

fn samples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("samples")
}

use punctual_samples::sensors::{
    imported_from, readings_settings, Calibrated, Calibration, Reading,
};

/// The sample's query with the Rust API: (window end, device, average, count) per result.
async fn rust_version() -> Vec<(Time, String, f64, u64)> {
    let log = samples().join("data").join("sensors.jsonl");
    let mut query = Query::new("sensors");
    let readings = query
        .create_stream::<_, Reading, _, _>(
            InputOptions::new("readings", EventShape::Point).settings(readings_settings()),
            &JsonLinesInput,
            &JsonLinesInputConfig::new(&log).stream("readings"),
        )
        .expect("binds");
    let calibration = query
        .create_stream::<_, Calibration, _, _>(
            InputOptions::new("calibration", EventShape::Edge)
                .settings(imported_from("readings"))
                .reference(),
            &JsonLinesInput,
            &JsonLinesInputConfig::new(&log).stream("calibration"),
        )
        .expect("binds");
    let averages = readings
        .join_on(
            &calibration,
            |r| r.device.clone(),
            |c| c.device.clone(),
            Calibrated::of,
        )
        // The language's windows are Stream Analytics': (end - 60 s, end], ending every 10 s.
        .hopping_window(TimeSpan::from_secs(60), TimeSpan::from_secs(10))
        .alignment(Time::EPOCH + TimeSpan::from_ticks(1) - TimeSpan::from_secs(60))
        .output(punctual::core::ops::WindowOutput::PointAtLastTick)
        .group_by(|c: &Calibrated| c.device.clone())
        .aggregate((Avg::of(|c: &Calibrated| c.value), Count));
    let out = CollectOutput::new();
    query.bind_output(&averages, &out, &()).expect("binds");
    query.start().expect("starts").wait().await.expect("runs");
    out.items()
        .into_iter()
        .filter_map(|i| match i {
            StreamItem::Insert(e) => {
                let (device, (avg, n)) = e.payload;
                Some((e.kind.start(), device, avg, n))
            }
            StreamItem::Cti(_) => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sensors_job_gives_what_the_rust_query_gives() {
    let expected = rust_version().await;
    assert!(expected.len() > 3000, "{} results", expected.len());
    let dir = std::env::temp_dir().join(format!("punctual-jobs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    // The sample job, its output sent to a file.
    let job = std::fs::read_to_string(samples().join("jobs").join("sensors.toml"))
        .expect("the sample job")
        .replace(
            "../data/",
            &format!("{}/", samples().join("data").display()),
        )
        .replace(
            "path = \"-\"",
            &format!("path = \"{}\"", dir.join("out.jsonl").display()),
        );
    let job_file = dir.join("sensors.toml");
    std::fs::write(&job_file, job).expect("written");
    let args = vec!["job".to_owned(), job_file.display().to_string()];
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = tokio::task::spawn_blocking(move || {
        let code = main(&args, &mut out, &mut err);
        (code, String::from_utf8_lossy(&err).into_owned())
    })
    .await
    .expect("runs");
    assert_eq!(code.0, EXIT_OK, "{}", code.1);
    let written = std::fs::read_to_string(dir.join("out.jsonl")).expect("written");
    let got: Vec<(Time, String, f64, u64)> = written
        .lines()
        .filter_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            // A flat row: the result's time, then its fields.
            v.get("time").map(|time| {
                let p = &v;
                let at = TimeFormat::Rfc3339.read(time).expect("a time");
                assert_eq!(
                    &p["window_end"], time,
                    "System.Timestamp() is the window end"
                );
                (
                    at,
                    p["device"].as_str().expect("device").to_owned(),
                    p["average"].as_f64().expect("average"),
                    p["n"].as_u64().expect("n"),
                )
            })
        })
        .collect();
    let by_window =
        |a: &(Time, String, f64, u64), b: &(Time, String, f64, u64)| (a.0, &a.1).cmp(&(b.0, &b.1));
    let (mut got, mut expected) = (got, expected);
    got.sort_by(by_window);
    expected.sort_by(by_window);
    assert_eq!(got.len(), expected.len());
    for (g, e) in got.iter().zip(&expected) {
        assert_eq!((g.0, &g.1, g.3), (e.0, &e.1, e.3));
        assert!((g.2 - e.2).abs() < 1e-9, "{g:?} vs {e:?}");
    }
}

/// The shared benchmark's workload in small: (ts ms, value, key), 1 ms apart, 5% of them up
/// to 2 s late; reference versions per key every 5 s.
/// An event (ts ms, value, key) and a reference version (from ms, to ms, value, key).
type BenchEvent = (i64, i64, u32);
type Version = (i64, i64, i64, u32);

fn workload(n: usize, keys: u32) -> (Vec<BenchEvent>, Vec<Version>) {
    let mut state = 42u64;
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let events: Vec<BenchEvent> = (0..n as i64)
        .map(|i| {
            let late = next() % 20 == 0;
            let ts = if late {
                i - 1 - (next() % 2000) as i64
            } else {
                i
            };
            (
                ts.max(0),
                (next() % 1_000_000) as i64,
                (next() % u64::from(keys)) as u32,
            )
        })
        .collect();
    let end = n as i64 + 10_000;
    let mut reference = Vec::new();
    for key in 0..keys {
        let mut from = 0;
        while from < end {
            let to = (from + 5_000).min(end);
            reference.push((from, to, (next() % 100) as i64, key));
            from = to;
        }
    }
    reference.sort_by_key(|r| (r.0, r.3));
    (events, reference)
}

/// The fast stream's settings of the benchmark: a CTI every 1,000 events, 2 s behind, Drop,
/// a final CTI.
fn bench_settings() -> AdvanceTimeSettings {
    AdvanceTimeSettings::builder()
        .generation(
            AdvanceTimeGenerationSettings::every_events(1_000)
                .delay(TimeSpan::from_secs(2))
                .final_cti(true)
                .build()
                .expect("valid"),
        )
        .policy(AdvanceTimePolicy::Drop)
        .build()
        .expect("valid")
}

fn at_ms(ms: i64) -> Time {
    Time::EPOCH + TimeSpan::from_millis(ms)
}

/// The three benchmark queries with the Rust API: filter (count, sum of values), the 1 s
/// tumbling window per key (results, sum of counts + sums), the join with the reference
/// versions (pairs, sum of value * reference value).
async fn bench_rust(
    events: &[(i64, i64, u32)],
    reference: &[(i64, i64, i64, u32)],
) -> [(u64, i64); 3] {
    use punctual::adapters::MemoryInput;
    use punctual::core::ops::{Count, Sum};
    let fast: Vec<StreamItem<(i64, u32)>> = events
        .iter()
        .map(|&(ts, v, k)| StreamItem::point(at_ms(ts), (v, k)))
        .collect();
    let versions: Vec<StreamItem<(i64, u32)>> = reference
        .iter()
        .map(|&(from, to, v, k)| StreamItem::interval(at_ms(from), at_ms(to), (v, k)))
        .collect();
    let mut totals = [(0u64, 0i64); 3];
    for (q, total) in totals.iter_mut().enumerate() {
        let mut query = Query::new("bench");
        let reference = (q == 2).then(|| {
            query
                .create_stream::<_, (i64, u32), _, _>(
                    InputOptions::new("reference", EventShape::Interval)
                        .settings(imported_from("events"))
                        .reference(),
                    &MemoryInput,
                    &versions,
                )
                .expect("binds")
        });
        let readings = query
            .create_stream::<_, (i64, u32), _, _>(
                InputOptions::new("events", EventShape::Point).settings(bench_settings()),
                &MemoryInput,
                &fast,
            )
            .expect("binds");
        let out = CollectOutput::new();
        let values: Stream<i64> = match q {
            0 => readings.filter(|p| p.0 >= 500_000).map(|p| p.0),
            // The language's windows are Stream Analytics': (end - 1 s, end].
            1 => readings
                .tumbling_window(TimeSpan::from_secs(1))
                .alignment(Time::EPOCH + TimeSpan::from_ticks(1))
                .output(punctual::core::ops::WindowOutput::PointAtLastTick)
                .group_by(|p: &(i64, u32)| p.1)
                .aggregate((Count, Sum::of(|p: &(i64, u32)| p.0 as f64)))
                .map(|(_, (n, s))| *n as i64 + *s as i64),
            _ => readings.join_on(
                reference.as_ref().expect("the join's reference"),
                |p| p.1,
                |r| r.1,
                |p, r| p.0 * r.0,
            ),
        };
        query.bind_output(&values, &out, &()).expect("binds");
        query.start().expect("starts").wait().await.expect("runs");
        for item in out.items() {
            if let StreamItem::Insert(e) = item {
                total.0 += 1;
                total.1 += e.payload;
            }
        }
    }
    totals
}

/// The benchmark's three queries in the query language, run by `punctual job` over CSV
/// files, give what the Rust API gives on the same data and settings, with the events
/// sorted and read in arrival order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_benchmark_queries_in_sql_give_what_the_rust_queries_give() {
    let (events, reference) = workload(30_000, 40);
    let expected = bench_rust(&events, &reference).await;
    assert!(expected.iter().all(|t| t.0 > 0), "{expected:?}");
    let dir = std::env::temp_dir().join(format!("punctual-bench-sql-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut csv = String::from("ts,value,key\n");
    for (ts, v, k) in &events {
        csv.push_str(&format!("{ts},{v},{k}\n"));
    }
    std::fs::write(dir.join("events.csv"), csv).expect("written");
    let mut csv = String::from("valid_from,valid_to,value,key\n");
    for (from, to, v, k) in &reference {
        csv.push_str(&format!("{from},{to},{v},{k}\n"));
    }
    std::fs::write(dir.join("reference.csv"), csv).expect("written");
    let queries = [
        ("filter", "SELECT value AS x FROM events TIMESTAMP BY ts WHERE value >= 500000", ""),
        (
            "window",
            "SELECT COUNT(*) + CAST(SUM(value) AS bigint) AS x FROM events TIMESTAMP BY ts GROUP BY key, TumblingWindow(second, 1)",
            "",
        ),
        (
            "join",
            "SELECT e.value * r.value AS x FROM events e TIMESTAMP BY ts JOIN reference r ON e.key = r.key",
            "[inputs.reference]\npath = \"reference.csv\"\ntime = \"valid_from\"\nend = \"valid_to\"\ntime_format = \"epoch-ms\"\n",
        ),
    ];
    // Each query with the events sorted, and read in arrival order.
    let runs = queries
        .iter()
        .enumerate()
        .flat_map(|q| [(q, "time"), (q, "arrival")]);
    for ((q, (name, sql, more)), order) in runs {
        let job = format!(
            "query = \"{sql}\"\n[inputs.events]\npath = \"events.csv\"\ntime_format = \"epoch-ms\"\ngenerate = {{ every = 1000, delay = \"2s\" }}\npolicy = \"drop\"\norder = \"{order}\"\n{more}[outputs.output]\npath = \"{name}.jsonl\"\n"
        );
        let file = dir.join(format!("{name}.toml"));
        std::fs::write(&file, job).expect("written");
        let args = vec!["job".to_owned(), file.display().to_string()];
        let (code, err) = tokio::task::spawn_blocking(move || {
            let (mut out, mut err) = (Vec::new(), Vec::new());
            let code = main(&args, &mut out, &mut err);
            (code, String::from_utf8_lossy(&err).into_owned())
        })
        .await
        .expect("runs");
        assert_eq!(code, EXIT_OK, "{name}, order {order}: {err}");
        let written = std::fs::read_to_string(dir.join(format!("{name}.jsonl"))).expect("written");
        let mut got = (0u64, 0i64);
        for line in written.lines() {
            let v: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            got.0 += 1;
            got.1 += v["x"].as_i64().expect("an integer");
        }
        assert_eq!(got, expected[q], "{name}, order {order}");
    }
}

/// Runs `job` (source `r` in two partitions, device totals per 10 s into `totals.jsonl`
/// beside it) on one worker and on two (a partition each): both partitions are read, and the
/// totals are those of the data both partition tests send (a: 1 + 10, b: 5; then a: 7).
fn two_partitions_on_one_and_two_workers(job: &std::path::Path) {
    let totals = job.with_file_name("totals.jsonl");
    for workers in ["1", "2"] {
        let args: Vec<String> = ["job", &job.display().to_string(), "--workers", workers]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = main(&args, &mut out, &mut err);
        let err = String::from_utf8_lossy(&err);
        assert_eq!(code, EXIT_OK, "{err}");
        assert!(err.contains("r#0") && err.contains("r#1"), "{err}");
        let written = std::fs::read_to_string(&totals).expect("written");
        let mut lines: Vec<&str> = written.lines().collect();
        lines.sort();
        assert_eq!(
            lines,
            [
                r#"{"time":10000,"device":"a","total":11}"#,
                r#"{"time":10000,"device":"b","total":5}"#,
                r#"{"time":20000,"device":"a","total":7}"#,
            ],
            "{workers} worker(s)"
        );
    }
}

/// A job input whose path has wildcards reads every matching file as a partition of the
/// source (an input each, with its own counters and CTIs): on one worker and on two (a
/// partition each), the totals are those of both files, the input in time order and in
/// arrival order.
#[test]
fn a_job_reads_the_files_a_wildcard_matches_as_partitions() {
    let dir = std::env::temp_dir().join(format!("punctual-job-parts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(dir.join("r-1.csv"), "t,device,v\n1000,a,1\n2000,b,5\n").expect("written");
    std::fs::write(dir.join("r-2.csv"), "t,device,v\n1500,a,10\n12000,a,7\n").expect("written");
    let job = dir.join("job.toml");
    std::fs::write(
        &job,
        r#"
query = "SELECT device, SUM(v) AS total INTO totals FROM r TIMESTAMP BY t GROUP BY device, TumblingWindow(second, 10)"
[inputs.r]
path = "r-*.csv"
time_format = "epoch-ms"
[outputs.totals]
path = "totals.jsonl"
time_format = "epoch-ms"
"#,
    )
    .expect("written");
    two_partitions_on_one_and_two_workers(&job);
    let text = std::fs::read_to_string(&job).expect("read");
    let arrival = text.replace(
        "path = \"r-*.csv\"",
        "path = \"r-*.csv\"\norder = \"arrival\"",
    );
    assert_ne!(arrival, text);
    std::fs::write(&job, arrival).expect("written");
    two_partitions_on_one_and_two_workers(&job);
}

/// Servers on loopback, each serving its lines to `runs` connections, one after the other;
/// their addresses, quoted for a job file.
fn tcp_servers(sends: Vec<String>, runs: usize) -> Vec<String> {
    let mut addrs = Vec::new();
    for lines in sends {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
        addrs.push(format!("\"{}\"", listener.local_addr().expect("addr")));
        std::thread::spawn(move || {
            use std::io::Write;
            for conn in listener.incoming().take(runs) {
                let mut conn = conn.expect("accepts");
                conn.write_all(lines.as_bytes()).expect("writes");
            }
        });
    }
    addrs
}

/// A job input that connects to a list of TCP servers reads each as a partition of the
/// source (an input each): on one worker and on two (a partition each), the totals are those
/// of both servers' lines, whether items or flat records (timed by the query's `TIMESTAMP
/// BY`, read in arrival order).
#[test]
fn a_job_reads_each_tcp_server_of_a_list_as_a_partition() {
    let dir = std::env::temp_dir().join(format!("punctual-job-tcp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let point = |ms: i64, device: &str, v: i64| {
        format!(
            "{{\"kind\":\"point\",\"start\":{},\"payload\":{{\"device\":\"{device}\",\"v\":{v}}}}}\n",
            ms * 10_000
        )
    };
    let end = "{\"kind\":\"cti\",\"time\":1000000000}\n";
    let items = tcp_servers(
        vec![
            format!("{}{}{end}", point(1000, "a", 1), point(2000, "b", 5)),
            format!("{}{}{end}", point(1500, "a", 10), point(12000, "a", 7)),
        ],
        2,
    );
    let record = |ms: i64, device: &str, v: i64| {
        format!("{{\"v\":{v},\"t\":{ms},\"device\":\"{device}\",\"other\":[1]}}\n")
    };
    let records = tcp_servers(
        vec![
            format!("{}{}", record(2000, "b", 5), record(1000, "a", 1)),
            format!("{}{}", record(1500, "a", 10), record(12000, "a", 7)),
        ],
        2,
    );
    let job = dir.join("job.toml");
    for (addrs, from, input) in [
        (items, "r", ""),
        (
            records,
            "r TIMESTAMP BY t",
            "time_format = \"epoch-ms\"\norder = \"arrival\"\ndelay = \"2s\"\n",
        ),
    ] {
        std::fs::write(
            &job,
            format!(
                "query = \"SELECT device, SUM(v) AS total INTO totals FROM {from} GROUP BY device, TumblingWindow(second, 10)\"\n\
                 [inputs.r]\nconnect = [{}]\n{input}\
                 [outputs.totals]\npath = \"totals.jsonl\"\ntime_format = \"epoch-ms\"\n",
                addrs.join(", ")
            ),
        )
        .expect("written");
        two_partitions_on_one_and_two_workers(&job);
    }
}

/// A job input split by byte ranges (`split`), JSON lines or CSV: the same totals as the file
/// read whole, an input per part.
#[test]
fn a_job_reads_a_file_split_by_byte_ranges() {
    let dir = std::env::temp_dir().join(format!("punctual-job-split-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let lines: Vec<String> = (0..30)
        .map(|i| format!(r#"{{"t":{},"device":"d{}","v":{i}}}"#, i * 1000, i % 3))
        .collect();
    std::fs::write(dir.join("r.jsonl"), lines.join("\n")).expect("written");
    let run = |split: &str, path: &str| {
        let job = dir.join("job.toml");
        std::fs::write(
            &job,
            format!(
                "query = \"SELECT device, SUM(v) AS total INTO totals FROM r TIMESTAMP BY t GROUP BY device, TumblingWindow(second, 10)\"\n\
                 [inputs.r]\npath = \"{path}\"\ntime_format = \"epoch-ms\"\n{split}\n\
                 [outputs.totals]\npath = \"totals.jsonl\"\ntime_format = \"epoch-ms\"\n"
            ),
        )
        .expect("written");
        let args: Vec<String> = vec!["job".into(), job.display().to_string()];
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = main(&args, &mut out, &mut err);
        let written = std::fs::read_to_string(dir.join("totals.jsonl")).unwrap_or_default();
        // The results (the CTIs in between depend on how the parts' CTIs meet).
        let mut results: Vec<String> = written.lines().map(str::to_owned).collect();
        results.sort();
        (code, String::from_utf8_lossy(&err).into_owned(), results)
    };
    let (code, err, whole) = run("", "r.jsonl");
    assert_eq!(code, EXIT_OK, "{err}");
    // Stream Analytics' windows: the reading at 0 s closes the window ending then.
    assert_eq!(whole.len(), 10, "{whole:?}");
    let (code, err, parts) = run("split = 3", "r.jsonl");
    assert_eq!(code, EXIT_OK, "{err}");
    assert!(err.contains("r#2"), "{err}");
    assert_eq!(parts, whole);
    // The same records as CSV, split in 4 (each part with the file's header).
    let mut csv = String::from("t,device,v\n");
    for i in 0..30 {
        csv.push_str(&format!("{},d{},{i}\n", i * 1000, i % 3));
    }
    std::fs::write(dir.join("r.csv"), csv).expect("written");
    let (code, err, csv_parts) = run("split = 4", "r.csv");
    assert_eq!(code, EXIT_OK, "{err}");
    assert!(err.contains("r#3"), "{err}");
    assert_eq!(csv_parts, whole);
    // More parts than the file has bytes: the parts without bytes read nothing, and the one
    // that starts at the file's first byte reads the header as the header (not as a row).
    std::fs::write(
        dir.join("small.csv"),
        "t,device,v\n1000,d0,1\n2000,d1,2\n3000,d0,3\n",
    )
    .expect("written");
    let (code, err, small) = run("", "small.csv");
    assert_eq!(code, EXIT_OK, "{err}");
    assert_eq!(small.len(), 2, "{small:?}");
    let (code, err, many_parts) = run("split = 100", "small.csv");
    assert_eq!(code, EXIT_OK, "{err}");
    assert!(err.contains("malformed=0"), "{err}");
    assert_eq!(many_parts, small);
    // Past the most parts a file may be split into: refused before the run, with the limit.
    let (code, err, _) = run(
        &format!("split = {}", punctual::adapters::MAX_SPLIT + 1),
        "r.csv",
    );
    assert_eq!(code, punctual::cli::EXIT_USAGE, "{err}");
    assert!(err.contains("1 to 256 parts"), "{err}");
}

/// A job's CSV rows and flat JSON lines hold the fields its query reads: a query of named
/// fields writes the same results whatever other fields the records have (a dropped record's
/// dead letter shows what the query would have read), and `SELECT *` gets every field (the
/// time field too).
#[test]
fn an_input_gives_the_query_the_fields_it_reads() {
    let dir = std::env::temp_dir().join(format!("punctual-job-columns-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(
        dir.join("r.csv"),
        "t,device,v,notes\n1000,a,1,first\n2000,b,5,\"x, y\"\n3000,a,2,\n500,c,9,zzz\n",
    )
    .expect("written");
    std::fs::write(
        dir.join("r.jsonl"),
        [
            r#"{"t":1000,"device":"a","v":1,"notes":"first"}"#,
            r#"{"t":2000,"device":"b","v":5,"notes":"x, y"}"#,
            r#"{"t":3000,"device":"a","v":2,"notes":{"deep":[1,{"x":2}]}}"#,
            r#"{"t":500,"device":"c","v":9,"notes":"zzz"}"#,
        ]
        .join("\n"),
    )
    .expect("written");
    for file in ["r.csv", "r.jsonl"] {
        let run = |query: &str| {
            let job = dir.join("job.toml");
            std::fs::write(
                &job,
                format!("query = \"{query}\"\ndead_letters = \"dead.jsonl\"\n[inputs.r]\npath = \"{file}\"\ntime_format = \"epoch-ms\"\npolicy = \"drop\"\n[outputs.output]\npath = \"out.jsonl\"\ntime_format = \"epoch-ms\"\n"),
            )
            .expect("written");
            let args = vec!["job".to_owned(), job.display().to_string()];
            let (mut out, mut err) = (Vec::new(), Vec::new());
            let code = main(&args, &mut out, &mut err);
            assert_eq!(code, EXIT_OK, "{file}: {}", String::from_utf8_lossy(&err));
            let written = std::fs::read_to_string(dir.join("out.jsonl")).expect("written");
            let dead = std::fs::read_to_string(dir.join("dead.jsonl")).expect("written");
            let points = written.lines().map(str::to_owned).collect::<Vec<_>>();
            (points, dead)
        };
        // The late record (500 after 3000) is dropped; its dead letter holds the row as the
        // query would have read it.
        let (points, dead) = run("SELECT device, v * 10 AS w FROM r TIMESTAMP BY t WHERE v < 5");
        assert!(
            dead.contains(r#""device":"c""#) && !dead.contains("zzz"),
            "{file}: {dead}"
        );
        assert_eq!(
            points,
            [
                r#"{"time":1000,"device":"a","w":10}"#,
                r#"{"time":3000,"device":"a","w":20}"#,
            ],
            "{file}"
        );
        let (points, dead) = run("SELECT * FROM r TIMESTAMP BY t WHERE device = 'b'");
        assert_eq!(
            points,
            [r#"{"time":2000,"t":2000,"device":"b","v":5,"notes":"x, y"}"#],
            "{file}"
        );
        assert!(dead.contains("zzz"), "{file}: {dead}");
    }
}
