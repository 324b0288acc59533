//! Interleaved multi-channel histograms, one read for all channels (CUB's `MultiHistogramEven`):
//! `histogram_channels_{u8,u16,i32,f32}`. Value `i` of the input belongs to channel
//! `(phase + i) % channels` (RGBA pixels: 4 channels, phase 0), and each of the first `active`
//! channels gets its own histogram of `nbins` bins, binned like the one-channel kernels
//! ([`super::Element::bin`]: integers clamped into the edge bins, `f32` over a range).
//!
//! With one channel this is the plain histogram, through the pipelined input loop
//! ([`super::pipelined`]) and optionally with packed counters ([`super::packed`]): 16-bit digits
//! hold up to twice the bins of one block's shared memory (65,536 bins in 128 KiB), 8-bit digits
//! four times.
//!
//! # Kernels
//! `histogram_channels{C}_{t}` for `C` = 1 to 4 channels (plain `u32` counters),
//! `histogram_packed16_{t}` for one channel in 16-bit packed counters and `histogram_packed_{t}`
//! for one channel in 8-bit packed counters, with or without a carry plane ([`kernel`] names
//! them); each takes the parameters below that its name does not fix. The 16-bit counters have
//! kernels of their own, without the carry plane's code: a kernel's registers are those of its
//! largest path, and with the plane's rare path and its run-time switches in the one packed
//! kernel the 16-bit path went from 0.100 ms to 0.119 (H200, 2^26 `i32` in 65,536 bins). In the
//! release build the 16-bit kernels take 50-52 registers, the 8-bit ones 58-60 (the batched adds
//! of `count_packed`, four values' atomics before their carry checks), under the 64 a 1,024-thread
//! block leaves.
//!
//! # Parameters
//! `input`: `n` values (16-byte aligned); `counts`: `active * nbins` `u32`, channel `c`'s bin `b`
//! at `c * nbins + b`, added into (not zeroed here); `nbins, lo, hi, scale` as [`super::Binning`];
//! `channels` (1 to 4), `active` (1 to `channels`), `phase` (below `channels`): the channel of
//! value 0; `copies`: interleaved private copies of the counters per block (a power of two from
//! 1 to 32; lane `l` adds into copy `l % copies`); `packing`: counters per word as `log2`
//! ([`super::packed`]: 0, or with one channel 1 or 2). The packed kernels take a `mode`
//! ([`super::packed::mode`]) in its place: the packing (1 for `histogram_packed16_*`, 2 for
//! `histogram_packed_*`), and optionally warp-aggregated adds (the lanes whose value falls in
//! lane 0's bin add as one) and, with packing 2 only, a carry plane after the counters
//! ([`super::packed::CARRY_PLANE_PACKING`], [`super::packed::carry_plane_bytes`]`(window)` more
//! bytes of shared memory); then `first` and `window`: they count the bins `first..first +
//! window` only, into `counts` of `window` counters (a pass of several over the input; one pass:
//! `0` and `nbins`).
//!
//! # Launch
//! Any one-dimensional grid (the host's: as many blocks as stay resident; for the packed kernels,
//! fewer than 2^30 threads, which keeps their loop's indices in 32 bits) of blocks whose size is
//! a multiple of 32; dynamic shared memory [`shared_bytes`]`(active * nbins, packing, copies)`.
//! Other `(channels, packing)` pairs, and a packed kernel given a mode of the other packing (or
//! the 16-bit kernel a carry plane), count nothing ([`supported`] and [`kernel`] say which kernel
//! takes which).
//!
//! # Safety
//! `input` holds `n` values, `counts` the counters above, nothing else writes them during the
//! launch, `n <= u32::MAX`, and the launch provides the shared memory above.

pub use super::packed::MAX_PACKING;

/// The most interleaved channels.
pub const MAX_CHANNELS: u32 = 4;

/// The PTX symbols of the plain-counter kernels: `KERNELS[channels - 1][t]` for the input type
/// of index `t` in [`super::InputType::ALL`]. One kernel per channel count, because a kernel's
/// registers are those of its largest loop: three channels (whose phase turns with each vector)
/// took 80 registers for `u8` where one channel takes 32, which alone lets 2,048 threads share an
/// SM.
pub const KERNELS: [[&str; 4]; 4] = [
    ["histogram_channels1_u8", "histogram_channels1_u16", "histogram_channels1_i32", "histogram_channels1_f32"],
    ["histogram_channels2_u8", "histogram_channels2_u16", "histogram_channels2_i32", "histogram_channels2_f32"],
    ["histogram_channels3_u8", "histogram_channels3_u16", "histogram_channels3_i32", "histogram_channels3_f32"],
    ["histogram_channels4_u8", "histogram_channels4_u16", "histogram_channels4_i32", "histogram_channels4_f32"],
];

/// The PTX symbols of the one-channel kernels with 8-bit packed counters (`packing` 2, with or
/// without a carry plane), by input type.
pub const PACKED_KERNELS: [&str; 4] =
    ["histogram_packed_u8", "histogram_packed_u16", "histogram_packed_i32", "histogram_packed_f32"];

/// The PTX symbols of the one-channel kernels with 16-bit packed counters (`packing` 1, no carry
/// plane), by input type: the carry plane's code is not compiled into them, so that they keep the
/// registers of the 16-bit path alone (50-52 in the release build, against the 8-bit kernels'
/// 58-60).
pub const PACKED16_KERNELS: [&str; 4] =
    ["histogram_packed16_u8", "histogram_packed16_u16", "histogram_packed16_i32", "histogram_packed16_f32"];

/// The PTX symbols of the one-channel kernels with 6-bit packed counters and their carry table
/// ([`SIX_BIT_PACKING`](super::packed::SIX_BIT_PACKING)), by input type: the packed tier's kernels
/// from 154,965 bins (one block's 8-bit counters with their carry plane) to 280,320 in one pass.
pub const PACKED6_KERNELS: [&str; 4] =
    ["histogram_packed6_u8", "histogram_packed6_u16", "histogram_packed6_i32", "histogram_packed6_f32"];

/// The PTX symbols of the one-channel kernels with 4-bit packed counters and their carry table
/// ([`FOUR_BIT_PACKING`](super::packed::FOUR_BIT_PACKING)), by input type: the packed tier's
/// kernels from 280,321 bins to 389,120 in one pass (two passes: twice that).
pub const PACKED4_KERNELS: [&str; 4] =
    ["histogram_packed4_u8", "histogram_packed4_u16", "histogram_packed4_i32", "histogram_packed4_f32"];

/// The PTX symbol of the kernel that adds the 6-bit digits the blocks of a `histogram_packed6_*`
/// launch stored into the counts.
pub const PACKED6_SUM_KERNEL: &str = "histogram_packed6_sum_blocks";

/// The PTX symbol of the kernel that adds the 4-bit digits the blocks of a `histogram_packed4_*`
/// launch stored into the counts.
pub const PACKED4_SUM_KERNEL: &str = "histogram_packed4_sum_blocks";

/// The kernel that sums the digits the blocks of a carry-table kernel of packing `packing`
/// stored ([`PACKED6_SUM_KERNEL`] or [`PACKED4_SUM_KERNEL`]; `None` for a packing without a
/// carry table).
///
/// ```
/// use kernels::histogram::channels::packed_sum_kernel;
/// use kernels::histogram::packed::{FOUR_BIT_PACKING, SIX_BIT_PACKING};
/// assert_eq!(packed_sum_kernel(SIX_BIT_PACKING), Some("histogram_packed6_sum_blocks"));
/// assert_eq!(packed_sum_kernel(FOUR_BIT_PACKING), Some("histogram_packed4_sum_blocks"));
/// assert_eq!(packed_sum_kernel(2), None);
/// ```
pub const fn packed_sum_kernel(packing: u32) -> Option<&'static str> {
    match packing {
        super::packed::SIX_BIT_PACKING => Some(PACKED6_SUM_KERNEL),
        super::packed::FOUR_BIT_PACKING => Some(PACKED4_SUM_KERNEL),
        _ => None,
    }
}

/// Slices of the blocks that [`PACKED6_SUM_KERNEL`] and [`PACKED4_SUM_KERNEL`] sum apart (its grid's y dimension), each
/// slice's sums added into the counts with global atomics: four times the threads of one slice,
/// so that enough loads are in flight over the SMs (262,144 bins: 52,429 words).
pub const PACKED6_SUM_SLICES: u32 = 4;

/// Threads per block of [`PACKED6_SUM_KERNEL`] and [`PACKED4_SUM_KERNEL`].
pub const PACKED6_SUM_THREADS: u32 = 256;

/// The kernel for `channels` channels at `packing`, for the input type of index `t`; `None` for a
/// pair [`supported`] refuses.
///
/// ```
/// use kernels::histogram::channels::kernel;
/// assert_eq!(kernel(4, 0, 0), Some("histogram_channels4_u8"));
/// assert_eq!(kernel(1, 1, 2), Some("histogram_packed16_i32"));
/// assert_eq!(kernel(1, 2, 2), Some("histogram_packed_i32"));
/// assert_eq!(kernel(2, 1, 2), None);
/// ```
pub const fn kernel(channels: u32, packing: u32, t: usize) -> Option<&'static str> {
    if !supported(channels, packing) || t >= 4 {
        None
    } else if packing == 0 {
        Some(KERNELS[channels as usize - 1][t])
    } else if packing == 1 {
        Some(PACKED16_KERNELS[t])
    } else {
        Some(PACKED_KERNELS[t])
    }
}

/// The channel of value `i` of an input whose value 0 is of channel `phase`.
///
/// ```
/// use kernels::histogram::channels::channel_of;
/// assert_eq!([0, 1, 2, 3, 4].map(|i| channel_of(i, 0, 3)), [0, 1, 2, 0, 1]);
/// assert_eq!(channel_of(0, 2, 3), 2);
/// assert_eq!(channel_of(5, 1, 4), 2);
/// ```
pub const fn channel_of(i: u64, phase: u32, channels: u32) -> u32 {
    ((phase as u64 + i % channels as u64) % channels as u64) as u32
}

/// The channel of the first value of 16-byte vector `vector` (of `per_vector` values): the
/// kernel's per-vector phase, from which the `k`-th value of the vector is `k` channels on.
pub const fn vector_phase(vector: u64, per_vector: u64, phase: u32, channels: u32) -> u32 {
    channel_of(vector % channels as u64 * (per_vector % channels as u64), phase, channels)
}

/// `(a + k) % C` for `a < C`, with `k % C` folded at compile time where `k` is a constant.
#[inline(always)]
pub const fn add_mod<const C: u32>(a: u32, k: u32) -> u32 {
    let s = a + k % C;
    if s >= C { s - C } else { s }
}

/// Whether the kernel takes `channels` channels with counters packed `2^packing` to a word:
/// plain counters for 1 to 4 channels, packed ones for one channel.
pub const fn supported(channels: u32, packing: u32) -> bool {
    match packing {
        0 => channels >= 1 && channels <= MAX_CHANNELS,
        1 | 2 => channels == 1,
        _ => false,
    }
}

/// Dynamic shared memory of a block: `copies` copies of `counters` counters at `packing`.
pub const fn shared_bytes(counters: u32, packing: u32, copies: u32) -> u64 {
    super::packed::counter_bytes(counters, packing, copies)
}

#[cfg(target_arch = "nvptx64")]
pub(crate) mod device_code {
    use super::add_mod;
    use crate::device::atomic;
    use crate::device::shared::DynamicSharedArray;
    use crate::device::thread;
    use crate::device::warp;
    use crate::histogram::NO_BIN;
    use crate::histogram::device_code::load_one;
    use crate::histogram::packed::device_code::{CarryQueue, SharedCounters};
    use crate::histogram::packed::{
        CARRY_PLANE_PACKING, FOUR_BIT_PACKING, SIX_BIT_PACKING, carry_queue_words, carry_table_slots,
        carry_table_words, digit_of, mode_parts, per_word, words_for,
    };
    use crate::histogram::pipelined::device_code::{for_each_vector, for_each_vector_in32};
    use crate::histogram::{Binning, Element};
    use crate::{dynamic_shared_array, gpu_kernel};

    /// Calls `count(value, channel)` for each of the `n` values of `input` (value `i` of channel
    /// `(phase + i) % C`), 16-byte vectors through the pipelined loop, then the last `n %
    /// PER_VECTOR` values one per thread.
    ///
    /// # Safety
    /// `input` holds `n` values (16-byte aligned), `n <= u32::MAX`; the grid is one-dimensional
    /// with blocks of a multiple of 32 threads.
    #[inline(always)]
    unsafe fn count_all<T: Element, const C: u32>(input: *const u8, n: u64, phase: u32, count: impl Fn(T, u32)) {
        let vectors = n / T::PER_VECTOR;
        // SAFETY: the input holds n / PER_VECTOR whole 16-byte vectors (caller's contract).
        unsafe {
            for_each_vector(
                input,
                vectors,
                #[inline(always)]
                |words, i, present| {
                    if !present {
                        return;
                    }
                    // With 1, 2 or 4 channels every vector starts at the thread's phase; with 3 the
                    // phase turns with the vector.
                    // (The vector index fits in 32 bits: n <= u32::MAX.)
                    let first =
                        if C == 3 { add_mod::<3>(phase, (i as u32 % 3) * (T::PER_VECTOR as u32 % 3)) } else { phase };
                    let mut k = 0u32;
                    let mut each = #[inline(always)]
                    |v: T| {
                        count(v, add_mod::<C>(first, k));
                        k += 1;
                    };
                    T::for_each_in_vector(words, &mut each);
                },
            )
        };
        // The last n % PER_VECTOR values, one per thread.
        let tail = T::PER_VECTOR * vectors + thread::index_1d();
        if tail < n {
            // SAFETY: tail < n.
            let v = unsafe { load_one::<T>(input, tail) };
            count(v, super::channel_of(tail, phase, C));
        }
    }

    /// The kernel's body for `C` channels and packing `P`; see the [module documentation](super).
    ///
    /// # Safety
    /// As the module's.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn count_channels<T: Element, const C: u32, const P: u32>(
        input: *const u8,
        n: u64,
        counts: *mut u32,
        binning: Binning,
        active: u32,
        phase: u32,
        copies: u32,
    ) {
        let nbins = binning.nbins;
        let total = active * nbins;
        // SAFETY: the launch provides words_for(total, P) * copies words of dynamic shared memory.
        let words =
            unsafe { dynamic_shared_array!(HISTOGRAM_CHANNEL_COUNTERS: u32, (words_for(total, P) * copies) as usize) };
        // SAFETY: forwarded contract: copies is a power of two up to 32, counts holds total counters.
        let counters = unsafe { SharedCounters::<P>::new(words, total, copies, counts) };
        counters.zero();
        // Every counter is zero before any thread adds to it.
        thread::sync_threads();
        let copy = counters.copy();
        if P == 0 && T::VALUES != 0 && nbins >= T::VALUES && copies == 32 {
            // Every value is its own bin and the copies are 32: no clamp, and the address is a
            // shift by a constant from this lane's copy.
            let base = counters.copy_address(copy);
            let count = #[inline(always)]
            |v: T, channel: u32| {
                if C == 1 || channel < active {
                    // SAFETY: channel < active and v.index() < T::VALUES <= nbins: below total;
                    // 32 copies, P == 0; base is this lane's copy's.
                    unsafe { counters.add_one_in_32(base, channel * nbins + v.index()) };
                }
            };
            // SAFETY: forwarded contract.
            unsafe { count_all::<T, C>(input, n, phase, count) };
        } else {
            let count = #[inline(always)]
            |v: T, channel: u32| {
                // One channel: always active (the host passes active = 1).
                if (C == 1 || channel < active)
                    && let Some(bin) = v.bin(&binning)
                {
                    // SAFETY: channel < active and bin < nbins: below total; copy < copies.
                    unsafe { counters.add(channel * nbins + bin, copy, 1) };
                }
            };
            // SAFETY: forwarded contract.
            unsafe { count_all::<T, C>(input, n, phase, count) };
        }
        // Every add of this block has landed before the counters are read.
        thread::sync_threads();
        counters.flush(counts, false);
    }

    /// How the packed kernels' loop tests whether a warp's batch of values all count, to run
    /// it without the per-value selects of values left out (floats over one window of every bin).
    #[derive(Clone, Copy, PartialEq, Eq)]
    enum BatchTest {
        /// No test: every batch runs the general code (integers, and windows of part of the bins).
        None,
        /// The largest of the values' differences from `lo`
        /// ([`Element::offset_bits`](crate::histogram::Element::offset_bits)) against
        /// [`Binning::offset_limit`](crate::histogram::Binning::offset_limit): one maximum a
        /// value.
        Offsets,
    }

    /// The one-channel packed kernel's body at packing `P` (1 or 2), with warp-aggregated adds
    /// when `AGG`, and a carry plane after the counters when `PLANE` (a compile-time switch: a
    /// kernel without the plane compiles none of its code, so its registers are the plain path's),
    /// counting the bins `first..first + window` of the binning into `counts` (the window's
    /// counters; the other values are left out); see the [module documentation](super).
    ///
    /// # Safety
    /// As the module's, with `channels = active = 1`, `phase = 0`, `nbins` read as `window`
    /// (counters and shared memory); with `PLANE` the launch also provides
    /// [`carry_plane_bytes`](crate::histogram::packed::carry_plane_bytes)`(window)` bytes after the
    /// counters.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn count_packed<
        T: Element,
        const P: u32,
        const AGG: bool,
        const PLANE: bool,
        const TABLE: bool,
        const WHOLE: bool,
    >(
        input: *const u8,
        n: u64,
        counts: *mut u32,
        binning: Binning,
        copies: u32,
        first: u32,
        window: u32,
        block_words: *mut u32,
    ) {
        let nbins = window;
        let low = words_for(nbins, P) * copies;
        let plane_words = if PLANE { words_for(nbins, CARRY_PLANE_PACKING) } else { 0 };
        let table_words = if TABLE { carry_table_words(P) } else { 0 };
        // The warps' carry queues, after the table's slots (4-bit digits).
        let queue_words = if TABLE { carry_queue_words(P) } else { 0 };
        // SAFETY: the launch provides the counters' words, then with `PLANE` the plane's, with
        // `TABLE` the table's.
        let words = unsafe {
            dynamic_shared_array!(HISTOGRAM_PACKED_COUNTERS: u32, (low + plane_words + table_words) as usize)
        };
        // SAFETY: forwarded contract: copies is a power of two up to 32, counts holds nbins counters.
        let mut counters = unsafe { SharedCounters::<P>::new(words, nbins, copies, counts) };
        if PLANE {
            // SAFETY: the plane's words follow the counters' inside the launch's shared memory.
            counters = unsafe {
                counters.with_carry_plane(DynamicSharedArray::from_shared_address(
                    words.address_of(low as usize),
                    plane_words as usize,
                ))
            };
        }
        if TABLE {
            // SAFETY: the table's words follow the counters' inside the launch's shared memory,
            // and TABLE kernels count 6- or 4-bit digits.
            counters = unsafe {
                counters.with_carry_table(DynamicSharedArray::from_shared_address(
                    words.address_of(low as usize),
                    2 * carry_table_slots(P) as usize,
                ))
            };
        }
        let queue = if queue_words > 0 {
            // SAFETY: the queues' words follow the table's slots inside the launch's shared
            // memory, 2 * CARRY_QUEUE_LEN words for each warp of a block of at most carry_table_threads(P)
            // (the kernels' .maxntid).
            Some(unsafe {
                CarryQueue::new(DynamicSharedArray::from_shared_address(
                    words.address_of((low + 2 * carry_table_slots(P)) as usize),
                    queue_words as usize,
                ))
            })
        } else {
            None
        };
        counters.zero();
        // Every counter is zero before any thread adds to it.
        thread::sync_threads();
        let copy = counters.copy();
        let idle = counters.idle_counter();
        let lane = warp::lane_id();
        // One value of each lane, the whole warp together: whether it counts and its counter (a
        // lane without one passes false): whether this lane adds, and how much. With AGG the
        // lanes whose counter is lane 0's add as one (lane 0 adds their number, at most 32,
        // which every digit holds): a constant input makes one atomic per warp and value.
        let merge = #[inline(always)]
        |(counts, counter): (bool, u32)| {
            if AGG {
                let key = if counts { counter } else { NO_BIN };
                // SAFETY (both): the whole warp is here (for_each_vector's calls are converged).
                let first = unsafe { warp::shuffle_idx_u32(key, 0) };
                let with_first = unsafe { warp::ballot(key == first) };
                let merged = key == first;
                (counts && (!merged || lane == 0), if merged { with_first.count_ones() } else { 1 })
            } else {
                (counts, 1)
            }
        };
        // Four values of each lane at once: their merges, then their four atomics, then their
        // carry checks. Each check waits on its atomic's result, and the atomics after it cannot
        // move above its branch, so counted one value at a time a lane waits out one
        // shared-memory round trip per value, behind that value's shuffle and ballot where warps
        // merge their adds, or behind its float binning. Every lane runs every atomic (an idle
        // lane adds 0 to a word of its own, SharedCounters::fetch), so the batch has no branch
        // around its atomics. (With them predicated, integers without merged adds had counted
        // faster one value at a time: on the H200, 2^26 values, 65,536 bins in 16-bit digits,
        // 0.089 ms against 0.097 batched.)
        let count4 = #[inline(always)]
        |values: [(bool, u32); 4]| {
            let m = [merge(values[0]), merge(values[1]), merge(values[2]), merge(values[3])];
            let c = [values[0].1, values[1].1, values[2].1, values[3].1];
            // SAFETY (all): where a lane adds, its counter < window, copy < copies and inc <= 32
            // fits any digit; idle is this lane's idle counter; settle takes the arguments of a
            // fetch that added and carried.
            unsafe {
                let fetch = |i: usize| {
                    if TABLE {
                        counters.fetch_hot(m[i].0, c[i], idle, copy, m[i].1)
                    } else {
                        let (old, shift) = counters.fetch(m[i].0, c[i], idle, copy, m[i].1);
                        (old, shift, m[i].0)
                    }
                };
                let fetched = [fetch(0), fetch(1), fetch(2), fetch(3)];
                let old = [fetched[0].0, fetched[1].0, fetched[2].0, fetched[3].0];
                let carried_at = |i: usize| counters.carried_at(fetched[i].2, m[i].1, (fetched[i].0, fetched[i].1));
                let carried = [carried_at(0), carried_at(1), carried_at(2), carried_at(3)];
                // One branch for the four: a carry is rare (one per 65,536 adds to a 16-bit
                // digit, 256 to an 8-bit one).
                // Written out: a loop over k kept the arrays in local memory (72 bytes of stack).
                if let Some(queue) = &queue {
                    // 4-bit digits: the warp queues its carries and settles them 32 at a time,
                    // one a lane (CarryQueue; carry_queue_words has the measurements). A settle
                    // later than its atomic is one more interleaving of the block's adds, which
                    // the corrections allow (add_exact).
                    if warp::any(carried[0] | carried[1] | carried[2] | carried[3]) {
                        let incs = [m[0].1, m[1].1, m[2].1, m[3].1];
                        queue.push(&counters, copy, carried, c, incs, old);
                    }
                } else if carried[0] | carried[1] | carried[2] | carried[3] {
                    if carried[0] {
                        counters.settle(c[0], copy, m[0].1, old[0]);
                    }
                    if carried[1] {
                        counters.settle(c[1], copy, m[1].1, old[1]);
                    }
                    if carried[2] {
                        counters.settle(c[2], copy, m[2].1, old[2]);
                    }
                    if carried[3] {
                        counters.settle(c[3], copy, m[3].1, old[3]);
                    }
                }
            }
        };
        // Whether the value counts in the window and its counter there (`first + window <= nbins`);
        // with WHOLE the window is every bin, and its test would always pass (two instructions a
        // value in a loop bound by its instructions).
        let in_window = #[inline(always)]
        |v: T| if WHOLE { v.bin_parts(&binning) } else { v.window_bin(&binning, first, window) };
        let offset_limit = binning.offset_limit();
        // Whether a batch whose values all count may run the integers' code (below): floats over
        // one window of every bin (the 16- and 8-bit kernels take the window test always, the
        // table kernels leave it out where the window is every bin).
        let batches_all_in = T::MAY_LEAVE_OUT && (WHOLE || (first == 0 && window == binning.nbins));
        let vectors = n / T::PER_VECTOR;
        // The loop over the vectors, with a batch's test of whether its values all count: none
        // (every batch runs the general code), the bound on the values' differences from lo
        // (Binning::offset_limit), or the values' own tests.
        let count_vectors = #[inline(always)]
        |all_in_test: BatchTest| {
            // SAFETY: the input holds n / PER_VECTOR whole 16-byte vectors (kernel contract); n <=
            // u32::MAX values make at most 2^30 vectors, and with the packed kernels' grid of
            // fewer than 2^30 threads, vectors + 2 * stride + 32 stays below 2^32.
            unsafe {
                for_each_vector_in32(
                    input,
                    0..vectors as u32,
                    thread::index_1d() as u32,
                    thread::grid_size_1d() as u32,
                    #[inline(always)]
                    |words, _, present| {
                        let mut each = #[inline(always)]
                        |q: [T; 4]| {
                            let bin = #[inline(always)]
                            |v: T| if present { in_window(v) } else { (false, 0) };
                            let b = [bin(q[0]), bin(q[1]), bin(q[2]), bin(q[3])];
                            // Floats over the whole range: where the warp's 128 values all count
                            // (the usual batch), the batch runs the integers' code, in which
                            // every lane adds. Its "does it count" selects (the merge key, the
                            // idle word, the zero add: 3-5 integer-pipe instructions a value, the
                            // pipe these loops are bound by) are left to batches with a value
                            // outside the range. Where Binning::offset_limit bounds the range, so
                            // are the range test's two float compares a value: the batch's test
                            // is the largest of its four differences' bits against that bound.
                            let all_in = #[inline(always)]
                            || match all_in_test {
                                BatchTest::Offsets => {
                                    let o = [q[0], q[1], q[2], q[3]].map(|v| v.offset_bits(&binning));
                                    present & (o[0].max(o[1]).max(o[2].max(o[3])) <= offset_limit)
                                }
                                BatchTest::None => false,
                            };
                            // warp::all's contract holds: the whole warp makes this call
                            // (for_each_vector's calls are converged).
                            if all_in_test != BatchTest::None && warp::all(all_in()) {
                                count4([(true, b[0].1), (true, b[1].1), (true, b[2].1), (true, b[3].1)])
                            } else {
                                count4(b)
                            }
                        };
                        T::for_each_quad_in_vector(words, &mut each);
                    },
                )
            }
        };
        // One loop of up to two runs (the choice is the launch's; integers compile the second
        // alone). Every range has an offset bound: where hi - lo loses hi's last bit, as over
        // [-1, 1], the bound is the float below it, and testing those batches by their values'
        // compares instead had cost 1.02-1.12x the bounded ranges' time (H200, 65,536 to
        // 389,120 bins).
        if batches_all_in {
            count_vectors(BatchTest::Offsets)
        } else {
            count_vectors(BatchTest::None)
        }
        // The last n % PER_VECTOR values, one per thread: every lane takes this step (nothing
        // to count past the end), so the warp stays converged.
        let tail = T::PER_VECTOR * vectors + thread::index_1d();
        // SAFETY: tail < n where loaded.
        let last = if tail < n { in_window(unsafe { load_one::<T>(input, tail) }) } else { (false, 0) };
        count4([last, (false, 0), (false, 0), (false, 0)]);
        if let Some(queue) = &queue {
            // SAFETY: the whole warp (the tail's step is converged); its queue of carries of
            // these counters, in this lane's copy.
            unsafe { queue.finish(&counters, copy) };
        }
        // Every add of this block has landed before the counters are read.
        thread::sync_threads();
        if TABLE {
            // The digits go to the block's words of `block_words`, summed over the blocks by
            // histogram_packed6_sum_blocks (or packed4); the table's counts to the counts.
            // SAFETY: TABLE kernels take one copy and block_words holds every block's words.
            unsafe { counters.store_words(block_words, thread::block_idx_x()) };
            counters.flush_table(counts);
        } else {
            counters.flush(counts, false);
        }
    }

    /// The body of the carry-table kernels at packing `$p` (`histogram_packed6_*` and
    /// `histogram_packed4_*`): [`count_packed`] with the mode's warp aggregation, and without the
    /// window test where the pass counts every bin (`first == 0`, `window == nbins`); a mode of
    /// another packing, or with a carry plane, counts nothing. A macro, not a function generic
    /// over the packing: a const generic cannot be a pattern, and a guard comparing with it
    /// compiled the kernels' dispatch differently. One copy of the counters, a constant: the
    /// table kernels hold their bins once a block, and with the copy count a kernel argument every
    /// value's address took a multiply by it (and, in the 4-bit kernels, a reload of it).
    macro_rules! count_with_table {
        ($t:ty, $p:ident, $input:ident, $n:ident, $counts:ident, $binning:ident, $mode:ident,
         $first:ident, $window:ident, $block_words:ident) => {{
            let (f, w) = ($first, $window);
            // One pass over every bin: the window test is left out.
            let whole = $first == 0 && $window == $binning.nbins;
            // SAFETY (all): forwarded contract.
            match mode_parts($mode) {
                ($p, false, false) if whole => unsafe {
                    count_packed::<$t, $p, false, false, true, true>(
                        $input,
                        $n,
                        $counts,
                        $binning,
                        1,
                        f,
                        w,
                        $block_words,
                    )
                },
                ($p, false, false) => unsafe {
                    count_packed::<$t, $p, false, false, true, false>(
                        $input,
                        $n,
                        $counts,
                        $binning,
                        1,
                        f,
                        w,
                        $block_words,
                    )
                },
                ($p, true, false) if whole => unsafe {
                    count_packed::<$t, $p, true, false, true, true>(
                        $input,
                        $n,
                        $counts,
                        $binning,
                        1,
                        f,
                        w,
                        $block_words,
                    )
                },
                ($p, true, false) => unsafe {
                    count_packed::<$t, $p, true, false, true, false>(
                        $input,
                        $n,
                        $counts,
                        $binning,
                        1,
                        f,
                        w,
                        $block_words,
                    )
                },
                _ => {}
            }
        }};
    }

    macro_rules! channel_kernels {
        ($($t:ty => $one:ident, $two:ident, $three:ident, $four:ident, $packed16:ident, $packed:ident, $packed6:ident, $packed4:ident);*) => {$(
            gpu_kernel! {
                #[doc = concat!("One channel of `", stringify!($t), "` values (the plain histogram); see the [module documentation](super).")]
                ///
                /// # Safety
                /// As the module's, with `channels = active = 1`, `phase = 0`, `packing = 0`.
                pub unsafe fn $one(input: *const u8, n: u64, counts: *mut u32, nbins: u32, lo: f32, hi: f32, scale: f32,
                                   active: u32, phase: u32, copies: u32) {
                    let _ = (active, phase);
                    let binning = Binning { nbins, lo, hi, scale };
                    // SAFETY: forwarded contract.
                    unsafe { count_channels::<$t, 1, 0>(input, n, counts, binning, 1, 0, copies) }
                }

                #[doc = concat!("Two interleaved channels of `", stringify!($t), "` values; see the [module documentation](super).")]
                ///
                /// # Safety
                /// As the module's, with `channels = 2`, `packing = 0`.
                pub unsafe fn $two(input: *const u8, n: u64, counts: *mut u32, nbins: u32, lo: f32, hi: f32, scale: f32,
                                   active: u32, phase: u32, copies: u32) {
                    let binning = Binning { nbins, lo, hi, scale };
                    // SAFETY: forwarded contract.
                    unsafe { count_channels::<$t, 2, 0>(input, n, counts, binning, active, phase, copies) }
                }

                #[doc = concat!("Three interleaved channels of `", stringify!($t), "` values; see the [module documentation](super).")]
                ///
                /// # Safety
                /// As the module's, with `channels = 3`, `packing = 0`.
                pub unsafe fn $three(input: *const u8, n: u64, counts: *mut u32, nbins: u32, lo: f32, hi: f32, scale: f32,
                                     active: u32, phase: u32, copies: u32) {
                    let binning = Binning { nbins, lo, hi, scale };
                    // SAFETY: forwarded contract.
                    unsafe { count_channels::<$t, 3, 0>(input, n, counts, binning, active, phase, copies) }
                }

                #[doc = concat!("Four interleaved channels of `", stringify!($t), "` values; see the [module documentation](super).")]
                ///
                /// # Safety
                /// As the module's, with `channels = 4`, `packing = 0`.
                pub unsafe fn $four(input: *const u8, n: u64, counts: *mut u32, nbins: u32, lo: f32, hi: f32, scale: f32,
                                    active: u32, phase: u32, copies: u32) {
                    let binning = Binning { nbins, lo, hi, scale };
                    // SAFETY: forwarded contract.
                    unsafe { count_channels::<$t, 4, 0>(input, n, counts, binning, active, phase, copies) }
                }

                #[doc = concat!("One channel of `", stringify!($t), "` values in 16-bit packed counters; see the [module documentation](super).")]
                ///
                /// # Safety
                /// As the module's, with `channels = 1` and `mode` a
                /// [`packed::mode`](crate::histogram::packed::mode) of packing 1 without a carry
                /// plane (any other counts nothing), counting only the bins `first..first + window`
                /// (`first + window <= nbins`, `window >= 1`) into `counts`, which holds `window`
                /// counters, and with `window` in place of `nbins` in the shared memory.
                pub unsafe fn $packed16(input: *const u8, n: u64, counts: *mut u32, nbins: u32, lo: f32, hi: f32, scale: f32,
                                        copies: u32, mode: u32, first: u32, window: u32) {
                    let binning = Binning { nbins, lo, hi, scale };
                    let (f, w) = (first, window);
                    // SAFETY (both): forwarded contract.
                    match mode_parts(mode) {
                        (1, false, false) => unsafe { count_packed::<$t, 1, false, false, false, false>(input, n, counts, binning, copies, f, w, core::ptr::null_mut()) },
                        (1, true, false) => unsafe { count_packed::<$t, 1, true, false, false, false>(input, n, counts, binning, copies, f, w, core::ptr::null_mut()) },
                        _ => {}
                    }
                }

                #[doc = concat!("One channel of `", stringify!($t), "` values in 8-bit packed counters, with or without a carry plane; see the [module documentation](super).")]
                ///
                /// # Safety
                /// As the module's, with `channels = 1` and `mode` a
                /// [`packed::mode`](crate::histogram::packed::mode) of packing 2 (any other counts
                /// nothing), counting only the bins `first..first + window` (`first + window <=
                /// nbins`, `window >= 1`) into `counts`, which holds `window` counters, and with
                /// `window` in place of `nbins` in the shared memory; with the mode's carry plane the
                /// launch provides [`carry_plane_bytes`](crate::histogram::packed::carry_plane_bytes)`(window)`
                /// more bytes of shared memory after the counters.
                pub unsafe fn $packed(input: *const u8, n: u64, counts: *mut u32, nbins: u32, lo: f32, hi: f32, scale: f32,
                                      copies: u32, mode: u32, first: u32, window: u32) {
                    let binning = Binning { nbins, lo, hi, scale };
                    let (f, w) = (first, window);
                    // SAFETY (all): forwarded contract.
                    match mode_parts(mode) {
                        (2, false, false) => unsafe { count_packed::<$t, 2, false, false, false, false>(input, n, counts, binning, copies, f, w, core::ptr::null_mut()) },
                        (2, true, false) => unsafe { count_packed::<$t, 2, true, false, false, false>(input, n, counts, binning, copies, f, w, core::ptr::null_mut()) },
                        (2, false, true) => unsafe { count_packed::<$t, 2, false, true, false, false>(input, n, counts, binning, copies, f, w, core::ptr::null_mut()) },
                        (2, true, true) => unsafe { count_packed::<$t, 2, true, true, false, false>(input, n, counts, binning, copies, f, w, core::ptr::null_mut()) },
                        _ => {}
                    }
                }

                #[doc = concat!("One channel of `", stringify!($t), "` values in 6-bit packed counters with their carry table; see the [module documentation](super).")]
                ///
                /// # Safety
                /// As the module's, with `channels = 1` and `mode` a
                /// [`packed::mode`](crate::histogram::packed::mode) of packing
                /// [`SIX_BIT_PACKING`](crate::histogram::packed::SIX_BIT_PACKING) without a carry
                /// plane (any other counts nothing), one copy of the counters a block (the table
                /// kernels take no `copies`), counting only the bins `first..first + window`
                /// (`first + window <= nbins`, `window >= 1`) into `counts`, which holds
                /// `window` counters, and with `window` in place of `nbins` in the shared memory; the
                /// launch provides [`carry_table_bytes`](crate::histogram::packed::carry_table_bytes)`(SIX_BIT_PACKING)`
                /// more bytes of shared memory after the counters. Each block stores its counters'
                /// words into its `words_for(window, SIX_BIT_PACKING)` words of `block_words` (which
                /// holds those of every block of the grid) and adds only its carry table's counts
                /// into `counts`: `histogram_packed6_sum_blocks` adds the digits.
                pub unsafe fn $packed6(input: *const u8, n: u64, counts: *mut u32, nbins: u32, lo: f32, hi: f32, scale: f32,
                                       mode: u32, first: u32, window: u32, block_words: *mut u32) {
                    let binning = Binning { nbins, lo, hi, scale };
                    count_with_table!($t, SIX_BIT_PACKING, input, n, counts, binning, mode, first, window, block_words)
                }

                #[doc = concat!("One channel of `", stringify!($t), "` values in 4-bit packed counters with their carry table; see the [module documentation](super).")]
                ///
                /// # Safety
                /// As the 6-bit kernel's (`histogram_packed6_*`), with packing
                /// [`FOUR_BIT_PACKING`](crate::histogram::packed::FOUR_BIT_PACKING) in the mode,
                /// [`carry_table_bytes`](crate::histogram::packed::carry_table_bytes)`(FOUR_BIT_PACKING)`
                /// bytes of shared memory after the counters, and `words_for(window,
                /// FOUR_BIT_PACKING)` words a block in `block_words`, which
                /// `histogram_packed4_sum_blocks` adds.
                pub unsafe fn $packed4(input: *const u8, n: u64, counts: *mut u32, nbins: u32, lo: f32, hi: f32, scale: f32,
                                       mode: u32, first: u32, window: u32, block_words: *mut u32) {
                    let binning = Binning { nbins, lo, hi, scale };
                    count_with_table!($t, FOUR_BIT_PACKING, input, n, counts, binning, mode, first, window, block_words)
                }
            }
        )*};
    }

    channel_kernels!(
        u8 => histogram_channels1_u8, histogram_channels2_u8, histogram_channels3_u8, histogram_channels4_u8,
              histogram_packed16_u8, histogram_packed_u8, histogram_packed6_u8, histogram_packed4_u8;
        u16 => histogram_channels1_u16, histogram_channels2_u16, histogram_channels3_u16, histogram_channels4_u16,
               histogram_packed16_u16, histogram_packed_u16, histogram_packed6_u16, histogram_packed4_u16;
        i32 => histogram_channels1_i32, histogram_channels2_i32, histogram_channels3_i32, histogram_channels4_i32,
               histogram_packed16_i32, histogram_packed_i32, histogram_packed6_i32, histogram_packed4_i32;
        f32 => histogram_channels1_f32, histogram_channels2_f32, histogram_channels3_f32, histogram_channels4_f32,
               histogram_packed16_f32, histogram_packed_f32, histogram_packed6_f32, histogram_packed4_f32
    );

    /// The body of the sum kernels of the carry-table counters of packing `P`
    /// (`histogram_packed6_sum_blocks`, `histogram_packed4_sum_blocks`): thread `x` of the grid's x
    /// dimension sums word `x` over the blocks `y, y + grid_dim_y, ..` for its `y`, and adds each
    /// of the word's digit sums into its counter with one global atomic where it is not zero.
    ///
    /// # Safety
    /// As the kernels'.
    #[inline(always)]
    unsafe fn sum_block_digits<const P: u32>(
        block_words: *const u32,
        blocks: u32,
        words: u32,
        counters: u32,
        counts: *mut u32,
    ) {
        let w = thread::block_idx_x() * thread::block_dim_x() + thread::thread_idx_x();
        if w >= words {
            return;
        }
        let (first, step) = (thread::block_idx_y(), thread::grid_dim_y());
        let mut sums = [0u32; 8];
        let mut add = #[inline(always)]
        |word: u32| {
            for (d, sum) in sums.iter_mut().enumerate().take(per_word(P) as usize) {
                *sum += digit_of(word, d as u32, P);
            }
        };
        // SAFETY: b < blocks and w < words: inside block_words.
        let at = |b: u32| unsafe { block_words.add(b as usize * words as usize + w as usize).read() };
        // Four blocks' words in flight at once.
        let mut b = first;
        while b + 3 * step < blocks {
            let four = [at(b), at(b + step), at(b + 2 * step), at(b + 3 * step)];
            four.into_iter().for_each(&mut add);
            b += 4 * step;
        }
        while b < blocks {
            add(at(b));
            b += step;
        }
        for (d, &sum) in sums.iter().enumerate().take(per_word(P) as usize) {
            let i = w * per_word(P) + d as u32;
            if i < counters && sum != 0 {
                // SAFETY: i < counters, inside counts; red.global is atomic.
                unsafe { atomic::global_add_u32(counts.add(i as usize), sum) };
            }
        }
    }

    gpu_kernel! {
        /// Adds the 6-bit digits that the `blocks` blocks of a `histogram_packed6_*` launch stored
        /// (`words` words each, block `b`'s at `b * words` of `block_words`) into `counts`, which
        /// holds `counters` counters (five to a word): thread `x` of the grid's x dimension sums
        /// word `x` over the blocks `y, y + grid_dim_y, ..` for its `y`, and adds each of the
        /// word's five sums into its counter with one global atomic where it is not zero. The
        /// words were written by the launch before on the stream (in L2: 132 blocks of 262,144
        /// bins are 27.7 MB), where each block's own flush had made a global atomic per counter
        /// (34.6 million at 262,144 bins, 0.05 ms of the H100's 0.18).
        ///
        /// # Safety
        /// `block_words` holds `blocks * words` words; `words = words_for(counters,
        /// SIX_BIT_PACKING)`; `counts` holds `counters` counters that nothing else writes but
        /// global atomics during the launch.
        pub unsafe fn histogram_packed6_sum_blocks(block_words: *const u32, blocks: u32, words: u32, counters: u32,
                                                   counts: *mut u32) {
            // SAFETY: forwarded contract.
            unsafe { sum_block_digits::<SIX_BIT_PACKING>(block_words, blocks, words, counters, counts) }
        }

        /// [`histogram_packed6_sum_blocks`] for the 4-bit digits (eight to a word) of a
        /// `histogram_packed4_*` launch.
        ///
        /// # Safety
        /// As `histogram_packed6_sum_blocks`'s, with `words = words_for(counters,
        /// FOUR_BIT_PACKING)`.
        pub unsafe fn histogram_packed4_sum_blocks(block_words: *const u32, blocks: u32, words: u32, counters: u32,
                                                   counts: *mut u32) {
            // SAFETY: forwarded contract.
            unsafe { sum_block_digits::<FOUR_BIT_PACKING>(block_words, blocks, words, counters, counts) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_of_a_vector_gets_the_channel_of_its_position() {
        for channels in 1..=MAX_CHANNELS {
            for phase in 0..channels {
                for per in [4u64, 8, 16] {
                    for vector in 0..50u64 {
                        let first = vector_phase(vector, per, phase, channels);
                        for k in 0..per as u32 {
                            let want = channel_of(vector * per + k as u64, phase, channels);
                            let got = match channels {
                                1 => add_mod::<1>(first, k),
                                2 => add_mod::<2>(first, k),
                                3 => add_mod::<3>(first, k),
                                _ => add_mod::<4>(first, k),
                            };
                            assert_eq!(got, want, "{channels} channels, phase {phase}, vector {vector}, k {k}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn channels_divide_the_16_byte_vector_so_their_phase_is_fixed_but_for_three() {
        for per in [4u64, 8, 16] {
            for channels in [1, 2, 4] {
                assert!((0..20).all(|v| vector_phase(v, per, 1 % channels, channels) == 1 % channels));
            }
            assert_ne!(vector_phase(1, per, 0, 3), 0);
        }
        // 2^64 - 1 is a multiple of 3.
        assert_eq!(channel_of(u64::MAX, 2, 3), 2);
    }

    #[test]
    fn packed_counters_take_one_channel_only() {
        assert!(supported(4, 0) && supported(1, 1) && supported(1, 2));
        assert!(!supported(2, 1) && !supported(0, 0) && !supported(5, 0) && !supported(1, 3));
        assert_eq!(shared_bytes(4 * 256, 0, 8), 4 * 256 * 8 * 4);
        assert_eq!(shared_bytes(65_536, 1, 1), 128 << 10);
    }
}
