//! The command line's help: `punctual --help`, each command's `--help`, and the one-line
//! errors of a bad command line.

use std::io::Write;

use super::EXIT_USAGE;

/// `punctual --help`.
pub const HELP: &str = "\
punctual: event-time stream processing from the command line. Runs queries in a Stream
Analytics-style language over files, standard input, sockets and brokers (query, job),
puts JSON lines or CSV in time order (pipe), and runs, checks and draws the conformance
cases of the temporal semantics (run, check, explain, timeline). `punctual COMMAND --help`
shows one command.

USAGE:
    punctual run CASE_DIR [--workers W] [--processes P --process I --hosts FILE]
                  [--connect-timeout DURATION] [--peer-timeout DURATION]
                                 run one case; print its output as JSON lines (stdout)
                                 and each input stream's counters and dead letters (stderr).
                                 --workers W: split over W worker threads (same results);
                                 --processes P: this is process I of P, each running the
                                 same command with its own I; FILE has one host:port per
                                 process (line I is this one); the output is on process 0;
                                 --connect-timeout 60s: how long the processes may take
                                 to connect (then the run fails naming the missing one);
                                 --peer-timeout 30s: how long another process may send
                                 nothing, not even its heartbeat, before the run fails
                                 naming it (a stopped or frozen process);
                                 at most 128 workers in all
    punctual check [--workers W] [--processes P] PATH...
                                 run every case at or below each PATH, print a diff for
                                 each failing case and a closing line `N passed, N failed`;
                                 with --processes P, each case runs as P processes of this
                                 program on free loopback ports (a 120 s deadline each)
    punctual explain CASE_DIR    run one case; for every input and operator, print its CTI
                                 and the input holding it back (start here for 'no output?')
    punctual explain JOB.toml    print the job's plan (each input: how it is read, where its
                                 CTIs come from, what a late event becomes; each operator;
                                 each output), run it as `job` does, then say where each
                                 operator's CTI ended, which input held it back, and what was
                                 adjusted, dropped or malformed (on stderr; `query --explain`
                                 does the same for a query)
    punctual pipe [-i FILE] [-o FILE] [--csv TIME_COLUMN | --time-field FIELD]
                  [--time-format FORMAT] [--out-of-order DURATION | --in-order]
                  [--policy drop|adjust] [--dead-letters FILE] [--timeline FILE.svg]
                  [--checkpoint DIR [--checkpoint-every 1s]]
                                 read events (JSON-lines items; flat JSON objects timed by
                                 FIELD; or CSV with the start time in TIME_COLUMN) from FILE
                                 or standard input, put them in time order as the CTIs
                                 allow (a CTI after every event, --out-of-order behind the
                                 newest, or --in-order; --delay is the same flag; an event
                                 behind the CTI is dropped, or with --policy adjust moved
                                 up to it), write JSON lines to FILE or standard output (times
                                 in --time-format: rfc3339 by default, epoch-ms, epoch-s,
                                 ticks; also how time fields are read; by default RFC
                                 3339 text, a number refused: its unit is never guessed);
                                 counters and a summary
                                 of the dead letters (dropped,
                                 rejected, malformed, unreleased items with the reason) on
                                 stderr, every dead letter as a JSON line to the
                                 --dead-letters FILE; a progress bar on a terminal. Ctrl-C
                                 stops with a drain; a closed output (`| head`) ends quietly.
                                 --checkpoint DIR (with -i FILE and -o FILE): record
                                 checkpoints in DIR; killed and run again with the same
                                 arguments, it continues the output exactly where its last
                                 checkpoint was (no duplicate, no gap); at most one
                                 checkpoint per --checkpoint-every (`500ms`, `2s`; 1s)
    punctual query 'SELECT ...' | --file QUERY.sql
                  --input NAME=FILE[,time=FIELD][,end=FIELD][,order=arrival]
                                   [,out_of_order=DURATION][,policy=adjust|drop]...
                  [--output FILE | --output NAME=FILE...] [--time-format FORMAT]
                  [--out-of-order DURATION] [--policy adjust|drop] [--with-ctis | --items]
                  [--explain]
                  [--max-buffered N] [--dead-letters FILE]
                  [--timeline FILE.svg] [--workers W] [--processes P --process I --hosts FILE]
                                 run a query in the query language (Stream Analytics-style
                                 SQL: WHERE, GROUP BY with TumblingWindow, HoppingWindow,
                                 SlidingWindow or SnapshotWindow, JOIN, UNION, WITH) over
                                 files: FILE.csv is CSV, anything else JSON lines; records
                                 are timed by the query's TIMESTAMP BY field (or time=),
                                 JSON lines without one are items (kind, start, payload);
                                 an input joined without DATEDIFF is reference data that
                                 imports the other input's CTIs. CTIs follow each input's
                                 latest time, --out-of-order behind (default 0s; --delay is
                                 the same flag); an event behind the CTI is moved up to it
                                 and counted as adjusted (Stream Analytics' adjust), or with
                                 --policy drop dropped, counted and dead-lettered;
                                 --max-buffered: how many events may wait for a CTI per
                                 input (1000000). Results as JSON lines (or CSV to FILE.csv)
                                 to FILE or standard output, one flat row each: the result's
                                 time (`time`; `start` and `end` for intervals) and its
                                 fields; --with-ctis adds the CTIs (lines {\"cti\":TIME}), --items
                                 writes items (kind, times, payload) with CTIs. Times in
                                 --time-format (rfc3339 by default; epoch-ms, epoch-s,
                                 ticks); counters and dead letters on stderr. An input whose
                                 every line is malformed fails the run with its first bad line.
                                 order=arrival: the input's events go on as they come
                                 (filters, projections, tumbling and hopping windows and a
                                 join's left side take them so; the rest sort them first).
                                 --timeline FILE.svg (query, job, pipe): the inputs (what
                                 they released, what was dropped or rejected) and outputs
                                 (each result with its values) on one time axis, the first
                                 500 events of each. --workers, --processes: on the
                                 cluster, as for `job`
    punctual job JOB.toml [--timeline FILE.svg]
                  [--workers W] [--processes P --process I --hosts FILE]
                                 the same from a job file naming the query, its inputs
                                 ([inputs.NAME]: path, connect or listen (TCP), kafka or
                                 mqtt (with the features of those names), format, time,
                                 time_format, delay (or out_of_order), generate or
                                 watermark, policy (adjust, the default, or drop), import,
                                 reference, stream, fields, order) and outputs ([outputs.NAME]:
                                 path, connect, kafka or mqtt, format, time_format; for
                                 files layout (rows, the default, or items), with_ctis,
                                 time_field, start_field, end_field);
                                 unknown keys are errors. --workers, --processes: on the
                                 cluster, as for `run` (each input read where its owner
                                 runs, the outputs written by process 0; no timeline)
    punctual timeline CASE_DIR [-o FILE.svg]
                                 run one case and draw its inputs and output on one time
                                 axis as SVG (to FILE, or standard output)
    punctual completions SHELL   a completion script for bash, zsh or fish (commands, their
                                 flags, file names): `source <(punctual completions bash)`,
                                 or save it where the shell loads completions from
    punctual --help              this text
    punctual --version           the version

EXAMPLES:
    punctual run tests/conformance/ingress/unordered-with-delay
    punctual check tests/conformance
    punctual check --processes 2 --workers 2 tests/conformance
    punctual pipe -i samples/data/readings.jsonl --delay 5s | head
    cat readings.csv | punctual pipe --csv time --in-order > ordered.jsonl
    punctual query 'SELECT device, AVG(celsius) AS mean FROM readings TIMESTAMP BY time
                    GROUP BY device, TumblingWindow(minute, 1)' --input readings=readings.csv

EXIT CODES:
    0  success (for `check`: every case passed)
    1  a case failed or could not be run
    2  bad command line
";

/// What `punctual COMMAND --help` prints: the command's lines of [`HELP`], its examples and
/// the exit codes; `None` if it is not a command.
fn command_help(command: &str) -> Option<String> {
    let usage = HELP.split("\nEXAMPLES:").next().unwrap_or_default();
    let head = format!("    punctual {command}");
    let mut lines = usage.lines().skip_while(|l| !l.starts_with(&head));
    let first = lines.next()?;
    // The command's own lines: up to the next command (the same command's other forms
    // included: `explain CASE_DIR`, `explain JOB.toml`).
    let own = lines.take_while(|l| !l.starts_with("    punctual ") || l.starts_with(&head));
    let mut text = format!("USAGE:\n{first}\n");
    for line in own {
        text.push_str(line);
        text.push('\n');
    }
    let examples = HELP
        .split("\nEXAMPLES:\n")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .unwrap_or_default();
    // An example is its line and the more indented lines that go on with it.
    let mut mine: Vec<&str> = Vec::new();
    let mut going_on = false;
    for line in examples.lines() {
        going_on = if line.starts_with("     ") {
            going_on
        } else {
            line.contains(&format!("punctual {command} "))
        };
        if going_on {
            mine.push(line);
        }
    }
    if !mine.is_empty() {
        text.push_str("\nEXAMPLES:\n");
        text.push_str(&mine.join("\n"));
        text.push('\n');
    }
    if let Some(codes) = HELP.split("\nEXIT CODES:\n").nth(1) {
        text.push_str("\nEXIT CODES:\n");
        text.push_str(codes);
    }
    Some(text)
}

/// A bad command line: one line saying what is wrong, one with a hint; exit code 2.
pub(super) fn usage(err: &mut dyn Write, what: &str, command: &str) -> u8 {
    let _ = writeln!(err, "error: {what}");
    if command.is_empty() {
        let _ = writeln!(err, "hint: `punctual --help` shows the commands");
    } else {
        let _ = writeln!(err, "hint: `punctual {command} --help` shows how to use it");
    }
    EXIT_USAGE
}

/// The commands of [`HELP`], each with the flags its usage names (`--out-of-order`, `-i`).
fn commands_and_flags() -> Vec<(String, Vec<String>)> {
    let usage = HELP.split("\nEXAMPLES:").next().unwrap_or_default();
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for line in usage.lines() {
        if let Some(rest) = line.strip_prefix("    punctual ") {
            let command = rest.split_whitespace().next().unwrap_or_default();
            if command.starts_with('-') {
                continue;
            }
            if out.last().is_none_or(|(c, _)| c != command) {
                out.push((command.to_owned(), Vec::new()));
            }
        }
        let Some((_, flags)) = out.last_mut() else {
            continue;
        };
        // The usage's own text: lines indented less than the description's column, up to
        // the gap before a description on the same line.
        let indent = line.len() - line.trim_start().len();
        let usage_part = match indent < 30 {
            true => line.trim_start().split("   ").next().unwrap_or_default(),
            false => "",
        };
        for word in usage_part.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')) {
            let flag = word.starts_with("--") && word.len() > 2
                || (word.len() == 2 && word.starts_with('-') && word != "--");
            if flag && !flags.iter().any(|f| f == word) {
                flags.push(word.to_owned());
            }
        }
    }
    out
}

/// `punctual completions SHELL`: a completion script for bash, zsh or fish (commands, then
/// each command's flags, then file names), made from the help text so it names what the
/// help names.
pub(super) fn completions(shell: &str) -> Result<String, String> {
    let commands = commands_and_flags();
    let names: Vec<&str> = commands.iter().map(|(c, _)| c.as_str()).collect();
    let mut s = String::new();
    match shell {
        "bash" | "zsh" => {
            if shell == "zsh" {
                s.push_str("autoload -U +X bashcompinit && bashcompinit\n");
            }
            s.push_str("_punctual() {\n  local cur=\"${COMP_WORDS[COMP_CWORD]}\"\n");
            s.push_str("  if [ \"$COMP_CWORD\" -eq 1 ]; then\n");
            s.push_str(&format!(
                "    COMPREPLY=($(compgen -W \"{} help --help --version\" -- \"$cur\"))\n    return\n  fi\n",
                names.join(" ")
            ));
            s.push_str("  case \"${COMP_WORDS[1]}\" in\n");
            for (command, flags) in &commands {
                s.push_str(&format!(
                    "    {command}) local flags=\"{} --help\" ;;\n",
                    flags.join(" ")
                ));
            }
            s.push_str("    *) local flags=\"\" ;;\n  esac\n");
            s.push_str("  if [[ \"$cur\" == -* ]]; then\n    COMPREPLY=($(compgen -W \"$flags\" -- \"$cur\"))\n  else\n    COMPREPLY=($(compgen -f -- \"$cur\"))\n  fi\n}\ncomplete -o filenames -F _punctual punctual\n");
        }
        "fish" => {
            for (command, flags) in &commands {
                s.push_str(&format!(
                    "complete -c punctual -n __fish_use_subcommand -a {command}\n"
                ));
                for flag in flags {
                    let option = match flag.strip_prefix("--") {
                        Some(long) => format!("-l {long}"),
                        None => format!("-s {}", &flag[1..]),
                    };
                    s.push_str(&format!(
                        "complete -c punctual -n '__fish_seen_subcommand_from {command}' {option}\n"
                    ));
                }
            }
        }
        other => {
            return Err(format!(
                "`completions` makes scripts for bash, zsh or fish, not `{other}`"
            ))
        }
    }
    Ok(s)
}

/// `punctual completions SHELL`: the script on `out`, or a usage error.
pub(super) fn cmd_completions(shell: &str, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    match completions(shell) {
        Ok(script) => {
            let _ = out.write_all(script.as_bytes());
            super::EXIT_OK
        }
        Err(e) => usage(err, &e, "completions"),
    }
}

/// `punctual help COMMAND`, `punctual COMMAND --help` (or `-h`): that command's help on
/// `out` and its exit code; `None` when no help was asked for.
pub(super) fn asked(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> Option<u8> {
    let asks_help = args[1..].iter().any(|a| a == "--help" || a == "-h");
    let command = match args.first().map(String::as_str) {
        Some("help") => args.get(1).map(String::as_str),
        Some(command) if asks_help => Some(command),
        _ => None,
    }?;
    Some(match command_help(command) {
        Some(text) => {
            let _ = write!(out, "{text}");
            super::EXIT_OK
        }
        None => usage(err, &format!("`{command}` is not a command"), ""),
    })
}
