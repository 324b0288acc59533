//! The input loop of the histogram kernels added for weights, edges, channels, 2-D pairs and
//! segments: every thread reads 16-byte groups in a strided loop, two groups per step, and issues
//! the next step's loads before it counts this step's values, so that a thread keeps up to four
//! groups (64 bytes of each input stream) in flight while it counts. Kernels whose count of a
//! group holds too many registers for four (the weighted kernels' `f32` partials of two- and
//! four-byte values, at 64 registers a thread) take one group a step and keep two in flight
//! (`for_each_group_single`).
//!
//! Why: the H200 moves 4.25 TB/s (read + write) against the H100's 3.0; by Little's law a GPU of
//! 132 SMs with about 1 µs of loaded memory latency needs some 30 KiB of loads in flight per SM to
//! stream at that rate. The first loop (`for_each_bin` in [`super`]) issues its two loads only
//! after counting the previous step's values, so while a thread counts 32 `u8` values none of its
//! loads are in flight; at 1,024 resident threads per SM (the register-limited `u8` kernel) that
//! leaves the SM with 32 KiB at the top of a step and nothing at its end.
//!
//! Also here, pure and tested on the CPU: how a range of values splits into whole 16-byte groups
//! and the values before and after them ([`piece_split`]), which the segmented kernel needs where a
//! segment starts or ends inside a group.

use core::ops::Range;

/// The values `start..end` of an input of groups of `per_group` values (`per_group >= 1`), as
/// `(head, groups, tail)`: the values before the first whole group, the whole groups (as group
/// indices) and the values after the last whole group. Together with the groups' values they are
/// exactly `start..end` (empty when `end <= start`). Head and tail hold fewer than `per_group`
/// values each, but for a range without a whole group, which is all head: fewer than
/// `2 * per_group - 1` values. So head and tail together are at most `2 * per_group - 2` values,
/// which one warp counts in one step for groups of up to 16 values.
///
/// ```
/// use kernels::histogram::pipelined::piece_split;
/// assert_eq!(piece_split(3, 37, 16), (3..16, 1..2, 32..37));
/// assert_eq!(piece_split(17, 20, 16), (17..20, 2..2, 20..20));
/// assert_eq!(piece_split(32, 64, 16), (32..32, 2..4, 64..64));
/// ```
pub const fn piece_split(start: u64, end: u64, per_group: u64) -> (Range<u64>, Range<u64>, Range<u64>) {
    if end <= start {
        return (start..start, 0..0, start..start);
    }
    let first_group = start.div_ceil(per_group);
    let end_group = end / per_group;
    if first_group >= end_group {
        // No whole group: the head holds every value.
        return (start..end, first_group..first_group, end..end);
    }
    (start..first_group * per_group, first_group..end_group, end_group * per_group..end)
}

#[cfg(target_arch = "nvptx64")]
pub(crate) mod device_code {
    use crate::device::{mem, thread, warp};

    /// The index types [`for_each_group`] counts in: `u64`, or `u32` where every index the loop
    /// reaches stays below 2^32, which keeps its loop-carried and loop-invariant indices in half
    /// the registers (the segmented kernels').
    pub(crate) trait GroupIndex:
        Copy
        + PartialOrd
        + core::ops::Add<Output = Self>
        + core::ops::Sub<Output = Self>
        + core::ops::Mul<Output = Self>
    {
        /// `x` in this type.
        fn of(x: u32) -> Self;
    }

    impl GroupIndex for u64 {
        #[inline(always)]
        fn of(x: u32) -> Self {
            x as u64
        }
    }

    impl GroupIndex for u32 {
        #[inline(always)]
        fn of(x: u32) -> Self {
            x
        }
    }

    /// Calls `f(group, index, true)` for every group index this thread owns in `first..end`:
    /// `first + start + k * stride` for `k = 0, 1, ...`, two per step, with the next step's two
    /// loads issued before this step's two groups are counted. Lanes past the end of the warp's
    /// last steps get `f(empty, index, false)`, so every lane of a warp makes the same calls: warp
    /// instructions inside `f` see a converged warp.
    ///
    /// # Safety
    /// The lanes of each warp hold consecutive `start`s (`start = base + lane`, `base` a multiple of
    /// 32) and `stride` is a multiple of 32; `load(i)` is sound for every `i` in `first..end`; in
    /// `I`, `end + 2 * stride + 32` does not overflow.
    #[inline(always)]
    pub(crate) unsafe fn for_each_group<I: GroupIndex, G: Copy>(
        first: I,
        end: I,
        start: I,
        stride: I,
        empty: G,
        load: impl Fn(I) -> G,
        f: impl FnMut(G, I, bool),
    ) {
        // SAFETY: forwarded contract.
        unsafe { for_each_group_in_steps::<I, G, true>(first, end, start, stride, empty, load, f) }
    }

    /// [`for_each_group`] one group a step: the next group's load is issued before this one is
    /// counted, so a thread keeps up to two groups in flight where [`for_each_group`] keeps four.
    /// For kernels whose groups are wide (two 16-byte streams) and whose count of a group holds
    /// many registers: four such groups in flight spill at 64 registers a thread, and two still
    /// put twice the ~30 KiB per SM the module's Little's-law figure asks for in flight at 1,024
    /// threads (64 bytes a thread).
    ///
    /// # Safety
    /// As [`for_each_group`]'s.
    #[inline(always)]
    pub(crate) unsafe fn for_each_group_single<I: GroupIndex, G: Copy>(
        first: I,
        end: I,
        start: I,
        stride: I,
        empty: G,
        load: impl Fn(I) -> G,
        f: impl FnMut(G, I, bool),
    ) {
        // SAFETY: forwarded contract.
        unsafe { for_each_group_in_steps::<I, G, false>(first, end, start, stride, empty, load, f) }
    }

    /// The loop of [`for_each_group`] (`PAIRS`: two groups a step) and of
    /// [`for_each_group_single`] (one).
    ///
    /// # Safety
    /// As [`for_each_group`]'s.
    #[inline(always)]
    unsafe fn for_each_group_in_steps<I: GroupIndex, G: Copy, const PAIRS: bool>(
        first: I,
        end: I,
        start: I,
        stride: I,
        empty: G,
        load: impl Fn(I) -> G,
        mut f: impl FnMut(G, I, bool),
    ) {
        let lane = I::of(warp::lane_id());
        let to_last_lane = I::of(warp::WARP_SIZE) - I::of(1) - lane;
        // Whether the warp's last lane, hence every lane, has every group of the step at `i`.
        let whole = #[inline(always)]
        |i: I| if PAIRS { i + to_last_lane + stride < end } else { i + to_last_lane < end };
        let mut i = first + start;
        if whole(i) {
            let (mut a, mut b) = (load(i), if PAIRS { load(i + stride) } else { empty });
            loop {
                let next = if PAIRS { i + I::of(2) * stride } else { i + stride };
                let more = whole(next);
                // Warp-uniform: the next step's loads go out before this step is counted.
                let (na, nb) =
                    if more { (load(next), if PAIRS { load(next + stride) } else { empty }) } else { (empty, empty) };
                f(a, i, true);
                if PAIRS {
                    f(b, i + stride, true);
                }
                i = next;
                if !more {
                    break;
                }
                (a, b) = (na, nb);
            }
        }
        // At most as many more steps as a step has groups, in which some lanes of the warp may
        // have no group.
        while i - lane < end {
            if i < end {
                f(load(i), i, true);
            } else {
                f(empty, i, false);
            }
            i = i + stride;
        }
    }

    /// [`for_each_group`] over the whole 16-byte vectors `0..vectors` of `input` (loaded with
    /// `ld.global.nc.v4.u32`), the grid's threads striding over them: `f(words, vector, present)`.
    ///
    /// # Safety
    /// `input` is 16-byte aligned and holds `vectors` vectors; the grid is one-dimensional and its
    /// blocks are a multiple of 32 threads.
    #[inline(always)]
    pub(crate) unsafe fn for_each_vector(input: *const u8, vectors: u64, f: impl FnMut([u32; 4], u64, bool)) {
        // SAFETY: the grid's lanes hold consecutive indices and its size is a multiple of 32;
        // every vector index below `vectors` lies inside the 16-byte aligned input.
        unsafe { for_each_vector_in(input, 0..vectors, thread::index_1d(), thread::grid_size_1d(), f) }
    }

    /// [`for_each_group`] over the whole 16-byte vectors `vectors` of `input` (loaded with
    /// `ld.global.nc.v4.u32`), this thread's being `vectors.start + start + k * stride`:
    /// `f(words, vector, present)`.
    ///
    /// # Safety
    /// As [`for_each_group`]'s (consecutive `start`s across each warp, `stride` a multiple of 32);
    /// `input` is 16-byte aligned and holds every vector of the range.
    #[inline(always)]
    pub(crate) unsafe fn for_each_vector_in(
        input: *const u8,
        vectors: core::ops::Range<u64>,
        start: u64,
        stride: u64,
        f: impl FnMut([u32; 4], u64, bool),
    ) {
        // SAFETY: forwarded contract; every index of the range lies inside the input.
        unsafe {
            for_each_group(
                vectors.start,
                vectors.end,
                start,
                stride,
                [0u32; 4],
                #[inline(always)]
                |i| mem::load_global_nc_v4_u32(input.add(16 * i as usize)),
                f,
            )
        }
    }

    /// [`for_each_vector_in`] in 32-bit indices: the vectors `vectors` of `input`, this thread's
    /// being `vectors.start + start + k * stride`: `f(words, vector, present)`. Its loop keeps
    /// half the index registers of the 64-bit loop, which the segmented kernels, whose walk over
    /// the pieces keeps more state live around it, need to stay at 32 registers a thread.
    ///
    /// # Safety
    /// As [`for_each_group`]'s (consecutive `start`s across each warp, `stride` a multiple of 32,
    /// `vectors.end + 2 * stride + 32 < 2^32`); `input` is 16-byte aligned and holds every vector
    /// of the range.
    #[inline(always)]
    pub(crate) unsafe fn for_each_vector_in32(
        input: *const u8,
        vectors: core::ops::Range<u32>,
        start: u32,
        stride: u32,
        f: impl FnMut([u32; 4], u32, bool),
    ) {
        // SAFETY: forwarded contract; every index of the range lies inside the input.
        unsafe {
            for_each_group(
                vectors.start,
                vectors.end,
                start,
                stride,
                [0u32; 4],
                #[inline(always)]
                |i: u32| mem::load_global_nc_v4_u32(input.add(16 * i as usize)),
                f,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_piece_splits_into_head_whole_groups_and_tail_covering_it_once() {
        for per in [1u64, 2, 4, 8, 16] {
            for start in 0..70u64 {
                for end in 0..70u64 {
                    let (head, groups, tail) = piece_split(start, end, per);
                    let mut covered: [u32; 70] = [0; 70];
                    for v in head.clone().chain(groups.clone().flat_map(|g| g * per..(g + 1) * per)).chain(tail.clone())
                    {
                        covered[v as usize] += 1;
                    }
                    for (v, &c) in covered.iter().enumerate() {
                        let inside = (v as u64) >= start && (v as u64) < end;
                        assert_eq!(c, inside as u32, "per {per}, {start}..{end}, value {v}");
                    }
                    assert!(head.end - head.start < per.max(2) || groups.is_empty(), "{head:?}");
                    assert!(tail.end - tail.start < per, "{tail:?}");
                    if !groups.is_empty() {
                        assert!(head.end - head.start < per);
                    }
                }
            }
        }
    }

    #[test]
    fn a_piece_without_a_whole_group_is_all_head() {
        assert_eq!(piece_split(5, 9, 16), (5..9, 1..1, 9..9));
        assert_eq!(piece_split(9, 5, 16), (9..9, 0..0, 9..9));
        assert_eq!(piece_split(0, 16, 16), (0..0, 0..1, 16..16));
    }
}
