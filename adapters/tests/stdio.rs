//! Standard input and output (`-`): the test runs itself as a child process, pipes JSON lines into
//! its standard input and reads the query's output from its standard output.

use std::io::Write;
use std::process::{Command, Stdio};

use punctual_adapters::{
    JsonLinesInput, JsonLinesInputConfig, JsonLinesOutput, JsonLinesOutputConfig,
};
use punctual_policies::AdvanceTimeSettings;
use punctual_rows::Row;
use punctual_runtime::Query;

mod common;
use common::point;

const CHILD: &str = "PUNCTUAL_STDIO_CHILD";

/// In the child: stdin -> a query -> stdout. In the parent (a normal run): does nothing.
#[tokio::test]
async fn child_pipes_stdin_to_stdout() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let mut query = Query::new("pipe");
    let s = query
        .create_stream::<_, Row, _, _>(
            point("in").settings(AdvanceTimeSettings::unordered_start_time(
                punctual_core::TimeSpan::from_ticks(10),
            )),
            &JsonLinesInput,
            &JsonLinesInputConfig::new("-"),
        )
        .expect("binds");
    query
        .bind_output(&s, &JsonLinesOutput, &JsonLinesOutputConfig::stdout())
        .expect("binds");
    query.start().expect("starts").wait().await.expect("runs");
}

#[test]
fn a_query_reads_stdin_and_writes_stdout() {
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "child_pipes_stdin_to_stdout",
            "--nocapture",
            "--quiet",
        ])
        .env(CHILD, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawns");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"{\"kind\":\"point\",\"start\":5,\"payload\":{\"v\":2}}\n{\"kind\":\"point\",\"start\":3,\"payload\":{\"v\":1}}\n")
        .expect("writes");
    let out = child.wait_with_output().expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with('{')).collect();
    assert_eq!(
        lines,
        vec![
            r#"{"kind":"cti","time":-5}"#,
            r#"{"kind":"point","start":3,"payload":{"v":1}}"#,
            r#"{"kind":"point","start":5,"payload":{"v":2}}"#,
            r#"{"kind":"cti","time":"inf"}"#,
        ],
        "{text}"
    );
}
