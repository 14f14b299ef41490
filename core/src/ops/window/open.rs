//! The open start edges of one start time ([`OpenAt`]): most often one, held in place; a few,
//! in a list searched from both ends; many, in buckets by payload fingerprint, so that an end
//! edge finds its start edge without a scan in whatever order they end.

use std::collections::VecDeque;

use crate::ops::fxhash::FxHashMap;

/// Above this many edges at one start, they go into buckets by fingerprint.
pub(super) const INDEX_ABOVE: usize = 16;

/// The open start edges of one start time.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub(super) enum OpenAt<T> {
    #[default]
    Empty,
    One(T),
    Many(VecDeque<T>),
    Indexed(Box<Indexed<T>>),
}

/// Many edges of one start, by the fingerprint of their payload.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Indexed<T> {
    buckets: FxHashMap<u64, VecDeque<T>>,
    len: usize,
}

impl<T> Indexed<T> {
    fn push(&mut self, print: u64, item: T) {
        self.buckets.entry(print).or_default().push_back(item);
        self.len += 1;
    }
}

/// Takes out an item of `list` that `matches`, looked for from the front and the back in
/// turn: an item `i` places from either end is found in `2 i + 1` looks, so edges that end in
/// the order they started, or in the reverse order, are found at once. (Equal start edges of
/// one start are alike: any of them may be the one an end edge closes.)
fn take_from_ends<T>(list: &mut VecDeque<T>, matches: &mut impl FnMut(&T) -> bool) -> Option<T> {
    let n = list.len();
    let at = (0..n.div_ceil(2)).find_map(|i| {
        let back = n - 1 - i;
        if matches(&list[i]) {
            Some(i)
        } else if back != i && matches(&list[back]) {
            Some(back)
        } else {
            None
        }
    })?;
    list.remove(at)
}

impl<T> OpenAt<T> {
    /// Adds `item`; `print` gives an item's fingerprint, asked for once the edges of this
    /// start are many.
    pub(super) fn push(&mut self, item: T, mut print: impl FnMut(&T) -> u64) {
        match std::mem::take(self) {
            OpenAt::Empty => *self = OpenAt::One(item),
            OpenAt::One(first) => *self = OpenAt::Many(VecDeque::from([first, item])),
            OpenAt::Many(mut list) if list.len() < INDEX_ABOVE => {
                list.push_back(item);
                *self = OpenAt::Many(list);
            }
            OpenAt::Many(list) => {
                let mut indexed = Indexed {
                    buckets: FxHashMap::default(),
                    len: 0,
                };
                for old in list.into_iter().chain([item]) {
                    indexed.push(print(&old), old);
                }
                *self = OpenAt::Indexed(Box::new(indexed));
            }
            OpenAt::Indexed(mut indexed) => {
                indexed.push(print(&item), item);
                *self = OpenAt::Indexed(indexed);
            }
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(super) fn len(&self) -> usize {
        match self {
            OpenAt::Empty => 0,
            OpenAt::One(_) => 1,
            OpenAt::Many(list) => list.len(),
            OpenAt::Indexed(indexed) => indexed.len,
        }
    }

    /// Every edge (in buckets, bucket by bucket: an order fixed by the edges that came).
    pub(super) fn iter(&self) -> impl Iterator<Item = &T> {
        let (one, many, indexed) = match self {
            OpenAt::Empty => (None, None, None),
            OpenAt::One(item) => (Some(item), None, None),
            OpenAt::Many(list) => (None, Some(list.iter()), None),
            OpenAt::Indexed(indexed) => (None, None, Some(indexed.buckets.values().flatten())),
        };
        one.into_iter()
            .chain(many.into_iter().flatten())
            .chain(indexed.into_iter().flatten())
    }

    pub(super) fn retain_mut(&mut self, mut keep: impl FnMut(&mut T) -> bool) {
        match self {
            OpenAt::Empty => {}
            OpenAt::One(item) => {
                if !keep(item) {
                    *self = OpenAt::Empty;
                }
            }
            OpenAt::Many(list) => list.retain_mut(keep),
            OpenAt::Indexed(indexed) => {
                let mut len = 0;
                for list in indexed.buckets.values_mut() {
                    list.retain_mut(&mut keep);
                    len += list.len();
                }
                if len < indexed.len {
                    indexed.buckets.retain(|_, l| !l.is_empty());
                    indexed.len = len;
                }
            }
        }
    }

    /// Takes out an item that `matches`. Among many, it is looked for in the bucket of
    /// `print` (the fingerprint of the payload looked for) first, and in the others only if
    /// that bucket has none (equal payloads that serialize apart).
    pub(super) fn take(
        &mut self,
        print: impl FnOnce() -> u64,
        mut matches: impl FnMut(&T) -> bool,
    ) -> Option<T> {
        match self {
            OpenAt::Empty => None,
            OpenAt::One(item) if matches(item) => match std::mem::take(self) {
                OpenAt::One(item) => Some(item),
                _ => None,
            },
            OpenAt::One(_) => None,
            OpenAt::Many(list) => take_from_ends(list, &mut matches),
            OpenAt::Indexed(indexed) => {
                let print = print();
                let found = match indexed.buckets.get_mut(&print) {
                    Some(list) => take_from_ends(list, &mut matches).map(|item| (print, item)),
                    None => None,
                };
                let (bucket, item) = match found {
                    Some(found) => found,
                    None => indexed.buckets.iter_mut().find_map(|(&bucket, list)| {
                        let at = list.iter().position(&mut matches)?;
                        list.remove(at).map(|item| (bucket, item))
                    })?,
                };
                if indexed.buckets.get(&bucket).is_some_and(VecDeque::is_empty) {
                    indexed.buckets.remove(&bucket);
                }
                indexed.len -= 1;
                Some(item)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fingerprint of `x` in these tests.
    fn print(x: &i64) -> u64 {
        (*x % 1000) as u64
    }

    #[test]
    fn many_edges_are_found_in_their_bucket_in_any_order() {
        let mut open = OpenAt::default();
        for x in 0..100i64 {
            open.push(x, print);
        }
        assert!(matches!(open, OpenAt::Indexed(_)));
        assert_eq!(open.len(), 100);
        let mut looks = 0;
        for x in (0..100i64).map(|i| (i * 37) % 100) {
            let taken = open.take(
                || print(&x),
                |y| {
                    looks += 1;
                    *y == x
                },
            );
            assert_eq!(taken, Some(x));
        }
        assert_eq!(looks, 100, "one look each");
        assert!(open.is_empty());
    }

    #[test]
    fn a_payload_in_another_bucket_is_found_by_the_scan() {
        let mut open = OpenAt::default();
        for x in 0..40i64 {
            open.push(x, print);
        }
        // Looked for with the wrong fingerprint (as an equal payload serialized apart).
        assert_eq!(open.take(|| 999, |y| *y == 7), Some(7));
        assert_eq!(open.take(|| 999, |y| *y == 7), None);
        assert_eq!(open.len(), 39);
        let mut kept: Vec<i64> = open.iter().copied().collect();
        kept.sort_unstable();
        assert_eq!(kept, (0..40).filter(|&x| x != 7).collect::<Vec<_>>());
        open.retain_mut(|y| *y % 2 == 0);
        assert_eq!(open.len(), 20);
        assert_eq!(open.iter().count(), 20);
    }

    #[test]
    fn few_edges_are_searched_from_both_ends() {
        let mut open = OpenAt::default();
        for x in 0..5i64 {
            open.push(x, |_| unreachable!("few edges need no fingerprint"));
        }
        let mut looks = 0;
        let taken = open.take(
            || unreachable!(),
            |y| {
                looks += 1;
                *y == 4
            },
        );
        assert_eq!((taken, looks), (Some(4), 2));
    }
}
