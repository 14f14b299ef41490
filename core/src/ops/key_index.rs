//! A map from join keys to `usize` values (the first entry of each key's list) that looks up
//! small non-negative integer keys by direct indexing, and every other key by hash.
//!
//! Join keys are very often small integers (sensor, device, account ids). For those, a table
//! indexed by the key itself answers with one load, where a hash map hashes, matches a group of
//! control bytes, scans its bits and compares the key. It is the "perfect hash" join of
//! analytical databases, chosen per key at
//! run time: an integer key goes to the table when its value is below the table's reach, which
//! grows with the number of keys (at most [`DENSE_PER_KEY`] slots per key held, or
//! [`DENSE_MIN`]); larger or negative integers, and keys of other types, go to the hash map.
//! So memory stays proportional to the keys held whatever their values.
//!
//! The key's type is looked at through `Any`, which the compiler resolves per key type: a key
//! type that is not an integer costs one predictable branch. A key type that wraps integers
//! (a dynamic row's value) indexes too once registered ([`index_keys`]): the table looks its
//! function up when its first key comes, and calls it for each key.

use std::any::{Any, TypeId};
use std::hash::Hash;
use std::sync::{PoisonError, RwLock};

use super::fxhash::FxHashMap;

/// The value of an empty slot, and what a lookup of an absent key returns.
pub(crate) const ABSENT: usize = usize::MAX;

/// The table may always reach this far (8 bytes a slot: 32 KiB).
const DENSE_MIN: usize = 4096;

/// Beyond [`DENSE_MIN`], the table may reach this many slots per key held.
const DENSE_PER_KEY: usize = 8;

/// The key types besides the integers whose keys index tables, each with its function (a
/// `fn(&K) -> Option<usize>`, as `Any`).
static KEY_TYPES: RwLock<Vec<(TypeId, &'static (dyn Any + Send + Sync))>> = RwLock::new(Vec::new());

/// Lets keys of type `K` index the operators' tables directly, as small non-negative integers
/// do (a window's groups, a join's keys): `index` gives a key's slot, or `None` for a key
/// that is looked up by hash. Keys equal as `==` says must get the same slot, unequal keys
/// different ones (`None` is always right). For a key type that wraps an integer, such as a
/// dynamic row's value (`punctual-rows` registers its `Value` itself).
///
/// A table looks its key type's function up once: a join's when its first key comes, a
/// window's group maps as the window makes them; one that looked before the call keeps
/// hashing those keys (the same results, a little slower). Registering a type again changes
/// nothing.
///
/// ```
/// use punctual_core::ops::index_keys;
///
/// /// A device id, as a newtype.
/// #[derive(Clone, PartialEq, Eq, Hash)]
/// struct Device(u32);
///
/// index_keys::<Device>(|d| usize::try_from(d.0).ok());
/// ```
pub fn index_keys<K: Any>(index: fn(&K) -> Option<usize>) {
    let mut types = KEY_TYPES.write().unwrap_or_else(PoisonError::into_inner);
    if types.iter().any(|(t, _)| *t == TypeId::of::<K>()) {
        return;
    }
    types.push((TypeId::of::<K>(), Box::leak(Box::new(index))));
}

/// How one table's keys of type `K` become indexes: integers by their value; a type
/// [`index_keys`] registered by its function, once the table resolved it; any other never.
pub(crate) struct Indexer<K> {
    registered: Option<fn(&K) -> Option<usize>>,
    resolved: bool,
}

impl<K> Clone for Indexer<K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K> Copy for Indexer<K> {}

impl<K> std::fmt::Debug for Indexer<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Indexer")
            .field("registered", &self.registered.is_some())
            .field("resolved", &self.resolved)
            .finish()
    }
}

impl<K: Any> Indexer<K> {
    /// Not resolved yet: only integers index.
    pub(crate) const fn new() -> Self {
        Indexer {
            registered: None,
            resolved: false,
        }
    }

    /// Resolved at once: for a table made when its keys are about to come.
    pub(crate) fn resolved_now() -> Self {
        let mut indexer = Indexer::new();
        indexer.resolve();
        indexer
    }

    /// Whether the key type's function was looked for (done once, when the table was empty).
    #[inline(always)]
    pub(crate) fn resolved(&self) -> bool {
        self.resolved
    }

    /// Looks for `K`'s registered function (call while the table holds no key).
    #[cold]
    pub(crate) fn resolve(&mut self) {
        self.resolved = true;
        let types = KEY_TYPES.read().unwrap_or_else(PoisonError::into_inner);
        self.registered = types
            .iter()
            .find(|(t, _)| *t == TypeId::of::<K>())
            .and_then(|(_, f)| f.downcast_ref::<fn(&K) -> Option<usize>>())
            .copied();
    }

    /// The key as a table index: a non-negative integer that fits in a `usize`, or a key of a
    /// registered type that its function indexes.
    #[inline(always)]
    pub(crate) fn index(&self, key: &K) -> Option<usize> {
        let any = key as &dyn Any;
        macro_rules! unsigned {
            ($($t:ty),*) => {$(
                if let Some(&k) = any.downcast_ref::<$t>() {
                    return usize::try_from(k).ok();
                }
            )*};
        }
        unsigned!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize);
        match self.registered {
            Some(f) => f(key),
            None => None,
        }
    }
}

/// Keys to values other than [`ABSENT`].
#[derive(Debug, Clone)]
pub(crate) struct KeyIndex<K> {
    /// The values of the integer keys below its length ([`ABSENT`] where there is none). Its
    /// length is zero or a power of two.
    dense: Vec<usize>,
    /// Keys in `dense`.
    dense_len: usize,
    /// Every other key.
    map: FxHashMap<K, usize>,
    /// Which keys go to `dense`.
    indexer: Indexer<K>,
}

impl<K: Hash + Eq + Clone + Any> KeyIndex<K> {
    /// An empty index.
    pub(crate) fn new() -> Self {
        KeyIndex {
            dense: Vec::new(),
            dense_len: 0,
            map: FxHashMap::default(),
            indexer: Indexer::new(),
        }
    }

    /// Number of keys.
    pub(crate) fn len(&self) -> usize {
        self.dense_len + self.map.len()
    }

    /// The key's value, or [`ABSENT`].
    #[inline]
    pub(crate) fn get(&self, key: &K) -> usize {
        if let Some(i) = self.indexer.index(key) {
            if let Some(&v) = self.dense.get(i) {
                return v;
            }
        }
        self.map.get(key).copied().unwrap_or(ABSENT)
    }

    /// Sets the key's value (`value` must not be [`ABSENT`]); returns the one it replaced.
    pub(crate) fn insert(&mut self, key: K, value: usize) -> Option<usize> {
        debug_assert_ne!(value, ABSENT, "ABSENT marks an empty slot");
        if !self.indexer.resolved() && self.len() == 0 {
            self.indexer.resolve();
        }
        if let Some(i) = self.indexer.index(&key) {
            if i >= self.dense.len() && i < self.reach() {
                self.grow(i);
            }
            if let Some(slot) = self.dense.get_mut(i) {
                let old = std::mem::replace(slot, value);
                if old == ABSENT {
                    self.dense_len += 1;
                    return None;
                }
                return Some(old);
            }
        }
        self.map.insert(key, value)
    }

    /// Sets the value of a key the index holds (`value` must not be [`ABSENT`]), without
    /// taking a copy of the key; returns false, changing nothing, if it does not hold it.
    pub(crate) fn set(&mut self, key: &K, value: usize) -> bool {
        debug_assert_ne!(value, ABSENT, "ABSENT marks an empty slot");
        if let Some(i) = self.indexer.index(key) {
            if let Some(slot) = self.dense.get_mut(i) {
                if *slot == ABSENT {
                    return false;
                }
                *slot = value;
                return true;
            }
        }
        match self.map.get_mut(key) {
            Some(v) => {
                *v = value;
                true
            }
            None => false,
        }
    }

    /// Removes the key; returns its value.
    pub(crate) fn remove(&mut self, key: &K) -> Option<usize> {
        if let Some(i) = self.indexer.index(key) {
            if let Some(slot) = self.dense.get_mut(i) {
                let old = std::mem::replace(slot, ABSENT);
                if old == ABSENT {
                    return None;
                }
                self.dense_len -= 1;
                return Some(old);
            }
        }
        self.map.remove(key)
    }

    /// How far the table may reach now: one more key is about to be held.
    fn reach(&self) -> usize {
        DENSE_MIN.max(DENSE_PER_KEY.saturating_mul(self.len() + 1))
    }

    /// Grows the table to cover index `i`, moving the hash map's keys it now covers into it.
    fn grow(&mut self, i: usize) {
        // (`i` is below the reach: the table stays within twice the reach.)
        let n = (i + 1).next_power_of_two();
        self.dense.resize(n, ABSENT);
        let covered: Vec<K> = self
            .map
            .keys()
            .filter(|k| self.indexer.index(*k).is_some_and(|j| j < n))
            .cloned()
            .collect();
        for k in covered {
            if let (Some(j), Some(v)) = (self.indexer.index(&k), self.map.remove(&k)) {
                self.dense[j] = v;
                self.dense_len += 1;
            }
        }
    }
}

/// Saved as its table, its other keys and whether its key type had a function registered
/// ([`index_keys`]) when it was resolved; read back, it is resolved again, and refused if the
/// registration differs (its keys would be looked for in the wrong place).
impl<K: serde::Serialize + Hash + Eq + Clone + Any> serde::Serialize for KeyIndex<K> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let map: Vec<(&K, &usize)> = self.map.iter().collect();
        let indexer = (self.indexer.resolved, self.indexer.registered.is_some());
        (&self.dense, self.dense_len, map, indexer).serialize(s)
    }
}

impl<'de, K: serde::Deserialize<'de> + Hash + Eq + Clone + Any> serde::Deserialize<'de>
    for KeyIndex<K>
{
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        type Saved<K> = (Vec<usize>, usize, Vec<(K, usize)>, (bool, bool));
        let (dense, dense_len, map, (resolved, registered)): Saved<K> =
            serde::Deserialize::deserialize(d)?;
        let mut index = KeyIndex::new();
        if resolved {
            index.indexer.resolve();
        }
        if index.indexer.registered.is_some() != registered {
            return Err(D::Error::custom(
                "the key type's table function (index_keys) was registered in one run and not the other",
            ));
        }
        if dense.iter().filter(|&&v| v != ABSENT).count() != dense_len {
            return Err(D::Error::custom("a key table and its count disagree"));
        }
        index.dense = dense;
        index.dense_len = dense_len;
        index.map = map.into_iter().collect();
        Ok(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    #[derive(Clone, Debug)]
    enum Op {
        Insert(i64, usize),
        Set(i64, usize),
        Remove(i64),
    }

    /// Keys mostly small, some large and some negative.
    fn key() -> impl Strategy<Value = i64> {
        prop_oneof![
            6 => 0i64..3000,
            1 => 0i64..100_000_000,
            1 => -1000i64..0,
        ]
    }

    fn ops() -> impl Strategy<Value = Vec<Op>> {
        proptest::collection::vec(
            prop_oneof![
                3 => (key(), 0usize..1_000_000).prop_map(|(k, v)| Op::Insert(k, v)),
                1 => (key(), 0usize..1_000_000).prop_map(|(k, v)| Op::Set(k, v)),
                1 => key().prop_map(Op::Remove),
            ],
            0..500,
        )
    }

    /// Runs `ops` on an index and on a `HashMap`, checking every answer, then every key used.
    fn same_as_a_map<K: Hash + Eq + Clone + Any + std::fmt::Debug>(
        ops: &[Op],
        key: impl Fn(i64) -> K,
    ) {
        let mut index = KeyIndex::new();
        let mut model = HashMap::new();
        for op in ops {
            match *op {
                Op::Insert(k, v) => {
                    assert_eq!(index.insert(key(k), v), model.insert(k, v), "insert {k}");
                }
                Op::Set(k, v) => {
                    let held = model.get_mut(&k).map(|m| *m = v).is_some();
                    assert_eq!(index.set(&key(k), v), held, "set {k}");
                }
                Op::Remove(k) => assert_eq!(index.remove(&key(k)), model.remove(&k), "remove {k}"),
            }
            assert_eq!(index.len(), model.len());
        }
        for op in ops {
            let (Op::Insert(k, _) | Op::Set(k, _) | Op::Remove(k)) = *op;
            let expected = model.get(&k).copied().unwrap_or(ABSENT);
            assert_eq!(index.get(&key(k)), expected, "get {k}");
        }
    }

    proptest! {
        #[test]
        fn behaves_as_a_map_with_signed_keys(ops in ops()) {
            same_as_a_map(&ops, |k| k);
        }

        #[test]
        fn behaves_as_a_map_with_unsigned_keys(ops in ops()) {
            same_as_a_map(&ops, |k| (k + 1000) as u32);
        }

        #[test]
        fn behaves_as_a_map_with_string_keys(ops in ops()) {
            same_as_a_map(&ops, |k| format!("key-{k}"));
        }

        #[test]
        fn behaves_as_a_map_with_registered_keys(ops in ops()) {
            index_keys::<Wrapped>(Wrapped::index);
            same_as_a_map(&ops, Wrapped::Int);
        }
    }

    /// A key type that wraps integers (or text), registered to index by its integers.
    #[derive(Clone, Debug, PartialEq, Eq, Hash)]
    enum Wrapped {
        Int(i64),
        Text(String),
    }

    impl Wrapped {
        fn index(&self) -> Option<usize> {
            match self {
                Wrapped::Int(k) => usize::try_from(*k).ok(),
                Wrapped::Text(_) => None,
            }
        }
    }

    #[test]
    fn a_registered_key_type_is_indexed_directly() {
        index_keys::<Wrapped>(Wrapped::index);
        // Registering again changes nothing.
        index_keys::<Wrapped>(|_| None);
        let mut index = KeyIndex::new();
        for k in 0..100 {
            index.insert(Wrapped::Int(k), 1);
        }
        index.insert(Wrapped::Text("a".to_owned()), 2);
        assert_eq!(index.map.len(), 1, "only the text is hashed");
        assert_eq!(index.dense_len, 100);
        assert_eq!(index.get(&Wrapped::Int(7)), 1);
        assert_eq!(index.get(&Wrapped::Text("a".to_owned())), 2);
    }

    #[test]
    fn a_key_type_not_registered_is_hashed() {
        #[derive(Clone, PartialEq, Eq, Hash)]
        struct Plain(u32);
        let mut index = KeyIndex::new();
        index.insert(Plain(3), 1);
        assert_eq!((index.map.len(), index.dense_len), (1, 0));
    }

    #[test]
    fn small_integer_keys_are_indexed_directly() {
        let mut index = KeyIndex::new();
        for k in 0..1000u32 {
            assert_eq!(index.insert(k, k as usize * 2), None);
        }
        assert!(
            index.map.is_empty(),
            "every key below the reach is in the table"
        );
        assert_eq!(index.dense.len(), 1024);
        assert_eq!(index.get(&999), 1998);
        assert_eq!(index.get(&1000), ABSENT);
        assert_eq!(index.insert(5, 1), Some(10));
        assert_eq!(index.remove(&5), Some(1));
        assert_eq!(index.get(&5), ABSENT);
        assert_eq!(index.len(), 999);
    }

    #[test]
    fn the_table_stays_proportional_to_the_keys_held() {
        let mut index = KeyIndex::new();
        // A few keys spread far apart: the table does not reach for them.
        for k in [3u64, 1 << 20, 1 << 40, u64::MAX] {
            index.insert(k, 1);
        }
        assert!(index.dense.len() <= DENSE_MIN, "{}", index.dense.len());
        assert_eq!(index.map.len(), 3);
        // Many keys: the reach grows, and keys it now covers move into the table.
        for k in 0..100_000u64 {
            index.insert(k, 2);
        }
        assert!(index.dense.len() <= DENSE_PER_KEY * index.len() * 2);
        assert_eq!(index.get(&3), 2);
        assert_eq!(index.get(&99_999), 2);
        assert_eq!(index.get(&(1 << 20)), 1);
        assert_eq!(index.get(&(1 << 40)), 1);
        assert_eq!(index.len(), 100_003); // 3 was in both
    }
}
