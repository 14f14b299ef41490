//! Fuzz harnesses of the command line's surfaces, on stable Rust with proptest: random query
//! texts through `punctual query` and random job files through `punctual job`, over small
//! inputs. Whatever the text, the run ends with exit code 0, 1 or 2 and no panic, no stack
//! overflow, no runaway memory (every limit it meets is refused or counted).
//!
//! `cargo test` runs a few cases of each; `.ci/run` runs more (`PUNCTUAL_FUZZ_CASES`). A
//! failing input is shrunk and saved by proptest next to this file (`fuzz_cli.regressions`)
//! and replayed first by every later run.

use proptest::prelude::*;

use punctual::cli::main;

use punctual_tests::fuzz_config as config;

/// A folder of this run and harness with the inputs every case reads, written afresh:
/// readings (`t`, `device`, `v`, `s`) as JSON lines and CSV, and a thresholds table.
fn inputs(harness: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "punctual-fuzz-cli-{harness}-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut jsonl = String::new();
    let mut csv = String::from("t,device,v,s\n");
    for i in 0..12i64 {
        let t = format!("2026-01-01T00:00:{:02}Z", (i * 7) % 60);
        let v = [0, 1, -5, i64::MAX, i64::MIN, 42][i as usize % 6];
        jsonl.push_str(&format!(
            "{{\"t\":\"{t}\",\"device\":\"d{}\",\"v\":{v},\"s\":\"a'b\"}}\n",
            i % 3
        ));
        csv.push_str(&format!("{t},d{},{v},x\n", i % 3));
    }
    std::fs::write(dir.join("r.jsonl"), jsonl).expect("written");
    std::fs::write(dir.join("r.csv"), csv).expect("written");
    std::fs::write(dir.join("th.csv"), "device,limit\nd0,1\nd1,5\n").expect("written");
    dir
}

/// An expression: fields, literals at the edges of their types, operators, functions, CASE,
/// CAST, and now and then something nested or chained far past the query limits.
fn expr() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("v".to_owned()),
        Just("device".to_owned()),
        Just("s".to_owned()),
        Just("r.v".to_owned()),
        Just("missing".to_owned()),
        Just("System.Timestamp()".to_owned()),
        Just("NULL".to_owned()),
        Just("9223372036854775807".to_owned()),
        Just("-9223372036854775808".to_owned()),
        Just("1e308".to_owned()),
        Just("0".to_owned()),
        Just("'text'".to_owned()),
        Just("''".to_owned()),
        Just("true".to_owned()),
        (-3i64..3).prop_map(|i| i.to_string()),
    ];
    let tree = leaf.prop_recursive(4, 24, 3, |inner| {
        let op = prop_oneof![
            Just("+"),
            Just("-"),
            Just("*"),
            Just("/"),
            Just("%"),
            Just("="),
            Just("<>"),
            Just("<"),
            Just(">="),
            Just("AND"),
            Just("OR"),
        ];
        let func = prop_oneof![
            Just("UPPER"),
            Just("LOWER"),
            Just("LEN"),
            Just("CONCAT"),
            Just("REPLACE"),
            Just("SUBSTRING"),
            Just("ABS"),
            Just("ROUND"),
            Just("POWER"),
            Just("SQRT"),
            Just("COALESCE"),
            Just("NOSUCH"),
        ];
        let ty = prop_oneof![
            Just("bigint"),
            Just("float"),
            Just("nvarchar(max)"),
            Just("bit"),
            Just("datetime"),
            Just("record"),
        ];
        prop_oneof![
            (inner.clone(), op, inner.clone()).prop_map(|(a, o, b)| format!("({a} {o} {b})")),
            (func, prop::collection::vec(inner.clone(), 0..4))
                .prop_map(|(f, args)| format!("{f}({})", args.join(", "))),
            inner.clone().prop_map(|a| format!("NOT {a}")),
            inner.clone().prop_map(|a| format!("-{a}")),
            (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(c, a, b)| format!("CASE WHEN {c} THEN {a} ELSE {b} END")),
            (inner.clone(), ty).prop_map(|(a, t)| format!("CAST({a} AS {t})")),
            (inner.clone(), inner.clone())
                .prop_map(|(a, b)| format!("{a} IS NOT NULL AND {b} BETWEEN 1 AND 2")),
            inner.prop_map(|a| format!("{a} IN (1, 'x', NULL)")),
        ]
    });
    prop_oneof![
        20 => tree,
        1 => (200usize..400).prop_map(|n| format!("{}v{}", "(".repeat(n), ")".repeat(n))),
        1 => (900usize..1500).prop_map(|n| vec!["v"; n].join(" + ")),
        1 => (5usize..12).prop_map(|n| {
            let mut e = "s".to_owned();
            for _ in 0..n {
                e = format!("REPLACE({e}, 'a', 'aaaaaaaaaa')");
            }
            e
        }),
    ]
}

/// A window, with sizes from ordinary to extreme.
fn window() -> impl Strategy<Value = String> {
    let unit = prop_oneof![Just("second"), Just("minute"), Just("day"), Just("ms")];
    prop_oneof![
        (unit.clone(), 0i64..20).prop_map(|(u, n)| format!("TumblingWindow({u}, {n})")),
        (unit.clone(), 0i64..20, -1i64..5)
            .prop_map(|(u, n, h)| format!("HoppingWindow({u}, {n}, {h})")),
        (unit.clone(), 0i64..20).prop_map(|(u, n)| format!("SlidingWindow({u}, {n})")),
        Just("SnapshotWindow()".to_owned()),
        Just("HoppingWindow(second, 2592000, 1)".to_owned()),
        Just("TumblingWindow(second, 9223372036854775807)".to_owned()),
    ]
}

/// A query: a select of expressions over the readings, maybe grouped, filtered, joined with
/// the thresholds or with itself, in pieces that may not fit together.
fn query() -> impl Strategy<Value = String> {
    let items = prop::collection::vec(expr(), 1..4).prop_map(|es| {
        es.iter()
            .enumerate()
            .map(|(i, e)| format!("{e} AS c{i}"))
            .collect::<Vec<_>>()
            .join(", ")
    });
    let shape = prop_oneof![
        4 => Just(0u8), // plain
        3 => Just(1),   // grouped
        2 => Just(2),   // joined with the thresholds
        1 => Just(3),   // joined with itself
        1 => Just(4),   // random text
    ];
    (shape, items, expr(), window(), any::<bool>(), "[ -~]{0,60}").prop_map(
        |(shape, items, cond, window, wh, junk)| {
            let filter = if wh { format!(" WHERE {cond}") } else { String::new() };
            match shape {
                0 => format!("SELECT {items} FROM r TIMESTAMP BY t{filter}"),
                1 => format!(
                    "SELECT device, COUNT(*) AS n, SUM(v) AS total, AVG(v) AS mean, MIN(s) AS lo FROM r TIMESTAMP BY t{filter} GROUP BY device, {window} HAVING COUNT(*) > 0"
                ),
                2 => format!(
                    "SELECT r.device, r.v, th.limit FROM r TIMESTAMP BY t JOIN th ON r.device = th.device{filter}"
                ),
                3 => "SELECT a.v FROM r a TIMESTAMP BY t JOIN r b TIMESTAMP BY t ON a.device = b.device AND DATEDIFF(second, a, b) BETWEEN 0 AND 5".to_owned(),
                _ => format!("SELECT {junk} FROM r"),
            }
        },
    )
}

/// A job file's input table: known keys with values of every kind, and junk.
fn input_table() -> impl Strategy<Value = String> {
    let entry = prop_oneof![
        Just("path = \"r.jsonl\"".to_owned()),
        Just("path = \"r.csv\"".to_owned()),
        Just("path = \"missing.jsonl\"".to_owned()),
        Just("time = \"t\"".to_owned()),
        Just("time = \"nope\"".to_owned()),
        Just("time_format = \"epoch-ms\"".to_owned()),
        Just("time_format = \"bogus\"".to_owned()),
        Just("format = \"csv\"".to_owned()),
        Just("delay = \"2s\"".to_owned()),
        Just("delay = \"-1s\"".to_owned()),
        Just("delay = \"forever\"".to_owned()),
        Just("generate = { every = 0, delay = \"1s\" }".to_owned()),
        Just("generate = { duration = \"1s\" }".to_owned()),
        Just("policy = \"adjust\"".to_owned()),
        Just("policy = \"explode\"".to_owned()),
        Just("order = \"arrival\"".to_owned()),
        Just("split = 0".to_owned()),
        Just("split = 100".to_owned()),
        Just("split = 100000".to_owned()),
        Just("max_buffered = 0".to_owned()),
        Just("max_buffered = 3".to_owned()),
        Just("fields = []".to_owned()),
        Just("fields = [\"t\", \"v\"]".to_owned()),
        Just("end = \"v\"".to_owned()),
        Just("stream = \"x\"".to_owned()),
        Just("watermark = { bounded = \"1s\", idle_timeout = \"0s\" }".to_owned()),
        Just("reference = true".to_owned()),
        Just("import = \"r\"".to_owned()),
        Just("connect = \"127.0.0.1:1\"".to_owned()),
        Just("unknown = 1".to_owned()),
        "[a-z_]{1,8} = [0-9]{1,3}",
    ];
    let source = prop_oneof![
        6 => Just(Some("path = \"r.jsonl\"".to_owned())),
        2 => Just(Some("path = \"r.csv\"".to_owned())),
        1 => Just(None),
    ];
    (source, prop::collection::vec(entry, 0..4)).prop_map(|(source, es)| {
        let es = source.into_iter().chain(es);
        // One value per key: later ones of a key are left out (TOML refuses them anyway).
        let mut seen = Vec::new();
        es.into_iter()
            .filter(|e| {
                let key = e.split('=').next().unwrap_or_default().trim().to_owned();
                let new = !seen.contains(&key);
                seen.push(key);
                new
            })
            .collect::<Vec<_>>()
            .join("\n")
    })
}

/// A job file: a query, an input table, outputs that may collide, and top-level settings.
fn job_file() -> impl Strategy<Value = String> {
    let output = prop_oneof![
        Just("path = \"o.jsonl\"".to_owned()),
        Just("path = \"o.csv\"\nformat = \"csv\"".to_owned()),
        Just("path = \"r.jsonl\"".to_owned()),
        Just("path = \"no/such/dir/o.jsonl\"".to_owned()),
        Just("connect = \"127.0.0.1:1\"".to_owned()),
        Just(String::new()),
    ];
    let top = prop_oneof![
        Just(String::new()),
        Just("dead_letters = \"dead.jsonl\"\n".to_owned()),
        Just("dead_letters = \"o.jsonl\"\n".to_owned()),
        Just("timeline = \"t.svg\"\n".to_owned()),
    ];
    (
        query(),
        input_table(),
        output,
        top,
        prop::bool::weighted(0.1),
    )
        .prop_map(|(q, input, out, top, toml_junk)| {
            let q = q.replace('\\', "\\\\").replace('"', "\\\"");
            let junk = if toml_junk { "[[[" } else { "" };
            let th = if q.contains("JOIN th") {
                "[inputs.th]\npath = \"th.csv\"\n"
            } else {
                ""
            };
            format!(
            "query = \"\"\"{q}\"\"\"\n{top}[inputs.r]\n{input}\n{th}[outputs.output]\n{out}\n{junk}"
        )
        })
}

proptest! {
    #![proptest_config(config(16))]

    /// Any query text over the readings: refused (2), failed (1) or run (0), never a crash.
    #[test]
    fn a_random_query_ends_with_an_exit_code(q in query(), csv in any::<bool>()) {
        let dir = inputs("query");
        let input = dir.join(if csv { "r.csv" } else { "r.jsonl" });
        let mut args: Vec<String> = [
            "query".to_owned(),
            q.clone(),
            "--input".to_owned(),
            format!("r={}", input.display()),
            "--output".to_owned(),
            dir.join("out.jsonl").display().to_string(),
            "--max-buffered".to_owned(),
            "1000".to_owned(),
        ]
        .into();
        if q.contains("JOIN th") {
            args.extend(["--input".to_owned(), format!("th={}", dir.join("th.csv").display())]);
        }
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = main(&args, &mut out, &mut err);
        prop_assert!(code <= 2, "exit {code} for {q}: {}", String::from_utf8_lossy(&err));
    }

    /// Any job file: refused (2), failed (1) or run (0), never a crash; a refused file names
    /// what is wrong.
    #[test]
    fn a_random_job_file_ends_with_an_exit_code(job in job_file()) {
        let dir = inputs("job");
        let path = dir.join("job.toml");
        std::fs::write(&path, &job).expect("written");
        let args = vec!["job".to_owned(), path.display().to_string()];
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = main(&args, &mut out, &mut err);
        let said = String::from_utf8_lossy(&err);
        prop_assert!(code <= 2, "exit {code} for\n{job}\n{said}");
        if code == 2 {
            prop_assert!(said.contains("error"), "refused without a word:\n{job}\n{said}");
        }
        // The thresholds are an input of every job: no job may write over them.
        prop_assert!(std::fs::read_to_string(dir.join("th.csv")).is_ok_and(|t| t.lines().count() == 3));
    }
}
