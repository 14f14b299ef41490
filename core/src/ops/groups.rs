//! [`Groups`]: aggregate states by group key, for the windows. Small non-negative integer keys
//! (sensor, device, account ids: the common case) find their state by indexing a table with the
//! key ([`KeyIndex`]); other keys by hash. States are kept in the order their groups first
//! appeared, which is the order a window emits them in.

use std::any::Any;
use std::hash::Hash;

use super::key_index::{KeyIndex, ABSENT};

/// Aggregate states by group key; see the module doc.
#[derive(Debug)]
pub(crate) struct Groups<K, S> {
    index: KeyIndex<K>,
    states: Vec<(K, S)>,
}

impl<K: Hash + Eq + Clone + Any, S> Default for Groups<K, S> {
    fn default() -> Self {
        Groups {
            index: KeyIndex::new(),
            states: Vec::new(),
        }
    }
}

impl<K: Hash + Eq + Clone + Any, S> Groups<K, S> {
    /// The state of `key`'s group, made by `init` if the group is new.
    #[inline]
    pub(crate) fn entry(&mut self, key: K, init: impl FnOnce() -> S) -> &mut S {
        let at = self.index.get(&key);
        let at = if at == ABSENT {
            let at = self.states.len();
            self.index.insert(key.clone(), at);
            self.states.push((key, init()));
            at
        } else {
            at
        };
        &mut self.states[at].1
    }

    /// Number of groups.
    pub(crate) fn len(&self) -> usize {
        self.states.len()
    }

    /// Takes every group out, in the order they first appeared; the map is left empty, with
    /// its room.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = (K, S)> + '_ {
        for (key, _) in &self.states {
            self.index.remove(key);
        }
        self.states.drain(..)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Integer and string keys alike: one state per key, in the order keys first appeared,
    /// and an emptied map starts over.
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
}
