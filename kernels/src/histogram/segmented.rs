//! Segmented histograms, one per segment of the input in one launch (what per-row feature
//! statistics and per-image histograms need; none of CUB, torch or cupy has it in one call):
//! `histogram_segmented_{u8,u16,i32,f32}`. Segment `s` is values `off(s)..off(s + 1)`, with
//! `off(s) = min(s * segment_len, n)` for equal lengths, or `min(offsets[s], n)` from an array of
//! `segments + 1` offsets (CSR style: empty segments allowed); each gets `nbins` bins, binned like
//! the one-segment kernels ([`super::Element::bin`]).
//!
//! Every block takes an equal share of the values, not of the segments ([`block_share`]: whole
//! 16-byte vectors), so long and short segments cost the same per value and no block waits on
//! another. A block walks the segments its share meets ([`for_each_piece`];
//! [`segment_containing`] finds the first): for each piece (a segment's values inside the share)
//! it counts into `copies` private copies of the counters in shared memory, then adds them into
//! that segment's global counters and zeroes them for the next piece, two barriers a piece. A piece is read as whole vectors by every
//! thread of the block plus the values before and after them ([`super::pipelined::piece_split`])
//! by the block's first warp.
//!
//! The two-set kernels ([`DOUBLE_KERNELS`]) keep two sets of counters per block and alternates between them piece
//! by piece: the barrier after a piece's adds is the only one, because the next piece adds into
//! the other set while this one is read and zeroed, and the piece after that (the first to add
//! into this set again) starts only past the next piece's barrier, which every thread reaches
//! after its share of this flush. One barrier a piece instead of two, for twice the shared memory.
//!
//! The warp-private kernels ([`WARP_KERNELS`]) meet no block barrier at all: every warp of the
//! grid takes an equal share of the vectors ([`warp_share`]) and keeps `copies` private copies of
//! the counters of its own in the block's shared memory (a block of `W` warps holds `W * copies *
//! nbins` counters, [`warp_shared_bytes`]). A warp walks the pieces of its share as a block does,
//! its 32 lanes striding over a piece's vectors through the pipelined loop and counting its head
//! and tail values one per lane; then `bar.warp.sync` (which orders the lanes' shared atomics
//! before their reads), a flush of the nonzero counters into the segment's global counters by the
//! lanes (each lane zeroes the words it read) and a second `bar.warp.sync` before the next piece
//! adds again. A warp that waits on its loads or atomics holds up no other warp, where a block
//! barrier per piece drains the whole block's loads.
//!
//! Offsets are read from global memory and trusted for nothing: each is clamped into `0..=n` and a
//! segment whose end lies before its start is empty, so no offsets can make the kernel read or
//! write out of bounds (offsets that are not sorted give meaningless counts, which the host's
//! checks prevent).
//!
//! # Parameters
//! `input`: `n` values (16-byte aligned); `counts`: `segments * nbins` `u32`, segment `s`'s bin
//! `b` at `s * nbins + b`, added into; `nbins, lo, hi, scale` as [`super::Binning`]; `segments`;
//! `segment_len` (equal lengths) or 0 and `offsets` (`segments + 1` `u64`, 8-byte aligned);
//! `copies`: a power of two up to 32.
//!
//! # Launch
//! Any one-dimensional grid of blocks whose size is a multiple of 32; dynamic shared memory
//! [`shared_bytes`]`(nbins, copies)`, twice that for the two-set kernels ([`DOUBLE_KERNELS`]),
//! [`warp_shared_bytes`]`(nbins, copies, threads)` for the warp-private kernels
//! ([`WARP_KERNELS`], whose `copies` are per warp).
//!
//! # Safety
//! As above, nothing else writes `counts` during the launch, and `n <= u32::MAX`.

/// The PTX symbols, in [`super::InputType::ALL`] order.
pub const KERNELS: [&str; 4] =
    ["histogram_segmented_u8", "histogram_segmented_u16", "histogram_segmented_i32", "histogram_segmented_f32"];

/// The PTX symbols of the kernels with two sets of counters (`double_buffer`), in
/// [`super::InputType::ALL`] order.
pub const DOUBLE_KERNELS: [&str; 4] = [
    "histogram_segmented_double_u8",
    "histogram_segmented_double_u16",
    "histogram_segmented_double_i32",
    "histogram_segmented_double_f32",
];

/// The PTX symbols of the warp-private kernels (no block barriers; counters per warp), in
/// [`super::InputType::ALL`] order.
pub const WARP_KERNELS: [&str; 4] = [
    "histogram_segmented_warp_u8",
    "histogram_segmented_warp_u16",
    "histogram_segmented_warp_i32",
    "histogram_segmented_warp_f32",
];

/// Dynamic shared memory of a block: `copies` copies of `nbins` counters.
pub const fn shared_bytes(nbins: u32, copies: u32) -> u64 {
    4 * nbins as u64 * copies as u64
}

/// Dynamic shared memory of a block of `threads` threads (a multiple of 32) of the warp-private
/// kernels: `copies` copies of `nbins` counters for each of its warps.
///
/// ```
/// use kernels::histogram::segmented::warp_shared_bytes;
/// // Eight warps, one copy of 256 counters each: 8 KiB.
/// assert_eq!(warp_shared_bytes(256, 1, 256), 8 << 10);
/// assert_eq!(warp_shared_bytes(256, 2, 1024), 64 << 10);
/// ```
pub const fn warp_shared_bytes(nbins: u32, copies: u32, threads: u32) -> u64 {
    (threads / 32) as u64 * shared_bytes(nbins, copies)
}

/// The values block `block` of `blocks` counts: an equal share of the `ceil(n / per_vector)`
/// vectors, as values `start..end` (whole vectors but at `n`).
///
/// ```
/// use kernels::histogram::segmented::block_share;
/// assert_eq!(block_share(0, 4, 100, 4), 0..24);
/// assert_eq!(block_share(3, 4, 100, 4), 72..100);
/// ```
pub const fn block_share(block: u32, blocks: u32, n: u64, per_vector: u64) -> core::ops::Range<u64> {
    share_start(block as u64, blocks as u64, n, per_vector)..share_start(block as u64 + 1, blocks as u64, n, per_vector)
}

/// The values warp `warp` of the grid's `warps` counts in the warp-private kernels: [`block_share`]
/// with warps for blocks (counted in 64 bits: a grid may hold more than 2^32 warps).
///
/// ```
/// use kernels::histogram::segmented::warp_share;
/// assert_eq!(warp_share(0, 3, 100, 16), 0..32);
/// assert_eq!(warp_share(2, 3, 100, 16), 64..100);
/// // More warps than vectors: some shares are empty.
/// assert_eq!(warp_share(1, 8, 20, 16), 0..0);
/// ```
pub const fn warp_share(warp: u64, warps: u64, n: u64, per_vector: u64) -> core::ops::Range<u64> {
    share_start(warp, warps, n, per_vector)..share_start(warp + 1, warps, n, per_vector)
}

/// Where share `unit` of `units` (of [`block_share`] and [`warp_share`]) starts.
const fn share_start(unit: u64, units: u64, n: u64, per_vector: u64) -> u64 {
    let vectors = n.div_ceil(per_vector);
    let v = (vectors as u128 * unit as u128 / units as u128) as u64 * per_vector;
    if v > n { n } else { v }
}

/// Offset `s` of `segments + 1`: `min(s * segment_len, n)`, or `min(offset(s), n)` when
/// `segment_len` is 0.
#[inline(always)]
pub fn offset_of(s: u64, n: u64, segment_len: u64, offset: impl Fn(u64) -> u64) -> u64 {
    let o = if segment_len != 0 { s.saturating_mul(segment_len) } else { offset(s) };
    if o > n { n } else { o }
}

/// The segment that holds value `pos`: the last `s` below `segments` with `off(s) <= pos` (by
/// binary search; 0 when there is none). With sorted offsets and empty segments, the non-empty
/// segment that holds `pos`.
#[inline(always)]
pub fn segment_containing(pos: u64, segments: u64, off: impl Fn(u64) -> u64) -> u64 {
    // off(lo) <= pos or lo = 0; the answer is below hi.
    let (mut lo, mut hi) = (0u64, segments);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if off(mid) <= pos { lo = mid } else { hi = mid }
    }
    lo
}

/// Calls `f(s, a, e)` for each piece of the share `share` of the values: segment `s`'s values
/// `a..e` inside the share (non-empty), in order, for segments `0..segments` whose offsets `off`
/// gives (sorted, or any: a segment whose end lies before its start is empty). The walk of a block
/// (or warp) of the segmented kernels; every thread of it makes the same calls.
///
/// ```
/// use kernels::histogram::segmented::for_each_piece;
/// let offsets = [0u64, 10, 10, 25, 40];
/// let mut pieces = Vec::new();
/// for_each_piece(8..30, 4, |s| offsets[s as usize], |s, a, e| pieces.push((s, a, e)));
/// // Segment 1 is empty; segment 3 starts past the share's end at 30.
/// assert_eq!(pieces, [(0, 8, 10), (2, 10, 25), (3, 25, 30)]);
/// ```
#[inline(always)]
pub fn for_each_piece(
    share: core::ops::Range<u64>,
    segments: u64,
    off: impl Fn(u64) -> u64,
    mut f: impl FnMut(u64, u64, u64),
) {
    if share.start >= share.end || segments == 0 {
        return;
    }
    let mut s = segment_containing(share.start, segments, &off);
    let mut start = off(s);
    while s < segments && start < share.end {
        let end = off(s + 1);
        let (a, e) = (start.max(share.start), end.min(share.end));
        if a < e {
            f(s, a, e);
        }
        s += 1;
        start = end.max(start);
    }
}

#[cfg(target_arch = "nvptx64")]
pub(crate) mod device_code {
    use super::{block_share, for_each_piece, offset_of, warp_share};
    use crate::device::shared::DynamicSharedArray;
    use crate::device::{atomic, mem, thread, warp};
    use crate::histogram::device_code::load_one;
    use crate::histogram::packed::device_code::SharedCounters;
    use crate::histogram::pipelined::device_code::for_each_vector_in32;
    use crate::histogram::pipelined::piece_split;
    use crate::histogram::{Binning, Element};
    use crate::{dynamic_shared_array, gpu_kernel};

    /// The kernel's body; see the [module documentation](super).
    ///
    /// # Safety
    /// As the module's.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn segmented<T: Element, const DOUBLE: bool>(
        input: *const u8,
        n: u64,
        counts: *mut u32,
        binning: Binning,
        segments: u64,
        segment_len: u64,
        offsets: *const u64,
        copies: u32,
    ) {
        let nbins = binning.nbins;
        let set = (nbins * copies) as usize;
        // SAFETY: the launch provides nbins * copies words of dynamic shared memory, twice that
        // with DOUBLE.
        let words =
            unsafe { dynamic_shared_array!(HISTOGRAM_SEGMENT_COUNTERS: u32, if DOUBLE { 2 * set } else { set }) };
        // Set `k` (0, or 1 with DOUBLE) of nbins * copies words; built where used, so that only
        // the set's number stays live across the pieces.
        let counter_set = #[inline(always)]
        |second: bool| {
            // SAFETY: the second set follows the first inside the window (asked for only with
            // DOUBLE); forwarded contract; the counts pointer is replaced per segment at the
            // flush (plain counters make no corrections).
            unsafe {
                let at =
                    DynamicSharedArray::<u32>::from_shared_address(words.address_of(if second { set } else { 0 }), set);
                SharedCounters::<0>::new(at, nbins, copies, counts)
            }
        };
        counter_set(false).zero();
        if DOUBLE {
            counter_set(true).zero();
        }
        // Every counter is zero before any thread adds to it.
        thread::sync_threads();
        let share = block_share(thread::block_idx_x(), thread::grid_dim_x(), n, T::PER_VECTOR);
        if share.start >= share.end || segments == 0 {
            // The whole block leaves (block-uniform): no value of any segment for it.
            return;
        }
        // SAFETY: every offset read is at an index of 0..=segments, inside the array.
        let off =
            #[inline(always)]
            |s: u64| offset_of(s, n, segment_len, |i| unsafe { mem::load_global_nc_u64(offsets.add(i as usize)) });
        let copy = counter_set(false).copy();
        let (tid, threads) = (thread::thread_idx_x() as u64, thread::block_dim_x() as u64);
        // Whether this piece adds into the second set (never without DOUBLE); block-uniform.
        let mut in_second = false;
        // Every thread computes the same pieces from the same offsets: block-uniform.
        for_each_piece(
            share,
            segments,
            off,
            #[inline(always)]
            |s, a, e| {
                let counters = counter_set(DOUBLE && in_second);
                let count = #[inline(always)]
                |v: T| {
                    if let Some(bin) = v.bin(&binning) {
                        // SAFETY: bin < nbins; copy < copies.
                        unsafe { counters.add(bin, copy, 1) };
                    }
                };
                let (head, groups, tail) = piece_split(a, e, T::PER_VECTOR);
                // SAFETY: the block's lanes hold consecutive thread indices and its size is a
                // multiple of 32; the groups are whole vectors inside 0..n, and with n <= u32::MAX
                // (a vector holds at least 4 values) every index of the loop fits 32 bits.
                unsafe {
                    for_each_vector_in32(
                        input,
                        groups.start as u32..groups.end as u32,
                        tid as u32,
                        threads as u32,
                        #[inline(always)]
                        |w, _, present| {
                            if present {
                                let mut each = #[inline(always)]
                                |v: T| count(v);
                                T::for_each_in_vector(w, &mut each);
                            }
                        },
                    )
                };
                // Head and tail: at most 2 * PER_VECTOR - 2 <= 30 values, one per lane of warp 0.
                if tid < warp::WARP_SIZE as u64 {
                    let (h, t) = (head.end - head.start, tail.end - tail.start);
                    let i = if tid < h {
                        Some(head.start + tid)
                    } else if tid - h < t {
                        Some(tail.start + tid - h)
                    } else {
                        None
                    };
                    if let Some(i) = i {
                        // SAFETY: i lies in a..e, inside the input.
                        count(unsafe { load_one::<T>(input, i) });
                    }
                }
                // Every add of the piece has landed before its counters are read.
                thread::sync_threads();
                // SAFETY: s < segments: segment s's nbins counters lie inside `counts`. Each
                // thread zeroes the words it read, so a barrier later the block counts again.
                counters.flush(unsafe { counts.add((s * nbins as u64) as usize) }, true);
                if DOUBLE {
                    // The next piece adds into the other set; this one is zero before the piece
                    // after it adds here again, past the next piece's barrier.
                    in_second = !in_second;
                } else {
                    // The counters are zero again before the next piece adds to them.
                    thread::sync_threads();
                }
            },
        );
    }

    /// The warp-private kernel's body; see the [module documentation](super). Every branch
    /// below depends only on values the whole warp shares (the share, the offsets, the piece), so
    /// the lanes of a warp stay together at each `sync_warp`.
    ///
    /// # Safety
    /// As the module's, with [`warp_shared_bytes`](super::warp_shared_bytes)`(nbins, copies,
    /// block size)` of dynamic shared memory.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn segmented_warp<T: Element>(
        input: *const u8,
        n: u64,
        counts: *mut u32,
        binning: Binning,
        segments: u64,
        segment_len: u64,
        offsets: *const u64,
        copies: u32,
    ) {
        let nbins = binning.nbins;
        let per_warp = nbins * copies;
        let lane = warp::lane_id();
        let warps_per_block = thread::block_dim_x() / warp::WARP_SIZE;
        let warp_in_block = thread::thread_idx_x() / warp::WARP_SIZE;
        // SAFETY: the launch provides nbins * copies words for each warp of the block.
        let words = unsafe {
            dynamic_shared_array!(HISTOGRAM_SEGMENT_WARP_COUNTERS: u32, (per_warp * warps_per_block) as usize)
        };
        // SAFETY: this warp's words lie inside the block's, and no other warp touches them.
        let mine = unsafe {
            DynamicSharedArray::<u32>::from_shared_address(
                words.address_of((warp_in_block * per_warp) as usize),
                per_warp as usize,
            )
        };
        // This lane adds into copy `lane % copies` (equal bins of one warp land on different
        // words): counter `b` of that copy is `4 * b * copies` bytes past `base`.
        let base = mine.address_of((lane & (copies - 1)) as usize);
        let mut i = lane;
        while i < per_warp {
            // SAFETY: i < per_warp, inside this warp's words; each lane zeroes its own.
            unsafe { mine.store(i as usize, 0) };
            i += warp::WARP_SIZE;
        }
        // SAFETY: every lane of the warp reaches this call (nothing above leaves early).
        // Every lane's zeroing lands before any lane of the warp adds.
        unsafe { warp::sync_warp() };
        let warps = thread::grid_dim_x() as u64 * warps_per_block as u64;
        let me = thread::block_idx_x() as u64 * warps_per_block as u64 + warp_in_block as u64;
        // A warp whose share is empty (or with no segments) meets no piece and leaves: no barrier
        // waits on it.
        let share = warp_share(me, warps, n, T::PER_VECTOR);
        // SAFETY: every offset read is at an index of 0..=segments, inside the array.
        let off =
            #[inline(always)]
            |s: u64| offset_of(s, n, segment_len, |i| unsafe { mem::load_global_nc_u64(offsets.add(i as usize)) });
        let lane64 = lane as u64;
        // Every lane computes the same pieces from the same offsets: warp-uniform.
        for_each_piece(
            share,
            segments,
            off,
            #[inline(always)]
            |s, a, e| {
                let count = #[inline(always)]
                |v: T| {
                    if let Some(bin) = v.bin(&binning) {
                        // SAFETY: bin < nbins: word bin * copies + lane % copies of this warp's
                        // words; red.shared is atomic.
                        unsafe { atomic::shared_add_u32(base + ((bin * copies) << 2), 1) };
                    }
                };
                let (head, groups, tail) = piece_split(a, e, T::PER_VECTOR);
                // Head and tail: at most 2 * PER_VECTOR - 2 <= 30 values, one per lane. Loaded
                // before the vectors (their bounds are not live across the vector loop, and the
                // load's latency overlaps the vectors'), counted after them.
                let (h, t) = (head.end - head.start, tail.end - tail.start);
                let i = if lane64 < h {
                    Some(head.start + lane64)
                } else if lane64 - h < t {
                    Some(tail.start + lane64 - h)
                } else {
                    None
                };
                // SAFETY: i lies in a..e, inside the input.
                let extra = i.map(|i| unsafe { load_one::<T>(input, i) });
                // SAFETY: the warp's lanes hold consecutive starts (its lane indices) and the
                // stride is 32; the groups are whole vectors inside 0..n, and with n <= u32::MAX
                // (a vector holds at least 4 values) every index of the loop fits 32 bits.
                unsafe {
                    for_each_vector_in32(
                        input,
                        groups.start as u32..groups.end as u32,
                        lane,
                        warp::WARP_SIZE,
                        #[inline(always)]
                        |w, _, present| {
                            if present {
                                let mut each = #[inline(always)]
                                |v: T| count(v);
                                T::for_each_in_vector(w, &mut each);
                            }
                        },
                    )
                };
                if let Some(v) = extra {
                    count(v);
                }
                // SAFETY (both): the whole warp reaches them (the piece is warp-uniform).
                // Every lane's adds of the piece land before any lane reads the counters.
                unsafe { warp::sync_warp() };
                // SAFETY: s < segments: segment s's nbins counters lie inside `counts`.
                unsafe { flush_warp(mine, nbins, copies, counts.add((s * nbins as u64) as usize)) };
                // The counters are zero again before any lane adds the next piece.
                unsafe { warp::sync_warp() };
            },
        );
    }

    /// Adds a warp's `copies` interleaved copies of `nbins` counters in `words` (word `w` of copy
    /// `c` at `w * copies + c`) into `counts` and leaves them zero, the warp's lanes sharing the
    /// counters: lane `l` takes counters `l, l + 32, ...`, sums their copies, adds a nonzero sum
    /// with one global atomic (a short piece fills few of many bins: its zero counters cost no
    /// atomic and no store) and zeroes the words it read.
    ///
    /// # Safety
    /// The whole warp calls it after a `sync_warp` that follows its adds; `words` holds `nbins *
    /// copies` words of this warp only; `counts` holds `nbins` counters; a `sync_warp` follows
    /// before the lanes add again.
    #[inline(always)]
    unsafe fn flush_warp(words: DynamicSharedArray<u32>, nbins: u32, copies: u32, counts: *mut u32) {
        let mut i = warp::lane_id();
        while i < nbins {
            let mut sum = 0u32;
            for c in 0..copies {
                // SAFETY: i * copies + c < nbins * copies; ordered after the adds by sync_warp.
                sum += unsafe { words.load((i * copies + c) as usize) };
            }
            if sum != 0 {
                // SAFETY: i < nbins, inside `counts`; red.global is atomic.
                unsafe { atomic::global_add_u32(counts.add(i as usize), sum) };
                for c in 0..copies {
                    // SAFETY: a word this lane alone read; no lane adds before the next sync_warp.
                    unsafe { words.store((i * copies + c) as usize, 0) };
                }
            }
            i += warp::WARP_SIZE;
        }
    }

    macro_rules! segmented_kernels {
        ($($t:ty => $name:ident, $double:ident, $warp:ident);*) => {$(
            gpu_kernel! {
                #[doc = concat!("Segmented histograms of `", stringify!($t), "` values; see the [module documentation](super).")]
                ///
                /// # Safety
                /// As the module's.
                pub unsafe fn $name(input: *const u8, n: u64, counts: *mut u32, nbins: u32, lo: f32, hi: f32,
                                    scale: f32, segments: u64, segment_len: u64, offsets: *const u64, copies: u32) {
                    let binning = Binning { nbins, lo, hi, scale };
                    // SAFETY: forwarded contract.
                    unsafe { segmented::<$t, false>(input, n, counts, binning, segments, segment_len, offsets, copies) }
                }
            }
            gpu_kernel! {
                #[doc = concat!("Segmented histograms of `", stringify!($t), "` values in two sets of counters; see the [module documentation](super).")]
                ///
                /// # Safety
                /// As the module's, with twice the shared memory.
                pub unsafe fn $double(input: *const u8, n: u64, counts: *mut u32, nbins: u32, lo: f32, hi: f32,
                                      scale: f32, segments: u64, segment_len: u64, offsets: *const u64, copies: u32) {
                    let binning = Binning { nbins, lo, hi, scale };
                    // SAFETY: forwarded contract.
                    unsafe { segmented::<$t, true>(input, n, counts, binning, segments, segment_len, offsets, copies) }
                }
            }
            gpu_kernel! {
                #[doc = concat!("Segmented histograms of `", stringify!($t), "` values in warp-private counters, without block barriers; see the [module documentation](super).")]
                ///
                /// # Safety
                /// As the module's, with `copies` copies per warp and
                /// [`warp_shared_bytes`](super::warp_shared_bytes)`(nbins, copies, block size)` of
                /// dynamic shared memory.
                pub unsafe fn $warp(input: *const u8, n: u64, counts: *mut u32, nbins: u32, lo: f32, hi: f32,
                                    scale: f32, segments: u64, segment_len: u64, offsets: *const u64, copies: u32) {
                    let binning = Binning { nbins, lo, hi, scale };
                    // SAFETY: forwarded contract.
                    unsafe { segmented_warp::<$t>(input, n, counts, binning, segments, segment_len, offsets, copies) }
                }
            }
        )*};
    }

    segmented_kernels!(
        u8 => histogram_segmented_u8, histogram_segmented_double_u8, histogram_segmented_warp_u8;
        u16 => histogram_segmented_u16, histogram_segmented_double_u16, histogram_segmented_warp_u16;
        i32 => histogram_segmented_i32, histogram_segmented_double_i32, histogram_segmented_warp_i32;
        f32 => histogram_segmented_f32, histogram_segmented_double_f32, histogram_segmented_warp_f32
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_shares_are_whole_vectors_covering_every_value_once() {
        for n in [0u64, 1, 15, 16, 17, 1000, 65_537] {
            for blocks in [1u32, 3, 7, 132, 528] {
                for per in [4u64, 8, 16] {
                    let mut next = 0;
                    for b in 0..blocks {
                        let r = block_share(b, blocks, n, per);
                        assert_eq!(r.start, next, "n {n}, {blocks} blocks, block {b}");
                        assert!(r.start <= r.end);
                        assert!(r.start.is_multiple_of(per) || r.start == n);
                        next = r.end;
                    }
                    assert_eq!(next, n);
                }
            }
        }
    }

    #[test]
    fn warp_shares_are_whole_vectors_covering_every_value_once() {
        for n in [0u64, 1, 15, 16, 17, 1000, 65_537] {
            for warps in [1u64, 3, 32, 4224, 1 << 33] {
                for per in [4u64, 8, 16] {
                    // Every share's start is the previous share's end; a sample of the shares of
                    // very many warps.
                    let step = (warps / 4096).max(1);
                    let mut w = 0;
                    while w < warps {
                        let r = warp_share(w, warps, n, per);
                        assert!(r.start <= r.end && r.end <= n, "n {n}, {warps} warps, warp {w}");
                        assert!(r.start.is_multiple_of(per) || r.start == n);
                        assert_eq!(warp_share(w + 1, warps, n, per).start, r.end);
                        w += step;
                    }
                    assert_eq!(warp_share(0, warps, n, per).start, 0);
                    assert_eq!(warp_share(warps - 1, warps, n, per).end, n);
                }
            }
        }
        assert_eq!(warp_shared_bytes(256, 2, 256), 8 * shared_bytes(256, 2));
    }

    #[test]
    fn the_pieces_of_every_share_cover_each_value_once_in_its_segment() {
        extern crate std;
        use std::vec::Vec;
        // Sorted offsets with empty segments first, in the middle and last, segments shorter than
        // a vector and boundaries inside vectors; equal segments past the end.
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = |m: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % m
        };
        for n in [0u64, 1, 5, 17, 100, 1000, 4099] {
            let mut offsets = std::vec![0u64, 0];
            while *offsets.last().unwrap() < n {
                let len = [0, 1 + next(15), 16 + next(100), next(700)][next(4) as usize];
                offsets.push((offsets.last().unwrap() + len).min(n));
            }
            offsets.extend([n, n]);
            let segments = offsets.len() as u64 - 1;
            let by_offsets = |s: u64| offset_of(s, n, 0, |i| offsets[i as usize]);
            let equal = |s: u64| offset_of(s, n, 7, |_| unreachable!());
            let cases: [(&dyn Fn(u64) -> u64, u64); 2] = [(&by_offsets, segments), (&equal, n.div_ceil(7) + 3)];
            for (off, segments) in cases {
                for per in [4u64, 16] {
                    for units in [1u64, 2, 7, 32, 33, 500] {
                        let mut seen: Vec<Option<u64>> = std::vec![None; n as usize];
                        for u in 0..units {
                            let share = warp_share(u, units, n, per);
                            for_each_piece(share.clone(), segments, off, |s, a, e| {
                                assert!(share.start <= a && a < e && e <= share.end, "{a}..{e} in {share:?}");
                                for i in a..e {
                                    assert_eq!(seen[i as usize], None, "value {i} twice");
                                    seen[i as usize] = Some(s);
                                }
                            });
                        }
                        for (i, s) in seen.iter().enumerate() {
                            let s = s.unwrap_or_else(|| panic!("n {n}, {units} shares: value {i} in no piece"));
                            assert!(off(s) <= i as u64 && (i as u64) < off(s + 1), "value {i} in segment {s}");
                        }
                    }
                }
            }
        }
        // No segments: no pieces.
        for_each_piece(0..100, 0, |_| 0, |_, _, _| panic!("a piece of no segment"));
    }

    #[test]
    fn the_segment_of_a_position_skips_empty_segments() {
        let offsets = [0u64, 0, 5, 5, 5, 9, 12];
        let off = |s: u64| offsets[s as usize];
        let segments = offsets.len() as u64 - 1;
        let want = [1, 1, 1, 1, 1, 4, 4, 4, 4, 5, 5, 5];
        for (pos, &w) in want.iter().enumerate() {
            assert_eq!(segment_containing(pos as u64, segments, off), w, "position {pos}");
        }
        // Every segment's offsets, clamped: equal lengths end at n.
        assert_eq!(offset_of(3, 10, 4, |_| 0), 10);
        assert_eq!(offset_of(2, 10, 4, |_| 0), 8);
        assert_eq!(offset_of(1, 10, 0, |_| 99), 10);
        assert_eq!(segment_containing(7, 3, |s| offset_of(s, 10, 4, |_| 0)), 1);
        // Offsets that start after 0: the first segment is the answer for earlier positions.
        assert_eq!(segment_containing(2, 2, |s| [5u64, 8, 9][s as usize]), 0);
    }

    #[test]
    fn unsorted_offsets_stay_in_bounds() {
        let offsets = [7u64, 3, 100, 0, 2];
        for pos in 0..10 {
            assert!(segment_containing(pos, 4, |s| offsets[s as usize]) < 4);
        }
        assert_eq!(shared_bytes(256, 4), 4096);
    }
}
