//! The bucketed tier for bin counts too large for shared memory: three passes that partition the
//! values by the high bits of their bin into buckets of `2^shift` bins, each small enough to be
//! counted in one block's shared memory.
//!
//! 1. Bucket counts: the shared tier's kernel (`histogram_shared_*`) with `shift`, counting each
//!    value's bucket `bin >> shift` into `bucket_counts` (at most [`MAX_BUCKETS`] counters).
//! 2. Scatter (`histogram_scatter_*`): tiles of [`TILE`] values, [`SCATTER_THREADS`] threads
//!    per block; each tile ranks its values within their bucket in shared memory (one atomic per
//!    distinct bucket per warp step: lanes of equal buckets found by one ballot per bucket bit),
//!    reserves each bucket's run in global
//!    memory (`atom.global.add` on `cursors[bucket]`, after the exclusive scan of
//!    `bucket_counts`), stages the tile sorted by bucket in shared memory and writes every run
//!    contiguously: `keys` ends up holding each value's low `shift` bits (`u16`), bucket after
//!    bucket. Values that are not counted (`f32` outside the range, NaN) are dropped here.
//! 3. Bins (`histogram_bucket_bins`): the `keys` of all buckets split evenly over the blocks;
//!    each block counts the part of each bucket it holds in shared memory, then adds those
//!    `2^shift` counters into `bins`.
//!
//! # Safety
//! `input` holds `n` values (16-byte aligned), `n <= u32::MAX` (bucket offsets, cursors and key
//! positions are `u32`); `bins` holds `nbins` counters, `bucket_counts` and `cursors`
//! `((nbins - 1) >> shift) + 1 <= MAX_BUCKETS` counters, all zeroed before pass 1; `keys` holds
//! `n` `u16`; `1 <= shift <= 16`. The scatter runs with [`SCATTER_THREADS`] threads
//! per block; the bins pass with a block size that is a multiple of 32 and `2^shift * 4` bytes of
//! dynamic shared memory. Nothing else accesses these buffers during the passes.

/// PTX symbol of the bins pass.
pub const KERNEL_BUCKET_BINS: &str = "histogram_bucket_bins";

/// The most buckets: the scatter keeps a counter, offset and destination per bucket.
pub const MAX_BUCKETS: u32 = 256;

/// Threads per block of the scatter.
pub const SCATTER_THREADS: u32 = 512;

/// Values each scatter thread reads per tile: one 16-byte vector of `u8`, four of `f32`. With
/// 16 values in registers a scatter thread needs 115 registers, one 512-thread block per SM.
/// Measured on an H100 at 2^20 bins, 512-thread blocks took 0.832 ms for the three passes,
/// 256-thread blocks two per SM 1.020 ms (twice the tiles, twice the reservations in global
/// memory); at 262,144 bins 0.725 against 0.673 ms.
pub const VALUES_PER_THREAD: u32 = 16;

/// Values per scatter tile.
pub const TILE: u32 = SCATTER_THREADS * VALUES_PER_THREAD;

// A staged entry holds the bucket in its high half and the key in its low half.
const _: () = assert!(MAX_BUCKETS <= 1 << 16);

/// The smallest bucket width (in bits of the bin) with at most [`MAX_BUCKETS`] buckets of
/// `nbins` bins, and at least `min_shift`; `None` when that would need buckets wider than 16 bits
/// (keys are `u16`).
pub const fn bucket_shift(nbins: u32, min_shift: u32) -> Option<u32> {
    let mut shift = min_shift;
    while shift <= 16 {
        if ((nbins - 1) >> shift) < MAX_BUCKETS {
            return Some(shift);
        }
        shift += 1;
    }
    None
}

/// Buckets of `2^shift` bins that hold `nbins` bins.
pub const fn bucket_count(nbins: u32, shift: u32) -> u32 {
    ((nbins - 1) >> shift) + 1
}

#[cfg(target_arch = "nvptx64")]
pub(crate) mod device_code {
    use super::{MAX_BUCKETS, SCATTER_THREADS, TILE, VALUES_PER_THREAD};
    use crate::device::{atomic, mem, thread, warp};
    use crate::histogram::device_code::{add_bin, load_one};
    use crate::histogram::{Binning, Element, NO_BIN};
    use crate::{dynamic_shared_array, gpu_kernel, shared_array};

    /// Exclusive prefix sum of `read(0..len)` by one warp (`len <= MAX_BUCKETS`): calls
    /// `write(j, sum of read(0..j), read(j))` for every `j` and returns the total in every lane.
    /// Lane `l` handles entries `l * per_lane ..` with `per_lane = ceil(len / 32)`: a short table
    /// costs one step per lane, not `MAX_BUCKETS / 32`.
    ///
    /// # Safety
    /// The whole warp calls it together.
    #[inline(always)]
    pub(crate) unsafe fn warp_exclusive_scan(
        len: u32,
        read: impl Fn(u32) -> u32,
        mut write: impl FnMut(u32, u32, u32),
    ) -> u32 {
        let lane = warp::lane_id();
        let per_lane = len.div_ceil(warp::WARP_SIZE);
        let mut own = 0;
        for k in 0..per_lane {
            let j = lane * per_lane + k;
            if j < len {
                own += read(j);
            }
        }
        let mut inclusive = own;
        let mut d = 1;
        while d < warp::WARP_SIZE {
            // SAFETY: forwarded: the whole warp is here.
            let below = unsafe { warp::shuffle_idx_u32(inclusive, lane.saturating_sub(d)) };
            if lane >= d {
                inclusive += below;
            }
            d *= 2;
        }
        let mut run = inclusive - own;
        for k in 0..per_lane {
            let j = lane * per_lane + k;
            if j < len {
                let v = read(j);
                write(j, run, v);
                run += v;
            }
        }
        // SAFETY: forwarded: the whole warp is here.
        unsafe { warp::shuffle_idx_u32(inclusive, warp::WARP_SIZE - 1) }
    }

    /// Pass 2; see the [module documentation](super).
    ///
    /// # Safety
    /// As the module's.
    #[inline(always)]
    pub(crate) unsafe fn scatter<T: Element>(
        input: *const u8,
        n: u64,
        binning: Binning,
        shift: u32,
        bucket_counts: *const u32,
        cursors: *mut u32,
        keys: *mut u16,
    ) {
        let buckets = super::bucket_count(binning.nbins, shift);
        let counts = shared_array!(SCATTER_COUNTS: [u32; MAX_BUCKETS as usize]);
        let offsets = shared_array!(SCATTER_OFFSETS: [u32; MAX_BUCKETS as usize]);
        let starts = shared_array!(SCATTER_STARTS: [u32; MAX_BUCKETS as usize]);
        let bases = shared_array!(SCATTER_BASES: [u32; MAX_BUCKETS as usize]);
        let total = shared_array!(SCATTER_TOTAL: [u32; 1]);
        let stage = shared_array!(SCATTER_STAGE: [u32; TILE as usize]);
        let tid = thread::thread_idx_x();
        if tid < MAX_BUCKETS {
            // SAFETY: tid < MAX_BUCKETS; each thread zeroes its own counter.
            unsafe { counts.store(tid as usize, 0) };
        }
        if tid < warp::WARP_SIZE {
            // SAFETY: warp 0 runs the scan whole; j < buckets <= MAX_BUCKETS is inside
            // bucket_counts and bases.
            unsafe {
                warp_exclusive_scan(
                    buckets,
                    |j| *bucket_counts.add(j as usize),
                    |j, before, _| bases.store(j as usize, before),
                )
            };
        }
        // The counters are zero and the bucket bases written before any tile uses them.
        thread::sync_threads();
        let mask = (1u32 << shift) - 1;
        let lane = warp::lane_id();
        // Bits that tell buckets 0..=buckets apart (`buckets` itself marks lanes without a value).
        let bits = u32::BITS - buckets.leading_zeros();
        let tiles = n.div_ceil(TILE as u64);
        let mut tile = thread::block_idx_x() as u64;
        while tile < tiles {
            let first = tile * TILE as u64 + (tid * VALUES_PER_THREAD) as u64;
            let mut bins = [NO_BIN; VALUES_PER_THREAD as usize];
            if first + VALUES_PER_THREAD as u64 <= n {
                let mut k = 0;
                let mut put = |bin: u32, _check: bool| {
                    bins[k] = bin;
                    k += 1;
                };
                let mut v = 0;
                while v < T::SIZE {
                    // SAFETY: the 16 values from `first` lie inside the input, and 16 * SIZE
                    // bytes per thread keep each vector 16-byte aligned.
                    let words = unsafe {
                        mem::load_global_nc_v4_u32(input.add(((first * T::SIZE as u64) + 16 * v as u64) as usize))
                    };
                    crate::histogram::device_code::count_vector::<T>(words, &binning, &mut put);
                    v += 1;
                }
            } else {
                unroll16!(|k| {
                    let i = first + k as u64;
                    if i < n {
                        // SAFETY: i < n.
                        bins[k] = unsafe { load_one::<T>(input, i) }.bin_or_none(&binning);
                    }
                });
            }
            let mut ranks = [0u32; VALUES_PER_THREAD as usize];
            unroll16!(|k| {
                // Lanes without a value form a group of their own: bucket `buckets`, which no
                // counter holds.
                let bucket = if bins[k] == NO_BIN { buckets } else { bins[k] >> shift };
                // SAFETY: every thread of the block runs the same steps: the warp is converged.
                let peers = unsafe { warp::peers_by_ballot(bucket, bits) };
                let leader = peers.trailing_zeros();
                let mut base = 0;
                if lane == leader && bucket < buckets {
                    // SAFETY: bucket < buckets <= MAX_BUCKETS.
                    base = unsafe {
                        atomic::shared_fetch_add_u32(counts.shared_address() + 4 * bucket, peers.count_ones())
                    };
                }
                // SAFETY: converged, as above.
                let base = unsafe { warp::shuffle_idx_u32(base, leader) };
                ranks[k] = base + (peers & warp::lanemask_lt()).count_ones();
            });
            // Every rank of the tile is taken before the counts are scanned.
            thread::sync_threads();
            if tid < warp::WARP_SIZE {
                // SAFETY: warp 0 runs the scan whole; j < buckets is inside every table and
                // cursors; the reservation makes [start, start + count) this tile's alone.
                let sum = unsafe {
                    warp_exclusive_scan(
                        buckets,
                        |j| counts.load(j as usize),
                        |j, before, count| {
                            offsets.store(j as usize, before);
                            if count != 0 {
                                let reserved = atomic::global_fetch_add_u32(cursors.add(j as usize), count);
                                starts.store(j as usize, bases.load(j as usize) + reserved);
                            }
                        },
                    )
                };
                if tid == 0 {
                    // SAFETY: index 0 of a one-element array.
                    unsafe { total.store(0, sum) };
                }
            }
            // Offsets and destinations are written before the tile is staged.
            thread::sync_threads();
            unroll16!(|k| {
                if bins[k] != NO_BIN {
                    let bucket = bins[k] >> shift;
                    // SAFETY: offset + rank < the tile's count of kept values <= TILE; each slot
                    // is one value's alone (its rank is unique within the bucket).
                    unsafe {
                        let slot = offsets.load(bucket as usize) + ranks[k];
                        stage.store(slot as usize, (bucket << 16) | (bins[k] & mask));
                    }
                }
            });
            // The tile is staged before it is written out.
            thread::sync_threads();
            // SAFETY: index 0 of a one-element array, written before the barrier above.
            let kept = unsafe { total.load(0) };
            let mut i = tid;
            while i < kept {
                // SAFETY: i < kept <= TILE; the entry names a bucket of this tile, whose run
                // [start, start + count) was reserved for it, and i - offset < count.
                unsafe {
                    let entry = stage.load(i as usize);
                    let bucket = (entry >> 16) as usize;
                    let dst = starts.load(bucket) + i - offsets.load(bucket);
                    mem::store_global_u16(keys.add(dst as usize), entry & 0xFFFF);
                }
                i += SCATTER_THREADS;
            }
            if tid < MAX_BUCKETS {
                // SAFETY: tid < MAX_BUCKETS; no thread reads the counts until the barrier below.
                unsafe { counts.store(tid as usize, 0) };
            }
            // The stage is read and the counts reset before the next tile reuses them.
            thread::sync_threads();
            tile += thread::grid_dim_x() as u64;
        }
    }

    /// Calls `count(Some(i))` for each `i` in `start..end` this thread owns (`start + tid`, step
    /// the block size) and `count(None)` in lanes past the end while the rest of their warp
    /// counts.
    #[inline(always)]
    fn for_each_index(start: u64, end: u64, mut count: impl FnMut(Option<u64>)) {
        let threads = thread::block_dim_x() as u64;
        let mut i = start + thread::thread_idx_x() as u64;
        while i - (warp::lane_id() as u64) < end {
            count(if i < end { Some(i) } else { None });
            i += threads;
        }
    }

    gpu_kernel! {
        /// Pass 3; see the [module documentation](super).
        ///
        /// # Safety
        /// As the module's.
        pub unsafe fn histogram_bucket_bins(keys: *const u16, bucket_counts: *const u32, bins: *mut u32, nbins: u32,
                                            shift: u32, aggregate: u32) {
            // SAFETY (both): forwarded contract.
            if aggregate != 0 {
                unsafe { bucket_bins::<true>(keys, bucket_counts, bins, nbins, shift) }
            } else {
                unsafe { bucket_bins::<false>(keys, bucket_counts, bins, nbins, shift) }
            }
        }
    }

    /// Pass 3's body, with warp aggregation chosen at compile time.
    ///
    /// # Safety
    /// As the module's.
    #[inline(always)]
    unsafe fn bucket_bins<const AGGREGATE: bool>(
        keys: *const u16,
        bucket_counts: *const u32,
        bins: *mut u32,
        nbins: u32,
        shift: u32,
    ) {
        {
            let buckets = super::bucket_count(nbins, shift);
            let width = 1u32 << shift;
            // SAFETY: the launch provides 2^shift * 4 bytes of dynamic shared memory.
            let local = unsafe { dynamic_shared_array!(HISTOGRAM_BUCKET_BINS: u32, width as usize) };
            let bases = shared_array!(BUCKET_BINS_BASES: [u32; MAX_BUCKETS as usize + 1]);
            let tid = thread::thread_idx_x();
            if tid < warp::WARP_SIZE {
                // SAFETY: warp 0 runs the scan whole; j < buckets is inside both tables.
                let sum = unsafe {
                    warp_exclusive_scan(
                        buckets,
                        |j| *bucket_counts.add(j as usize),
                        |j, before, _| bases.store(j as usize, before),
                    )
                };
                if tid == 0 {
                    // SAFETY: buckets <= MAX_BUCKETS.
                    unsafe { bases.store(buckets as usize, sum) };
                }
            }
            // The bases are written before any thread reads them.
            thread::sync_threads();
            // SAFETY: written before the barrier above.
            let kept = unsafe { bases.load(buckets as usize) } as u64;
            // Equal shares, in whole 16-byte vectors of keys.
            let share = kept.div_ceil(thread::grid_dim_x() as u64).next_multiple_of(8);
            let (c0, c1) = (
                (thread::block_idx_x() as u64 * share).min(kept),
                ((thread::block_idx_x() as u64 + 1) * share).min(kept),
            );
            let threads = thread::block_dim_x() as usize;
            let add = |key: u32, k: u32| {
                // SAFETY: key < 2^shift = len; red.shared is atomic.
                unsafe { atomic::shared_add_u32(local.address_of(key as usize), k) }
            };
            for bucket in 0..buckets {
                // SAFETY: bucket + 1 <= buckets; written before the first barrier.
                let (b0, b1) = unsafe { (bases.load(bucket as usize) as u64, bases.load(bucket as usize + 1) as u64) };
                let (s, e) = (c0.max(b0), c1.min(b1));
                if s >= e {
                    continue;
                }
                for i in (tid as usize..width as usize).step_by(threads) {
                    // SAFETY: i < len; each thread zeroes its own elements.
                    unsafe { local.store(i, 0) };
                }
                // Every counter is zero before any thread adds to it.
                thread::sync_threads();
                let (a0, a1) = (s.next_multiple_of(8).min(e), (e / 8 * 8).max(s.next_multiple_of(8).min(e)));
                let key_at = |i: Option<u64>| match i {
                    // SAFETY: i < e <= kept <= n: inside `keys`.
                    Some(i) => (unsafe { load_one::<u16>(keys.cast(), i) }) as u32,
                    None => NO_BIN,
                };
                // SAFETY (all three loops): the warp is converged at every add_bin (for_each_index),
                // and every key is below 2^shift.
                for_each_index(s, a0, |i| unsafe { add_bin::<AGGREGATE>(key_at(i), true, add) });
                for_each_index(a0 / 8, a1 / 8, |v| match v {
                    Some(v) => {
                        // SAFETY: 8 * v + 8 <= a1 <= kept: the vector lies inside `keys`, 16-byte aligned.
                        let words = unsafe { mem::load_global_nc_v4_u32(keys.cast::<u8>().add(16 * v as usize)) };
                        // SAFETY: converged, as above; a key is below 2^shift.
                        let mut each = |key: u16| unsafe { add_bin::<AGGREGATE>(key as u32, false, add) };
                        for w in words {
                            u16::for_each_in_word(w, &mut each);
                        }
                    }
                    None => {
                        for _ in 0..8 {
                            // SAFETY: converged, as above.
                            unsafe { add_bin::<AGGREGATE>(NO_BIN, true, add) };
                        }
                    }
                });
                for_each_index(a1, e, |i| unsafe { add_bin::<AGGREGATE>(key_at(i), true, add) });
                // Every add of this block has landed before the counters are read.
                thread::sync_threads();
                let first = bucket << shift;
                let last = width.min(nbins - first) as usize;
                for i in (tid as usize..last).step_by(threads) {
                    // SAFETY: i < width = len; first + i < nbins is inside `bins`.
                    unsafe {
                        let count = local.load(i);
                        if count != 0 {
                            atomic::global_add_u32(bins.add(first as usize + i), count);
                        }
                    }
                }
                // The counters are read before the next bucket zeroes them.
                thread::sync_threads();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_shift_is_the_narrowest_that_keeps_at_most_256_buckets() {
        assert_eq!(bucket_shift(1 << 20, 12), Some(12));
        assert_eq!(bucket_count(1 << 20, 12), 256);
        assert_eq!(bucket_shift((1 << 20) + 1, 12), Some(13));
        assert_eq!(bucket_shift(1 << 24, 12), Some(16));
        assert_eq!(bucket_shift((1 << 24) + 1, 12), None);
        assert_eq!(bucket_shift(1000, 14), Some(14));
        assert_eq!(bucket_count(1000, 14), 1);
        assert_eq!(bucket_count(1 << 14, 14), 1);
        assert_eq!(bucket_count((1 << 14) + 1, 14), 2);
    }

    #[test]
    fn a_scatter_tile_is_the_block_times_16_values() {
        assert_eq!(TILE, 8192);
    }
}
