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
