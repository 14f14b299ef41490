//! Hints to the processor that change how fast code runs, never what it computes.
//!
//! The one hint here is a software prefetch: a streaming loop over records in memory that does
//! a few dozen instructions per record (the ingress reading a block of decoded records) keeps
//! too few cache misses in flight for the hardware prefetcher to hide the memory's latency; a
//! prefetch a few kilobytes ahead does.
//!
//! This module holds the workspace's only `unsafe` code (the workspace denies `unsafe_code`,
//! and this module alone allows it): the call of the `_mm_prefetch` intrinsic, which Rust
//! marks unsafe only because it is declared with `#[target_feature(enable = "sse")]`. It is
//! sound on every x86-64 processor (SSE is part of the x86-64 baseline), and a prefetch never
//! faults and never changes memory or program state, whatever the address; the address is
//! computed with wrapping pointer arithmetic (safe, never dereferenced). On other
//! architectures the hints do nothing.

/// How far ahead a streaming loop over `T`s prefetches, in elements: about 4 KiB (far enough
/// to cover the memory's latency, near enough to stay in the caches), and at least one
/// element.
pub const fn prefetch_distance<T>() -> usize {
    const BYTES: usize = 4096;
    let size = std::mem::size_of::<T>();
    if size == 0 || size >= BYTES {
        1
    } else {
        BYTES / size
    }
}

/// Hints that `slice[index]` will be read soon: starts loading its cache line into the
/// processor's caches. `index` may be out of bounds (past the end, as a loop near its end
/// prefetching ahead does): the hint then refers to whatever memory lies there, harmlessly,
/// and nothing is read. Does nothing on architectures other than x86-64, and for zero-sized
/// types.
///
/// ```
/// use punctual_core::hint::prefetch;
/// let records = vec![(1_i64, 2_i64); 10_000];
/// let mut sum = 0;
/// for (i, r) in records.iter().enumerate() {
///     prefetch(&records, i + 200);
///     sum += r.0 + r.1;
/// }
/// assert_eq!(sum, 30_000);
/// ```
#[inline(always)]
pub fn prefetch<T>(slice: &[T], index: usize) {
    prefetch_byte(
        slice.as_ptr().cast::<u8>(),
        index.wrapping_mul(std::mem::size_of::<T>()),
    );
}

/// Hints that `slice[from..from + count]` will be read soon: one [`prefetch`] per cache line
/// of those elements' bytes. A loop that reads `count` elements an iteration and calls this
/// each time for the elements a fixed distance ahead touches every cache line it will read.
/// The range may reach past the end, as for [`prefetch`].
#[inline(always)]
pub fn prefetch_run<T>(slice: &[T], from: usize, count: usize) {
    const LINE: usize = 64;
    let size = std::mem::size_of::<T>();
    let base = slice.as_ptr().cast::<u8>();
    let start = from.wrapping_mul(size);
    for offset in (0..count.saturating_mul(size)).step_by(LINE) {
        prefetch_byte(base, start.wrapping_add(offset));
    }
}

#[inline(always)]
#[allow(unsafe_code)]
fn prefetch_byte(base: *const u8, offset: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let address = base.wrapping_add(offset).cast::<i8>();
        // SAFETY: `_mm_prefetch` requires SSE, which every x86-64 processor has. A prefetch
        // does not dereference its address in the language's sense: it cannot fault, read
        // into the program or write anything, whatever the address.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(address) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (base, offset);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distance_is_about_four_kilobytes_and_never_zero() {
        assert_eq!(prefetch_distance::<(i64, i64, u32)>(), 170);
        assert_eq!(prefetch_distance::<u8>(), 4096);
        assert_eq!(prefetch_distance::<()>(), 1);
        assert_eq!(prefetch_distance::<[u8; 10_000]>(), 1);
    }

    #[test]
    fn prefetching_anywhere_changes_nothing() {
        let v: Vec<u64> = (0..100).collect();
        for i in [0, 99, 100, 1_000_000, usize::MAX / 8, usize::MAX] {
            prefetch(&v, i);
            prefetch_run(&v, i, 4);
        }
        let empty: [u32; 0] = [];
        prefetch(&empty, 3);
        prefetch_run(&[(); 4], 0, 4);
        assert_eq!(v.iter().sum::<u64>(), 4950);
    }
}
