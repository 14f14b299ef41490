//! A payload's fingerprint: a hash of its serialized form, for the operators that look for an
//! equal payload among many (the start edge an end edge closes) when payloads are only
//! `PartialEq`.
//!
//! Equal payloads mostly serialize alike; those that do not (`0.0` and `-0.0`, a row's fields
//! in another order) get different fingerprints. So a look by fingerprint that finds nothing
//! falls back to a scan: the fingerprint makes the search fast, it never decides its outcome.

use std::hash::Hasher;

use serde::Serialize;

use super::fxhash::FxHasher;

/// Computes fingerprints into one buffer, reused.
#[derive(Debug, Default)]
pub(crate) struct Fingerprints {
    scratch: Vec<u8>,
}

impl Fingerprints {
    /// The fingerprint of `payload` (0 for one that cannot be serialized: all of those share
    /// one bucket, found by the scan).
    pub(crate) fn of<P: Serialize + ?Sized>(&mut self, payload: &P) -> u64 {
        self.scratch.clear();
        if bincode::serialize_into(&mut self.scratch, payload).is_err() {
            return 0;
        }
        let mut h = FxHasher::default();
        h.write(&self.scratch);
        h.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_payloads_that_serialize_alike_share_a_fingerprint() {
        let mut prints = Fingerprints::default();
        let a = prints.of(&(7u32, "seven".to_owned()));
        assert_eq!(a, prints.of(&(7u32, "seven".to_owned())));
        assert_ne!(a, prints.of(&(7u32, "eight".to_owned())));
        // (Rows serialize in this form too: `punctual-rows`' `rows_cross_in_the_compact_format`.)
        // Equal, yet serialized apart: the callers fall back to a scan.
        assert_ne!(prints.of(&0.0f64), prints.of(&-0.0f64));
    }
}
