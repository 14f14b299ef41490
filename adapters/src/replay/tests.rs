use super::*;

/// Lines taken from the buffer where they are whole read as lines waited for do: line
/// ends (`\r\n` too), an empty line, one that is not UTF-8, a last one without its end.
#[tokio::test]
async fn lines_in_the_buffer_read_as_lines_waited_for() {
    let input: &[u8] = b"a\r\nb\n\xff\n\nx\r\r\nlast";
    let path = Path::new("lines");
    let mut reader = input;
    let mut waited = Vec::new();
    while let Some(line) = next_line(&mut reader, false, path, std::future::pending())
        .await
        .unwrap()
    {
        waited.push(line);
    }
    let mut reader = input;
    let mut buffered = Vec::new();
    let mut line = String::from("left from before");
    loop {
        if let Some(read) = buffered_line(&mut reader, &mut line).await.unwrap() {
            buffered.push(read.map(|()| line.clone()));
            continue;
        }
        match next_line(&mut reader, false, path, std::future::pending())
            .await
            .unwrap()
        {
            Some(line) => buffered.push(line),
            None => break,
        }
    }
    assert_eq!(buffered, waited);
    assert_eq!(buffered.len(), 6);
    assert_eq!(buffered[0], Ok("a".to_owned()));
    assert!(matches!(&buffered[2], Err((_, why)) if why.contains("not UTF-8")));
    assert_eq!(buffered[3], Ok(String::new()));
    assert_eq!(buffered[4], Ok("x".to_owned()));
    assert_eq!(buffered[5], Ok("last".to_owned()));
}

#[test]
fn wildcards_match_any_characters_or_one() {
    let m = |p: &str, n: &str| {
        let (p, n): (Vec<char>, Vec<char>) = (p.chars().collect(), n.chars().collect());
        wildcard(&p, &n)
    };
    assert!(m("*.csv", "a.csv") && m("*.csv", ".csv") && m("p-?.csv", "p-1.csv"));
    assert!(m("*-*", "a-b-c") && m("*", "") && m("a*b*c", "abc"));
    assert!(!m("p-?.csv", "p-12.csv") && !m("*.csv", "a.csvx") && !m("a*b", "ba"));
    assert!(!m("?", ""));
}

#[test]
fn a_tiny_or_huge_gap_at_a_tiny_speed_waits_far_but_never_panics() {
    for speed in [1e-9, 1e-300, f64::MIN_POSITIVE] {
        let mut pacer = Pacer::new(Some(speed));
        let start = pacer.due(Time::from_ticks(0)).expect("paced");
        let later = pacer.due(Time::MAX_FINITE).expect("paced");
        assert!(later > start, "{speed}");
    }
}

#[test]
fn a_speed_must_be_finite_and_above_zero() {
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let options = ReplayOptions {
            speed: Some(bad),
            ..ReplayOptions::default()
        };
        assert!(
            matches!(options.validate(), Err(AdapterError::Config(ref m)) if m.contains("speed")),
            "{bad}"
        );
    }
    assert!(ReplayOptions::default().validate().is_ok());
}

/// A format of the test's own: a header `n`, then a tick per line (a point), `end` to end.
#[derive(Debug, Default)]
struct Ticks {
    header: Option<String>,
}

impl FileFormat<i64> for Ticks {
    fn has_header(&self) -> bool {
        true
    }

    fn header(&mut self, line: &str) -> Result<(), String> {
        if line != "n" {
            return Err(format!("header `{line}`, not `n`"));
        }
        self.header = Some(line.to_owned());
        Ok(())
    }

    fn read(&mut self, line: &str) -> Result<LineRead<i64>, String> {
        if line == "end" {
            return Ok(LineRead::End);
        }
        let n: i64 = line
            .parse()
            .map_err(|_| format!("`{line}` is not a tick"))?;
        Ok(LineRead::Item(StreamItem::point(Time::from_ticks(n), n)))
    }
}

/// The factory of the test's format: the file reader around it.
struct TicksInput;

impl punctual_runtime::adapter::InputAdapterFactory<PathBuf, i64> for TicksInput {
    type Adapter = FileReader<i64, Ticks>;

    fn create(
        &self,
        path: &PathBuf,
        _shape: punctual_core::EventShape,
    ) -> Result<Self::Adapter, AdapterError> {
        let source = FilePart::of(path, ReplayOptions::default(), None, 0)?;
        Ok(FileReader::new(
            source,
            ReplayOptions::default(),
            MalformedLines::Skip,
            Ticks::default(),
        ))
    }
}

/// Any format reads through the one file reader the same way: the header (after a byte-order
/// mark), line numbers counted from it, blank lines skipped, a malformed line and a line after
/// the end dead-lettered with their line, the final CTI.
#[tokio::test]
async fn a_format_of_its_own_reads_through_the_file_reader() {
    use punctual_runtime::{InputOptions, Query};
    let dir = std::env::temp_dir().join(format!("punctual-reader-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ticks.txt");
    std::fs::write(&path, "\u{feff}n\n1\n\n2\nx\n3\nend\n4\n").unwrap();
    let mut query = Query::new("ticks");
    let input = query
        .create_stream(
            InputOptions::new("ticks", punctual_core::EventShape::Point),
            &TicksInput,
            &path,
        )
        .unwrap();
    let letters = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = std::sync::Arc::clone(&letters);
    query
        .bind_dead_letters(&input, move |l: punctual_policies::DeadLetter<i64>| {
            sink.lock().unwrap().push(l.reason.to_string());
        })
        .unwrap();
    let out = crate::CollectOutput::new();
    query.bind_output(&input, &out, &()).unwrap();
    let report = query.start().unwrap().wait().await.unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let points: Vec<i64> = out
        .items()
        .iter()
        .filter_map(|i| match i {
            StreamItem::Insert(e) => Some(e.payload),
            _ => None,
        })
        .collect();
    assert_eq!(points, [1, 2, 3]);
    assert_eq!(out.items().last(), Some(&StreamItem::Cti(Time::INF)));
    let counters = report.counters("ticks").unwrap();
    assert_eq!((counters.malformed, counters.skipped), (2, 2));
    let where_ = letters.lock().unwrap().clone();
    assert_eq!(where_.len(), 2, "{where_:?}");
    assert!(
        where_[0].ends_with("ticks.txt:5: `x` is not a tick"),
        "{where_:?}"
    );
    assert!(where_[1].contains("ticks.txt:8"), "{where_:?}");
    assert!(where_[1].contains("after the `eof` line"), "{where_:?}");
}
