//! [`Groups`]: aggregate states by group key, for the windows. Small non-negative integer keys
//! (sensor, device, account ids: the common case) hold their state in a table indexed by the
//! key itself, one load away; other keys, and integers beyond the table's reach, by hash. The
//! table's reach grows with the number of groups (as [`KeyIndex`](super::key_index)'s does),
//! so memory stays proportional to the groups held. A window emits its groups in the order
//! they first appeared (the table's, then the others').

use std::any::Any;
use std::hash::Hash;

use super::fxhash::FxHashMap;
use super::key_index::Indexer;

/// The table may always reach this far.
const DENSE_MIN: usize = 4096;

/// Beyond [`DENSE_MIN`], the table may reach this many slots per group held.
const DENSE_PER_GROUP: usize = 8;

/// Aggregate states by group key; see the module doc.
#[derive(Debug)]
pub(crate) struct Groups<K, S> {
    /// The states of the integer keys below its length.
    dense: Vec<Option<S>>,
    /// The keys in `dense`, in order of appearance.
    dense_keys: Vec<K>,
    /// Every other key: its place in `states`.
    map: FxHashMap<K, usize>,
    /// Every other key's state, in order of appearance.
    states: Vec<(K, S)>,
    /// Which keys go to `dense`.
    indexer: Indexer<K>,
}

impl<K: Hash + Eq + Clone + Any, S> Default for Groups<K, S> {
    fn default() -> Self {
        Groups {
            dense: Vec::new(),
            dense_keys: Vec::new(),
            map: FxHashMap::default(),
            states: Vec::new(),
            // Looked up as the map is made (a window makes its maps as its events come), so
            // that adding a member costs no check of it.
            indexer: Indexer::resolved_now(),
        }
    }
}

impl<K: Hash + Eq + Clone + Any, S> Groups<K, S> {
    /// The state of `key`'s group, made by `init` if the group is new.
    #[inline]
    pub(crate) fn entry(&mut self, key: K, init: impl FnOnce() -> S) -> &mut S {
        if let Some(i) = self.indexer.index(&key) {
            if i >= self.dense.len() && i < self.reach() {
                self.grow(i);
            }
            if i < self.dense.len() {
                let slot = &mut self.dense[i];
                if slot.is_none() {
                    self.dense_keys.push(key);
                }
                return slot.get_or_insert_with(init);
            }
        }
        let at = match self.map.get(&key) {
            Some(&at) => at,
            None => {
                let at = self.states.len();
                self.map.insert(key.clone(), at);
                self.states.push((key, init()));
                at
            }
        };
        &mut self.states[at].1
    }

    /// Number of groups.
    pub(crate) fn len(&self) -> usize {
        self.dense_keys.len() + self.states.len()
    }

    /// How far the table may reach now: one more group is about to be held.
    fn reach(&self) -> usize {
        DENSE_MIN.max(DENSE_PER_GROUP.saturating_mul(self.len() + 1))
    }

    /// Grows the table to cover index `i`, moving the groups of the keys it now covers into it.
    #[cold]
    fn grow(&mut self, i: usize) {
        let n = (i + 1).next_power_of_two();
        self.dense.resize_with(n, || None);
        if self
            .states
            .iter()
            .any(|(k, _)| self.indexer.index(k).is_some_and(|j| j < n))
        {
            let states = std::mem::take(&mut self.states);
            self.map.clear();
            for (k, s) in states {
                match self.indexer.index(&k) {
                    Some(j) if j < n => {
                        self.dense[j] = Some(s);
                        self.dense_keys.push(k);
                    }
                    _ => {
                        self.map.insert(k.clone(), self.states.len());
                        self.states.push((k, s));
                    }
                }
            }
        }
    }

    /// Every group's key, in no particular order.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &K> + '_ {
        self.dense_keys
            .iter()
            .chain(self.states.iter().map(|(k, _)| k))
    }

    /// The state of `key`'s group, if it has one.
    pub(crate) fn get(&self, key: &K) -> Option<&S> {
        if let Some(i) = self.indexer.index(key) {
            if let Some(Some(state)) = self.dense.get(i) {
                return Some(state);
            }
        }
        self.map.get(key).map(|&at| &self.states[at].1)
    }

    /// Every group's key and state, in the order they first appeared (as [`Groups::drain`]).
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&K, &S)> + '_ {
        let (dense, indexer) = (&self.dense, self.indexer);
        let table = self.dense_keys.iter().filter_map(move |k| {
            let state = indexer
                .index(k)
                .and_then(|i| dense.get(i))
                .and_then(Option::as_ref)?;
            Some((k, state))
        });
        table.chain(self.states.iter().map(|(k, s)| (k, s)))
    }

    /// Takes every group out, in the order they first appeared (the table's, then the
    /// others'); the map is left empty, with its room.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = (K, S)> + '_ {
        self.map.clear();
        let dense = &mut self.dense;
        let indexer = self.indexer;
        let table = self.dense_keys.drain(..).filter_map(move |k| {
            let state = indexer
                .index(&k)
                .and_then(|i| dense.get_mut(i))
                .and_then(Option::take)?;
            Some((k, state))
        });
        table.chain(self.states.drain(..))
    }
}

/// Saved as the table's length, the table's groups and the others, each in order of
/// appearance: restored, every group is where it was, so that groups still to come land and
/// are emitted as they would have been.
impl<K: serde::Serialize + Hash + Eq + Clone + Any, S: serde::Serialize> serde::Serialize
    for Groups<K, S>
{
    fn serialize<Ser: serde::Serializer>(&self, s: Ser) -> Result<Ser::Ok, Ser::Error> {
        let table: Vec<(&K, &S)> = self.iter().take(self.dense_keys.len()).collect();
        (self.dense.len(), table, &self.states).serialize(s)
    }
}

impl<'de, K, S> serde::Deserialize<'de> for Groups<K, S>
where
    K: serde::Deserialize<'de> + Hash + Eq + Clone + Any,
    S: serde::Deserialize<'de>,
{
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        type Saved<K, S> = (usize, Vec<(K, S)>, Vec<(K, S)>);
        let (len, table, states): Saved<K, S> = serde::Deserialize::deserialize(d)?;
        let mut groups = Groups::default();
        if len > DENSE_MIN.max(DENSE_PER_GROUP.saturating_mul(table.len() + states.len() + 1)) {
            return Err(D::Error::custom(
                "a group table longer than its groups allow",
            ));
        }
        groups.dense.resize_with(len, || None);
        for (k, s) in table {
            let slot = groups
                .indexer
                .index(&k)
                .and_then(|i| groups.dense.get_mut(i))
                .filter(|slot| slot.is_none())
                .ok_or_else(|| D::Error::custom("a group out of its table"))?;
            *slot = Some(s);
            groups.dense_keys.push(k);
        }
        for (k, s) in states {
            if groups.map.insert(k.clone(), groups.states.len()).is_some() {
                return Err(D::Error::custom("a group twice"));
            }
            groups.states.push((k, s));
        }
        Ok(groups)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Integer and string keys alike: one state per key, in the order keys first appeared
    /// (the table's first), and an emptied map starts over.
    #[test]
    fn one_state_per_key_in_order_of_appearance() {
        let mut counts: Groups<u32, u64> = Groups::default();
        for k in [7u32, 3, 7, 1_000_000, 3, 7] {
            *counts.entry(k, || 0) += 1;
        }
        assert_eq!(counts.len(), 3);
        let drained: Vec<(u32, u64)> = counts.drain().collect();
        assert_eq!(drained, vec![(7, 3), (3, 2), (1_000_000, 1)]);
        assert_eq!(counts.len(), 0);
        *counts.entry(3, || 10) += 1;
        assert_eq!(counts.drain().collect::<Vec<_>>(), vec![(3, 11)]);

        let mut names: Groups<String, u64> = Groups::default();
        for k in ["b", "a", "b"] {
            *names.entry(k.to_owned(), || 0) += 1;
        }
        let drained: Vec<(String, u64)> = names.drain().collect();
        assert_eq!(drained, vec![("b".to_owned(), 2), ("a".to_owned(), 1)]);
    }

    /// Keys beyond the table's reach go to the map; when many groups let the table reach
    /// them, they move into it, and every group keeps its state.
    #[test]
    fn a_group_is_found_by_its_key_in_the_table_or_the_map_and_visited_in_order() {
        let mut g: Groups<i64, i64> = Groups::default();
        for (k, v) in [(7, 1), (1_000_000, 2), (-3, 3), (7, 10)] {
            *g.entry(k, || 0) += v;
        }
        assert_eq!(g.get(&7), Some(&11)); // in the table
        assert_eq!(g.get(&1_000_000), Some(&2)); // beyond its reach: in the map
        assert_eq!(g.get(&-3), Some(&3)); // negative: in the map
        assert_eq!(g.get(&8), None);
        let seen: Vec<(i64, i64)> = g.iter().map(|(k, v)| (*k, *v)).collect();
        assert_eq!(seen, vec![(7, 11), (1_000_000, 2), (-3, 3)]);
    }

    #[test]
    fn the_table_grows_with_the_groups_and_takes_over_covered_keys() {
        let mut g: Groups<i64, i64> = Groups::default();
        *g.entry(10_000, || 0) += 5; // beyond the reach: in the map
        *g.entry(-1, || 0) += 1; // negative: always in the map
        for k in 0..2000i64 {
            *g.entry(k, || 0) += k;
        }
        *g.entry(10_000, || 0) += 1; // the reach now covers it
        assert_eq!(g.len(), 2002);
        assert!(g.dense.len() > 10_000, "the table took over 10,000");
        let all: std::collections::HashMap<i64, i64> = g.drain().collect();
        assert_eq!(all.len(), 2002);
        assert_eq!((all[&10_000], all[&-1], all[&1999]), (6, 1, 1999));
    }
}
