use super::*;
use punctual_rows::Row;

#[test]
fn time_formats_read_and_write_their_forms() {
    let t = Time::from_ticks(15_000_000);
    for (f, text) in [
        (TimeFormat::EpochMs, "1500"),
        (TimeFormat::EpochS, "1.5"),
        (TimeFormat::Ticks, "15000000"),
        (TimeFormat::Rfc3339, "1970-01-01T00:00:01.5Z"),
        (TimeFormat::Auto, "1970-01-01T01:00:01.5+01:00"),
    ] {
        assert_eq!(f.read_text(text), Ok(t), "{f:?} {text}");
    }
    assert_eq!(TimeFormat::EpochMs.write(t), serde_json::json!(1500));
    assert_eq!(TimeFormat::EpochS.write(t), serde_json::json!(1.5));
    assert_eq!(
        TimeFormat::Rfc3339.write(Time::INF),
        serde_json::json!("inf")
    );
    assert!(TimeFormat::Rfc3339.read(&serde_json::json!(12)).is_err());
    // A number whose unit is not declared is never guessed: refused with the fix.
    for number in [
        serde_json::json!(1_714_564_800_000_i64),
        serde_json::json!(1.5),
    ] {
        let refused = TimeFormat::Auto.read(&number).unwrap_err();
        assert!(refused.contains("epoch-ms, epoch-s or ticks"), "{refused}");
    }
    assert!(TimeFormat::Auto.read_text("15000000").is_err());
    assert!(TimeFormat::EpochMs
        .read_text("soon")
        .unwrap_err()
        .contains("milliseconds"));
    assert!(TimeFormat::EpochMs
        .read_text("9223372036854775807")
        .is_err());
    let item = StreamItem::point(t, Row::new());
    assert_eq!(
        item_to_json_as(item.as_ref(), TimeFormat::Rfc3339).to_string(),
        r#"{"kind":"point","start":"1970-01-01T00:00:01.5Z","payload":{}}"#
    );
}

#[test]
fn lines_written_are_the_json_of_their_items() {
    let t = Time::from_ticks;
    let p = Row::new()
        .with("name", "a \"quoted\"\n name")
        .with("v", 1.5);
    let items = [
        StreamItem::point(t(15_000_001), p.clone()),
        StreamItem::interval(t(-20_000_000), t(7), p.clone()),
        StreamItem::start_edge(t(0), p.clone()),
        StreamItem::end_edge(t(3), t(40_000_000_000_000), p.clone()),
        StreamItem::interval(Time::MIN_FINITE, Time::MAX_FINITE, p.clone()),
        StreamItem::Cti(t(10_000)),
        StreamItem::Cti(Time::INF),
        StreamItem::Cti(Time::NEG_INF),
    ];
    for format in [
        TimeFormat::Auto,
        TimeFormat::Ticks,
        TimeFormat::Rfc3339,
        TimeFormat::EpochMs,
        TimeFormat::EpochS,
    ] {
        for item in &items {
            let mut line = Vec::new();
            write_item_as(item.as_ref(), format, &mut line).unwrap();
            let json: serde_json::Value = serde_json::from_slice(&line).unwrap();
            assert_eq!(
                json,
                item_to_json_as(item.as_ref(), format),
                "{format:?} {item:?}"
            );
        }
    }
}

#[test]
fn missing_fields_are_named() {
    let l = parse_line::<Row>(r#"{"kind":"interval","start":1,"payload":{}}"#).unwrap();
    let e = l.into_item().unwrap_err();
    assert_eq!(e.to_string(), "a `interval` line needs the field `end`");
    let l = parse_line::<Row>(r#"{"kind":"point","start":1}"#).unwrap();
    assert!(l.clone().into_item().is_err());
    assert_eq!(
        l.into_item_or_default().unwrap(),
        Some(StreamItem::point(Time::from_ticks(1), Row::new()))
    );
    let e = parse_line::<Row>(r#"{"kind":"point","start":1,"colour":2}"#).unwrap_err();
    assert!(e.to_string().contains("unknown field `colour`"), "{e}");
}

#[test]
fn output_forms() {
    let p = Row::new().with("v", 1i64);
    let t = Time::from_ticks;
    let j = |i: StreamItem<Row>| item_to_json(i.as_ref()).to_string();
    assert_eq!(
        j(StreamItem::end_edge(t(1), t(4), p.clone())),
        r#"{"kind":"end","start":1,"end":4,"payload":{"v":1}}"#
    );
    assert_eq!(
        j(StreamItem::interval(t(1), t(2), p)),
        r#"{"kind":"point","start":1,"payload":{"v":1}}"#
    );
    assert_eq!(
        j(StreamItem::Cti(Time::INF)),
        r#"{"kind":"cti","time":"inf"}"#
    );
}
