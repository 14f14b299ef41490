use super::*;

/// Points below the right side's CTI are joined at once: a point with no partner adds
/// nothing, one with two partners adds two results, each with the point's lifetime, in
/// input order.
#[test]
fn points_joined_on_arrival_keep_their_times_whatever_their_number_of_results() {
    let t = Time::from_ticks;
    let mut join = Join::<_, _, _, _, _, _, _, Ordered>::new(
        |l: &(u8, i64)| l.0,
        |r: &(u8, i64)| r.0,
        |l, r| Some(l.1 * r.1),
    );
    let mut out = Batch::new();
    let mut right = Batch::new();
    right.push_event(t(0), t(100), (1, 10));
    right.push_event(t(2), t(50), (1, 100));
    right.push_event(t(3), t(4), (2, 1000)); // over before any point
    right.push_cti(t(20));
    join.on_right(&right, &mut out);
    let mut left = Batch::new();
    for (at, key, v) in [(5, 1, 1), (6, 2, 2), (7, 1, 3), (8, 3, 4), (9, 1, 5)] {
        left.push_event(t(at), t(at + 1), (key, v));
    }
    left.push_cti(t(10));
    join.on_left(&left, &mut out);
    let got: Vec<(Time, Time, i64)> = (0..out.len())
        .map(|i| (out.sync()[i], out.other()[i], out.payloads()[i]))
        .collect();
    // The partner that starts first first for each point (the right side's list order).
    assert_eq!(
        got,
        vec![
            (t(5), t(6), 10),
            (t(5), t(6), 100),
            (t(7), t(8), 30),
            (t(7), t(8), 300),
            (t(9), t(10), 50),
            (t(9), t(10), 500),
        ]
    );
    assert_eq!(out.last_cti(), Some(t(10)));
}

mod owned {
    use super::*;
    use crate::order::Unordered;
    use proptest::prelude::*;

    /// A batch of the left input: events (start, duration: 1 is a point), each followed or
    /// not by a CTI (kept rising, and no event below the last one).
    fn left_batches() -> impl Strategy<Value = Vec<Vec<(i64, i64, u8, bool)>>> {
        let event = (
            0..30i64,
            prop_oneof![4 => Just(1i64), 1 => 2..8i64],
            0..3u8,
            prop::bool::weighted(0.15),
        );
        prop::collection::vec(prop::collection::vec(event, 0..12), 1..8)
    }

    /// Two joins of left order `M`, one given each left batch to read, the other to own
    /// (its payloads moved in): their outputs are the same after every batch. With `sorted`,
    /// each event's start is the previous one's (or the last CTI) plus its time modulo 3.
    fn owned_and_read_agree<M: crate::order::Order>(
        batches: &[Vec<(i64, i64, u8, bool)>],
        right_cti: i64,
        sorted: bool,
    ) -> Result<(), TestCaseError> {
        let t = Time::from_ticks;
        let make = || {
            Join::<_, _, _, _, _, _, _, M>::new(
                |l: &String| l.as_bytes()[0],
                |r: &(u8, i64)| r.0,
                |l: &String, r: &(u8, i64)| Some(format!("{l}x{}", r.1)),
            )
        };
        let (mut read, mut owned) = (make(), make());
        let mut right = Batch::new();
        for (k, (start, end)) in [(0u8, (0, 50)), (1, (5, 20)), (1, (10, 60)), (2, (25, 26))] {
            right.push_event(t(start), t(end), (b'a' + k, start * 10 + end));
        }
        right.push_cti(t(right_cti));
        let (mut out_read, mut out_owned) = (Batch::new(), Batch::new());
        read.on_right(&right, &mut out_read);
        owned.on_right(&right, &mut out_owned);
        let (mut cti, mut last) = (0, 0);
        for (b, events) in batches.iter().enumerate() {
            let mut left = Batch::new();
            for (n, &(at, d, key, close)) in events.iter().enumerate() {
                let at = if sorted { last + at % 3 } else { cti.max(at) };
                last = at;
                left.push_event(t(at), t(at + d), format!("{}{b}.{n}", (b'a' + key) as char));
                if close {
                    cti = at + 1;
                    last = cti;
                    left.push_cti(t(cti));
                }
            }
            let mut taken = left.clone();
            read.on_left(&left, &mut out_read);
            owned.on_owned_left(&mut taken, &mut out_owned);
            prop_assert_eq!(&out_owned, &out_read, "batch {}", b);
            prop_assert!(taken.payloads().is_empty());
        }
        // The right CTI passes every waiting point, then the left CTI every stored event.
        let mut end = Batch::new();
        end.push_cti(t(100));
        read.on_right(&end, &mut out_read);
        owned.on_right(&end, &mut out_owned);
        prop_assert_eq!(&out_owned, &out_read);
        let mut end = Batch::new();
        end.push_cti(t(200));
        read.on_left(&end, &mut out_read);
        owned.on_owned_left(&mut end.clone(), &mut out_owned);
        prop_assert_eq!(&out_owned, &out_read);
        Ok(())
    }

    proptest! {
        /// A left batch that no one reads after the join, whose payloads are moved in,
        /// gives exactly what the same batch read in place gives, batch by batch, whatever
        /// the mix of points that wait, points joined at once, intervals and CTIs, in
        /// arrival order and in time order; and the owned batch keeps no payload.
        #[test]
        fn an_owned_left_batch_gives_what_a_borrowed_one_gives(
            batches in left_batches(),
            right_cti in 0..40i64,
        ) {
            owned_and_read_agree::<Unordered>(&batches, right_cti, false)?;
            owned_and_read_agree::<crate::order::Ordered>(&batches, right_cti, true)?;
        }
    }
}

mod lists {
    use super::super::side::{Entry, Side, NONE};
    use crate::time::Time;
    use proptest::prelude::*;

    /// What a side is asked to do: insert an event (key, start, end), close an open one, or
    /// forget what ends below a time.
    #[derive(Debug, Clone)]
    enum Step {
        Insert(u8, i64, Option<i64>),
        Close(u8, i64, i64),
        Expire(i64),
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            4 => (0..3u8, 0..40i64, prop::option::of(1..20i64))
                .prop_map(|(k, s, d)| Step::Insert(k, s, d.map(|d| s + d))),
            1 => (0..3u8, 0..40i64, 1..20i64).prop_map(|(k, s, d)| Step::Close(k, s, s + d)),
            1 => (0..60i64).prop_map(Step::Expire),
        ]
    }

    proptest! {
        /// Whatever the order of inserts, closes and expiries, each key's list holds exactly
        /// the side's live entries of that key, in start order, ties in arrival order, and
        /// reads the same forwards and backwards (the head's `prev` is the tail).
        #[test]
        fn each_keys_list_is_its_live_entries_in_start_order(
            steps in prop::collection::vec(step(), 1..80)
        ) {
            let t = Time::from_ticks;
            let mut side = Side::<u32, u8>::new();
            // The model: (key, start, end, payload) in arrival order.
            let mut model: Vec<(u8, i64, Option<i64>, u32)> = Vec::new();
            for (n, step) in steps.into_iter().enumerate() {
                let payload = n as u32;
                match step {
                    Step::Insert(key, start, end) => {
                        side.insert(Entry {
                            start: t(start),
                            end: end.map(t),
                            key,
                            payload,
                            next: NONE,
                            prev: NONE,
                        });
                        model.push((key, start, end, payload));
                    }
                    Step::Close(key, start, end) => {
                        // Closes the first open entry of this key and start, if there is one
                        // (its payload: whichever the list finds first of equal ones).
                        let open = side
                            .with_key(&key)
                            .find(|(_, e)| e.start == t(start) && e.end.is_none())
                            .map(|(_, e)| e.payload);
                        if let Some(p) = open {
                            side.close(&key, t(start), &p, t(end));
                            let m = model.iter_mut().find(|m| m.3 == p);
                            prop_assert!(m.is_some());
                            if let Some(m) = m {
                                m.2 = Some(end);
                            }
                        }
                    }
                    Step::Expire(at) => {
                        side.expire(t(at));
                        model.retain(|m| m.2.is_none_or(|e| e >= at));
                    }
                }
                for key in 0..3u8 {
                    let mut want: Vec<(i64, u32)> = model
                        .iter()
                        .filter(|m| m.0 == key)
                        .map(|m| (m.1, m.3))
                        .collect();
                    want.sort_by_key(|w| w.0);
                    let got: Vec<(i64, u32)> = side
                        .with_key(&key)
                        .map(|(_, e)| (e.start.ticks(), e.payload))
                        .collect();
                    prop_assert_eq!(&got, &want);
                    // Backwards from the tail (the head's `prev`) to the head.
                    let ids: Vec<usize> = side.with_key(&key).map(|(id, _)| id).collect();
                    if let Some(&head) = ids.first() {
                        let mut back = Vec::new();
                        let mut id = side.get(head).map_or(NONE, |e| e.prev);
                        for _ in 0..ids.len() {
                            back.push(id);
                            id = side.get(id).map_or(NONE, |e| e.prev);
                        }
                        back.reverse();
                        prop_assert_eq!(back, ids);
                    }
                }
                prop_assert_eq!(side.live, model.len());
            }
        }
    }
}

mod many_open_edges {
    use super::super::side::{Entry, Side, NONE};
    use crate::time::Time;
    use std::cell::Cell;

    thread_local! {
        static COMPARISONS: Cell<u64> = const { Cell::new(0) };
    }

    /// A payload whose comparisons are counted (on this test's thread).
    #[derive(Clone, Debug, serde::Serialize)]
    struct Counted(f64);

    impl PartialEq for Counted {
        fn eq(&self, other: &Self) -> bool {
            COMPARISONS.with(|c| c.set(c.get() + 1));
            self.0 == other.0
        }
    }

    fn open_edge(start: Time, payload: Counted) -> Entry<Counted, u8> {
        Entry {
            start,
            end: None,
            key: 0,
            payload,
            next: NONE,
            prev: NONE,
        }
    }

    /// Many open edges of one key and start (reference rows keyed alike), ended in a
    /// scattered order: each end edge finds its start edge by fingerprint, not by a walk of
    /// the key's list; an equal payload serialized apart (`-0.0` for `0.0`) by the walk.
    #[test]
    fn end_edges_of_one_key_are_found_without_a_walk() {
        let t = Time::from_ticks;
        const N: u64 = 20_000;
        let mut side: Side<Counted, u8> = Side::new();
        for i in 0..N {
            side.insert(open_edge(t(1), Counted(i as f64)));
        }
        side.insert(open_edge(t(2), Counted(0.0)));
        let before = COMPARISONS.with(Cell::get);
        for i in (0..N).map(|i| (i * 7919) % N) {
            side.close(&0, t(1), &Counted(i as f64), t(5));
        }
        let comparisons = COMPARISONS.with(Cell::get) - before;
        // The first walks (until one is long) and one look each; a walk each would make
        // about N * N / 2.
        assert!(comparisons <= 3 * N, "{comparisons} comparisons");
        // Every edge of start 1 is closed, the one of start 2 is not.
        let closed = side.with_key(&0).filter(|(_, e)| e.end.is_some()).count();
        assert_eq!(closed, N as usize);
        side.close(&0, t(2), &Counted(-0.0), t(6));
        assert!(side.with_key(&0).all(|(_, e)| e.end.is_some()));
        side.expire(t(7));
        assert_eq!(side.live, 0);
        // A new open edge after the index was made is found by it.
        side.insert(open_edge(t(8), Counted(1.5)));
        let before = COMPARISONS.with(Cell::get);
        side.close(&0, t(8), &Counted(1.5), t(9));
        assert_eq!(COMPARISONS.with(Cell::get) - before, 1);
        side.expire(t(10));
        assert_eq!(side.live, 0);
    }
}
