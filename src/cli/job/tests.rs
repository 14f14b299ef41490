use super::*;

/// What is read ahead of a run (a CSV header, the lines sampled for a JSON-lines file's
/// fields) holds no more than the line limit: an endless line ends the reading with
/// nothing, where it used to grow until memory ran out.
#[test]
fn reading_ahead_holds_no_more_than_the_line_limit() {
    let endless = || std::io::BufReader::new(std::io::repeat(b'x'));
    assert_eq!(header_of(&mut endless()), None);
    assert_eq!(fields_of(&mut endless(), true, None), None);
    // Lines within the limit are read as before (a byte-order mark before the first).
    let mut csv: &[u8] = b"\xEF\xBB\xBFtime,value\n1,2\n";
    assert_eq!(
        header_of(&mut csv),
        Some(vec!["time".into(), "value".into()])
    );
    let mut jsonl: &[u8] = b"{\"a\": 1}\nnot json\n{\"b\": 2, \"a\": 3}\n";
    assert_eq!(
        fields_of(&mut jsonl, true, None),
        Some(vec!["a".into(), "b".into()])
    );
}
