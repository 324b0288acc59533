// Over 600 lines with its documentation: about 420 lines of code; the rest are doc comments (launch
// contracts, the algorithm) and 70 lines of unit tests.
//! The sorted tier for bin counts too large for one block's shared memory: two passes, each value
//! read once, its bucket's low bits written once and read once, and no pass over the whole input
//! just to count.
//!
//! 1. Tile sort (`histogram_tile_sort_*`): a persistent grid of blocks of `threads` threads; each
//!    block takes tiles of [`tile_values`]`(threads, size)` consecutive values, ranks each value within
//!    its bucket (`bin >> shift`) in shared memory (`atom.shared` per value, with the lanes of the
//!    warp's two leading buckets merged into one atomic each, so that skewed and constant inputs
//!    do not serialize on one counter), stages the tile's keys (the low `shift` bits of each bin, `u16`) sorted by
//!    bucket in shared memory, and writes them back to the tile's own region of `keys` in 16-byte
//!    stores. Row `b` of `table` gets, at column `tile`, where bucket `b` starts in the tile's
//!    region (row `buckets`: how many values the tile kept); `totals[b]` gets the bucket's count.
//!    Values that are not counted (`f32` outside the range, NaN) are dropped here.
//! 2. Bins (`histogram_sorted_bins`): a grid of `grid` blocks (the host launches whole waves of
//!    the blocks that stay resident together, two of them). Bucket `b` gets [`parts_of`]`(totals[b], kept, parts)`
//!    blocks (a share of `parts` in proportion to its values: a constant input spreads its one
//!    bucket over every block), `parts` being the [`largest_share`] whose blocks fit the grid;
//!    each block counts a contiguous range of its bucket's tiles ([`part_tiles`]); blocks past
//!    the last bucket's share exit. A block counts its bucket's
//!    segment of each of its tiles into `2^shift` shared counters, flattening the segments of up to
//!    `blockDim` tiles at a time into one index space (a block-wide scan of their 16-byte vector
//!    counts) so that every thread reads a 16-byte vector per step whatever the segments' lengths,
//!    then adds its non-zero counters into `bins`.
//!
//! # Safety
//! `input` holds `n` values (16-byte aligned); `n <= u32::MAX`; `keys` holds
//! [`keys_len`]`(n, tile)` `u16` (16-byte aligned), `table` [`table_len`]`(buckets, tiles)` `u32`,
//! `totals` `buckets` zeroed `u32` and `bins` `nbins` counters, where `buckets =
//! bucket_count(nbins, shift) <= MAX_BUCKETS`, `1 <= shift <= 16`, `tile = tile_values(threads, size)`
//! for the tile sort's block size `threads` (a multiple of 32 up to [`MAX_THREADS`]) and the launch
//! provides [`stage_bytes`]`(threads, size)` of dynamic shared memory. The bins pass gets the same `n`,
//! `shift` and `tile`, a block size that is a multiple of 32 up to [`MAX_THREADS`], `2^shift * 4`
//! bytes of dynamic shared memory and a grid of at least `buckets + 1` blocks. Nothing else
//! accesses these buffers during the passes.

pub use super::bucketed::{MAX_BUCKETS, bucket_count, bucket_shift};

/// PTX symbol of the bins pass.
pub const KERNEL_SORTED_BINS: &str = "histogram_sorted_bins";

/// Values each tile-sort thread holds in registers per tile, by the values' size in bytes: one
/// 16-byte vector of `u8` (16 values), of `u16` (8), two of `i32` or `f32` (8). Sixteen `f32`
/// per thread took 91 registers (one 512-thread block per SM); eight leave room for two.
pub const fn values_per_thread(size: u32) -> u32 {
    if size == 1 { 16 } else { 8 }
}

/// The most values a tile-sort thread holds.
pub const MAX_VALUES_PER_THREAD: u32 = 16;

/// The largest block of either pass (the bins pass keeps per-thread tables of this length).
pub const MAX_THREADS: u32 = 1024;

/// Values per tile for tile-sort blocks of `threads` threads over values of `size` bytes.
pub const fn tile_values(threads: u32, size: u32) -> u32 {
    threads * values_per_thread(size)
}

/// Dynamic shared memory of a tile-sort block of `threads` threads: the staged `u16` keys, then
/// each value's `u16` rank within its bucket.
pub const fn stage_bytes(threads: u32, size: u32) -> u32 {
    tile_values(threads, size) * 4
}

/// Tiles of `tile` values that hold `n` values.
pub const fn tiles(n: u64, tile: u32) -> u64 {
    n.div_ceil(tile as u64)
}

/// `u16` keys the tile sort writes for `n` values: every tile's whole region.
pub const fn keys_len(n: u64, tile: u32) -> u64 {
    tiles(n, tile) * tile as u64
}

/// Entries of the tile table: one row per bucket and one for the kept counts, one column per tile.
pub const fn table_len(buckets: u32, tiles: u64) -> u64 {
    (buckets as u64 + 1) * tiles
}

/// Blocks of the bins pass that count a bucket of `total` values out of `kept` (all buckets
/// together), when `parts` blocks share the work: `ceil(parts * total / kept)`, none for an empty
/// bucket. Over all buckets they add up to at most `parts + buckets`.
pub const fn parts_of(total: u32, kept: u32, parts: u32) -> u32 {
    if total == 0 { 0 } else { ((parts as u64 * total as u64).div_ceil(kept as u64)) as u32 }
}

/// The share the bins pass's `grid` blocks split the values by: the largest `parts` from
/// `grid - buckets` to `grid` whose blocks, `need(parts)` (the sum of [`parts_of`] over the
/// buckets, which grows with `parts`), fit the grid. `grid - buckets` always fits, but the
/// rounding up of each bucket's share leaves blocks idle when few buckets hold most values
/// (a zipf input's first bucket got 128 of 264 blocks with it, 148 with this). At most
/// `log2(buckets + 1) + 1` calls of `need`.
#[inline(always)]
pub fn largest_share(grid: u32, buckets: u32, mut need: impl FnMut(u32) -> u32) -> u32 {
    // need(lo) <= grid; hi is the first share known not to fit (or past grid).
    let (mut lo, mut hi) = (grid - buckets, grid + 1);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if need(mid) <= grid {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The tiles `[first, end)` that part `part` of `parts` of a bucket counts, out of `tiles`.
pub const fn part_tiles(tiles: u64, part: u32, parts: u32) -> (u64, u64) {
    (tiles * part as u64 / parts as u64, tiles * (part as u64 + 1) / parts as u64)
}

#[cfg(target_arch = "nvptx64")]
pub(crate) mod device_code {
    use super::{
        MAX_BUCKETS, MAX_THREADS, MAX_VALUES_PER_THREAD, bucket_count, part_tiles, parts_of, values_per_thread,
    };
    use crate::device::{atomic, mem, thread, warp};
    use crate::histogram::bucketed::device_code::warp_exclusive_scan;
    use crate::histogram::device_code::{count_vector, load_one};
    use crate::histogram::{Binning, Element, NO_BIN};
    use crate::{dynamic_shared_array, gpu_kernel, shared_array};

    /// This lane's rank among the values of its `bucket` in the tile: the counter of `bucket` (at
    /// shared address `counters + 4 * bucket`) before this lane's value, plus the lanes of its
    /// group below it. The lanes that share lane 0's bucket form one group, those that share the
    /// highest other lane's a second; every other lane is a group of its own. One lane of each
    /// group (lane 0, that highest lane, the lone lane) reserves the group's ranks with one atomic
    /// (`atom.shared` returns distinct values to same-address lanes), and the group reads its base
    /// from it with one shuffle. Skewed inputs put most lanes of a warp in one bucket, which one of
    /// the two groups then catches: a constant input costs one atomic per warp step.
    /// `bucket == buckets` (a lane without a value) reserves nothing; its rank is meaningless.
    ///
    /// # Safety
    /// The whole warp calls it together; `counters` addresses `buckets` `u32` counters of this
    /// block's shared memory.
    #[inline(always)]
    unsafe fn rank_in_bucket(bucket: u32, buckets: u32, counters: u32) -> u32 {
        let lane = warp::lane_id();
        // SAFETY (shuffles and ballots): forwarded: the whole warp is here. Nothing between them
        // branches: LLVM does not know that they are convergent, and duplicated the shuffles
        // after a conditional atomic into both arms (divergent shuffles, 4x slower pass).
        let first = unsafe { warp::shuffle_idx_u32(bucket, 0) };
        let in_a = bucket == first;
        let a = unsafe { warp::ballot(in_a) };
        // The highest lane outside the first group (clz of 0 is 32: lane 31, which is then in the
        // first group and leads nothing).
        let second_lane = 31u32.wrapping_sub((!a).leading_zeros()) & 31;
        let second = unsafe { warp::shuffle_idx_u32(bucket, second_lane) };
        let in_b = !in_a & (bucket == second);
        let b = unsafe { warp::ballot(in_b) };
        // A third group (the highest lane outside both) cost 11% at 2^20 uniform bins and
        // gained nothing on zipf values: the pass is bound by its instructions.
        let group = pick(in_a, a, pick(in_b, b, 1u32.wrapping_shl(lane)));
        let leader = pick(in_a, 0, pick(in_b, second_lane, lane));
        let reserves = (leader == lane) & (bucket < buckets);
        // SAFETY: where it runs, bucket < buckets: inside the counters.
        let old = unsafe { atomic::shared_fetch_add_u32_if(reserves, counters + 4 * bucket, group.count_ones()) };
        let base = unsafe { warp::shuffle_idx_u32(old, leader) };
        base + (group & warp::lanemask_lt()).count_ones()
    }

    /// `if c { x } else { y }` as a select, not a branch.
    #[inline(always)]
    fn pick(c: bool, x: u32, y: u32) -> u32 {
        let m = (c as u32).wrapping_neg();
        (x & m) | (y & !m)
    }

    /// Pass 1; see the [module documentation](super).
    ///
    /// # Safety
    /// As the module's.
    #[inline(always)]
    pub(crate) unsafe fn tile_sort<T: Element>(
        input: *const u8,
        n: u64,
        binning: Binning,
        shift: u32,
        keys: *mut u16,
        table: *mut u32,
        totals: *mut u32,
    ) {
        let buckets = bucket_count(binning.nbins, shift);
        let threads = thread::block_dim_x();
        let vpt = values_per_thread(T::SIZE);
        let tile_len = super::tile_values(threads, T::SIZE);
        let tiles = super::tiles(n, tile_len);
        let counts = shared_array!(SORT_COUNTS: [u32; MAX_BUCKETS as usize]);
        let offsets = shared_array!(SORT_OFFSETS: [u32; MAX_BUCKETS as usize + 1]);
        let block_totals = shared_array!(SORT_BLOCK_TOTALS: [u32; MAX_BUCKETS as usize]);
        // SAFETY: the launch provides stage_bytes(threads, SIZE) = tile_len * 4 bytes: the stage,
        let stage = unsafe { dynamic_shared_array!(SORT_STAGE: u32, (tile_len / 2) as usize) };
        // then the ranks.
        let ranks = unsafe {
            crate::device::shared::DynamicSharedArray::<u32>::from_shared_address(
                stage.address_of(tile_len as usize / 2),
                (tile_len / 2) as usize,
            )
        };
        let tid = thread::thread_idx_x();
        let mut i = tid;
        while i < MAX_BUCKETS {
            // SAFETY: i < MAX_BUCKETS; each thread zeroes its own counters.
            unsafe {
                counts.store(i as usize, 0);
                block_totals.store(i as usize, 0);
            }
            i += threads;
        }
        // The counters are zero before any tile ranks into them.
        thread::sync_threads();
        let mask = (1u32 << shift) - 1;
        // Vectors of a tile; thread `tid` reads vectors `v * threads + tid`: every load coalesced.
        let tile_vectors = (tile_len as u64) / T::PER_VECTOR;
        let vectors = (vpt as u64 / T::PER_VECTOR) as u32;
        let step = threads as u64;
        // Whether this thread's vectors of `tile` are all whole (its last, its highest, is), and
        // if so its first vector's index.
        let whole = |tile: u64| {
            let first = tile * tile_vectors + tid as u64;
            ((first + (vectors as u64 - 1) * step + 1) * T::PER_VECTOR <= n, first)
        };
        // The next tile's words are loaded while this one is ranked, staged and written out.
        let load = |first: u64| {
            // SAFETY (both): the caller checked that this thread's vectors lie inside the input;
            // each is 16-byte aligned. Constant indices keep the words in registers.
            let a = unsafe { mem::load_global_nc_v4_u32(input.add(16 * first as usize)) };
            let b = if vectors > 1 {
                unsafe { mem::load_global_nc_v4_u32(input.add(16 * (first + step) as usize)) }
            } else {
                [0; 4]
            };
            [a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3]]
        };
        let mut tile = thread::block_idx_x() as u64;
        let mut next = [0u32; 8];
        let (mut next_whole, first) = whole(tile);
        if tile < tiles && next_whole {
            next = load(first);
        }
        while tile < tiles {
            let (is_whole, first) = (next_whole, whole(tile).1);
            let mut bins = [NO_BIN; MAX_VALUES_PER_THREAD as usize];
            if is_whole {
                let mut k = 0;
                let mut put = |bin: u32, _check: bool| {
                    bins[k] = bin;
                    k += 1;
                };
                count_vector::<T>([next[0], next[1], next[2], next[3]], &binning, &mut put);
                if vectors > 1 {
                    count_vector::<T>([next[4], next[5], next[6], next[7]], &binning, &mut put);
                }
            } else {
                unroll16!(|k| {
                    if (k as u32) < vpt {
                        let v = k as u64 / T::PER_VECTOR;
                        let i = (first + v * step) * T::PER_VECTOR + k as u64 % T::PER_VECTOR;
                        if i < n {
                            // SAFETY: i < n.
                            bins[k] = unsafe { load_one::<T>(input, i) }.bin_or_none(&binning);
                        }
                    }
                });
            }
            let following = tile + thread::grid_dim_x() as u64;
            let (w, f) = whole(following);
            next_whole = w;
            if following < tiles && next_whole {
                next = load(f);
            }
            unroll16!(|k| {
                if (k as u32) < vpt {
                    // Lanes without a value form a group of their own: bucket `buckets`, which no
                    // counter holds.
                    let bucket = if bins[k] == NO_BIN { buckets } else { bins[k] >> shift };
                    // SAFETY: every thread of the block runs the same steps: the warp is converged;
                    // the counters hold MAX_BUCKETS >= buckets entries.
                    let rank = unsafe { rank_in_bucket(bucket, buckets, counts.shared_address()) };
                    // SAFETY: k * threads + tid < tile_len: this thread's own slot of the ranks,
                    // read back by this thread alone. Ranks wait in shared memory, not registers:
                    // 64 registers instead of 86 keep two 512-thread blocks per SM.
                    unsafe { ranks.store_u16(k * threads as usize + tid as usize, rank) };
                }
            });
            // Every rank of the tile is taken before the counts are scanned.
            thread::sync_threads();
            if tid < warp::WARP_SIZE {
                // SAFETY: warp 0 runs the scan whole; j < buckets is inside counts, offsets,
                // totals and row j of the table (column tile < tiles). Each lane reads and then
                // zeroes its own counters, which no other thread touches before the next barrier.
                let kept = unsafe {
                    warp_exclusive_scan(
                        buckets,
                        |j| counts.load(j as usize),
                        |j, before, count| {
                            offsets.store(j as usize, before);
                            *table.add((j as u64 * tiles + tile) as usize) = before;
                            if count != 0 {
                                block_totals.store(j as usize, block_totals.load(j as usize) + count);
                                counts.store(j as usize, 0);
                            }
                        },
                    )
                };
                if tid == 0 {
                    // SAFETY: buckets <= MAX_BUCKETS; row `buckets` of the table.
                    unsafe {
                        offsets.store(buckets as usize, kept);
                        *table.add((buckets as u64 * tiles + tile) as usize) = kept;
                    }
                }
            }
            // Offsets are written before the tile is staged.
            thread::sync_threads();
            unroll16!(|k| {
                if (k as u32) < vpt && bins[k] != NO_BIN {
                    // SAFETY: offset + rank < the tile's kept count <= tile_len = 2 * stage.len(); each
                    // slot is one value's alone (its rank is unique within the bucket).
                    unsafe {
                        stage.store_u16(
                            (offsets.load((bins[k] >> shift) as usize)
                                + ranks.load_u16(k * threads as usize + tid as usize))
                                as usize,
                            bins[k] & mask,
                        )
                    };
                }
            });
            // The tile is staged before it is written out.
            thread::sync_threads();
            // SAFETY: written before the barrier above.
            let kept = unsafe { offsets.load(buckets as usize) };
            let region = tile * tile_len as u64;
            let mut j = tid;
            while j < kept.div_ceil(8) {
                // SAFETY: 8 * j + 8 <= tile_len: words 4j..4j+4 are inside the stage, and keys
                // region..region + tile_len is this tile's alone, inside keys_len(n, tile_len),
                // 16-byte aligned (tile_len is a multiple of 8).
                unsafe {
                    let words = stage.load4_u32(4 * j as usize);
                    mem::store_global_v4_u32(keys.cast::<u8>().add(2 * (region + 8 * j as u64) as usize), words);
                }
                j += threads;
            }
            // The next tile ranks, scans and stages only after its own first barrier, which every
            // thread reaches after writing this tile out.
            tile = following;
        }
        // Warp 0's last additions to the block's totals are done before other threads read them.
        thread::sync_threads();
        let mut j = tid;
        while j < buckets {
            // SAFETY: j < buckets <= MAX_BUCKETS, inside block_totals and totals.
            unsafe {
                let total = block_totals.load(j as usize);
                if total != 0 {
                    atomic::global_add_u32(totals.add(j as usize), total);
                }
            }
            j += threads;
        }
    }

    /// Exclusive prefix sum of one `u32` per thread over the block: returns this thread's sum of
    /// the values of the threads below it, and the block's total. `sums` holds 33 words.
    ///
    /// # Safety
    /// Every thread of the block calls it together (it has two barriers); the block size is a
    /// multiple of 32; `sums` is not otherwise accessed between the barrier before the call and
    /// the next barrier after it.
    #[inline(always)]
    unsafe fn block_exclusive_scan(value: u32, sums: crate::device::shared::SharedArray<u32, 33>) -> (u32, u32) {
        let lane = warp::lane_id();
        let warp_id = thread::thread_idx_x() / warp::WARP_SIZE;
        let warps = thread::block_dim_x() / warp::WARP_SIZE;
        let mut inclusive = value;
        let mut d = 1;
        while d < warp::WARP_SIZE {
            // SAFETY: forwarded: the whole block, hence the whole warp, is here.
            let below = unsafe { warp::shuffle_idx_u32(inclusive, lane.saturating_sub(d)) };
            if lane >= d {
                inclusive += below;
            }
            d *= 2;
        }
        if lane == warp::WARP_SIZE - 1 {
            // SAFETY: warp_id < 32; one writer per word.
            unsafe { sums.store(warp_id as usize, inclusive) };
        }
        // Every warp's total is written before warp 0 scans them.
        thread::sync_threads();
        if warp_id == 0 {
            // SAFETY: lane < 32; each lane reads, then writes, its own word; lane 31 the 33rd.
            unsafe {
                let own = if lane < warps { sums.load(lane as usize) } else { 0 };
                let mut run = own;
                let mut d = 1;
                while d < warp::WARP_SIZE {
                    let below = warp::shuffle_idx_u32(run, lane.saturating_sub(d));
                    if lane >= d {
                        run += below;
                    }
                    d *= 2;
                }
                sums.store(lane as usize, run - own);
                if lane == warp::WARP_SIZE - 1 {
                    sums.store(32, run);
                }
            }
        }
        // The warps' bases and the total are written before any thread reads them.
        thread::sync_threads();
        // SAFETY: written before the barrier above.
        unsafe { (sums.load(warp_id as usize) + inclusive - value, sums.load(32)) }
    }

    /// Pass 2's body; see the [module documentation](super).
    ///
    /// # Safety
    /// As the module's.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn sorted_bins(
        keys: *const u16,
        table: *const u32,
        totals: *const u32,
        bins: *mut u32,
        nbins: u32,
        shift: u32,
        n: u64,
        tile_len: u32,
    ) {
        let buckets = bucket_count(nbins, shift);
        let width = 1u32 << shift;
        // SAFETY: the launch provides 2^shift * 4 bytes of dynamic shared memory.
        let local = unsafe { dynamic_shared_array!(SORTED_BINS: u32, width as usize) };
        let job = shared_array!(SORTED_JOB: [u32; 4]);
        let seg_range = shared_array!(SORTED_SEG_RANGE: [u32; MAX_THREADS as usize]);
        let seg_first = shared_array!(SORTED_SEG_FIRST: [u32; MAX_THREADS as usize + 1]);
        let sums = shared_array!(SORTED_SCAN_SUMS: [u32; 33]);
        let (tid, threads) = (thread::thread_idx_x(), thread::block_dim_x());
        let block = thread::block_idx_x();
        if tid == 0 {
            // SAFETY: index 0 of 4; no other thread touches the job before the next barrier.
            unsafe { job.store(0, u32::MAX) };
        }
        // The job is marked unassigned before warp 0 may assign it.
        thread::sync_threads();
        if tid < warp::WARP_SIZE {
            let grid = thread::grid_dim_x();
            // SAFETY: warp 0 runs every scan whole; j < buckets is inside totals. At most one
            // bucket's range of blocks holds this block, so one lane at most writes the job.
            unsafe {
                let kept = warp_exclusive_scan(buckets, |j| *totals.add(j as usize), |_, _, _| {});
                // Every block computes the same share from the same totals.
                let parts = super::largest_share(grid, buckets, |p| {
                    warp_exclusive_scan(buckets, |j| parts_of(*totals.add(j as usize), kept, p), |_, _, _| {})
                });
                warp_exclusive_scan(
                    buckets,
                    |j| parts_of(*totals.add(j as usize), kept, parts),
                    |j, before, count| {
                        if before <= block && block - before < count {
                            job.store(0, j);
                            job.store(1, block - before);
                            job.store(2, count);
                        }
                    },
                );
            }
        }
        // The job is written before every thread reads it.
        thread::sync_threads();
        // SAFETY: written before the barrier above.
        let (bucket, part, parts) = unsafe { (job.load(0), job.load(1), job.load(2)) };
        if bucket == u32::MAX {
            // The whole block leaves: no value left for it (block-uniform, no barrier follows).
            return;
        }
        let mut i = tid;
        while i < width {
            // SAFETY: i < width = len; each thread zeroes its own counters.
            unsafe { local.store(i as usize, 0) };
            i += threads;
        }
        let tiles = super::tiles(n, tile_len);
        let (first_tile, end_tile) = part_tiles(tiles, part, parts);
        let row = bucket as u64 * tiles;
        // Locates flat vector `i` of the chunk that starts at tile `chunk`: the key vector's index
        // in `keys` and the segment's bounds [s, e) relative to its vector's first key. Segment
        // `lo` is tile `chunk + lo`'s: no table of tiles, so that three blocks fit an SM.
        let locate = |i: u32, segments: u32, chunk: u64| -> (u64, u32, u32) {
            let (mut lo, mut hi) = (0u32, segments);
            // seg_first[lo] <= i < seg_first[hi]: the largest segment starting at or before i.
            while hi - lo > 1 {
                let mid = (lo + hi) / 2;
                // SAFETY: mid < segments <= threads <= MAX_THREADS; written before the chunk's
                // barrier.
                if unsafe { seg_first.load(mid as usize) } <= i {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            // SAFETY: lo < threads; written before the chunk's barrier.
            let (range, start) = unsafe { (seg_range.load(lo as usize), seg_first.load(lo as usize)) };
            let (s, e) = (range & 0xFFFF, range >> 16);
            let v = s / 8 + (i - start);
            ((chunk + lo as u64) * tile_len as u64 + 8 * v as u64, s.saturating_sub(8 * v), e - 8 * v)
        };
        let add_vector = |words: [u32; 4], s: u32, e: u32| {
            let mut k = 0;
            let mut each = |key: u16| {
                if s <= k && k < e {
                    // SAFETY: key < 2^shift = len; red.shared is atomic.
                    unsafe { atomic::shared_add_u32(local.address_of(key as usize), 1) };
                }
                k += 1;
            };
            for w in words {
                u16::for_each_in_word(w, &mut each);
            }
        };
        // Every counter is zero before any thread adds to it; and the first chunk's tables are
        // written only after this.
        thread::sync_threads();
        let mut chunk = first_tile;
        while chunk < end_tile {
            let t = chunk + tid as u64;
            let mut vectors = 0;
            if t < end_tile {
                // SAFETY: t < tiles and bucket + 1 <= buckets: both entries are inside the table;
                // tid < MAX_THREADS. Starts and kept counts are at most tile_len <= 2^14.
                unsafe {
                    let s = *table.add((row + t) as usize);
                    let e = *table.add((row + tiles + t) as usize);
                    if s < e {
                        vectors = e.div_ceil(8) - s / 8;
                    }
                    seg_range.store(tid as usize, s | (e << 16));
                }
            }
            // SAFETY: the whole block is here; sums is used by the scan alone.
            let (first, total) = unsafe { block_exclusive_scan(vectors, sums) };
            // SAFETY: tid < MAX_THREADS; the entry at `threads` closes the last segment (and every
            // entry past the chunk's segments holds the total too).
            unsafe {
                seg_first.store(tid as usize, first);
                if tid == 0 {
                    seg_first.store(threads as usize, total);
                }
            }
            // Every segment of the chunk is described before any thread locates a vector in it.
            thread::sync_threads();
            let mut i = tid;
            // Segments of this chunk: entries past them start at `total`, like seg_first[threads].
            let segments = (end_tile - chunk).min(threads as u64) as u32;
            let load = |at: u64| {
                // SAFETY: the vector lies inside a tile's region of keys (v < ceil(e / 8) and
                // e <= tile_len, a multiple of 8), 16-byte aligned.
                unsafe { mem::load_global_nc_v4_u32(keys.cast::<u8>().add(2 * at as usize)) }
            };
            // Four vectors in flight per thread.
            while i + 3 * threads < total {
                let (a, sa, ea) = locate(i, segments, chunk);
                let (b, sb, eb) = locate(i + threads, segments, chunk);
                let (c, sc, ec) = locate(i + 2 * threads, segments, chunk);
                let (d, sd, ed) = locate(i + 3 * threads, segments, chunk);
                let (wa, wb, wc, wd) = (load(a), load(b), load(c), load(d));
                add_vector(wa, sa, ea);
                add_vector(wb, sb, eb);
                add_vector(wc, sc, ec);
                add_vector(wd, sd, ed);
                i += 4 * threads;
            }
            while i < total {
                let (a, sa, ea) = locate(i, segments, chunk);
                add_vector(load(a), sa, ea);
                i += threads;
            }
            // The chunk's tables are read before the next chunk rewrites them.
            thread::sync_threads();
            chunk += threads as u64;
        }
        let first = bucket << shift;
        let last = width.min(nbins - first);
        let mut i = tid;
        while i < last {
            // SAFETY: i < width = len, written before the last barrier; first + i < nbins is
            // inside `bins`.
            unsafe {
                let count = local.load(i as usize);
                if count != 0 {
                    atomic::global_add_u32(bins.add((first + i) as usize), count);
                }
            }
            i += threads;
        }
    }

    gpu_kernel! {
        /// Pass 2; see the [module documentation](super).
        ///
        /// # Safety
        /// As the module's.
        pub unsafe fn histogram_sorted_bins(keys: *const u16, table: *const u32, totals: *const u32, bins: *mut u32,
                                            nbins: u32, shift: u32, n: u64, tile_len: u32) {
            // SAFETY: forwarded contract.
            unsafe { sorted_bins(keys, table, totals, bins, nbins, shift, n, tile_len) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_hold_8_or_16_values_per_thread_and_keys_cover_whole_tiles() {
        assert_eq!(tile_values(512, 1), 8192);
        assert_eq!(tile_values(512, 4), 4096);
        assert_eq!(tile_values(512, 2), 4096);
        assert_eq!(stage_bytes(512, 4), 16_384);
        assert_eq!(tiles(0, 8192), 0);
        assert_eq!(tiles(8192, 8192), 1);
        assert_eq!(tiles(8193, 8192), 2);
        assert_eq!(keys_len(8193, 8192), 16_384);
        assert_eq!(table_len(64, 8192), 65 * 8192);
        // The kept counts and starts of a tile share one u32 in the bins pass: 16 bits each.
        assert!(tile_values(MAX_THREADS, 1) <= 1 << 14);
        assert!((1..=4).all(|size| values_per_thread(size) <= MAX_VALUES_PER_THREAD));
    }

    #[test]
    fn bucket_parts_follow_the_values_and_add_up_to_at_most_parts_plus_buckets() {
        assert_eq!(parts_of(0, 100, 396), 0);
        // A constant input: one bucket takes every part.
        assert_eq!(parts_of(1 << 26, 1 << 26, 396), 396);
        // Uniform over 64 buckets: ceil(396 / 64) each.
        assert_eq!(parts_of(1 << 20, 1 << 26, 396), 7);
        let totals = [5u32, 0, 1, 1000, 77, 3, 3, 3];
        let kept: u32 = totals.iter().sum();
        let sum: u32 = totals.iter().map(|&t| parts_of(t, kept, 100)).sum();
        assert!((100..=100 + totals.len() as u32).contains(&sum), "{sum}");
        assert!(totals.iter().all(|&t| t == 0 || parts_of(t, kept, 100) >= 1));
    }

    #[test]
    fn the_largest_share_fills_the_grid_without_overflowing_it() {
        let need = |totals: &[u32], p: u32| {
            let kept = totals.iter().sum();
            totals.iter().map(|&t| parts_of(t, kept, p)).sum::<u32>()
        };
        // Uniform over 64 buckets: 4 blocks each of 264.
        let uniform = [1u32 << 20; 64];
        let p = largest_share(264, 64, |p| need(&uniform, p));
        assert_eq!((p, need(&uniform, p)), (256, 256));
        // One bucket (a constant input) takes the whole grid.
        let constant = [1u32 << 26];
        assert_eq!(largest_share(264, 1, |p| need(&constant, p)), 264);
        // Skewed: one heavy bucket and many light ones; the share is above grid - buckets.
        let mut skewed = [20_000u32; 64];
        skewed[0] = 40_000_000;
        let p = largest_share(264, 64, |p| need(&skewed, p));
        assert!(p > 200 && need(&skewed, p) <= 264 && need(&skewed, p + 1) > 264, "{p}");
        // Nothing kept: every share needs no block.
        let empty = [0u32; 8];
        assert_eq!(largest_share(20, 8, |p| need(&empty, p)), 20);
    }

    #[test]
    fn a_buckets_parts_cover_its_tiles_once_in_order() {
        for (tiles, parts) in [(8192u64, 7u32), (3, 5), (1, 1), (100, 100), (0, 3)] {
            let mut next = 0;
            for part in 0..parts {
                let (first, end) = part_tiles(tiles, part, parts);
                assert_eq!(first, next);
                assert!(end >= first);
                next = end;
            }
            assert_eq!(next, tiles);
        }
    }
}
