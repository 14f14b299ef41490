//! Tests of [`Batch`](super::Batch): pushing, appending, retaining, splitting.

use super::*;

#[test]
fn items_interleave_ctis_at_their_marks() {
    let t = Time::from_ticks;
    let mut b = Batch::new();
    b.push_cti(t(0));
    b.push(EventKind::Point(t(1)), 1);
    b.push(EventKind::StartEdge(t(1)), 2);
    b.push_cti(t(2));
    b.push_cti(t(3));
    b.push(
        EventKind::EndEdge {
            start: t(1),
            end: t(5),
        },
        2,
    );
    b.push_cti(Time::INF);
    let borrowed: Vec<StreamItem<i32>> = b.items().map(|i| i.map(|p| *p)).collect();
    let mut owned = Vec::new();
    b.drain_items(|i| owned.push(i));
    assert_eq!(borrowed, owned);
    assert_eq!(
        owned,
        vec![
            StreamItem::Cti(t(0)),
            StreamItem::point(t(1), 1),
            StreamItem::start_edge(t(1), 2),
            StreamItem::Cti(t(2)),
            StreamItem::Cti(t(3)),
            StreamItem::end_edge(t(1), t(5), 2),
            StreamItem::Cti(Time::INF),
        ]
    );
    assert!(b.is_empty());
}

/// `retain` against the obvious copy: same events in order, every CTI after the kept
/// events that preceded it, for payloads with and without drop glue.
#[test]
fn retain_keeps_order_and_moves_marks() {
    let t = Time::from_ticks;
    for ctis_at in [vec![], vec![0], vec![3], vec![0, 5, 5, 12], vec![12]] {
        let mut b = Batch::new();
        let mut strings = Batch::new();
        let mut marks = ctis_at.iter().peekable();
        for i in 0..12i64 {
            while marks.next_if(|&&m| m == i as usize).is_some() {
                let c = b.ctis.len() as i64;
                b.push_cti(t(i * 10 - 5 + c));
                strings.push_cti(t(i * 10 - 5 + c));
            }
            b.push_event(t(i * 10), t(i * 10 + 1), i * 7 % 5);
            strings.push_event(t(i * 10), t(i * 10 + 1), format!("{}", i * 7 % 5));
        }
        for c in marks {
            assert_eq!(*c, 12);
            let time = t(200 + b.ctis.len() as i64);
            b.push_cti(time);
            strings.push_cti(time);
        }
        let expected: Vec<StreamItem<i64>> = b
            .items()
            .filter(|i| match i {
                StreamItem::Insert(e) => *e.payload >= 2,
                StreamItem::Cti(_) => true,
            })
            .map(|i| i.map(|p| *p))
            .collect();
        b.retain(|v| *v >= 2);
        strings.retain(|v| v.as_str() >= "2");
        let got: Vec<StreamItem<i64>> = b.items().map(|i| i.map(|p| *p)).collect();
        assert_eq!(got, expected, "marks at {ctis_at:?}");
        let got_strings: Vec<StreamItem<i64>> = strings
            .items()
            .map(|i| i.map(|p| p.parse::<i64>().unwrap()))
            .collect();
        assert_eq!(got_strings, expected, "strings, marks at {ctis_at:?}");
    }
}

/// A split gives each destination its events in order, with every CTI after the events
/// that came before it, whatever the CTIs' positions (first, last, several in a row).
#[test]
fn a_split_keeps_each_destination_s_events_after_their_ctis() {
    let t = Time::from_ticks;
    for ctis_at in [
        vec![],
        vec![0],
        vec![0, 0, 5, 12],
        vec![3, 7, 12],
        vec![12, 12],
    ] {
        for workers in [1usize, 2, 3, 9] {
            let mut b: Batch<String> = Batch::new();
            let mut marks = ctis_at.iter().peekable();
            let mut time = 100;
            for i in 0..12i64 {
                while marks.next_if(|&&c| c == i).is_some() {
                    time += 1;
                    b.push_cti(t(time));
                }
                b.push_event(t(i * 10), t(i * 10 + 1), format!("{}", i * 7 % 5));
            }
            for _ in marks {
                time += 1;
                b.push_cti(t(time));
            }
            let all: Vec<StreamItem<String>> = b.items().map(|i| i.map(|p| p.clone())).collect();
            let dest = |p: &String| p.parse::<usize>().unwrap_or(0) % workers;
            let mut dests: Vec<Batch<String>> = (0..workers).map(|_| Batch::new()).collect();
            b.split_to(&mut dests, dest);
            assert!(b.is_empty() && b.ctis.is_empty());
            for (w, d) in dests.iter().enumerate() {
                let expected: Vec<StreamItem<String>> = all
                    .iter()
                    .filter(|i| match i {
                        StreamItem::Insert(e) => dest(&e.payload) == w,
                        StreamItem::Cti(_) => true,
                    })
                    .cloned()
                    .collect();
                let got: Vec<StreamItem<String>> =
                    d.items().map(|i| i.map(|p| p.clone())).collect();
                assert_eq!(
                    got, expected,
                    "CTIs at {ctis_at:?}, worker {w} of {workers}"
                );
            }
        }
    }
}
