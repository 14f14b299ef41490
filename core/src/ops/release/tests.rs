use super::*;

#[test]
fn out_of_order_results_merge_in_sync_then_push_order() {
    let t = Time::from_ticks;
    let mut buf = ReleaseBuffer::new();
    for (sync, p) in [
        (5, 'a'),
        (7, 'b'),
        (3, 'c'),
        (5, 'd'),
        (9, 'e'),
        (5, 'f'),
        (1, 'g'),
    ] {
        buf.push(t(sync), t(sync + 1), p);
    }
    let mut out = Batch::new();
    assert!(buf.release(t(6), &mut out));
    assert_eq!(out.payloads(), &['g', 'c', 'a', 'd', 'f']);
    assert!(!buf.release(t(6), &mut out), "a CTI that does not advance");
    buf.push(t(8), t(9), 'h');
    buf.release(Time::INF, &mut out);
    assert_eq!(out.payloads(), &['g', 'c', 'a', 'd', 'f', 'b', 'h', 'e']);
    assert!(buf.is_empty());
}

/// Out-of-order results whose times span the whole time line (too far apart to sort by one
/// word each) come out in sync then push order too.
#[test]
fn out_of_order_results_far_apart_merge_in_sync_then_push_order() {
    let far = Time::MAX_FINITE.ticks();
    let mut buf = ReleaseBuffer::new();
    buf.push_point(Time::from_ticks(far), usize::MAX);
    let times = [0, -far, far - 1, 0, -far, 7];
    for (k, &x) in times.iter().enumerate() {
        buf.push_point(Time::from_ticks(x), k);
    }
    let mut out = Batch::new();
    buf.release(Time::INF, &mut out);
    let mut expected: Vec<usize> = (0..times.len()).collect();
    expected.sort_by_key(|&k| times[k]);
    expected.push(usize::MAX);
    assert_eq!(out.payloads(), &expected[..]);
}

/// Any pushes (points and intervals, in and out of order) interleaved with releases and
/// removals come out as a stable sort by sync time of what was pushed; with payloads `p(n)`
/// for push `n` (`n` read back with `n_of`).
fn releases_are_a_stable_sort<P: Clone + std::fmt::Debug>(
    ops: &[(i64, u8, bool)],
    p: impl Fn(usize) -> P,
    n_of: impl Fn(&P) -> usize,
) -> Result<(), proptest::test_runner::TestCaseError> {
    let t = Time::from_ticks;
    let mut buf = ReleaseBuffer::new();
    let mut reference: Vec<(Time, Time, usize)> = Vec::new();
    let mut out = Batch::new();
    let mut expected: Vec<(Time, Time, usize)> = Vec::new();
    let mut cti = 0i64;
    for (n, &(sync, action, interval)) in ops.iter().enumerate() {
        match action {
            // Release up to a later CTI.
            0 => {
                cti += sync % 7 + 1;
                let (now, later): (Vec<_>, Vec<_>) =
                    reference.drain(..).partition(|r| r.0 < t(cti));
                let mut now = now;
                now.sort_by_key(|r| r.0);
                expected.extend(now);
                reference = later;
                buf.release(t(cti), &mut out);
            }
            // Take back the first held result with this payload parity.
            1 => {
                let parity = sync as usize % 2;
                let got = buf.remove_first(|_, _, q| n_of(q) % 2 == parity);
                if let Some((s, o, q)) = got {
                    let q = n_of(&q);
                    let pos = reference.iter().position(|r| r.2 == q);
                    proptest::prop_assert!(pos.is_some(), "removed {q}, which is not held");
                    let r = reference.remove(pos.unwrap_or(0));
                    proptest::prop_assert_eq!((r.0, r.1), (s, o));
                } else {
                    proptest::prop_assert!(reference.iter().all(|r| r.2 % 2 != parity));
                }
            }
            // A run of three given as columns (times up, down, up: in and out of order).
            2 => {
                let times = [cti + sync, cti + sync - 2, cti + sync + 1];
                let sync: Vec<Time> = times.iter().map(|&x| t(x)).collect();
                let other: Vec<Time> = times
                    .iter()
                    .enumerate()
                    .map(|(k, &x)| {
                        if interval && k == 1 {
                            t(x + 5)
                        } else {
                            t(x + 1)
                        }
                    })
                    .collect();
                let mut payloads: Vec<P> = (0..3).map(|k| p(n * 10 + k)).collect();
                if !interval && n % 2 == 1 {
                    // Points moved in rather than copied.
                    buf.append_point_run(&sync, &mut payloads);
                } else {
                    buf.push_run(&sync, &other, &payloads);
                }
                for k in 0..3 {
                    reference.push((sync[k], other[k], n * 10 + k));
                }
            }
            _ => {
                let s = t(cti + sync);
                let o = if interval {
                    t(cti + sync + 5)
                } else {
                    s.next_tick()
                };
                buf.push(s, o, p(n * 10));
                reference.push((s, o, n * 10));
            }
        }
        proptest::prop_assert_eq!(buf.len(), reference.len());
    }
    let got: Vec<(Time, Time, usize)> = out
        .sync()
        .iter()
        .zip(out.other())
        .zip(out.payloads())
        .map(|((&s, &o), q)| (s, o, n_of(q)))
        .collect();
    proptest::prop_assert_eq!(got, expected);
    let mut rest: Vec<_> = buf.drain_all().map(|(s, o, q)| (s, o, n_of(&q))).collect();
    rest.sort_by_key(|r| r.2);
    reference.sort_by_key(|r| r.2);
    proptest::prop_assert_eq!(rest, reference);
    proptest::prop_assert!(buf.is_empty());
    Ok(())
}

proptest::proptest! {
    /// Copies (payloads without drop glue) and moves (with drop glue) alike, across chunks.
    #[test]
    fn releases_are_a_stable_sort_of_the_pushes(
        ops in proptest::collection::vec((0i64..40, 0u8..10, proptest::bool::ANY), 0..200)
    ) {
        releases_are_a_stable_sort(&ops, |n| n, |q| *q)?;
        releases_are_a_stable_sort(&ops, |n| n.to_string(), |q| q.parse().unwrap_or(usize::MAX))?;
    }
}

/// Held points come out of an unsorted release with their own payloads, exactly once,
/// runs and out-of-order ones, whether they went in one by one or in runs, released in
/// steps that cut the run anywhere.
#[test]
fn unsorted_releases_hand_out_each_point_once_with_its_payload() {
    let mut buf = ReleaseBuffer::<(u8, i64)>::new();
    let (mut next, mut pushed, mut late) = (0i64, 0usize, 0usize);
    let mut released = Vec::new();
    let mut take = |r: Released<'_, (u8, i64)>| match r {
        Released::Points(ts, ps) => {
            released.extend(ts.iter().zip(ps).map(|(t, p)| (t.ticks(), p.1)));
        }
        Released::One(t, o, p) => {
            assert_eq!(o, t.next_tick());
            released.push((t.ticks(), p.1));
        }
    };
    for round in 0..400i64 {
        // Runs of up to 297 points in time order, some of them one by one.
        let n = round * 37 % 297 + 1;
        let times: Vec<Time> = (next..next + n).map(Time::from_ticks).collect();
        let payloads: Vec<(u8, i64)> = (next..next + n).map(|v| (7, v)).collect();
        if round % 2 == 0 {
            buf.push_point_run(&times, &payloads);
        } else {
            for (t, p) in times.iter().zip(payloads) {
                buf.push_point(*t, p);
            }
        }
        next += n;
        pushed += n as usize;
        if round % 4 == 0 && next > 3 {
            buf.push_point(Time::from_ticks(next - 3), (7, next - 3)); // out of order
            pushed += 1;
            late += 1;
        }
        let t = Time::from_ticks(next - round % 50 * 150);
        buf.release_unsorted(t, &mut take);
        assert!(
            buf.earliest() >= t,
            "round {round}: {:?} left below {t:?}",
            buf.earliest()
        );
    }
    buf.release_unsorted(Time::INF, &mut take);
    assert!(
        released.iter().all(|(t, v)| t == v),
        "a payload left its time"
    );
    assert_eq!((released.len(), buf.len()), (pushed, 0));
    let mut sorted = released.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(
        sorted.len() + late,
        pushed,
        "each point once (the late ones repeat a time)"
    );
}

#[test]
fn a_run_out_of_order_is_pushed_point_by_point() {
    let t = Time::from_ticks;
    let mut buf = ReleaseBuffer::new();
    buf.push_point_run(&[t(5), t(6)], &['a', 'b']);
    buf.push_point_run(&[t(7), t(2), t(9)], &['c', 'd', 'e']); // not sorted
    buf.push_point_run(&[t(1), t(3)], &['f', 'g']); // before the last in order
    let mut out = Batch::new();
    buf.release(Time::INF, &mut out);
    assert_eq!(out.payloads(), &['f', 'd', 'g', 'a', 'b', 'c', 'e']);
    assert!(out
        .other()
        .iter()
        .zip(out.sync())
        .all(|(o, s)| *o == s.next_tick()));
}
