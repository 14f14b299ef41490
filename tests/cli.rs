//! The `punctual` command line: `run`, `check`, bad input, exit codes.

use punctual::cli::{main, EXIT_FAILED, EXIT_OK, EXIT_USAGE};

mod cli_common;
use cli_common::{case, cases, cli, fifo, holds, refused, s, shell, temp_dir, write};

#[test]
fn check_passes_the_ingress_and_policy_cases() {
    let (ingress, policies) = (cases().join("ingress"), cases().join("policies"));
    let (code, out, _) = cli(&["check", s(&ingress), s(&policies)]);
    assert_eq!(code, EXIT_OK, "{out}");
    assert_eq!(out.lines().last(), Some("13 passed, 0 failed"));
}

#[test]
fn check_prints_a_diff_and_fails_on_a_wrong_expectation() {
    let dir = case(
        "wrong",
        "[streams.in]\nshape = \"point\"\n[expect.metrics.in]\nrejected = 1\n",
        "{\"stream\":\"in\",\"kind\":\"point\",\"start\":1,\"payload\":{}}\n{\"stream\":\"in\",\"kind\":\"cti\",\"time\":5}\n",
        "{\"kind\":\"point\",\"start\":2,\"payload\":{}}\n{\"kind\":\"cti\",\"time\":5}\n",
    );
    let (code, out, _) = cli(&["check", s(&dir)]);
    assert_eq!(code, EXIT_FAILED);
    holds(
        &out,
        &[
            "FAIL",
            r#"- {"kind":"point","start":2,"payload":{}}"#,
            r#"+ {"kind":"point","start":1,"payload":{}}"#,
            "counter in.rejected: expected 1, actual 0",
        ],
    );
    assert_eq!(out.lines().last(), Some("0 passed, 1 failed"));
}

#[test]
fn a_malformed_case_or_arrival_is_reported_with_the_fix() {
    let dir = case(
        "malformed",
        "[streams.in]\nshape = \"point\"\n",
        "{\"stream\":\"in\",\"kind\":\"cti\",\"time\":5}\n{\"stream\":\"in\",\"kind\":\"point\",\"payload\":{}}\n",
        "",
    );
    let (code, _, err) = cli(&["run", s(&dir)]);
    assert_eq!(code, EXIT_FAILED);
    holds(
        &err,
        &["arrivals.jsonl:2: a `point` line needs the field `start`"],
    );
    let dir = case(
        "not-json",
        "[streams.in]\nshape = \"point\"\n",
        "{\"stream\":\"in\",\"kind\":\"cti\",\"time\":5}\n{\"stream\":\"in\",\n",
        "",
    );
    let (_, _, err) = cli(&["run", s(&dir)]);
    holds(&err, &["arrivals.jsonl:2: "]);
    // A window with allowed lateness over a sorted input, a hopping window without its hop,
    // a stream order that is not one: each refused with the fix.
    let window = "[query]\noutput = \"w\"\n[[query.step]]\nname = \"w\"\ninput = \"in\"\nsize = 5\naggregates = [{ fn = \"count\", as = \"n\" }]\n";
    for (name, stream, step, says) in [
        (
            "late-sorted",
            "",
            "op = \"tumbling\"\nallowed_lateness = 2\n",
            "order = \"arrival\"",
        ),
        ("hop-missing", "", "op = \"hopping\"\n", "needs `hop`"),
        (
            "hop-tumbling",
            "",
            "op = \"tumbling\"\nhop = 2\n",
            "takes no `hop`",
        ),
        (
            "order",
            "order = \"random\"\n",
            "op = \"tumbling\"\n",
            "not `sorted` or `arrival`",
        ),
    ] {
        let toml = format!("[streams.in]\nshape = \"point\"\n{stream}{window}{step}");
        let dir = case(name, &toml, "", "");
        let (code, _, err) = cli(&["run", s(&dir)]);
        assert_eq!(code, EXIT_FAILED, "{name}");
        assert!(err.contains(says), "{name}: {err}");
    }
    let dir = case("bad-toml", "[streams.in]\nshape = \"triangle\"\n", "", "");
    let (code, _, err) = cli(&["run", s(&dir)]);
    assert_eq!(code, EXIT_FAILED);
    holds(&err, &["case.toml", "triangle"]);
}

#[test]
fn run_prints_output_lines_and_counters() {
    let dir = cases().join("ingress/increasing-start-time");
    let (code, out, err) = cli(&["run", s(&dir)]);
    assert_eq!(code, EXIT_OK, "{err}");
    assert_eq!(out.lines().next(), Some(r#"{"kind":"cti","time":1}"#));
    assert_eq!(out.lines().last(), Some(r#"{"kind":"cti","time":"inf"}"#));
    holds(
        &err,
        &[
            "stream in: events_in=5 ctis_in=0 released=4 dropped=1",
            "dead letter on in (CTI 2): late",
        ],
    );
}

#[test]
fn watermark_counters_and_bad_steps() {
    let dir = cases().join("watermarks/asa-tolerances");
    let (code, out, err) = cli(&["run", s(&dir)]);
    assert_eq!(code, EXIT_OK, "{err}");
    holds(
        &out,
        &[r#"{"kind":"point","start":737,"payload":{"device":"device3","time":732}}"#],
    );
    holds(&err, &["early=1 late=1 out_of_order=2"]);
    let dir = case(
        "bad-step",
        "[streams.in]\nshape = \"point\"\n[query]\noutput = \"w\"\n[[query.step]]\nname = \"w\"\nop = \"hopping\"\ninput = \"in\"\nsize = 10\nhop = 5\naggregates = [{ fn = \"median\", field = \"v\", as = \"m\" }]\n",
        "",
        "",
    );
    let (code, _, err) = cli(&["run", s(&dir)]);
    assert_eq!(code, EXIT_FAILED);
    holds(
        &err,
        &["step `w`: aggregate fn `median` is not count, sum, min, max or avg"],
    );
}

/// Every command has its help (`punctual COMMAND --help`, `-h`, `punctual help COMMAND`):
/// what it does, its usage, its examples and the exit codes, exit 0 (`query --help` was an
/// error); the top-level help says what the program is and lists every command.
#[test]
fn every_command_has_its_help() {
    let commands = [
        "run",
        "check",
        "explain",
        "pipe",
        "query",
        "job",
        "timeline",
        "completions",
    ];
    for command in commands {
        for asked in [
            vec![command, "--help"],
            vec![command, "-h"],
            vec!["help", command],
        ] {
            let (code, out, err) = cli(&asked);
            assert_eq!(code, EXIT_OK, "{asked:?}: {err}");
            assert!(
                out.contains(&format!("\nUsage: punctual {command} ")),
                "{asked:?}: {out}"
            );
            assert!(out.contains("\nExamples:\n"), "{asked:?}: {out}");
            assert!(out.contains("\nExit codes:\n"), "{asked:?}: {out}");
        }
    }
    let (code, out, _) = cli(&["query", "--help"]);
    assert_eq!(code, EXIT_OK);
    holds(&out, &["GROUP BY device, TumblingWindow(minute, 1)"]);
    // Every flag of a command is in its help, with what it takes.
    for flag in [
        "--input <NAME=FILE[,OPTION...]>",
        "--out-of-order <DURATION>",
        "--policy <POLICY>",
        "--with-ctis",
        "--workers <W>",
    ] {
        assert!(out.contains(flag), "{flag}: {out}");
    }
    let (code, out, _) = cli(&["--help"]);
    assert_eq!(code, EXIT_OK);
    assert!(
        out.starts_with("punctual: event-time stream processing"),
        "{out}"
    );
    for command in commands {
        assert!(out.contains(&format!("\n  {command} ")), "{command}: {out}");
    }
    refused(&["nope", "--help"], "unrecognized subcommand 'nope'");
}

/// A bad command line is said once, with the command's usage and where its help is; exit 2.
#[test]
fn a_bad_command_line_exits_2_with_help() {
    let (code, _, err) = cli(&["frobnicate"]);
    assert_eq!(code, EXIT_USAGE);
    assert!(
        err.starts_with("error: unrecognized subcommand 'frobnicate'\n"),
        "{err}"
    );
    holds(&err, &["For more information, try '--help'."]);
    let (code, _, err) = cli(&["pipe", "--colour"]);
    assert_eq!(code, EXIT_USAGE);
    assert!(
        err.starts_with("error: unexpected argument '--colour' found\n"),
        "{err}"
    );
    holds(&err, &["Usage: punctual pipe [OPTIONS]"]);
    assert_eq!(err.matches("error:").count(), 1, "{err}");
    refused(&["run"], "<CASE_DIR>");
    refused(&[], "Usage: punctual <COMMAND>");
    let (code, out, _) = cli(&["--version"]);
    assert_eq!(code, EXIT_OK);
    assert_eq!(out, format!("punctual {}\n", env!("CARGO_PKG_VERSION")));
    let (code, out, _) = cli(&["check", "--help"]);
    assert_eq!(code, EXIT_OK);
    holds(&out, &["Usage: punctual check [OPTIONS] <PATH>..."]);
    let (code, _, _) = cli(&["check", "/nonexistent/cases"]);
    assert_eq!(code, EXIT_FAILED);
    let (code, _, err) = cli(&["check", "--workers", "0", "tests"]);
    assert_eq!(code, EXIT_USAGE);
    assert!(
        err.starts_with("error: invalid value '0' for '--workers <W>': a number from 1 to 128\n"),
        "{err}"
    );
    // Past the most workers a run may have: refused before anything starts (700 threads
    // used to take the process down).
    let job = cases().join("../../samples/jobs/sensors.toml");
    refused(
        &["job", s(&job), "--workers", "700"],
        "a number from 1 to 128",
    );
    let (code, _, err) = cli(&["job", s(&job), "--workers", "16", "--processes", "9"]);
    assert_eq!(code, EXIT_USAGE, "{err}");
    holds(
        &err,
        &["make 144 workers; at most 128", "Usage: punctual job "],
    );
    // Flags that do not go together, and values that do not read, named by the flag.
    refused(
        &["pipe", "--out-of-order", "5s", "--in-order"],
        "'--out-of-order <DURATION>' cannot be used with '--in-order'",
    );
    refused(
        &["query", "SELECT 1", "--out-of-order", "-5s"],
        "a delay cannot be negative",
    );
    refused(
        &["query", "SELECT 1", "--policy", "keep"],
        "[possible values: adjust, drop]",
    );
    refused(
        &["query", "SELECT 1", "--input", "nameless"],
        "NAME=FILE, not `nameless`",
    );
    let dir = cases().join("operators/filter");
    let (code, _, err) = cli(&["run", s(&dir), "--processes", "2"]);
    assert_eq!(code, EXIT_FAILED);
    holds(
        &err,
        &["`--processes 2` needs `--process I` (this process's index) and `--hosts FILE`"],
    );
}

#[test]
fn explain_names_the_input_holding_the_join_back() {
    let dir = cases().join("import/without-import-the-join-never-releases");
    let (code, out, err) = cli(&["explain", s(&dir)]);
    assert_eq!(code, EXIT_OK, "{err}");
    holds(
        &out,
        &[
            "join `joined`: no CTI yet, held at no CTI yet by input `lookup`",
            "`lookup` has never had a CTI",
        ],
    );
    let dir = cases().join("import/slow-reference-synced-to-fast-stream");
    let (_, out, _) = cli(&["explain", s(&dir)]);
    holds(&out, &["join `joined`: CTI +inf"]);
    assert!(!out.contains("held at"), "{out}");
}

/// What the join still held when the case ended is printed item by item, with the payloads.
#[test]
fn run_lists_what_operators_held_at_the_end() {
    let dir = cases().join("import/without-import-the-join-never-releases");
    let (code, _, err) = cli(&["run", s(&dir)]);
    assert_eq!(code, EXIT_OK, "{err}");
    let held: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("not emitted at the end:"))
        .collect();
    assert_eq!(held.len(), 4, "{err}");
    assert!(
        held.contains(
            &"not emitted at the end: join `joined` held event [9, 10) {\"k\":\"C\",\"v\":40}"
        ),
        "{err}"
    );
    let dir = cases().join("import/slow-reference-synced-to-fast-stream");
    let (_, _, err) = cli(&["run", s(&dir)]);
    assert!(!err.contains("not emitted"), "{err}");
}

#[test]
fn timeline_writes_an_svg_file() {
    let dir = cases().join("operators/hopping-count-window-lifetime");
    let to = std::env::temp_dir().join(format!("punctual-timeline-{}.svg", std::process::id()));
    let (code, _, err) = cli(&["timeline", s(&dir), "-o", s(&to)]);
    assert_eq!(code, EXIT_OK, "{err}");
    let svg = std::fs::read_to_string(&to).expect("written");
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    let (code, _, err) = cli(&["timeline", "/nonexistent/case"]);
    assert_eq!(code, EXIT_FAILED);
    holds(&err, &["/nonexistent/case"]);
}

#[test]
fn pipe_orders_a_file_and_writes_json_lines() {
    let dir = std::env::temp_dir().join(format!("punctual-pipe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let input = dir.join("in.jsonl");
    let output = dir.join("out.jsonl");
    write(&input, "{\"kind\":\"point\",\"start\":5,\"payload\":{\"v\":1}}\n{\"kind\":\"point\",\"start\":3,\"payload\":{\"v\":2}}\n{\"kind\":\"point\",\"start\":1,\"payload\":{\"v\":3}}\n");
    let letters = dir.join("dead.jsonl");
    let (code, _, err) = shell(&format!(
        "pipe -i {} -o {} --delay 3 --dead-letters {} --time-format ticks",
        s(&input),
        s(&output),
        s(&letters),
    ));
    assert_eq!(code, EXIT_OK, "{err}");
    let written = std::fs::read_to_string(&output).expect("written");
    assert_eq!(
        written,
        "{\"kind\":\"cti\",\"time\":2}\n{\"kind\":\"point\",\"start\":3,\"payload\":{\"v\":2}}\n{\"kind\":\"point\",\"start\":5,\"payload\":{\"v\":1}}\n{\"kind\":\"cti\",\"time\":\"inf\"}\n"
    );
    holds(
        &err,
        &[
            "events_in=3 ctis_in=1 released=2 dropped=1 adjusted=0 rejected=0",
            "ctis_out=2",
            "skipped=0",
        ],
    );
    // The late event: summarised on stderr, and in the dead-letter file with its reason.
    holds(&err, &["dead letters: 1 (late 1)"]);
    let dead = std::fs::read_to_string(&letters).expect("written");
    assert_eq!(
        dead,
        "{\"reason\":\"late\",\"cti\":2,\"item\":{\"kind\":\"point\",\"start\":1,\"payload\":{\"v\":3}}}\n"
    );
    let csv = dir.join("in.csv");
    write(&csv, "t,name\n2,b\n1,a\n");
    let (code, _, err) = shell(&format!(
        "pipe -i {} -o {} --csv t --delay 5 --time-format ticks",
        s(&csv),
        s(&output),
    ));
    assert_eq!(code, EXIT_OK, "{err}");
    let written = std::fs::read_to_string(&output).expect("written");
    holds(
        &written,
        &[r#"{"kind":"point","start":1,"payload":{"t":1,"name":"a"}}"#],
    );
    refused(
        &["pipe", "--delay", "x"],
        "invalid value 'x' for '--out-of-order <DURATION>': `x` is not a duration",
    );
    // Durations as people write them; a bare number is ticks.
    let (code, _, err) = shell(&format!(
        "pipe -i {} -o {} --delay 300ns",
        s(&input),
        s(&output),
    ));
    assert_eq!(code, EXIT_OK, "{err}");
    assert!(
        err.contains("released=2 dropped=1"),
        "300ns is 3 ticks: {err}"
    );
    let (code, _, err) = cli(&["pipe", "-i", s(&input), "-o", s(&output), "--delay", "1s"]);
    assert_eq!(code, EXIT_OK, "{err}");
    assert!(
        err.contains("released=3 dropped=0"),
        "1s holds everything back: {err}"
    );
    let (code, _, err) = cli(&["pipe", "-i", "/nonexistent/in.jsonl", "-o", s(&output)]);
    assert_eq!(code, EXIT_FAILED);
    holds(&err, &["/nonexistent/in.jsonl"]);
}

/// `pipe` never reads its input ahead of the query (to count lines for a progress bar): from a
/// FIFO, every line reaches the query.
#[test]
fn pipe_reads_a_fifo_once() {
    let dir = temp_dir("fifo");
    let fifo = fifo(&dir);
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let lines = "{\"kind\":\"point\",\"start\":1,\"payload\":{\"v\":1}}\n{\"kind\":\"point\",\"start\":2,\"payload\":{\"v\":2}}\n";
            write(&fifo, lines);
        })
    };
    let output = dir.join("out.jsonl");
    let (code, _, err) = cli(&["pipe", "-i", s(&fifo), "-o", s(&output), "--in-order"]);
    writer.join().expect("the writer ends");
    assert_eq!(code, EXIT_OK, "{err}");
    holds(&err, &["events_in=2 ctis_in=1 released=2"]);
}

/// A process of a run whose peers never come, or whose port a program that is not a process of
/// the run connects to, fails within `--connect-timeout` naming what it waited for, instead of
/// waiting forever.
#[test]
fn a_run_waits_for_its_peers_only_as_long_as_it_is_told() {
    let free = || {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
        l.local_addr().expect("addr").to_string()
    };
    let (me, peer) = (free(), free());
    let dir = std::env::temp_dir().join(format!("punctual-peers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let hosts = dir.join("hosts");
    write(&hosts, format!("{me}\n{peer}\n"));
    let case = cases().join("operators/filter");
    let run = || {
        shell(&format!(
            "run {} --processes 2 --process 0 --hosts {} --connect-timeout 1s",
            s(&case),
            s(&hosts),
        ))
    };
    let (code, _, err) = run();
    assert_eq!(code, EXIT_FAILED, "{err}");
    holds(
        &err,
        &[&format!("process 1 ({peer}) did not connect within 1 s")],
    );
    // A program that connects and says nothing is not process 1.
    let me_addr = me.clone();
    let silent = std::thread::spawn(move || {
        for _ in 0..200 {
            if let Ok(conn) = std::net::TcpStream::connect(&me_addr) {
                std::thread::sleep(std::time::Duration::from_secs(3));
                drop(conn);
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    });
    let (code, _, err) = run();
    assert_eq!(code, EXIT_FAILED, "{err}");
    holds(&err, &["sent no process index"]);
    silent.join().expect("joins");
    let (code, _, err) = cli(&["run", s(&case), "--connect-timeout", "0s"]);
    assert_eq!(code, EXIT_USAGE, "{err}");
}

/// `punctual completions bash` completes the commands, then each command's flags, then the
/// values a flag takes; fish, zsh, elvish and PowerShell get scripts too, other shells an error.
#[test]
fn completions_complete_commands_and_their_flags() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let (code, script, err) = cli(&["completions", "bash"]);
    assert_eq!(code, EXIT_OK, "{err}");
    // As bash calls a completion function: the words so far, the word at the cursor, the
    // word before it.
    let complete = |words: &str, at: usize| {
        let mut bash = Command::new("bash")
            .args([
                "-c",
                &format!(
                    "source /dev/stdin; COMP_WORDS=({words}); COMP_CWORD={at}; _punctual punctual \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; echo \"${{COMPREPLY[@]}}\""
                ),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("bash runs");
        bash.stdin
            .take()
            .expect("stdin")
            .write_all(script.as_bytes())
            .expect("written");
        let out = bash.wait_with_output().expect("bash ends");
        String::from_utf8(out.stdout).expect("utf-8")
    };
    assert_eq!(complete("punctual qu", 1).trim(), "query");
    let flags = complete("punctual query --out", 2);
    holds(&flags, &["--out-of-order", "--output"]);
    assert!(complete("punctual pipe --pol", 2).contains("--policy"));
    assert_eq!(complete("punctual pipe --policy a", 3).trim(), "adjust");
    assert_eq!(
        complete("punctual query --time-format epoch", 3).trim(),
        "epoch-ms epoch-s"
    );
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let (code, script, _) = cli(&["completions", shell]);
        assert_eq!(code, EXIT_OK);
        holds(&script, &["explain"]);
    }
    refused(
        &["completions", "tcsh"],
        "[possible values: bash, elvish, fish, powershell, zsh]",
    );
}
